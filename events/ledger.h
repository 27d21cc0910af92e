#pragma once
// The ledger's rules over events, each written once for every reader (the writer's state, the
// projector, the audit model, the webhooks consumer). The system accounts, the posting rule and
// each money event's legs are events/legs.h's; here:
//
// - whose an event is (its owner account) and the scope keys of an owner;
// - the transaction records an event creates and changes, with their kind: which the views
//   show, which reach a final state (webhooks), which a reference names (idempotency);
// - how the ids a record shows but the event does not hold derive from the event (a pure
//   function of the log, so views rebuilt from the log are byte-identical to the live ones).
//
// Pure functions; thread-safe.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "events/event.h"

namespace kobo {

// ---- owners ----------------------------------------------------------------------------------

// The account an event names as its owner (its `account` member), or null for an event that
// names none: a payout's later facts (PayoutProcessing, PayoutSucceeded, PayoutFailed), which are
// the payout's account's, and the events that change a record by its id alone (a wallet's tier,
// a collection wallet's expiry, a hold's end) or the partition (WriterStarted). Where it is null,
// a reader that needs the owner takes it from the record the event changes.
const AccountId* owner_account(const EventData& d);

// "acc-…|t|" or "acc-…|l|": the prefix of every key scoped to an owner (an account or a
// business) and a mode. References, wallet names and the views' listing keys all use it.
std::string scope_key(std::string_view owner, bool live);

// What a transaction record shows of a wallet it moves money from or to, and a collection wallet
// of the wallet it pays into: fixed when the wallet opens (projection/render.h renders them).
struct WalletFacts {
  std::uint64_t id = 0;
  std::string public_id;
  std::string account_name;
  std::string account_number;
  std::string bank_code;
  std::string bank_name;
  bool operator==(const WalletFacts&) const = default;
};
// The wallets whose facts the records `d` creates show: those it posts to, and the wallet a
// collection wallet pays into.
std::vector<std::string> wallets_shown(const EventData& d);

// ---- KYC tier limits (events/limits.h) ---------------------------------------------------------

// The debit of `d` that counts toward a wallet's daily allowance (docs/architecture.md, KYC tiers): a
// wallet transfer's amount from its source, a bank transfer's amount + fee, a hold's amount when
// it is placed. Nothing else counts (not a capture, a sweep or a reversal), and nothing gives
// allowance back (not a void, an expiry or a failed payout).
struct TierDebit {
  std::string wallet;
  Kobo amount;
};
std::optional<TierDebit> tier_debit(const EventData& d);
// Whether the credits `d` posts to wallets were refused above the wallets' balance caps: every
// credit but a payout's reversal, which gives back what was debited whatever the cap.
bool credits_capped(const EventData& d);

// ---- transaction records ---------------------------------------------------------------------

enum class Entry { debit, credit };
std::string_view to_string(Entry e);

// What a transaction record is, from the event that created it: one kind per wallet posting.
enum class TransactionKind {
  wallet_transfer_debit,   // WalletTransferSettled, the source's posting
  wallet_transfer_credit,  // WalletTransferSettled, the destination's posting
  payout,                  // BankTransferInitiated: the debit to another bank
  payout_reversal,         // PayoutFailed: the source credited back
  incoming_credit,         // IncomingCreditReceived: the wallet (or collection's destination) credited
  sweep_debit,             // IncomingCreditReceived to a transit wallet: the transit wallet's sweep
  sweep_credit,            // ... and the settlement wallet's credit
  hold_capture_debit,      // HoldCaptured, the hold's source's posting
  hold_capture_credit,     // HoldCaptured, the destination's posting
};
std::string_view to_string(TransactionKind k);
Entry entry_of(TransactionKind k);

// A transaction record an event creates: one per wallet posting, in posting order.
struct CreatedTransaction {
  TransactionKind kind;
  TransactionId id;                                       // publicId (trx-…)
  std::uint64_t number = 0;                               // integer id
  const Posting* posting = nullptr;                       // the wallet's posting; points into the event
  TransactionStatus status = TransactionStatus::success;  // as created
  std::string reference;                                  // the record's own reference
  std::optional<std::string> debit_reference;             // a credit's: the reference of the debit it answers
  std::string link_ref;                                   // joins the records of one movement of money
};

// The bulk transfer whose item `d` is (its records' batchId), or null.
const BatchId* batch_of(const EventData& d);

// The transaction records `d` creates (empty for events that create none).
std::vector<CreatedTransaction> transactions_created(const EventData& d);
// transactions_created(d).size(), without deriving their ids and references (no hashing).
std::size_t transactions_created_count(const EventData& d);

// A status an event gives an existing transaction (PayoutProcessing, PayoutSucceeded,
// PayoutFailed); nullopt for other events.
struct StatusChange {
  TransactionId transaction;
  TransactionStatus from;
  TransactionStatus to;
};
std::optional<StatusChange> status_change(const EventData& d);

// The transactions an event brings to a final state (success or failed), with their entry:
// what webhooks announce.
struct FinalizedTransaction {
  TransactionId id;
  Entry entry;
  TransactionStatus status;
};
std::vector<FinalizedTransaction> transactions_finalized(const EventData& d);

// ---- webhooks --------------------------------------------------------------------------------

// What a webhook announces of a finalized transaction (docs/webhooks.md): account.credit (any
// credit), account.debit (a debit that succeeded), account.debit.failed (a failed payout).
enum class WebhookEventType { account_credit, account_debit, account_debit_failed };
inline constexpr std::size_t kWebhookEventTypes = 3;
std::string_view to_string(WebhookEventType t);  // "account.credit", …
std::optional<WebhookEventType> webhook_event_type_from_string(std::string_view s);
// The webhook event of a finalized transaction; nullopt for one no webhook announces (a credit
// that failed).
std::optional<WebhookEventType> webhook_event_of(const FinalizedTransaction& f);

// ---- idempotency -----------------------------------------------------------------------------

// What makes two transfer requests with one reference "the same body" (docs/architecture.md
// section 6, guarantee 4): every field that moves money. The writer computes it from a command
// and from the event a reference first produced, so the log need not hold it. (sourceType,
// destinationType and currency are validated to one value each, so they add nothing.)
struct WalletTransferRequest {
  std::string_view source;
  std::string_view destination;
  Kobo amount;
  std::string_view narration;
  std::optional<std::string_view> name_enquiry_ref;
};
struct BankTransferRequest {
  std::string_view source;
  std::string_view account_number;
  std::string_view bank_code;
  Kobo amount;
  std::string_view narration;
  std::string_view metadata;  // canonical JSON text
  bool save_beneficiary = false;
};
// A hold's placement: its reference is unique among the account's holds (extensions section 2).
struct HoldRequest {
  std::string_view source;
  Kobo amount;
  std::optional<std::string_view> narration;
  std::string_view metadata;  // canonical JSON text
  std::int64_t expires_in_s = 0;
};
// A hold's capture: its reference is a transfer reference. `amount` nullopt: what remains.
struct HoldCaptureRequest {
  std::string_view hold;
  std::string_view destination;
  std::optional<Kobo> amount;
  std::optional<std::string_view> narration;
  bool final = false;
};
// Hex SHA-256 of the request's canonical form.
std::string request_fingerprint(const WalletTransferRequest& r);
std::string request_fingerprint(const BankTransferRequest& r);
std::string request_fingerprint(const HoldRequest& r);
std::string request_fingerprint(const HoldCaptureRequest& r);
// The request an event answers (its postings must be well formed: validate()). A hold's
// expiresIn is its expiresAt less the event's time (`placed_at`), which is when it was decided.
WalletTransferRequest request_of(const WalletTransferSettled& e);
BankTransferRequest request_of(const BankTransferInitiated& e);
HoldRequest request_of(const HoldPlaced& e, UnixMs placed_at);
HoldCaptureRequest request_of(const HoldCaptured& e);

// ---- derived ids -----------------------------------------------------------------------------

// A UUID v4-shaped text derived from `seed` by SHA-256: the same seed, the same id.
std::string derived_uuid(std::string_view seed);
// `_id`: 24 lowercase hex digits derived from a record's publicId.
std::string object_id_of(std::string_view public_id);
// The publicId of the k-th transaction record of a money event whose first record is `first`.
TransactionId nth_transaction_id(const TransactionId& first, std::size_t k);
// The prefixes of the references the service derives for a record the caller named none for: a
// transfer's credit (`ref-`), a reversal's record (`rev-`), a sweep's (`swp-`). In this order: the
// views key a derived reference by its index here (projection/view_keys.cc).
inline constexpr std::array<std::string_view, 3> kDerivedReferencePrefixes{"ref-", "rev-", "swp-"};
// The reference of a transaction record the caller did not name, `prefix` (one of the above) and
// a derived uuid; also a fee's `feeReference` (`fee-`), which names no record of its own.
std::string derived_reference(std::string_view prefix, const TransactionId& id);
// The linkRef that joins the records of one movement of money.
std::string link_ref_of(const TransactionId& first);
// The derivations from a time-ordered (uuid v7) transaction id are invertible (docs/events.md,
// "Derived, not in the log"), so that a record found from its event needs no index of its own:
// the transaction whose k-th record (k = 1, 2) `id` would be, and the record whose derived
// reference (`ref-`, `swp-`, `rev-`) `reference` would be. nullopt for any other shape. Only
// candidates: a reader checks what it finds against them.
std::optional<TransactionId> first_of_nth(const TransactionId& id, std::size_t k);
std::optional<TransactionId> record_of_derived_reference(std::string_view reference);

}  // namespace kobo
