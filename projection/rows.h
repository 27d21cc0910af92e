#pragma once
// The views' rows: facts, not records (docs/architecture.md section 5). A record is rendered from
// its rows on read (projection/render.h), so a change to what a record shows changes the renderer
// only, and a transfer writes a few small rows instead of its rendered records.
//
//   the fact of an event (events/fact_codec.h): an event that creates transactions (in its
//     EventRow, `L`), a wallet's opening (`W`), a saved beneficiary (`D`), a hold's placement (`O`),
//     a business's registration (`B`)
//   EventRow (`L`): an event that creates transactions: its hash, its fact, its place in time
//   TransactionRow (`T`): where a transaction's event is, and the status changes since
//   RecordAt (`r`): where the transaction a reference names is
//   WalletRow (`b`): what changes on a wallet: its balance, when it last changed, a collection
//     wallet's status, and where its statement is (how many movements, their credits, the last one's time)
//   StatementRow (`h`): one movement of a wallet's ledger balance, numbered in log order
//   HoldRow (`U`): what changes on a hold (its placement's fact is under `O`)
//   ListRow (`C`), ListedRow (`g`): a list's size and latest time; a wallet, beneficiary or hold in it
//   AccountRow (`A`): what changes on an account; KeyRow (`K`): whose a secret key is, until when
//   AccountKeysRow (`k`): an account's keys of one mode, and what its webhooks are signed with
//   PositionRow (`P`): where the views are in a partition of the log
//   TierLimits (`Y`): the KYC tier limits a partition's writer last recorded (events/limits.h)
//   WebhookRow (`w`): an account's webhook state in one mode: its events so far, its secret's rotations
//   WebhookEventRow (`e`): a webhook event announced after its transaction was created (a payout's)
//   BulkRow (`J`): a bulk transfer's records and its BulkTransferAccepted
//
// The binary forms below are part of the views' key layout (view_keys.h kFormat). Every decoder
// takes bytes from disk: it checks lengths, ranges and the row's invariants and answers an error,
// never a crash. Pure.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/assert.h"
#include "common/result.h"
#include "common/time.h"
#include "events/event.h"
#include "events/ledger.h"
#include "events/types.h"

namespace kobo::rows {

// An event creates at most this many transaction records (events/ledger.h transactions_created).
inline constexpr std::uint32_t kRecordsPerEventMax = 3;
inline constexpr std::size_t kHashSize = 32;  // an event's SHA-256, raw

// A transaction record's place: the `first` of its event's EventRow and which of the event's
// records it is (transactions_created order); its number in the list is first + index.
struct RecordAt {
  std::uint64_t first = 0;
  std::uint32_t index = 0;
  std::uint64_t number() const {
    KOBO_ASSERT(first + index >= first,
                "a record's number does not wrap (the decoder refuses one that would)");
    return first + index;
  }
  bool operator==(const RecordAt&) const = default;
};
std::string encode(const RecordAt& at);
[[nodiscard]] Result<RecordAt> decode_record_at(std::string_view bytes);

// An event that creates transactions, under L<scope><first>: its hash (raw), how much earlier its
// time is than the latest time of the list before it (0 but when the writer's clock went back:
// list_index.h), how many webhook events its records' account had before it (the first it
// announces is the next: WebhookRow), and its fact. Decoded as views into the stored bytes.
struct EventRow {
  std::string_view hash;
  UnixMs delay = 0;
  std::uint64_t webhooks = 0;
  std::string_view fact;
};
std::string encode_event(std::string_view hash, UnixMs delay, std::uint64_t webhooks, std::string_view fact);
[[nodiscard]] Result<EventRow> decode_event_row(std::string_view bytes);

struct StatusStep {
  TransactionStatus status = TransactionStatus::pending;
  UnixMs time = 0;
  bool operator==(const StatusStep&) const = default;
};

struct TransactionRow {
  std::string scope;              // view_keys::scope17 of its event
  RecordAt at;                    // its event's EventRow, and which of its records
  std::vector<StatusStep> steps;  // the status changes since, oldest first (a payout's)
  std::uint64_t webhook = 0;      // the sequence of the webhook event that announced it, when a later
                                  // event did (a payout's end); 0 otherwise (WebhookEventRow)
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
// order) under h<wallet><number> (view_keys.h). A statement's window is a range of numbers
// found by `time`, which never decreases along a wallet's movements: it is the event's time, or
// the previous movement's when the writer's clock went back. The running `credited` total makes
// a window's credits and debits two reads, whatever its length.
struct StatementRow {
  UnixMs time = 0;
  RecordAt at;    // the transaction it is (its event's EventRow, in the wallet's scope)
  Kobo amount;    // signed: negative debits the wallet
  Kobo balance;   // the wallet's balance after it
  Kobo credited;  // the wallet's credits up to and including it
  bool operator==(const StatementRow&) const = default;
};
std::string encode(const StatementRow& row);
[[nodiscard]] Result<StatementRow> decode_statement(std::string_view bytes);

// What changes on a hold (`U`; the fact of its HoldPlaced is under `O`): its number in the
// scope's hold list, what was captured, its status, and where its captures' events are (the
// `first` of each HoldCaptured's EventRow, in the hold's scope).
struct HoldRow {
  std::uint64_t number = 0;
  Kobo captured;
  HoldStatus status = HoldStatus::pending;
  UnixMs updated = 0;
  std::vector<std::uint64_t> captures;  // oldest first
  bool operator==(const HoldRow&) const = default;
};
std::string encode(const HoldRow& row);
[[nodiscard]] Result<HoldRow> decode_hold(std::string_view bytes);

// A bulk transfer: its items' transactions are the records of its scope's transaction list from
// `first` on whose events name it (events/ledger.h batch_of; the items follow its
// BulkTransferAccepted in the log), and `accepted` the fact of its BulkTransferAccepted.
struct BulkRow {
  std::uint64_t first = 0;
  std::string accepted;
  bool operator==(const BulkRow&) const = default;
};
std::string encode(const BulkRow& row);
[[nodiscard]] Result<BulkRow> decode_bulk(std::string_view bytes);

// A list of a kind of record of a scope (list_index.h): how many it holds (numbered 0..count-1),
// the latest time among them, and how many are displaced (earlier than one listed before them).
struct ListRow {
  std::uint64_t count = 0;
  UnixMs latest = 0;
  std::uint64_t displaced = 0;
  bool operator==(const ListRow&) const = default;
};
std::string encode(const ListRow& row);
[[nodiscard]] Result<ListRow> decode_list(std::string_view bytes);

// A record of a wallet, beneficiary or hold list: its publicId, and for the lists ordered by
// time (holds) its time and how much earlier it is than the list's latest before it.
struct ListedRow {
  UnixMs time = 0;
  UnixMs delay = 0;
  std::string public_id;
  bool operator==(const ListedRow&) const = default;
};
std::string encode(const ListedRow& row);
[[nodiscard]] Result<ListedRow> decode_listed(std::string_view bytes);

// Whose a secret key is (`K`), and until when it is accepted: 0 while it is its account's
// current key, the end of its overlap once it was rolled; or revoked.
struct KeyRow {
  std::string business;
  std::string account;
  bool live = false;      // the key's mode
  UnixMs expires_at = 0;  // refused from then on; 0: no end
  bool revoked = false;   // refused from its SecretKeyRevoked on, whatever its expiry
  bool operator==(const KeyRow&) const = default;
};
std::string encode(const KeyRow& row);
[[nodiscard]] Result<KeyRow> decode_key(std::string_view bytes);

// What changes on an account (`A`): its record is rendered from the fact of its business's
// BusinessRegistered (`B`) and this row (render::account). `webhook_events` nullopt: every type.
// Webhook settings are of one mode (WebhooksConfigured): `webhooks` and `webhook_events` are the
// test mode's and, once the modes were configured apart (`modes_apart`), `live_webhooks` and
// `live_webhook_events` the live mode's; before that (an account of an older kobo, whose settings
// both modes shared, or one never configured) the live mode has the test mode's. The first
// configuration of either mode parts them, each mode keeping what it had.
struct AccountRow {
  std::string business;
  bool live = false;
  std::vector<std::string> webhooks;
  std::optional<std::vector<std::string>> webhook_events;
  bool modes_apart = false;
  std::vector<std::string> live_webhooks;
  std::optional<std::vector<std::string>> live_webhook_events;
  UnixMs updated = 0;
  std::uint64_t version = 0;  // __v: the updates so far
  bool operator==(const AccountRow&) const = default;
};
std::string encode(const AccountRow& row);
[[nodiscard]] Result<AccountRow> decode_account(std::string_view bytes);

// The webhook settings of mode `live` as `row` holds them (the rule above), by reference into it.
struct ModeWebhooks {
  const std::vector<std::string>& urls;
  const std::optional<std::vector<std::string>>& events;  // nullopt: every type
};
inline ModeWebhooks mode_webhooks(const AccountRow& row, bool live) {
  const bool apart = live && row.modes_apart;
  return {apart ? row.live_webhooks : row.webhooks, apart ? row.live_webhook_events : row.webhook_events};
}

// Where the views are in one partition of the log (`P`): the next offset to read and the chain's
// head (the last event applied: its seq, its hash as hex, its writer's epoch).
struct PositionRow {
  std::uint64_t next_offset = 0;
  std::uint64_t seq = 0;
  std::string hash;  // 64 hex digits
  std::uint64_t epoch = 0;
  bool operator==(const PositionRow&) const = default;
};
std::string encode(const PositionRow& row);
[[nodiscard]] Result<PositionRow> decode_position(std::string_view bytes);

// A system account's balance (`S`).
std::string encode_balance(Kobo balance);
[[nodiscard]] Result<Kobo> decode_balance(std::string_view bytes);

// An account's secret keys of one mode (`k`, docs/security.md): the current one
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

// An account's webhooks in one mode (`w`). `sequence`: how many webhook events it has had
// (every type, subscribed or not); `announced`: how many of them announced a transaction as the
// event that created it did (the rest are WebhookEventRows). The secret's rotations are named by
// their events' hashes (the secret derives from the hash, webhooks.h WebhookSecrets): `secret`
// the current one (empty before the first is issued) since `secret_at`, `previous` the one before
// it (empty when the current is the first).
struct WebhookRow {
  std::uint64_t sequence = 0;
  std::uint64_t announced = 0;
  std::string secret;
  UnixMs secret_at = 0;
  std::string previous;
  bool operator==(const WebhookRow&) const = default;
};
std::string encode(const WebhookRow& row);
[[nodiscard]] Result<WebhookRow> decode_webhook(std::string_view bytes);

// A webhook event of an account and mode announced by an event that created no record of it
// (`e<account><mode><sequence>`: a payout's success or failure): the transaction (its publicId
// and record), what it announced, where it falls among the account's other webhook events (after
// the records numbered below `position` and after `ordinal` such events before it), and the
// event that finalized it (its hash names the webhook's id, its time is the event's).
struct WebhookEventRow {
  WebhookEventType type = WebhookEventType::account_credit;
  std::uint64_t position = 0;
  std::uint64_t ordinal = 0;  // how many such events of the account and mode came before it
  RecordAt at;
  UnixMs time = 0;
  std::string hash;         // the event's, hex
  std::string transaction;  // trx-…
  bool operator==(const WebhookEventRow&) const = default;
};
std::string encode(const WebhookEventRow& row);
[[nodiscard]] Result<WebhookEventRow> decode_webhook_event(std::string_view bytes);

// A hex SHA-256 (64 digits) as its 32 bytes, and back. Asserts on text that is not one (every
// hash the views store is the chain's).
std::string hash_bytes(std::string_view hex);
std::string hash_hex(std::string_view bytes);

}  // namespace kobo::rows
