#include "events/legs.h"

#include <initializer_list>
#include <limits>

#include "events/name_table.h"

namespace kobo {
namespace {

constexpr Kobo kKoboMin(std::numeric_limits<std::int64_t>::min());

constexpr NameTable<SystemAccount, 4> kSystemAccountNames{{
    {SystemAccount::inbound_settlement, "sys:inbound-settlement"},
    {SystemAccount::fees, "sys:fees"},
    {SystemAccount::payout_suspense, "sys:payout-suspense"},
    {SystemAccount::outbound_settlement, "sys:outbound-settlement"},
}};

// What a leg's place says of it: its account (a wallet, or one system account) and its sign.
struct Leg {
  std::optional<SystemAccount> system;  // nullopt: a wallet
  bool credit = false;                  // its amount is positive; else negative
};
constexpr Leg wallet_debit{std::nullopt, false};
constexpr Leg wallet_credit{std::nullopt, true};
constexpr Leg system_debit(SystemAccount a) { return {a, false}; }
constexpr Leg system_credit(SystemAccount a) { return {a, true}; }

std::string describe(std::initializer_list<Leg> shape) {
  std::string out = "[";
  for (const Leg& leg : shape) {
    if (out.size() > 1) out += ", ";
    out += leg.system ? std::string(account_name(*leg.system)) : std::string("a wallet");
    out += leg.credit ? " +" : " -";
  }
  KOBO_ASSERT(out.size() > 2 * shape.size(), "a shape names each of its legs");
  return out + "]";
}

// Whether `postings` are `shape` (their count, accounts and signs); an error naming what the
// postings of `what` should be otherwise.
Status check_shape(std::string_view what, const std::vector<Posting>& postings,
                   std::initializer_list<Leg> shape) {
  KOBO_ASSERT(shape.size() >= 2, "money moves between two legs at least");
  const auto wrong = [&] {
    return Status::error(std::string(what) + "'s postings are not " + describe(shape));
  };
  if (postings.size() != shape.size()) return wrong();
  std::size_t i = 0;
  for (const Leg& leg : shape) {
    const Posting& p = postings[i++];
    const bool account_ok =
        leg.system ? p.account == account_name(*leg.system) : is_wallet_account(p.account);
    const bool sign_ok = leg.credit ? p.amount.value > 0 : p.amount.value < 0;
    if (!account_ok || !sign_ok) return wrong();
    // The legs negate a debit (a payout's debited(), a reversal's credited()): the one amount
    // whose negation kobo cannot hold is no leg's.
    if (p.amount == kKoboMin)
      return Status::error(std::string(what) + "'s postings move more than kobo can hold");
    KOBO_ASSERT(p.amount != kKoboMin && (p.amount.value > 0) == leg.credit,
                "a leg read is signed as its place says, and its negation is in range");
  }
  KOBO_ASSERT(i == postings.size(), "every posting is one of the shape's legs");
  return {};
}

// Whether the amounts sum to zero, without overflowing.
bool balanced(std::initializer_list<Kobo> amounts) {
  KOBO_ASSERT(amounts.size() >= 2, "money balances between two amounts at least");
  Kobo sum;
  for (const Kobo a : amounts) {
    const auto next = checked_add(sum, a);
    if (!next) return false;
    sum = *next;
  }
  return sum.value == 0;
}

Status unbalanced(std::string_view what) {
  KOBO_ASSERT(!what.empty(), "a refusal names what does not balance");
  return Status::error(std::string(what) + "'s postings do not balance");
}

}  // namespace

std::string_view account_name(SystemAccount a) {
  const std::string_view name = name_in(kSystemAccountNames, a);
  // is_wallet_account() tells the two kinds of account apart by their prefixes.
  KOBO_ASSERT(name.starts_with("sys:") && !is_wallet_account(name), "a system account's name is sys:…");
  return name;
}

std::optional<SystemAccount> system_account_from_name(std::string_view name) {
  const auto account = value_in(kSystemAccountNames, name);
  KOBO_ASSERT(!account || !is_wallet_account(name), "no name is both a wallet's and a system account's");
  return account;
}

bool is_wallet_account(std::string_view account) { return account.starts_with(kWalletIdPrefix); }

std::string_view to_string(PostingFault f) {
  switch (f) {
    case PostingFault::none:
      return "none";
    case PostingFault::unknown_account:
      return "posting to an unknown ledger account";
    case PostingFault::overflow:
      return "the balance would overflow";
    case PostingFault::balance_disagrees:
      return "the stated balance disagrees with the balance before plus the amount";
    case PostingFault::negative_wallet:
      return "a wallet's balance would go below zero";
  }
  return "?";
}

PostingResult post(Kobo before, const Posting& p) {
  if (!is_wallet_account(p.account) && !system_account_from_name(p.account))
    return {before, PostingFault::unknown_account};
  const auto after = checked_add(before, p.amount);
  if (!after) return {before, PostingFault::overflow};
  if (*after != p.balance) return {*after, PostingFault::balance_disagrees};
  if (is_wallet_account(p.account) && after->value < 0) return {*after, PostingFault::negative_wallet};
  KOBO_ASSERT(after->value >= 0 || !is_wallet_account(p.account), "only a system account goes below zero");
  KOBO_ASSERT(*after == p.balance, "a posting without fault states the balance it leaves");
  return {*after, PostingFault::none};
}

Result<TransferLegs> TransferLegs::read(const std::vector<Posting>& postings) {
  constexpr std::string_view kWhat = "a transfer";
  if (auto s = check_shape(kWhat, postings, {wallet_debit, wallet_credit}); !s) return s;
  TransferLegs legs{postings[0], postings[1]};
  if (!balanced({legs.source.amount, legs.destination.amount})) return unbalanced(kWhat);
  if (legs.source.account == legs.destination.account)
    return Status::error("a transfer's source is its destination");
  KOBO_ASSERT(legs.source.account != legs.destination.account, "a transfer moves money between two wallets");
  KOBO_ASSERT(legs.amount().value > 0, "a transfer moves a positive amount");
  KOBO_ASSERT(legs.source.amount == -legs.destination.amount, "a transfer debits its source what it credits");
  return legs;
}

Result<PayoutLegs> PayoutLegs::read(const std::vector<Posting>& postings) {
  constexpr std::string_view kWhat = "a payout";
  if (auto s = check_shape(
          kWhat, postings,
          {wallet_debit, system_credit(SystemAccount::payout_suspense), system_credit(SystemAccount::fees)});
      !s)
    return s;
  PayoutLegs legs{postings[0], postings[1], postings[2]};
  if (!balanced({legs.source.amount, legs.suspense.amount, legs.fee.amount})) return unbalanced(kWhat);
  KOBO_ASSERT(legs.debited() == legs.amount() + legs.fee.amount, "a payout debits its amount and its fee");
  KOBO_ASSERT(legs.amount().value > 0 && legs.fee.amount.value > 0,
              "a payout pays an amount and charges a fee");
  return legs;
}

Result<PayoutSettledLegs> PayoutSettledLegs::read(const std::vector<Posting>& postings) {
  constexpr std::string_view kWhat = "a settled payout";
  if (auto s = check_shape(
          kWhat, postings,
          {system_debit(SystemAccount::payout_suspense), system_credit(SystemAccount::outbound_settlement)});
      !s)
    return s;
  PayoutSettledLegs legs{postings[0], postings[1]};
  if (!balanced({legs.suspense.amount, legs.outbound.amount})) return unbalanced(kWhat);
  KOBO_ASSERT(legs.amount() == -legs.suspense.amount, "what leaves suspense settles outbound");
  KOBO_ASSERT(legs.amount().value > 0, "a settled payout moves a positive amount");
  return legs;
}

Result<ReversalLegs> ReversalLegs::read(const std::vector<Posting>& postings) {
  constexpr std::string_view kWhat = "a payout's reversal";
  if (auto s = check_shape(
          kWhat, postings,
          {system_debit(SystemAccount::payout_suspense), system_debit(SystemAccount::fees), wallet_credit});
      !s)
    return s;
  ReversalLegs legs{postings[0], postings[1], postings[2]};
  if (!balanced({legs.suspense.amount, legs.fee.amount, legs.source.amount})) return unbalanced(kWhat);
  KOBO_ASSERT(legs.credited() == -(legs.suspense.amount + legs.fee.amount),
              "a reversal gives back amount and fee");
  KOBO_ASSERT(legs.credited().value > 0, "a reversal credits its source");
  return legs;
}

Result<IncomingLegs> IncomingLegs::read(const std::vector<Posting>& postings) {
  constexpr std::string_view kWhat = "an incoming credit";
  const std::initializer_list<Leg> credit{system_debit(SystemAccount::inbound_settlement), wallet_credit};
  const std::initializer_list<Leg> swept{system_debit(SystemAccount::inbound_settlement), wallet_credit,
                                         wallet_debit, wallet_credit};
  const bool sweeps = postings.size() == swept.size();
  if (auto s = check_shape(kWhat, postings, sweeps ? swept : credit); !s) return s;
  IncomingLegs legs{postings[0], postings[1], std::nullopt};
  if (!balanced({legs.inbound.amount, legs.wallet.amount})) return unbalanced(kWhat);
  if (sweeps) {
    legs.sweep.emplace(SweepLegs{postings[2], postings[3]});
    // The transit wallet sweeps on what it was just credited, to another wallet.
    if (legs.sweep->debit.account != legs.wallet.account ||
        legs.sweep->credit.account == legs.wallet.account ||
        !balanced({legs.wallet.amount, legs.sweep->debit.amount}) ||
        !balanced({legs.sweep->debit.amount, legs.sweep->credit.amount}))
      return Status::error("an incoming credit's sweep does not move on what its transit wallet received");
    KOBO_ASSERT(legs.sweep->credit.amount == legs.wallet.amount,
                "a sweep moves on all its transit wallet received");
  }
  KOBO_ASSERT(legs.amount() == -legs.inbound.amount, "a wallet is credited what inbound settlement pays");
  return legs;
}

}  // namespace kobo
