// Guarantee 8 (docs/architecture.md section 6) through the real server: its data dir on a small tmpfs that
// fills up under transfer load. While the disk is full, writes answer 507 `Insufficient storage` (or 503
// while the writer settles), reads go on being served, /readyz answers 503 (the log says why), and /metrics
// counts the failed appends; when space returns, writes succeed again in the same process. Afterwards, across
// a restart, every acknowledged transfer is there exactly once and no refused one is, and the balances equal
// the client's model. Needs root to mount a tmpfs.

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tests/integration/harness.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/small_disk.h"

namespace kobo::it {
namespace {

class DiskFull : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kobo::testing::SmallDisk::can_mount()) GTEST_SKIP() << "mounting a tmpfs needs root";
    ASSERT_TRUE(disk_.mounted()) << "mount tmpfs: errno " << disk_.mount_error();
  }
  void TearDown() override {
    server_.reset();  // before the disk goes
  }

  kobo::testing::SmallDisk disk_{"disk-full", "48m"};
  kobo::testing::ScratchDir logs_{"disk-full-logs", kobo::testing::ScratchDir::Keep::on_failure};
  std::unique_ptr<KoboProcess> server_;
};

std::int64_t metric(HttpClient& http, const std::string& name) {
  const HttpResult r = http.get("/metrics", "");
  const auto at = r.body.find("\n" + name + " ");
  if (at == std::string::npos) return 0;
  return std::stoll(r.body.substr(at + name.size() + 2));
}

TEST_F(DiskFull, WritesAnswer507ReadsGoOnAndWritesResumeWhenSpaceReturns) {
  KoboOptions options = kobo_options();
  options.data_dir = disk_.path() / "data";
  options.log_dir = logs_.path();  // the node's log is not on the disk that fills up
  options.embedded_only = true;
  server_ = std::make_unique<KoboProcess>(options);
  HttpClient& http = server_->client();
  const std::string key = server_->test_key();

  constexpr std::int64_t kFunding = 1'000'000'000;
  const json a = create_wallet(http, key), b = create_wallet(http, key);
  const std::string ida = a["publicId"], idb = b["publicId"];
  fund(http, key, a, kFunding);
  fund(http, key, b, kFunding);
  std::map<std::string, std::int64_t> model{{ida, kFunding}, {idb, kFunding}};

  ASSERT_TRUE(disk_.fill(1 << 20));
  std::set<std::string> acknowledged, refused;
  int full_answers = 0;
  auto send = [&](int i) {
    const bool forward = i % 2 == 0;
    const std::string ref = "disk-full-" + std::to_string(i);
    const json body =
        transfer_body(forward ? ida : idb, forward ? idb : ida, 10'000 + i, ref, "disk full test");
    HttpResult r;
    try {
      r = http.post("/v1/transactions/transfer", body, key);
    } catch (const std::exception& e) {
      FAIL() << "transfer " << ref << ": " << e.what() << "\nthe server's log:\n" << server_->log_tail(60);
    }
    if (r.status == 200) {
      acknowledged.insert(ref);
      model[forward ? ida : idb] -= 10'000 + i;
      model[forward ? idb : ida] += 10'000 + i;
    } else {
      ASSERT_TRUE(r.status == 507 || r.status == 503) << r.status << " " << r.body;
      if (r.status == 507) {
        ++full_answers;
        EXPECT_NE(r.body.find("Insufficient storage"), std::string::npos) << r.body;
      }
      refused.insert(ref);
    }
  };
  int i = 0;
  for (; i < 20'000 && full_answers < 5; ++i) send(i);
  ASSERT_GE(full_answers, 5) << "the disk never filled";
  EXPECT_GT(metric(http, "kobo_log_append_failures_no_space_total"), 0);

  // Reads are served; readiness says it is not ready, and the node's log says why (the public
  // answer names no path: docs/security.md, "A smaller surface"). The writer's fault is set once
  // its retry loop has classified the error, a moment after the first 507s (the webhook and views
  // databases may log their own errors first). Meanwhile the node can free room itself (a views
  // flush drops its write-ahead log) and the writer resumes once 4 MiB are free, as it should;
  // so the disk is topped up before each look, to keep it full while it is being looked at, and
  // a writer that resumed meanwhile is sent a transfer to find it full again.
  EXPECT_EQ(http.get("/v1/virtual-accounts/" + ida, key).status, 200u);
  HttpResult ready;
  EXPECT_TRUE(wait_until(
      [&] {
        (void)disk_.fill(1 << 20);
        ready = http.get("/readyz", "");
        if (ready.status == 200) send(i++);
        return ready.status == 503 && server_->log_tail(400).find("disk is full") != std::string::npos;
      },
      std::chrono::milliseconds(10'000)))
      << ready.status << " " << ready.body << "\n"
      << server_->log_tail();
  EXPECT_EQ(ready.body, R"({"status":"not ready"})");

  // Space returns: writes succeed again in the same process.
  disk_.unfill();
  bool resumed = wait_until(
      [&] {
        send(i++);
        return acknowledged.contains("disk-full-" + std::to_string(i - 1));
      },
      std::chrono::milliseconds(30'000));
  ASSERT_TRUE(resumed) << "writes did not resume; readyz: " << http.get("/readyz", "").body;
  for (int n = 0; n < 20; ++n) send(i++);
  ASSERT_TRUE(
      wait_until([&] { return http.get("/readyz", "").status == 200; }, std::chrono::milliseconds(30'000)))
      << http.get("/readyz", "").body;

  // Across a restart: every acknowledged transfer is there, and the balances are the model's.
  // A refused transfer's fate is unknown to its client (a 507 or 503 acknowledges nothing),
  // so one that made it into the log after all is counted in, as a retry would find it.
  server_->kill9();
  server_->start();
  HttpClient& again = server_->client();
  for (const auto& ref : acknowledged)
    EXPECT_EQ(again.get("/v1/transactions/" + ref + "/verify", key).status, 200u) << ref;
  for (const auto& ref : refused) {
    const HttpResult r = again.get("/v1/transactions/" + ref + "/verify", key);
    if (r.status != 200) continue;
    const json t = json::parse(r.body)["data"];
    model[t["source"]] -= t["amount"].get<std::int64_t>();
    model[t["destination"]] += t["amount"].get<std::int64_t>();
  }
  for (const auto& [id, balance] : model) EXPECT_EQ(balance_of(again, key, id), balance) << id;
}

}  // namespace
}  // namespace kobo::it
