#pragma once
// The commands the single writer accepts, and what it answers. Plain data; decided in decide.h.

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "events/event.h"
#include "events/keys.h"
#include "events/ledger.h"
#include "events/types.h"

namespace kobo {

// Domain rejections, mapped to HTTP in one table in query-api/. Values, never exceptions.
enum class Rejection {
  none,
  duplicate_reference,  // same reference, different body
  source_not_found,
  destination_not_found,
  same_source_and_destination,
  insufficient_funds,
  daily_limit_exceeded,    // a debit beyond the day's allowance of the source's KYC tier
  balance_limit_exceeded,  // a credit above the balance cap of the destination's KYC tier
  wallet_not_found,        // a wallet of the caller's to change
  wallet_name_taken,
  primary_wallet_limit,
  account_not_found,  // incoming credit to an account number the caller does not have
  business_exists,
  reference_exists,  // a collection wallet's reference is taken
  settlement_account_not_found,
  amount_mismatch,         // a payment to a collection wallet of another amount
  collection_inactive,     // a payment to a used or expired collection wallet
  unavailable,             // the log could not be written; nothing was acknowledged
  storage_full,            // as unavailable, because the log's disk is full (HTTP 507)
  hold_not_found,          // a capture or void of a hold the caller has not got
  hold_not_pending,        // a capture or void of a hold that has ended (or reached its expiresAt)
  amount_exceeds_hold,     // a capture of more than the hold's remaining amount
  out_of_range,            // an amount that is not positive, or one that would overflow a
                           // balance; an expiry out of range (HTTP validation stops these
                           // first: this guards the writer from any other caller)
  bank_not_found,          // a bank item of a bulk whose bank code names no bank (name enquiry)
  invalid_account_number,  // ... whose account number fails the bank's check (name enquiry)
  not_owner,               // a cluster node that does not write the command's partition: not
                           // decided here (the HTTP layer waits for an owner or answers 503)
};

std::string_view to_string(Rejection r);
// The rejection named `name` (to_string()), or nullopt.
std::optional<Rejection> rejection_from_string(std::string_view name);

// Who is asking: resolved by query-api from the secret key. Every command is scoped to it.
struct Caller {
  std::string business;  // biz-…
  std::string account;   // acc-…
  bool live = false;     // the key's mode
  // Who asked, recorded on the command's events (Event::actor): the key's id ("key-…",
  // events/keys.h) or "admin"; empty for the service's own commands. Not part of the scope.
  std::string actor = {};
  auto operator<=>(const Caller&) const = default;
};

// The actor of what the admin API asks (Event::actor).
inline constexpr std::string_view kAdminActor = "admin";

// Creates a business with its default account (first start, and the admin API).
struct CreateBusiness {
  std::string business_id;  // biz-…, chosen by the caller so it can be routed to a partition
  std::string name;
  std::string account_id;  // acc-…
  std::string account_name;
  std::string test_secret_key_hash;  // hex SHA-256
  std::string live_secret_key_hash;
  std::string test_public_key;
  std::string live_public_key;
  // The secret keys wrapped under the master key for signing webhooks (events/keys.h);
  // absent only where no webhooks are signed (tests of the writer alone).
  std::optional<std::string> test_signing_key = std::nullopt;
  std::optional<std::string> live_signing_key = std::nullopt;
  std::string actor = {};  // Caller::actor: "admin" for the admin API
};

// Rolls the account's secret key of the caller's mode (docs/security.md): the new key, made and
// shown once by query-api, arrives as its digest and wrapped for signing; it is current from the
// event on, and the key current until then is accepted for `overlap_s` more seconds (0: refused
// at once), then refused.
struct RollSecretKey {
  Caller caller;
  std::string account_id;
  std::string secret_key_hash;  // hex SHA-256 of the new key
  std::string signing_key;      // the new key wrapped (events/keys.h)
  std::int64_t overlap_s = 0;   // 0 .. kKeyOverlapSecondsMax
};

// Revokes a key of the account in the caller's mode at once. query-api checks that the key is one
// of the account's and not its current one; the writer records it.
struct RevokeSecretKey {
  Caller caller;
  std::string account_id;
  std::string key_id;  // events/keys.h
};

// The admin suspends (`suspended`) or resumes the caller's business (caller: the business, actor
// "admin"): while suspended, every key of it is refused.
struct SuspendBusiness {
  Caller caller;
  bool suspended = true;
  std::optional<std::string> reason = std::nullopt;
};

// The admin sets the caller's business's own rate limits (caller: the business, actor "admin"):
// requests per second per key, reads and commands apart; absent, the deployment's; 0, none.
struct SetRateLimits {
  Caller caller;
  std::optional<std::uint64_t> reads_per_second = std::nullopt;
  std::optional<std::uint64_t> writes_per_second = std::nullopt;
};

// Seals the account's current signing key of the caller's mode into the log, wrapped under the
// master key: what a data dir made before envelope encryption kept in a plaintext file
// (app/main.cc migrates it on start).
struct SealSigningKey {
  Caller caller;
  std::string signing_key;  // wrapped (events/keys.h)
};

// Account settings; absent fields stay as they are. `webhooks` and `webhook_events` are of the
// caller's mode (PATCH /v1/accounts/{id}: a WebhooksConfigured in that mode); `live` is the
// admin's (PATCH /v1/admin/accounts/{id}: an AccountUpdated), which query-api enforces: the
// writer does not know who holds a key.
struct UpdateAccount {
  Caller caller;
  std::string account_id;
  std::optional<std::vector<std::string>> webhooks;
  std::optional<bool> live;
  std::optional<std::vector<std::string>> webhook_events;  // WebhookEventType names, validated
};

// Issues or rotates the account's webhook secret of the caller's mode
// (POST /v1/accounts/{id}/webhook-secret). The secret itself is derived from the event's hash
// by webhooks/ (WebhookSecrets): the writer decides only that it happened.
struct RotateWebhookSecret {
  Caller caller;
  std::string account_id;
};

// A saved beneficiary. Its publicId is derived from (business, mode, bank, number) by the
// caller, so saving the same account twice finds the first one.
struct AddBankAccount {
  Caller caller;
  std::string public_id;
  std::string account_name;
  std::string account_number;
  std::string bank_name;
  std::string bank_code;
  std::string beneficiary_type;  // vba | external | personal
};

struct CreateWallet {
  Caller caller;
  std::string account_name;
  std::string category;  // primary | secondary
  std::optional<std::string> email_address;
  std::optional<Mobile> mobile;
  std::optional<std::uint64_t> kyc_tier = std::nullopt;  // 1..3; none: no tier limits
};

// A wallet's KYC tier (PATCH /v1/virtual-accounts/{id}); none removes its tier limits.
struct SetWalletTier {
  Caller caller;
  std::string wallet;
  std::optional<std::uint64_t> kyc_tier;
};

// The same reference with another request is a 409: decide() compares request_fingerprint()
// (events/ledger.h) of the command with that of the event the reference first produced.
struct WalletTransfer {
  Caller caller;
  std::string source;
  std::string destination;
  Kobo amount;
  std::string narration;
  std::optional<std::string> reference;
  std::optional<std::string> name_enquiry_ref;
};

// A disposable collection wallet: an account number that accepts exactly `amount` once,
// before `expire_in_s` passes, for the destination wallet.
struct CreateCollection {
  Caller caller;
  std::string destination;
  std::string account_name;
  Kobo amount;
  std::int64_t expire_in_s = 0;
  std::optional<std::string> reference;
};

// A transit collection wallet: whatever arrives is swept to the settlement wallet.
struct CreateTransitWallet {
  Caller caller;
  std::string account_name;
  std::string settlement_account;
  std::optional<std::string> email_address;
  std::optional<Mobile> mobile;
  std::optional<std::uint64_t> kyc_tier = std::nullopt;
};

// Internal: an unpaid collection wallet reached its expiration.
struct ExpireCollection {
  Partition partition{0};
  std::string collection;  // publicId
};

// A payout to an account at another bank. query-api resolves the destination (name enquiry)
// before submitting, so the command carries what the transaction records.
struct BankTransfer {
  Caller caller;
  std::string source;
  std::string bank_account_id;  // bka-…, see query-api/name_enquiry.h
  std::string account_number;
  std::string account_name;
  std::string bank_code;
  std::string bank_name;
  std::string name_enquiry_ref;
  Kobo amount;
  std::string narration;
  std::optional<std::string> reference;
  bool save_beneficiary = false;
  RawJson metadata;  // the request's metadata object as canonical JSON (common/json_writer.h)
};

// Internal: the payout rail moved a payout on (pending -> processing -> success | failed).
struct AdvancePayout {
  Partition partition{0};
  std::string transaction;                                   // publicId of the debit record
  TransactionStatus status = TransactionStatus::processing;  // processing | success | failed
};

// Money arriving from another bank (sandbox rail) to one of the caller's wallets.
struct IncomingCredit {
  Caller caller;
  std::string account_number;
  Kobo amount;
  std::string narration;
  std::string sender_name;
  std::string sender_account_number;
  std::string sender_bank_code;
  std::string sender_bank_name;  // resolved by query-api from the bank list
  std::string sender_bank_nibss_code;
};

// Reserves `amount` of `source` until it is captured, voided or expires (extensions section 2).
struct PlaceHold {
  Caller caller;
  std::string source;
  Kobo amount;
  std::string reference;
  std::optional<std::string> narration;
  RawJson metadata;  // the request's metadata object as canonical JSON (common/json_writer.h)
  std::int64_t expires_in_s = 604'800;
};

// Moves part or all of a pending hold to `destination`: a wallet transfer whose money the hold
// reserved. `amount` nullopt: what remains.
struct CaptureHold {
  Caller caller;
  std::string hold;  // hld-…
  std::string destination;
  std::string reference;  // the transfer's
  std::optional<Kobo> amount;
  std::optional<std::string> narration;
  bool final = false;
};

// Releases what remains of a pending hold.
struct VoidHold {
  Caller caller;
  std::string hold;
};

// Internal: a pending hold reached its expiresAt.
struct ExpireHold {
  Partition partition{0};
  std::string hold;
};

// One item of a bulk transfer: a wallet or a bank transfer of the bulk's caller, decided by the
// very rules a single one is (decide.h). `refused`: query-api refused it before the writer (a
// bank item whose name enquiry failed); the writer records it as refused.
struct BulkItem {
  std::variant<WalletTransfer, BankTransfer> transfer;
  Rejection refused = Rejection::none;
};

// Many transfers in one command (extensions section 5), decided in one writer step, in order,
// each item seeing the balances the items before it leave. `atomic`: all are applied or none;
// else each is applied or refused on its own. `reference` is the bulk's idempotency key (its own
// namespace, apart from transfer references); each item's reference is a transfer reference.
struct BulkTransfer {
  Caller caller;
  std::string reference;
  bool atomic = false;
  std::vector<BulkItem> items;
};

// Webhook deliveries of partition `partition` that ended on this node (docs/webhooks.md, "In a
// cluster"): recorded in the log so that the partition's next writer does not send them again.
// The webhooks of the node that writes the partition submit it; nobody is answered.
struct EndWebhookDeliveries {
  Partition partition{0};
  std::vector<WebhookDeliveryEnded> deliveries;  // 1 to kWebhookDeliveriesPerEventMax
};

using Command = std::variant<CreateBusiness, UpdateAccount, AddBankAccount, CreateWallet, CreateCollection,
                             CreateTransitWallet, WalletTransfer, BankTransfer, IncomingCredit, AdvancePayout,
                             ExpireCollection, SetWalletTier, PlaceHold, CaptureHold, VoidHold, ExpireHold,
                             RotateWebhookSecret, BulkTransfer, EndWebhookDeliveries, SealSigningKey,
                             RollSecretKey, RevokeSecretKey, SuspendBusiness, SetRateLimits>;

// What the writer answers once the command's events are durable (or it was rejected). The
// writer renders nothing: query-api shows the record from the events, through projection/.
struct Outcome {
  Rejection rejection = Rejection::none;
  std::string detail;  // operator-facing reason for `unavailable`
  // The publicId of the record the command produced (wallet, collection wallet, debit
  // transaction, incoming credit, bank account, account, hold: for a capture and a void too),
  // or for a replay the original's.
  std::string id;
  bool replayed = false;      // an idempotent repeat: no events; `id` names the original
  std::vector<Event> events;  // the command's events as appended (sealed); empty when rejected
  // The facts of the wallets the records of `events` show (wallets_shown(), events/ledger.h),
  // from the writer's state as it decided: what the answer is rendered from, with the events.
  std::vector<WalletFacts> wallets;
  Partition partition{0};
  Seq seq{0};  // the last event of the command, for read-your-writes
  // A rejected atomic bulk transfer: the item whose rejection `rejection` is (from 0).
  std::optional<std::uint32_t> item;

  bool ok() const { return rejection == Rejection::none; }
};

}  // namespace kobo
