// decide() is a pure function of (state, command, time, ids): the same seeded stream of commands
// through decide() and apply() twice gives the same log, byte for byte (STYLE "Pure cores,
// injected edges"; docs/architecture.md section 4, "Deterministic").
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/decide_harness.h"

namespace kobo {
namespace {

using testing::bank_transfer;
using testing::kNow;
using testing::Partition0;
using testing::transfer;

const Caller kAlice{"biz-a", "acc-a", false};
const Caller kAliceLive{"biz-a", "acc-a", true};

// A fixed stream of every kind of command; only the ids come from `seed`. Times advance by one
// millisecond a command. Rejected commands (a transfer the source cannot afford) are part of it.
std::vector<std::string> run(std::uint64_t seed) {
  Partition0 p(seed);
  UnixMs now = kNow;
  const auto at = [&] { return now++; };
  p.run(CreateBusiness{"biz-a", "A", "acc-a", "Default", "th", "lh", "pk_t", "pk_l"}, at());
  std::vector<std::string> wallets;
  for (int i = 0; i < 6; ++i) {
    const Caller& c = i % 2 ? kAlice : kAliceLive;
    const Decision d = p.run(CreateWallet{c, "w" + std::to_string(i), i < 4 ? "primary" : "secondary",
                                          std::nullopt, Mobile{"NG", "+234800000000" + std::to_string(i)}},
                             at());
    wallets.push_back(d.id);
    p.run(IncomingCredit{c, p.number(d.id), Kobo(100'000'000), "fund", "S", "0000014579", "058", "GTB",
                         "000013"},
          at());
  }
  const std::string transit = p.run(CreateTransitWallet{kAlice, "transit", wallets[1], {}, {}}, at()).id;
  const Decision col = p.run(CreateCollection{kAlice, wallets[3], "Invoice", Kobo(2'500), 60, "inv-1"}, at());
  const std::string collection_number =
      std::get<CollectionWalletOpened>(col.events.at(0).data).account_number;
  std::vector<std::string> payouts;

  std::uint64_t x = 42;  // the same commands whatever the seed
  for (int i = 0; i < 300; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::size_t from = (x >> 33) % 3, to = (from + 1 + (x >> 40) % 2) % 3;
    const std::size_t a = 1 + 2 * from, b = 1 + 2 * to;  // two different test-mode wallets
    const std::int64_t amount = 10'000 + static_cast<std::int64_t>((x >> 20) % 500'000);
    const std::optional<std::string> ref =
        i % 3 == 0 ? std::optional<std::string>() : std::optional<std::string>("ref-" + std::to_string(i));
    switch (i % 10) {
      case 7:
        payouts.push_back(p.run(bank_transfer(kAlice, wallets[a], amount / 10, ref, i % 20 == 7,
                                              i % 30 == 7 ? R"({"sandboxOutcome":"failed"})" : "{}"),
                                at())
                              .id);
        break;
      case 8:
        p.run(IncomingCredit{kAlice, p.number(transit), Kobo(amount), "in", "S", "0000014579", "058", "GTB",
                             "000013"},
              at());
        break;
      default:
        p.run(transfer(kAlice, wallets[a], wallets[b], amount, ref), at());
    }
  }
  p.run(IncomingCredit{kAlice, collection_number, Kobo(2'500), "pay", "S", "0000014579", "058", "GTB",
                       "000013"},
        at());
  for (const std::string& id : payouts) {
    if (id.empty()) continue;
    const PayoutState& payout = p.state().payouts.at(id);
    p.run(AdvancePayout{Partition(0), id, TransactionStatus::processing}, at());
    p.run(AdvancePayout{Partition(0), id,
                        payout.sandbox_fails ? TransactionStatus::failed : TransactionStatus::success},
          at());
  }
  EXPECT_TRUE(p.state().payouts.empty());
  EXPECT_EQ(p.state().total, Kobo(0));
  return p.log();
}

TEST(Decide, TheSameSeedAndTimesGiveAByteIdenticalLog) {
  const auto first = run(7), again = run(7);
  ASSERT_GT(first.size(), 300u);
  ASSERT_EQ(first.size(), again.size());
  for (std::size_t i = 0; i < first.size(); ++i) ASSERT_EQ(first[i], again[i]) << "event " << i;
}

TEST(Decide, AnotherSeedGivesOtherIdsAndSoOtherBytes) {
  const auto first = run(7), other = run(8);
  EXPECT_EQ(first.size(), other.size()) << "the same decisions";
  EXPECT_NE(first, other);
}

}  // namespace
}  // namespace kobo
