// The decision rules of command/ as tables, one row per rejection in order of precedence, and
// the ledger facts each command produces (event contract v2).
#include "command/decide.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>

#include "command/nuban.h"
#include "events/ledger.h"
#include "tests/decide_harness.h"

namespace kobo {
namespace {

using testing::bank_transfer;
using testing::kConfig;
using testing::kNow;
using testing::Partition0;
using testing::postings_sum;
using testing::transfer;

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

const Caller kAlice{"biz-a", "acc-a", false};
const Caller kAliceLive{"biz-a", "acc-a", true};
const Caller kBob{"biz-b", "acc-b", false};

std::string sys(SystemAccount a) { return std::string(account_name(a)); }

template <typename T>
const T& only_event(const Decision& d) {
  EXPECT_EQ(d.events.size(), 1u);
  const T* x = std::get_if<T>(&d.events.at(0).data);
  KOBO_ASSERT(x != nullptr, "the event of the expected type");
  return *x;
}

TEST(WalletTransfer, RejectionsInOrderOfPrecedence) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1"), a2 = p.wallet(kAlice, "a2");
  const std::string b1 = p.wallet(kBob, "b1");
  const std::string live1 = p.wallet(kAliceLive, "live1");
  p.fund(kAlice, a1, 50'000);
  ASSERT_EQ(p.run(transfer(kAlice, a1, a2, 10'000, "used")).rejection, Rejection::none);
  std::string a1_upper = a1, a2_upper = a2;  // wallets are held by packed ids: only the exact id finds one
  for (std::string* id : {&a1_upper, &a2_upper})
    std::ranges::transform(*id, id->begin(),
                           [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });

  struct Row {
    const char* why;
    WalletTransfer command;
    Rejection expected;
  };
  const std::vector<Row> rows{
      {"a negative amount, which no HTTP request can send but no caller may abort the writer with",
       transfer(kAlice, a1, a2, -10'000, "used"), Rejection::out_of_range},
      {"the most negative amount, whose negation overflows",
       transfer(kAlice, a1, a2, std::numeric_limits<std::int64_t>::min()), Rejection::out_of_range},
      {"a zero amount", transfer(kAlice, a1, a2, 0), Rejection::out_of_range},
      {"a used reference with another body", transfer(kAlice, a1, a2, 10'000, "used", "other narration"),
       Rejection::duplicate_reference},
      {"a used reference with another source", transfer(kAlice, "vba-nope", a2, 10'000, "used"),
       Rejection::duplicate_reference},
      {"unknown source", transfer(kAlice, "vba-nope", "vba-nope2", 10'000), Rejection::source_not_found},
      {"another business's source", transfer(kAlice, b1, a2, 10'000), Rejection::source_not_found},
      {"a source of the other mode", transfer(kAlice, live1, a2, 10'000), Rejection::source_not_found},
      {"a source's id in upper case", transfer(kAlice, a1_upper, a2, 10'000), Rejection::source_not_found},
      {"unknown destination", transfer(kAlice, a1, "vba-nope", 10'000), Rejection::destination_not_found},
      {"another business's destination", transfer(kAlice, a1, b1, 10'000), Rejection::destination_not_found},
      {"a destination's id in upper case", transfer(kAlice, a1, a2_upper, 10'000),
       Rejection::destination_not_found},
      {"same wallet", transfer(kAlice, a1, a1, 10'000), Rejection::same_source_and_destination},
      {"more than the balance", transfer(kAlice, a1, a2, 40'001), Rejection::insufficient_funds},
      {"the largest amount", transfer(kAlice, a1, a2, kMax), Rejection::insufficient_funds},
      {"exactly the balance", transfer(kAlice, a1, a2, 40'000), Rejection::none},
  };
  for (const Row& row : rows) {
    const Decision d = p.decide(row.command);
    EXPECT_EQ(d.rejection, row.expected) << row.why;
    if (row.expected != Rejection::none) {
      EXPECT_TRUE(d.events.empty()) << row.why << ": a rejection writes nothing";
      EXPECT_TRUE(d.schedule.empty()) << row.why;
    }
  }
}

TEST(WalletTransfer, SameReferenceAndBodyReplaysTheOriginalEvenWhenNowUnaffordable) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1"), a2 = p.wallet(kAlice, "a2");
  p.fund(kAlice, a1, 10'000);
  const Decision first = p.run(transfer(kAlice, a1, a2, 10'000, "ref-1"));
  ASSERT_EQ(first.rejection, Rejection::none);
  const Decision again = p.run(transfer(kAlice, a1, a2, 10'000, "ref-1"));
  EXPECT_TRUE(again.replayed);
  EXPECT_TRUE(again.events.empty());
  EXPECT_EQ(again.id, first.id);
  EXPECT_EQ(p.balance(a1), Kobo(0));
}

TEST(WalletTransfer, ReferencesAreScopedToAccountAndMode) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1"), a2 = p.wallet(kAlice, "a2");
  const std::string b1 = p.wallet(kBob, "b1"), b2 = p.wallet(kBob, "b2");
  p.fund(kAlice, a1, 20'000);
  p.fund(kBob, b1, 20'000);
  EXPECT_EQ(p.run(transfer(kAlice, a1, a2, 10'000, "shared")).rejection, Rejection::none);
  const Decision bob = p.run(transfer(kBob, b1, b2, 10'000, "shared", "another body"));
  EXPECT_EQ(bob.rejection, Rejection::none);
  EXPECT_FALSE(bob.replayed);
}

TEST(WalletTransfer, IsOneSettledEventWithBothPostings) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1"), a2 = p.wallet(kAlice, "a2");
  p.fund(kAlice, a1, 25'000);
  const std::uint64_t before = p.state().transactions_created;
  const Decision d = p.run(transfer(kAlice, a1, a2, 10'000, "r"));
  const auto& x = only_event<WalletTransferSettled>(d);
  EXPECT_EQ(d.id, x.transaction.value);
  EXPECT_TRUE(d.id.starts_with("trx-"));
  EXPECT_TRUE(d.schedule.empty()) << "a wallet transfer settles as it is appended";
  EXPECT_EQ(x.reference, "r");
  EXPECT_EQ(x.account, AccountId("acc-a"));
  EXPECT_EQ(x.postings,
            (std::vector<Posting>{{a1, Kobo(-10'000), Kobo(15'000)}, {a2, Kobo(10'000), Kobo(10'000)}}));
  EXPECT_EQ(postings_sum(d.events[0].data), Kobo(0));
  EXPECT_EQ(x.ids,
            (std::vector<std::uint64_t>{interleaved_id(before, Partition(0), kConfig.partitions),
                                        interleaved_id(before + 1, Partition(0), kConfig.partitions)}));
  EXPECT_EQ(p.balance(a1), Kobo(15'000));
  EXPECT_EQ(p.balance(a2), Kobo(10'000));
  EXPECT_EQ(p.state().total, Kobo(0)) << "double entry: the partition sums to zero";
  EXPECT_EQ(p.state().transactions_created, before + 2);
  const auto created = transactions_created(d.events[0].data);
  ASSERT_EQ(created.size(), 2u);
  EXPECT_EQ(created[0].kind, TransactionKind::wallet_transfer_debit);
  EXPECT_EQ(created[1].kind, TransactionKind::wallet_transfer_credit);
  EXPECT_EQ(created[0].id.value, d.id);
}

// docs/events.md, "Time-ordered transaction ids": a uuid v7 whose first 48 bits are the decision's
// time, the rest drawn; two transactions decided in one millisecond differ.
TEST(WalletTransfer, ItsIdIsAUuidV7OfTheDecisionsTime) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1"), a2 = p.wallet(kAlice, "a2");
  p.fund(kAlice, a1, 25'000);
  const TransactionId first =
      only_event<WalletTransferSettled>(p.run(transfer(kAlice, a1, a2, 1'000))).transaction;
  const TransactionId second =
      only_event<WalletTransferSettled>(p.run(transfer(kAlice, a1, a2, 1'000))).transaction;
  char time[13];
  std::snprintf(time, sizeof time, "%012llx", static_cast<unsigned long long>(kNow));
  for (const auto* id : {&first, &second}) {
    ASSERT_EQ(id->value.size(), 4u + 36u) << id->value;
    EXPECT_EQ(id->value.substr(4, 8) + id->value.substr(13, 4), time) << id->value;
    EXPECT_EQ(id->value[4 + 14], '7') << id->value;
  }
  EXPECT_NE(first, second);
}

TEST(WalletTransfer, WithoutAReferenceGetsOneDerivedFromItsTransaction) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1"), a2 = p.wallet(kAlice, "a2");
  p.fund(kAlice, a1, 25'000);
  const Decision d = p.run(transfer(kAlice, a1, a2, 10'000));
  const auto& x = only_event<WalletTransferSettled>(d);
  EXPECT_EQ(x.reference, derived_reference("ref-", x.transaction));
}

// The budget of event contract v2 (docs/architecture.md section 4): a settled wallet transfer adds at most
// 800 bytes to the log, with a reference and narration of ordinary length and a name enquiry reference.
TEST(WalletTransfer, IsAtMost800BytesOnTheWire) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1"), a2 = p.wallet(kAlice, "a2");
  p.fund(kAlice, a1, 1'000'000'000'000);
  WalletTransfer t =
      transfer(kAlice, a1, a2, 123'456'789, "inv-2026-11-000012345", "Payment for invoice 000012345.");
  t.name_enquiry_ref = "NE-0123456789";
  const Decision d = p.run(t);
  ASSERT_EQ(d.rejection, Rejection::none);
  ASSERT_EQ(p.sealed().size(), 1u);
  EXPECT_LE(p.last_wire().size(), 800u) << p.last_wire();
}

TEST(CreateWallet, RejectionsInOrderOfPrecedence) {
  Partition0 p;
  for (int i = 0; i < 5; ++i) p.wallet(kAlice, "p" + std::to_string(i));
  p.wallet(kAlice, "s0", "secondary");
  struct Row {
    const char* why;
    CreateWallet command;
    Rejection expected;
  };
  const std::vector<Row> rows{
      {"a category the API does not have", {kAlice, "x", "tertiary", {}, {}}, Rejection::out_of_range},
      {"a name already used beats the limit",
       {kAlice, "p0", "primary", {}, {}},
       Rejection::wallet_name_taken},
      {"a secondary's name is taken too", {kAlice, "s0", "secondary", {}, {}}, Rejection::wallet_name_taken},
      {"a sixth primary", {kAlice, "p5", "primary", {}, {}}, Rejection::primary_wallet_limit},
      {"secondaries have no limit", {kAlice, "s1", "secondary", {}, {}}, Rejection::none},
      {"the limit is per mode", {kAliceLive, "p5", "primary", {}, {}}, Rejection::none},
      {"names are per account and mode", {kBob, "p0", "primary", {}, {}}, Rejection::none},
  };
  for (const Row& row : rows) EXPECT_EQ(p.decide(row.command).rejection, row.expected) << row.why;
}

TEST(CreateWallet, OpensAWalletWithTheServicesBankAndADistinctValidNubanNumber) {
  Partition0 p;
  std::set<std::string> numbers;
  for (int i = 0; i < 50; ++i) {
    const Decision d = p.run(
        CreateWallet{kAlice, "w" + std::to_string(i), "secondary", "a@b.c", Mobile{"NG", "+2348000000000"}});
    const auto& x = only_event<WalletOpened>(d);
    EXPECT_EQ(d.id, x.wallet.value);
    EXPECT_TRUE(d.id.starts_with("vba-"));
    EXPECT_EQ(x.bank_name, kConfig.bank_name);
    EXPECT_EQ(x.bank_code, kConfig.bank_code);
    EXPECT_EQ(x.category, WalletCategory::secondary);
    EXPECT_EQ(x.id, interleaved_id(static_cast<std::uint64_t>(i), Partition(0), kConfig.partitions));
    EXPECT_EQ(x.mobile, (Mobile{"NG", "+2348000000000"}));
    EXPECT_TRUE(nuban::is_valid(kConfig.nuban_code, x.account_number)) << x.account_number;
    EXPECT_TRUE(numbers.insert(x.account_number).second) << x.account_number;
  }
}

TEST(CreateBusiness, RegistersTheBusinessWithItsAccountOnce) {
  Partition0 p;
  const CreateBusiness c{"biz-n", "N", "acc-n", "Default", "th", "lh", "pk_t", "pk_l"};
  const Decision d = p.run(c);
  const auto& x = only_event<BusinessRegistered>(d);
  EXPECT_EQ(d.id, "acc-n");
  EXPECT_EQ(x.id, interleaved_id(0, Partition(0), kConfig.partitions));
  EXPECT_EQ(d.events[0].business, "biz-n");
  EXPECT_EQ(p.decide(c).rejection, Rejection::business_exists);
  EXPECT_EQ(p.decide(UpdateAccount{{"biz-other", "acc-n", false}, "acc-n", {}, true, {}}).rejection,
            Rejection::account_not_found);
  const Decision u = p.run(UpdateAccount{{"biz-n", "acc-n", false},
                                         "acc-n",
                                         std::vector<std::string>{"https://h"},
                                         {},
                                         std::vector<std::string>{"account.debit"}});
  EXPECT_EQ(u.id, "acc-n");
  EXPECT_EQ(only_event<WebhooksConfigured>(u).webhooks, std::vector<std::string>{"https://h"});
  EXPECT_EQ(only_event<WebhooksConfigured>(u).webhook_events, std::vector<std::string>{"account.debit"});
}

// Webhook settings are of the caller's mode (WebhooksConfigured in it); the live flag is not of a
// mode (an AccountUpdated in test mode); a request of both is one command of two events.
TEST(UpdateAccount, WebhooksAreOfTheCallersModeAndTheLiveFlagOfNone) {
  Partition0 p;
  p.run(CreateBusiness{"biz-n", "N", "acc-n", "Default", "th", "lh", "pk_t", "pk_l"});
  const Caller live{"biz-n", "acc-n", true, "key-0123456789abcdef"};
  const Decision hooks = p.run(UpdateAccount{live, "acc-n", std::vector<std::string>{"https://l"}, {}, {}});
  EXPECT_TRUE(only_event<WebhooksConfigured>(hooks).webhooks.has_value());
  EXPECT_TRUE(hooks.events[0].live) << "the live key's webhooks are the live mode's";
  const Decision on = p.run(UpdateAccount{{"biz-n", "", false, "admin"}, "acc-n", {}, true, {}});
  EXPECT_EQ(only_event<AccountUpdated>(on).live, true);
  EXPECT_FALSE(on.events[0].live);
  const Decision both = p.run(UpdateAccount{live, "acc-n", std::vector<std::string>{}, false, {}});
  ASSERT_EQ(both.events.size(), 2u);
  EXPECT_TRUE(std::holds_alternative<WebhooksConfigured>(both.events[0].data));
  EXPECT_TRUE(std::holds_alternative<AccountUpdated>(both.events[1].data));
  EXPECT_EQ(p.sealed().at(1).command_size, 2u);
}

TEST(RollSecretKey, RejectionsInOrderOfPrecedenceThenOneEventInTheCallersMode) {
  Partition0 p;
  p.run(CreateBusiness{"biz-n", "N", "acc-n", "Default", "th", "lh", "pk_t", "pk_l"});
  const Caller live{"biz-n", "acc-n", true, "key-0123456789abcdef"};
  const std::string hash(64, 'a');
  EXPECT_EQ(p.decide(RollSecretKey{{"biz-o", "acc-o", true}, "acc-n", hash, "kw1.x", 0}).rejection,
            Rejection::account_not_found);
  EXPECT_EQ(p.decide(RollSecretKey{live, "acc-n", hash, "kw1.x", kKeyOverlapSecondsMax + 1}).rejection,
            Rejection::out_of_range);
  EXPECT_EQ(p.decide(RollSecretKey{live, "acc-n", hash, "kw1.x", -1}).rejection, Rejection::out_of_range);
  const Decision d = p.run(RollSecretKey{live, "acc-n", hash, "kw1.x", kKeyOverlapSecondsMax});
  const auto& x = only_event<SecretKeyRolled>(d);
  EXPECT_EQ(x.previous_key_expires_at.ms, kNow + kKeyOverlapSecondsMax * 1000);
  EXPECT_EQ(x.secret_key_hash, hash);
  EXPECT_EQ(x.signing_key, "kw1.x");
  EXPECT_TRUE(d.events[0].live);
  EXPECT_EQ(p.run(RevokeSecretKey{{"biz-o", "acc-o", true}, "acc-n", "key-1"}).rejection,
            Rejection::account_not_found);
  EXPECT_EQ(only_event<SecretKeyRevoked>(p.run(RevokeSecretKey{live, "acc-n", "key-1"})).key_id, "key-1");
}

TEST(SuspendBusiness, IsAnEventOfAKnownBusinessInTestMode) {
  Partition0 p;
  p.run(CreateBusiness{"biz-n", "N", "acc-n", "Default", "th", "lh", "pk_t", "pk_l"});
  EXPECT_EQ(p.decide(SuspendBusiness{{"biz-missing", "", false, "admin"}, true, {}}).rejection,
            Rejection::account_not_found);
  const Decision s = p.run(SuspendBusiness{{"biz-n", "", true, "admin"}, true, std::string("fraud")});
  EXPECT_EQ(only_event<BusinessSuspended>(s).reason, "fraud");
  EXPECT_FALSE(s.events[0].live) << "a suspension is of no mode";
  only_event<BusinessResumed>(p.run(SuspendBusiness{{"biz-n", "", false, "admin"}, false, {}}));
}

TEST(SetRateLimits, IsAnEventOfAKnownBusinessInTestMode) {
  Partition0 p;
  p.run(CreateBusiness{"biz-n", "N", "acc-n", "Default", "th", "lh", "pk_t", "pk_l"});
  EXPECT_EQ(p.decide(SetRateLimits{{"biz-missing", "", false, "admin"}, 5, 1}).rejection,
            Rejection::account_not_found);
  const Decision d = p.run(SetRateLimits{{"biz-n", "", true, "admin"}, 5, std::nullopt});
  const auto& x = only_event<BusinessRateLimitsSet>(d);
  EXPECT_EQ(x.reads_per_second, 5u);
  EXPECT_EQ(x.writes_per_second, std::nullopt) << "absent: the deployment's";
  EXPECT_FALSE(d.events[0].live) << "a business's limits are of no mode";
  EXPECT_EQ(d.events[0].business, "biz-n");
}

// Sandbox switches act in test mode only: the sandbox rail moves test payouts, and a live
// payout's sandboxOutcome is not read.
TEST(BankTransfer, TheSandboxRailMovesTestPayoutsOnly) {
  Partition0 p;
  const std::string t = p.wallet(kAlice, "t"), l = p.wallet(kAliceLive, "l");
  p.fund(kAlice, t, 100'000);
  p.fund(kAliceLive, l, 100'000);
  const std::string failed = R"({"sandboxOutcome":"failed"})";
  const Decision test = p.run(bank_transfer(kAlice, t, 10'000, std::nullopt, false, failed));
  EXPECT_EQ(test.schedule.size(), 1u);
  EXPECT_TRUE(p.state().payouts.at(test.id).sandbox_fails);
  const Decision live = p.run(bank_transfer(kAliceLive, l, 10'000, std::nullopt, false, failed));
  EXPECT_TRUE(live.schedule.empty()) << "no sandbox rail step for a live payout";
  EXPECT_FALSE(p.state().payouts.at(live.id).sandbox_fails);
  const auto resumed = resume_schedule(p.state(), p.config());
  ASSERT_EQ(resumed.size(), 1u);
  EXPECT_EQ(std::get<AdvancePayout>(resumed[0].command).transaction, test.id);
}

// Ids whose first draws are given: the rest from a seeded source.
class ScriptedIds final : public IdSource {
 public:
  explicit ScriptedIds(std::vector<std::uint64_t> first) : first_(std::move(first)) {}
  void fill(std::uint8_t* out, std::size_t n) override {
    if (!first_.empty() && n == sizeof(std::uint64_t)) {
      std::memcpy(out, &first_.front(), n);
      first_.erase(first_.begin());
      return;
    }
    rest_.fill(out, n);
  }

 private:
  std::vector<std::uint64_t> first_;
  SeededIds rest_{7};
};

// Account numbers (docs/security.md, "No harvesting"): a random serial within NUBAN's format,
// of the partition's residue so that no two partitions draw alike, drawn again when taken.
TEST(CreateWallet, AccountNumbersAreRandomSerialsOfThePartitionDrawnAgainWhenTaken) {
  Partition0 p;
  std::vector<std::uint64_t> serials;
  std::vector<std::string> numbers;
  for (int i = 0; i < 30; ++i) {
    const std::string number = p.number(p.wallet(kAlice, "w" + std::to_string(i), "secondary"));
    numbers.push_back(number);
    ASSERT_TRUE(nuban::is_valid(kConfig.nuban_code, number)) << number;
    serials.push_back(std::stoull(number.substr(0, 9)));
    EXPECT_EQ(serials.back() % kConfig.partitions, 1u) << "partition 0's serials are n * partitions + 1";
  }
  std::set<std::uint64_t> steps;
  for (std::size_t i = 1; i < serials.size(); ++i) steps.insert(serials[i] - serials[i - 1]);
  EXPECT_GE(steps.size(), 25u) << "the serials are in arithmetic progression";
  // The same seed draws the same numbers: a seeded run replays byte for byte.
  Partition0 again;
  EXPECT_EQ(again.number(again.wallet(kAlice, "w0", "secondary")), numbers.front());
  // A draw that is taken is drawn again.
  Partition0 q;
  ScriptedIds first({42, 42, 43});
  const Decision a = q.decide_with(CreateWallet{kAlice, "a", "secondary", std::nullopt, std::nullopt}, first);
  q.place(a, kNow);
  const Decision b = q.decide_with(CreateWallet{kAlice, "b", "secondary", std::nullopt, std::nullopt}, first);
  q.place(b, kNow);
  const auto number_of = [](const Decision& d) {
    return std::get<WalletOpened>(d.events.at(0).data).account_number;
  };
  EXPECT_EQ(number_of(a), nuban::account_number(kConfig.nuban_code, 42 * kConfig.partitions + 1));
  EXPECT_EQ(number_of(b), nuban::account_number(kConfig.nuban_code, 43 * kConfig.partitions + 1));
}

// A webhook secret's rotation is a fact of the caller's mode, of an account of its business.
TEST(RotateWebhookSecret, IsOneEventInTheCallersModeForAnAccountOfItsBusiness) {
  Partition0 p;
  p.run(CreateBusiness{"biz-n", "N", "acc-n", "Default", "th", "lh", "pk_t", "pk_l"});
  EXPECT_EQ(p.decide(RotateWebhookSecret{{"biz-other", "acc-o", true}, "acc-n"}).rejection,
            Rejection::account_not_found);
  EXPECT_EQ(p.decide(RotateWebhookSecret{{"biz-n", "acc-n", true}, "acc-missing"}).rejection,
            Rejection::account_not_found);
  const Decision d = p.run(RotateWebhookSecret{{"biz-n", "acc-n", true}, "acc-n"});
  EXPECT_EQ(d.id, "acc-n");
  EXPECT_EQ(only_event<WebhookSecretRotated>(d).account.value, "acc-n");
  EXPECT_EQ(d.events[0].business, "biz-n");
  EXPECT_TRUE(d.events[0].live) << "the secret is of the caller's mode";
}

TEST(AddBankAccount, SavesABeneficiaryOnceAndReplaysItAfter) {
  Partition0 p;
  const AddBankAccount c{kAlice, "bka-1", "Ada", "0123456784", "Access Bank", "044", "external"};
  const Decision d = p.run(c);
  EXPECT_EQ(d.id, "bka-1");
  EXPECT_EQ(only_event<BeneficiarySaved>(d).beneficiary_type, BeneficiaryType::external);
  const Decision again = p.run(c);
  EXPECT_TRUE(again.replayed);
  EXPECT_EQ(again.id, "bka-1");
  EXPECT_TRUE(again.events.empty());
  AddBankAccount odd = c;
  odd.public_id = "bka-2";
  odd.beneficiary_type = "cousin";
  EXPECT_EQ(p.decide(odd).rejection, Rejection::out_of_range);
}

TEST(IncomingCredit, RejectionsInOrderOfPrecedence) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1");
  const std::string b1 = p.wallet(kBob, "b1");
  auto credit = [](const Caller& c, std::string n, std::int64_t amount = 100) {
    return IncomingCredit{c, std::move(n), Kobo(amount), "x", "S", "0000014579", "058", "GTB", "000013"};
  };
  struct Row {
    const char* why;
    IncomingCredit command;
    Rejection expected;
  };
  const std::vector<Row> rows{
      {"a negative amount", credit(kAlice, p.number(a1), -5), Rejection::out_of_range},
      {"a zero amount", credit(kAlice, p.number(a1), 0), Rejection::out_of_range},
      {"an unknown number", credit(kAlice, "0000000000"), Rejection::account_not_found},
      {"another business's number", credit(kAlice, p.number(b1)), Rejection::account_not_found},
      {"a number of the other mode", credit(kAliceLive, p.number(a1)), Rejection::account_not_found},
      {"the caller's wallet", credit(kAlice, p.number(a1)), Rejection::none},
  };
  for (const Row& row : rows) EXPECT_EQ(p.decide(row.command).rejection, row.expected) << row.why;
}

TEST(IncomingCredit, IsOneEventDebitingInboundSettlement) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1");
  p.fund(kAlice, a1, 30'000);
  const Decision d = p.run(
      IncomingCredit{kAlice, p.number(a1), Kobo(40'000), "in", "S", "0000014579", "058", "GTB", "000013"});
  const auto& x = only_event<IncomingCreditReceived>(d);
  EXPECT_EQ(d.id, x.transaction.value);
  EXPECT_EQ(x.postings,
            (std::vector<Posting>{{sys(SystemAccount::inbound_settlement), Kobo(-40'000), Kobo(-70'000)},
                                  {a1, Kobo(40'000), Kobo(70'000)}}));
  EXPECT_EQ(x.ids.size(), 1u);
  EXPECT_FALSE(x.collection.has_value());
  EXPECT_EQ(x.sender.nibss_bank_code, "000013");
  EXPECT_EQ(p.balance(a1), Kobo(70'000));
  EXPECT_EQ(p.state().balance_of(SystemAccount::inbound_settlement), Kobo(-70'000));
  EXPECT_EQ(p.state().total, Kobo(0));
}

TEST(IncomingCredit, ToATransitWalletSweepsItToTheSettlementWalletInTheSameEvent) {
  Partition0 p;
  const std::string settle = p.wallet(kAlice, "settle");
  p.fund(kAlice, settle, 5'000);
  const Decision t = p.run(CreateTransitWallet{kAlice, "transit", settle, {}, {}});
  const std::string transit = only_event<TransitWalletOpened>(t).wallet.value;
  EXPECT_EQ(t.id, transit);
  EXPECT_EQ(p.decide(CreateTransitWallet{kAlice, "t2", transit, {}, {}}).rejection,
            Rejection::settlement_account_not_found)
      << "a transit wallet does not settle to a transit wallet";
  EXPECT_EQ(p.decide(CreateTransitWallet{kBob, "t3", settle, {}, {}}).rejection,
            Rejection::settlement_account_not_found)
      << "nor to another business's wallet";
  const std::uint64_t before = p.state().transactions_created;
  const Decision d = p.run(
      IncomingCredit{kAlice, p.number(transit), Kobo(700), "in", "S", "0000014579", "058", "GTB", "000013"});
  const auto& x = only_event<IncomingCreditReceived>(d);
  EXPECT_EQ(x.postings,
            (std::vector<Posting>{{sys(SystemAccount::inbound_settlement), Kobo(-700), Kobo(-5'700)},
                                  {transit, Kobo(700), Kobo(700)},
                                  {transit, Kobo(-700), Kobo(0)},
                                  {settle, Kobo(700), Kobo(5'700)}}));
  EXPECT_EQ(x.ids,
            (std::vector<std::uint64_t>{interleaved_id(before, Partition(0), kConfig.partitions),
                                        interleaved_id(before + 1, Partition(0), kConfig.partitions),
                                        interleaved_id(before + 2, Partition(0), kConfig.partitions)}));
  EXPECT_EQ(p.balance(transit), Kobo(0));
  EXPECT_EQ(p.balance(settle), Kobo(5'700));
  EXPECT_EQ(p.state().transactions_created, before + 3);
  EXPECT_EQ(p.state().total, Kobo(0));
}

TEST(Collection, IsPaidOnceWithItsAmountBeforeItExpires) {
  Partition0 p;
  const std::string dst = p.wallet(kAlice, "dst");
  const Decision c = p.run(CreateCollection{kAlice, dst, "Invoice", Kobo(2'500), 600, "col-1"});
  const auto& opened = only_event<CollectionWalletOpened>(c);
  const std::string collection = c.id, number = opened.account_number;
  EXPECT_EQ(collection, opened.wallet.value);
  EXPECT_EQ(opened.expires_at.ms, kNow + 600'000);
  ASSERT_EQ(c.schedule.size(), 1u);
  EXPECT_EQ(c.schedule[0].due, kNow + 600'000);
  EXPECT_EQ(p.decide(CreateCollection{kAlice, dst, "Again", Kobo(1), 600, "col-1"}).rejection,
            Rejection::reference_exists);
  EXPECT_EQ(p.decide(CreateCollection{kAlice, dst, "Neg", Kobo(-1), 600, {}}).rejection,
            Rejection::out_of_range);

  auto pay = [&](std::int64_t amount, const Caller& caller = kAlice) {
    return IncomingCredit{caller, number, Kobo(amount), "pay", "S", "0000014579", "058", "GTB", "000013"};
  };
  EXPECT_EQ(p.decide(pay(2'500, kBob)).rejection, Rejection::account_not_found);
  EXPECT_EQ(p.decide(pay(2'499)).rejection, Rejection::amount_mismatch);
  EXPECT_EQ(p.decide(pay(2'500), kNow + 600'000).rejection, Rejection::collection_inactive);
  const Decision paid = p.run(pay(2'500));
  const auto& x = only_event<IncomingCreditReceived>(paid);
  EXPECT_EQ(x.collection, WalletId(collection));
  EXPECT_EQ(x.postings.at(1).account, dst) << "a payment credits the collection wallet's destination";
  EXPECT_EQ(p.balance(dst), Kobo(2'500));
  EXPECT_EQ(p.decide(pay(2'500)).rejection, Rejection::collection_inactive);
  EXPECT_TRUE(p.run(ExpireCollection{Partition(0), collection}).events.empty())
      << "a paid collection does not expire";
}

TEST(Collection, ExpiresUnpaid) {
  Partition0 p;
  const std::string dst = p.wallet(kAlice, "dst");
  const Decision c = p.run(CreateCollection{kAlice, dst, "Invoice", Kobo(2'500), 60, {}});
  const Decision e = p.run(ExpireCollection{Partition(0), c.id}, kNow + 60'000);
  EXPECT_EQ(only_event<CollectionWalletExpired>(e).wallet, WalletId(c.id));
  EXPECT_EQ(p.decide(IncomingCredit{kAlice, only_event<CollectionWalletOpened>(c).account_number, Kobo(2'500),
                                    "x", "S", "0000014579", "058", "GTB", "000013"})
                .rejection,
            Rejection::collection_inactive);
}

TEST(BankTransfer, RejectionsInOrderOfPrecedence) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1");
  const std::string b1 = p.wallet(kBob, "b1");
  p.fund(kAlice, a1, 100'000);
  ASSERT_EQ(p.run(bank_transfer(kAlice, a1, 1'000, "used")).rejection, Rejection::none);
  const Kobo fee = transfer_fee(kConfig, Kobo(p.balance(a1).value));
  struct Row {
    const char* why;
    BankTransfer command;
    Rejection expected;
  };
  const std::vector<Row> rows{
      {"a negative amount", bank_transfer(kAlice, a1, -1), Rejection::out_of_range},
      {"a zero amount", bank_transfer(kAlice, a1, 0), Rejection::out_of_range},
      {"a used reference with another amount", bank_transfer(kAlice, a1, 1'001, "used"),
       Rejection::duplicate_reference},
      {"a used reference with other metadata", bank_transfer(kAlice, a1, 1'000, "used", false, R"({"a":1})"),
       Rejection::duplicate_reference},
      {"unknown source", bank_transfer(kAlice, "vba-nope", 1'000), Rejection::source_not_found},
      {"another business's source", bank_transfer(kAlice, b1, 1'000), Rejection::source_not_found},
      {"an amount whose fee overflows", bank_transfer(kAlice, a1, kMax), Rejection::out_of_range},
      {"more than the balance with the fee", bank_transfer(kAlice, a1, p.balance(a1).value - fee.value + 1),
       Rejection::insufficient_funds},
  };
  for (const Row& row : rows) {
    const Decision d = p.decide(row.command);
    EXPECT_EQ(d.rejection, row.expected) << row.why;
    EXPECT_TRUE(d.events.empty()) << row.why;
  }
  EXPECT_TRUE(p.decide(bank_transfer(kAlice, a1, 1'000, "used")).replayed);
}

TEST(BankTransfer, IsOneEventWithThreePostingsAndStartsThePayoutRail) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1");
  p.fund(kAlice, a1, 100'000);
  const Kobo fee = transfer_fee(kConfig, Kobo(40'000));
  const Decision d = p.run(bank_transfer(kAlice, a1, 40'000, "pay-1", false, R"({"order":7})"));
  const auto& x = only_event<BankTransferInitiated>(d);
  EXPECT_EQ(d.id, x.transaction.value);
  EXPECT_EQ(x.postings,
            (std::vector<Posting>{{a1, -(Kobo(40'000) + fee), Kobo(60'000) - fee},
                                  {sys(SystemAccount::payout_suspense), Kobo(40'000), Kobo(40'000)},
                                  {sys(SystemAccount::fees), fee, fee}}));
  EXPECT_EQ(postings_sum(d.events[0].data), Kobo(0));
  EXPECT_EQ(x.beneficiary.id, 0u) << "not saved";
  EXPECT_EQ(x.metadata.text, R"({"order":7})");
  EXPECT_FALSE(x.save_beneficiary.has_value());
  ASSERT_EQ(d.schedule.size(), 1u);
  const auto* step = std::get_if<AdvancePayout>(&d.schedule[0].command);
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->status, TransactionStatus::processing);
  EXPECT_EQ(step->transaction, d.id);
  const PayoutState& payout = p.state().payouts.at(d.id);
  EXPECT_EQ(payout.status, TransactionStatus::pending);
  EXPECT_EQ(payout.amount, Kobo(40'000));
  EXPECT_EQ(payout.fee, fee);
  EXPECT_EQ(payout.source, a1);
  EXPECT_FALSE(payout.sandbox_fails);
  EXPECT_EQ(p.state().total, Kobo(0));
}

TEST(BankTransfer, SavesAnUnknownBeneficiaryFirstWhenAsked) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1");
  p.fund(kAlice, a1, 100'000);
  const Decision d = p.run(bank_transfer(kAlice, a1, 1'000, {}, /*save=*/true));
  ASSERT_EQ(d.events.size(), 2u);
  const auto& saved = std::get<BeneficiarySaved>(d.events[0].data);
  const auto& x = std::get<BankTransferInitiated>(d.events[1].data);
  EXPECT_EQ(x.beneficiary.id, saved.id);
  EXPECT_EQ(x.beneficiary.bank_account, saved.bank_account);
  EXPECT_EQ(x.save_beneficiary, true);
  EXPECT_EQ(d.id, x.transaction.value);
  const Decision again = p.run(bank_transfer(kAlice, a1, 1'000, {}, /*save=*/true));
  ASSERT_EQ(again.events.size(), 1u) << "a known beneficiary is not saved again";
  EXPECT_EQ(std::get<BankTransferInitiated>(again.events[0].data).beneficiary.id, saved.id);
}

TEST(AdvancePayout, ProcessingThenSuccessMovesSuspenseToOutboundSettlement) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1");
  p.fund(kAlice, a1, 100'000);
  const Decision d = p.run(bank_transfer(kAlice, a1, 40'000));
  const Decision processing =
      p.run(AdvancePayout{Partition(0), d.id, TransactionStatus::processing}, kNow + 1);
  EXPECT_EQ(only_event<PayoutProcessing>(processing).transaction, TransactionId(d.id));
  ASSERT_EQ(processing.schedule.size(), 1u);
  EXPECT_EQ(processing.schedule[0].due, kNow + 1 + kConfig.rail_delay.count());
  EXPECT_EQ(std::get<AdvancePayout>(processing.schedule[0].command).status, TransactionStatus::success);
  EXPECT_EQ(p.state().payouts.at(d.id).status, TransactionStatus::processing);
  const Decision ok = p.run(AdvancePayout{Partition(0), d.id, TransactionStatus::success}, kNow + 2);
  EXPECT_EQ(only_event<PayoutSucceeded>(ok).postings,
            (std::vector<Posting>{{sys(SystemAccount::payout_suspense), Kobo(-40'000), Kobo(0)},
                                  {sys(SystemAccount::outbound_settlement), Kobo(40'000), Kobo(40'000)}}));
  EXPECT_FALSE(p.state().payouts.contains(d.id));
  EXPECT_EQ(p.state().total, Kobo(0));
}

TEST(AdvancePayout, FailureReversesTheAmountAndTheFee) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1");
  p.fund(kAlice, a1, 100'000);
  const Kobo fee = transfer_fee(kConfig, Kobo(40'000));
  const Decision d = p.run(bank_transfer(kAlice, a1, 40'000, {}, false, R"({"sandboxOutcome":"failed"})"));
  EXPECT_TRUE(p.state().payouts.at(d.id).sandbox_fails);
  const Decision processing = p.run(AdvancePayout{Partition(0), d.id, TransactionStatus::processing});
  EXPECT_EQ(std::get<AdvancePayout>(processing.schedule.at(0).command).status, TransactionStatus::failed);
  const std::uint64_t before = p.state().transactions_created;
  const Decision failed = p.run(AdvancePayout{Partition(0), d.id, TransactionStatus::failed});
  const auto& x = only_event<PayoutFailed>(failed);
  EXPECT_EQ(x.postings, (std::vector<Posting>{{sys(SystemAccount::payout_suspense), Kobo(-40'000), Kobo(0)},
                                              {sys(SystemAccount::fees), -fee, Kobo(0)},
                                              {a1, Kobo(40'000) + fee, Kobo(100'000)}}));
  EXPECT_EQ(x.ids, std::vector<std::uint64_t>{interleaved_id(before, Partition(0), kConfig.partitions)});
  EXPECT_EQ(p.balance(a1), Kobo(100'000));
  EXPECT_EQ(p.state().transactions_created, before + 1);
  EXPECT_FALSE(p.state().payouts.contains(d.id));
  EXPECT_TRUE(resume_schedule(p.state(), kConfig).empty());
}

TEST(ResumeSchedule, OwesTheRailStepsOfPayoutsInFlightAndTheExpiriesOfOpenCollections) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1");
  p.fund(kAlice, a1, 100'000);
  const Decision payout = p.run(bank_transfer(kAlice, a1, 1'000));
  const Decision col = p.run(CreateCollection{kAlice, a1, "c", Kobo(5), 60, {}});
  const Decision held = p.run(PlaceHold{kAlice, a1, Kobo(7), "h", std::nullopt, RawJson{}, 90});
  const Decision voided = p.run(PlaceHold{kAlice, a1, Kobo(7), "v", std::nullopt, RawJson{}, 30});
  ASSERT_EQ(p.run(VoidHold{kAlice, voided.id}).rejection, Rejection::none);
  const auto owed = resume_schedule(p.state(), kConfig);
  ASSERT_EQ(owed.size(), 3u) << "a voided hold owes no expiry";
  EXPECT_EQ(std::get<AdvancePayout>(owed[0].command).transaction, payout.id);
  EXPECT_EQ(std::get<ExpireCollection>(owed[1].command).collection, col.id);
  EXPECT_EQ(owed[1].due, kNow + 60'000);
  EXPECT_EQ(std::get<ExpireHold>(owed[2].command).hold, held.id);
  EXPECT_EQ(owed[2].due, kNow + 90'000);
}

// A writer started from a snapshot and one that replayed the whole log hold equal states whose
// hash maps were filled in different orders; their follow-ups must come in the same order.
TEST(ResumeSchedule, IsOrderedByWhatTheStateHoldsNotByItsHashMapsHistory) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1");
  p.fund(kAlice, a1, 1'000'000);
  for (int i = 0; i < 4; ++i) p.run(bank_transfer(kAlice, a1, 1'000 + i));
  for (int i = 0; i < 12; ++i) p.run(CreateCollection{kAlice, a1, "c", Kobo(5), 60, {}});  // all due at once
  const auto owed_ids = [](const std::vector<Scheduled>& owed) {
    std::vector<std::pair<UnixMs, std::string>> out;
    for (const Scheduled& s : owed) {
      if (const auto* a = std::get_if<AdvancePayout>(&s.command)) out.emplace_back(s.due, a->transaction);
      if (const auto* e = std::get_if<ExpireCollection>(&s.command)) out.emplace_back(s.due, e->collection);
    }
    return out;
  };
  const auto owed = owed_ids(resume_schedule(p.state(), kConfig));
  ASSERT_EQ(owed.size(), 16u);
  // Due time first; the payouts' first rail step (due now) before the collections' expiries,
  // and each kind by publicId.
  EXPECT_TRUE(std::is_sorted(owed.begin(), owed.begin() + 4));
  EXPECT_TRUE(std::is_sorted(owed.begin() + 4, owed.end()));
  EXPECT_LT(owed[3].first, owed[4].first);

  PartitionState refilled = p.state();
  refilled.collections.clear();
  refilled.payouts.clear();
  refilled.collections.reserve(1'000);
  for (auto it = p.state().collections.begin(); it != p.state().collections.end(); ++it)
    refilled.collections.insert(*it);
  std::vector<std::pair<std::string, PayoutState>> payouts(p.state().payouts.begin(),
                                                           p.state().payouts.end());
  for (auto it = payouts.rbegin(); it != payouts.rend(); ++it) refilled.payouts.insert(*it);
  EXPECT_EQ(owed_ids(resume_schedule(refilled, kConfig)), owed);
}

PlaceHold hold(const Caller& c, std::string src, std::int64_t amount, std::string ref,
               std::int64_t expires_in_s = 3'600) {
  PlaceHold h;
  h.caller = c;
  h.source = std::move(src);
  h.amount = Kobo(amount);
  h.reference = std::move(ref);
  h.expires_in_s = expires_in_s;
  return h;
}

CaptureHold capture(const Caller& c, std::string id, std::string dst, std::string ref,
                    std::optional<std::int64_t> amount = std::nullopt, bool final = false) {
  CaptureHold x;
  x.caller = c;
  x.hold = std::move(id);
  x.destination = std::move(dst);
  x.reference = std::move(ref);
  if (amount) x.amount = Kobo(*amount);
  x.final = final;
  return x;
}

TEST(Hold, PlacementRejectionsInOrderOfPrecedence) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1"), a2 = p.wallet(kAlice, "a2");
  const std::string b1 = p.wallet(kBob, "b1");
  p.fund(kAlice, a1, 50'000);
  ASSERT_EQ(p.run(hold(kAlice, a1, 20'000, "used")).rejection, Rejection::none);
  ASSERT_EQ(p.run(transfer(kAlice, a1, a2, 10'000)).rejection, Rejection::none);  // available: 20'000
  struct Row {
    const char* why;
    PlaceHold command;
    Rejection expected;
  };
  const std::vector<Row> rows{
      {"a zero amount", hold(kAlice, a1, 0, "x"), Rejection::out_of_range},
      {"an expiry of 0 s", hold(kAlice, a1, 1, "x", 0), Rejection::out_of_range},
      {"an expiry beyond 30 days", hold(kAlice, a1, 1, "x", 2'592'001), Rejection::out_of_range},
      {"a used hold reference with another body", hold(kAlice, a1, 20'001, "used"),
       Rejection::duplicate_reference},
      {"unknown source", hold(kAlice, "vba-nope", 1, "x"), Rejection::source_not_found},
      {"another business's source", hold(kAlice, b1, 1, "x"), Rejection::source_not_found},
      {"more than is available (the balance less what is held)", hold(kAlice, a1, 20'001, "x"),
       Rejection::insufficient_funds},
      {"exactly what is available", hold(kAlice, a1, 20'000, "x"), Rejection::none},
      {"1 kobo, below the transfer minimum", hold(kAlice, a1, 1, "y"), Rejection::none},
      {"a transfer reference is not a hold reference", hold(kAlice, a1, 1, "ref-of-a-transfer"),
       Rejection::none},
  };
  for (const Row& row : rows) {
    const Decision d = p.decide(row.command);
    EXPECT_EQ(d.rejection, row.expected) << row.why;
    if (row.expected != Rejection::none) {
      EXPECT_TRUE(d.events.empty() && d.schedule.empty()) << row.why;
    }
  }
  const Decision again = p.decide(hold(kAlice, a1, 20'000, "used"));
  EXPECT_TRUE(again.replayed) << "the same reference and body replays the hold";
  EXPECT_EQ(p.state().held_of(a1), Kobo(20'000));
  EXPECT_EQ(p.state().available_of(a1, *p.state().wallets.find(a1)), Kobo(20'000));
}

TEST(Hold, TransfersAndBankTransfersSpendOnlyWhatIsAvailable) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1"), a2 = p.wallet(kAlice, "a2");
  p.fund(kAlice, a1, 100'000);
  ASSERT_EQ(p.run(hold(kAlice, a1, 60'000, "h")).rejection, Rejection::none);
  EXPECT_EQ(p.decide(transfer(kAlice, a1, a2, 40'001)).rejection, Rejection::insufficient_funds);
  EXPECT_EQ(p.decide(transfer(kAlice, a1, a2, 40'000)).rejection, Rejection::none);
  EXPECT_EQ(p.decide(bank_transfer(kAlice, a1, 38'926)).rejection,
            Rejection::insufficient_funds);  // + 1'075 fee
  EXPECT_EQ(p.decide(bank_transfer(kAlice, a1, 38'925)).rejection, Rejection::none);
}

TEST(Hold, CaptureRejectionsInOrderOfPrecedence) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1"), a2 = p.wallet(kAlice, "a2");
  const std::string b1 = p.wallet(kBob, "b1");
  p.fund(kAlice, a1, 50'000);
  p.fund(kBob, b1, 50'000);
  const std::string h = p.run(hold(kAlice, a1, 30'000, "h")).id;
  const std::string ended = p.run(hold(kAlice, a1, 1'000, "ended")).id;
  const std::string bobs = p.run(hold(kBob, b1, 1'000, "bobs")).id;
  ASSERT_EQ(p.run(VoidHold{kAlice, ended}).rejection, Rejection::none);
  ASSERT_EQ(p.run(capture(kAlice, h, a2, "used", 1'000)).rejection, Rejection::none);
  struct Row {
    const char* why;
    CaptureHold command;
    Rejection expected;
  };
  const std::vector<Row> rows{
      {"a zero amount", capture(kAlice, h, a2, "x", 0), Rejection::out_of_range},
      {"a used reference with another body", capture(kAlice, h, a2, "used", 1'001),
       Rejection::duplicate_reference},
      {"an unknown hold", capture(kAlice, "hld-nope", a2, "x"), Rejection::hold_not_found},
      {"another business's hold", capture(kAlice, bobs, a2, "x"), Rejection::hold_not_found},
      {"a hold that has ended", capture(kAlice, ended, a2, "x"), Rejection::hold_not_pending},
      {"unknown destination", capture(kAlice, h, "vba-nope", "x"), Rejection::destination_not_found},
      {"the hold's own source", capture(kAlice, h, a1, "x"), Rejection::same_source_and_destination},
      {"more than remains", capture(kAlice, h, a2, "x", 29'001), Rejection::amount_exceeds_hold},
      {"all that remains", capture(kAlice, h, a2, "x", 29'000), Rejection::none},
  };
  for (const Row& row : rows) {
    const Decision d = p.decide(row.command);
    EXPECT_EQ(d.rejection, row.expected) << row.why;
    if (row.expected != Rejection::none) {
      EXPECT_TRUE(d.events.empty()) << row.why;
    }
  }
  EXPECT_EQ(p.decide(capture(kAlice, h, a2, "x"), kNow + 3'600'000).rejection, Rejection::hold_not_pending)
      << "at its expiresAt a hold is no longer pending, its expiry decided or not";
  EXPECT_TRUE(p.decide(capture(kAlice, h, a2, "used", 1'000)).replayed);
}

TEST(Hold, CaptureIsATransferThatConsumesTheHoldNotTheAvailableBalance) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1"), a2 = p.wallet(kAlice, "a2");
  p.fund(kAlice, a1, 50'000);
  const std::string h = p.run(hold(kAlice, a1, 50'000, "h")).id;
  EXPECT_EQ(p.state().available_of(a1, *p.state().wallets.find(a1)), Kobo(0));
  const Decision d = p.run(capture(kAlice, h, a2, "c1", 20'000));
  ASSERT_EQ(d.rejection, Rejection::none);
  EXPECT_EQ(d.id, h);
  const auto& x = only_event<HoldCaptured>(d);
  EXPECT_EQ(x.postings,
            (std::vector<Posting>{{a1, Kobo(-20'000), Kobo(30'000)}, {a2, Kobo(20'000), Kobo(20'000)}}));
  EXPECT_EQ(transactions_created(p.sealed().at(0).data).size(), 2u);
  EXPECT_EQ(p.state().held_of(a1), Kobo(30'000));
  EXPECT_EQ(p.state().available_of(a1, *p.state().wallets.find(a1)), Kobo(0));
  ASSERT_EQ(p.run(capture(kAlice, h, a2, "c2", 5'000, /*final=*/true)).rejection, Rejection::none);
  EXPECT_TRUE(p.state().holds.empty()) << "an ended hold leaves the hot state";
  EXPECT_TRUE(p.state().held.empty());
  EXPECT_EQ(p.balance(a1), Kobo(25'000));
  EXPECT_EQ(p.state().available_of(a1, *p.state().wallets.find(a1)), Kobo(25'000));
}

TEST(Hold, VoidAndExpiryReleaseItAndMoveNoMoney) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1");
  p.fund(kAlice, a1, 50'000);
  const Decision placed = p.run(hold(kAlice, a1, 10'000, "v"));
  ASSERT_EQ(placed.schedule.size(), 1u);
  EXPECT_EQ(placed.schedule[0].due, kNow + 3'600'000);
  const std::string expiring = p.run(hold(kAlice, a1, 20'000, "e", 60)).id;
  EXPECT_EQ(p.state().held_of(a1), Kobo(30'000));
  const Decision voided = p.run(VoidHold{kAlice, placed.id});
  EXPECT_EQ(only_event<HoldVoided>(voided).hold, HoldId(placed.id));
  EXPECT_EQ(postings_of(voided.events[0].data), nullptr);
  const Decision expired = p.run(ExpireHold{Partition(0), expiring}, kNow + 60'000);
  EXPECT_EQ(only_event<HoldExpired>(expired).hold, HoldId(expiring));
  EXPECT_EQ(postings_of(expired.events[0].data), nullptr);
  EXPECT_TRUE(p.decide(ExpireHold{Partition(0), expiring}).events.empty()) << "an ended hold expires never";
  EXPECT_EQ(p.balance(a1), Kobo(50'000));
  EXPECT_EQ(p.state().held_of(a1), Kobo(0));
  EXPECT_EQ(p.decide(VoidHold{kAlice, expiring}).rejection, Rejection::hold_not_pending);
}

TEST(Nuban, MatchesTheDesignTestVectors) {
  EXPECT_EQ(nuban::check_digit("000011", "000001457"), '9');
  EXPECT_EQ(nuban::check_digit("000044", "012345678"), '4');
  EXPECT_EQ(nuban::check_digit("950547", "000000001"), '1');
  EXPECT_TRUE(nuban::is_valid("000011", "0000014579"));
  EXPECT_TRUE(nuban::is_valid("000044", "0123456784"));
  EXPECT_TRUE(nuban::is_valid("950547", "0000000011"));
  EXPECT_FALSE(nuban::is_valid("000044", "0123456785"));
  EXPECT_FALSE(nuban::is_valid("000044", "012345678"));
  EXPECT_FALSE(nuban::is_valid("000044", "01234567a4"));
  EXPECT_EQ(nuban::account_number("000011", 1457), "0000014579");
}

TEST(Amounts, ThatWouldOverflowABalanceAreRejectedNotApplied) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1"), a2 = p.wallet(kAlice, "a2");
  p.fund(kAlice, a1, kMax - 10);
  // The inbound settlement account is at -(kMax - 10): one more credit of 11 would overflow it,
  // and a1 itself too.
  EXPECT_EQ(
      p.decide(IncomingCredit{kAlice, p.number(a1), Kobo(11), "x", "S", "0000014579", "058", "GTB", "000013"})
          .rejection,
      Rejection::out_of_range);
  p.fund(kAlice, a2, 5);
  p.run(transfer(kAlice, a2, a1, 5));
  EXPECT_EQ(p.balance(a1), Kobo(kMax - 5));
  // a2 now holds 0; a1 all but 5: moving it all back is fine, and a credit of 6 to a1 overflows.
  EXPECT_EQ(p.decide(transfer(kAlice, a1, a2, kMax - 5)).rejection, Rejection::none);
  p.fund(kAlice, a2, 6);
  EXPECT_EQ(p.decide(transfer(kAlice, a2, a1, 6)).rejection, Rejection::out_of_range);
  EXPECT_EQ(
      p.decide(IncomingCredit{kAlice, p.number(a1), Kobo(-5), "x", "S", "0000014579", "058", "GTB", "000013"})
          .rejection,
      Rejection::out_of_range);
  EXPECT_EQ(p.state().total.value, 0);
}

}  // namespace
}  // namespace kobo
