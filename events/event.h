#pragma once
// The events of the ledger (event contract v2, docs/architecture.md section 4) and their one codec.
//
// An event is a fact the writer decided, in ledger terms: the ids it assigned, the ledger
// accounts with signed amounts and balances after, references, narration, the time. Nothing
// that can be derived is stored: wallet snapshots, `_id`, mirrors and the other ids a record
// shows are rendered by projection/ from these facts (events/ledger.h says how ids derive).
//
// Each event type is one struct below; `Event::data` holds exactly one of them. Each struct
// lists its wire members once, in `fields()`, in key order: the encoder writes them in that
// order and the decoder reads them by that list, so the two cannot disagree. A money event's
// postings, in the order its comment gives, are read by name through its `legs()`
// (events/legs.h), never by position.
//
// The wire form is canonical JSON (keys sorted, no white space, integers only), prefixed by its
// "hash" member: `hash` is the hex SHA-256 of `prevHash` (hex) followed by the canonical JSON of
// the event without its hash, so the chain of a partition can be verified from the bytes alone.
// Schemas: schemas/events/*.schema.json (schemaVersion 2).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/assert.h"
#include "common/result.h"
#include "common/time.h"
#include "events/legs.h"
#include "events/limits.h"
#include "events/types.h"

namespace kobo {

inline constexpr int kEventSchemaVersion = 2;
inline constexpr std::string_view kGenesisHash =
    "0000000000000000000000000000000000000000000000000000000000000000";
static_assert(kGenesisHash.size() == 64, "a hash is 64 hex digits");

// ---- values events hold ----------------------------------------------------------------------

// A transaction's status. Legal moves: pending -> processing -> success | failed (payouts); a
// record created final is success.
enum class TransactionStatus { pending, processing, success, failed };
// A collection wallet's status: pending until paid (success) or expired.
enum class CollectionStatus { pending, success, expired };
enum class WalletCategory { primary, secondary };
enum class BeneficiaryType { vba, external, personal };
// A hold's status. Legal moves: pending -> captured (nothing remaining, or a final capture) |
// voided | expired; only a pending hold changes.
enum class HoldStatus { pending, captured, voided, expired };

std::string_view to_string(TransactionStatus s);
std::string_view to_string(CollectionStatus s);
std::string_view to_string(WalletCategory c);
std::string_view to_string(BeneficiaryType t);
std::string_view to_string(HoldStatus s);
std::optional<HoldStatus> hold_status_from_string(std::string_view s);
std::optional<TransactionStatus> transaction_status_from_string(std::string_view s);
std::optional<WalletCategory> wallet_category_from_string(std::string_view s);
std::optional<BeneficiaryType> beneficiary_type_from_string(std::string_view s);

// A time inside an event's data (the envelope has its own `time`): ISO 8601 on the wire.
struct Timestamp {
  UnixMs ms = 0;
  auto operator<=>(const Timestamp&) const = default;
};

// A JSON value the ledger stores without reading it (a payout's `metadata`): its canonical text.
struct RawJson {
  std::string text = "{}";
  auto operator<=>(const RawJson&) const = default;
};

struct Mobile {
  std::string iso_code;
  std::string phone_number;
  auto operator<=>(const Mobile&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("isoCode", x.iso_code);
    f("phoneNumber", x.phone_number);
  }
};

// ---- the catalog -----------------------------------------------------------------------------

// A writer took the partition (docs/architecture.md section 3). Partition-level: no business.
// `tierLimits`: the KYC tier limits it decides with from here on (events/limits.h); absent in
// logs written before tiers, whose wallets have none.
struct WriterStarted {
  Epoch epoch;
  std::optional<TierLimits> tier_limits = std::nullopt;
  auto operator<=>(const WriterStarted&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("epoch", x.epoch);
    f("tierLimits", x.tier_limits);
  }
};

// A business was registered with its default account (first start, the admin API). The
// business is the envelope's; `id` is the account's integer id. The log never holds a secret key:
// a key is its SHA-256 (`…SecretKeyHash`, what authentication compares), and what a node needs to
// sign webhooks with it (`…SigningKey`) is wrapped under the deployment's master key
// (common/master_key.h, events/keys.h), so every node that has that key can sign and nothing in
// the log opens without it. The signing keys are absent in logs written before envelope
// encryption; such a data dir seals its keys on its next start (SigningKeySealed).
struct BusinessRegistered {
  AccountId account;
  std::string account_name;
  std::uint64_t id = 0;
  std::string live_public_key;
  std::string live_secret_key_hash;                            // hex SHA-256 of the secret key
  std::optional<std::string> live_signing_key = std::nullopt;  // the secret key wrapped (events/keys.h)
  std::string name;
  std::string test_public_key;
  std::string test_secret_key_hash;
  std::optional<std::string> test_signing_key = std::nullopt;
  auto operator<=>(const BusinessRegistered&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("account", x.account);
    f("accountName", x.account_name);
    f("id", x.id);
    f("livePublicKey", x.live_public_key);
    f("liveSecretKeyHash", x.live_secret_key_hash);
    f("liveSigningKey", x.live_signing_key);
    f("name", x.name);
    f("testPublicKey", x.test_public_key);
    f("testSecretKeyHash", x.test_secret_key_hash);
    f("testSigningKey", x.test_signing_key);
  }
};

// The account's current secret key of the envelope's mode, wrapped under the master key for
// signing webhooks (events/keys.h): what a data dir made before envelope encryption kept in
// plaintext files, sealed into the log on its first start since. Moves no money.
struct SigningKeySealed {
  AccountId account;
  std::string signing_key;
  auto operator<=>(const SigningKeySealed&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("account", x.account);
    f("signingKey", x.signing_key);
  }
};

// An account's settings changed; absent members stayed as they were. `live`: whether live mode is
// enabled (the admin's act). `webhooks` and `webhook_events` (the webhook event types the account
// wants delivered, events/ledger.h WebhookEventType names) are written by older kobos only, and
// were then shared by both modes; webhook settings are a WebhooksConfigured of one mode now.
struct AccountUpdated {
  AccountId account;
  std::optional<bool> live;
  std::optional<std::vector<std::string>> webhook_events;
  std::optional<std::vector<std::string>> webhooks;
  auto operator<=>(const AccountUpdated&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("account", x.account);
    f("live", x.live);
    f("webhookEvents", x.webhook_events);
    f("webhooks", x.webhooks);
  }
};

// An account's webhook secret of the envelope's mode was issued or rotated. The log holds no
// secret: the secret is derived from this event's hash with a master secret that only the
// service's nodes hold (webhooks/webhooks.h WebhookSecrets), so every node signs with it after a
// restart or a replay. Moves no money.
struct WebhookSecretRotated {
  AccountId account;
  auto operator<=>(const WebhookSecretRotated&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("account", x.account);
  }
};

// A wallet was opened with a new account number of the service's own bank.
struct WalletOpened {
  AccountId account;
  std::string account_number;  // 10 digits
  std::string bank_code;
  std::string bank_name;
  WalletCategory category = WalletCategory::primary;
  std::optional<std::string> email_address;
  std::uint64_t id = 0;
  std::optional<std::uint64_t> kyc_tier = std::nullopt;  // 1..3 (events/limits.h); absent: no tier limits
  std::optional<Mobile> mobile;
  std::string name;
  WalletId wallet;
  auto operator<=>(const WalletOpened&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("account", x.account);
    f("accountNumber", x.account_number);
    f("bankCode", x.bank_code);
    f("bankName", x.bank_name);
    f("category", x.category);
    f("emailAddress", x.email_address);
    f("id", x.id);
    f("kycTier", x.kyc_tier);
    f("mobile", x.mobile);
    f("name", x.name);
    f("wallet", x.wallet);
  }
};

// A transit wallet was opened: whatever it receives is swept to `settlementWallet`.
struct TransitWalletOpened {
  AccountId account;
  std::string account_number;
  std::string bank_code;
  std::string bank_name;
  std::optional<std::string> email_address;
  std::uint64_t id = 0;
  std::optional<std::uint64_t> kyc_tier = std::nullopt;  // 1..3 (events/limits.h); absent: no tier limits
  std::optional<Mobile> mobile;
  std::string name;
  WalletId settlement_wallet;
  WalletId wallet;
  auto operator<=>(const TransitWalletOpened&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("account", x.account);
    f("accountNumber", x.account_number);
    f("bankCode", x.bank_code);
    f("bankName", x.bank_name);
    f("emailAddress", x.email_address);
    f("id", x.id);
    f("kycTier", x.kyc_tier);
    f("mobile", x.mobile);
    f("name", x.name);
    f("settlementWallet", x.settlement_wallet);
    f("wallet", x.wallet);
  }
};

// A disposable collection wallet was opened: it accepts exactly `amount` once, before
// `expiresAt`, for `destination`. It is not a ledger account: a payment credits the destination.
struct CollectionWalletOpened {
  AccountId account;
  std::string account_number;
  Kobo amount;
  std::string bank_code;
  std::string bank_name;
  WalletId destination;
  Timestamp expires_at;
  std::uint64_t id = 0;
  std::string name;
  std::optional<std::string> reference;
  WalletId wallet;
  auto operator<=>(const CollectionWalletOpened&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("account", x.account);
    f("accountNumber", x.account_number);
    f("amount", x.amount);
    f("bankCode", x.bank_code);
    f("bankName", x.bank_name);
    f("destination", x.destination);
    f("expiresAt", x.expires_at);
    f("id", x.id);
    f("name", x.name);
    f("reference", x.reference);
    f("wallet", x.wallet);
  }
};

// An unpaid collection wallet reached its expiration.
struct CollectionWalletExpired {
  WalletId wallet;
  auto operator<=>(const CollectionWalletExpired&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("wallet", x.wallet);
  }
};

// A wallet's KYC tier changed (PATCH /v1/virtual-accounts/{id}); absent `kycTier`: it has none
// now. The day's debits so far still count against the new tier's allowance.
struct WalletTierChanged {
  std::optional<std::uint64_t> kyc_tier;
  WalletId wallet;
  auto operator<=>(const WalletTierChanged&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("kycTier", x.kyc_tier);
    f("wallet", x.wallet);
  }
};

// An account at a bank was saved as a beneficiary.
struct BeneficiarySaved {
  AccountId account;
  std::string account_name;
  std::string account_number;  // as the bank has it: text
  BankAccountId bank_account;
  std::string bank_code;
  std::string bank_name;
  BeneficiaryType beneficiary_type = BeneficiaryType::external;
  std::uint64_t id = 0;
  auto operator<=>(const BeneficiarySaved&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("account", x.account);
    f("accountName", x.account_name);
    f("accountNumber", x.account_number);
    f("bankAccount", x.bank_account);
    f("bankCode", x.bank_code);
    f("bankName", x.bank_name);
    f("beneficiaryType", x.beneficiary_type);
    f("id", x.id);
  }
};

// Money moved between two wallets of a business: postings [source -amount, destination +amount]
// (legs(): TransferLegs). Settled as it is appended. `transaction` is the debit's id; `ids` the
// integer ids of the transaction records, one per wallet posting (events/ledger.h).
// The request's idempotency fingerprint is not stored: request_fingerprint() in events/ledger.h
// derives it from these members. `batch`: the bulk transfer it is an item of (its records'
// batchId), absent for a transfer of its own.
struct WalletTransferSettled {
  AccountId account;
  std::optional<BatchId> batch;
  std::vector<std::uint64_t> ids;
  std::optional<std::string> name_enquiry_ref;
  std::string narration;
  std::vector<Posting> postings;
  std::string reference;
  TransactionId transaction;
  TransferLegs legs() const {
    // validate() checks both, and only an event it passed reaches its legs.
    KOBO_ASSERT(ids.size() == 2, "a transfer numbers its debit and its credit");
    return legs_of<TransferLegs>(postings);
  }
  auto operator<=>(const WalletTransferSettled&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("account", x.account);
    f("batch", x.batch);
    f("ids", x.ids);
    f("nameEnquiryRef", x.name_enquiry_ref);
    f("narration", x.narration);
    f("postings", x.postings);
    f("reference", x.reference);
    f("transaction", x.transaction);
  }
};

// Where a payout goes: the bank account the name enquiry resolved.
struct Beneficiary {
  std::string account_name;
  std::string account_number;
  BankAccountId bank_account;
  std::string bank_code;
  std::string bank_name;
  std::uint64_t id = 0;  // the saved beneficiary's integer id; 0 when it is not saved
  std::string name_enquiry_ref;
  auto operator<=>(const Beneficiary&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("accountName", x.account_name);
    f("accountNumber", x.account_number);
    f("bankAccount", x.bank_account);
    f("bankCode", x.bank_code);
    f("bankName", x.bank_name);
    f("id", x.id);
    f("nameEnquiryRef", x.name_enquiry_ref);
  }
};

// A payout to another bank was accepted: postings [source -(amount+fee), sys:payout-suspense
// +amount, sys:fees +fee]. The payout rail moves it on (PayoutProcessing, PayoutSucceeded,
// PayoutFailed). `batch` as for WalletTransferSettled.
struct BankTransferInitiated {
  AccountId account;
  std::optional<BatchId> batch;
  Beneficiary beneficiary;
  std::vector<std::uint64_t> ids;
  RawJson metadata;
  std::string narration;
  std::vector<Posting> postings;
  std::string reference;
  std::optional<bool> save_beneficiary;  // present (true) when the request asked to save it
  TransactionId transaction;
  PayoutLegs legs() const {
    KOBO_ASSERT(ids.size() == 1, "a payout numbers its one record, the source's debit");
    return legs_of<PayoutLegs>(postings);
  }
  auto operator<=>(const BankTransferInitiated&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("account", x.account);
    f("batch", x.batch);
    f("beneficiary", x.beneficiary);
    f("ids", x.ids);
    f("metadata", x.metadata);
    f("narration", x.narration);
    f("postings", x.postings);
    f("reference", x.reference);
    f("saveBeneficiary", x.save_beneficiary);
    f("transaction", x.transaction);
  }
};

// The payout rail took a payout: pending -> processing.
struct PayoutProcessing {
  TransactionId transaction;
  auto operator<=>(const PayoutProcessing&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("transaction", x.transaction);
  }
};

// The payout reached the beneficiary's bank: postings [sys:payout-suspense -amount,
// sys:outbound-settlement +amount]; the payout's status becomes success.
struct PayoutSucceeded {
  std::vector<Posting> postings;
  TransactionId transaction;
  PayoutSettledLegs legs() const { return legs_of<PayoutSettledLegs>(postings); }
  auto operator<=>(const PayoutSucceeded&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("postings", x.postings);
    f("transaction", x.transaction);
  }
};

// The payout failed and is reversed: postings [sys:payout-suspense -amount, sys:fees -fee,
// source +(amount+fee)]; the payout's status becomes failed, and the source's posting is the
// reversal's transaction record (`ids`: its integer id).
struct PayoutFailed {
  std::vector<std::uint64_t> ids;
  std::vector<Posting> postings;
  TransactionId transaction;
  ReversalLegs legs() const {
    KOBO_ASSERT(ids.size() == 1, "a reversal numbers its one record, the source's credit");
    return legs_of<ReversalLegs>(postings);
  }
  auto operator<=>(const PayoutFailed&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("ids", x.ids);
    f("postings", x.postings);
    f("transaction", x.transaction);
  }
};

// Who sent money from another bank.
struct Sender {
  std::string account_name;
  std::string account_number;
  std::string bank_code;
  std::string bank_name;
  std::string nibss_bank_code;
  auto operator<=>(const Sender&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("accountName", x.account_name);
    f("accountNumber", x.account_number);
    f("bankCode", x.bank_code);
    f("bankName", x.bank_name);
    f("nibssBankCode", x.nibss_bank_code);
  }
};

// Money arrived from another bank: postings [sys:inbound-settlement -amount, wallet +amount],
// and for a transit wallet also its sweep [transit -amount, settlement wallet +amount]. A
// payment to a collection wallet credits its destination and names the collection wallet, which
// is paid by it (status success).
struct IncomingCreditReceived {
  AccountId account;
  std::optional<WalletId> collection;
  std::vector<std::uint64_t> ids;
  std::string narration;
  std::vector<Posting> postings;
  Sender sender;
  TransactionId transaction;
  IncomingLegs legs() const {
    KOBO_ASSERT(!postings.empty() && ids.size() == postings.size() - 1,
                "an incoming credit numbers its wallet postings: the credit, and a sweep's two");
    return legs_of<IncomingLegs>(postings);
  }
  auto operator<=>(const IncomingCreditReceived&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("account", x.account);
    f("collection", x.collection);
    f("ids", x.ids);
    f("narration", x.narration);
    f("postings", x.postings);
    f("sender", x.sender);
    f("transaction", x.transaction);
  }
};

// A hold was placed (extensions section 2): `amount` of `source` is reserved until it is captured,
// voided or expires at `expiresAt`. No money moves: the source's available balance (its balance
// less what its pending holds reserve) goes down by `amount`.
struct HoldPlaced {
  AccountId account;
  Kobo amount;
  Timestamp expires_at;
  HoldId hold;
  RawJson metadata;
  std::optional<std::string> narration;
  std::string reference;  // unique per account and mode among holds
  WalletId source;
  auto operator<=>(const HoldPlaced&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("account", x.account);
    f("amount", x.amount);
    f("expiresAt", x.expires_at);
    f("hold", x.hold);
    f("metadata", x.metadata);
    f("narration", x.narration);
    f("reference", x.reference);
    f("source", x.source);
  }
};

// Part (or all) of a hold was captured: a wallet transfer from the hold's source to a wallet,
// postings [source -amount, destination +amount], with its own debit and credit transaction
// records (`ids`, `transaction` the debit's, `reference` the transfer's). The hold ends
// (captured) when nothing remains or `final` is true. `amountDefaulted` (present, true) when the
// request named no amount and took what remained: part of the request's idempotency fingerprint.
struct HoldCaptured {
  AccountId account;
  std::optional<bool> amount_defaulted;
  std::optional<bool> final;
  HoldId hold;
  std::vector<std::uint64_t> ids;
  std::optional<std::string> narration;
  std::vector<Posting> postings;
  std::string reference;
  TransactionId transaction;
  TransferLegs legs() const {
    KOBO_ASSERT(ids.size() == 2, "a capture numbers its debit and its credit");
    return legs_of<TransferLegs>(postings);
  }
  auto operator<=>(const HoldCaptured&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("account", x.account);
    f("amountDefaulted", x.amount_defaulted);
    f("final", x.final);
    f("hold", x.hold);
    f("ids", x.ids);
    f("narration", x.narration);
    f("postings", x.postings);
    f("reference", x.reference);
    f("transaction", x.transaction);
  }
};

// A pending hold was voided: what remained of it is released. No money moves.
struct HoldVoided {
  HoldId hold;
  auto operator<=>(const HoldVoided&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("hold", x.hold);
  }
};

// A pending hold reached its expiresAt: what remained of it is released. No money moves.
struct HoldExpired {
  HoldId hold;
  auto operator<=>(const HoldExpired&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("hold", x.hold);
  }
};

// An item of a bulk transfer that was refused, and why (the writer's rejection, by name:
// "insufficient_funds", "source_not_found", …; query-api maps it to the HTTP status and message).
// `reference`: the item's, when it named one.
struct BulkItemRejected {
  std::uint64_t index = 0;  // the item's place in the request, from 0
  std::string reason;
  std::optional<std::string> reference;
  auto operator<=>(const BulkItemRejected&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("index", x.index);
    f("reason", x.reason);
    f("reference", x.reference);
  }
};

// A bulk transfer was decided (extensions section 5): the first event of its command, followed in
// the same command by one event per accepted item (WalletTransferSettled, BankTransferInitiated,
// each naming `batch`, in item order; a bank item that saves a new beneficiary is preceded by its
// BeneficiarySaved). `items` counts the request's items; `rejected` lists those refused (an atomic
// bulk is appended only when none was). `fingerprint`: the request's idempotency fingerprint (hex
// SHA-256), stored because refused items leave no other trace in the log. Moves no money itself.
struct BulkTransferAccepted {
  AccountId account;
  bool atomic = false;
  BatchId batch;
  std::string fingerprint;
  std::uint64_t items = 0;
  std::string reference;
  std::vector<BulkItemRejected> rejected;
  auto operator<=>(const BulkTransferAccepted&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("account", x.account);
    f("atomic", x.atomic);
    f("batch", x.batch);
    f("fingerprint", x.fingerprint);
    f("items", x.items);
    f("reference", x.reference);
    f("rejected", x.rejected);
  }
};

// A webhook delivery that ended: delivered (a 2xx), or failed for good (its retries ran out).
struct WebhookDeliveryEnded {
  std::string delivery;  // whd-…
  bool succeeded = false;
  auto operator<=>(const WebhookDeliveryEnded&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("delivery", x.delivery);
    f("succeeded", x.succeeded);
  }
};

// Webhook deliveries of the partition's events ended on the node that writes the partition
// (docs/webhooks.md, "In a cluster"). Every node follows the log, so whichever node writes the
// partition next knows what was delivered and sends only what was not. Partition-level (no
// business), appended in batches of at most kWebhookDeliveriesPerEventMax. Moves no money.
struct WebhookDeliveriesEnded {
  std::vector<WebhookDeliveryEnded> deliveries;
  auto operator<=>(const WebhookDeliveriesEnded&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("deliveries", x.deliveries);
  }
};
inline constexpr std::size_t kWebhookDeliveriesPerEventMax = 1'000;

// The account's secret key of the envelope's mode was rolled (POST /v1/accounts/{id}/keys/roll,
// or the admin's): the new key, as its digest and wrapped for signing (events/keys.h), is current
// from this event; the key current until it is still accepted until `previousKeyExpiresAt` (at
// most 72 hours on; this event's time when it was retired at once), then refused. The log never
// holds the key. Moves no money.
struct SecretKeyRolled {
  AccountId account;
  Timestamp previous_key_expires_at;
  std::string secret_key_hash;  // hex SHA-256 of the new key
  std::string signing_key;      // the new key wrapped under the master key
  auto operator<=>(const SecretKeyRolled&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("account", x.account);
    f("previousKeyExpiresAt", x.previous_key_expires_at);
    f("secretKeyHash", x.secret_key_hash);
    f("signingKey", x.signing_key);
  }
};

// A rolled key of the account in the envelope's mode was revoked: refused from this event on,
// whatever was left of its overlap. `keyId` names it (events/keys.h). Moves no money.
struct SecretKeyRevoked {
  AccountId account;
  std::string key_id;
  auto operator<=>(const SecretKeyRevoked&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("account", x.account);
    f("keyId", x.key_id);
  }
};

// The admin suspended the envelope's business: every key of it is refused (403) until a
// BusinessResumed. `reason`: the admin's words, shown to nobody but operators. Moves no money.
struct BusinessSuspended {
  std::optional<std::string> reason;
  auto operator<=>(const BusinessSuspended&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("reason", x.reason);
  }
};

// The admin resumed the envelope's business: its keys work again. Moves no money.
struct BusinessResumed {
  auto operator<=>(const BusinessResumed&) const = default;
  template <typename Self, typename F>
  static void fields(Self&, F&&) {}
};

// An account's webhook settings of the envelope's mode changed (PATCH /v1/accounts/{id}): each
// mode has its own URLs and subscriptions, so a key of one mode never points the other mode's
// deliveries anywhere. Absent members stayed as they were. (An AccountUpdated's `webhooks` and
// `webhookEvents`, which only logs of an older kobo hold, were shared by both modes.)
struct WebhooksConfigured {
  AccountId account;
  std::optional<std::vector<std::string>> webhook_events;  // WebhookEventType names
  std::optional<std::vector<std::string>> webhooks;
  auto operator<=>(const WebhooksConfigured&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("account", x.account);
    f("webhookEvents", x.webhook_events);
    f("webhooks", x.webhooks);
  }
};

// A signed checkpoint of the partition's chain (events/checkpoint.h, docs/security.md): the
// writer's Ed25519 signature, with `key` (its public key, 64 hex digits), over the head before this
// event (the seq before this one and this event's prevHash, which commits to every earlier event),
// the partition, the epoch, this event's time and `log`, the log's name. `nextKey`: a rotation,
// signed by the old key: the key that signs the partition's checkpoints from the next one on.
// Appended right after each WriterStarted and every N events or T seconds when the writer has a
// key. Partition-level (no business). Moves no money.
struct ChainCheckpointed {
  std::string key;
  std::string log;
  std::optional<std::string> next_key = std::nullopt;
  std::string signature;  // 128 hex digits
  auto operator<=>(const ChainCheckpointed&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("key", x.key);
    f("log", x.log);
    f("nextKey", x.next_key);
    f("signature", x.signature);
  }
};

// The admin set the envelope's business's own rate limits (docs/security.md, "Rate limits and
// fairness"): requests per second per key of the business, reads and commands apart, in place of
// the deployment's (`kobo serve --rate-limit-reads`, `--rate-limit-writes`). An absent member:
// the deployment's; 0: not limited. Every node's limiter reads it from its views. Moves no money.
struct BusinessRateLimitsSet {
  std::optional<std::uint64_t> reads_per_second;
  std::optional<std::uint64_t> writes_per_second;
  auto operator<=>(const BusinessRateLimitsSet&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("readsPerSecond", x.reads_per_second);
    f("writesPerSecond", x.writes_per_second);
  }
};
inline constexpr std::uint64_t kRateLimitPerSecondMax = 1'000'000;

// The alternatives of EventData, in the order of EventType.
using EventData =
    std::variant<WriterStarted, BusinessRegistered, AccountUpdated, WalletOpened, TransitWalletOpened,
                 CollectionWalletOpened, CollectionWalletExpired, BeneficiarySaved, WalletTransferSettled,
                 BankTransferInitiated, PayoutProcessing, PayoutSucceeded, PayoutFailed,
                 IncomingCreditReceived, WalletTierChanged, HoldPlaced, HoldCaptured, HoldVoided, HoldExpired,
                 WebhookSecretRotated, BulkTransferAccepted, WebhookDeliveriesEnded, SigningKeySealed,
                 SecretKeyRolled, SecretKeyRevoked, BusinessSuspended, BusinessResumed, WebhooksConfigured,
                 ChainCheckpointed, BusinessRateLimitsSet>;

enum class EventType {
  writer_started,
  business_registered,
  account_updated,
  wallet_opened,
  transit_wallet_opened,
  collection_wallet_opened,
  collection_wallet_expired,
  beneficiary_saved,
  wallet_transfer_settled,
  bank_transfer_initiated,
  payout_processing,
  payout_succeeded,
  payout_failed,
  incoming_credit_received,
  wallet_tier_changed,
  hold_placed,
  hold_captured,
  hold_voided,
  hold_expired,
  webhook_secret_rotated,
  bulk_transfer_accepted,
  webhook_deliveries_ended,
  signing_key_sealed,
  secret_key_rolled,
  secret_key_revoked,
  business_suspended,
  business_resumed,
  webhooks_configured,
  chain_checkpointed,
  business_rate_limits_set,
};

inline EventType type_of(const EventData& d) {
  // A variant an exception left without a value has no type.
  KOBO_ASSERT(d.index() < std::variant_size_v<EventData>, "an event's data holds one of the event types");
  return static_cast<EventType>(d.index());
}
std::string_view to_string(EventType t);  // the wire name: "WalletTransferSettled"
// An event of the partition rather than of a business (WriterStarted, WebhookDeliveriesEnded,
// ChainCheckpointed):
// its `business` is empty, and only its. Every decoder refuses an event that breaks this.
bool is_partition_level(EventType t);
std::optional<EventType> event_type_from_string(std::string_view s);

// The postings an event carries (null for events that move no money). Their names are the
// event's `legs()`.
const std::vector<Posting>* postings_of(const EventData& d);

struct Event {
  Partition partition{0};
  Seq seq{0};
  Epoch epoch{0};
  // The command this event belongs to: the seq of its first event and how many it has.
  // A reader applies a command's events together or not at all. On the wire both are present
  // only for a command of more than one event (most commands are one fact, one event).
  Seq command_seq{0};
  std::uint32_t command_size = 1;
  int schema_version = kEventSchemaVersion;
  // Who caused it: the id of the secret key whose request it was ("key-…", events/keys.h),
  // "admin" for the admin API; empty for what the service does on its own (a payout's steps, an
  // expiry, a writer's start). On the wire only when not empty.
  std::string actor;
  std::string business;  // "biz-…"; empty for partition-level events (WriterStarted, …)
  bool live = false;
  UnixMs time = 0;
  EventData data;
  std::string prev_hash;  // hex
  std::string hash;       // hex; set by seal()

  EventType type() const { return type_of(data); }
  bool last_of_command() const {
    KOBO_ASSERT(command_seq <= seq && seq.value - command_seq.value < command_size,
                "an event lies inside its command");
    return seq.value == command_seq.value + command_size - 1;
  }
};

// Checks what the codec cannot: the postings of an event sum to zero with no zero amount, they
// are the legs of its type (events/legs.h: count, accounts, signs), and there is one record id
// per wallet posting (events/ledger.h); the KYC tiers and a bulk transfer's items are in range.
// The writer asserts it right before appending; decode_event() and decode_fact() refuse an event
// that fails it.
[[nodiscard]] Status validate(const Event& e);

// Computes `hash` from `prev_hash` and the rest, and returns the wire form. Asserts validate().
std::string seal(Event& e);
// seal() of an event that may break validate() (unbalanced postings, missing record ids): what
// only a forger writes. For the audit's tamper tests and fuzzing; the service never calls it.
std::string seal_unvalidated(Event& e);

// Parses the wire form and checks its hash (over the bytes as they are), envelope and data.
// Never trusts the input: a corrupt or edited event is an error, not a crash. A record of
// another schemaVersion is refused with a message naming the version found.
Result<Event> decode_event(std::string_view bytes);

// decode_event without the hash check and validate(): the event as written, for `kobo audit`,
// which reports an edited or unbalanced event and goes on reading. Nothing else may trust what it returns.
Result<Event> decode_event_unverified(std::string_view bytes);

// Whether `bytes`, which decoded to `e`, are exactly the wire form seal() writes for it. Only a
// writer that is not ours could write an event whose hash holds but whose bytes are not
// canonical, so the hot readers skip this re-encoding and `kobo audit` asks it of every event.
bool in_canonical_form(const Event& e, std::string_view bytes);

// The refusal of a record of schemaVersion `found`, naming it.
Status unsupported_schema_version(int found);
// Whether a record as stored says it is of the schemaVersion this kobo reads, without decoding
// it (for tools that pass records through as they are, like `kobo events`).
[[nodiscard]] Status check_schema_version(std::string_view bytes);

// The canonical JSON of an event's data alone (for tests and tools).
std::string encode_data(const EventData& d);

}  // namespace kobo
