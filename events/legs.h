#pragma once
// The lines of a journal entry and what they may say (docs/architecture.md section 4, "Double
// entry"): a Posting, the ledger accounts it may name, the posting rule, and each money event's
// postings by name: its legs.
//
// An event holds its postings as a list, in an order fixed per event type. The legs name them
// (a payout's `source`, `suspense` and `fee`), so no reader counts positions: every money event
// of events/event.h has `legs()`, and the order, the accounts and the signs a type's postings
// must have are written here once. `read()` checks them and says what is wrong (validate() and
// the fact decoder refuse such an event; the audit reads its own way); `legs()` asserts them,
// since only an event that passed validate() reaches it.
//
// A legs struct refers into the postings it was read from: it lives no longer than they do.
// Pure; thread-safe.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/assert.h"
#include "common/result.h"
#include "events/types.h"

namespace kobo {

// ---- ledger accounts -------------------------------------------------------------------------

// Ledger accounts that are not wallets; one of each per partition.
enum class SystemAccount { inbound_settlement, fees, payout_suspense, outbound_settlement };
inline constexpr std::array<SystemAccount, 4> kSystemAccounts{
    SystemAccount::inbound_settlement, SystemAccount::fees, SystemAccount::payout_suspense,
    SystemAccount::outbound_settlement};
// "sys:inbound-settlement", "sys:fees", "sys:payout-suspense", "sys:outbound-settlement".
std::string_view account_name(SystemAccount a);
std::optional<SystemAccount> system_account_from_name(std::string_view name);
// Whether a posting's account is a wallet (its id starts with kWalletIdPrefix); anything else
// must be a system account.
bool is_wallet_account(std::string_view account);

// ---- postings --------------------------------------------------------------------------------

// One line of a journal entry. `account` is a wallet (vba-…) or a system account (sys:…);
// `amount` is signed (negative debits the account); `balance` is the account's balance after
// this line. The postings of an event sum to zero.
struct Posting {
  std::string account;
  Kobo amount;
  Kobo balance;
  auto operator<=>(const Posting&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("account", x.account);
    f("amount", x.amount);
    f("balance", x.balance);
  }
};

enum class PostingFault {
  none,
  unknown_account,    // neither a wallet the reader knows nor a system account
  overflow,           // the balance would leave the range of kobo
  balance_disagrees,  // the stated balance is not the balance before plus the amount
  negative_wallet,    // a wallet's balance would go below zero
};
std::string_view to_string(PostingFault f);

// The posting rule: the balance after `p` given the balance before it, and what is wrong with
// the posting if anything. Every reader moves balances with this and nothing else.
struct PostingResult {
  Kobo balance;
  PostingFault fault = PostingFault::none;
};
PostingResult post(Kobo before, const Posting& p);

// ---- legs ------------------------------------------------------------------------------------
// Each `read()` checks the count of the postings, the account of each (a wallet, or the one
// system account its place names) and its sign, and that they balance.

// A wallet transfer's and a hold capture's: [source -amount, destination +amount], two wallets.
struct TransferLegs {
  const Posting& source;
  const Posting& destination;
  Kobo amount() const {
    // A legs struct refers into its postings: they are as read() found them while it lives.
    KOBO_ASSERT(destination.amount.value > 0, "a transfer moves a positive amount");
    KOBO_ASSERT(source.amount == -destination.amount, "a transfer debits its source what it credits");
    return destination.amount;
  }
  [[nodiscard]] static Result<TransferLegs> read(const std::vector<Posting>& postings);
};

// A payout's (BankTransferInitiated): [source -(amount + fee), sys:payout-suspense +amount,
// sys:fees +fee].
struct PayoutLegs {
  const Posting& source;
  const Posting& suspense;
  const Posting& fee;
  // What the beneficiary is paid.
  Kobo amount() const {
    KOBO_ASSERT(suspense.amount.value > 0, "a payout pays a positive amount");
    KOBO_ASSERT(fee.amount.value > 0 && -source.amount.value - fee.amount.value == suspense.amount.value,
                "a payout's source is debited what suspense and the fee are credited");
    return suspense.amount;
  }
  // Amount + fee.
  Kobo debited() const {
    KOBO_ASSERT(source.amount.value < 0 && source.amount.value != INT64_MIN,
                "a payout's source is debited an amount kobo can negate");
    return -source.amount;
  }
  [[nodiscard]] static Result<PayoutLegs> read(const std::vector<Posting>& postings);
};

// A payout that reached its bank (PayoutSucceeded): [sys:payout-suspense -amount,
// sys:outbound-settlement +amount].
struct PayoutSettledLegs {
  const Posting& suspense;
  const Posting& outbound;
  Kobo amount() const {
    KOBO_ASSERT(outbound.amount.value > 0, "a settled payout moves a positive amount");
    KOBO_ASSERT(suspense.amount == -outbound.amount, "what leaves suspense settles outbound");
    return outbound.amount;
  }
  [[nodiscard]] static Result<PayoutSettledLegs> read(const std::vector<Posting>& postings);
};

// A payout's reversal (PayoutFailed): [sys:payout-suspense -amount, sys:fees -fee,
// source +(amount + fee)].
struct ReversalLegs {
  const Posting& suspense;
  const Posting& fee;
  const Posting& source;
  // Amount + fee.
  Kobo credited() const {
    KOBO_ASSERT(source.amount.value > 0, "a reversal credits its source");
    KOBO_ASSERT(suspense.amount.value < 0 && fee.amount.value < 0 &&
                    source.amount.value + suspense.amount.value + fee.amount.value == 0,
                "a reversal gives back what suspense and the fee held");
    return source.amount;
  }
  [[nodiscard]] static Result<ReversalLegs> read(const std::vector<Posting>& postings);
};

// A transit wallet's sweep of what it received: [transit -amount, settlement wallet +amount].
struct SweepLegs {
  const Posting& debit;
  const Posting& credit;
};

// Money from another bank (IncomingCreditReceived): [sys:inbound-settlement -amount, wallet
// +amount], then for a transit wallet its sweep (the debit of the wallet just credited).
struct IncomingLegs {
  const Posting& inbound;
  const Posting& wallet;
  std::optional<SweepLegs> sweep;
  Kobo amount() const {
    KOBO_ASSERT(wallet.amount.value > 0, "an incoming credit credits a positive amount");
    KOBO_ASSERT(inbound.amount == -wallet.amount, "a wallet is credited what inbound settlement pays");
    return wallet.amount;
  }
  [[nodiscard]] static Result<IncomingLegs> read(const std::vector<Posting>& postings);
};

// The legs of postings that validate() accepted (an event's `legs()`): asserts their shape.
template <typename Legs>
Legs legs_of(const std::vector<Posting>& postings) {
  Result<Legs> legs = Legs::read(postings);
  KOBO_ASSERT(legs.ok(), "an event's postings have its type's legs (validate() refuses others)");
  return std::move(legs).value();
}

}  // namespace kobo
