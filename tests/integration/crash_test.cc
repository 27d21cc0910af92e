// Crash safety (guarantees 2, 3 and 4, docs/architecture.md section 6) through the real server: transfers
// under load from several threads, kill -9 mid-load, restart on the same data directory, then
//  - every acknowledged transfer is there exactly once,
//  - every transfer whose answer was lost, retried with the same reference and body, answers 200,
//  - every wallet's balance equals the client-side model exactly,
//  - a second server started on a copy of the log alone (no views) shows the same balances and
//    the same transactions: balances equal the replay of the log.
// Random choices come from a seed printed at the start; KOBO_TEST_SEED=<n> repeats a run.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "tests/integration/harness.h"

namespace kobo::it {
namespace {

namespace fs = std::filesystem;

struct Attempt {
  std::string reference;
  json body;
  unsigned status = 0;  // 0: no answer (connection lost)
  std::string detail;
};

// Everything a client can observe of a server's state, for comparing two servers.
struct Observed {
  std::map<std::string, std::int64_t> balances;  // publicId → balance
  std::int64_t wallets = 0, transactions = 0, debits = 0, credits = 0;
  // publicId → (entry, status, amount, balance, reference)
  std::map<std::string, std::tuple<std::string, std::string, std::int64_t, std::int64_t, std::string>>
      records;
};

Observed observe(HttpClient& http, const std::string& key, const std::vector<std::string>& wallet_ids) {
  Observed o;
  for (const auto& id : wallet_ids) o.balances[id] = balance_of(http, key, id);
  o.wallets = total_count(http, key, "/v1/virtual-accounts");
  o.transactions = total_count(http, key, "/v1/transactions");
  o.debits = total_count(http, key, "/v1/transactions", "entry=debit");
  o.credits = total_count(http, key, "/v1/transactions", "entry=credit");
  for (const json& t : list_all(http, key, "/v1/transactions")) {
    o.records[t["publicId"]] = {t["entry"], t["status"], t["amount"], t["balance"], t["reference"]};
  }
  return o;
}

class Crash : public ::testing::Test {
 protected:
  void TearDown() override {
    replica_.reset();
    server_.reset();
    replica_scratch_.reset();  // kept if the test failed
  }

  std::unique_ptr<KoboProcess> server_, replica_;
  // The replica's data dir: not among those the integration run keeps for its audit.
  std::optional<kobo::testing::ScratchDir> replica_scratch_;
  fs::path replica_dir_;
};

TEST_F(Crash, Kill9MidLoadLosesNoAcknowledgedTransferAndAppliesNoneTwice) {
  const std::uint64_t seed = test_seed("Crash.Kill9MidLoadLosesNoAcknowledgedTransferAndAppliesNoneTwice");
  std::mt19937_64 rng(seed);
  server_ = std::make_unique<KoboProcess>(kobo_options());
  HttpClient* http = &server_->client();
  const std::string key = server_->test_key();

  // Wallets rich enough that no transfer of the run can be refused for funds: every transfer
  // must succeed, so every lost answer can be retried to a 200.
  constexpr int kWallets = 6;
  constexpr std::int64_t kFunding = 1'000'000'000;
  std::vector<json> wallets;
  std::vector<std::string> ids;
  std::map<std::string, std::int64_t> model;
  for (int i = 0; i < kWallets; ++i) {
    wallets.push_back(create_wallet(*http, key));
    ids.push_back(wallets.back()["publicId"]);
    fund(*http, key, wallets.back(), kFunding);
    model[ids.back()] = kFunding;
  }

  std::set<std::string> succeeded;  // references answered 200, first time or on retry
  std::vector<Attempt> all_attempts;
  constexpr int kRounds = 2, kThreads = 4, kMaxPerThread = 3'000;

  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::vector<std::vector<Attempt>> per_thread(kThreads);
    std::atomic<bool> stop{false};
    std::atomic<int> answered{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < kThreads; ++t) {
      pool.emplace_back([&, t] {
        std::mt19937_64 trng(seed ^ (static_cast<std::uint64_t>(round) << 40) ^
                             (static_cast<std::uint64_t>(t) << 32));
        auto client = server_->new_client(std::chrono::milliseconds(5'000));
        for (int i = 0; i < kMaxPerThread && !stop.load(); ++i) {
          const std::size_t a = trng() % kWallets;
          const std::size_t b = (a + 1 + trng() % (kWallets - 1)) % kWallets;
          Attempt at;
          at.reference = "crash-" + std::to_string(seed) + "-r" + std::to_string(round) + "-t" +
                         std::to_string(t) + "-" + std::to_string(i);
          at.body = transfer_body(ids[a], ids[b], 10'000 + static_cast<std::int64_t>(trng() % 50'000),
                                  at.reference, "crash test");
          try {
            HttpResult res = client->post("/v1/transactions/transfer", at.body, key);
            at.status = res.status;
            at.detail = res.body.substr(0, 300);
            ++answered;
          } catch (const std::exception& e) {
            at.detail = e.what();
          }
          per_thread[static_cast<std::size_t>(t)].push_back(at);
          if (at.status == 0) break;  // the server is gone; the rest would be lost too
        }
      });
    }
    // Kill at a random moment once the load is under way.
    ASSERT_TRUE(wait_until([&] { return answered.load() >= 20; }, std::chrono::milliseconds(20'000)))
        << "no load reached the server";
    std::this_thread::sleep_for(std::chrono::milliseconds(50 + rng() % 400));
    server_->kill9();
    stop = true;
    for (auto& th : pool) th.join();

    std::vector<Attempt> attempts;
    for (auto& v : per_thread) attempts.insert(attempts.end(), v.begin(), v.end());
    int acked = 0, lost = 0;
    for (const Attempt& at : attempts) {
      if (at.status == 200) {
        ++acked;
      } else if (at.status == 0 || at.status == 503) {
        ++lost;
      } else {
        ADD_FAILURE() << at.reference << " answered " << at.status << " " << at.detail;
      }
    }
    std::cout << "round " << round << ": " << attempts.size() << " transfers sent, " << acked
              << " acknowledged, " << lost << " without an answer" << std::endl;

    server_->start();
    http = &server_->client();

    // Every acknowledged transfer survived the crash.
    for (const Attempt& at : attempts) {
      if (at.status != 200) continue;
      HttpResult res = http->get("/v1/transactions/" + at.reference, key);
      ASSERT_EQ(res.status, 200u) << "acknowledged transfer " << at.reference << " lost: " << res.body;
      const json& t = res.json["data"];
      EXPECT_EQ(t["entry"], "debit");
      EXPECT_EQ(t["amount"], at.body["amount"]);
      EXPECT_EQ(t["source"], at.body["source"]);
      EXPECT_EQ(t["destination"], at.body["destination"]);
      succeeded.insert(at.reference);
    }
    // Every transfer without an answer, retried as it was, now answers 200 (replayed or fresh).
    int replayed = 0;
    for (const Attempt& at : attempts) {
      if (at.status == 200) continue;
      HttpResult res = http->post("/v1/transactions/transfer", at.body, key);
      ASSERT_EQ(res.status, 200u) << "retry of " << at.reference << ": " << res.body;
      EXPECT_EQ(res.json["data"]["reference"], at.reference);
      replayed += res.header("idempotent-replayed") == "true";
      succeeded.insert(at.reference);
    }
    std::cout << "round " << round << ": " << replayed
              << " of the retries were replays (applied before the crash)" << std::endl;
    all_attempts.insert(all_attempts.end(), attempts.begin(), attempts.end());
  }

  for (const Attempt& at : all_attempts) {
    if (!succeeded.count(at.reference)) continue;
    const std::int64_t amount = at.body["amount"];
    model[at.body["source"]] -= amount;
    model[at.body["destination"]] += amount;
  }

  ASSERT_TRUE(wait_until([&] { return total_count(*http, key, "/v1/transactions", "status=pending") == 0; },
                         std::chrono::milliseconds(20'000)))
      << "transfers still pending after the restart";

  // Balances equal the model exactly.
  std::int64_t sum = 0;
  for (const auto& id : ids) {
    const std::int64_t balance = balance_of(*http, key, id);
    EXPECT_EQ(balance, model[id]) << "wallet " << id;
    sum += balance;
  }
  EXPECT_EQ(sum, kWallets * kFunding);

  // Each successful reference has exactly one debit and one credit leg; nothing else moved money.
  std::map<std::string, int> debits_by_ref, credits_by_debit_ref;
  for (const json& t : list_all(*http, key, "/v1/transactions")) {
    if (t["entry"] == "debit") {
      debits_by_ref[t["reference"]]++;
    } else if (t["debitReference"].is_string()) {
      credits_by_debit_ref[t["debitReference"]]++;
    }
  }
  EXPECT_EQ(debits_by_ref.size(), succeeded.size());
  for (const auto& ref : succeeded) {
    EXPECT_EQ(debits_by_ref[ref], 1) << "debits with reference " << ref;
    EXPECT_EQ(credits_by_debit_ref[ref], 1) << "credit legs of " << ref;
  }
  EXPECT_EQ(total_count(*http, key, "/v1/transactions", "entry=debit"),
            static_cast<std::int64_t>(succeeded.size()));
  EXPECT_EQ(total_count(*http, key, "/v1/transactions", "entry=credit"),
            static_cast<std::int64_t>(succeeded.size()) + kWallets);

  // Balances equal the replay of the log: a second server with a fresh data dir on a copy of
  // the embedded log, or on the same Kafka topic (docs/architecture.md section 9: a fresh data dir pointed at
  // an existing topic serves the same balances).
  const Observed first = observe(*http, key, ids);
  EXPECT_EQ(server_->terminate(), 0) << "SIGTERM should stop kobo cleanly; log:\n" << server_->log_tail();
  replica_dir_ = replica_scratch_.emplace("it-replica", kobo::testing::ScratchDir::Keep::on_failure).path();
  KoboOptions options = kobo_options();
  options.data_dir = replica_dir_;
  if (kobo::testing::test_kafka_brokers().empty()) {
    const fs::path log_dir = server_->data_dir() / "log";
    ASSERT_TRUE(fs::is_directory(log_dir)) << log_dir << " is not the embedded log";
    fs::copy(log_dir, replica_dir_ / "log", fs::copy_options::recursive);
  } else {
    options.kafka_topic = server_->kafka_topic();
  }
  options.credentials = server_->credentials();
  ASSERT_FALSE(fs::exists(replica_dir_ / "views"));

  replica_ = std::make_unique<KoboProcess>(options);
  EXPECT_EQ(replica_->test_key(), key);
  const Observed second = observe(replica_->client(), key, ids);
  EXPECT_EQ(second.balances, first.balances);
  EXPECT_EQ(second.wallets, first.wallets);
  EXPECT_EQ(second.transactions, first.transactions);
  EXPECT_EQ(second.debits, first.debits);
  EXPECT_EQ(second.credits, first.credits);
  EXPECT_TRUE(second.records == first.records) << "the replayed transaction list differs from the original";

  // And the original, restarted on its own views, still agrees.
  server_->start();
  const Observed again = observe(server_->client(), key, ids);
  EXPECT_EQ(again.balances, first.balances);
  EXPECT_TRUE(again.records == first.records);
}

// A crash before anything else happened: the bootstrap business survives with the same keys.
TEST_F(Crash, Kill9RightAfterStartKeepsTheBootstrapCredentials) {
  server_ = std::make_unique<KoboProcess>(kobo_options());
  const KoboCredentials before = server_->credentials();
  json w = create_wallet(server_->client(), before.test_secret_key);
  server_->restart();
  EXPECT_EQ(server_->test_key(), before.test_secret_key);
  EXPECT_EQ(server_->live_key(), before.live_secret_key);
  EXPECT_EQ(server_->credentials().business_id, before.business_id);
  HttpResult res =
      server_->client().get("/v1/virtual-accounts/" + w["publicId"].get<std::string>(), server_->test_key());
  expect_success(res, 200, Message::kAbsent);
  // A new port works too.
  server_->restart(KoboProcess::Port::kFresh);
  EXPECT_EQ(server_->client()
                .get("/v1/virtual-accounts/" + w["publicId"].get<std::string>(), server_->test_key())
                .status,
            200u);
}

// Snapshots of the writer's state (command/snapshot.h) under kill -9: restarts from an intact
// snapshot, from one half written and from a corrupt one each come back with every balance the
// client modelled, every reference remembered (a repeat replays) and writes going on.
TEST_F(Crash, Kill9WithASnapshotHalfWrittenOrCorruptRestartsToTheRightBalances) {
  server_ = std::make_unique<KoboProcess>(kobo_options({"--snapshot-every-events", "30"}));
  const std::string key = server_->test_key();
  const fs::path snapshots = server_->data_dir() / "snapshots";
  const auto newest_snapshot = [&]() -> fs::path {
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(snapshots, ec))
      if (e.path().extension() == ".bin") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    return files.empty() ? fs::path() : files.back();
  };
  std::vector<std::string> ids;
  std::map<std::string, std::int64_t> model;
  for (int i = 0; i < 4; ++i) {
    const json w = create_wallet(server_->client(), key);
    ids.push_back(w["publicId"]);
    fund(server_->client(), key, w, 10'000'000);
    model[ids.back()] = 10'000'000;
  }
  std::vector<json> sent;  // every acknowledged transfer's body
  const auto transfers = [&](int n) {
    for (int i = 0; i < n; ++i) {
      const std::size_t a = sent.size() % ids.size(), b = (a + 1) % ids.size();
      const std::int64_t amount = 10'000 + static_cast<std::int64_t>(sent.size());
      json body = transfer_body(ids[a], ids[b], amount, unique_name("snap"));
      const HttpResult res = server_->client().post("/v1/transactions/transfer", body, key);
      ASSERT_EQ(res.status, 200u) << res.body;
      model[ids[a]] -= amount;
      model[ids[b]] += amount;
      sent.push_back(std::move(body));
    }
  };
  // Transfers until a snapshot newer than `than` is written, then a few more: the log's tail.
  const auto until_snapshot_after = [&](const fs::path& than) {
    for (int round = 0; newest_snapshot().empty() || newest_snapshot() == than; ++round) {
      ASSERT_LT(round, 30) << "no snapshot was written";
      transfers(10);
      wait_until([&] { return !newest_snapshot().empty() && newest_snapshot() != than; },
                 std::chrono::seconds(2));
    }
    transfers(7);
  };
  const auto log_says = [&](std::string_view what) {
    std::ifstream in(server_->log_path());
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    return text.find(what) != std::string::npos;
  };

  for (const std::string damage : {"intact", "half written", "corrupt"}) {
    SCOPED_TRACE(damage);
    until_snapshot_after(newest_snapshot());
    server_->kill9();
    const fs::path file = newest_snapshot();
    for (const auto& e : fs::directory_iterator(snapshots))  // only the newest: nothing older to fall back on
      if (e.path() != file) fs::remove(e.path());
    std::string bytes;
    {
      std::ifstream in(file, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    if (damage == "half written") bytes.resize(bytes.size() / 2);
    if (damage == "corrupt") bytes[bytes.size() / 3] = static_cast<char>(bytes[bytes.size() / 3] ^ 0x01);
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;

    server_->start();
    if (damage == "intact") {
      EXPECT_TRUE(log_says("writer state rebuilt from a snapshot and the log after it"))
          << server_->log_tail();
    } else {
      EXPECT_TRUE(log_says("a snapshot of the writer's state is not used")) << server_->log_tail();
      EXPECT_TRUE(log_says("writer state rebuilt from the log")) << server_->log_tail();
    }
    for (const auto& [id, balance] : model) EXPECT_EQ(balance_of(server_->client(), key, id), balance) << id;
    // The writer remembers every reference: the first and the last transfer replay.
    for (const json* body : {&sent.front(), &sent.back()}) {
      const HttpResult res = server_->client().post("/v1/transactions/transfer", *body, key);
      EXPECT_EQ(res.status, 200u) << res.body;
      EXPECT_EQ(res.header("idempotent-replayed"), "true") << res.body;
    }
  }
  for (const auto& [id, balance] : model) EXPECT_EQ(balance_of(server_->client(), key, id), balance) << id;
}

}  // namespace
}  // namespace kobo::it
