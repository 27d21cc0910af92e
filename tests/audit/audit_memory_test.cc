// The audit's memory follows wallets, not history (docs/architecture.md section 5a, "The audit"):
// the model's entries stay the same however many transfers, holds, payouts, collection wallets,
// beneficiaries and bulk transfers a fixed set of wallets makes, and what left memory for the
// scratch index on disk (audit/scratch_index.h) is still found there: every reuse of an id,
// number or reference, and every change of a record that has ended, is reported once the first
// use went to the database in an earlier batch. Then the scratch index itself.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

#include "audit/audit.h"
#include "audit/model.h"
#include "audit/scratch_index.h"
#include "events/log_follower.h"
#include "tests/audit/forge.h"
#include "tests/support/scratch_dir.h"

namespace kobo::audit {
namespace {

namespace fs = std::filesystem;
using forge::Forge, forge::opening, forge::wallet, forge::incoming, forge::wallet_transfer, forge::hold,
    forge::beneficiary, forge::bulk;
using forge::kA, forge::kB, forge::kC, forge::kInbound, forge::kSuspense, forge::kFees;

constexpr const char* kOutbound = "sys:outbound-settlement";

// The balances a hand-made log states, kept as it is written: opening() leaves A with 100,000
// from inbound settlement.
class Books {
 public:
  Posting post(const std::string& account, std::int64_t amount) {
    balances_[account] += amount;
    return Posting{account, Kobo(amount), Kobo(balances_[account])};
  }

 private:
  std::map<std::string, std::int64_t> balances_{{kA, 100'000}, {kInbound, -100'000}};
};

// One round of everything a fixed set of wallets does that the audit must remember: two wallet
// transfers, a hold placed and voided, a payout initiated, processed and settled, a collection
// wallet opened and paid, a beneficiary saved and a bulk transfer accepted. Round r uses ids,
// numbers and references of its own.
void round(Forge& f, Books& books, std::uint64_t r) {
  const std::string n = std::to_string(r);
  const std::uint64_t id = 10'000 + 10 * r;  // the round's integer ids: id .. id + 9
  f.command({{wallet_transfer("trx-a" + n, {id, id + 1}, books.post(kA, -1), books.post(kB, 1), "ab-" + n)}});
  f.command(
      {{wallet_transfer("trx-b" + n, {id + 2, id + 3}, books.post(kB, -1), books.post(kA, 1), "ba-" + n)}});
  f.command({{hold("hld-" + n, "h-" + n)}});
  f.command({{HoldVoided{HoldId("hld-" + n)}}});

  BankTransferInitiated p;
  p.account = AccountId(Forge::kAccount);
  p.beneficiary =
      Beneficiary{"Ada Obi", "0123456784", BankAccountId("bka-p" + n), "044", "Access Bank", 0, "ner-" + n};
  p.ids = {id + 4};
  p.narration = "payout";
  p.postings = {books.post(kA, -1'075), books.post(kSuspense, 1'000), books.post(kFees, 75)};
  p.reference = "pay-" + n;
  p.transaction = TransactionId("trx-pay-" + n);
  f.command({{p}});
  f.command({{PayoutProcessing{TransactionId("trx-pay-" + n)}}});
  PayoutSucceeded s;
  s.postings = {books.post(kSuspense, -1'000), books.post(kOutbound, 1'000)};
  s.transaction = TransactionId("trx-pay-" + n);
  f.command({{s}});

  CollectionWalletOpened c;
  c.account = AccountId(Forge::kAccount);
  c.account_number = std::to_string(7'000'000'000 + r);
  c.amount = Kobo(5'000);
  c.destination = WalletId(kA);
  c.expires_at = Timestamp{Forge::kTime + 60'000};
  c.id = id + 5;
  c.name = "C" + n;
  c.wallet = WalletId("vba-collection-" + n);
  f.command({{c}});
  IncomingCreditReceived in = incoming({books.post(kInbound, -5'000), books.post(kA, 5'000)}, c.wallet.value);
  in.ids = {id + 6};
  in.transaction = TransactionId("trx-in-" + n);
  f.command({{in}});

  f.command({{beneficiary("bka-" + n, id + 7)}});
  f.command({{bulk("blk-" + n, "bulk-" + n)}});
}

// The model's entries at the end of `log`, which must be clean.
std::size_t model_entries(EventLog& log) {
  AuditReport report;
  auto scratch = ScratchIndex::open(fs::temp_directory_path(), AuditOptions{}.scratch_cache_bytes);
  EXPECT_TRUE(scratch.ok()) << scratch.status().message();
  LogAuditor auditor(log.partitions(), report, *scratch.value());
  LogFollower follower(log, LogFollowerOptions{.require_canonical_form = true});
  EXPECT_TRUE(follower.open().ok());
  EXPECT_TRUE(follower.follow_to_end(auditor).ok());
  EXPECT_TRUE(auditor.finish().ok());
  EXPECT_TRUE(report.clean()) << summary(report, 10);
  return auditor.entries();
}

std::size_t entries_after(std::uint64_t rounds) {
  MemoryLog log(1);
  Forge f(log);
  opening(f);
  Books books;
  for (std::uint64_t r = 1; r <= rounds; ++r) round(f, books, r);
  return model_entries(log);
}

TEST(AuditMemory, TheModelHoldsTheSameEntriesAfterTenTimesTheHistory) {
  const std::size_t few = entries_after(20);
  const std::size_t many = entries_after(200);
  // A business, its account, wallets A, B and T, and the system accounts the rounds move.
  EXPECT_GT(few, 0U);
  EXPECT_EQ(many, few) << "the model grows with history: " << few << " entries after 20 rounds, " << many
                       << " after 200";
}

// ---- what left memory is found on disk ----------------------------------------------------------

bool has_violation(const AuditReport& r, Check check, std::uint64_t seq, std::string_view says) {
  for (const Violation& v : r.violations)
    if (v.check == check && v.seq && v.seq->value == seq && v.reason.find(says) != std::string::npos)
      return true;
  return false;
}

// Every first use is made, then enough transfers that the scratch index writes its claims to the
// database at least once, then every first use is made again: each is found, and described.
TEST(AuditMemory, AReuseIsFoundOnceItsFirstUseIsInTheDatabase) {
  MemoryLog log(1);
  Forge f(log);
  opening(f);  // seqs 1..7
  Books books;
  round(f, books, 1);  // from seq 8: trx-a1 (reference ab-1) at 8, hold hld-1 (reference h-1) at 10
  f.command(
      {{incoming({books.post(kInbound, -5'000), books.post(kA, 5'000)}, kC)}});  // C (of opening()) paid
  // A transfer claims six names (two ids, two integer ids, two references).
  const std::uint64_t fillers = ScratchIndex::kClaimsBatchMax / 6 + 1'000;
  for (std::uint64_t i = 0; i < fillers; ++i) {
    const std::string n = std::to_string(i);
    const bool ab = i % 2 == 0;
    f.command({{wallet_transfer("trx-f" + n, {1'000'000 + 2 * i, 1'000'001 + 2 * i},
                                books.post(ab ? kA : kB, -1), books.post(ab ? kB : kA, 1), "f-" + n)}});
  }
  struct Expected {
    Check check;
    std::uint64_t seq;
    std::string says;
  };
  std::vector<Expected> expected;
  const auto again = [&](EventData d, Check check, std::string says) {
    expected.push_back({check, f.command({Forge::Draft(std::move(d))}), std::move(says)});
  };
  again(wallet_transfer("trx-a1", {5'000'000, 5'000'001}, books.post(kA, -1), books.post(kB, 1), "again-1"),
        Check::record, "transaction trx-a1 is created again");
  again(wallet_transfer("trx-again-2", {10'010, 5'000'003}, books.post(kA, -1), books.post(kB, 1), "again-2"),
        Check::record, "id 10010 is taken or zero");
  again(wallet_transfer("trx-again-3", {5'000'004, 5'000'005}, books.post(kA, -1), books.post(kB, 1), "ab-1"),
        Check::reference, "reference 'ab-1' of trx-again-3 was used before, at seq 8");
  again(wallet("vba-again-4", 5'000'006, "7000000001", "again-4"), Check::record,
        "account number 7000000001 is already taken");
  again(wallet("vba-again-5", 2, "0000000099", "again-5"), Check::record, "id 2 is already taken");
  again(hold("hld-again-6", "h-1"), Check::reference, "reference 'h-1' was used by a hold before, at seq 10");
  again(HoldVoided{HoldId("hld-1")}, Check::hold, "HoldVoided of hold hld-1, which has ended");
  again(hold("hld-1", "h-again-8"), Check::record, "hold hld-1 is placed again");
  again(PayoutProcessing{TransactionId("trx-pay-1")}, Check::status,
        "the status of trx-pay-1 moves from success to processing");
  again(CollectionWalletExpired{WalletId("vba-collection-1")}, Check::status, "which is paid or expired");
  again(CollectionWalletExpired{WalletId(kC)}, Check::status, "which is paid or expired");
  again(wallet(kC, 5'000'007, "0000000098", "again-12"), Check::record, "opened again");
  again(beneficiary("bka-1", 5'000'008), Check::record, "bank account bka-1: saved again");
  again(beneficiary("bka-again-14", 10'017), Check::record, "id 10017 is already taken");
  again(bulk("blk-again-15", "bulk-1"), Check::reference, "bulk transfer reference 'bulk-1' was used before");

  const auto r = audit_log(log);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const Expected& e : expected)
    EXPECT_TRUE(has_violation(r.value(), e.check, e.seq, e.says)) << "seq " << e.seq << ": " << e.says << "\n"
                                                                  << summary(r.value(), 30);
  // Nothing else: the history before the reuses is clean (a transaction created again brings
  // its derived credit and reference again too).
  for (const Violation& v : r.value().violations)
    EXPECT_TRUE(v.seq && v.seq->value >= expected.front().seq) << v.reason;
}

// ---- the scratch index --------------------------------------------------------------------------

TEST(ScratchIndex, AReuseIsEveryClaimOfANameAfterItsFirstAcrossBatches) {
  testing::ScratchDir dir;
  auto index = ScratchIndex::open(dir.path(), AuditOptions{}.scratch_cache_bytes);
  ASSERT_TRUE(index.ok()) << index.status().message();
  ScratchIndex& x = *index.value();
  const ScratchKey r1 = ScratchKey::digest('R', Partition(0), "acc|test|", "r1");
  x.claim(r1, Seq(8), 0);
  x.claim(r1, Seq(8), 1);  // twice in one event
  // The same name in another partition, or of another kind, is another name.
  x.claim(ScratchKey::digest('R', Partition(1), "acc|test|", "r1"), Seq(3), 0);
  x.claim(ScratchKey::digest('O', Partition(0), "acc|test|", "r1"), Seq(4), 0);
  // More claims than a batch holds: the first ones are in the database, the last in the batch.
  for (std::uint64_t n = 1; n <= ScratchIndex::kClaimsBatchMax; ++n)
    x.claim(ScratchKey::number('I', Partition(0), n), Seq(100 + n), 0);
  EXPECT_LT(x.claims_pending(), ScratchIndex::kClaimsBatchMax);
  x.claim(ScratchKey::number('I', Partition(0), 17), Seq(900'000), 2);
  x.claim(r1, Seq(900'001), 0);
  x.claim(ScratchKey::number('I', Partition(0), ScratchIndex::kClaimsBatchMax + 1), Seq(900'002), 0);
  std::vector<Reuse> found;
  ASSERT_TRUE(x.reuses([&](const Reuse& r) { found.push_back(r); }).ok());
  ASSERT_EQ(found.size(), 3U);
  const auto has = [&](char tag, std::uint64_t seq, std::uint16_t ordinal, std::uint64_t first) {
    for (const Reuse& r : found)
      if (r.tag == tag && r.partition == Partition(0) && r.seq == Seq(seq) && r.ordinal == ordinal &&
          r.first == Seq(first))
        return true;
    return false;
  };
  EXPECT_TRUE(has('R', 8, 1, 8));
  EXPECT_TRUE(has('R', 900'001, 0, 8));
  EXPECT_TRUE(has('I', 900'000, 2, 117));
}

TEST(ScratchIndex, FindsTheRecordsItWasGiven) {
  testing::ScratchDir dir;
  auto index = ScratchIndex::open(dir.path(), AuditOptions{}.scratch_cache_bytes);
  ASSERT_TRUE(index.ok()) << index.status().message();
  ScratchIndex& x = *index.value();
  const ScratchKey hold = ScratchKey::digest('H', Partition(0), "hld-1");
  EXPECT_EQ(x.find(hold), std::nullopt);
  x.put(hold, "tbiz-1");
  EXPECT_EQ(x.find(hold), "tbiz-1");
  x.put(hold, "lbiz-1");
  EXPECT_EQ(x.find(hold), "lbiz-1");
  EXPECT_EQ(x.find(ScratchKey::digest('H', Partition(1), "hld-1")), std::nullopt);
  EXPECT_TRUE(x.status().ok());
}

TEST(ScratchIndex, RemovesItsDirectoryAndTheOnesKilledAuditsLeft) {
  testing::ScratchDir dir;
  // A directory an audit left when it was killed (no process has pid 0x7ffffffe), and one of a
  // live process (this one's), and what is no audit's.
  const fs::path left = dir.path() / "kobo-audit-2147483646-abcdef";
  const fs::path live = dir.path() / ("kobo-audit-" + std::to_string(::getpid()) + "-abcdef");
  const fs::path other = dir.path() / "kobo-audit-test-12";
  for (const fs::path& p : {left, live, other}) fs::create_directories(p / "index");
  fs::path made;
  {
    auto index = ScratchIndex::open(dir.path(), AuditOptions{}.scratch_cache_bytes);
    ASSERT_TRUE(index.ok()) << index.status().message();
    made = index.value()->dir();
    EXPECT_TRUE(fs::is_directory(made));
    EXPECT_EQ(made.parent_path(), dir.path());
  }
  EXPECT_FALSE(fs::exists(made));
  EXPECT_FALSE(fs::exists(left));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other));
}

TEST(ScratchIndex, AnAuditMakesItsScratchUnderTheDirectoryItIsGivenAndRemovesIt) {
  testing::ScratchDir dir;
  MemoryLog log(1);
  Forge f(log);
  opening(f);
  AuditOptions options;
  options.scratch_dir = dir.path();
  const auto r = audit_log(log, options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r.value().clean()) << summary(r.value());
  EXPECT_TRUE(fs::is_empty(dir.path()));
  options.scratch_dir = dir.path() / "absent";
  EXPECT_FALSE(audit_log(log, options).ok());
}

}  // namespace
}  // namespace kobo::audit
