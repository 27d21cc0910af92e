#include "projection/projector.h"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <unordered_map>

#include "common/json_dump.h"
#include "common/log.h"
#include "common/metrics.h"
#include "events/chain.h"
#include "projection/view_keys.h"

namespace kobo {

using nlohmann::json;

namespace {

struct ProjectorMetrics {
  metrics::Histogram& lag_seconds = metrics::registry().histogram(
      "kobo_projection_lag_seconds",
      "Time from an event's decision (just before its append) until the views show it");
  metrics::Gauge& last_lag = metrics::registry().gauge("kobo_projection_lag_last_seconds",
                                                       "Lag of the most recently applied event");
  metrics::Histogram& batch_events = metrics::registry().histogram(
      "kobo_projection_batch_events", "Events per view WriteBatch", "", metrics::size_buckets());
};

ProjectorMetrics& projector_metrics() {
  static ProjectorMetrics m;
  return m;
}

}  // namespace

// The view changes not yet written, with an overlay so that later events of the batch read what
// earlier ones wrote. A record that an event changes stays decoded in the overlay until the
// flush: a wallet with many postings in a batch is parsed once and dumped once. A record that is
// only written (a new transaction) is dumped at once and parsed only if a later event of the
// batch changes it. Index entries (plain strings, never read back here) go to the WriteBatch.
class Projector::Batch {
 public:
  explicit Batch(Views& views) : views_(views) {}

  // The record at `key` as this batch sees it, to change in place (it is written at the flush);
  // nullptr when there is none.
  json* edit(const std::string& key) {
    if (auto it = records_.find(key); it != records_.end()) return &it->second;
    std::string value;
    if (auto it = dumped_.find(key); it != dumped_.end()) {
      value = std::move(it->second);
      dumped_.erase(it);
    } else {
      const auto s = views_.db().Get(rocksdb::ReadOptions(), key, &value);
      if (s.IsNotFound()) return nullptr;
      KOBO_ASSERT(s.ok(), "views read failed");
    }
    return &records_.emplace(key, json::parse(value)).first->second;
  }
  void put(const std::string& key, const std::string& index_entry) {
    KOBO_ASSERT(wb_.Put(key, index_entry).ok(), "WriteBatch put");
  }
  // `changes_soon`: a later event will likely change the record (a pending transaction, whose
  // settlement follows within milliseconds), so it stays decoded instead of being dumped now and
  // parsed again.
  void put(const std::string& key, const json& record, bool changes_soon = false) {
    if (auto it = records_.find(key); it != records_.end()) {
      if (&it->second != &record) it->second = record;
      return;
    }
    if (changes_soon) {
      dumped_.erase(key);
      records_.emplace(key, record);
    } else {
      dumped_[key] = dump_json(record);
    }
  }

  void apply(const Event& e);

  bool empty() const { return appended_at_.empty(); }
  std::size_t events() const { return appended_at_.size(); }
  void count_event(const Event& e) { appended_at_.push_back(e.time); }

  // Writes the batch; its events are visible from here on, which is when their lag ends.
  [[nodiscard]] Status flush() {
    for (const auto& [key, value] : dumped_) KOBO_ASSERT(wb_.Put(key, value).ok(), "WriteBatch put");
    for (const auto& [key, record] : records_) KOBO_ASSERT(wb_.Put(key, dump_json(record)).ok(), "WriteBatch put");
    const auto s = views_.db().Write(rocksdb::WriteOptions(), &wb_);
    if (!s.ok()) return Status::error("views write: " + s.ToString());
    const UnixMs now = now_ms();
    for (const UnixMs t : appended_at_) projector_metrics().lag_seconds.observe(static_cast<double>(now - t) / 1000.0);
    if (!appended_at_.empty())
      projector_metrics().last_lag.set(static_cast<double>(now - appended_at_.back()) / 1000.0);
    wb_.Clear();
    records_.clear();
    dumped_.clear();
    appended_at_.clear();
    return {};
  }

 private:
  void apply_posting(const Event& e, std::int64_t delta);
  void put_transaction(const json& trx);

  Views& views_;
  rocksdb::WriteBatch wb_;
  // Records written at the flush: changed ones decoded, new ones dumped. A key is in one at most.
  std::unordered_map<std::string, json> records_;
  std::unordered_map<std::string, std::string> dumped_;
  std::vector<UnixMs> appended_at_;  // Event::time of each event applied since the last flush
};

void Projector::Batch::put_transaction(const json& trx) {
  const std::string id = trx.at("publicId").get<std::string>();
  const std::string business = trx.at("auth").get<std::string>();
  const bool live = trx.at("live").get<bool>();
  const auto numeric = trx.at("id").get<std::uint64_t>();
  const auto created = parse_iso8601(trx.at("createdAt").get<std::string>());
  KOBO_ASSERT(created.has_value(), "transaction createdAt");
  put(view_keys::transaction(id), trx, /*changes_soon=*/trx.at("status") == "pending");
  put(view_keys::transaction_id(business, live, numeric), id);
  put(view_keys::transaction_reference(trx.at("account").get<std::string>(), live,
                                       trx.at("reference").get<std::string>()),
      id);
  put(view_keys::transaction_list(business, live, static_cast<std::uint64_t>(*created), numeric),
      json{{"entry", trx.at("entry")}, {"status", trx.at("status")}, {"amount", trx.at("amount")}, {"publicId", id}});
}

void Projector::Batch::apply_posting(const Event& e, std::int64_t delta) {
  const std::string account = e.data.at("ledgerAccount").get<std::string>();
  const std::string ts = format_iso8601(e.time);
  if (account.starts_with("vba-")) {
    json* w = edit(view_keys::wallet(account));
    KOBO_ASSERT(w != nullptr, "posting to a wallet the views do not have");
    (*w)["balance"] = (*w)["balance"].get<std::int64_t>() + delta;
    KOBO_ASSERT((*w)["balance"] == e.data.at("balance"), "view balance disagrees with the event");
    (*w)["updatedAt"] = ts;
    (*w)["lastUpdated"] = ts;
  } else {
    put(view_keys::system_balance(e.partition.value, account), json{{"balance", e.data.at("balance")}});
  }
  if (e.data.contains("transaction")) put_transaction(e.data.at("transaction"));
}

void Projector::Batch::apply(const Event& e) {
  const auto& d = e.data;
  switch (e.type) {
    case EventType::writer_started:
      break;
    case EventType::business_created:
      put(view_keys::business(d.at("business").at("publicId").get<std::string>()), d.at("business"));
      break;
    case EventType::account_created: {
      const auto& a = d.at("account");
      const std::string id = a.at("publicId").get<std::string>();
      const std::string business = a.at("business").get<std::string>();
      put(view_keys::account(id), a);
      put(view_keys::account_list(business, std::stoull(a.at("id").get<std::string>())), id);
      put(view_keys::key_owner(d.at("secretKeyHashes").at("test").get<std::string>()),
          json{{"business", business}, {"account", id}, {"live", false}});
      put(view_keys::key_owner(d.at("secretKeyHashes").at("live").get<std::string>()),
          json{{"business", business}, {"account", id}, {"live", true}});
      break;
    }
    case EventType::account_updated: {
      const std::string id = d.at("accountId").get<std::string>();
      json* a = edit(view_keys::account(id));
      KOBO_ASSERT(a != nullptr, "update of an account the views do not have");
      for (const auto& [k, v] : d.at("changes").items()) (*a)[k] = v;
      (*a)["updatedAt"] = d.at("updatedAt");
      (*a)["__v"] = a->at("__v").get<std::int64_t>() + 1;
      break;
    }
    case EventType::bank_account_added: {
      const auto& b = d.at("bankAccount");
      const std::string id = b.at("publicId").get<std::string>();
      put(view_keys::bank_account(id), b);
      put(view_keys::bank_account_list(b.at("auth").get<std::string>(), b.at("live").get<bool>(),
                                       b.at("id").get<std::uint64_t>()),
          id);
      break;
    }
    case EventType::collection_created: {
      // Collection wallets share the wallets' key space: GET /virtual-accounts/{id} shows them.
      const auto& c = d.at("collection");
      const std::string id = c.at("publicId").get<std::string>();
      put(view_keys::wallet(id), c);
      put(view_keys::account_number(c.at("accountNumber").get<std::string>()), id);
      break;
    }
    case EventType::collection_status_changed: {
      const std::string id = d.at("publicId").get<std::string>();
      json* c = edit(view_keys::wallet(id));
      KOBO_ASSERT(c != nullptr && (*c)["status"] == d.at("from"), "collection status change out of order");
      (*c)["status"] = d.at("status");
      (*c)["active"] = false;
      (*c)["updatedAt"] = d.at("updatedAt");
      break;
    }
    case EventType::wallet_created: {
      const auto& w = d.at("wallet");
      const std::string id = w.at("publicId").get<std::string>();
      put(view_keys::wallet(id), w);
      // Transit wallets are fetched by id but not listed with the wallets of GET /virtual-accounts.
      if (!w.contains("settlementAccount"))
        put(view_keys::wallet_list(w.at("auth").get<std::string>(), w.at("live").get<bool>(),
                                   w.at("id").get<std::uint64_t>()),
            id);
      put(view_keys::account_number(w.at("accountNumber").get<std::string>()), id);
      break;
    }
    case EventType::debited:
      apply_posting(e, -d.at("amount").get<std::int64_t>());
      break;
    case EventType::credited:
      apply_posting(e, d.at("amount").get<std::int64_t>());
      break;
    case EventType::transaction_status_changed: {
      const std::string id = d.at("publicId").get<std::string>();
      json* t = edit(view_keys::transaction(id));
      KOBO_ASSERT(t != nullptr, "status change of a transaction the views do not have");
      KOBO_ASSERT((*t)["status"] == d.at("from"), "status change from a status the transaction is not in");
      (*t)["status"] = d.at("status");
      (*t)["updatedAt"] = d.at("updatedAt");
      if (d.contains("verify")) (*t)["meta"]["verify"] = d.at("verify");
      put_transaction(*t);
      break;
    }
  }
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
  Status accepted(const Event& e) override {
    batch_.apply(e);
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
}

bool Projector::wait_applied(Partition p, Seq seq, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return applied_seq(p) >= seq || !healthy_.load(); }) &&
         applied_seq(p) >= seq;
}

void Projector::run() {
  while (!stopping_.load()) {
    if (auto s = step(std::chrono::milliseconds(100)); !s) {
      log::error("projection stopped: the log cannot be applied", {{"error", s.message()}});
      healthy_.store(false);
      cv_.notify_all();
      return;
    }
  }
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
  if (until.size() != follower_->partitions()) return Status::error("catch_up_to needs one offset per partition");
  auto ends = log_.end_offsets();
  if (!ends) return ends.status();
  for (std::uint32_t p = 0; p < until.size(); ++p)
    if (until[p] > ends.value()[p])
      return Status::error("partition " + std::to_string(p) + ": cannot apply the log to offset " +
                           std::to_string(until[p].value) + ", it ends at " + std::to_string(ends.value()[p].value));
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
  // The positions go into the same WriteBatch as the view changes they reflect.
  const auto& cursors = follower_->cursors();
  for (std::uint32_t p = 0; p < cursors.size(); ++p) {
    const FollowCursor& c = cursors[p];
    batch_->put(view_keys::position(p), json{{"offset", c.next_offset.value},
                                             {"seq", c.chain.last_seq().value},
                                             {"hash", c.chain.last_hash()},
                                             {"epoch", c.chain.epoch().value}});
  }
  projector_metrics().batch_events.observe(static_cast<double>(batch_->events()));
  if (auto s = batch_->flush(); !s) return s;
  {
    std::lock_guard lock(mu_);
    for (std::uint32_t p = 0; p < cursors.size(); ++p)
      applied_[p].store(cursors[p].chain.last_seq().value, std::memory_order_release);
  }
  cv_.notify_all();
  return {};
}

}  // namespace kobo
