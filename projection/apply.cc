#include "projection/apply.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>

#include "events/fact_codec.h"
#include "events/keys.h"
#include "events/limits.h"
#include "projection/render.h"
#include "projection/view_keys.h"

namespace kobo {

namespace l = view_keys::list;

namespace {

// A read of the views that failed (or a row that did not decode, or a row the log says exists and
// the views do not have) while an event was applied. Thrown inside the batch, where rendering
// (render.h's RecordSource) has no error path, and turned back into a Status by apply(), its one
// caller: it never leaves this file.
class ViewsReadFailed : public std::runtime_error {
 public:
  explicit ViewsReadFailed(Status status) : std::runtime_error(status.message()), status_(std::move(status)) {
    // apply() answers it: an ok status would pass a batch half applied as applied.
    KOBO_ASSERT(!status_.ok(), "a read that failed has its error");
  }
  const Status& status() const { return status_; }

 private:
  Status status_;
};

template <typename T>
T decoded(Result<T> r) {
  if (!r) throw ViewsReadFailed(r.status());
  return std::move(r).value();
}

// A row that earlier events of the log wrote, missing: views damaged or not this log's. The
// projection stops and says so (Projector::fault()) rather than ending the process.
[[noreturn]] void missing_row(const char* what) {
  throw ViewsReadFailed(Status::error(std::string("the views miss a row: ") + what));
}

bool final_status(TransactionStatus s) {
  return s == TransactionStatus::success || s == TransactionStatus::failed;
}

}  // namespace

// A transaction an event creates, as the lists see it (render::Listed) and where it is.
struct ViewBatch::Created {
  render::Listed t;
  std::uint64_t number = 0;  // in its scope's transaction list
};

// The facts this batch sees, for what applying an event reads: what the batch wrote, else what
// the views hold.
class ViewBatch::Records final : public render::RecordSource {
 public:
  explicit Records(ViewBatch& batch) : batch_(batch) {}
  std::optional<WalletFacts> wallet(std::string_view id) const override {
    const auto fact = batch_.find(view_keys::wallet(id));
    if (!fact) return std::nullopt;
    return render::wallet_facts(decoded(decode_fact(*fact)));
  }
  std::optional<Event> payout(std::string_view id) const override {
    const auto row = batch_.find(view_keys::transaction(id));
    if (!row) return std::nullopt;
    const auto t = decoded(rows::decode_transaction(*row));
    KOBO_ASSERT(t.scope.size() == view_keys::kScopeSize, "a transaction row names its event's scope");
    return event_of(t.scope, t.at.first);
  }
  // The event of the EventRow L<scope><first>.
  Event event_of(const std::string& scope, std::uint64_t first) const {
    const auto bytes = batch_.find(view_keys::event(scope, first));
    if (!bytes) missing_row("a transaction row names an event the views do not have");
    const auto row = decoded(rows::decode_event_row(*bytes));
    return decoded(decode_fact(row.fact));
  }

 private:
  ViewBatch& batch_;
};

std::optional<std::string> ViewBatch::find(const std::string& key) const {
  KOBO_ASSERT(!key.empty(), "a view key has a tag");
  if (auto it = writes_.find(key); it != writes_.end()) return it->second.row;
  auto value = views_.read(key);
  if (!value) throw ViewsReadFailed(value.status());
  return std::move(value.value());
}

namespace {
// About what holding a row costs beyond its key's and value's bytes (a map node, string headers).
constexpr std::size_t kRowBytes = 64;
// How much the rows read back may hold between batches (ViewBatch, apply.h).
constexpr std::size_t kCarriedBytes = std::size_t{32} << 20;
}  // namespace

template <typename T>
T& ViewBatch::changed(typename Rows<T>::value_type& held, Changed<T>& list, std::size_t bytes) {
  if (!held.second.changed) {
    held.second.changed = true;
    list.push_back(&held);
    ++changed_;
    changed_bytes_ += held.first.size() + bytes + kRowBytes;
  }
  return held.second.row;
}

void ViewBatch::put(std::string key, std::string value, bool held) {
  KOBO_ASSERT(!key.empty(), "a view key has a tag");
  if (held && read_back(key)) {
    const std::size_t bytes = value.size();
    auto [it, added] = writes_.try_emplace(std::move(key));
    if (added) {
      held_bytes_ += it->first.size() + bytes + kRowBytes;
      it->second.carried = carried(it->first);
    }
    it->second.row = std::move(value);
    changed<std::string>(*it, changed_writes_, bytes);
    return;
  }
  appended_.push_back(Appended{bytes_.size(), static_cast<std::uint32_t>(key.size()),
                               static_cast<std::uint32_t>(value.size())});
  bytes_ += key;
  bytes_ += value;
  KOBO_ASSERT(bytes_.size() == appended_.back().at + appended_.back().key_size + appended_.back().value_size,
              "an appended change ends the batch's bytes");
}

// The row at `key` as this batch sees it, to change in place (it is written with the batch).
std::string& ViewBatch::edit(const std::string& key, const char* missing) {
  KOBO_ASSERT(read_back(key), "a row edited in place is one the batch reads back");
  auto it = writes_.find(key);
  if (it == writes_.end()) {
    auto value = views_.read_to_change(key);
    if (!value) throw ViewsReadFailed(value.status());
    if (!value.value()) missing_row(missing);
    held_bytes_ += key.size() + value.value()->size() + kRowBytes;
    it = writes_.emplace(key, Held<std::string>{std::move(*value.value()), false, carried(key)}).first;
  }
  return changed<std::string>(*it, changed_writes_, it->second.row.size());
}

bitmap::Chunk& ViewBatch::chunk(const std::string& bitmap, std::uint64_t number) {
  // Looked up by a key written into one reused buffer: most marks find a chunk the batch holds.
  view_keys::bitmap_chunk(chunk_key_, bitmap, bitmap::chunk_of(number));
  auto it = chunks_.find(std::string_view(chunk_key_));
  if (it == chunks_.end()) {
    Result<std::optional<std::string>> stored = std::optional<std::string>();
    if (!written_chunks_ || written_chunks_->may_hold(KeyHash()(chunk_key_)))
      stored = views_.read_to_change(chunk_key_);
    if (!stored) throw ViewsReadFailed(stored.status());
    bitmap::Chunk c;
    if (stored.value()) c = decoded(bitmap::decode(*stored.value()));
    held_bytes_ += sizeof(bitmap::Chunk) + chunk_key_.size() + kRowBytes;
    // A chunk the views do not have yet is carried only once a later batch reads it back: most
    // are a new amount's, which no later record may share.
    it = chunks_.emplace(chunk_key_, Held<bitmap::Chunk>{c, false, stored.value().has_value()}).first;
  }
  return changed<bitmap::Chunk>(*it, changed_chunks_, sizeof(bitmap::Chunk));
}

void ViewBatch::mark(const std::string& bitmap, std::uint64_t number, bool on) {
  bitmap::Chunk& c = chunk(bitmap, number);
  const std::uint32_t bit = bitmap::bit_of(number);
  KOBO_ASSERT(c.test(bit) != on,
              on ? "a record put twice in a list's bitmap" : "a record taken from a bitmap it is not in");
  if (on)
    c.set(bit);
  else
    c.clear(bit);
  KOBO_ASSERT(c.test(bit) == on, "a record's bit is as it was marked");
}

rows::ListRow& ViewBatch::list(char kind, const std::string& scope) {
  std::string key = view_keys::list_row(kind, scope);
  auto it = lists_.find(key);
  if (it == lists_.end()) {
    auto stored = views_.read_to_change(key);
    if (!stored) throw ViewsReadFailed(stored.status());
    rows::ListRow row;
    if (stored.value()) row = decoded(rows::decode_list(*stored.value()));
    held_bytes_ += key.size() + sizeof(rows::ListRow) + kRowBytes;
    it = lists_.emplace(std::move(key), Held<rows::ListRow>{row}).first;
  }
  rows::ListRow& row = changed<rows::ListRow>(*it, changed_lists_, sizeof(rows::ListRow));
  KOBO_ASSERT(row.displaced <= row.count, "a list displaces no more records than it holds");
  return row;
}

std::pair<std::uint64_t, UnixMs> ViewBatch::add_to_list(char kind, const std::string& scope,
                                                        std::uint32_t records, UnixMs time) {
  KOBO_ASSERT(records >= 1 && records <= rows::kRecordsPerEventMax, "an event adds 1 to 3 records to a list");
  rows::ListRow& row = list(kind, scope);
  const std::uint64_t first = row.count;
  // The records' latest time is the list's latest or theirs; a time before the list's latest is
  // a clock that went back: the records are displaced (list_index.h).
  const UnixMs delay = std::max<UnixMs>(0, row.latest - time);
  if (row.count == 0 || time > row.latest) row.latest = time;
  row.count += records;
  if (delay > 0) {
    row.displaced += records;
    const std::string displaced = view_keys::bitmap(kind, scope, l::kDisplaced, l::value(""));
    for (std::uint32_t k = 0; k < records; ++k) mark(displaced, first + k, true);
  }
  KOBO_ASSERT(row.count >= first + records && row.displaced <= row.count, "a list's count went back");
  return {first, delay};
}

rows::WebhookRow& ViewBatch::webhook_row(const std::string& account, bool live) {
  std::string key = view_keys::webhook(account, live);
  auto it = webhooks_.find(key);
  if (it == webhooks_.end()) {
    rows::WebhookRow row;
    auto stored = views_.read_to_change(key);
    if (!stored) throw ViewsReadFailed(stored.status());
    if (stored.value()) row = decoded(rows::decode_webhook(*stored.value()));
    KOBO_ASSERT(row.announced <= row.sequence, "an account announces no more webhook events than it has");
    held_bytes_ += key.size() + sizeof(rows::WebhookRow) + kRowBytes;
    it = webhooks_.emplace(std::move(key), Held<rows::WebhookRow>{std::move(row)}).first;
  }
  return changed<rows::WebhookRow>(*it, changed_webhooks_, sizeof(rows::WebhookRow));
}

// The account an event's transactions are of: the one the event names, else (a payout's later
// facts) the payout's.
std::string ViewBatch::owner_account(const Event& e, const Records& records) const {
  auto owner = render::transactions_owner(e, records);
  KOBO_ASSERT(owner.has_value(), "transactions of an event with an account, or of a payout the views have");
  return std::move(*owner);
}

// The transactions `e` creates: its EventRow (under the number of its first record), a row per
// transaction under its publicId, its reference, and its bits in the list's bitmaps.
std::vector<ViewBatch::Created> ViewBatch::put_transactions(const Event& e, const std::string& scope,
                                                            const Records& records) {
  const auto listed = render::listed(e, records);
  std::vector<Created> out;
  if (listed.empty()) return out;
  const std::string account = listed.front().account.value;
  const std::uint64_t webhooks_before = webhook_row(account, e.live).sequence;
  const auto [first, delay] =
      add_to_list(l::kTransactions, scope, static_cast<std::uint32_t>(listed.size()), e.time);
  // A later event reads a transaction's row, and its event's, only to move a payout on from a
  // status that is not final (advance_transaction, number_webhook_events); the rows of an event
  // whose records are all final are appended, not held (a wallet transfer's, most of them).
  const bool changes_later = std::any_of(listed.begin(), listed.end(),
                                         [](const render::Listed& t) { return !final_status(t.status); });
  put(view_keys::event(scope, first),
      rows::encode_event(rows::hash_bytes(e.hash), delay, webhooks_before, encode_fact(e)), changes_later);
  for (std::uint32_t k = 0; k < listed.size(); ++k) {
    const render::Listed& t = listed[k];
    KOBO_ASSERT(t.account.value == account, "an event's transactions are of one account");
    const std::uint64_t n = first + k;
    const rows::RecordAt at{first, k};
    // A record found from its event needs no row of its own (views.h transaction_row): one whose
    // id derives from the event's first record's, when all are final (a payout's record changes
    // and keeps its row); and a reference derived from the record's own id.
    if (k == 0 || changes_later || first_of_nth(t.id, k) != listed.front().id)
      put(view_keys::transaction(t.id.value), rows::encode(rows::TransactionRow{scope, at, {}, 0}),
          changes_later);
    if (record_of_derived_reference(t.reference) != t.id)
      put(view_keys::transaction_reference(t.account.value, e.live, t.reference), rows::encode(at));
    mark(view_keys::bitmap(l::kTransactions, scope, l::kEntry, l::value(to_string(t.entry))), n, true);
    mark(view_keys::bitmap(l::kTransactions, scope, l::kStatus, l::value(to_string(t.status))), n, true);
    mark(view_keys::bitmap(l::kTransactions, scope, l::kAmount, l::value(t.amount)), n, true);
    out.push_back(Created{t, n});
  }
  KOBO_ASSERT(out.size() == listed.size() && out.size() <= rows::kRecordsPerEventMax,
              "every record of the event is in its list");
  return out;
}

void ViewBatch::apply_postings(const Event& e, const std::vector<Posting>& postings,
                               const std::vector<Created>& created) {
  // Which of the event's transactions a wallet posting is (events/ledger.h: one per wallet posting).
  std::uint32_t wallet_postings = 0;
  const auto debit = tier_debit(e.data);  // counted toward the source's daily allowance
  for (const Posting& p : postings) {
    if (!is_wallet_account(p.account)) {
      put(view_keys::system_balance(e.partition.value, p.account), rows::encode_balance(p.balance));
      continue;
    }
    KOBO_ASSERT(wallet_postings < created.size(), "a wallet posting that creates no transaction");
    std::string& bytes = edit(view_keys::wallet_row(p.account), "posting to a wallet the views do not have");
    rows::WalletRow w = decoded(rows::decode_wallet(bytes));
    const PostingResult r = post(w.balance, p);
    KOBO_ASSERT(r.fault == PostingFault::none, "a posting the views cannot apply");
    w.balance = r.balance;
    w.updated = e.time;
    // The wallet's statement: this posting is its next movement (rows.h StatementRow).
    w.movements += 1;
    if (p.amount.value > 0) w.credited = Kobo(w.credited.value + p.amount.value);
    w.moved_at = std::max(w.moved_at, e.time);
    if (debit && wallet_postings == 0 && p.account == debit->wallet)
      w.debits = w.debits.plus(lagos_day(e.time), debit->amount);
    const Created& t = created[wallet_postings];
    put(view_keys::statement_line(p.account, w.movements),
        rows::encode(rows::StatementRow{w.moved_at, rows::RecordAt{created.front().number, wallet_postings},
                                        p.amount, w.balance, w.credited}));
    KOBO_ASSERT(t.number == created.front().number + wallet_postings,
                "an event's records are numbered in order");
    ++wallet_postings;
    bytes = rows::encode(w);
  }
  KOBO_ASSERT(wallet_postings == created.size(), "an event's transactions are its wallet postings");
}

// A payout moves to another status: its row gains the step, and its number moves from the old
// status's bitmap to the new one's. The record and its event are not rewritten.
void ViewBatch::advance_transaction(const Event& e, const StatusChange& change, const Records& records) {
  std::string& bytes = edit(view_keys::transaction(change.transaction.value),
                            "status change of a transaction the views do not have");
  rows::TransactionRow row = decoded(rows::decode_transaction(bytes));
  const Event created = records.event_of(row.scope, row.at.first);
  const auto all = render::listed(created, records);
  KOBO_ASSERT(row.at.index < all.size(), "a transaction row names a transaction its event does not create");
  const TransactionStatus before = row.steps.empty() ? all[row.at.index].status : row.steps.back().status;
  KOBO_ASSERT(before == change.from, "status change from a status the transaction is not in");
  row.steps.push_back(rows::StatusStep{change.to, e.time});
  KOBO_ASSERT(row.steps.size() <= 2, "a payout's status changes twice at most");
  bytes = rows::encode(row);
  const std::uint64_t n = row.at.number();
  mark(view_keys::bitmap(l::kTransactions, row.scope, l::kStatus, l::value(to_string(before))), n, false);
  mark(view_keys::bitmap(l::kTransactions, row.scope, l::kStatus, l::value(to_string(change.to))), n, true);
}

// Every transaction the event finalizes is the next webhook event of its account in the event's
// mode, whether any URL or subscription wants it (docs/webhooks.md, "Sequence"). A transaction
// the event creates is announced by its event: its number joins the account's `announced`
// bitmap, and its sequence is its EventRow's count before plus its place in the event. A payout
// finalized later is announced by a WebhookEventRow of its own.
void ViewBatch::number_webhook_events(const Event& e, const std::string& scope,
                                      const std::vector<Created>& created, const Records& records) {
  const auto change = status_change(e.data);
  const bool ends_payout = change && final_status(change->to);
  bool announces = ends_payout;
  for (const Created& c : created) announces = announces || final_status(c.t.status);
  if (!announces) return;
  const std::string account = owner_account(e, records);
  rows::WebhookRow& w = webhook_row(account, e.live);
  if (ends_payout) {
    const auto type = webhook_event_of(FinalizedTransaction{change->transaction, Entry::debit, change->to});
    KOBO_ASSERT(type.has_value(), "a payout's end is a webhook event");
    std::string& bytes =
        edit(view_keys::transaction(change->transaction.value), "a payout the views do not have");
    rows::TransactionRow row = decoded(rows::decode_transaction(bytes));
    KOBO_ASSERT(row.scope == scope && row.webhook == 0, "a payout ends once, in its own scope");
    const std::uint64_t position =
        created.empty() ? list(l::kTransactions, scope).count : created.front().number;
    const std::uint64_t ordinal = w.sequence - w.announced;
    w.sequence += 1;
    row.webhook = w.sequence;
    bytes = rows::encode(row);
    put(view_keys::webhook_event(account, e.live, w.sequence),
        rows::encode(rows::WebhookEventRow{*type, position, ordinal, row.at, e.time, e.hash,
                                           change->transaction.value}));
  }
  const std::string announced =
      view_keys::bitmap(l::kTransactions, scope, l::kAnnounced, l::value(view_keys::id16(account)));
  for (const Created& c : created) {
    if (!final_status(c.t.status)) continue;
    if (!webhook_event_of(FinalizedTransaction{c.t.id, c.t.entry, c.t.status})) continue;
    w.sequence += 1;
    w.announced += 1;
    mark(announced, c.number, true);
  }
  KOBO_ASSERT(w.announced <= w.sequence, "more webhook events announced at creation than in all");
}

void ViewBatch::change_wallet(const WalletId& id, const std::function<void(rows::WalletRow&)>& change) {
  std::string& bytes = edit(view_keys::wallet_row(id.value), "a change to a wallet the views do not have");
  rows::WalletRow w = decoded(rows::decode_wallet(bytes));
  change(w);
  KOBO_ASSERT(w.balance.value >= 0, "a wallet changed into debt");
  bytes = rows::encode(w);
}

void ViewBatch::open_wallet(const Event& e, const WalletId& id, const std::string& account_number) {
  KOBO_ASSERT(!account_number.empty(), "a wallet opens with an account number");
  put(view_keys::account_number(account_number), id.value);
  put(view_keys::wallet(id.value), encode_fact(e));
  put(view_keys::wallet_row(id.value), rows::encode(render::opened(e)));
}

void ViewBatch::close_collection(const WalletId& id, CollectionStatus status, UnixMs time) {
  change_wallet(id, [&](rows::WalletRow& w) {
    KOBO_ASSERT(w.status == CollectionStatus::pending, "collection status change out of order");
    w.status = status;
    w.updated = time;
  });
}

// A new wallet or beneficiary (`kind` w or d) in its scope's list, in the bitmaps of its values
// of the list's filters. Records of these kinds never change what they are filtered by; their
// lists are ordered by number, which is their integer id's order.
void ViewBatch::list_record(char kind, const Event& e, std::string_view public_id,
                            std::initializer_list<std::pair<char, std::string>> filters) {
  KOBO_ASSERT(!public_id.empty() && (kind == l::kWallets || kind == l::kBeneficiaries),
              "a wallet or a beneficiary, listed by its id");
  const std::string scope = view_keys::scope17(e.business, e.live);
  const auto [number, delay] = add_to_list(kind, scope, 1, 0);
  KOBO_ASSERT(delay == 0, "a list ordered by number displaces nothing");
  put(view_keys::listed(kind, scope, number), rows::encode(rows::ListedRow{0, 0, std::string(public_id)}));
  for (const auto& [field, value] : filters)
    mark(view_keys::bitmap(kind, scope, field, l::value(value)), number, true);
}

// A hold placed (`delta` > 0) or releasing (< 0) at `time`: its source's availableBalance changes,
// and so its updatedAt.
void ViewBatch::add_held(const std::string& wallet, Kobo delta, UnixMs time) {
  change_wallet(WalletId(wallet), [&](rows::WalletRow& w) {
    w.held += delta;
    KOBO_ASSERT(w.held.value >= 0 && w.held <= w.balance, "a wallet's holds reserve more than it has");
    w.updated = time;
  });
}

void ViewBatch::place_hold(const Event& e, const HoldPlaced& x) {
  KOBO_ASSERT(x.amount.value > 0, "a hold reserves a positive amount");
  const std::string scope = view_keys::scope17(e.business, e.live);
  const auto [number, delay] = add_to_list(l::kHolds, scope, 1, e.time);
  put(view_keys::hold(x.hold.value), encode_fact(e));
  put(view_keys::hold_row(x.hold.value),
      rows::encode(rows::HoldRow{number, Kobo(0), HoldStatus::pending, e.time, {}}));
  put(view_keys::listed(l::kHolds, scope, number),
      rows::encode(rows::ListedRow{e.time, delay, x.hold.value}));
  mark(view_keys::bitmap(l::kHolds, scope, l::kSource, l::value(view_keys::id16(x.source.value))), number,
       true);
  mark(view_keys::bitmap(l::kHolds, scope, l::kHoldStatus, l::value(to_string(HoldStatus::pending))), number,
       true);
  add_held(x.source.value, x.amount, e.time);
}

// A capture (`capture`: the transactions it created) or an end (`ended`: voided, expired) of a
// pending hold. The capture's postings are applied as any transfer's; here the hold releases what
// it captured, and an end releases what remains.
void ViewBatch::change_hold(const Event& e, const HoldId& id, std::optional<HoldStatus> ended,
                            const std::vector<Created>* capture) {
  const Event placed =
      decoded(decode_fact(edit(view_keys::hold(id.value), "a change of a hold the views do not have")));
  const auto* x = std::get_if<HoldPlaced>(&placed.data);
  KOBO_ASSERT(x != nullptr, "a hold's fact is its placement");
  std::string& bytes = edit(view_keys::hold_row(id.value), "a change of a hold the views do not have");
  rows::HoldRow row = decoded(rows::decode_hold(bytes));
  KOBO_ASSERT(row.status == HoldStatus::pending, "a change of a hold that has ended");
  Kobo released;
  if (capture != nullptr) {
    const auto* c = std::get_if<HoldCaptured>(&e.data);
    KOBO_ASSERT(c != nullptr && !capture->empty(), "a capture is a HoldCaptured that creates transactions");
    const Kobo amount = c->legs().amount();
    row.captured += amount;
    released = amount;
    row.captures.push_back(capture->front().number);
    if (c->final.value_or(false) || row.captured == x->amount) ended = HoldStatus::captured;
  }
  KOBO_ASSERT(row.captured <= x->amount, "a hold's captures sum above its amount");
  if (ended) {
    released += x->amount - row.captured;
    const std::string scope = view_keys::scope17(placed.business, placed.live);
    mark(view_keys::bitmap(l::kHolds, scope, l::kHoldStatus, l::value(to_string(HoldStatus::pending))),
         row.number, false);
    mark(view_keys::bitmap(l::kHolds, scope, l::kHoldStatus, l::value(to_string(*ended))), row.number, true);
    row.status = *ended;
  }
  row.updated = e.time;
  KOBO_ASSERT(released.value >= 0 && released <= x->amount, "a hold releases no more than it reserved");
  bytes = rows::encode(row);
  add_held(x->source.value, -released, e.time);
}

void ViewBatch::register_business(const Event& e, const BusinessRegistered& x) {
  KOBO_ASSERT(!x.account.value.empty(), "a business registers with an account");
  put(view_keys::business(e.business), encode_fact(e));
  rows::AccountRow account;
  account.business = e.business;
  account.updated = e.time;
  put(view_keys::account(x.account.value), rows::encode(account));
  put(view_keys::account_list(e.business, x.id), x.account.value);
  put(view_keys::key_owner(x.test_secret_key_hash),
      rows::encode(rows::KeyRow{e.business, x.account.value, false}));
  put(view_keys::key_owner(x.live_secret_key_hash),
      rows::encode(rows::KeyRow{e.business, x.account.value, true}));
  put(view_keys::account_keys(x.account.value, false),
      rows::encode(
          rows::AccountKeysRow{x.test_signing_key.value_or(""), {{x.test_secret_key_hash, e.time, 0}}}));
  put(view_keys::account_keys(x.account.value, true),
      rows::encode(
          rows::AccountKeysRow{x.live_signing_key.value_or(""), {{x.live_secret_key_hash, e.time, 0}}}));
}

void ViewBatch::update_account(const Event& e, const AccountUpdated& x) {
  std::string& bytes =
      edit(view_keys::account(x.account.value), "update of an account the views do not have");
  rows::AccountRow row = decoded(rows::decode_account(bytes));
  KOBO_ASSERT(row.business == e.business, "an account is updated by an event of its business");
  if (x.webhooks || x.webhook_events) put(view_keys::account_history(x.account.value, e.seq.value), bytes);
  // Settings of both modes, as an older kobo wrote them (rows.h AccountRow).
  if (x.webhooks) row.webhooks = *x.webhooks;
  if (x.webhook_events) row.webhook_events = *x.webhook_events;
  if (x.webhooks && row.modes_apart) row.live_webhooks = *x.webhooks;
  if (x.webhook_events && row.modes_apart) row.live_webhook_events = *x.webhook_events;
  if (x.live) row.live = *x.live;
  row.updated = e.time;
  row.version += 1;
  bytes = rows::encode(row);
}

// The webhook settings of the event's mode: the first configuration parts the modes, the live
// mode keeping what it shared with the test mode until then.
void ViewBatch::configure_webhooks(const Event& e, const WebhooksConfigured& x) {
  std::string& bytes =
      edit(view_keys::account(x.account.value), "webhooks of an account the views do not have");
  rows::AccountRow row = decoded(rows::decode_account(bytes));
  KOBO_ASSERT(row.business == e.business, "an account's webhooks are configured by an event of its business");
  put(view_keys::account_history(x.account.value, e.seq.value), bytes);
  if (!row.modes_apart) {
    row.modes_apart = true;
    row.live_webhooks = row.webhooks;
    row.live_webhook_events = row.webhook_events;
  }
  auto& urls = e.live ? row.live_webhooks : row.webhooks;
  auto& events = e.live ? row.live_webhook_events : row.webhook_events;
  if (x.webhooks) urls = *x.webhooks;
  if (x.webhook_events) events = *x.webhook_events;
  row.updated = e.time;
  row.version += 1;
  bytes = rows::encode(row);
}

void ViewBatch::change_account_keys(const std::string& account, bool live,
                                    const std::function<void(rows::AccountKeysRow&)>& change) {
  std::string& bytes =
      edit(view_keys::account_keys(account, live), "the keys of an account the views do not have");
  rows::AccountKeysRow k = decoded(rows::decode_account_keys(bytes));
  change(k);
  bytes = rows::encode(k);
}

// A roll: the new key is current; the one current until now is accepted until its overlap ends
// (refused at once when it ends now). Keys whose overlap ended leave the account's list; their
// owner rows stay, refused by their expiry (the views only ever add and rewrite rows).
void ViewBatch::roll_key(const Event& e, const SecretKeyRolled& x) {
  const std::string& account = x.account.value;
  const UnixMs until = x.previous_key_expires_at.ms;
  change_account_keys(account, e.live, [&](rows::AccountKeysRow& k) {
    std::vector<rows::AccountKey> kept{{x.secret_key_hash, e.time, 0}};
    for (std::size_t i = 0; i < k.keys.size(); ++i) {
      rows::AccountKey key = k.keys[i];
      if (i == 0) {  // the previous key
        key.expires_at = until;
        put(view_keys::key_owner(key.hash), rows::encode(rows::KeyRow{e.business, account, e.live, until}));
      }
      if (key.expires_at <= e.time) continue;
      kept.push_back(std::move(key));
    }
    k.keys = std::move(kept);
    KOBO_ASSERT(!k.keys.empty() && k.keys.front().hash == x.secret_key_hash && k.keys.front().expires_at == 0,
                "the rolled-in key is the account's current one, with no expiry");
    k.signing_key = x.signing_key;
  });
  put(view_keys::key_owner(x.secret_key_hash), rows::encode(rows::KeyRow{e.business, account, e.live, 0}));
}

// A revocation: the key is refused from now on (its owner row marks it revoked). A key the
// account no longer has (revoked twice, or its overlap ended) changes nothing.
void ViewBatch::revoke_key(const Event& e, const SecretKeyRevoked& x) {
  change_account_keys(x.account.value, e.live, [&](rows::AccountKeysRow& k) {
    for (std::size_t i = 0; i < k.keys.size(); ++i) {
      if (key_id_of_hash(k.keys[i].hash) != x.key_id) continue;
      rows::KeyRow owner{e.business, x.account.value, e.live, k.keys[i].expires_at};
      owner.revoked = true;
      put(view_keys::key_owner(k.keys[i].hash), rows::encode(owner));
      if (i == 0) k.signing_key.clear();  // query-api refuses this: a log may hold it all the same
      k.keys.erase(k.keys.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
  });
}

Status ViewBatch::apply(const Event& e) {
  // The projector applies what its follower accepted: decoded, validated, extending the chain.
  KOBO_ASSERT(
      e.seq.value >= 1 && e.command_seq <= e.seq && is_partition_level(e.type()) == e.business.empty(),
      "an event applied is one the log's decoder accepted");
  try {
    apply_event(e);
  } catch (const ViewsReadFailed& failed) {
    // Half applied: the rows held may hold part of `e`, which the views do not. None is kept.
    forget();
    return failed.status();
  }
  times_.push_back(e.time);
  return {};
}

void ViewBatch::apply_event(const Event& e) {
  KOBO_ASSERT(e.seq.value >= 1 && !e.hash.empty(), "the views apply events the chain accepted");
  const Records records(*this);
  const std::string scope = view_keys::scope17(e.business, e.live);
  std::vector<Created> created;
  if (const auto* postings = postings_of(e.data)) {
    created = put_transactions(e, scope, records);
    KOBO_ASSERT(created.size() == transactions_created_count(e.data),
                "every record an event creates is listed");
    apply_postings(e, *postings, created);  // counts a transfer's debit toward its source's day too
  } else if (const auto debit = tier_debit(e.data)) {  // a debit that moves no money yet: a hold's
    change_wallet(WalletId(debit->wallet),
                  [&](rows::WalletRow& w) { w.debits = w.debits.plus(lagos_day(e.time), debit->amount); });
  }
  if (const auto change = status_change(e.data)) advance_transaction(e, *change, records);
  number_webhook_events(e, scope, created, records);
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, WriterStarted>) {
          if (x.tier_limits) put(view_keys::tier_limits(e.partition.value), rows::encode(*x.tier_limits));
        } else if constexpr (std::is_same_v<T, WalletTierChanged>) {
          change_wallet(x.wallet, [&](rows::WalletRow& w) {
            w.tier = static_cast<std::uint8_t>(x.kyc_tier.value_or(0));
            w.updated = e.time;
          });
        } else if constexpr (std::is_same_v<T, BusinessRegistered>) {
          register_business(e, x);
        } else if constexpr (std::is_same_v<T, AccountUpdated>) {
          update_account(e, x);
        } else if constexpr (std::is_same_v<T, WebhooksConfigured>) {
          configure_webhooks(e, x);
        } else if constexpr (std::is_same_v<T, SecretKeyRolled>) {
          roll_key(e, x);
        } else if constexpr (std::is_same_v<T, SecretKeyRevoked>) {
          revoke_key(e, x);
        } else if constexpr (std::is_same_v<T, SigningKeySealed>) {
          change_account_keys(x.account.value, e.live,
                              [&](rows::AccountKeysRow& k) { k.signing_key = x.signing_key; });
        } else if constexpr (std::is_same_v<T, BusinessSuspended>) {
          // `\1` and the admin's reason while suspended; empty once resumed (rows are never erased).
          put(view_keys::suspended(e.business), "\1" + x.reason.value_or(""));
        } else if constexpr (std::is_same_v<T, BusinessResumed>) {
          put(view_keys::suspended(e.business), "");
        } else if constexpr (std::is_same_v<T, BusinessRateLimitsSet>) {
          put(view_keys::rate_limits(e.business), encode_fact(e));
        } else if constexpr (std::is_same_v<T, WalletOpened>) {
          open_wallet(e, x.wallet, x.account_number);
          list_record(l::kWallets, e, x.wallet.value,
                      {{l::kCategory, std::string(to_string(x.category))},
                       {l::kFavourite, "false"}});  // no wallet is a favourite yet
        } else if constexpr (std::is_same_v<T, TransitWalletOpened> ||
                             std::is_same_v<T, CollectionWalletOpened>) {
          // Transit and collection wallets are fetched by id (they share the wallets' key space)
          // but not listed with the wallets of GET /virtual-accounts.
          open_wallet(e, x.wallet, x.account_number);
        } else if constexpr (std::is_same_v<T, CollectionWalletExpired>) {
          close_collection(x.wallet, CollectionStatus::expired, e.time);
        } else if constexpr (std::is_same_v<T, IncomingCreditReceived>) {
          if (x.collection) close_collection(*x.collection, CollectionStatus::success, e.time);
        } else if constexpr (std::is_same_v<T, HoldPlaced>) {
          place_hold(e, x);
        } else if constexpr (std::is_same_v<T, HoldCaptured>) {
          change_hold(e, x.hold, std::nullopt, &created);
        } else if constexpr (std::is_same_v<T, HoldVoided>) {
          change_hold(e, x.hold, HoldStatus::voided, nullptr);
        } else if constexpr (std::is_same_v<T, HoldExpired>) {
          change_hold(e, x.hold, HoldStatus::expired, nullptr);
        } else if constexpr (std::is_same_v<T, BeneficiarySaved>) {
          list_record(l::kBeneficiaries, e, x.bank_account.value,
                      {{l::kBeneficiaryType, std::string(to_string(x.beneficiary_type))},
                       {l::kAccountName, x.account_name}});
          put(view_keys::bank_account(x.bank_account.value), encode_fact(e));
        } else if constexpr (std::is_same_v<T, WebhookSecretRotated>) {
          rows::WebhookRow& row = webhook_row(x.account.value, e.live);
          row.previous = std::move(row.secret);
          row.secret = e.hash;
          row.secret_at = e.time;
        } else if constexpr (std::is_same_v<T, BulkTransferAccepted>) {
          // Its items' records follow in the scope's transaction list (rows.h BulkRow).
          put(view_keys::bulk(x.batch.value),
              rows::encode(rows::BulkRow{list(l::kTransactions, scope).count, encode_fact(e)}));
        }
      },
      e.data);
}

void ViewBatch::put_position(std::uint32_t p, const ViewPosition& position) {
  KOBO_ASSERT(position.last_hash.size() == 64, "a position names its chain's head");
  put(view_keys::position(p),
      rows::encode(rows::PositionRow{position.next_offset.value, position.last_seq.value, position.last_hash,
                                     position.epoch.value}));
}

std::vector<ViewBatch::Change> ViewBatch::changes() {
  encoded_.clear();
  encoded_.reserve(changed_chunks_.size() + changed_lists_.size() + changed_webhooks_.size());
  std::vector<Change> out;
  out.reserve(changed_ + appended_.size());
  for (const auto* held : changed_writes_) out.push_back({held->first, held->second.row});
  // Encoded first, then pointed at: encoded_ does not move once reserved.
  for (const auto* held : changed_chunks_) {
    encoded_.push_back(bitmap::encode(held->second.row));
    if (written_chunks_) written_chunks_->add(KeyHash()(held->first));
  }
  for (const auto* held : changed_lists_) encoded_.push_back(rows::encode(held->second.row));
  for (const auto* held : changed_webhooks_) encoded_.push_back(rows::encode(held->second.row));
  std::size_t next = 0;
  for (const auto* held : changed_chunks_) out.push_back({held->first, encoded_[next++]});
  for (const auto* held : changed_lists_) out.push_back({held->first, encoded_[next++]});
  for (const auto* held : changed_webhooks_) out.push_back({held->first, encoded_[next++]});
  KOBO_ASSERT(next == encoded_.size() && out.size() == changed_, "every row changed is a change");
  for (const Appended& a : appended_)
    out.push_back({std::string_view(bytes_).substr(a.at, a.key_size),
                   std::string_view(bytes_).substr(a.at + a.key_size, a.value_size)});
  // In key order, and of the changes of one key (only appended keys repeat) the last one last,
  // as the last is the one written. Keys compare by their first 32 bytes as four big-endian
  // integers held in the sorted entries themselves: that covers every key of a transfer (a
  // statement line's 25 bytes, an event's 26), so a comparison seldom follows a key or reaches
  // memcmp, which sorting a rebuild's large batches spent a fifth of their time in.
  constexpr std::size_t kHeadWords = 4;
  constexpr std::size_t kAhead = 8;
  struct Sorted {
    std::array<std::uint64_t, kHeadWords> head;
    std::uint32_t index;
  };
  std::vector<Sorted> order(out.size());
  for (std::uint32_t i = 0; i < out.size(); ++i) {
    // The keys lie scattered over the batch's memory: each is asked of the cache a few ahead.
    if (i + kAhead < out.size()) __builtin_prefetch(out[i + kAhead].key.data());
    const std::string_view k = out[i].key;
    Sorted& o = order[i];
    o.index = i;
    for (std::size_t w = 0; w < kHeadWords; ++w) {
      std::uint64_t word = 0;  // a key shorter than the head is padded with zeros
      const std::size_t at = w * sizeof word;
      if (at < k.size()) std::memcpy(&word, k.data() + at, std::min(sizeof word, k.size() - at));
      o.head[w] = __builtin_bswap64(word);
    }
  }
  auto tail = [&](std::uint32_t i) {
    const std::string_view k = out[i].key;
    return k.substr(std::min(kHeadWords * sizeof(std::uint64_t), k.size()));
  };
  std::sort(order.begin(), order.end(), [&](const Sorted& a, const Sorted& b) {
    for (std::size_t w = 0; w < kHeadWords; ++w)
      if (a.head[w] != b.head[w]) return a.head[w] < b.head[w];
    // Equal heads: padding is zeros, so the lengths decide between a key and its zero-extension.
    if (const int c = tail(a.index).compare(tail(b.index)); c != 0) return c < 0;
    if (out[a.index].key.size() != out[b.index].key.size())
      return out[a.index].key.size() < out[b.index].key.size();
    return a.index < b.index;
  });
  // In order, of the changes of one key the last. Keys of different heads are in strict order by
  // the sort itself, so only keys of one head are compared here: a comparison touches two keys
  // scattered over the batch's memory, a cache miss a key in a rebuild's large batches.
  std::vector<Change> sorted;
  sorted.reserve(out.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (i + 1 < order.size() && order[i].head == order[i + 1].head) {
      const int c = out[order[i].index].key.compare(out[order[i + 1].index].key);
      if (c == 0) continue;
      KOBO_ASSERT(c < 0, "a batch's changes are in strict key order");
    }
    sorted.push_back(out[order[i].index]);
  }
  out = std::move(sorted);
  return out;
}

template <typename T, typename Bytes>
void ViewBatch::settle(Rows<T>& rows, Changed<T>& list, Bytes bytes) {
  for (auto* held : list) {
    if (held->second.carried) {
      held->second.changed = false;
      continue;
    }
    held_bytes_ -= std::min(held_bytes_, held->first.size() + bytes(held->second.row) + kRowBytes);
    const auto it = rows.find(std::string_view(held->first));
    KOBO_ASSERT(it != rows.end() && &*it == held, "a changed row is one the batch holds");
    rows.erase(it);
  }
  list.clear();
}

void ViewBatch::clear() {
  settle(writes_, changed_writes_, [](const std::string& row) { return row.size(); });
  settle(chunks_, changed_chunks_, [](const bitmap::Chunk&) { return sizeof(bitmap::Chunk); });
  // A list's row and an account's webhook row are always carried.
  settle(lists_, changed_lists_, [](const rows::ListRow&) { return sizeof(rows::ListRow); });
  settle(webhooks_, changed_webhooks_, [](const rows::WebhookRow&) { return sizeof(rows::WebhookRow); });
  changed_ = 0;
  changed_bytes_ = 0;
  appended_.clear();
  bytes_.clear();
  encoded_.clear();
  times_.clear();
  // The rows carried to the next batch are what the views hold now; past kCarriedBytes (a
  // rebuild's many amounts, say), the next batch reads them again instead.
  if (held_bytes_ > kCarriedBytes) forget();
  KOBO_ASSERT(empty(), "a cleared batch has no change");
}

void ViewBatch::forget() {
  // The rows go first, with the lists that point into them; clear() then starts the batch again.
  changed_writes_.clear();
  changed_chunks_.clear();
  changed_lists_.clear();
  changed_webhooks_.clear();
  writes_.clear();
  chunks_.clear();
  lists_.clear();
  webhooks_.clear();
  held_bytes_ = 0;
  clear();
  KOBO_ASSERT(writes_.empty() && chunks_.empty(), "a forgotten batch holds nothing");
}

}  // namespace kobo
