// `kobo events` on the log of a running server (docs/events.md): it reads beside the writer
// without stopping it, prints every event exactly as stored, --from skips a partition's earlier
// events, and --follow prints new events as they are appended until it is stopped. On the
// Kafka run (ctest -L kafka) the same tests read the topic with --kafka-brokers/--kafka-topic.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "tests/audit/run_kobo.h"
#include "tests/integration/harness.h"

namespace kobo::it {
namespace {

using kobo::testing::run_kobo;

class EventsCommand : public ServerSuite {
 protected:
  // How `kobo events` finds the log the server writes.
  static std::vector<std::string> log_args() {
    if (const std::string brokers = kobo::testing::test_kafka_brokers(); !brokers.empty())
      return {"--kafka-brokers", brokers, "--kafka-topic", server().kafka_topic()};
    return {"--data-dir", server().data_dir().string()};
  }
  static std::vector<std::string> events_args(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"events"};
    for (auto& a : log_args()) args.push_back(a);
    for (auto& a : extra) args.push_back(std::move(a));
    return args;
  }
  static std::vector<json> lines_of(const std::string& text) {
    std::vector<json> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
    return out;
  }
};

TEST_F(EventsCommand, ReadsTheLogOfARunningServerAsStored) {
  const json wallet = create_wallet(http(), key());
  const auto r = run_kobo(KOBO_BINARY, events_args());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto events = lines_of(r.output);
  ASSERT_FALSE(events.empty());
  bool found = false;
  for (const json& e : events) {
    ASSERT_TRUE(e.contains("hash") && e.contains("seq") && e.contains("type")) << e.dump();
    if (e.dump().find(wallet["publicId"].get<std::string>()) != std::string::npos) found = true;
  }
  EXPECT_TRUE(found) << "the wallet just created is in the log the server is writing";
  // The server went on serving: the read took no lock.
  EXPECT_EQ(http().get("/v1/virtual-accounts/" + wallet["publicId"].get<std::string>(), key()).status, 200u);
}

TEST_F(EventsCommand, FromSkipsEachPartitionsEarlierEvents) {
  create_wallet(http(), key());
  const auto all = run_kobo(KOBO_BINARY, events_args());
  ASSERT_EQ(all.exit_code, 0) << all.output;
  const auto from = run_kobo(KOBO_BINARY, events_args({"--from", "3"}));
  ASSERT_EQ(from.exit_code, 0) << from.output;
  std::size_t expected = 0;
  for (const json& e : lines_of(all.output))
    if (e["seq"].get<std::uint64_t>() >= 3) ++expected;
  const auto printed = lines_of(from.output);
  EXPECT_EQ(printed.size(), expected);
  for (const json& e : printed) EXPECT_GE(e["seq"].get<std::uint64_t>(), 3u);
  EXPECT_GT(printed.size(), 0u);
  EXPECT_LT(printed.size(), lines_of(all.output).size());
}

TEST_F(EventsCommand, FollowPrintsEventsAsTheyAreAppendedUntilStopped) {
  const std::filesystem::path out =
      server().data_dir().parent_path() / ("follow-" + std::to_string(getpid()) + ".out");
  const auto args = events_args({"--follow"});
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO);
    std::vector<char*> argv{const_cast<char*>(KOBO_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(KOBO_BINARY, argv.data());
    _exit(127);
  }
  const auto text = [&] {
    std::ifstream f(out);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  // It has printed what was there before following.
  ASSERT_TRUE(wait_until([&] { return !text().empty(); }, std::chrono::milliseconds(15'000)));
  const json wallet = create_wallet(http(), key());
  const std::string id = wallet["publicId"];
  EXPECT_TRUE(
      wait_until([&] { return text().find(id) != std::string::npos; }, std::chrono::milliseconds(15'000)))
      << "a wallet created after --follow started never appeared";
  ASSERT_EQ(kill(child, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  for (const json& e : lines_of(text())) EXPECT_TRUE(e.contains("hash")) << e.dump();
  std::filesystem::remove(out);
}

TEST_F(EventsCommand, RefusesWithoutALogToRead) {
  const auto r = run_kobo(KOBO_BINARY, {"events"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--data-dir"), std::string::npos) << r.output;
  const auto none = run_kobo(KOBO_BINARY, {"events", "--data-dir", "/nonexistent/kobo"});
  EXPECT_EQ(none.exit_code, 2) << none.output;
}

}  // namespace
}  // namespace kobo::it
