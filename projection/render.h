#pragma once
// Render: the API's records (schemas/openapi.yaml, docs/architecture.md section 7) from
// the ledger's facts. The one place a record's shape is written: the views render what they return from their
// rows (projection/rows.h) on every read, webhooks send what the views render, and query-api answers a write
// with the record its command's events render, so an answer, a GET and a webhook cannot disagree.
//
// A record is a function of the event that created it (`_id`, derived references and session ids
// are functions of the event too: events/ledger.h), of what changed since (a wallet's balance, a
// payout's status steps), and of facts of other records that never change once made (the name
// and number of a wallet a transaction moves money from, a payout a reversal answers), which a
// RecordSource gives: the views from their rows, the writer from its state.
//
// Records are rendered as their JSON text (compact, members in key order: record_text.h writes it
// without building a tree), written by the one JSON writer (common/json_writer.h); so are the
// answers' shapes that are not one record (a bulk transfer's, a statement's page and its CSV
// lines, an events list). Pure functions of their inputs; thread-safe.

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/json_writer.h"
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

// The account (acc-…) whose transactions `e` creates or finalizes: the one the event names
// (owner_account(), events/ledger.h), else, for a payout's later facts, the payout's. nullopt when
// `e` names none and is no payout's status change, or `records` lacks the payout.
std::optional<std::string> transactions_owner(const Event& e, const RecordSource& records);

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
bool can_render(std::span<const Event> events, const RecordSource& records);

// ---- businesses, accounts, beneficiaries -----------------------------------------------------

struct BusinessRecords {
  std::string business;
  std::string account;
};
BusinessRecords business_records(const Event& e, const BusinessRegistered& x);
// An account record: from its business's BusinessRegistered and what changed since (`now`), as a
// key of mode `live` is shown it: that mode's webhook settings (rows.h AccountRow), the other's not.
std::string account(const Event& registered, const rows::AccountRow& now, bool live);

std::string bank_account(const Event& e, const BeneficiarySaved& x);

// ---- wallets ---------------------------------------------------------------------------------

// What a wallet record shows of its KYC tier besides its row (docs/architecture.md, KYC tiers): the
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

// What a statement shows of a line: `line` and its row (the movement, signed, and the balance
// after it). Its amount is the movement less the fee a payout's debit adds.
std::int64_t statement_amount(const StatementLine& line, const rows::StatementRow& row);
// The line in a statement's page (GET …/statement, JSON): {amount, balanceAfter, counterparty,
// createdAt, entry, fee, narration, reference, transaction}.
void statement_line_json(JsonWriter& w, const StatementLine& line, const rows::StatementRow& row);
// The line as a CSV row (RFC 4180, CRLF), under kStatementCsvHeader. A field with a comma, a
// quote or a line break is quoted; text a spreadsheet would run as a formula (= + - @, a tab)
// is prefixed with ' (OWASP).
void statement_line_csv(std::string& out, const StatementLine& line, const rows::StatementRow& row);
inline constexpr std::string_view kStatementCsvHeader =
    "createdAt,reference,transaction,entry,amount,fee,narration,counterparty,balanceAfter\r\n";
// A statement's page: the window it covers, its totals, and `lines`, the page's lines as one JSON
// array's text (statement_line_json()).
struct StatementTotals {
  UnixMs from = 0;
  UnixMs to = 0;
  Kobo opening;
  Kobo closing;
  Kobo credits;
  Kobo debits;
};
std::string statement_page(std::string_view wallet, const StatementTotals& totals, std::string_view lines);
// A wallet's balance at a time (GET …/balance): {at, balance, wallet}.
std::string balance(std::string_view wallet, UnixMs at, Kobo balance);

// ---- bulk transfers --------------------------------------------------------------------------

// A bulk transfer's answer (extensions section 5): {publicId, reference, atomic, items: [{index,
// reference, statusCode, message, transaction}]}, one item per item of the request, in its order
// (members in the API document's order, not key order). Made from the bulk's events: its
// BulkTransferAccepted first, then its accepted items' events (any other event is skipped).
// The items may be written in pieces, on several threads (write_items() is const).
class BulkAnswer {
 public:
  // What an item's statusCode and message say.
  struct ItemShown {
    unsigned status;
    std::string_view message;
  };
  // An accepted item's transaction record, from its event; nullopt when it could not be read.
  using Record = std::function<std::optional<std::string>(const Event&)>;
  // What a refused item shows for the rejection it names (BulkItemRejected::reason): the API's
  // table, which is query-api's.
  using Refused = ItemShown (*)(std::string_view reason);

  // Asserts that `events` are a bulk's as described above. Holds them by reference.
  explicit BulkAnswer(const std::vector<Event>& events);
  std::size_t items() const {
    // validate() refuses a bulk of no items, and the constructor asserts an event per item.
    KOBO_ASSERT(!item_event_.empty(), "a bulk has an item at least");
    return item_event_.size();
  }
  // Items [from, to), comma-separated, appended to `out`; false when a record could not be read.
  bool write_items(std::size_t from, std::size_t to, const Record& record, ItemShown accepted,
                   Refused refused, std::string& out) const;
  // The answer, its items being `pieces` (write_items()' texts, in order) joined.
  std::string text(std::span<const std::string> pieces) const;

 private:
  const BulkTransferAccepted& bulk_;
  std::vector<const Event*> item_event_;               // an accepted item's event, in request order
  std::vector<const BulkItemRejected*> item_refused_;  // a refused item's refusal
};

// ---- events ----------------------------------------------------------------------------------

// One webhook event as GET /v1/events lists it: {body, createdAt, event, id, sequence}, `body`
// being its webhook_body() text.
void webhook_event(JsonWriter& w, std::uint64_t sequence, std::string_view id, WebhookEventType type,
                   UnixMs time, std::string_view body);

// ---- name enquiry ----------------------------------------------------------------------------

// What validating an account answers (POST /v1/transactions/validate-account): the beneficiary
// it would be saved as, with the name enquiry's reference and the time it was made.
struct NameEnquiry {
  std::string_view public_id;  // bka-…: the beneficiary's id, were it saved
  std::string_view business;
  std::string_view account;
  bool live = false;
  std::string_view account_name;
  std::string_view account_number;
  std::string_view bank_name;
  std::string_view bank_code;
  std::string_view nibss_code;
  bool own_bank = false;       // a wallet of the service's own bank (beneficiaryType vba)
  std::string_view reference;  // ner-…
  UnixMs at = 0;
};
std::string name_enquiry(const NameEnquiry& n);

// ---- webhooks --------------------------------------------------------------------------------

// The body of a webhook event (docs/webhooks.md): `{"data","event","sequence"}` with `data` the
// transaction record's text, members in key order, as every record's. Deliveries send it and
// GET /v1/events shows it.
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
