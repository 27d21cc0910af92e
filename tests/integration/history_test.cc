// Idempotency across snapshots, crashes and a lost index (docs/architecture.md, guarantees 4 and
// 9): the writer keeps no reference in memory; the history index on disk answers for them. A
// transfer reference used before the newest snapshot, one used between that snapshot and a kill -9,
// and one used after the restart are each, repeated with the same body, replayed (200,
// Idempotent-Replayed, the original transaction, no money moved) and, with another body, refused
// 409 Duplicate reference. The same holds after the index is deleted and rebuilt from the log.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <thread>

#include "tests/integration/harness.h"

namespace kobo::it {
namespace {

namespace fs = std::filesystem;

constexpr int kSnapshotEvery = 40;

std::size_t snapshots_in(const fs::path& dir) {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) n += e.path().extension() == ".bin";
  return n;
}

class History : public ::testing::Test {
 protected:
  // A transfer of `amount` between the two wallets with `reference`; its first answer.
  json transfer(const std::string& reference, std::int64_t amount) {
    const json body = transfer_body(a_, b_, amount, reference, "history");
    bodies_[reference] = body;
    const HttpResult res = server_->client().post("/v1/transactions/transfer", body, key_);
    EXPECT_EQ(res.status, 200u) << reference << ": " << res.body;
    EXPECT_NE(res.header("idempotent-replayed"), "true") << reference << " is new";
    return res.json["data"];
  }

  // The reference repeated with its body: the original, replayed; with another amount: 409.
  void expect_remembered(const std::string& reference, const std::string& transaction) {
    SCOPED_TRACE(reference);
    HttpClient& http = server_->client();
    const HttpResult same = http.post("/v1/transactions/transfer", bodies_.at(reference), key_);
    ASSERT_EQ(same.status, 200u) << same.body;
    EXPECT_EQ(same.header("idempotent-replayed"), "true");
    EXPECT_EQ(same.json["data"]["publicId"], transaction);
    json other = bodies_.at(reference);
    other["amount"] = other["amount"].get<std::int64_t>() + 1;
    expect_error(http.post("/v1/transactions/transfer", other, key_), 409, "Duplicate reference");
  }

  std::unique_ptr<KoboProcess> server_;
  std::string key_, a_, b_;
  std::map<std::string, json> bodies_;
};

TEST_F(History, ReferencesFromBeforeTheSnapshotBeforeTheCrashAndAfterTheRestartAreAllRemembered) {
  server_ = std::make_unique<KoboProcess>(
      kobo_options({"--snapshot-every-events", std::to_string(kSnapshotEvery)}));
  key_ = server_->test_key();
  HttpClient* http = &server_->client();
  const json a = create_wallet(*http, key_), b = create_wallet(*http, key_);
  a_ = a["publicId"];
  b_ = b["publicId"];
  fund(*http, key_, a, 100'000'000);

  std::map<std::string, std::string> transactions;  // reference -> its transaction
  const std::string prefix = unique_name("hist");
  const std::string before = prefix + "-before-snapshot";
  transactions[before] = transfer(before, 10'000)["publicId"];
  // Enough events for the snapshotter to write a snapshot that holds `before`.
  const fs::path snapshots = server_->data_dir() / "snapshots";
  for (int i = 0; snapshots_in(snapshots) == 0; ++i) {
    ASSERT_LT(i, 20 * kSnapshotEvery) << "no snapshot was written";
    transfer(prefix + "-filler-" + std::to_string(i), 10'000);
    if (i >= kSnapshotEvery) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const std::string between = prefix + "-after-snapshot";
  transactions[between] = transfer(between, 20'000)["publicId"];

  server_->kill9();
  server_->start();
  http = &server_->client();
  const std::string after = prefix + "-after-restart";
  transactions[after] = transfer(after, 30'000)["publicId"];

  const std::int64_t balance_a = balance_of(*http, key_, a_), balance_b = balance_of(*http, key_, b_);
  for (const auto& [reference, transaction] : transactions) expect_remembered(reference, transaction);
  EXPECT_EQ(balance_of(*http, key_, a_), balance_a) << "a repeat moved money";
  EXPECT_EQ(balance_of(*http, key_, b_), balance_b) << "a repeat moved money";

  // The index is derived data: deleted, it is rebuilt from the log and answers the same.
  server_->kill9();
  fs::remove_all(server_->data_dir() / "history");
  server_->start();
  http = &server_->client();
  for (const auto& [reference, transaction] : transactions) expect_remembered(reference, transaction);
  EXPECT_EQ(balance_of(*http, key_, a_), balance_a);
  EXPECT_EQ(balance_of(*http, key_, b_), balance_b);
  EXPECT_TRUE(fs::exists(server_->data_dir() / "history" / "CURRENT")) << "the index was not rebuilt";
}

}  // namespace
}  // namespace kobo::it
