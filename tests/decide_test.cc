// The decision rules of command/ as tables, one row per rejection in order of precedence.
#include "command/decide.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <limits>

#include "command/nuban.h"

namespace kobo {
namespace {

const LedgerConfig kConfig{};
constexpr UnixMs kNow = 1'795'000'000'000;

const Caller kAlice{"biz-a", "acc-a", false};
const Caller kAliceLive{"biz-a", "acc-a", true};
const Caller kBob{"biz-b", "acc-b", false};

// Decides and applies commands the way the writer does, without a log.
// Each event is also sealed into a hash chain, as the writer appends it: `log()` is the bytes.
class Partition0 {
 public:
  explicit Partition0(std::uint64_t seed = 1) : ids_(seed) { state_.partition = Partition(0); }

  Decision decide(const Command& c, UnixMs now = kNow) { return kobo::decide(state_, c, kConfig, now, ids_); }

  Decision run(const Command& c, UnixMs now = kNow) {
    Decision d = decide(c, now);
    const Seq first(next_seq_);
    const auto n = static_cast<std::uint32_t>(d.events.size());
    for (auto& draft : d.events) {
      Event e;
      e.seq = Seq(next_seq_++);
      e.command_seq = first;
      e.command_size = n;
      e.type = draft.type;
      e.business = draft.business;
      e.live = draft.live;
      e.time = now;
      e.data = draft.data;
      e.prev_hash = last_hash_;
      log_.push_back(seal(e));
      last_hash_ = e.hash;
      apply(state_, e);
    }
    return d;
  }

  const std::vector<std::string>& log() const { return log_; }

  std::string wallet(const Caller& c, const std::string& name, const std::string& category = "primary") {
    const Decision d = run(CreateWallet{c, name, category, std::nullopt, std::nullopt});
    EXPECT_EQ(d.rejection, Rejection::none) << name;
    return record_of(d).at("publicId").get<std::string>();
  }

  void fund(const Caller& c, const std::string& wallet_id, std::int64_t amount) {
    const std::string number = format_account_number(state_.wallets.find(wallet_id)->account_number);
    const Decision d = run(IncomingCredit{c, number, Kobo(amount), "fund", "S", "0000014579", "058", "GTB", "000013"});
    ASSERT_EQ(d.rejection, Rejection::none);
  }

  const PartitionState& state() const { return state_; }

 private:
  PartitionState state_;
  SeededIds ids_;
  std::uint64_t next_seq_ = 1;
  std::string last_hash_ = kGenesisHash;
  std::vector<std::string> log_;
};

WalletTransfer transfer(const Caller& c, std::string src, std::string dst, std::int64_t amount,
                        std::optional<std::string> ref = std::nullopt, std::string fingerprint = "f1") {
  WalletTransfer t;
  t.caller = c;
  t.source = std::move(src);
  t.destination = std::move(dst);
  t.amount = Kobo(amount);
  t.narration = "n";
  t.reference = std::move(ref);
  t.fingerprint = std::move(fingerprint);
  return t;
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
    std::ranges::transform(*id, id->begin(), [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });

  struct Row {
    const char* why;
    WalletTransfer command;
    Rejection expected;
  };
  const std::vector<Row> rows{
      {"a negative amount, which no HTTP request can send but no caller may abort the writer with",
       transfer(kAlice, a1, a2, -10'000, "used", "f2"), Rejection::out_of_range},
      {"a zero amount", transfer(kAlice, a1, a2, 0), Rejection::out_of_range},
      {"a used reference with another body", transfer(kAlice, "vba-nope", a2, 10'000, "used", "f2"),
       Rejection::duplicate_reference},
      {"unknown source", transfer(kAlice, "vba-nope", "vba-nope2", 10'000), Rejection::source_not_found},
      {"another business's source", transfer(kAlice, b1, a2, 10'000), Rejection::source_not_found},
      {"a source of the other mode", transfer(kAlice, live1, a2, 10'000), Rejection::source_not_found},
      {"a source's id in upper case", transfer(kAlice, a1_upper, a2, 10'000), Rejection::source_not_found},
      {"unknown destination", transfer(kAlice, a1, "vba-nope", 10'000), Rejection::destination_not_found},
      {"another business's destination", transfer(kAlice, a1, b1, 10'000), Rejection::destination_not_found},
      {"a destination's id in upper case", transfer(kAlice, a1, a2_upper, 10'000), Rejection::destination_not_found},
      {"same wallet", transfer(kAlice, a1, a1, 10'000), Rejection::same_source_and_destination},
      {"more than the balance", transfer(kAlice, a1, a2, 40'001), Rejection::insufficient_funds},
      {"exactly the balance", transfer(kAlice, a1, a2, 40'000), Rejection::none},
  };
  for (const Row& row : rows) {
    const Decision d = p.decide(row.command);
    EXPECT_EQ(d.rejection, row.expected) << row.why;
    if (row.expected != Rejection::none) {
      EXPECT_TRUE(d.events.empty()) << row.why << ": a rejection writes nothing";
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
  EXPECT_EQ(again.transaction, first.transaction);
  EXPECT_EQ(p.state().wallets.find(a1)->balance, Kobo(0));
}

TEST(WalletTransfer, ReferencesAreScopedToAccountAndMode) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1"), a2 = p.wallet(kAlice, "a2");
  const std::string b1 = p.wallet(kBob, "b1"), b2 = p.wallet(kBob, "b2");
  p.fund(kAlice, a1, 20'000);
  p.fund(kBob, b1, 20'000);
  EXPECT_EQ(p.run(transfer(kAlice, a1, a2, 10'000, "shared")).rejection, Rejection::none);
  const Decision bob = p.run(transfer(kBob, b1, b2, 10'000, "shared", "other-body"));
  EXPECT_EQ(bob.rejection, Rejection::none);
  EXPECT_FALSE(bob.replayed);
}

TEST(WalletTransfer, MovesExactlyTheAmountAndRecordsBothLegs) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1"), a2 = p.wallet(kAlice, "a2");
  p.fund(kAlice, a1, 25'000);
  const Decision d = p.run(transfer(kAlice, a1, a2, 10'000, "r"));
  ASSERT_EQ(d.events.size(), 2u);
  EXPECT_EQ(d.events[0].type, EventType::debited);
  EXPECT_EQ(d.events[1].type, EventType::credited);
  EXPECT_EQ(p.state().wallets.find(a1)->balance, Kobo(15'000));
  EXPECT_EQ(p.state().wallets.find(a2)->balance, Kobo(10'000));
  EXPECT_EQ(p.state().total, Kobo(0)) << "double entry: the partition sums to zero";
  EXPECT_EQ(record_of(d).at("status"), "pending");
  EXPECT_EQ(record_of(d).at("balance"), 15'000);
  const auto& credit = d.events[1].data.at("transaction");
  EXPECT_EQ(credit.at("linkRef"), record_of(d).at("linkRef"));
  EXPECT_EQ(credit.at("debitReference"), "r");
  EXPECT_EQ(credit.at("entry"), "credit");
  EXPECT_EQ(record_of(d).at("meta").at("credit").at("balance"), 10'000);
  EXPECT_TRUE(p.state().pending_settlement.contains(d.transaction));
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
      {"a name already used beats the limit", {kAlice, "p0", "primary", {}, {}}, Rejection::wallet_name_taken},
      {"a secondary's name is taken too", {kAlice, "s0", "secondary", {}, {}}, Rejection::wallet_name_taken},
      {"a sixth primary", {kAlice, "p5", "primary", {}, {}}, Rejection::primary_wallet_limit},
      {"secondaries have no limit", {kAlice, "s1", "secondary", {}, {}}, Rejection::none},
      {"the limit is per mode", {kAliceLive, "p5", "primary", {}, {}}, Rejection::none},
      {"names are per account and mode", {kBob, "p0", "primary", {}, {}}, Rejection::none},
  };
  for (const Row& row : rows) EXPECT_EQ(p.decide(row.command).rejection, row.expected) << row.why;
}

TEST(CreateWallet, IssuesDistinctValidNubanNumbers) {
  Partition0 p;
  std::set<std::string> numbers;
  for (int i = 0; i < 50; ++i) {
    const Decision d = p.run(CreateWallet{kAlice, "w" + std::to_string(i), "secondary", {}, {}});
    const std::string n = record_of(d).at("accountNumber");
    EXPECT_TRUE(nuban::is_valid(kConfig.nuban_code, n)) << n;
    EXPECT_TRUE(numbers.insert(n).second) << n;
  }
}

TEST(IncomingCredit, RejectionsInOrderOfPrecedence) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1");
  const std::string b1 = p.wallet(kBob, "b1");
  const auto number = [&](const std::string& id) {
    return format_account_number(p.state().wallets.find(id)->account_number);
  };
  auto credit = [](const Caller& c, std::string n) {
    return IncomingCredit{c, std::move(n), Kobo(100), "x", "S", "0000014579", "058", "GTB", "000013"};
  };
  EXPECT_EQ(p.decide(credit(kAlice, "0000000000")).rejection, Rejection::account_not_found);
  EXPECT_EQ(p.decide(credit(kAlice, number(b1))).rejection, Rejection::account_not_found);
  EXPECT_EQ(p.decide(credit(kAliceLive, number(a1))).rejection, Rejection::account_not_found);
  EXPECT_EQ(p.decide(credit(kAlice, number(a1))).rejection, Rejection::none);
}

TEST(IncomingCredit, DebitsInboundSettlementSoThePartitionBalances) {
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1");
  p.fund(kAlice, a1, 70'000);
  EXPECT_EQ(p.state().wallets.find(a1)->balance, Kobo(70'000));
  EXPECT_EQ(p.state().balance_of(kInboundSettlement), Kobo(-70'000));
  EXPECT_EQ(p.state().total, Kobo(0));
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
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  Partition0 p;
  const std::string a1 = p.wallet(kAlice, "a1"), a2 = p.wallet(kAlice, "a2");
  p.fund(kAlice, a1, kMax - 10);
  const std::string number = format_account_number(p.state().wallets.find(a1)->account_number);
  // The inbound settlement account is at -(kMax - 10): one more credit of 11 would overflow it,
  // and a1 itself too.
  EXPECT_EQ(p.decide(IncomingCredit{kAlice, number, Kobo(11), "x", "S", "0000014579", "058", "GTB", "000013"}).rejection,
            Rejection::out_of_range);
  p.fund(kAlice, a2, 5);
  EXPECT_EQ(p.decide(transfer(kAlice, a2, a1, 5)).rejection, Rejection::none);
  p.run(transfer(kAlice, a2, a1, 5));
  EXPECT_EQ(p.decide(transfer(kAlice, a1, a2, kMax - 5)).rejection, Rejection::none);
  EXPECT_EQ(p.decide(IncomingCredit{kAlice, number, Kobo(-5), "x", "S", "0000014579", "058", "GTB", "000013"}).rejection,
            Rejection::out_of_range);
  EXPECT_EQ(p.state().total.value, 0);
}

// The same commands through decide() and apply() with the same seed and times give the same
// log, byte for byte; another seed gives another (the ids differ), same balances.
TEST(Decide, IsDeterministicGivenTheSeedAndTheTime) {
  const auto run = [](std::uint64_t seed) {
    Partition0 p(seed);
    std::vector<std::string> wallets;
    for (int i = 0; i < 6; ++i) wallets.push_back(p.wallet(i % 2 ? kAlice : kAliceLive, "w" + std::to_string(i)));
    for (int i = 0; i < 6; ++i) p.fund(i % 2 ? kAlice : kAliceLive, wallets[static_cast<std::size_t>(i)], 1'000'000);
    std::uint64_t x = 42;  // the same commands whatever the seed: only the ids come from it
    for (int i = 0; i < 300; ++i) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;  // the stream of commands, from the seed
      const std::size_t a = 1 + 2 * ((x >> 33) % 3), b = 1 + 2 * ((x >> 40) % 3);
      const std::optional<std::string> ref =
          i % 3 == 0 ? std::optional<std::string>() : std::optional<std::string>("ref-" + std::to_string(i));
      WalletTransfer t = transfer(kAlice, wallets[a], wallets[b], 10'000 + static_cast<std::int64_t>((x >> 20) % 5000));
      t.reference = ref;
      p.run(t, kNow + i);
    }
    return p.log();
  };
  const auto first = run(7), again = run(7), other = run(8);
  ASSERT_GT(first.size(), 300u);
  EXPECT_EQ(first, again);
  EXPECT_NE(first, other);
}

}  // namespace
}  // namespace kobo
