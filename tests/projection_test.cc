// The projector: views built incrementally, across restarts, equal views rebuilt from scratch.
#include "projection/projector.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <filesystem>
#include <map>

#include "command/ledger.h"
#include "events/memory_log.h"

namespace kobo {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr std::uint32_t kPartitions = 2;
const Caller kCaller{"biz-projection", "acc-p", false};

std::map<std::string, std::string> dump(const Views& v) {
  std::map<std::string, std::string> out;
  std::unique_ptr<rocksdb::Iterator> it(v.db().NewIterator(rocksdb::ReadOptions()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) out[it->key().ToString()] = it->value().ToString();
  return out;
}

class ProjectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kobo-projection-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    LedgerOptions o;
    o.config.partitions = kPartitions;
    ledger_ = std::make_unique<Ledger>(log_, o);
    ASSERT_TRUE(ledger_->start().ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Views> open_views(const std::string& name) {
    auto v = Views::open((dir_ / name).string(), kPartitions);
    EXPECT_TRUE(v.ok());
    return std::move(v).value();
  }

  // Some wallets, funding and transfers, all waited for.
  std::vector<std::string> traffic(const std::string& prefix, int wallets) {
    std::vector<std::string> ids;
    for (int i = 0; i < wallets; ++i) {
      const Outcome w = ledger_->execute(CreateWallet{kCaller, prefix + std::to_string(i), "secondary", {}, {}});
      EXPECT_TRUE(w.ok());
      ids.push_back(w.record.at("publicId"));
      EXPECT_TRUE(ledger_->execute(IncomingCredit{kCaller, w.record.at("accountNumber"), Kobo(100'000), "f", "S",
                                                  "0000014579", "058", "GTB", "000013"})
                      .ok());
    }
    for (int i = 0; i + 1 < wallets; ++i) {
      WalletTransfer t;
      t.caller = kCaller;
      t.source = ids[static_cast<std::size_t>(i)];
      t.destination = ids[static_cast<std::size_t>(i + 1)];
      t.amount = Kobo(10'000 * (i + 1));
      t.narration = "n";
      t.reference = prefix + "-ref-" + std::to_string(i);
      EXPECT_TRUE(ledger_->execute(t).ok());
    }
    return ids;
  }

  void wait_caught_up(const Projector& p) {
    for (std::uint32_t i = 0; i < kPartitions; ++i)
      ASSERT_TRUE(p.wait_applied(Partition(i), ledger_->durable_seq(Partition(i)), 5s));
  }

  fs::path dir_;
  MemoryLog log_{kPartitions};
  std::unique_ptr<Ledger> ledger_;
};

TEST_F(ProjectionTest, IncrementalViewsAcrossARestartEqualAFullRebuild) {
  {
    auto views = open_views("live");
    Projector p(log_, *views);
    ASSERT_TRUE(p.start().ok());
    traffic("first", 4);
    wait_caught_up(p);
  }
  auto views = open_views("live");
  {
    Projector p(log_, *views);
    ASSERT_TRUE(p.start().ok());
    traffic("second", 3);
    std::this_thread::sleep_for(50ms);  // let settlements land too
    wait_caught_up(p);
  }
  auto rebuilt = open_views("rebuilt");
  Projector fresh(log_, *rebuilt);
  ASSERT_TRUE(fresh.catch_up().ok());
  EXPECT_EQ(dump(*views), dump(*rebuilt));
}

TEST_F(ProjectionTest, BalancesAndTransactionsAreReadable) {
  auto views = open_views("v");
  Projector p(log_, *views);
  ASSERT_TRUE(p.start().ok());
  const auto ids = traffic("w", 2);
  std::this_thread::sleep_for(50ms);
  wait_caught_up(p);
  const Scope scope{kCaller.business, false};
  EXPECT_EQ(views->wallet(scope, ids[0])->at("balance"), 90'000);
  EXPECT_EQ(views->wallet(scope, ids[1])->at("balance"), 110'000);
  EXPECT_FALSE(views->wallet(Scope{"biz-other", false}, ids[0]).has_value());
  EXPECT_FALSE(views->wallet(Scope{kCaller.business, true}, ids[0]).has_value());
  auto debit = views->transaction_by_reference(scope, kCaller.account, "w-ref-0");
  ASSERT_TRUE(debit.has_value());
  EXPECT_EQ(debit->at("status"), "success");
  const Page all = views->transactions(scope, {}, PageRequest{1, 2});
  EXPECT_EQ(all.total_count, 4u);  // two fundings, one debit, one credit
  ASSERT_EQ(all.items.size(), 2u);
  TransactionFilter debits;
  debits.entry = "debit";
  EXPECT_EQ(views->transactions(scope, debits, PageRequest{1, 10}).total_count, 1u);
}

}  // namespace
}  // namespace kobo
