// kobo audit's checks, in process: a real log written by the Ledger on the embedded backend is
// clean, a rebuild of its views equals the incremental ones byte for byte, and tampered copies
// (an amount edited, an event dropped, two swapped, one inserted) are reported with the
// partition and seq of each. Then the model's rules, one table row each, on small hand-made logs.
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "audit/audit.h"
#include "command/ledger.h"
#include "common/crypto.h"
#include "events/embedded_log.h"
#include "events/memory_log.h"
#include "projection/projector.h"
#include "projection/rebuild.h"
#include "tests/audit/log_surgery.h"

namespace kobo::audit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;
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
  must(ledger, CreateBusiness{biz, "Business " + std::to_string(n), acc, "Default", sha256_hex("sk_test_" + biz),
                              sha256_hex("sk_live_" + biz), "pk_test_" + biz, "pk_live_" + biz});
  Business b{Caller{biz, acc, false}, {}};
  for (int i = 0; i < 3; ++i) {
    const Outcome w = must(ledger, CreateWallet{b.caller, "wallet " + std::to_string(i), "secondary", {}, {}});
    b.wallets.push_back(w.record.at("publicId"));
    must(ledger, IncomingCredit{b.caller, w.record.at("accountNumber"), Kobo(1'000'000), "funding", "Ada Obi",
                                "0123456784", "044", "Access Bank", "000014"});
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
    t.fingerprint = "fp-" + *t.reference;
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
  if (fails) t.metadata = {{"sandboxOutcome", "failed"}};
  t.fingerprint = "fp-" + reference;
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
  auto views = Views::open((data_dir / "views").string(), kPartitions);
  ASSERT_TRUE(views.ok());
  LedgerOptions lo;
  lo.config.partitions = kPartitions;
  lo.config.rail_delay = 5ms;
  std::vector<Business> businesses;
  for (int generation = 0; generation < 2; ++generation) {
    Ledger ledger(*log.value(), lo);
    ASSERT_TRUE(ledger.start().ok());
    Projector projector(*log.value(), *views.value());
    ASSERT_TRUE(projector.start().ok());
    if (generation == 0) {
      for (int n = 0; n < 3; ++n) businesses.push_back(create_business(ledger, n));
    }
    for (const Business& b : businesses) {
      transfers(ledger, b, "g" + std::to_string(generation) + "-" + b.caller.business.substr(4, 8));
      payout(ledger, b, "pay-ok-" + std::to_string(generation) + b.caller.business, false);
      payout(ledger, b, "pay-fail-" + std::to_string(generation) + b.caller.business, true);
    }
    settle(*log.value(), ledger, projector);
    projector.stop();
    ledger.stop();
  }
}

class AuditOfARealLog : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("kobo-audit-test-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    write_real_log(root_ / "golden");
  }
  static void TearDownTestSuite() {
    if (!::testing::UnitTest::GetInstance()->Failed()) fs::remove_all(root_);
  }

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

  static fs::path root_;
};

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
  {
    auto views = Views::open((dir / "views").string(), kPartitions);
    ASSERT_TRUE(views.ok());
    std::unique_ptr<rocksdb::Iterator> it(views.value()->db().NewIterator(rocksdb::ReadOptions()));
    it->Seek("W");
    ASSERT_TRUE(it->Valid() && it->key().starts_with("W"));
    json wallet = json::parse(it->value().ToString());
    wallet["balance"] = wallet["balance"].get<std::int64_t>() + 1;
    ASSERT_TRUE(views.value()->db().Put(rocksdb::WriteOptions(), it->key(), wallet.dump()).ok());
  }
  const AuditReport r = audit(dir);
  ASSERT_EQ(r.violation_count, 1u) << describe(r);
  EXPECT_EQ(r.violations[0].check, Check::views);
  EXPECT_TRUE(r.violations[0].key.starts_with("wallets/vba-")) << r.violations[0].key;
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
  EXPECT_TRUE(has_violation(r, Check::chain, t.partition, t.seq, "seq " + std::to_string(t.seq) + " is missing"))
      << describe(r);
  EXPECT_TRUE(has_violation(r, Check::command, t.partition, t.seq + 1, "missing")) << describe(r);
}

TEST_F(AuditOfARealLog, NamesTwoSwappedEvents) {
  const auto [dir, t] = tampered(testing::Tamper::swap);
  const AuditReport r = audit(dir);
  const std::string next = "seq " + std::to_string(t.seq + 1);
  EXPECT_TRUE(has_violation(r, Check::chain, t.partition, t.seq, "missing (" + next + " follows")) << describe(r);
  EXPECT_TRUE(has_violation(r, Check::chain, t.partition, t.seq, "comes after " + next)) << describe(r);
}

TEST_F(AuditOfARealLog, NamesAnInsertedEvent) {
  const auto [dir, t] = tampered(testing::Tamper::insert);
  const AuditReport r = audit(dir);
  EXPECT_TRUE(has_violation(r, Check::double_entry, t.partition, t.seq, "sum to 1000000 kobo")) << describe(r);
  EXPECT_TRUE(has_violation(r, Check::chain, t.partition, t.seq, "a second, different event")) << describe(r);
}

// ---- the rules, on hand-made logs ---------------------------------------------------------------

// Appends hand-written events to partition 0 of a one-partition MemoryLog, sealed and chained
// (or not, when a row asks for it): the auditor must judge content, not just hashes.
class Forge {
 public:
  explicit Forge(MemoryLog& log) : log_(log) {}

  struct Draft {
    Draft(EventType t, json d, std::optional<Epoch> e = std::nullopt) : type(t), data(std::move(d)), epoch(e) {}
    EventType type;
    json data;
    std::optional<Epoch> epoch;  // default: the current writer's
  };

  void writer_started() {
    epoch_ = Epoch(epoch_.value + 1);
    append({{EventType::writer_started, {{"epoch", epoch_.value}}, epoch_}}, "");
  }

  // One command; returns the seq of its first event.
  std::uint64_t command(const std::vector<Draft>& drafts, const std::string& business = kBusiness,
                        std::optional<std::uint32_t> size = std::nullopt) {
    return append(drafts, business, size);
  }

  static constexpr const char* kBusiness = "biz-00000000-0000-4000-8000-000000000001";
  static constexpr const char* kAccount = "acc-00000000-0000-4000-8000-000000000001";

 private:
  std::uint64_t append(const std::vector<Draft>& drafts, const std::string& business,
                       std::optional<std::uint32_t> size = std::nullopt) {
    const std::uint64_t first = seq_ + 1;
    std::vector<EncodedEvent> batch;
    for (const Draft& d : drafts) {
      Event e;
      e.partition = Partition(0);
      e.seq = Seq(++seq_);
      e.epoch = d.epoch.value_or(epoch_);
      e.command_seq = Seq(first);
      e.command_size = size.value_or(static_cast<std::uint32_t>(drafts.size()));
      e.type = d.type;
      e.business = business;
      e.time = 1'790'000'000'000;
      e.data = d.data;
      e.prev_hash = hash_;
      const std::string bytes = seal(e);
      hash_ = e.hash;
      batch.push_back(EncodedEvent{e.partition, e.seq, e.type, business, e.time, bytes});
    }
    EXPECT_TRUE(log_.append(batch).ok());
    return first;
  }

  MemoryLog& log_;
  std::uint64_t seq_ = 0;
  std::string hash_ = kGenesisHash;
  Epoch epoch_{0};
};

const std::string kTime = "2026-09-21T10:00:00.000Z";

json posting(const std::string& account, std::int64_t amount, std::int64_t balance, json trx = nullptr) {
  json p{{"ledgerAccount", account}, {"amount", amount}, {"balance", balance}};
  if (!trx.is_null()) p["transaction"] = std::move(trx);
  return p;
}

struct Trx {
  std::string id;
  std::uint64_t number;
  std::string entry;
  std::int64_t amount, fee, balance;
  std::string status, source, destination, destination_type, reference, link;
  json debit_reference = nullptr;
  json tags = json::array();
  json meta_credit = json::object();

  json to_json() const {
    return {{"publicId", id}, {"id", number}, {"auth", Forge::kBusiness}, {"account", Forge::kAccount},
            {"live", false}, {"entry", entry}, {"amount", amount}, {"fee", fee}, {"actualAmount", amount + fee},
            {"balance", balance}, {"status", status}, {"source", source}, {"sourceType", "VirtualAccount"},
            {"destination", destination}, {"destinationType", destination_type}, {"reference", reference},
            {"debitReference", debit_reference}, {"linkRef", link}, {"tags", tags},
            {"meta", {{"credit", meta_credit}}}, {"createdAt", kTime}, {"updatedAt", kTime}};
  }
};

const std::string kA = "vba-00000000-0000-4000-8000-00000000000a";
const std::string kB = "vba-00000000-0000-4000-8000-00000000000b";
const std::string kBank = "bka-00000000-0000-4000-8000-0000000000ba";

json wallet(const std::string& id, std::uint64_t number, const std::string& account_number) {
  return {{"wallet",
           {{"publicId", id}, {"id", number}, {"auth", Forge::kBusiness}, {"account", Forge::kAccount},
            {"live", false}, {"accountName", id}, {"accountNumber", account_number}, {"category", "secondary"},
            {"balance", 0}, {"createdAt", kTime}, {"updatedAt", kTime}}}};
}

// A business with wallets A and B, A funded with ₦1,000 from another bank.
void opening(Forge& f) {
  f.writer_started();
  f.command({{EventType::business_created, {{"business", {{"publicId", Forge::kBusiness}, {"name", "Test"}}}}},
             {EventType::account_created,
              {{"account", {{"publicId", Forge::kAccount}, {"business", Forge::kBusiness}, {"id", "1"}, {"__v", 0}}},
               {"secretKeyHashes", {{"test", sha256_hex("t")}, {"live", sha256_hex("l")}}}}}});
  f.command({{EventType::wallet_created, wallet(kA, 1, "0000000011")}});
  f.command({{EventType::wallet_created, wallet(kB, 2, "0000000022")}});
  const Trx funding{"trx-fund", 1, "credit", 100'000, 0, 100'000, "success", "src-1", kA, "VirtualAccount",
                    "ref-fund", "link-fund"};
  f.command({{EventType::debited, posting("sys:inbound-settlement", 100'000, -100'000)},
             {EventType::credited, posting(kA, 100'000, 100'000, funding.to_json())}});
}

// A wallet transfer A -> B of `amount` whose source ends at `a_after` and destination at `b_after`.
std::uint64_t transfer(Forge& f, const std::string& n, std::int64_t amount, std::int64_t a_after, std::int64_t b_after,
                       const std::string& reference, std::int64_t credit_amount = -1) {
  if (credit_amount < 0) credit_amount = amount;
  Trx debit{"trx-d" + n, 100 + std::stoull(n), "debit", amount, 0, a_after, "pending", kA, kB, "VirtualAccount",
            reference, "link-" + n};
  Trx credit{"trx-c" + n, 200 + std::stoull(n), "credit", credit_amount, 0, b_after, "success", kA, kB,
             "VirtualAccount", "ref-c" + n, "link-" + n};
  credit.debit_reference = reference;
  debit.meta_credit = {{"amount", credit_amount}, {"balance", b_after}};
  credit.meta_credit = {{"amount", amount}, {"balance", a_after}};
  return f.command({{EventType::debited, posting(kA, amount, a_after, debit.to_json())},
                    {EventType::credited, posting(kB, credit_amount, b_after, credit.to_json())}});
}

json status_change(const std::string& id, const std::string& from, const std::string& to) {
  return {{"publicId", id}, {"from", from}, {"status", to}, {"updatedAt", kTime}};
}

// A payout of ₦200 (fee ₦10.75) from A, starting at 100,000: debit, suspense and fee legs.
void payout(Forge& f) {
  const Trx debit{"trx-pay", 300, "debit", 20'000, 1'075, 78'925, "pending", kA, kBank, "BankAccount", "pay-1",
                  "link-pay"};
  f.command({{EventType::debited, posting(kA, 21'075, 78'925, debit.to_json())},
             {EventType::credited, posting("sys:payout-suspense", 20'000, 20'000)},
             {EventType::credited, posting("sys:fees", 1'075, 1'075)}});
  f.command({{EventType::transaction_status_changed, status_change("trx-pay", "pending", "processing")}});
}

json reversal(const std::string& id, std::int64_t amount) {
  Trx credit{id, 400, "credit", amount, 0, 100'000, "success", kBank, kA, "VirtualAccount", "rev-" + id, "link-pay"};
  credit.debit_reference = "pay-1";
  credit.tags = json::array({"reversal"});
  return posting(kA, amount, 100'000, credit.to_json());
}

void failed_payout(Forge& f, int reversals = 1) {
  payout(f);
  std::vector<Forge::Draft> drafts{{EventType::transaction_status_changed, status_change("trx-pay", "processing", "failed")},
                                   {EventType::debited, posting("sys:payout-suspense", 20'000, 0)},
                                   {EventType::debited, posting("sys:fees", 1'075, 0)}};
  if (reversals >= 1) drafts.push_back({EventType::credited, reversal("trx-rev", 21'075)});
  f.command(drafts);
}

struct Row {
  const char* name;
  std::function<void(Forge&)> log;  // after opening()
  Check check;                      // the violation expected (none when clean)
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

// The opening takes seqs 1..7 (WriterStarted, business + account, 2 wallets, a funding of 2).
TEST(AuditRules, HandMadeLogsThatFollowTheRulesAreClean) {
  for (const auto& [name, build] : std::vector<std::pair<const char*, std::function<void(Forge&)>>>{
           {"opening", [](Forge&) {}},
           {"transfer and settlement",
            [](Forge& f) {
              transfer(f, "1", 30'000, 70'000, 30'000, "r1");
              f.command({{EventType::transaction_status_changed, status_change("trx-d1", "pending", "success")}});
            }},
           {"payout that succeeds",
            [](Forge& f) {
              payout(f);
              f.command({{EventType::transaction_status_changed, status_change("trx-pay", "processing", "success")},
                         {EventType::debited, posting("sys:payout-suspense", 20'000, 0)},
                         {EventType::credited, posting("sys:outbound-settlement", 20'000, 20'000)}});
            }},
           {"payout that fails and is reversed", [](Forge& f) { failed_payout(f); }},
           {"a second writer", [](Forge& f) {
              f.writer_started();
              transfer(f, "1", 30'000, 70'000, 30'000, "r1");
            }}}) {
    const AuditReport r = audit_memory(build);
    EXPECT_TRUE(r.clean()) << name << "\n" << describe(r);
  }
}

TEST(AuditRules, EachRuleIsReportedWhereItIsBroken) {
  const std::vector<Row> rows{
      {"overdraft", [](Forge& f) { transfer(f, "1", 150'000, -50'000, 150'000, "r1"); }, Check::negative, 8,
       "falls to -50000"},
      {"reference used twice",
       [](Forge& f) {
         transfer(f, "1", 10'000, 90'000, 10'000, "r1");
         transfer(f, "2", 10'000, 80'000, 20'000, "r1");
       },
       Check::reference, 10, "'r1'"},
      {"legs that disagree", [](Forge& f) { transfer(f, "1", 30'000, 70'000, 29'000, "r1", 29'000); },
       Check::transfer, 9, "disagree on the amount"},
      {"a command that does not balance",
       [](Forge& f) { f.command({{EventType::credited, posting(kB, 5'000, 5'000)}}); }, Check::double_entry, 8,
       "sum to 5000 kobo"},
      {"a stated balance that is wrong", [](Forge& f) { transfer(f, "1", 30'000, 71'000, 30'000, "r1"); },
       Check::balance, 8, "the event says 71000"},
      {"a status that moves back",
       [](Forge& f) {
         transfer(f, "1", 30'000, 70'000, 30'000, "r1");
         f.command({{EventType::transaction_status_changed, status_change("trx-d1", "pending", "success")}});
         f.command({{EventType::transaction_status_changed, status_change("trx-d1", "success", "pending")}});
       },
       Check::status, 11, "moves back"},
      {"a status change from the wrong status",
       [](Forge& f) {
         transfer(f, "1", 30'000, 70'000, 30'000, "r1");
         f.command({{EventType::transaction_status_changed, status_change("trx-d1", "processing", "success")}});
       },
       Check::status, 10, "not in that status"},
      {"a failed payout not reversed", [](Forge& f) { failed_payout(f, 0); }, Check::transfer, 12,
       "reversed 0 times"},
      {"a payout reversed twice",
       [](Forge& f) {
         failed_payout(f);
         f.command({{EventType::debited, posting("sys:inbound-settlement", 21'075, -121'075)},
                    {EventType::credited, reversal("trx-rev2", 21'075)}});
       },
       Check::transfer, 17, "reversed again"},
      {"a payout without its fee leg",
       [](Forge& f) {
         const Trx debit{"trx-pay", 300, "debit", 20'000, 1'075, 78'925, "pending", kA, kBank, "BankAccount",
                         "pay-1", "link-pay"};
         f.command({{EventType::debited, posting(kA, 21'075, 78'925, debit.to_json())},
                    {EventType::credited, posting("sys:payout-suspense", 21'075, 21'075)}});
       },
       Check::transfer, 8, "no credit of its fee"},
      {"an epoch without WriterStarted",
       [](Forge& f) { f.command({{EventType::wallet_created, wallet("vba-x", 3, "0000000033"), Epoch(7)}}); },
       Check::epoch, 8, "writer has epoch 1"},
      {"a command cut short",
       [](Forge& f) {
         f.command({{EventType::wallet_created, wallet("vba-x", 3, "0000000033")}}, Forge::kBusiness, 2);
         f.command({{EventType::wallet_created, wallet("vba-y", 4, "0000000044")}});
       },
       Check::command, 8, "ends after 1 of its 2 events"},
      {"a wallet of an unknown business",
       [](Forge& f) {
         json w = wallet("vba-x", 3, "0000000033");
         w["wallet"]["auth"] = "biz-other";
         f.command({{EventType::wallet_created, w}}, "biz-other");
       },
       Check::record, 8, "does not exist in this partition"},
      {"a posting to a wallet that does not exist",
       [](Forge& f) {
         f.command({{EventType::debited, posting("sys:inbound-settlement", 5'000, -105'000)},
                    {EventType::credited, posting("vba-nowhere", 5'000, 5'000)}});
       },
       Check::balance, 9, "which this partition does not have"},
  };
  for (const Row& row : rows) {
    const AuditReport r = audit_memory(row.log);
    EXPECT_TRUE(has_violation(r, row.check, 0, row.seq, row.says)) << row.name << "\n" << describe(r);
  }
}

}  // namespace
}  // namespace kobo::audit
