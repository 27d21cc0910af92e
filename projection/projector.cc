#include "projection/projector.h"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "common/json_dump.h"
#include "common/log.h"
#include "common/metrics.h"
#include "events/chain.h"
#include "events/ledger.h"
#include "projection/record_bytes.h"
#include "projection/render.h"
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

// The view changes not yet written, with an overlay so that later events of the batch read what
// earlier ones wrote. Records are kept as the bytes they are stored as: a new record is rendered
// as text once, and the changes every transfer makes (a wallet's balance, a transaction's status)
// are made in those bytes (record_bytes.h) instead of parsing and dumping the record; counters
// are changed without reading them, their changes summed until the flush and merged into them
// there. The batch finds a key by its hash, and at the flush its
// writes go into the WriteBatch in key order, each key once, which makes RocksDB's memtable
// inserts much cheaper than in the order the events made them.
class Projector::Batch {
 public:
  explicit Batch(Views& views) : views_(views) {}

  void put(const std::string& key, std::string value) {
    erased_.erase(key);
    writes_.insert_or_assign(key, std::move(value));
  }
  void erase(const std::string& key) {
    writes_.erase(key);
    erased_.insert(key);
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
    if ((!writes_.empty() || !erased_.empty() || !counts_.empty()) && !(again && landed())) {
      rocksdb::WriteBatch wb = write_batch();
      if (auto s = views_.write(wb); !s) return s;  // the batch stays, to be written again
    }
    const UnixMs now = now_ms();
    for (const UnixMs t : appended_at_)
      projector_metrics().lag_seconds.observe(static_cast<double>(now - t) / 1000.0);
    if (!appended_at_.empty())
      projector_metrics().last_lag.set(static_cast<double>(now - appended_at_.back()) / 1000.0);
    writes_.clear();
    erased_.clear();
    counts_.clear();
    appended_at_.clear();
    return {};
  }

 private:
  // Every change of the batch, in key order.
  rocksdb::WriteBatch write_batch() const {
    struct Change {
      std::string_view key;
      const std::string* value;  // null: deleted
      bool delta;                // a counter's change, merged into it
    };
    std::vector<Change> changes;
    changes.reserve(writes_.size() + erased_.size() + counts_.size());
    std::vector<std::string> deltas;  // reserved first: the changes point into it
    deltas.reserve(counts_.size());
    for (const auto& [key, value] : writes_) changes.push_back({key, &value, false});
    for (const auto& key : erased_) changes.push_back({key, nullptr, false});
    for (const auto& [key, n] : counts_)
      changes.push_back({key, &deltas.emplace_back(std::to_string(n)), true});
    std::sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) { return a.key < b.key; });
    rocksdb::WriteBatch wb;
    for (const Change& c : changes) {
      const rocksdb::Slice key(c.key.data(), c.key.size());
      const auto s = c.delta ? wb.Merge(key, *c.value) : c.value ? wb.Put(key, *c.value) : wb.Delete(key);
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
  // Sets top-level members of a record to the given JSON texts: in its bytes when they are all
  // there, else decoded (the result is the same bytes either way).
  static void set_members(std::string& record,
                          std::initializer_list<std::pair<std::string_view, std::string_view>> values) {
    if (record_bytes::replace_members(record, values)) return;
    json decoded = json::parse(record);
    for (const auto& [name, text] : values) decoded[std::string(name)] = json::parse(text);
    record = dump_json(decoded);
  }

  struct TransactionIndex;
  class Records;
  void apply_postings(const Event& e, const std::vector<Posting>& postings);
  void put_transaction(std::string trx);
  void put_wallet(std::string wallet, bool listed);
  void list_record(char kind, std::string_view record, std::initializer_list<std::string> filters);
  void close_collection(const WalletId& id, CollectionStatus status, UnixMs time);
  void index_transaction(const TransactionIndex& t);
  void count_transaction(const TransactionIndex& t, std::int64_t delta);
  void reindex_transaction(const TransactionIndex& before, const TransactionIndex& after);

  Views& views_;
  std::unordered_map<std::string, std::string> writes_;   // key -> value, written at the flush
  std::unordered_set<std::string> erased_;                // keys deleted at the flush, none in writes_
  std::unordered_map<std::string, std::int64_t> counts_;  // counter key -> its change, none in writes_
  std::vector<UnixMs> appended_at_;  // Event::time of each event applied since the last flush
};

namespace {

std::uint64_t unsigned_value(std::string_view text) {
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc() && p == text.data() + text.size()) return v;
  return json::parse(text).get<std::uint64_t>();
}

}  // namespace

// What the indexes of a transaction need of its record, read from the record's text.
struct Projector::Batch::TransactionIndex {
  std::string id, business, account, reference;
  bool live = false;
  std::uint64_t number = 0;
  UnixMs created = 0;
  std::string entry, status, amount;  // JSON texts, as in the record

  explicit TransactionIndex(std::string_view record) {
    std::string_view id_text, live_text, number_text, created_text;
    const bool ok =
        record_bytes::for_each_member(record, [&](std::string_view key, std::size_t b, std::size_t e) {
          const std::string_view v = record.substr(b, e - b);
          if (key == "publicId")
            id_text = v;
          else if (key == "auth")
            business = record_bytes::string_value(v);
          else if (key == "account")
            account = record_bytes::string_value(v);
          else if (key == "reference")
            reference = record_bytes::string_value(v);
          else if (key == "live")
            live_text = v;
          else if (key == "id")
            number_text = v;
          else if (key == "createdAt")
            created_text = v;
          else if (key == "entry")
            entry = v;
          else if (key == "status")
            status = v;
          else if (key == "amount")
            amount = v;
          return true;
        });
    KOBO_ASSERT(ok && !id_text.empty() && !number_text.empty() && !created_text.empty() && !entry.empty() &&
                    !status.empty() && !amount.empty() && (live_text == "true" || live_text == "false"),
                "transaction record without its index members");
    id = record_bytes::string_value(id_text);
    live = live_text == "true";
    number = unsigned_value(number_text);
    created = created_ms(record_bytes::string_value(created_text));
  }

  // The list's single-value filters it is listed under (an `f` listing each), and all those it
  // is counted under (view_keys.h).
  std::array<std::string, 3> listed_filters() const {
    std::int64_t a = 0;
    KOBO_ASSERT(
        std::from_chars(amount.data(), amount.data() + amount.size(), a).ptr == amount.data() + amount.size(),
        "a transaction's amount is not an integer");
    return {view_keys::transaction_filter::entry(record_bytes::string_value(entry)),
            view_keys::transaction_filter::status(record_bytes::string_value(status)),
            view_keys::transaction_filter::amount(a)};
  }
  std::array<std::string, 5> counted_filters() const {
    auto listed = listed_filters();
    return {view_keys::transaction_filter::all(), view_keys::transaction_filter::day(created / kMsPerDay),
            std::move(listed[0]), std::move(listed[1]), std::move(listed[2])};
  }

  static UnixMs created_ms(const std::string& iso) {
    const auto t = parse_iso8601(iso);
    KOBO_ASSERT(t.has_value(), "transaction createdAt");
    return *t;
  }
};

void Projector::Batch::index_transaction(const TransactionIndex& t) {
  put(view_keys::transaction_id(t.business, t.live, t.number), t.id);
  put(view_keys::transaction_reference(t.account, t.live, t.reference), t.id);
  // What dump_json makes of {entry, status, amount, publicId}: members in key order.
  std::string row;
  row.reserve(64 + t.id.size() + t.entry.size() + t.status.size() + t.amount.size());
  row += "{\"amount\":";
  row += t.amount;
  row += ",\"entry\":";
  row += t.entry;
  row += ",\"publicId\":";
  append_json_string(row, t.id);
  row += ",\"status\":";
  row += t.status;
  row += '}';
  put(view_keys::transaction_list(t.business, t.live, static_cast<std::uint64_t>(t.created), t.number),
      std::move(row));
  for (const std::string& filter : t.listed_filters())
    put(view_keys::transaction_filtered(t.business, t.live, filter, static_cast<std::uint64_t>(t.created),
                                        t.number),
        t.id);
}

void Projector::Batch::count_transaction(const TransactionIndex& t, std::int64_t delta) {
  for (const std::string& filter : t.counted_filters())
    count(view_keys::transaction_count(t.business, t.live, filter), delta);
}

// A transaction whose status (or any listed member) changed: out of the listings and counts of
// what it was, into those of what it is.
void Projector::Batch::reindex_transaction(const TransactionIndex& before, const TransactionIndex& after) {
  KOBO_ASSERT(before.id == after.id && before.created == after.created && before.number == after.number,
              "a transaction changed its identity");
  const auto was = before.listed_filters();
  const auto is = after.listed_filters();
  for (std::size_t i = 0; i < was.size(); ++i) {
    if (was[i] == is[i]) continue;
    erase(view_keys::transaction_filtered(before.business, before.live, was[i],
                                          static_cast<std::uint64_t>(before.created), before.number));
    count(view_keys::transaction_count(before.business, before.live, was[i]), -1);
    count(view_keys::transaction_count(after.business, after.live, is[i]), +1);
  }
  index_transaction(after);
}

// The records this batch sees, for rendering: what the batch wrote, else what the views hold.
class Projector::Batch::Records final : public render::RecordSource {
 public:
  explicit Records(Batch& batch) : batch_(batch) {}
  std::optional<std::string> wallet(std::string_view id) const override {
    return find(view_keys::wallet(id));
  }
  std::optional<std::string> transaction(std::string_view id) const override {
    return find(view_keys::transaction(id));
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
  std::string ts;
  append_json_string(ts, format_iso8601(e.time));
  for (const Posting& p : postings) {
    if (!is_wallet_account(p.account)) {
      put(view_keys::system_balance(e.partition.value, p.account), json{{"balance", p.balance.value}});
      continue;
    }
    std::string& w = edit(view_keys::wallet(p.account), "posting to a wallet the views do not have");
    const auto stored = record_bytes::member(w, "balance");
    std::int64_t before = 0;
    if (!stored || std::from_chars(stored->data(), stored->data() + stored->size(), before).ptr !=
                       stored->data() + stored->size())
      before = json::parse(w).at("balance").get<std::int64_t>();
    const PostingResult r = post(Kobo(before), p);
    KOBO_ASSERT(r.fault == PostingFault::none, "a posting the views cannot apply");
    set_members(w, {{"balance", std::to_string(r.balance.value)}, {"updatedAt", ts}, {"lastUpdated", ts}});
  }
}

void Projector::Batch::put_transaction(std::string trx) {
  const TransactionIndex index{std::string_view(trx)};
  index_transaction(index);
  count_transaction(index, +1);
  put(view_keys::transaction(index.id), std::move(trx));
}

namespace {

// A string member of a record the projector just rendered, decoded.
std::string string_member(std::string_view record, std::string_view name) {
  return record_bytes::string_value(record_bytes::required_member(record, name));
}

}  // namespace

void Projector::Batch::put_wallet(std::string w, bool listed) {
  const std::string id = string_member(w, "publicId");
  if (listed) {
    list_record(
        'w', w,
        {view_keys::record_filter::of('c', string_member(w, "category")),
         view_keys::record_filter::of('f', std::string(record_bytes::required_member(w, "isFavourite")))});
  }
  put(view_keys::account_number(string_member(w, "accountNumber")), id);
  put(view_keys::wallet(id), std::move(w));
}

// A new wallet or beneficiary (`kind` w or d) in the listings of its list's filters, counted:
// under all, and under each of `filters` (view_keys.h). Records of these kinds never change
// what they are filtered by.
void Projector::Batch::list_record(char kind, std::string_view record,
                                   std::initializer_list<std::string> filters) {
  const auto business = string_member(record, "auth");
  const bool live = record_bytes::required_member(record, "live") == "true";
  const auto id = unsigned_value(record_bytes::required_member(record, "id"));
  const auto public_id = string_member(record, "publicId");
  const auto add = [&](const std::string& filter) {
    put(view_keys::record_listed(kind, business, live, filter, id), public_id);
    count(view_keys::record_count(kind, business, live, filter), +1);
  };
  add(view_keys::record_filter::all());
  for (const std::string& filter : filters) add(filter);
}

void Projector::Batch::apply(const Event& e) {
  const Records records(*this);
  // The records first (they snapshot the wallets as they were), then the balances.
  if (const auto* postings = postings_of(e.data)) {
    for (std::string& trx : render::transactions(e, records)) put_transaction(std::move(trx));
    apply_postings(e, *postings);
  }
  if (const auto change = status_change(e.data)) {
    const std::string key = view_keys::transaction(change->transaction.value);
    const TransactionIndex before{
        std::string_view(edit(key, "status change of a transaction the views do not have"))};
    edit_decoded(key, "", [&](json& trx) {
      KOBO_ASSERT(trx.at("status") == to_string(change->from),
                  "status change from a status the transaction is not in");
      render::advance_payout(trx, change->to, e.time);
    });
    reindex_transaction(before, TransactionIndex{std::string_view(edit(key, ""))});
  }
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, BusinessRegistered>) {
          auto r = render::business_records(e, x);
          put(view_keys::business(e.business), std::move(r.business));
          put(view_keys::account(x.account.value), std::move(r.account));
          put(view_keys::account_list(e.business, x.id), x.account.value);
          put(view_keys::key_owner(x.test_secret_key_hash),
              json{{"business", e.business}, {"account", x.account.value}, {"live", false}});
          put(view_keys::key_owner(x.live_secret_key_hash),
              json{{"business", e.business}, {"account", x.account.value}, {"live", true}});
        } else if constexpr (std::is_same_v<T, AccountUpdated>) {
          edit_decoded(view_keys::account(x.account.value), "update of an account the views do not have",
                       [&](json& a) { render::update_account(a, e, x); });
        } else if constexpr (std::is_same_v<T, WalletOpened>) {
          put_wallet(render::wallet(e, x), true);
        } else if constexpr (std::is_same_v<T, TransitWalletOpened>) {
          // Transit wallets are fetched by id but not listed with the wallets of GET /virtual-accounts.
          put_wallet(render::transit_wallet(e, x), false);
        } else if constexpr (std::is_same_v<T, CollectionWalletOpened>) {
          // Collection wallets share the wallets' key space: GET /virtual-accounts/{id} shows them.
          const auto destination = records.wallet(x.destination.value);
          KOBO_ASSERT(destination.has_value(), "a collection wallet for a wallet the views do not have");
          put_wallet(render::collection_wallet(e, x, *destination), false);
        } else if constexpr (std::is_same_v<T, CollectionWalletExpired>) {
          close_collection(x.wallet, CollectionStatus::expired, e.time);
        } else if constexpr (std::is_same_v<T, IncomingCreditReceived>) {
          if (x.collection) close_collection(*x.collection, CollectionStatus::success, e.time);
        } else if constexpr (std::is_same_v<T, BeneficiarySaved>) {
          std::string b = render::bank_account(e, x);
          list_record('d', b,
                      {view_keys::record_filter::of('b', string_member(b, "beneficiaryType")),
                       view_keys::record_filter::of('n', string_member(b, "accountName"))});
          put(view_keys::bank_account(x.bank_account.value), std::move(b));
        }
      },
      e.data);
}

void Projector::Batch::close_collection(const WalletId& id, CollectionStatus status, UnixMs time) {
  std::string& c = edit(view_keys::wallet(id.value), "collection status change out of order");
  KOBO_ASSERT(record_bytes::member(c, "status") == "\"pending\"", "collection status change out of order");
  std::string status_text, ts;
  append_json_string(status_text, to_string(status));
  append_json_string(ts, format_iso8601(time));
  set_members(c, {{"status", status_text}, {"active", "false"}, {"updatedAt", ts}});
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
  // A views read that fails stops the projection with its error (the batch, half applied, is
  // never written: the projection stops here, and a restart applies the event again).
  Status accepted(const Event& e) override {
    try {
      batch_.apply(e);
    } catch (const ViewsReadFailed& failed) {
      return failed.status();
    }
    batch_.count_event(e);
    return {};
  }

 private:
  Batch& batch_;
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
  set_fault("the projection stopped: " + error);
  healthy_.store(false);
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
      stopped("projection stopped: the log cannot be applied", s.message());
      return;
    }
    answer_waiters();  // their deadlines
  }
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
  const auto positions = views_.positions();
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
  if (!consumed) return consumed.status();
  if (follower_->mid_command()) return {};  // the rest of the command is in the log: read it first
  if (batch_->empty() && consumed.value() == 0) return {};
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
  publish_applied();
  return {};
}

}  // namespace kobo
