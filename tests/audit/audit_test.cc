// kobo audit's checks, in process: a real log written by the Ledger on the embedded backend is
// clean, a rebuild of its views equals the incremental ones byte for byte, and tampered copies
// (an amount edited, an event dropped, two swapped, one inserted) are reported with the
// partition and seq of each. Then the model's rules, one table row each, on small hand-made logs.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <thread>

#include "audit/audit.h"
#include "command/ledger.h"
#include "common/crypto.h"
#include "events/embedded_log.h"
#include "events/fact_codec.h"
#include "events/memory_log.h"
#include "projection/projector.h"
#include "projection/rebuild.h"
#include "projection/render.h"
#include "projection/rows.h"
#include "tests/audit/forge.h"
#include "tests/audit/log_surgery.h"
#include "tests/support/node.h"
#include "tests/support/scratch_dir.h"

namespace kobo::audit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;
using forge::Forge, forge::opening, forge::wallet, forge::incoming, forge::transfer, forge::payout,
    forge::reversal;
using forge::kA, forge::kB, forge::kT, forge::kC, forge::kInbound, forge::kSuspense, forge::kFees;
using forge::wallet_transfer, forge::hold, forge::beneficiary, forge::bulk;
using testing::LogSurgery;

constexpr std::uint32_t kPartitions = 4;

std::string describe(const AuditReport& r) { return summary(r, 50); }

bool has_violation(const AuditReport& r, Check check, std::uint32_t partition, std::uint64_t seq,
                   std::string_view says = {}) {
  for (const Violation& v : r.violations)
    if (v.check == check && v.partition && v.partition->value == partition && v.seq && v.seq->value == seq &&
        v.reason.find(says) != std::string::npos)
      return true;
  return false;
}

Outcome must(Ledger& ledger, Command c) {
  Outcome o = ledger.execute(std::move(c));
  EXPECT_TRUE(o.ok()) << to_string(o.rejection) << " " << o.detail;
  return o;
}

// ---- a real log -------------------------------------------------------------------------------

struct Business {
  Caller caller;
  std::vector<std::string> wallets;
};

Business create_business(Ledger& ledger, int n) {
  const std::string biz = "biz-" + uuid_v4(), acc = "acc-" + uuid_v4();
  must(ledger,
       CreateBusiness{biz, "Business " + std::to_string(n), acc, "Default", sha256_hex("sk_test_" + biz),
                      sha256_hex("sk_live_" + biz), "pk_test_" + biz, "pk_live_" + biz});
  Business b{Caller{biz, acc, false}, {}};
  for (int i = 0; i < 3; ++i) {
    const Outcome w =
        must(ledger, CreateWallet{b.caller, "wallet " + std::to_string(i), "secondary", {}, {}});
    b.wallets.push_back(w.id);
    must(ledger,
         IncomingCredit{b.caller, std::get<WalletOpened>(w.events.at(0).data).account_number, Kobo(1'000'000),
                        "funding", "Ada Obi", "0123456784", "044", "Access Bank", "000014"});
  }
  return b;
}

void transfers(Ledger& ledger, const Business& b, const std::string& tag) {
  for (std::size_t i = 0; i < b.wallets.size(); ++i) {
    WalletTransfer t;
    t.caller = b.caller;
    t.source = b.wallets[i];
    t.destination = b.wallets[(i + 1) % b.wallets.size()];
    t.amount = Kobo(10'000 + static_cast<std::int64_t>(i) * 1'000);
    t.narration = "transfer " + tag;
    t.reference = tag + "-" + std::to_string(i);
    must(ledger, t);
    if (i == 0) {
      EXPECT_TRUE(must(ledger, t).replayed);  // an idempotent repeat appends nothing
    }
  }
}

void payout(Ledger& ledger, const Business& b, const std::string& reference, bool fails) {
  BankTransfer t;
  t.caller = b.caller;
  t.source = b.wallets[0];
  t.bank_account_id = "bka-" + uuid_v4();
  t.account_number = "0123456784";
  t.account_name = "Ada Obi";
  t.bank_code = "044";
  t.bank_name = "Access Bank";
  t.name_enquiry_ref = "ner-" + reference;
  t.amount = Kobo(20'000);
  t.narration = "payout";
  t.reference = reference;
  t.save_beneficiary = true;
  if (fails) t.metadata = RawJson{R"({"sandboxOutcome":"failed"})"};
  must(ledger, t);
}

// Waits until the log has stopped growing (settlements and rail steps done) and the projector
// has applied all of it.
void settle(EventLog& log, Ledger& ledger, Projector& projector) {
  std::vector<Offset> last;
  for (int quiet = 0; quiet < 5;) {
    std::this_thread::sleep_for(60ms);
    auto ends = log.end_offsets();
    ASSERT_TRUE(ends.ok());
    quiet = ends.value() == last ? quiet + 1 : 0;
    last = ends.value();
  }
  for (std::uint32_t p = 0; p < kPartitions; ++p)
    ASSERT_TRUE(projector.wait_applied(Partition(p), ledger.durable_seq(Partition(p)), 10s));
}

// Two writer generations on one embedded log (so two epochs), views built incrementally by a
// projector running beside the writer, and everything the service does today: businesses,
// wallets, incoming credits, wallet transfers, an idempotent repeat, payouts that succeed and fail.
void write_real_log(const fs::path& data_dir) {
  auto log = open_embedded_log({(data_dir / "log").string(), kPartitions, /*sync=*/false});
  ASSERT_TRUE(log.ok()) << log.status().message();
  LedgerOptions lo;
  lo.config.rail_delay = 5ms;
  testing::Node node(*log.value(), data_dir, {.partitions = kPartitions, .ledger = lo});
  std::vector<Business> businesses;
  for (int generation = 0; generation < 2; ++generation) {
    ASSERT_TRUE(node.start().ok());
    Ledger& ledger = node.ledger();
    if (generation == 0) {
      for (int n = 0; n < 3; ++n) businesses.push_back(create_business(ledger, n));
    }
    for (const Business& b : businesses) {
      transfers(ledger, b, "g" + std::to_string(generation) + "-" + b.caller.business.substr(4, 8));
      payout(ledger, b, "pay-ok-" + std::to_string(generation) + b.caller.business, false);
      payout(ledger, b, "pay-fail-" + std::to_string(generation) + b.caller.business, true);
    }
    settle(*log.value(), ledger, node.projector());
    node.stop();
  }
}

class AuditOfARealLog : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    scratch_.emplace("audit-test");  // kept when the suite fails
    root_ = scratch_->path();
    write_real_log(root_ / "golden");
  }
  static void TearDownTestSuite() { scratch_.reset(); }

 protected:
  // A fresh copy of the golden data dir for this test to change.
  fs::path copy() {
    const fs::path to = root_ / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(to);
    testing::copy_data_dir(root_ / "golden", to);
    return to;
  }

  static AuditReport audit(const fs::path& data_dir, bool views = true) {
    auto log = open_embedded_log({(data_dir / "log").string(), 0, false, false});
    EXPECT_TRUE(log.ok()) << log.status().message();
    auto report = audit_log(*log.value());
    EXPECT_TRUE(report.ok());
    if (views && report->clean()) {
      auto v = Views::open((data_dir / "views").string(), log.value()->partitions());
      EXPECT_TRUE(v.ok());
      EXPECT_TRUE(audit_views(*log.value(), *v.value(), data_dir / "scratch", report.value()).ok());
      EXPECT_FALSE(fs::exists(data_dir / "scratch"));
    }
    return std::move(report).value();
  }

  // Tampers with a fresh copy of the golden log; returns the copy and where.
  std::pair<fs::path, testing::RecordAt> tampered(testing::Tamper t) {
    const fs::path dir = copy();
    LogSurgery log(dir / "log");
    return {dir, testing::tamper(log, t)};
  }

  static std::optional<testing::ScratchDir> scratch_;
  static fs::path root_;
};

std::optional<testing::ScratchDir> AuditOfARealLog::scratch_;
fs::path AuditOfARealLog::root_;

TEST_F(AuditOfARealLog, IsCleanAndCountsWhatItRead) {
  const AuditReport r = audit(root_ / "golden");
  EXPECT_TRUE(r.clean()) << describe(r);
  EXPECT_EQ(r.partitions, kPartitions);
  EXPECT_EQ(r.events, r.records);
  EXPECT_EQ(r.businesses, 3u);
  EXPECT_EQ(r.wallets, 9u);
  // Per business: 3 fundings, 2 x 3 transfers of 2 records, 2 x 2 payouts, 2 reversals.
  EXPECT_EQ(r.transactions, 3u * (3 + 12 + 4 + 2));
  Kobo sum = r.wallets_test + r.wallets_live;
  for (const auto& [account, balance] : r.system) sum += balance;
  EXPECT_EQ(sum.value, 0);
  EXPECT_EQ(r.wallets_test.value, 3 * (3'000'000 - 2 * (20'000 + 1'075)));
  EXPECT_TRUE(r.views.checked);
  EXPECT_TRUE(r.views.caught_up);
  EXPECT_GT(r.views.keys_compared, 100u);
}

TEST_F(AuditOfARealLog, ReplayRebuildsViewsEqualToTheIncrementalOnesByteForByte) {
  const fs::path dir = copy();
  {
    auto log = open_embedded_log({(dir / "log").string(), 0, false, false});
    ASSERT_TRUE(log.ok());
    auto rebuilt = rebuild_views(*log.value(), dir / "rebuilt");
    ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().message();
    // Written without a write-ahead log and handed over flushed: everything is in table files.
    std::uint64_t unflushed = 0, in_memory = 0;
    ASSERT_TRUE(rebuilt.value()->db().GetIntProperty("rocksdb.num-entries-active-mem-table", &unflushed));
    ASSERT_TRUE(rebuilt.value()->db().GetIntProperty("rocksdb.num-entries-imm-mem-tables", &in_memory));
    EXPECT_EQ(unflushed + in_memory, 0u);
    std::string stats;
    ASSERT_TRUE(rebuilt.value()->db().GetProperty("rocksdb.dbstats", &stats));
    EXPECT_NE(stats.find("Cumulative WAL: 0 writes,"), std::string::npos) << stats;
    auto incremental = Views::open((dir / "views").string(), kPartitions);
    ASSERT_TRUE(incremental.ok());
    const ViewsDiff diff = compare_views(*rebuilt.value(), *incremental.value());
    EXPECT_EQ(diff.differences, 0u) << (diff.listed.empty() ? "" : diff.listed.front().key);
    EXPECT_GT(diff.keys_compared, 100u);
  }
  ASSERT_TRUE(swap_in_views(dir / "views", dir / "rebuilt").ok());
  EXPECT_FALSE(fs::exists(dir / "rebuilt"));
  EXPECT_TRUE(audit(dir).clean());
}

TEST_F(AuditOfARealLog, ReportsAViewThatDiffersFromTheLogByKey) {
  const fs::path dir = copy();
  std::string wallet_id;
  {
    auto views = Views::open((dir / "views").string(), kPartitions);
    ASSERT_TRUE(views.ok());
    std::unique_ptr<rocksdb::Iterator> it(views.value()->db().NewIterator(rocksdb::ReadOptions()));
    it->Seek("b");
    ASSERT_TRUE(it->Valid() && it->key().starts_with("b"));
    auto wallet = rows::decode_wallet(it->value().ToString());
    ASSERT_TRUE(wallet.ok());
    // The wallet's publicId, from its opening's fact: the same 16 bytes under W.
    const auto opening = views.value()->read("W" + it->key().ToString().substr(1));
    ASSERT_TRUE(opening.ok() && opening.value().has_value());
    const auto facts = render::wallet_facts(decode_fact(*opening.value()).value());
    ASSERT_TRUE(facts.has_value());
    wallet_id = facts->public_id;
    rows::WalletRow edited = wallet.value();
    edited.balance = Kobo(edited.balance.value + 1);
    ASSERT_TRUE(views.value()->db().Put(rocksdb::WriteOptions(), it->key(), rows::encode(edited)).ok());
  }
  const AuditReport r = audit(dir);
  ASSERT_EQ(r.violation_count, 1u) << describe(r);
  EXPECT_EQ(r.violations[0].check, Check::views);
  EXPECT_EQ(r.violations[0].key, "wallet balances/" + wallet_id.substr(wallet_id.find('-') + 1))
      << "the key names the wallet by its id's UUID";
}

TEST_F(AuditOfARealLog, NamesAnAmountEditedWithoutItsHash) {
  const auto [dir, t] = tampered(testing::Tamper::edit_amount);
  const AuditReport r = audit(dir);
  EXPECT_TRUE(has_violation(r, Check::chain, t.partition, t.seq, "edited")) << describe(r);
  // The audit goes on with the event as written, so the books show it too.
  EXPECT_TRUE(has_violation(r, Check::double_entry, t.partition, t.seq)) << describe(r);
}

TEST_F(AuditOfARealLog, NamesAnAmountEditedAndResealed) {
  const auto [dir, t] = tampered(testing::Tamper::edit_amount_resealed);
  const AuditReport r = audit(dir);
  // Its own hash is right: the next event's prevHash and the books give it away.
  EXPECT_TRUE(has_violation(r, Check::chain, t.partition, t.seq + 1, "prevHash")) << describe(r);
  EXPECT_TRUE(has_violation(r, Check::balance, t.partition, t.seq)) << describe(r);
  EXPECT_TRUE(has_violation(r, Check::double_entry, t.partition, t.seq)) << describe(r);
}

TEST_F(AuditOfARealLog, NamesADroppedEvent) {
  const auto [dir, t] = tampered(testing::Tamper::drop);
  const AuditReport r = audit(dir);
  EXPECT_TRUE(
      has_violation(r, Check::chain, t.partition, t.seq, "seq " + std::to_string(t.seq) + " is missing"))
      << describe(r);
}

TEST_F(AuditOfARealLog, NamesTwoSwappedEvents) {
  const auto [dir, t] = tampered(testing::Tamper::swap);
  const AuditReport r = audit(dir);
  const std::string next = "seq " + std::to_string(t.seq + 1);
  EXPECT_TRUE(has_violation(r, Check::chain, t.partition, t.seq, "missing (" + next + " follows"))
      << describe(r);
  EXPECT_TRUE(has_violation(r, Check::chain, t.partition, t.seq, "comes after " + next)) << describe(r);
}

TEST_F(AuditOfARealLog, NamesAnInsertedEvent) {
  const auto [dir, t] = tampered(testing::Tamper::insert);
  const AuditReport r = audit(dir);
  EXPECT_TRUE(has_violation(r, Check::double_entry, t.partition, t.seq, "sum to 1000000 kobo"))
      << describe(r);
  EXPECT_TRUE(has_violation(r, Check::chain, t.partition, t.seq, "a second, different event")) << describe(r);
}

// ---- the rules, on hand-made logs ---------------------------------------------------------------

// Tier 1: 10,000 a day, 200,000 at most; tier 2: 1,000,000 a day, 50,000 at most; tier 3 unbounded.
const TierLimits kSmallLimits{TierLimit{Kobo(10'000), Kobo(200'000)},
                              TierLimit{Kobo(1'000'000), Kobo(50'000)},
                              TierLimit{Kobo(1'000'000), std::nullopt}};

struct Row {
  const char* name;
  std::function<void(Forge&)> log;  // after opening()
  Check check;                      // the violation expected
  std::uint64_t seq;
  const char* says;
};

AuditReport audit_memory(const std::function<void(Forge&)>& build) {
  MemoryLog log(1);
  Forge f(log);
  opening(f);
  build(f);
  auto r = audit_log(log);
  EXPECT_TRUE(r.ok());
  return std::move(r).value();
}

TEST(AuditRules, HandMadeLogsThatFollowTheRulesAreClean) {
  for (const auto& [name, build] : std::
           vector<std::pair<const char*, std::function<void(Forge&)>>>{{"opening", [](Forge&) {}},
                                                                       {"a wallet transfer",
                                                                        [](Forge& f) {
                                                                          transfer(f, "1",
                                                                                   {kA, Kobo(-30'000),
                                                                                    Kobo(70'000)},
                                                                                   {kB, Kobo(30'000),
                                                                                    Kobo(30'000)},
                                                                                   "r1");
                                                                        }},
                                                                       {"a payout that succeeds",
                                                                        [](Forge& f) {
                                                                          payout(f);
                                                                          PayoutSucceeded x;
                                                                          x.postings = {
                                                                              {kSuspense, Kobo(-20'000),
                                                                               Kobo(0)},
                                                                              {"sys:outbound-settlement",
                                                                               Kobo(20'000), Kobo(20'000)}};
                                                                          x.transaction =
                                                                              TransactionId("trx-pay");
                                                                          f.command({{x}});
                                                                        }},
                                                                       {"a payout that fails and is reversed",
                                                                        [](Forge& f) {
                                                                          payout(f);
                                                                          f.command({{reversal()}});
                                                                        }},
                                                                       {"a transit wallet sweeps",
                                                                        [](Forge& f) {
                                                                          f.command({{incoming(
                                                                              {{kInbound, Kobo(-7'000),
                                                                                Kobo(-107'000)},
                                                                               {kT, Kobo(7'000), Kobo(7'000)},
                                                                               {kT, Kobo(-7'000), Kobo(0)},
                                                                               {kB, Kobo(7'000),
                                                                                Kobo(7'000)}})}});
                                                                        }},
                                                                       {"a collection wallet is paid",
                                                                        [](Forge& f) {
                                                                          f.command({{incoming(
                                                                              {{kInbound, Kobo(-5'000),
                                                                                Kobo(-105'000)},
                                                                               {kA, Kobo(5'000),
                                                                                Kobo(105'000)}},
                                                                              kC)}});
                                                                        }},
                                                                       {"a second writer", [](Forge& f) {
                                                                          f.writer_started();
                                                                          transfer(f, "1",
                                                                                   {kA, Kobo(-30'000),
                                                                                    Kobo(70'000)},
                                                                                   {kB, Kobo(30'000),
                                                                                    Kobo(30'000)},
                                                                                   "r1");
                                                                        }}}) {
    const AuditReport r = audit_memory(build);
    EXPECT_TRUE(r.clean()) << name << "\n" << describe(r);
  }
}

// The opening takes seqs 1..7.
TEST(AuditRules, EachRuleIsReportedWhereItIsBroken) {
  const std::vector<Row> rows{
      {"overdraft",
       [](Forge& f) {
         transfer(f, "1", {kA, Kobo(-150'000), Kobo(-50'000)}, {kB, Kobo(150'000), Kobo(150'000)}, "r1");
       },
       Check::negative, 8, "goes below zero"},
      {"reference used twice",
       [](Forge& f) {
         transfer(f, "1", {kA, Kobo(-10'000), Kobo(90'000)}, {kB, Kobo(10'000), Kobo(10'000)}, "r1");
         transfer(f, "2", {kA, Kobo(-10'000), Kobo(80'000)}, {kB, Kobo(10'000), Kobo(20'000)}, "r1");
       },
       Check::reference, 9, "'r1'"},
      {"reference used twice, naming its first use",
       [](Forge& f) {
         transfer(f, "1", {kA, Kobo(-10'000), Kobo(90'000)}, {kB, Kobo(10'000), Kobo(10'000)}, "r1");
         transfer(f, "2", {kA, Kobo(-10'000), Kobo(80'000)}, {kB, Kobo(10'000), Kobo(20'000)}, "r1");
       },
       Check::reference, 9, "was used before, at seq 8"},
      // What the audit remembers of the past (audit/scratch_index.h), one kind a row: ids, integer
      // ids, account numbers, names and references used, and the records that have ended.
      {"a transaction created again",
       [](Forge& f) {
         f.command({{wallet_transfer("trx-t1", {201, 202}, {kA, Kobo(-10'000), Kobo(90'000)},
                                     {kB, Kobo(10'000), Kobo(10'000)}, "r1")}});
         f.command({{wallet_transfer("trx-t1", {203, 204}, {kA, Kobo(-10'000), Kobo(80'000)},
                                     {kB, Kobo(10'000), Kobo(20'000)}, "r2")}});
       },
       Check::record, 9, "transaction trx-t1 is created again"},
      {"a transaction's integer id taken",
       [](Forge& f) {
         f.command({{wallet_transfer("trx-t1", {201, 202}, {kA, Kobo(-10'000), Kobo(90'000)},
                                     {kB, Kobo(10'000), Kobo(10'000)}, "r1")}});
         f.command({{wallet_transfer("trx-t2", {202, 203}, {kA, Kobo(-10'000), Kobo(80'000)},
                                     {kB, Kobo(10'000), Kobo(20'000)}, "r2")}});
       },
       Check::record, 9, "trx-t2: id 202 is taken or zero"},
      {"a wallet's account number taken",
       [](Forge& f) { f.command({{wallet("vba-x", 5, "0000000011", "X")}}); }, Check::record, 8,
       "account number 0000000011 is already taken"},
      {"a wallet's integer id taken", [](Forge& f) { f.command({{wallet("vba-x", 2, "0000000055", "X")}}); },
       Check::record, 8, "id 2 is already taken"},
      {"an account's integer id taken",
       [](Forge& f) {
         BusinessRegistered b;
         b.account = AccountId("acc-00000000-0000-4000-8000-000000000002");
         b.account_name = "Default";
         b.id = 1;
         b.live_secret_key_hash = sha256_hex("l2");
         b.test_secret_key_hash = sha256_hex("t2");
         b.name = "Other";
         f.command({{b}}, "biz-00000000-0000-4000-8000-000000000002");
       },
       Check::record, 8, "account id 1 is already taken"},
      {"a bank account saved again",
       [](Forge& f) {
         f.command({{beneficiary("bka-1", 7)}});
         f.command({{beneficiary("bka-1", 8)}});
       },
       Check::record, 9, "bank account bka-1: saved again"},
      {"a bank account's integer id taken",
       [](Forge& f) {
         f.command({{beneficiary("bka-1", 7)}});
         f.command({{beneficiary("bka-2", 7)}});
       },
       Check::record, 9, "bank account bka-2: id 7 is already taken"},
      {"a hold reference used twice",
       [](Forge& f) {
         f.command({{hold("hld-1", "h1")}});
         f.command({{hold("hld-2", "h1")}});
       },
       Check::reference, 9, "reference 'h1' was used by a hold before, at seq 8"},
      {"a bulk transfer reference used twice",
       [](Forge& f) {
         f.command({{bulk("blk-1", "b1")}});
         f.command({{bulk("blk-2", "b1")}});
       },
       Check::reference, 9, "bulk transfer reference 'b1' was used before"},
      {"a hold placed again after it ended",
       [](Forge& f) {
         f.command({{hold("hld-1", "h1")}});
         f.command({{HoldVoided{HoldId("hld-1")}}});
         f.command({{hold("hld-1", "h2")}});
       },
       Check::record, 10, "hold hld-1 is placed again"},
      {"a hold voided after it ended",
       [](Forge& f) {
         f.command({{hold("hld-1", "h1")}});
         f.command({{HoldVoided{HoldId("hld-1")}}});
         f.command({{HoldVoided{HoldId("hld-1")}}});
       },
       Check::hold, 10, "HoldVoided of hold hld-1, which has ended"},
      {"a hold of another business voided",
       [](Forge& f) {
         f.command({{hold("hld-1", "h1")}});
         f.command({{HoldVoided{HoldId("hld-1")}}});
         f.command({{HoldVoided{HoldId("hld-1")}, std::nullopt}}, "biz-other");
       },
       Check::hold, 10, "which its business does not have"},
      {"a settled payout's status that moves back",
       [](Forge& f) {
         payout(f);
         PayoutSucceeded x;
         x.postings = {{kSuspense, Kobo(-20'000), Kobo(0)},
                       {"sys:outbound-settlement", Kobo(20'000), Kobo(20'000)}};
         x.transaction = TransactionId("trx-pay");
         f.command({{x}});
         f.command({{PayoutProcessing{TransactionId("trx-pay")}}});
       },
       Check::status, 11, "the status of trx-pay moves from success to processing"},
      {"a settled payout reversed to another wallet",
       [](Forge& f) {
         payout(f);
         PayoutSucceeded x;
         x.postings = {{kSuspense, Kobo(-20'000), Kobo(0)},
                       {"sys:outbound-settlement", Kobo(20'000), Kobo(20'000)}};
         x.transaction = TransactionId("trx-pay");
         f.command({{x}});
         PayoutFailed back = reversal();
         back.postings.back().account = kB;
         f.command({{back}});
       },
       Check::transfer, 11, "does not give its amount and fee back to its source"},
      {"a paid collection wallet that expires",
       [](Forge& f) {
         f.command(
             {{incoming({{kInbound, Kobo(-5'000), Kobo(-105'000)}, {kA, Kobo(5'000), Kobo(105'000)}}, kC)}});
         f.command({{CollectionWalletExpired{WalletId(kC)}}});
       },
       Check::status, 9, "which is paid or expired"},
      {"a wallet opened with a paid collection wallet's id",
       [](Forge& f) {
         f.command(
             {{incoming({{kInbound, Kobo(-5'000), Kobo(-105'000)}, {kA, Kobo(5'000), Kobo(105'000)}}, kC)}});
         f.command({{wallet(kC, 5, "0000000055", "X")}});
       },
       Check::record, 9, "opened again"},
      {"a transfer that does not balance",
       [](Forge& f) {
         transfer(f, "1", {kA, Kobo(-30'000), Kobo(70'000)}, {kB, Kobo(29'000), Kobo(29'000)}, "r1");
       },
       Check::double_entry, 8, "sum to -1000 kobo"},
      {"a transfer's legs that disagree",
       [](Forge& f) {
         transfer(f, "1", {kA, Kobo(-30'000), Kobo(70'000)}, {kB, Kobo(29'000), Kobo(29'000)}, "r1");
       },
       Check::transfer, 8, "is not debited what the destination is credited"},
      {"a transfer to itself",
       [](Forge& f) {
         transfer(f, "1", {kA, Kobo(-30'000), Kobo(70'000)}, {kA, Kobo(30'000), Kobo(100'000)}, "r1");
       },
       Check::transfer, 8, "the source is the destination"},
      {"a stated balance that is wrong",
       [](Forge& f) {
         transfer(f, "1", {kA, Kobo(-30'000), Kobo(71'000)}, {kB, Kobo(30'000), Kobo(30'000)}, "r1");
       },
       Check::balance, 8, "the stated balance 71000 kobo"},
      // A statement's balanceAfter chains from the line before (extensions section 4): the audit
      // holds every posting's balance to its account's previous one, across events, within one,
      // and on system accounts.
      {"a balance after that does not chain from the event before",
       [](Forge& f) {
         transfer(f, "1", {kA, Kobo(-30'000), Kobo(70'000)}, {kB, Kobo(30'000), Kobo(30'000)}, "r1");
         transfer(f, "2", {kA, Kobo(-10'000), Kobo(50'000)}, {kB, Kobo(10'000), Kobo(40'000)}, "r2");
       },
       Check::balance, 9, "the stated balance 50000 kobo is not 70000 kobo plus -10000 kobo"},
      {"a sweep whose balance does not chain from the credit in the same event",
       [](Forge& f) {
         f.command({{incoming({{kInbound, Kobo(-7'000), Kobo(-107'000)},
                               {kT, Kobo(7'000), Kobo(7'000)},
                               {kT, Kobo(-7'000), Kobo(1'000)},
                               {kB, Kobo(7'000), Kobo(7'000)}})}});
       },
       Check::balance, 8, "the stated balance 1000 kobo"},
      {"a fee account's balance that does not chain",
       [](Forge& f) {
         BankTransferInitiated p;
         p.account = AccountId(Forge::kAccount);
         p.beneficiary =
             Beneficiary{"Ada Obi", "0123456784", BankAccountId("bka-1"), "044", "Access Bank", 0, "ner-1"};
         p.ids = {300};
         p.narration = "payout";
         p.postings = {{kA, Kobo(-21'075), Kobo(78'925)},
                       {kSuspense, Kobo(20'000), Kobo(20'000)},
                       {kFees, Kobo(1'075), Kobo(2'075)}};
         p.reference = "pay-1";
         p.transaction = TransactionId("trx-pay");
         f.command({{p}});
       },
       Check::balance, 8, "sys:fees: the stated balance 2075 kobo"},
      {"a status that moves back",
       [](Forge& f) {
         payout(f);
         f.command({{PayoutProcessing{TransactionId("trx-pay")}}});
       },
       Check::status, 10, "moves from processing to processing"},
      {"a status change of what is no payout",
       [](Forge& f) { f.command({{PayoutProcessing{TransactionId("trx-fund")}}}); }, Check::status, 8,
       "no payout of this partition"},
      {"a failed payout not given back",
       [](Forge& f) {
         payout(f);
         PayoutFailed x = reversal();
         x.postings.pop_back();
         x.ids.clear();
         f.command({{x}});
       },
       Check::transfer, 10, "does not give its amount and fee back"},
      {"a payout without its fee leg",
       [](Forge& f) {
         BankTransferInitiated p;
         p.account = AccountId(Forge::kAccount);
         p.beneficiary =
             Beneficiary{"Ada Obi", "0123456784", BankAccountId("bka-1"), "044", "Access Bank", 0, "ner-1"};
         p.ids = {300};
         p.narration = "payout";
         p.postings = {{kA, Kobo(-21'075), Kobo(78'925)}, {kSuspense, Kobo(21'075), Kobo(21'075)}};
         p.reference = "pay-1";
         p.transaction = TransactionId("trx-pay");
         f.command({{p}});
       },
       Check::transfer, 8, "not [source wallet, sys:payout-suspense, sys:fees]"},
      {"a transit wallet that keeps what it receives",
       [](Forge& f) {
         f.command({{incoming({{kInbound, Kobo(-7'000), Kobo(-107'000)}, {kT, Kobo(7'000), Kobo(7'000)}})}});
       },
       Check::transfer, 8, "2 postings, not 4"},
      {"a collection wallet paid twice",
       [](Forge& f) {
         f.command(
             {{incoming({{kInbound, Kobo(-5'000), Kobo(-105'000)}, {kA, Kobo(5'000), Kobo(105'000)}}, kC)}});
         f.command(
             {{incoming({{kInbound, Kobo(-5'000), Kobo(-110'000)}, {kA, Kobo(5'000), Kobo(110'000)}}, kC)}});
       },
       Check::status, 9, "paid when paid or expired"},
      {"a collection wallet paid another amount",
       [](Forge& f) {
         f.command(
             {{incoming({{kInbound, Kobo(-6'000), Kobo(-106'000)}, {kA, Kobo(6'000), Kobo(106'000)}}, kC)}});
       },
       Check::transfer, 8, "another amount or wallet"},
      {"an epoch without WriterStarted",
       [](Forge& f) {
         f.command({{wallet("vba-x", 5, "0000000055", "X"), Epoch(7)}});
       },
       Check::epoch, 8, "writer has epoch 1"},
      {"a command cut short",
       [](Forge& f) {
         f.command({{wallet("vba-x", 5, "0000000055", "X")}}, Forge::kBusiness, 2);
         f.command({{wallet("vba-y", 6, "0000000066", "Y")}});
       },
       Check::command, 8, "ends after 1 of its 2 events"},
      {"a wallet of an unknown business",
       [](Forge& f) { f.command({{wallet("vba-x", 5, "0000000055", "X")}}, "biz-other"); }, Check::record, 8,
       "does not exist in this partition"},
      {"a wallet name taken twice", [](Forge& f) { f.command({{wallet("vba-x", 5, "0000000055", "A")}}); },
       Check::record, 8, "name 'A' is already taken"},
      {"a posting to a wallet that does not exist",
       [](Forge& f) {
         f.command({{incoming(
             {{kInbound, Kobo(-5'000), Kobo(-105'000)}, {"vba-nowhere", Kobo(5'000), Kobo(5'000)}})}});
       },
       Check::record, 8, "which is no wallet of this partition"},
      // KYC tiers (docs/architecture.md, KYC tiers), with the limits a WriterStarted recorded.
      {"a debit over its tier's daily allowance",
       [](Forge& f) {
         f.writer_started(kSmallLimits);
         f.command({{WalletTierChanged{1, WalletId(kA)}}});
         transfer(f, "1", {kA, Kobo(-6'000), Kobo(94'000)}, {kB, Kobo(6'000), Kobo(6'000)}, "r1");
         transfer(f, "2", {kA, Kobo(-5'000), Kobo(89'000)}, {kB, Kobo(5'000), Kobo(11'000)}, "r2");
       },
       Check::limits, 11, "debited 11000 kobo on its day, over tier 1's 10000 kobo"},
      {"a credit over its tier's balance cap",
       [](Forge& f) {
         f.writer_started(kSmallLimits);
         f.command({{WalletTierChanged{1, WalletId(kB)}}});
         f.command(
             {{incoming({{kInbound, Kobo(-250'000), Kobo(-350'000)}, {kB, Kobo(250'000), Kobo(250'000)}})}});
       },
       Check::limits, 10, "credited to 250000 kobo, over tier 1's cap of 200000 kobo"},
  };
  for (const Row& row : rows) {
    const AuditReport r = audit_memory(row.log);
    EXPECT_TRUE(has_violation(r, row.check, 0, row.seq, row.says)) << row.name << "\n" << describe(r);
  }
}

// What the tier rules allow is clean: debits up to the allowance, a new Lagos day, a reversal that
// gives back more than the cap leaves room for, a lowered tier that keeps what it holds.
TEST(AuditRules, WhatTheTierLimitsAllowIsClean) {
  const AuditReport r = audit_memory([](Forge& f) {
    f.writer_started(kSmallLimits);
    f.command({{WalletTierChanged{1, WalletId(kA)}}});
    transfer(f, "1", {kA, Kobo(-10'000), Kobo(90'000)}, {kB, Kobo(10'000), Kobo(10'000)}, "r1");
    f.command({{WalletTierChanged{2, WalletId(kA)}}});  // capped at 50,000, A keeps its 90,000
    BankTransferInitiated p;
    p.account = AccountId(Forge::kAccount);
    p.beneficiary =
        Beneficiary{"Ada Obi", "0123456784", BankAccountId("bka-1"), "044", "Access Bank", 0, "ner-1"};
    p.ids = {300};
    p.narration = "payout";
    p.postings = {{kA, Kobo(-21'075), Kobo(68'925)},
                  {kSuspense, Kobo(20'000), Kobo(20'000)},
                  {kFees, Kobo(1'075), Kobo(1'075)}};
    p.reference = "pay-1";
    p.transaction = TransactionId("trx-pay");
    f.command({{p}});
    f.command({{PayoutProcessing{TransactionId("trx-pay")}}});
    PayoutFailed x = reversal();  // A back to 90,000, above its cap: a reversal is not capped
    x.postings.back().balance = Kobo(90'000);
    f.command({{x}});
  });
  EXPECT_TRUE(r.violations.empty()) << describe(r);
}

// A log written by contract v1 is refused for what it is, naming the version (docs/architecture.md section
// 4).
TEST(AuditRules, AVersionOneRecordIsReportedNamingItsVersion) {
  MemoryLog log(1);
  Forge f(log);
  f.raw(
      R"({"hash":"c615d555b9ca5b1e8da1a408bf8d3ca89f05cec599897f9b5967a09e49e5ef59","business":"","commandSeq":1,)"
      R"("commandSize":1,"data":{"epoch":1},"epoch":1,"live":false,"partition":0,)"
      R"("prevHash":"0000000000000000000000000000000000000000000000000000000000000000","schemaVersion":1,"seq":1,)"
      R"("time":"2026-11-21T09:51:45.993Z","type":"WriterStarted"})");
  const auto r = audit_log(log);
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r.value().clean());
  EXPECT_NE(r.value().violations.at(0).reason.find("schemaVersion 1 is not supported"), std::string::npos)
      << describe(r.value());
}

}  // namespace
}  // namespace kobo::audit
