#pragma once
// Render: the API's records (API document sections 2.x, docs/architecture.md section 7) from the
// ledger's facts. The one place a record's shape is written: the views render what they return
// from their rows (projection/rows.h) on every read, webhooks send what the views render, and
// query-api answers a write with the record its command's events render, so an answer, a GET and
// a webhook cannot disagree.
//
// A record is a function of the event that created it (`_id`, derived references and session ids
// are functions of the event too: events/ledger.h), of what changed since (a wallet's balance, a
// payout's status steps), and of facts of other records that never change once made (the name
// and number of a wallet a transaction moves money from, a payout a reversal answers), which a
// RecordSource gives: the views from their rows, the writer from its state.
//
// Records are rendered as their JSON text in the form dump_json() writes (compact, members in key
// order; record_text.h writes it without building a tree). Pure functions of their inputs;
// thread-safe.

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "events/event.h"
#include "events/ledger.h"
#include "projection/rows.h"

namespace kobo::render {

// The payment processor every record names (the service is its own processor).
inline constexpr std::string_view kProcessor = "kobo";

// The facts of the wallet an opening event (WalletOpened, TransitWalletOpened,
// CollectionWalletOpened) opens; nullopt for any other event.
std::optional<WalletFacts> wallet_facts(const Event& opening);

// The facts rendering reads beyond the event it renders.
class RecordSource {
 public:
  virtual ~RecordSource() = default;
  // A wallet, transit or collection wallet (vba-…); nullopt when unknown.
  virtual std::optional<WalletFacts> wallet(std::string_view public_id) const = 0;
  // The event that initiated payout `public_id` (trx-…, a BankTransferInitiated); nullopt when
  // unknown. A payout's reversal shows what the payout paid.
  virtual std::optional<Event> payout(std::string_view public_id) const = 0;
};

// The facts an answer is rendered from besides its events: the wallets the writer read them from
// as it decided (Outcome::wallets), which it holds by reference. No answer renders a payout's
// reversal, so it has no payouts.
class DecidedFacts final : public RecordSource {
 public:
  explicit DecidedFacts(const std::vector<WalletFacts>& wallets);
  std::optional<WalletFacts> wallet(std::string_view public_id) const override;
  std::optional<Event> payout(std::string_view) const override { return std::nullopt; }

 private:
  const std::vector<WalletFacts>& wallets_;
  // A bulk transfer's answer shows many wallets, each many times: past a few, found by id.
  std::unordered_map<std::string_view, const WalletFacts*> by_id_;
};

// The records rendering `e` reads from its RecordSource.
struct RecordsRead {
  std::vector<std::string> wallets;  // vba-…: wallets_shown() (events/ledger.h)
  std::vector<std::string> payouts;  // trx-…
};
RecordsRead records_read(const Event& e);
// Whether `records` gives everything rendering `events` reads. Rendering asserts on what it needs
// and does not get (a broken log or views): a caller whose source can fail asks this first.
bool can_render(const std::vector<Event>& events, const RecordSource& records);

// ---- businesses, accounts, beneficiaries -----------------------------------------------------

struct BusinessRecords {
  std::string business;
  std::string account;
};
BusinessRecords business_records(const Event& e, const BusinessRegistered& x);
// The account record after `x`: `account` as it was (decoded: an update is rare), changed.
void update_account(nlohmann::json& account, const Event& e, const AccountUpdated& x);
// Webhook settings are of one mode. The account record keeps the test mode's as `webhooks` and
// `webhookEvents` and, once the modes were configured apart, the live mode's as `liveWebhooks` and
// `liveWebhookEvents`; before that (an account of an older kobo, whose settings both modes shared,
// or one never configured) the live mode has the test mode's. The first configuration of either
// mode parts them, each mode keeping what it had.
void configure_webhooks(nlohmann::json& account, const Event& e, const WebhooksConfigured& x);
// The account record as a key of mode `live` is shown it: that mode's webhook settings as
// `webhooks` and `webhookEvents`, the other mode's not at all.
nlohmann::json account_in_mode(nlohmann::json account, bool live);

std::string bank_account(const Event& e, const BeneficiarySaved& x);

// ---- wallets ---------------------------------------------------------------------------------

// What a wallet record shows of its KYC tier besides its row (extensions.md section 1): the
// limits in force in its partition, and the time it is shown at, whose Lagos day `dailyDebitUsed`
// is of.
struct TierShown {
  const TierLimits* limits = nullptr;  // null: the CBN's table (cbn_tier_limits())
  UnixMs at = 0;
};

// A wallet, transit or collection wallet record: from the event that opened it and what changed
// since (`now`). A collection wallet shows the account number of the wallet it pays into, read
// from `records`. Asserts that `opening` opens a wallet.
std::string wallet(const Event& opening, const rows::WalletRow& now, const RecordSource& records,
                   const TierShown& tiers);
// What a wallet's row is when it opens.
rows::WalletRow opened(const Event& opening);

// ---- holds -----------------------------------------------------------------------------------

// A hold record (extensions section 2): from its HoldPlaced, what changed since (`now`), and the
// HoldCaptured events its row names, oldest first. Asserts that `placement` places a hold.
std::string hold(const Event& placement, const rows::HoldRow& now, std::span<const Event> captures);
// What a hold's row is when it is placed.
rows::HoldRow placed(const Event& placement);

// ---- transactions ----------------------------------------------------------------------------

// What the views list and count a transaction under (view_keys.h), as the record shows it.
struct Listed {
  TransactionId id;
  AccountId account;
  std::string reference;
  std::uint64_t number = 0;
  UnixMs created = 0;
  Entry entry = Entry::debit;
  TransactionStatus status = TransactionStatus::success;
  std::int64_t amount = 0;
};
// The transactions `e` creates, in transactions_created() order, as created. A reversal's account
// is its payout's, read from `records`.
std::vector<Listed> listed(const Event& e, const RecordSource& records);

// Transaction number `index` of those `e` creates (transactions_created() order) after the status
// steps `steps`, oldest first. `shown`: the status the record shows instead of its own (an answer's,
// docs/architecture.md section 7). Wallets and the payout a reversal answers are read from
// `records`.
std::string transaction(const Event& e, std::size_t index, std::span<const rows::StatusStep> steps,
                        const RecordSource& records, std::optional<TransactionStatus> shown = std::nullopt);

// A line of a wallet's statement (extensions section 4): what transaction number `index` of
// those `e` creates (its wallet posting) shows of itself. `fee`: what a payout's debit adds to
// its amount (0 for every other line). `counterparty`: the other side of the movement.
struct StatementLine {
  TransactionId transaction;
  std::string reference;
  UnixMs created = 0;
  Entry entry = Entry::debit;
  Kobo fee;
  std::string narration;
  struct Counterparty {
    std::string public_id;
    std::string account_name;
    std::string account_number;
    std::string bank_name;
  } counterparty;
};
StatementLine statement_line(const Event& e, std::size_t index, const RecordSource& records);

// ---- webhooks --------------------------------------------------------------------------------

// The body of a webhook event (docs/webhooks.md): `{"data","event","sequence"}` with `data` the
// transaction record's text, members in key order, so the bytes are what dump_json() writes of
// them. Deliveries send it and GET /v1/events shows it.
std::string webhook_body(WebhookEventType type, std::uint64_t sequence, std::string_view transaction_text);
// The webhook's id (x-kobo-event-id, webhook-id: the same on every attempt): evt-… derived from
// the hash of the event that finalized the transaction and the transaction's id.
std::string webhook_event_id(std::string_view event_hash, std::string_view transaction);

// ---- answers ---------------------------------------------------------------------------------

// The record with publicId `id` among those `events` (one command's, as appended) create, as the
// command left it: the answer to the command. `shown` as for transaction(). Nullopt when none of
// them creates it.
std::optional<std::string> created_record(const std::vector<Event>& events, std::string_view id,
                                          const RecordSource& records, const TierShown& tiers,
                                          std::optional<TransactionStatus> shown = std::nullopt);

}  // namespace kobo::render
