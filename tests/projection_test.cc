// The projector: views built incrementally, across restarts, equal views rebuilt from scratch.
#include "projection/projector.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <filesystem>
#include <map>

#include "command/ledger.h"
#include "common/json_dump.h"
#include "events/memory_log.h"

namespace kobo {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;

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
      const Outcome w =
          ledger_->execute(CreateWallet{kCaller, prefix + std::to_string(i), "secondary", {}, {}});
      EXPECT_TRUE(w.ok());
      ids.push_back(w.id);
      EXPECT_TRUE(ledger_
                      ->execute(IncomingCredit{kCaller, account_number(w), Kobo(100'000), "f", "S",
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

  static std::string account_number(const Outcome& opened) {
    return std::get<WalletOpened>(opened.events.at(0).data).account_number;
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
  EXPECT_EQ(json::parse(views->wallet_text(scope, ids[0]).value()).at("balance"), 90'000);
  EXPECT_EQ(json::parse(views->wallet_text(scope, ids[1]).value()).at("balance"), 110'000);
  EXPECT_FALSE(views->wallet_text(Scope{"biz-other", false}, ids[0]).has_value());
  EXPECT_FALSE(views->wallet_text(Scope{kCaller.business, true}, ids[0]).has_value());
  auto debit = views->transaction_by_reference_text(scope, kCaller.account, "w-ref-0");
  ASSERT_TRUE(debit.has_value());
  EXPECT_EQ(json::parse(*debit).at("status"), "success");
  const Page all = views->transactions(scope, {}, PageRequest{1, 2});
  EXPECT_EQ(all.total_count, 4u);  // two fundings, one debit, one credit
  ASSERT_EQ(all.items.size(), 2u);
  TransactionFilter debits;
  debits.entry = "debit";
  EXPECT_EQ(views->transactions(scope, debits, PageRequest{1, 10}).total_count, 1u);
}

// query-api answers a write with the record its events render (projection/render.h): the same
// record the views then show, so an answer and a GET after it agree.
TEST_F(ProjectionTest, TheRecordAWriteAnswersIsTheOneTheViewsShow) {
  auto views = open_views("answers");
  Projector p(log_, *views);
  ASSERT_TRUE(p.start().ok());
  const Outcome a = ledger_->execute(CreateWallet{kCaller, "answer-a", "secondary", {}, {}});
  const Outcome b = ledger_->execute(CreateWallet{kCaller, "answer-b", "secondary", {}, {}});
  ASSERT_TRUE(a.ok() && b.ok());
  wait_caught_up(p);
  const Outcome credit = ledger_->execute(IncomingCredit{kCaller, account_number(a), Kobo(50'000), "f", "S",
                                                         "0000014579", "058", "GTB", "000013"});
  ASSERT_TRUE(credit.ok());
  wait_caught_up(p);
  WalletTransfer t{kCaller, a.id, b.id, Kobo(20'000), "rent", std::string("answer-ref"), std::nullopt};
  const Outcome transfer = ledger_->execute(t);
  ASSERT_TRUE(transfer.ok());
  wait_caught_up(p);

  const Scope scope{kCaller.business, false};
  const ViewRecords records(*views);
  // A wallet's answer is its record as opened; the views' copy has since moved its balance.
  auto opened = render::created_record(a.events, a.id, records);
  ASSERT_TRUE(opened.has_value());
  EXPECT_EQ(opened->at("balance"), 0);
  json shown = json::parse(views->wallet_text(scope, a.id).value());
  EXPECT_EQ(shown.at("balance"), 30'000);
  for (const char* member : {"balance", "updatedAt", "lastUpdated"}) {
    opened->erase(member);
    shown.erase(member);
  }
  EXPECT_EQ(dump_json(*opened), dump_json(shown));

  for (const Outcome* o : {&credit, &transfer}) {
    auto answer = render::created_record(o->events, o->id, records);
    ASSERT_TRUE(answer.has_value());
    EXPECT_EQ(dump_json(*answer), views->transaction_text(scope, kCaller.account, o->id).value());
  }
  EXPECT_EQ(render::created_record(transfer.events, "trx-none", records), std::nullopt);
}

// A single record is read as its stored text, and its scope from the text's top-level `auth`
// and `live` only: not from nested objects, and not by a match inside other values.
TEST_F(ProjectionTest, ASingleRecordsScopeIsItsTopLevelAuthAndLive) {
  auto views = open_views("scope");
  const std::string odd = "biz \"q\" \xc3\xa9 \\ \x01";
  const std::map<std::string, json> records{
      {"w-nested",
       {{"a", {{"auth", "biz-1"}, {"live", false}}}, {"auth", "biz-2"}, {"live", false}, {"n", "x"}}},
      {"w-odd", {{"auth", odd}, {"live", true}, {"metadata", {{"auth", "biz-1"}, {"live", false}}}}},
      {"w-no-live", {{"auth", "biz-1"}, {"name", "\"live\":false"}}},
      {"w-plain", {{"auth", "biz-1"}, {"b", {1, 2.5, {{"k", "}],\\"}}}}, {"live", false}, {"z", nullptr}}},
  };
  for (const auto& [id, record] : records)
    ASSERT_TRUE(views->db().Put(rocksdb::WriteOptions(), "W" + id, dump_json(record)).ok());
  const auto text = [&](const std::string& business, bool live, const std::string& id) {
    return views->wallet_text(Scope{business, live}, id);
  };
  EXPECT_FALSE(text("biz-1", false, "w-nested"));
  EXPECT_EQ(text("biz-2", false, "w-nested"), dump_json(records.at("w-nested")));
  EXPECT_FALSE(text("biz-2", true, "w-nested"));
  EXPECT_EQ(text(odd, true, "w-odd"), dump_json(records.at("w-odd")));
  EXPECT_FALSE(text("biz-1", false, "w-odd"));
  EXPECT_FALSE(text("biz \"q\" \xc3\xa9 \\ ", true, "w-odd"));
  EXPECT_FALSE(text("biz-1", false, "w-no-live"));
  EXPECT_FALSE(text("biz-1", true, "w-no-live"));
  EXPECT_EQ(text("biz-1", false, "w-plain"), dump_json(records.at("w-plain")));
  EXPECT_FALSE(text("biz-1", true, "w-plain"));
  EXPECT_FALSE(text("biz-1", false, "w-missing"));
}

}  // namespace
}  // namespace kobo
