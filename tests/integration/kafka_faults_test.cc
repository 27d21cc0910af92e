// Faults of the Kafka backend through the real server (docs/architecture.md section 8), in the Kafka run only
// (ctest label `kafka`):
//  - the broker killed under load: writes answer 503 promptly (no hang, never a 2xx while the
//    broker is dead), /readyz says so, the writer comes back by itself when the broker does, and
//    nothing acknowledged is lost or applied twice;
//  - a second writer on the same topic fences the first for good, and nothing the fenced one
//    tried after that reaches the log;
//  - a fresh data dir on an existing topic rebuilds views identical to the original's;
//  - a node restarted while the broker is dead serves its views at once, answers writes 503
//    within the append timeout, and takes writes in the same process once the broker is back;
//  - on a secured broker (label kafka_secured): a wrong password, a topic it may not create and a
//    topic outside its ACLs are each a clear error at start, never a hang.
// The broker-kill test starts a broker of its own (tools/kafka/broker.sh): the shared one serves
// other tests in parallel. Random choices come from a seed printed at the start (KOBO_TEST_SEED).

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "tests/audit/run_kobo.h"
#include "tests/integration/harness.h"
#include "tests/support/test_kafka.h"

namespace kobo::it {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

fs::path kobo_binary() { return kobo_options().binary; }

// A directory of its own under TMPDIR, removed at the end unless the test failed.
class TempDir {
 public:
  explicit TempDir(std::string_view prefix) : path_(fs::temp_directory_path() / unique_name(prefix)) {
    fs::create_directories(path_);
  }
  ~TempDir() {
    if (::testing::Test::HasFailure()) {
      std::cout << "kept " << path_ << " for inspection" << std::endl;
      return;
    }
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// A Kafka broker of this test's own (tools/kafka/broker.sh), which every KoboProcess created
// while it lives serves on (KOBO_TEST_KAFKA_DIR points at it; the old value comes back after).
// Stopped by the destructor, also when the test fails.
class OwnBroker {
 public:
  OwnBroker() : root_("kobo-it-broker"), dir_(root_.path() / "broker") {
    if (const char* old = std::getenv("KOBO_TEST_KAFKA_DIR")) old_env_ = old;
    run("start");
    ::setenv("KOBO_TEST_KAFKA_DIR", dir_.c_str(), 1);
  }
  ~OwnBroker() {
    run("stop", /*must=*/false);
    if (old_env_)
      ::setenv("KOBO_TEST_KAFKA_DIR", old_env_->c_str(), 1);
    else
      ::unsetenv("KOBO_TEST_KAFKA_DIR");
  }
  OwnBroker(const OwnBroker&) = delete;
  OwnBroker& operator=(const OwnBroker&) = delete;

  void kill() { run("kill"); }
  void restart() { run("restart"); }
  std::string bootstrap() const {
    std::ifstream in(dir_ / "bootstrap");
    std::string b;
    in >> b;
    return b;
  }

 private:
  void run(const std::string& command, bool must = true) {
    const std::string script = std::string(KOBO_SOURCE_DIR) + "/tools/kafka/broker.sh";
    const fs::path out = root_.path() / "broker.sh.out";
    const std::string line =
        "'" + script + "' " + command + " '" + dir_.string() + "' >>'" + out.string() + "' 2>&1";
    const int status = std::system(line.c_str());
    if (must && (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
      std::ifstream in(out);
      throw std::runtime_error("broker.sh " + command + " failed (" + std::to_string(status) +
                               "): " + std::string(std::istreambuf_iterator<char>(in), {}));
    }
  }

  TempDir root_;
  fs::path dir_;
  std::optional<std::string> old_env_;
};

// `kobo audit` on the topic (and the views of `data_dir`, when given, of a stopped server).
kobo::testing::RunResult audit(const std::string& topic, const fs::path& data_dir = {}) {
  std::vector<std::string> args{"audit", "--kafka-brokers", kobo::testing::test_kafka_brokers(),
                                "--kafka-topic", topic};
  if (!data_dir.empty()) args.insert(args.end(), {"--data-dir", data_dir.string()});
  return kobo::testing::run_kobo(kobo_binary(), args);
}

// A second server on the same topic with a fresh data dir (no views) and the first's keys.
KoboOptions same_topic_options(const KoboProcess& first, const fs::path& data_dir,
                               std::vector<std::string> extra_args = {}) {
  KoboOptions options = kobo_options(std::move(extra_args));
  options.data_dir = data_dir;
  options.kafka_topic = first.kafka_topic();
  fs::copy_file(first.data_dir() / "credentials.json", data_dir / "credentials.json");
  return options;
}

std::int64_t pending_count(HttpClient& http, const std::string& key) {
  return total_count(http, key, "/v1/transactions", "status=pending");
}

struct Attempt {
  std::string reference;
  json body;
  Clock::time_point issued, answered;
  unsigned status = 0;  // 0: no answer
  std::string detail;
};

// Sends one transfer on `client` and records the answer and its timing.
void send(HttpClient& client, const std::string& key, Attempt& at) {
  at.issued = Clock::now();
  try {
    const HttpResult res = client.post("/v1/transactions/transfer", at.body, key);
    at.status = res.status;
    at.detail = res.body.substr(0, 300);
  } catch (const std::exception& e) {
    at.detail = e.what();
  }
  at.answered = Clock::now();
}

// Issues one transfer from a thread of its own (its own client) and records the answer.
void issue(KoboProcess& server, const std::string& key, Attempt& at) {
  auto client = server.new_client(milliseconds(30'000));
  send(*client, key, at);
}

// The broker-kill test keeps its server and broker here so that TearDown sees a failure.
class KafkaFaults : public ::testing::Test {
 protected:
  void TearDown() override {
    if (server_) keep_data_dir_if_failed(*server_);
    server_.reset();  // before the broker goes
    broker_.reset();
  }
  std::unique_ptr<OwnBroker> broker_;
  std::unique_ptr<KoboProcess> server_;
};

TEST_F(KafkaFaults, BrokerKilledUnderLoadAnswers503PromptlyAndLosesNothingAcknowledged) {
  const std::uint64_t seed =
      test_seed("KafkaFaults.BrokerKilledUnderLoadAnswers503PromptlyAndLosesNothingAcknowledged");
  std::mt19937_64 rng(seed);
  broker_ = std::make_unique<OwnBroker>();
  OwnBroker& broker = *broker_;
  server_ = std::make_unique<KoboProcess>(kobo_options({"--kafka-append-timeout-ms", "2000"}));
  KoboProcess& server = *server_;
  HttpClient& http = server.client();
  const std::string key = server.test_key();
  const std::string topic = server.kafka_topic();

  // Rich wallets: no transfer of the run can be refused for funds, so every unanswered one can
  // be retried to a 200.
  constexpr int kWallets = 10;
  constexpr std::int64_t kFunding = 1'000'000'000;
  std::vector<std::string> ids;
  std::map<std::string, std::int64_t> model;
  for (int i = 0; i < kWallets; ++i) {
    const json w = create_wallet(http, key);
    ids.push_back(w["publicId"]);
    fund(http, key, w, kFunding);
    model[ids.back()] = kFunding;
  }

  constexpr int kThreads = 4;
  std::vector<std::vector<Attempt>> per_thread(kThreads);
  std::atomic<bool> stop{false};
  std::atomic<int> answered{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937_64 trng(seed ^ (static_cast<std::uint64_t>(t) << 32));
      // Longer than any answer may take, so a hang is measured rather than cut off.
      auto client = server.new_client(milliseconds(30'000));
      for (int i = 0; !stop.load(); ++i) {
        const std::size_t a = trng() % kWallets;
        const std::size_t b = (a + 1 + trng() % (kWallets - 1)) % kWallets;
        Attempt at;
        at.reference = "kfault-" + std::to_string(seed) + "-t" + std::to_string(t) + "-" + std::to_string(i);
        at.body = transfer_body(ids[a], ids[b], 10'000 + static_cast<std::int64_t>(trng() % 1'000),
                                at.reference, "kafka fault test");
        send(*client, key, at);
        ++answered;
        const bool failed = at.status != 200;
        per_thread[static_cast<std::size_t>(t)].push_back(std::move(at));
        // Do not spin on a dead broker: the point is requests over time, not their number.
        if (failed) std::this_thread::sleep_for(milliseconds(50));
      }
    });
  }
  struct JoinAll {
    std::atomic<bool>& stop;
    std::vector<std::thread>& pool;
    ~JoinAll() {
      stop = true;
      for (auto& th : pool)
        if (th.joinable()) th.join();
    }
  } join_all{stop, pool};

  ASSERT_TRUE(wait_until([&] { return answered.load() >= 20; }, milliseconds(20'000)))
      << "no load reached the server";
  std::this_thread::sleep_for(milliseconds(1'500 + rng() % 1'000));
  const int answered_before_kill = answered.load();
  broker.kill();
  const auto killed = Clock::now();

  // /readyz says the writer cannot write, soon, and keeps saying it. (Under load it may answer
  // 503 for a moment anyway, while the views catch up: only a 503 that lasts a second counts.)
  auto probe = server.new_client(milliseconds(5'000));
  auto readyz = [&] {
    try {
      return probe->get("/readyz").status;
    } catch (const std::exception&) {
      return 0u;
    }
  };
  std::optional<Clock::duration> not_ready_after;
  std::optional<Clock::time_point> not_ready_since;
  while (Clock::now() - killed < std::chrono::seconds(15)) {
    const auto now = Clock::now();
    if (readyz() != 503) {
      not_ready_since.reset();
    } else if (!not_ready_since) {
      not_ready_since = now;
    } else if (now - *not_ready_since >= std::chrono::seconds(1)) {
      not_ready_after = *not_ready_since - killed;
      break;
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_TRUE(not_ready_after.has_value()) << "/readyz did not stay 503 within 15 s of the broker's death";
  const auto not_ready_ms = std::chrono::duration_cast<milliseconds>(*not_ready_after).count();
  EXPECT_LE(not_ready_ms, 10'000) << "/readyz answered 503 only " << not_ready_ms << " ms after the kill";

  // Requests issued well after the kill, each from a thread of its own, so that a load thread
  // stuck on an earlier request cannot keep them from being sent.
  std::vector<Attempt> late;
  for (int i = 0; killed + milliseconds(1'000 + 500 * i) < killed + std::chrono::seconds(7); ++i) {
    Attempt at;
    at.reference = "kfault-" + std::to_string(seed) + "-late-" + std::to_string(i);
    at.body = transfer_body(ids[static_cast<std::size_t>(i) % kWallets],
                            ids[(static_cast<std::size_t>(i) + 1) % kWallets], 10'000 + i, at.reference,
                            "kafka fault test");
    late.push_back(std::move(at));
  }
  std::vector<std::thread> late_pool;
  for (std::size_t i = 0; i < late.size(); ++i) {
    std::this_thread::sleep_until(killed + milliseconds(1'000 + 500 * static_cast<int>(i)));
    late_pool.emplace_back([&, i] { issue(server, key, late[i]); });
  }
  // Keep the load on the dead broker a while longer, then let every thread finish its request.
  while (Clock::now() - killed < std::chrono::seconds(8)) std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(readyz(), 503u) << "/readyz 8 s after the broker's death";
  stop = true;
  for (auto& th : late_pool) th.join();
  for (auto& th : pool) th.join();

  std::vector<Attempt> attempts = late;
  for (auto& v : per_thread) attempts.insert(attempts.end(), v.begin(), v.end());
  int acked = 0, unknown = 0, after_kill = 0;
  std::int64_t slowest_ms = 0;
  for (const Attempt& at : attempts) {
    if (at.status == 200)
      ++acked;
    else if (at.status == 0 || at.status == 503)
      ++unknown;
    else
      ADD_FAILURE() << at.reference << " answered " << at.status << " " << at.detail;
    if (at.issued < killed + std::chrono::seconds(1)) {
      // In flight at the kill: its append fails within the append timeout (2 s), then it is
      // answered; it must not hang either.
      if (at.answered > killed) {
        EXPECT_NE(at.status, 0u) << at.reference << " in flight at the kill got no answer in "
                                 << std::chrono::duration_cast<milliseconds>(at.answered - at.issued).count()
                                 << " ms: " << at.detail;
        EXPECT_LE(std::chrono::duration_cast<milliseconds>(at.answered - killed).count(), 12'000)
            << at.reference << " in flight at the kill was answered (" << at.status << ") only "
            << std::chrono::duration_cast<milliseconds>(at.answered - killed).count() << " ms after it";
      }
      continue;
    }
    ++after_kill;
    const auto took = std::chrono::duration_cast<milliseconds>(at.answered - at.issued).count();
    slowest_ms = std::max<std::int64_t>(slowest_ms, took);
    EXPECT_NE(at.status, 0u) << at.reference << " (issued "
                             << std::chrono::duration_cast<milliseconds>(at.issued - killed).count()
                             << " ms after the kill) got no answer: " << at.detail;
    EXPECT_LE(took, 10'000) << at.reference << " issued "
                            << std::chrono::duration_cast<milliseconds>(at.issued - killed).count()
                            << " ms after the kill took " << took << " ms to answer";
    if (at.status != 0) {
      EXPECT_EQ(at.status, 503u) << at.reference << " answered while the broker was dead: " << at.detail;
    }
  }
  std::cout << attempts.size() << " transfers sent (" << answered_before_kill
            << " answered before the kill), " << acked << " acknowledged, " << unknown
            << " without a verdict; " << after_kill
            << " issued more than 1 s after the kill, the slowest answered in " << slowest_ms
            << " ms; /readyz answered 503 " << not_ready_ms << " ms after the kill" << std::endl;
  EXPECT_GE(after_kill, static_cast<int>(late.size()))
      << "too little load reached the server while the broker was dead";

  // The broker comes back on the same ports and log; the writer recovers by itself.
  const auto restarting = Clock::now();
  broker.restart();
  ASSERT_TRUE(wait_until(
      [&] {
        try {
          return probe->get("/readyz").status == 200;
        } catch (const std::exception&) {
          return false;
        }
      },
      milliseconds(60'000)))
      << "/readyz not 200 within 60 s of the broker's restart; log:\n"
      << server.log_tail();
  std::cout << "ready again " << std::chrono::duration_cast<milliseconds>(Clock::now() - restarting).count()
            << " ms after broker.sh restart was called" << std::endl;
  const std::string after_ref = "kfault-" + std::to_string(seed) + "-after";
  const json after_body = transfer_body(ids[0], ids[1], 12'345, after_ref, "after the restart");
  {
    const HttpResult res = http.post("/v1/transactions/transfer", after_body, key);
    ASSERT_EQ(res.status, 200u) << "a transfer after the recovery: " << res.body << "\nlog:\n"
                                << server.log_tail();
  }
  std::set<std::string> succeeded{after_ref};
  attempts.push_back(Attempt{after_ref, after_body, {}, {}, 200, {}});

  // Every acknowledged transfer is there, as it was sent.
  for (const Attempt& at : attempts) {
    if (at.status != 200) continue;
    const HttpResult res = http.get("/v1/transactions/" + at.reference, key);
    ASSERT_EQ(res.status, 200u) << "acknowledged transfer " << at.reference << " lost: " << res.body
                                << "\nlog:\n"
                                << server.log_tail();
    const json& t = res.json["data"];
    EXPECT_EQ(t["entry"], "debit");
    EXPECT_EQ(t["amount"], at.body["amount"]);
    EXPECT_EQ(t["source"], at.body["source"]);
    EXPECT_EQ(t["destination"], at.body["destination"]);
    succeeded.insert(at.reference);
  }
  // Money is neither lost nor made before the retries: the acknowledged ones and some of the
  // unknown ones moved it, nothing else.
  {
    std::int64_t sum = 0;
    for (const auto& id : ids) sum += balance_of(http, key, id);
    EXPECT_EQ(sum, kWallets * kFunding) << "before the retries";
  }
  // Every transfer without a verdict, retried as it was, answers 200: a replay of one the log
  // kept, or a first (and only) application.
  int replayed = 0;
  for (const Attempt& at : attempts) {
    if (at.status == 200) continue;
    const HttpResult res = http.post("/v1/transactions/transfer", at.body, key);
    ASSERT_EQ(res.status, 200u) << "retry of " << at.reference << ": " << res.body;
    EXPECT_EQ(res.json["data"]["reference"], at.reference);
    replayed += res.header("idempotent-replayed") == "true";
    succeeded.insert(at.reference);
  }
  std::cout << unknown << " retried, " << replayed << " of them replays (kept by the log without an answer)"
            << std::endl;

  for (const Attempt& at : attempts) {
    if (!succeeded.count(at.reference)) continue;
    const std::int64_t amount = at.body["amount"];
    model[at.body["source"]] -= amount;
    model[at.body["destination"]] += amount;
  }
  ASSERT_TRUE(wait_until([&] { return pending_count(http, key) == 0; }, milliseconds(20'000)))
      << "transfers still pending";
  std::int64_t sum = 0;
  for (const auto& id : ids) {
    const std::int64_t balance = balance_of(http, key, id);
    EXPECT_EQ(balance, model[id]) << "wallet " << id;
    sum += balance;
  }
  EXPECT_EQ(sum, kWallets * kFunding);

  // Exactly one debit (and one credit leg) per transfer that succeeded; no other debit.
  std::map<std::string, int> debits_by_ref, credits_by_debit_ref;
  for (const json& t : list_all(http, key, "/v1/transactions")) {
    if (t["entry"] == "debit")
      debits_by_ref[t["reference"]]++;
    else if (t["debitReference"].is_string())
      credits_by_debit_ref[t["debitReference"]]++;
  }
  EXPECT_EQ(debits_by_ref.size(), succeeded.size());
  for (const auto& ref : succeeded) {
    EXPECT_EQ(debits_by_ref[ref], 1) << "debits with reference " << ref;
    EXPECT_EQ(credits_by_debit_ref[ref], 1) << "credit legs of " << ref;
  }

  // The log and the views of the stopped server pass the audit.
  EXPECT_EQ(server.terminate(), 0) << server.log_tail();
  const auto report = audit(topic, server.data_dir());
  EXPECT_EQ(report.exit_code, 0) << report.output;
}

TEST_F(KafkaFaults, ANodeStartedInABrokerOutageServesReadsAndTakesWritesOnceTheBrokerIsBack) {
  constexpr int kAppendTimeoutMs = 1'500;
  const std::vector<std::string> flags{"--kafka-append-timeout-ms", std::to_string(kAppendTimeoutMs)};
  broker_ = std::make_unique<OwnBroker>();
  OwnBroker& broker = *broker_;
  server_ = std::make_unique<KoboProcess>(kobo_options(flags));
  KoboProcess& first = *server_;
  const std::string key = first.test_key();
  const json w1 = create_wallet(first.client(), key), w2 = create_wallet(first.client(), key);
  const std::string id1 = w1["publicId"], id2 = w2["publicId"];
  fund(first.client(), key, w1, 1'000'000);
  const std::string before_ref = unique_name("outage-before");
  data_or_throw(
      first.client().post("/v1/transactions/transfer", transfer_body(id1, id2, 10'000, before_ref), key), 200,
      "transfer before the outage");
  ASSERT_TRUE(wait_until([&] { return pending_count(first.client(), key) == 0; })) << "still pending";
  ASSERT_EQ(first.terminate(), 0) << first.log_tail();

  // The node restarts while the broker is dead.
  broker.kill();
  KoboOptions options = kobo_options(flags);
  options.data_dir = first.data_dir();
  options.kafka_topic = first.kafka_topic();
  options.wait_ready = false;
  const auto spawned = Clock::now();
  KoboProcess node(options);
  const auto healthy_ms = std::chrono::duration_cast<milliseconds>(Clock::now() - spawned).count();
  EXPECT_LE(healthy_ms, 5'000) << "/healthz answered 200 only " << healthy_ms << " ms after the start";
  HttpClient& http = node.client();

  // Not ready, and /readyz names the broker it cannot reach.
  const HttpResult readyz = http.get("/readyz");
  EXPECT_EQ(readyz.status, 503u) << readyz.body;
  EXPECT_NE(readyz.body.find(broker.bootstrap()), std::string::npos)
      << "/readyz does not name the broker " << broker.bootstrap() << ": " << readyz.body;
  // Reads are answered from the data dir's views.
  EXPECT_EQ(balance_of(http, key, id1), 990'000);
  EXPECT_EQ(balance_of(http, key, id2), 10'000);
  EXPECT_EQ(http.get("/v1/transactions/" + before_ref, key).status, 200u);
  // Writes are refused within the append timeout, and move nothing.
  const std::string refused_ref = unique_name("outage-refused");
  const auto issued = Clock::now();
  const HttpResult refused =
      http.post("/v1/transactions/transfer", transfer_body(id1, id2, 20'000, refused_ref), key);
  const auto refused_ms = std::chrono::duration_cast<milliseconds>(Clock::now() - issued).count();
  EXPECT_EQ(refused.status, 503u) << refused.body;
  EXPECT_LE(refused_ms, kAppendTimeoutMs)
      << "a write in the outage was answered after " << refused_ms << " ms";
  EXPECT_EQ(node.client().get("/healthz").status, 200u);

  // The broker returns: the same process connects, reads the topic and takes writes.
  const auto restarting = Clock::now();
  broker.restart();
  ASSERT_TRUE(wait_until([&] { return node.client().get("/readyz").status == 200; }, milliseconds(60'000)))
      << "/readyz not 200 within 60 s of the broker's return; log:\n"
      << node.log_tail();
  std::cout << "healthy " << healthy_ms << " ms after the start in the outage; a write refused in "
            << refused_ms << " ms; ready "
            << std::chrono::duration_cast<milliseconds>(Clock::now() - restarting).count()
            << " ms after broker.sh restart was called" << std::endl;
  const std::string after_ref = unique_name("outage-after");
  data_or_throw(http.post("/v1/transactions/transfer", transfer_body(id1, id2, 30'000, after_ref), key), 200,
                "transfer once the broker is back");
  EXPECT_EQ(http.get("/v1/transactions/" + refused_ref, key).status, 404u)
      << "the refused write reached the log";
  ASSERT_TRUE(wait_until([&] { return pending_count(http, key) == 0; })) << "still pending";
  EXPECT_EQ(balance_of(http, key, id1), 1'000'000 - 10'000 - 30'000);
  EXPECT_EQ(balance_of(http, key, id2), 10'000 + 30'000);

  EXPECT_EQ(node.terminate(), 0) << node.log_tail();
  const auto report = audit(node.kafka_topic(), node.data_dir());
  EXPECT_EQ(report.exit_code, 0) << report.output;
}

TEST_F(KafkaFaults, ASecondWriterFencesTheFirst) {
  ASSERT_FALSE(kobo::testing::test_kafka_brokers().empty())
      << "a Kafka-only test: KOBO_TEST_KAFKA_DIR is not set";
  KoboProcess a(kobo_options());
  const std::string key = a.test_key();
  HttpClient& http_a = a.client();
  const json w1 = create_wallet(http_a, key), w2 = create_wallet(http_a, key);
  const std::string id1 = w1["publicId"], id2 = w2["publicId"];
  fund(http_a, key, w1, 1'000'000);
  const std::string before_ref = unique_name("fence-a-before");
  data_or_throw(http_a.post("/v1/transactions/transfer", transfer_body(id1, id2, 10'000, before_ref), key),
                200, "transfer on A before B");
  ASSERT_TRUE(wait_until([&] { return pending_count(http_a, key) == 0; })) << "A's transfers still pending";

  TempDir b_dir("kobo-it-fence-b");
  KoboProcess b(same_topic_options(a, b_dir.path()));
  HttpClient& http_b = b.client();
  EXPECT_EQ(balance_of(http_b, key, id1), 990'000);
  EXPECT_EQ(balance_of(http_b, key, id2), 10'000);

  // A is fenced: every write fails, and keeps failing, and it says it is not ready.
  std::vector<std::string> refused;
  for (int i = 0; i < 5; ++i) {
    const std::string ref = unique_name("fence-a-after");
    const HttpResult res =
        http_a.post("/v1/transactions/transfer", transfer_body(id1, id2, 20'000, ref), key);
    EXPECT_EQ(res.status, 503u) << "write " << i << " on the fenced writer: " << res.body;
    refused.push_back(ref);
  }
  EXPECT_TRUE(wait_until([&] { return a.client().get("/readyz").status == 503; }))
      << "the fenced server still says it is ready; log:\n"
      << a.log_tail();

  // B writes; what A tried after the fence is nowhere.
  const std::string b_ref = unique_name("fence-b");
  data_or_throw(http_b.post("/v1/transactions/transfer", transfer_body(id1, id2, 30'000, b_ref), key), 200,
                "transfer on B");
  EXPECT_EQ(http_a.post("/v1/transactions/transfer", transfer_body(id1, id2, 20'000, refused[0]), key).status,
            503u)
      << "A writes again after B wrote";
  EXPECT_EQ(a.client().get("/readyz").status, 503u);
  // B is ready (once its views have applied its own follow-ups, such as the settlement).
  EXPECT_TRUE(wait_until([&] { return b.client().get("/readyz").status == 200; })) << b.log_tail();
  ASSERT_TRUE(wait_until([&] { return pending_count(http_b, key) == 0; })) << "B's transfers still pending";
  EXPECT_EQ(balance_of(http_b, key, id1), 1'000'000 - 10'000 - 30'000);
  EXPECT_EQ(balance_of(http_b, key, id2), 10'000 + 30'000);
  for (const auto& ref : refused) {
    EXPECT_EQ(http_b.get("/v1/transactions/" + ref, key).status, 404u) << ref << " reached the log";
  }
  std::set<std::string> debit_refs;
  for (const json& t : list_all(http_b, key, "/v1/transactions", "entry=debit"))
    debit_refs.insert(t["reference"]);
  EXPECT_EQ(debit_refs, (std::set<std::string>{before_ref, b_ref}));

  const auto report = audit(b.kafka_topic());
  EXPECT_EQ(report.exit_code, 0) << report.output;
  if (::testing::Test::HasFailure()) {
    a.keep_data_dir(true);
    b.keep_data_dir(true);
  }
}

// What a client sees of every wallet and every transaction: publicId → record.
struct Views {
  std::map<std::string, json> wallets, transactions;
};

Views read_views(HttpClient& http, const std::string& key, const std::vector<std::string>& wallet_ids) {
  Views v;
  for (const auto& id : wallet_ids) v.wallets[id] = get_wallet(http, key, id);
  for (const json& w : list_all(http, key, "/v1/virtual-accounts"))
    v.wallets["list:" + w["publicId"].get<std::string>()] = w;
  for (const json& t : list_all(http, key, "/v1/transactions")) v.transactions[t["publicId"]] = t;
  return v;
}

TEST_F(KafkaFaults, AFreshDataDirRebuildsIdenticalViews) {
  ASSERT_FALSE(kobo::testing::test_kafka_brokers().empty())
      << "a Kafka-only test: KOBO_TEST_KAFKA_DIR is not set";
  const std::vector<std::string> flags{"--rail-delay-ms", "200"};
  KoboProcess a(kobo_options(flags));
  const std::string key = a.test_key();
  HttpClient& http = a.client();
  std::vector<json> wallets;
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    wallets.push_back(create_wallet(http, key));
    ids.push_back(wallets.back()["publicId"]);
    fund(http, key, wallets.back(), 5'000'000 + 1'000 * i);
  }
  for (int i = 0; i < 6; ++i) {
    data_or_throw(
        http.post("/v1/transactions/transfer",
                  transfer_body(ids[i % 3], ids[(i + 1) % 3], 10'000 + 111 * i, unique_name("rebuild")), key),
        200, "transfer");
  }
  const std::string payout_ref = unique_name("rebuild-payout");
  const json payout{
      {"source", ids[0]},  {"accountNumber", "0123456784"}, {"bankCode", "044"},      {"amount", 50'000},
      {"currency", "NGN"}, {"narration", "rebuild payout"}, {"reference", payout_ref}};
  data_or_throw(http.post("/v1/transactions/bank-transfer", payout, key), 200, "bank transfer");
  wait_settled(http, key, payout_ref);
  ASSERT_TRUE(wait_until([&] { return pending_count(http, key) == 0; })) << "still pending";
  const Views before = read_views(http, key, ids);
  ASSERT_GE(before.transactions.size(), 3u + 6u * 2u + 1u);
  EXPECT_EQ(a.terminate(), 0) << a.log_tail();

  TempDir b_dir("kobo-it-rebuild-b");
  KoboProcess b(same_topic_options(a, b_dir.path(), flags));
  const Views after = read_views(b.client(), key, ids);
  EXPECT_EQ(after.wallets.size(), before.wallets.size());
  for (const auto& [id, w] : before.wallets) {
    const auto it = after.wallets.find(id);
    if (it == after.wallets.end()) {
      ADD_FAILURE() << "wallet " << id << " missing after the rebuild";
      continue;
    }
    EXPECT_EQ(it->second, w) << "wallet " << id << "\nbefore: " << w.dump()
                             << "\nafter:  " << it->second.dump();
  }
  EXPECT_EQ(after.transactions.size(), before.transactions.size());
  for (const auto& [id, t] : before.transactions) {
    const auto it = after.transactions.find(id);
    if (it == after.transactions.end()) {
      ADD_FAILURE() << "transaction " << id << " missing after the rebuild";
      continue;
    }
    EXPECT_EQ(it->second, t) << "transaction " << id << "\nbefore: " << t.dump()
                             << "\nafter:  " << it->second.dump();
  }

  EXPECT_EQ(b.terminate(), 0) << b.log_tail();
  const auto report = audit(b.kafka_topic(), b.data_dir());
  EXPECT_EQ(report.exit_code, 0) << report.output;
  if (::testing::Test::HasFailure()) a.keep_data_dir(true);
}

// ---- a secured cluster (broker.sh start DIR --secured: SASL_SSL, SCRAM, ACLs) -----------------

// `kobo serve` on a fresh data dir that cannot start: it must exit, at once and saying why,
// never hang. `timeout 60` turns a hang into exit code 124.
// (test_kafka_brokers() exports the user's credentials: call it before changing them.)
kobo::testing::RunResult serve_expecting_failure(const std::string& brokers, const std::string& topic,
                                                 const fs::path& data_dir) {
  return kobo::testing::run_kobo(
      "/usr/bin/timeout", {"60", kobo_binary().string(), "serve", "--listen", "127.0.0.1:0", "--data-dir",
                           data_dir.string(), "--kafka-brokers", brokers, "--kafka-topic", topic});
}

class KafkaSecured : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kobo::testing::test_kafka_secured()) GTEST_SKIP() << "for the secured broker (label kafka_secured)";
    kobo::testing::export_test_kafka_credentials();
  }
};

TEST_F(KafkaSecured, AWrongPasswordIsAClearErrorAtStart) {
  const std::string topic = unique_name("it.secured-password");
  kobo::testing::ensure_test_topic(topic, 2);
  TempDir dir("kobo-it-secured");
  const std::string brokers = kobo::testing::test_kafka_brokers();
  const std::string password = std::getenv("KOBO_KAFKA_SASL_PASSWORD");
  ::setenv("KOBO_KAFKA_SASL_PASSWORD", "not-the-password", 1);
  const auto started = Clock::now();
  const auto run = serve_expecting_failure(brokers, topic, dir.path());
  ::setenv("KOBO_KAFKA_SASL_PASSWORD", password.c_str(), 1);
  const auto took_ms = std::chrono::duration_cast<milliseconds>(Clock::now() - started).count();
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_LE(took_ms, 20'000) << run.output;
  EXPECT_NE(run.output.find("invalid credentials"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("--kafka-sasl-password"), std::string::npos) << run.output;
}

TEST_F(KafkaSecured, ATopicItMayNotCreateIsAClearErrorNamingTheAcl) {
  const std::string topic = unique_name("it.secured-missing");  // allowed, but missing
  TempDir dir("kobo-it-secured");
  const auto run = serve_expecting_failure(kobo::testing::test_kafka_brokers(), topic, dir.path());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("CREATE on Topic " + topic), std::string::npos) << run.output;
}

TEST_F(KafkaSecured, ATopicOutsideItsAclsIsAClearErrorNamingTheAcl) {
  const std::string topic = unique_name("forbidden.secured");
  kobo::testing::ensure_test_topic(topic, 2);
  TempDir dir("kobo-it-secured");
  const auto run = serve_expecting_failure(kobo::testing::test_kafka_brokers(), topic, dir.path());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("DESCRIBE, READ and WRITE on Topic " + topic), std::string::npos) << run.output;
  const auto audit_run = audit(topic);
  EXPECT_EQ(audit_run.exit_code, 2) << audit_run.output;
  EXPECT_NE(audit_run.output.find("on Topic " + topic), std::string::npos) << audit_run.output;
}

}  // namespace
}  // namespace kobo::it
