#pragma once
// The views' rows: facts, not records (docs/architecture.md section 5). A record is rendered from
// its rows on read (projection/render.h), so a change to what a record shows changes the renderer
// only, and a transfer writes a few small rows instead of its rendered records.
//
//   the fact of an event (events/fact_codec.h): an event that creates transactions (`E` keys), a
//     wallet's opening (`W`), a saved beneficiary (`D`)
//   TransactionRow (`T`): which event created the transaction, which of its transactions it is,
//     and the status changes since
//   WalletRow (`b`): what changes on a wallet: its balance, when it last changed, a collection
//     wallet's status, and where its statement is (how many movements, their credits, the last one's time)
//   StatementRow (`h`): one movement of a wallet's ledger balance, numbered in log order
//   HoldRow (`U`): what changes on a hold (its placement's fact is under `O`)
//   ListedRow (`t`): what the transaction list filters on when it scans (entry, status, amount)
//   KeyRow (`K`): whose a secret key is, and until when it is accepted
//   AccountKeysRow (`k`): an account's keys of one mode, and what its webhooks are signed with
//   TierLimits (`Y`): the KYC tier limits a partition's writer last recorded (events/limits.h)
//   WebhookRow (`w`): an account's webhook state in one mode: its events so far, its secret's rotations
//   WebhookEventRow (`e`): one webhook event of an account and mode, numbered in log order
//   BulkRow (`J`): where a bulk transfer's command is in the log
//
// The binary forms below are part of the views' key layout (view_keys.h kFormat). Pure.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "events/event.h"
#include "events/ledger.h"
#include "events/types.h"

namespace kobo::rows {

struct StatusStep {
  TransactionStatus status = TransactionStatus::pending;
  UnixMs time = 0;
  bool operator==(const StatusStep&) const = default;
};

struct TransactionRow {
  Partition partition{0};
  Seq seq{0};                     // the event that created it (its fact is under E<partition><seq>)
  std::uint32_t index = 0;        // which of the event's transactions (transactions_created order)
  std::vector<StatusStep> steps;  // the status changes since, oldest first (a payout's)
  bool operator==(const TransactionRow&) const = default;
};
std::string encode(const TransactionRow& row);
[[nodiscard]] Result<TransactionRow> decode_transaction(std::string_view bytes);

struct WalletRow {
  Kobo balance;
  UnixMs updated = 0;  // the last change: its opening, a posting, a hold, its tier, a collection's close
  CollectionStatus status = CollectionStatus::pending;  // a collection wallet's; pending for the others
  std::uint64_t movements = 0;  // postings to it so far: the number of its last StatementRow
  Kobo credited;                // the sum of its credits so far (its debits: credited - balance)
  UnixMs moved_at = 0;          // the statement time of its last movement (StatementRow::time)
  Kobo held;                    // what its pending holds reserve (availableBalance: balance - held)
  std::uint8_t tier = 0;        // its KYC tier, 1..3; 0: none (events/limits.h)
  DailyDebits debits;           // its counted debits of their last day
  bool operator==(const WalletRow&) const = default;
};
std::string encode(const WalletRow& row);
std::string encode(const TierLimits& limits);
[[nodiscard]] Result<TierLimits> decode_tier_limits(std::string_view bytes);
[[nodiscard]] Result<WalletRow> decode_wallet(std::string_view bytes);

// One movement of a wallet's ledger balance: a posting to it, the `number`-th (from 1, in log
// order) under h<wallet>|<number> (view_keys.h). A statement's window is a range of numbers
// found by `time`, which never decreases along a wallet's movements: it is the event's time, or
// the previous movement's when the writer's clock went back. The running `credited` total makes
// a window's credits and debits two reads, whatever its length.
struct StatementRow {
  UnixMs time = 0;
  Partition partition{0};
  Seq seq{0};               // the event that posted it (its fact is under E<partition><seq>)
  std::uint32_t index = 0;  // which of the event's transactions: its wallet postings', in order
  Kobo amount;              // signed: negative debits the wallet
  Kobo balance;             // the wallet's balance after it
  Kobo credited;            // the wallet's credits up to and including it
  bool operator==(const StatementRow&) const = default;
};
std::string encode(const StatementRow& row);
[[nodiscard]] Result<StatementRow> decode_statement(std::string_view bytes);

struct ListedRow {
  Entry entry = Entry::debit;
  TransactionStatus status = TransactionStatus::success;
  std::int64_t amount = 0;
  std::string public_id;
  bool operator==(const ListedRow&) const = default;
};
std::string encode(const ListedRow& row);
[[nodiscard]] Result<ListedRow> decode_listed(std::string_view bytes);

// What changes on a hold (`U`; the fact of its HoldPlaced is under `O`): what was captured, its
// status, and where its captures' facts are (each a HoldCaptured, under E<partition><seq>).
struct HoldRow {
  Partition partition{0};
  Seq placed{0};  // the seq of its HoldPlaced: with its time, where the hold is listed
  Kobo captured;
  HoldStatus status = HoldStatus::pending;
  UnixMs updated = 0;
  std::vector<Seq> captures;  // oldest first
  bool operator==(const HoldRow&) const = default;
};
std::string encode(const HoldRow& row);
[[nodiscard]] Result<HoldRow> decode_hold(std::string_view bytes);
// A bulk transfer: its command's events are `events` events from `seq` (its BulkTransferAccepted,
// then its items' events, each with its fact under E<partition><seq>; a BeneficiarySaved has none).
struct BulkRow {
  Partition partition{0};
  Seq seq{0};
  std::uint32_t events = 0;
  bool operator==(const BulkRow&) const = default;
};
std::string encode(const BulkRow& row);
[[nodiscard]] Result<BulkRow> decode_bulk(std::string_view bytes);

// Whose a secret key is (`K<hash>`), and until when it is accepted: 0 while it is its account's
// current key, the end of its overlap once it was rolled. A revoked key has no row.
struct KeyRow {
  std::string business;
  std::string account;
  bool live = false;      // the key's mode
  UnixMs expires_at = 0;  // refused from then on; 0: no end
  bool operator==(const KeyRow&) const = default;
};
std::string encode(const KeyRow& row);
[[nodiscard]] Result<KeyRow> decode_key(std::string_view bytes);

// An account's secret keys of one mode (`k<account>|<t|l>`, docs/security.md): the current one
// first, then the rolled ones still within their overlap, each by its hash (its id derives from
// it, events/keys.h); and the current key wrapped under the master key, what webhooks are signed
// with (empty in a log from before envelope encryption until its signing keys are sealed).
struct AccountKey {
  std::string hash;       // hex SHA-256 of the key
  UnixMs created = 0;     // issued (registered or rolled) at
  UnixMs expires_at = 0;  // 0 for the current key
  bool operator==(const AccountKey&) const = default;
};
struct AccountKeysRow {
  std::string signing_key;
  std::vector<AccountKey> keys;  // current first
  bool operator==(const AccountKeysRow&) const = default;
};
std::string encode(const AccountKeysRow& row);
[[nodiscard]] Result<AccountKeysRow> decode_account_keys(std::string_view bytes);

// An account's webhooks in one mode (`w<account>|<t|l>`). `sequence`: how many webhook events
// it has had (every type, subscribed or not): the number of its last WebhookEventRow. The
// secret's rotations are named by their events' hashes (the secret derives from the hash,
// webhooks.h WebhookSecrets): `secret` the current one (empty before the first is issued) since
// `secret_at`, `previous` the one before it (empty when the current is the first).
struct WebhookRow {
  std::uint64_t sequence = 0;
  std::string secret;
  UnixMs secret_at = 0;
  std::string previous;
  bool operator==(const WebhookRow&) const = default;
};
std::string encode(const WebhookRow& row);
[[nodiscard]] Result<WebhookRow> decode_webhook(std::string_view bytes);

// The `sequence`-th webhook event of an account and mode (`e<account>|<t|l>|<sequence:8>`): which
// transaction, what it announced, and the event that finalized it (its hash names the webhook's
// id, its time is the event's). The body is rendered on read (render.h webhook_body).
struct WebhookEventRow {
  WebhookEventType type = WebhookEventType::account_credit;
  Partition partition{0};
  Seq seq{0};
  UnixMs time = 0;
  std::string hash;         // the event's, hex
  std::string transaction;  // trx-…
  bool operator==(const WebhookEventRow&) const = default;
};
std::string encode(const WebhookEventRow& row);
[[nodiscard]] Result<WebhookEventRow> decode_webhook_event(std::string_view bytes);

}  // namespace kobo::rows
