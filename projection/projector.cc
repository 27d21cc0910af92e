#include "projection/projector.h"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <functional>
#include <stdexcept>
#include <unordered_map>

#include "common/json_dump.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/thread.h"
#include "events/chain.h"
#include "events/fact_codec.h"
#include "events/keys.h"
#include "events/ledger.h"
#include "projection/render.h"
#include "projection/rows.h"
#include "projection/view_keys.h"

namespace kobo {

using nlohmann::json;

namespace {

struct ProjectorMetrics {
  metrics::Histogram& lag_seconds = metrics::registry().histogram(
      "kobo_projection_lag_seconds",
      "Time from an event's decision (just before its append) until the views show it");
  metrics::Gauge& last_lag =
      metrics::registry().gauge("kobo_projection_lag_last_seconds", "Lag of the most recently applied event");
  metrics::Histogram& batch_events = metrics::registry().histogram(
      "kobo_projection_batch_events", "Events per view WriteBatch", "", metrics::size_buckets());
};

ProjectorMetrics& projector_metrics() {
  static ProjectorMetrics m;
  return m;
}

// A read of the views that failed while an event was being applied. Thrown inside the batch,
// where rendering (render.h's RecordSource) has no error path, and turned back into a Status by
// the Applier, the batch's one caller: it never leaves this file.
class ViewsReadFailed : public std::runtime_error {
 public:
  explicit ViewsReadFailed(Status status)
      : std::runtime_error(status.message()), status_(std::move(status)) {}
  const Status& status() const { return status_; }

 private:
  Status status_;
};

}  // namespace

// The view changes not yet written. Rows that a later event of the batch may read back (view
// tags in kReadBack: balances, transaction rows, facts, accounts, positions) are kept in an overlay
// by key, as the bytes they are stored as (rows.h), and changed by decoding, changing and encoding
// them. Everything else is written once and never read back (listings, indexes, counters' keys):
// it is appended, key and value, to one buffer, with no allocation per key, and a later change
// of the same key wins at the flush. Counters are changed without reading them, their changes
// summed until the flush and merged into them there. At the flush the writes go into the
// WriteBatch in key order, each key once, which makes RocksDB's memtable inserts much cheaper
// than in the order the events made them.
class Projector::Batch {
 public:
  explicit Batch(Views& views) : views_(views) {}

  void put(const std::string& key, std::string value) {
    if (read_back(key))
      writes_.insert_or_assign(key, std::move(value));
    else
      append(key, value, /*erased=*/false);
  }
  // Only keys never read back are erased (a listing a transaction leaves).
  void erase(const std::string& key) {
    KOBO_ASSERT(!read_back(key), "an erased view key is one the batch reads back");
    append(key, {}, /*erased=*/true);
  }
  // Adds `delta` to the counter at `key` (view_keys.h: decimal text; absent is 0), unread: the
  // batch's deltas are written as merge operands (view_counter_merge in views.h). A counter the
  // batch touched is written even when its deltas cancel, so that it exists whatever the batches.
  void count(const std::string& key, std::int64_t delta) { counts_[key] += delta; }
  void put(const std::string& key, const json& record) { put(key, dump_json(record)); }

  void apply(const Event& e);

  bool empty() const { return appended_at_.empty(); }
  std::size_t events() const { return appended_at_.size(); }
  void count_event(const Event& e) { appended_at_.push_back(e.time); }

  // Writes the batch; its events are visible from here on, which is when their lag ends.
  // `again`: the batch failed to write before and the views were reopened since. A write can
  // fail after reaching the views' write-ahead log (an acknowledgement lost), and the reopen then
  // recovers it; the batch is not written twice, as its counter changes would count twice.
  [[nodiscard]] Status flush(bool again = false) {
    for (const auto& [key, row] : webhooks_) writes_.insert_or_assign(key, rows::encode(row));
    webhooks_.clear();
    if ((!writes_.empty() || !appended_.empty() || !counts_.empty()) && !(again && landed())) {
      rocksdb::WriteBatch wb = write_batch();
      if (auto s = views_.write(wb); !s) return s;  // the batch stays, to be written again
    }
    const UnixMs now = now_ms();
    for (const UnixMs t : appended_at_)
      projector_metrics().lag_seconds.observe(static_cast<double>(now - t) / 1000.0);
    if (!appended_at_.empty())
      projector_metrics().last_lag.set(static_cast<double>(now - appended_at_.back()) / 1000.0);
    writes_.clear();
    appended_.clear();
    bytes_.clear();
    counts_.clear();
    appended_at_.clear();
    return {};
  }

 private:
  // Every change of the batch, in key order.
  rocksdb::WriteBatch write_batch() const {
    enum class Kind { put, erase, merge };  // merge: a counter's change
    struct Change {
      std::string_view key;
      std::string_view value;
      Kind kind;
    };
    std::vector<Change> changes;
    changes.reserve(writes_.size() + appended_.size() + counts_.size());
    std::vector<std::string> deltas;  // reserved first: the changes point into it
    deltas.reserve(counts_.size());
    for (const auto& [key, value] : writes_) changes.push_back({key, value, Kind::put});
    for (const Appended& a : appended_)
      changes.push_back({std::string_view(bytes_).substr(a.at, a.key_size),
                         std::string_view(bytes_).substr(a.at + a.key_size, a.value_size),
                         a.erased ? Kind::erase : Kind::put});
    for (const auto& [key, n] : counts_)
      changes.push_back({key, deltas.emplace_back(std::to_string(n)), Kind::merge});
    // Stable: of the changes of one key (only appended keys repeat), the last is written.
    std::stable_sort(changes.begin(), changes.end(),
                     [](const Change& a, const Change& b) { return a.key < b.key; });
    rocksdb::WriteBatch wb;
    for (std::size_t i = 0; i < changes.size(); ++i) {
      const Change& c = changes[i];
      if (i + 1 < changes.size() && changes[i + 1].key == c.key) continue;
      const rocksdb::Slice key(c.key.data(), c.key.size());
      const rocksdb::Slice value(c.value.data(), c.value.size());
      const auto s = c.kind == Kind::merge ? wb.Merge(key, value)
                     : c.kind == Kind::put ? wb.Put(key, value)
                                           : wb.Delete(key);
      KOBO_ASSERT(s.ok(), "WriteBatch change");
    }
    return wb;
  }

  // Whether the views hold this batch already: the log positions it moves, written with it in
  // one WriteBatch, are what they hold. Every batch of events moves one.
  bool landed() const {
    bool moved = false;
    for (const auto& [key, value] : writes_) {
      if (!view_keys::is_position(key)) continue;
      const auto stored = views_.read(key);
      if (!stored.ok() || stored.value() != value) return false;
      moved = true;
    }
    return moved;
  }

  // The record at `key` as this batch sees it, to change in place (it is written at the flush).
  std::string& edit(const std::string& key, const char* missing) {
    auto it = writes_.find(key);
    if (it == writes_.end()) {
      auto value = views_.read(key);
      if (!value) throw ViewsReadFailed(value.status());
      KOBO_ASSERT(value.value().has_value(), missing);
      it = writes_.emplace(key, std::move(*value.value())).first;
    }
    return it->second;
  }
  // Changes a record that needs more than top-level members replaced: decoded, changed, dumped.
  template <typename Fn>
  void edit_decoded(const std::string& key, const char* missing, Fn&& change) {
    std::string& bytes = edit(key, missing);
    json record = json::parse(bytes);
    change(record);
    bytes = dump_json(record);
  }
  struct TransactionIndex;
  class Records;
  void apply_postings(const Event& e, const std::vector<Posting>& postings);
  void change_wallet(const WalletId& id, const std::function<void(rows::WalletRow&)>& change);
  void put_transactions(const Event& e, const Records& records);
  void advance_transaction(const Event& e, const StatusChange& change, const Records& records);
  void open_wallet(const Event& e, const WalletId& id, const std::string& account_number);
  void list_record(char kind, const Event& e, std::uint64_t id, std::string_view public_id,
                   std::initializer_list<std::string> filters);
  void close_collection(const WalletId& id, CollectionStatus status, UnixMs time);
  void place_hold(const Event& e, const HoldPlaced& x);
  void change_hold(const Event& e, const HoldId& id, std::optional<HoldStatus> ended,
                   const HoldCaptured* capture);
  void list_hold(const Event& placed, Seq seq, const HoldPlaced& x, HoldStatus status, std::int64_t delta);
  void add_held(const std::string& wallet, Kobo delta, UnixMs time);
  rows::WebhookRow& webhook_row(const std::string& account, bool live);
  void number_webhook_events(const Event& e, const Records& records);
  void rotate_webhook_secret(const Event& e, const WebhookSecretRotated& x);
  void change_account_keys(const std::string& account, bool live,
                           const std::function<void(rows::AccountKeysRow&)>& change);
  void roll_key(const Event& e, const SecretKeyRolled& x);
  void revoke_key(const Event& e, const SecretKeyRevoked& x);
  void index_transaction(const TransactionIndex& t);
  void count_transaction(const TransactionIndex& t, std::int64_t delta);
  void reindex_transaction(const TransactionIndex& before, const TransactionIndex& after);

  Views& views_;
  // The view tags (view_keys.h) of rows a later event of a batch may read back (`w`: an
  // account's webhook row, which numbers its events; `k`: an account's keys).
  static bool read_back(std::string_view key) {
    return !key.empty() && std::string_view("bTEAWPOUwk").find(key.front()) != std::string_view::npos;
  }
  void append(std::string_view key, std::string_view value, bool erased) {
    appended_.push_back(Appended{bytes_.size(), static_cast<std::uint32_t>(key.size()),
                                 static_cast<std::uint32_t>(value.size()), erased});
    bytes_.append(key);
    bytes_.append(value);
  }
  struct Appended {
    std::size_t at;  // in bytes_: the key, then the value
    std::uint32_t key_size, value_size;
    bool erased;
  };

  std::unordered_map<std::string, std::string> writes_;  // rows read back: key -> value
  // Webhook rows changed by the batch, decoded; encoded into writes_ at the flush.
  std::unordered_map<std::string, rows::WebhookRow> webhooks_;
  std::vector<Appended> appended_;                        // everything else, in the order changed
  std::string bytes_;                                     // appended_'s keys and values
  std::unordered_map<std::string, std::int64_t> counts_;  // counter key -> its change
  std::vector<UnixMs> appended_at_;  // Event::time of each event applied since the last flush
};

// What the indexes of a transaction need: its listed members (render::Listed) as it is now.
struct Projector::Batch::TransactionIndex {
  render::Listed t;
  std::string business;
  bool live = false;

  // The list's single-value filters it is listed under (an `f` listing each), and all those it
  // is counted under (view_keys.h).
  std::array<std::string, 3> listed_filters() const {
    return {view_keys::transaction_filter::entry(to_string(t.entry)),
            view_keys::transaction_filter::status(to_string(t.status)),
            view_keys::transaction_filter::amount(t.amount)};
  }
  std::array<std::string, 5> counted_filters() const {
    auto listed = listed_filters();
    return {view_keys::transaction_filter::all(), view_keys::transaction_filter::day(t.created / kMsPerDay),
            std::move(listed[0]), std::move(listed[1]), std::move(listed[2])};
  }
  std::uint64_t created() const { return static_cast<std::uint64_t>(t.created); }
};

void Projector::Batch::index_transaction(const TransactionIndex& x) {
  const render::Listed& t = x.t;
  put(view_keys::transaction_id(x.business, x.live, t.number), t.id.value);
  put(view_keys::transaction_reference(t.account.value, x.live, t.reference), t.id.value);
  put(view_keys::transaction_list(x.business, x.live, x.created(), t.number),
      rows::encode(rows::ListedRow{t.entry, t.status, t.amount, t.id.value}));
  for (const std::string& filter : x.listed_filters())
    put(view_keys::transaction_filtered(x.business, x.live, filter, x.created(), t.number), t.id.value);
}

void Projector::Batch::count_transaction(const TransactionIndex& x, std::int64_t delta) {
  for (const std::string& filter : x.counted_filters())
    count(view_keys::transaction_count(x.business, x.live, filter), delta);
}

// A transaction whose status (or any listed member) changed: out of the listings and counts of
// what it was, into those of what it is.
void Projector::Batch::reindex_transaction(const TransactionIndex& before, const TransactionIndex& after) {
  const auto was = before.listed_filters();
  const auto is = after.listed_filters();
  for (std::size_t i = 0; i < was.size(); ++i) {
    if (was[i] == is[i]) continue;
    erase(view_keys::transaction_filtered(before.business, before.live, was[i], before.created(),
                                          before.t.number));
    count(view_keys::transaction_count(before.business, before.live, was[i]), -1);
    count(view_keys::transaction_count(after.business, after.live, is[i]), +1);
  }
  index_transaction(after);
}

namespace {

template <typename T>
T decoded(Result<T> r) {
  if (!r) throw ViewsReadFailed(r.status());
  return std::move(r).value();
}

}  // namespace

// The facts this batch sees, for what applying an event reads: what the batch wrote, else what
// the views hold.
class Projector::Batch::Records final : public render::RecordSource {
 public:
  explicit Records(Batch& batch) : batch_(batch) {}
  std::optional<WalletFacts> wallet(std::string_view id) const override {
    const auto fact = find(view_keys::wallet(id));
    if (!fact) return std::nullopt;
    return render::wallet_facts(decoded(decode_fact(*fact)));
  }
  std::optional<Event> payout(std::string_view id) const override {
    const auto row = find(view_keys::transaction(id));
    if (!row) return std::nullopt;
    const auto t = decoded(rows::decode_transaction(*row));
    const auto fact = find(view_keys::event_fact(t.partition.value, t.seq.value));
    KOBO_ASSERT(fact.has_value(), "a transaction row names an event the views do not have");
    return decoded(decode_fact(*fact));
  }
  // The event the transaction row `row` names.
  Event event_of(const rows::TransactionRow& row) const {
    const auto fact = find(view_keys::event_fact(row.partition.value, row.seq.value));
    KOBO_ASSERT(fact.has_value(), "a transaction row names an event the views do not have");
    return decoded(decode_fact(*fact));
  }

 private:
  std::optional<std::string> find(const std::string& key) const {
    if (auto it = batch_.writes_.find(key); it != batch_.writes_.end()) return it->second;
    auto value = batch_.views_.read(key);
    if (!value) throw ViewsReadFailed(value.status());
    return std::move(value.value());
  }
  Batch& batch_;
};

void Projector::Batch::apply_postings(const Event& e, const std::vector<Posting>& postings) {
  // Which of the event's transactions a wallet posting is (events/ledger.h: one per wallet posting).
  std::uint32_t wallet_postings = 0;
  const auto debit = tier_debit(e.data);  // counted toward the source's daily allowance
  for (const Posting& p : postings) {
    if (!is_wallet_account(p.account)) {
      put(view_keys::system_balance(e.partition.value, p.account), json{{"balance", p.balance.value}});
      continue;
    }
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
    put(view_keys::statement_line(p.account, w.movements),
        rows::encode(rows::StatementRow{w.moved_at, e.partition, e.seq, wallet_postings, p.amount, w.balance,
                                        w.credited}));
    ++wallet_postings;
    bytes = rows::encode(w);
  }
}

void Projector::Batch::put_transactions(const Event& e, const Records& records) {
  const auto created = render::listed(e, records);
  if (created.empty()) return;
  put(view_keys::event_fact(e.partition.value, e.seq.value), encode_fact(e));
  for (std::uint32_t k = 0; k < created.size(); ++k) {
    const TransactionIndex index{created[k], e.business, e.live};
    index_transaction(index);
    count_transaction(index, +1);
    put(view_keys::transaction(created[k].id.value),
        rows::encode(rows::TransactionRow{e.partition, e.seq, k, {}}));
  }
}

void Projector::Batch::advance_transaction(const Event& e, const StatusChange& change,
                                           const Records& records) {
  std::string& bytes = edit(view_keys::transaction(change.transaction.value),
                            "status change of a transaction the views do not have");
  rows::TransactionRow row = decoded(rows::decode_transaction(bytes));
  const Event created = records.event_of(row);
  const auto all = render::listed(created, records);
  KOBO_ASSERT(row.index < all.size(), "a transaction row names a transaction its event does not create");
  TransactionIndex before{all[row.index], created.business, created.live};
  if (!row.steps.empty()) before.t.status = row.steps.back().status;
  KOBO_ASSERT(before.t.status == change.from, "status change from a status the transaction is not in");
  row.steps.push_back(rows::StatusStep{change.to, e.time});
  bytes = rows::encode(row);
  TransactionIndex after = before;
  after.t.status = change.to;
  reindex_transaction(before, after);
}

void Projector::Batch::open_wallet(const Event& e, const WalletId& id, const std::string& account_number) {
  put(view_keys::account_number(account_number), id.value);
  put(view_keys::wallet(id.value), encode_fact(e));
  put(view_keys::wallet_row(id.value), rows::encode(render::opened(e)));
}

// A new wallet or beneficiary (`kind` w or d) in the listings of its list's filters, counted:
// under all, and under each of `filters` (view_keys.h). Records of these kinds never change
// what they are filtered by.
void Projector::Batch::list_record(char kind, const Event& e, std::uint64_t id, std::string_view public_id,
                                   std::initializer_list<std::string> filters) {
  const auto add = [&](const std::string& filter) {
    put(view_keys::record_listed(kind, e.business, e.live, filter, id), std::string(public_id));
    count(view_keys::record_count(kind, e.business, e.live, filter), +1);
  };
  add(view_keys::record_filter::all());
  for (const std::string& filter : filters) add(filter);
}

void Projector::Batch::apply(const Event& e) {
  const Records records(*this);
  if (const auto* postings = postings_of(e.data)) {
    put_transactions(e, records);
    apply_postings(e, *postings);  // counts a transfer's debit toward its source's day too
  } else if (const auto debit = tier_debit(e.data)) {  // a debit that moves no money yet: a hold's
    change_wallet(WalletId(debit->wallet),
                  [&](rows::WalletRow& w) { w.debits = w.debits.plus(lagos_day(e.time), debit->amount); });
  }
  if (const auto change = status_change(e.data)) advance_transaction(e, *change, records);
  number_webhook_events(e, records);
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
          auto r = render::business_records(e, x);
          put(view_keys::business(e.business), std::move(r.business));
          put(view_keys::account(x.account.value), std::move(r.account));
          put(view_keys::account_list(e.business, x.id), x.account.value);
          put(view_keys::key_owner(x.test_secret_key_hash),
              rows::encode(rows::KeyRow{e.business, x.account.value, false}));
          put(view_keys::key_owner(x.live_secret_key_hash),
              rows::encode(rows::KeyRow{e.business, x.account.value, true}));
          put(view_keys::account_keys(x.account.value, false),
              rows::encode(rows::AccountKeysRow{x.test_signing_key.value_or(""),
                                                {{x.test_secret_key_hash, e.time, 0}}}));
          put(view_keys::account_keys(x.account.value, true),
              rows::encode(rows::AccountKeysRow{x.live_signing_key.value_or(""),
                                                {{x.live_secret_key_hash, e.time, 0}}}));
        } else if constexpr (std::is_same_v<T, SecretKeyRolled>) {
          roll_key(e, x);
        } else if constexpr (std::is_same_v<T, SecretKeyRevoked>) {
          revoke_key(e, x);
        } else if constexpr (std::is_same_v<T, BusinessSuspended>) {
          put(view_keys::suspended(e.business), x.reason.value_or(""));
        } else if constexpr (std::is_same_v<T, BusinessResumed>) {
          erase(view_keys::suspended(e.business));
        } else if constexpr (std::is_same_v<T, WebhooksConfigured>) {
          edit_decoded(view_keys::account(x.account.value), "webhooks of an account the views do not have",
                       [&](json& a) { render::configure_webhooks(a, e, x); });
        } else if constexpr (std::is_same_v<T, SigningKeySealed>) {
          change_account_keys(x.account.value, e.live,
                              [&](rows::AccountKeysRow& k) { k.signing_key = x.signing_key; });
        } else if constexpr (std::is_same_v<T, AccountUpdated>) {
          edit_decoded(view_keys::account(x.account.value), "update of an account the views do not have",
                       [&](json& a) { render::update_account(a, e, x); });
        } else if constexpr (std::is_same_v<T, WalletOpened>) {
          open_wallet(e, x.wallet, x.account_number);
          list_record('w', e, x.id, x.wallet.value,
                      {view_keys::record_filter::of('c', to_string(x.category)),
                       view_keys::record_filter::of('f', "false")});  // no wallet is a favourite yet
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
          change_hold(e, x.hold, std::nullopt, &x);
        } else if constexpr (std::is_same_v<T, HoldVoided>) {
          change_hold(e, x.hold, HoldStatus::voided, nullptr);
        } else if constexpr (std::is_same_v<T, HoldExpired>) {
          change_hold(e, x.hold, HoldStatus::expired, nullptr);
        } else if constexpr (std::is_same_v<T, BeneficiarySaved>) {
          list_record('d', e, x.id, x.bank_account.value,
                      {view_keys::record_filter::of('b', to_string(x.beneficiary_type)),
                       view_keys::record_filter::of('n', x.account_name)});
          put(view_keys::bank_account(x.bank_account.value), encode_fact(e));
        } else if constexpr (std::is_same_v<T, WebhookSecretRotated>) {
          rotate_webhook_secret(e, x);
        } else if constexpr (std::is_same_v<T, BulkTransferAccepted>) {
          put(view_keys::event_fact(e.partition.value, e.seq.value), encode_fact(e));
          put(view_keys::bulk(x.batch.value),
              rows::encode(rows::BulkRow{e.partition, e.seq, e.command_size}));
        }
      },
      e.data);
}

// The account's webhook row of that mode as this batch has it (a new account has none yet).
rows::WebhookRow& Projector::Batch::webhook_row(const std::string& account, bool live) {
  const std::string key = view_keys::webhook(account, live);
  if (auto it = webhooks_.find(key); it != webhooks_.end()) return it->second;
  rows::WebhookRow row;
  if (auto it = writes_.find(key); it != writes_.end()) {
    row = decoded(rows::decode_webhook(it->second));
  } else {
    auto stored = views_.read(key);
    if (!stored) throw ViewsReadFailed(stored.status());
    if (stored.value()) row = decoded(rows::decode_webhook(*stored.value()));
  }
  return webhooks_.emplace(key, std::move(row)).first->second;
}

// Every transaction the event finalizes is the next webhook event of its account in the event's
// mode, whether any URL or subscription wants it (docs/webhooks.md, "Sequence"): the fact of it
// is numbered here, and its body is rendered on read.
void Projector::Batch::number_webhook_events(const Event& e, const Records& records) {
  const auto finalized = transactions_finalized(e.data);
  if (finalized.empty()) return;
  // The account is the one the event names, else (a payout's later facts) the payout's.
  std::string account = std::visit(
      [](const auto& x) -> std::string {
        if constexpr (requires { x.account.value; })
          return x.account.value;
        else
          return {};
      },
      e.data);
  if (account.empty()) {
    const auto change = status_change(e.data);
    KOBO_ASSERT(change.has_value(), "a finalized transaction of an event that names no account");
    const auto payout = records.payout(change->transaction.value);
    KOBO_ASSERT(payout.has_value(), "a status change of a payout the views do not have");
    account = std::visit(
        [](const auto& x) -> std::string {
          if constexpr (requires { x.account.value; })
            return x.account.value;
          else
            return {};
        },
        payout->data);
    KOBO_ASSERT(!account.empty(), "a payout of no account");
  }
  for (const FinalizedTransaction& f : finalized) {
    const auto type = webhook_event_of(f);
    if (!type) continue;
    rows::WebhookRow& row = webhook_row(account, e.live);
    row.sequence += 1;
    put(view_keys::webhook_event(account, e.live, row.sequence),
        rows::encode(rows::WebhookEventRow{*type, e.partition, e.seq, e.time, e.hash, f.id.value}));
    std::string numbered;  // view_keys.h: <sequence:8><account>
    view_keys::put_be(numbered, row.sequence);
    numbered += account;
    put(view_keys::webhook_event_of(f.id.value), std::move(numbered));
  }
}

void Projector::Batch::rotate_webhook_secret(const Event& e, const WebhookSecretRotated& x) {
  rows::WebhookRow& row = webhook_row(x.account.value, e.live);
  row.previous = std::move(row.secret);
  row.secret = e.hash;
  row.secret_at = e.time;
}

void Projector::Batch::change_account_keys(const std::string& account, bool live,
                                           const std::function<void(rows::AccountKeysRow&)>& change) {
  std::string& bytes =
      edit(view_keys::account_keys(account, live), "the keys of an account the views do not have");
  rows::AccountKeysRow k = decoded(rows::decode_account_keys(bytes));
  change(k);
  bytes = rows::encode(k);
}

// A roll: the new key is current; the one current until now is accepted until its overlap ends
// (refused at once when it ends now); keys whose overlap ended are forgotten, rows and all.
void Projector::Batch::roll_key(const Event& e, const SecretKeyRolled& x) {
  const std::string& account = x.account.value;
  const UnixMs until = x.previous_key_expires_at.ms;
  change_account_keys(account, e.live, [&](rows::AccountKeysRow& k) {
    std::vector<rows::AccountKey> kept{{x.secret_key_hash, e.time, 0}};
    for (std::size_t i = 0; i < k.keys.size(); ++i) {
      rows::AccountKey key = k.keys[i];
      if (i == 0) key.expires_at = until;  // the previous key
      if (key.expires_at <= e.time) {
        erase(view_keys::key_owner(key.hash));
        continue;
      }
      if (i == 0)
        put(view_keys::key_owner(key.hash), rows::encode(rows::KeyRow{e.business, account, e.live, until}));
      kept.push_back(std::move(key));
    }
    k.keys = std::move(kept);
    k.signing_key = x.signing_key;
  });
  put(view_keys::key_owner(x.secret_key_hash), rows::encode(rows::KeyRow{e.business, account, e.live, 0}));
}

// A revocation: the key is refused from now on. A key the account no longer has (revoked twice,
// or its overlap ended) changes nothing.
void Projector::Batch::revoke_key(const Event& e, const SecretKeyRevoked& x) {
  change_account_keys(x.account.value, e.live, [&](rows::AccountKeysRow& k) {
    for (std::size_t i = 0; i < k.keys.size(); ++i) {
      if (key_id_of_hash(k.keys[i].hash) != x.key_id) continue;
      erase(view_keys::key_owner(k.keys[i].hash));
      if (i == 0) k.signing_key.clear();  // query-api refuses this: a log may hold it all the same
      k.keys.erase(k.keys.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
  });
}

void Projector::Batch::change_wallet(const WalletId& id,
                                     const std::function<void(rows::WalletRow&)>& change) {
  std::string& bytes = edit(view_keys::wallet_row(id.value), "a change to a wallet the views do not have");
  rows::WalletRow w = decoded(rows::decode_wallet(bytes));
  change(w);
  bytes = rows::encode(w);
}

void Projector::Batch::close_collection(const WalletId& id, CollectionStatus status, UnixMs time) {
  change_wallet(id, [&](rows::WalletRow& w) {
    KOBO_ASSERT(w.status == CollectionStatus::pending, "collection status change out of order");
    w.status = status;
    w.updated = time;
  });
}

// A hold (placed by `placed`, the event at `seq`) in the listings of its list's filters
// (view_keys.h), counted: `delta` +1 lists it under `status`, -1 takes it out of that status's
// listings. It is listed under all and its source once, when it is placed: a hold's status changes
// once, its source never.
void Projector::Batch::list_hold(const Event& placed, Seq seq, const HoldPlaced& x, HoldStatus status,
                                 std::int64_t delta) {
  namespace f = view_keys::hold_filter;
  const auto created = static_cast<std::uint64_t>(placed.time);
  const auto change = [&](const std::string& filter) {
    const std::string key = view_keys::hold_listed(placed.business, placed.live, filter, created, seq.value);
    if (delta > 0)
      put(key, x.hold.value);
    else
      erase(key);
    count(view_keys::hold_count(placed.business, placed.live, filter), delta);
  };
  const std::string_view s = to_string(status);
  if (status == HoldStatus::pending && delta > 0) {
    change(f::all());
    change(f::source(x.source.value));
  }
  change(f::status(s));
  change(f::source_status(x.source.value, s));
}

// A hold placed (`delta` > 0) or releasing (< 0) at `time`: its source's availableBalance changes,
// and so its updatedAt.
void Projector::Batch::add_held(const std::string& wallet, Kobo delta, UnixMs time) {
  change_wallet(WalletId(wallet), [&](rows::WalletRow& w) {
    w.held += delta;
    KOBO_ASSERT(w.held.value >= 0 && w.held <= w.balance, "a wallet's holds reserve more than it has");
    w.updated = time;
  });
}

void Projector::Batch::place_hold(const Event& e, const HoldPlaced& x) {
  put(view_keys::hold(x.hold.value), encode_fact(e));
  put(view_keys::hold_row(x.hold.value),
      rows::encode(rows::HoldRow{e.partition, e.seq, Kobo(0), HoldStatus::pending, e.time, {}}));
  list_hold(e, e.seq, x, HoldStatus::pending, +1);
  add_held(x.source.value, x.amount, e.time);
}

// A capture (`capture`) or an end (`ended`: voided, expired) of a pending hold. The capture's
// postings are applied as any transfer's; here the hold releases what it captured, and an end
// releases what remains.
void Projector::Batch::change_hold(const Event& e, const HoldId& id, std::optional<HoldStatus> ended,
                                   const HoldCaptured* capture) {
  const Event placed =
      decoded(decode_fact(edit(view_keys::hold(id.value), "a change of a hold the views do not have")));
  const auto* x = std::get_if<HoldPlaced>(&placed.data);
  KOBO_ASSERT(x != nullptr, "a hold's fact is its placement");
  std::string& bytes = edit(view_keys::hold_row(id.value), "a change of a hold the views do not have");
  rows::HoldRow row = decoded(rows::decode_hold(bytes));
  KOBO_ASSERT(row.status == HoldStatus::pending, "a change of a hold that has ended");
  Kobo released;
  if (capture != nullptr) {
    const Kobo amount = capture->postings.at(1).amount;
    row.captured += amount;
    released = amount;
    row.captures.push_back(e.seq);
    if (capture->final.value_or(false) || row.captured == x->amount) ended = HoldStatus::captured;
  }
  KOBO_ASSERT(row.captured <= x->amount, "a hold's captures sum above its amount");
  if (ended) {
    released += x->amount - row.captured;
    // The fact form has no seq (events/fact_codec.h): the row keeps the placement's.
    list_hold(placed, row.placed, *x, HoldStatus::pending, -1);
    row.status = *ended;
    list_hold(placed, row.placed, *x, *ended, +1);
  }
  row.updated = e.time;
  bytes = rows::encode(row);
  add_held(x->source.value, -released, e.time);
}

Projector::Projector(EventLog& log, Views& views, ProjectorOptions options)
    : log_(log),
      views_(views),
      options_(options),
      batch_(std::make_unique<Batch>(views)),
      applied_(std::make_unique<std::atomic<std::uint64_t>[]>(log.partitions())) {
  KOBO_ASSERT(log.partitions() == views.partitions(), "log and views disagree on partitions");
}

Projector::~Projector() { stop(); }

// Hands accepted events to the batch; the follower does the reading and the chain rule.
class Projector::Applier final : public LogVisitor {
 public:
  explicit Applier(Batch& batch) : batch_(batch) {}
  // A views read that fails ends the step with its error (the batch, half applied, is never
  // written: the projection starts again from the views' positions, start_again()).
  Status accepted(const Event& e) override {
    try {
      batch_.apply(e);
    } catch (const ViewsReadFailed& failed) {
      return failed.status();
    }
    batch_.count_event(e);
    return {};
  }
  Disposition refused(const RefusedRecord& r) override {
    const Disposition d = LogVisitor::refused(r);
    if (d == Disposition::stop) refused_ = true;
    return d;
  }
  // Whether the step ended on a record of the log it refuses (a broken chain, say): reading
  // again would meet the same record.
  bool refused_log() const { return refused_; }

 private:
  Batch& batch_;
  bool refused_ = false;
};

Status Projector::start() {
  if (auto s = catch_up(); !s) return s;
  thread_ = std::thread([this] { run(); });
  return {};
}

void Projector::stop() {
  stopping_.store(true);
  if (thread_.joinable()) thread_.join();
  answer_waiters(/*all=*/true);
}

bool Projector::wait_applied(Partition p, Seq seq, std::chrono::milliseconds timeout) const {
  waiting_.fetch_add(1);
  const struct Done {
    std::atomic<int>& waiting;
    ~Done() { waiting.fetch_sub(1); }
  } done{waiting_};
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return applied_seq(p) >= seq || !healthy_.load(); }) &&
         applied_seq(p) >= seq;
}

void Projector::when_applied(Partition p, Seq seq, std::chrono::milliseconds timeout,
                             std::function<void(bool)> then) {
  if (applied_seq(p) >= seq) return then(true);
  {
    std::lock_guard lock(waiters_mu_);
    // Checked again under the lock that answer_waiters takes after each publish, so a seq
    // applied in between is never missed; a stopped projection answers at once.
    if (applied_seq(p) < seq && healthy_.load() && !stopping_.load()) {
      waiters_.push_back(Waiter{p, seq, std::chrono::steady_clock::now() + timeout, std::move(then)});
      waiting_.fetch_add(1);
      return;
    }
  }
  then(applied_seq(p) >= seq);
}

void Projector::answer_waiters(bool all) {
  std::vector<std::pair<std::function<void(bool)>, bool>> due;
  {
    std::lock_guard lock(waiters_mu_);
    const auto now = std::chrono::steady_clock::now();
    const bool stopped = all || !healthy_.load();
    std::erase_if(waiters_, [&](Waiter& w) {
      const bool applied = applied_seq(w.partition) >= w.seq;
      if (!applied && !stopped && w.deadline > now) return false;
      due.emplace_back(std::move(w.then), applied);
      return true;
    });
    waiting_.fetch_sub(static_cast<int>(due.size()));
  }
  for (auto& [then, applied] : due) then(applied);
}

void Projector::sleep_answering_waiters(std::chrono::milliseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (!stopping_.load() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(kWaiterTick, until - std::chrono::steady_clock::now()));
    answer_waiters();
  }
}

std::string Projector::fault() const {
  std::lock_guard lock(fault_mu_);
  return fault_;
}

void Projector::set_fault(std::string fault) {
  std::lock_guard lock(fault_mu_);
  fault_ = std::move(fault);
}

// The projector thread's boundary: nothing thrown below it may end the process through
// std::terminate. An exception stops the projection as a log it cannot apply does: logged,
// healthy() false, and fault() naming it, which /readyz reports.
void Projector::run() {
  name_this_thread("kobo-projector");
  if (options_.nice)
    if (const Status s = set_this_thread_nice(*options_.nice); !s)
      log::warn("the projector runs at the priority it started with; the views may lag further under load",
                {{"error", s.message()}});
  try {
    follow();
  } catch (const std::exception& e) {
    stopped("projection stopped: an exception reached the projector's thread", e.what());
  } catch (...) {
    stopped("projection stopped: an exception reached the projector's thread", "not a std::exception");
  }
}

void Projector::stopped(std::string_view what, const std::string& error) {
  log::error(what, {{"error", error}});
  halt(error);
}

void Projector::halt(const std::string& error) {
  set_fault("the projection stopped: " + error);
  healthy_.store(false);  // waiters are answered at once from here on
  cv_.notify_all();
  answer_waiters();
}

void Projector::follow() {
  while (!stopping_.load()) {
    if (batch_unwritten_) {
      // The views could not be written (a full disk, an I/O error): the batch waits, the views
      // are reopened to clear RocksDB's error, and the same batch is written again, every
      // second until it goes through. Reads go on meanwhile; the views only lag.
      sleep_answering_waiters(std::chrono::seconds(1));
      Status s = views_.reopen();
      if (s) s = batch_->flush(/*again=*/true);
      if (!s) {
        set_fault(std::string(s.kind() == ErrorKind::no_space ? "the views' disk is full: "
                                                              : "the views cannot be written: ") +
                  s.message());
        continue;
      }
      batch_unwritten_ = false;
      set_fault({});
      log::info("the views are written again");
      publish_applied();
      continue;
    }
    if (auto s = step(std::chrono::milliseconds(100)); !s) {
      if (batch_unwritten_) {
        log::warn("the views cannot be written; retrying", {{"error", s.message()}});
        set_fault(std::string(s.kind() == ErrorKind::no_space ? "the views' disk is full: "
                                                              : "the views cannot be written: ") +
                  s.message());
        continue;
      }
      if (log_refused_) {
        stopped("projection stopped: the log cannot be applied", s.message());
        return;
      }
      start_again(s);
      continue;
    }
    answer_waiters();  // their deadlines
  }
}

void Projector::start_again(const Status& failed) {
  log::warn("the projection cannot read on; it starts again from the views' positions",
            {{"error", failed.message()}});
  halt(failed.message());
  batch_ = std::make_unique<Batch>(views_);
  follower_.reset();
  Status opened;
  do {
    sleep_answering_waiters(std::chrono::seconds(1));
    if (stopping_.load()) return;
    opened = open_follower();
    if (!opened) set_fault("the projection stopped: " + opened.message());
  } while (!opened);
  set_fault({});
  healthy_.store(true);
  log::info("the projection goes on");
}

void Projector::publish_applied() {
  {
    std::lock_guard lock(mu_);
    const auto& cursors = follower_->cursors();
    for (std::uint32_t p = 0; p < cursors.size(); ++p)
      applied_[p].store(cursors[p].chain.last_seq().value, std::memory_order_release);
  }
  cv_.notify_all();
  answer_waiters();
}

Status Projector::open_follower() {
  const auto read = views_.positions();
  if (!read) return read.status();
  const std::vector<ViewPosition>& positions = read.value();
  std::vector<FollowCursor> cursors;
  for (std::uint32_t p = 0; p < positions.size(); ++p) {
    FollowCursor c;
    c.chain = ChainFollower(positions[p].last_seq, positions[p].last_hash, positions[p].epoch);
    c.next_offset = positions[p].next_offset;
    cursors.push_back(std::move(c));
    applied_[p].store(positions[p].last_seq.value, std::memory_order_release);
  }
  positions_written_.clear();  // the first flush writes every partition's position
  auto follower = std::make_unique<LogFollower>(log_, LogFollowerOptions{options_.poll_records_max});
  if (auto s = follower->open(std::move(cursors)); !s) return s;
  follower_ = std::move(follower);
  return {};
}

Status Projector::catch_up() {
  auto ends = log_.end_offsets();
  if (!ends) return ends.status();
  return catch_up_to(ends.value());
}

Status Projector::catch_up_to(const std::vector<Offset>& until) {
  if (!follower_) {
    if (auto s = open_follower(); !s) return s;
  }
  if (until.size() != follower_->partitions())
    return Status::error("catch_up_to needs one offset per partition");
  auto ends = log_.end_offsets();
  if (!ends) return ends.status();
  for (std::uint32_t p = 0; p < until.size(); ++p)
    if (until[p] > ends.value()[p])
      return Status::error("partition " + std::to_string(p) + ": cannot apply the log to offset " +
                           std::to_string(until[p].value) + ", it ends at " +
                           std::to_string(ends.value()[p].value));
  while (!follower_->reached(until)) {
    if (auto s = step(std::chrono::milliseconds(100), &until); !s) return s;
  }
  if (follower_->mid_command()) return Status::error("catch_up_to stopped in the middle of a command");
  return {};
}

Status Projector::step(std::chrono::milliseconds wait, const std::vector<Offset>* until) {
  Applier applier(*batch_);
  auto consumed = follower_->step(applier, wait, until);
  log_refused_ = applier.refused_log();
  if (!consumed) return consumed.status();
  if (follower_->mid_command()) return {};  // the rest of the command is in the log: read it first
  if (batch_->empty() && consumed.value() == 0) return {};
  if (until == nullptr && options_.flush_spacing.count() > 0) {
    space_flush();
    // What the log gained meanwhile joins this flush, whole commands only.
    do {
      consumed = follower_->step(applier, std::chrono::milliseconds(0), until);
      if (!consumed) return consumed.status();
    } while (follower_->mid_command() && consumed.value() > 0);
    if (follower_->mid_command()) return {};
  }
  // The positions go into the same WriteBatch as the view changes they reflect; a partition
  // whose position did not move since the last flush keeps the one the views hold.
  const auto& cursors = follower_->cursors();
  const bool all = positions_written_.size() != cursors.size();
  positions_written_.resize(cursors.size());
  for (std::uint32_t p = 0; p < cursors.size(); ++p) {
    const FollowCursor& c = cursors[p];
    ViewPosition now{c.next_offset, c.chain.last_seq(), c.chain.last_hash(), c.chain.epoch()};
    if (!all && positions_written_[p] == now) continue;
    positions_written_[p] = std::move(now);
    batch_->put(view_keys::position(p), json{{"offset", c.next_offset.value},
                                             {"seq", c.chain.last_seq().value},
                                             {"hash", c.chain.last_hash()},
                                             {"epoch", c.chain.epoch().value}});
  }
  projector_metrics().batch_events.observe(static_cast<double>(batch_->events()));
  if (auto s = batch_->flush(); !s) {
    positions_written_.clear();
    batch_unwritten_ = true;
    return s;
  }
  last_flush_ = std::chrono::steady_clock::now();
  publish_applied();
  return {};
}

void Projector::space_flush() {
  constexpr auto kCheck = std::chrono::microseconds(250);  // how soon a new waiter is seen
  const auto due = last_flush_ + options_.flush_spacing;
  for (auto now = std::chrono::steady_clock::now(); now < due && waiting_.load() == 0 && !stopping_.load();
       now = std::chrono::steady_clock::now())
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(kCheck, due - now));
}

}  // namespace kobo
