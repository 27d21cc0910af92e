#include "webhooks/webhooks.h"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/url/parse.hpp>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/crypto.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/thread.h"
#include "events/ledger.h"
#include "events/log_follower.h"
#include "events/partitioner.h"
#include "events/rocksdb_logger.h"
#include "webhooks/http_post.h"

namespace kobo {

namespace asio = boost::asio;
using nlohmann::json;
using webhooks_detail::PostResult;

namespace {

// The key layout of <data-dir>/webhooks. Integers are big-endian so keys sort numerically.
//   P<partition:4>                            -> consumer position {offset, seq, hash, epoch}
//   D<delivery id>                            -> delivery JSON (the API's fields plus body,
//                                                business and dueMs)
//   l<business>|<t|l>|<createdAt ms:8>\0<seq:8><id>
//                                             -> "" (listing, newest first: deliveries of one
//                                                millisecond in log order, by their event's
//                                                seq in the business's partition; entries
//                                                written before the seq, `l…<createdAt><id>`,
//                                                are read too: an id never starts with \0)
//   Q<partition:4><due ms:8><id>              -> "" (pending deliveries by partition, then next
//                                                attempt time: a cluster node sends only its
//                                                partitions'; docs/webhooks.md "In a cluster")
//   q<due ms:8><id>                           -> (before clusters; moved to Q at open)
void put_be(std::string& out, std::uint64_t v, int bytes = 8) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
std::string position_key(std::uint32_t p) {
  std::string k("P");
  put_be(k, p, 4);
  return k;
}
std::string delivery_key(std::string_view id) { return "D" + std::string(id); }
std::string list_prefix(std::string_view business, bool live) { return "l" + scope_key(business, live); }
std::string list_key(std::string_view business, bool live, UnixMs created, Seq seq, std::string_view id) {
  KOBO_ASSERT(!id.empty() && id.front() != '\0', "a delivery id is not mistaken for the seq's mark");
  std::string k = list_prefix(business, live);
  put_be(k, static_cast<std::uint64_t>(created));
  k.push_back('\0');
  put_be(k, seq.value);
  return k + std::string(id);
}
// The delivery id of a listing entry (`key` past its scope's prefix), either layout above; empty
// when the entry has none.
std::string_view listed_delivery(std::string_view key) {
  if (key.size() <= 8) return {};
  key.remove_prefix(8);
  if (key.front() != '\0') return key;
  return key.size() > 9 ? key.substr(9) : std::string_view();
}
std::string due_prefix(Partition p) {
  std::string k("Q");
  put_be(k, p.value, 4);
  return k;
}
std::string due_key(Partition p, UnixMs due, std::string_view id) {
  std::string k = due_prefix(p);
  put_be(k, static_cast<std::uint64_t>(std::max<UnixMs>(due, 0)));
  return k + std::string(id);
}
constexpr std::size_t kDueKeyIdAt = 1 + 4 + 8;

constexpr std::size_t kDueScanMax = 1024;  // due deliveries examined per scheduling pass
constexpr auto kTickInterval = std::chrono::milliseconds(50);
constexpr const char* kUserAgent = "KoboLedger-Webhooks/1.0";

struct WebhookMetrics {
  metrics::Counter& recorded = metrics::registry().counter(
      "kobo_webhook_deliveries_recorded_total", "Webhook deliveries recorded (one per event and URL)");
  metrics::Counter& attempted =
      metrics::registry().counter("kobo_webhook_attempts_total", "Webhook delivery attempts made");
  metrics::Counter& succeeded = metrics::registry().counter(
      "kobo_webhook_deliveries_total", "Webhook deliveries finished", R"(status="succeeded")");
  metrics::Counter& failed = metrics::registry().counter("kobo_webhook_deliveries_total",
                                                         "Webhook deliveries finished", R"(status="failed")");
  metrics::Counter& attempt_failures = metrics::registry().counter(
      "kobo_webhook_attempt_failures_total", "Webhook attempts that did not get a 2xx in time");
  metrics::Gauge& in_flight =
      metrics::registry().gauge("kobo_webhook_in_flight", "Webhook attempts in flight");
  metrics::Histogram& duration =
      metrics::registry().histogram("kobo_webhook_attempt_duration_seconds", "Time of one webhook attempt");
};

WebhookMetrics& webhook_metrics() {
  static WebhookMetrics m;
  return m;
}

// host:port of a URL: the unit of per-endpoint concurrency.
std::string endpoint_of(const std::string& url) {
  auto u = boost::urls::parse_absolute_uri(url);
  if (!u) return url;
  const std::string port = u->has_port() ? std::string(u->port()) : (u->scheme() == "https" ? "443" : "80");
  return std::string(u->encoded_host()) + ":" + port;
}

// A URL as the node's log shows it: its query string, which may carry a receiver's token, is
// left out (`?…`).
std::string redacted_url(const std::string& url) {
  const auto q = url.find_first_of("?#");
  return q == std::string::npos ? url : url.substr(0, q) + "?…";
}

json public_record(json d) {
  for (const char* internal : {"body", "business", "dueMs", "manual"}) d.erase(internal);
  return d;
}

// A WriteBatch operation's status as ours (it fails only when the batch outgrows its limit).
Status batched(const rocksdb::Status& s) {
  if (s.ok()) return {};
  return Status::error("webhooks batch: " + s.ToString());
}

// Whether a stored delivery has every member this file reads, of its type: the database is read
// as it is on disk, and a member that is missing must not throw on a sender's thread.
bool well_formed_delivery(const json& d) {
  if (!d.is_object()) return false;
  for (const char* text : {"id", "event", "eventId", "url", "business", "account", "transaction", "status",
                           "createdAt", "updatedAt", "body"}) {
    const auto it = d.find(text);
    if (it == d.end() || !it->is_string()) return false;
  }
  const auto flag = [&](const char* name) { return d.contains(name) && d[name].is_boolean(); };
  const auto due = d.find("dueMs");
  const auto attempts = d.find("attempts");
  return flag("live") && flag("manual") && due != d.end() && (due->is_null() || due->is_number_integer()) &&
         attempts != d.end() && attempts->is_array() &&
         delivery_status_from_string(d["status"].get<std::string>()).has_value();
}

// A consumer position as stored: {offset, seq, hash, epoch}.
bool well_formed_position(const json& j) {
  return j.is_object() && j.contains("offset") && j["offset"].is_number_unsigned() && j.contains("seq") &&
         j["seq"].is_number_unsigned() && j.contains("hash") && j["hash"].is_string() &&
         j.contains("epoch") && j["epoch"].is_number_unsigned();
}

}  // namespace

class Webhooks::Impl {
 public:
  Impl(std::unique_ptr<rocksdb::DB> db, EventLog& log, Views& views, Projector& projector,
       const MasterKey& master, const WebhookSecrets& secrets, WebhookOptions options)
      : db_(std::move(db)),
        log_(log),
        views_(views),
        projector_(projector),
        master_(master),
        secrets_(secrets),
        options_(std::move(options)),
        tls_(webhooks_detail::make_tls_context()) {}

  [[nodiscard]] Status open_follower();
  [[nodiscard]] Status move_due_index();  // a database from before clusters: q keys become Q keys
  [[nodiscard]] Status skip_to_end();     // a new delivery database starts at the log's end
  [[nodiscard]] Status start();
  void stop();
  bool healthy() const { return healthy_.load(); }
  std::string fault() const;
  bool allow_private() const { return options_.allow_private; }
  Result<Page> deliveries(const Scope& scope, const DeliveryFilter& filter, const PageRequest& page) const;
  RetryOutcome retry(const Scope& scope, std::string_view id, std::string* record);

 private:
  class Recorder;
  void consume();
  // After a read that failed: the batch was not written; opens the follower again at the
  // positions the database holds, every second until it opens or stop() (healthy() false and
  // fault() naming `failed` meanwhile).
  void start_again(const Status& failed);
  [[nodiscard]] Status step(std::chrono::milliseconds wait);
  // The delivery `id` as stored, nullopt when there is none; an error when it cannot be read or
  // is not a delivery record.
  Result<std::optional<json>> get(const std::string& id) const;
  Partition partition_of(const json& delivery) const {
    return partition_for(delivery.at("business").get<std::string>(), log_.partitions());
  }
  bool sends(Partition p) const { return !options_.sends || options_.sends(p); }
  [[nodiscard]] Status end_delivery(const Event& e, const WebhookDeliveryEnded& ended,
                                    rocksdb::WriteBatch& wb);
  void report_ended();
  [[nodiscard]] Status write(rocksdb::WriteBatch& wb);
  [[nodiscard]] Status put_positions(rocksdb::WriteBatch& wb) const;
  // What the consumer (`consumer` true) or the sender found it cannot read, "" once it can.
  void set_fault(bool consumer, std::string fault);

  // Sender: these run on the io thread.
  asio::awaitable<void> tick_forever();
  void tick();
  // Asks the io thread for a scheduling pass soon (any thread). At most one asked pass waits in
  // the io queue at a time: one per recorded batch could queue passes faster than a pass over a
  // long due index runs, and the attempts' own completions would wait behind all of them.
  void wake();
  asio::awaitable<void> attempt(json record);
  void complete(const json& sent, UnixMs started, const PostResult& result);

  std::unique_ptr<rocksdb::DB> db_;
  EventLog& log_;
  Views& views_;
  Projector& projector_;
  const MasterKey& master_;
  const WebhookSecrets& secrets_;
  const WebhookOptions options_;
  asio::ssl::context tls_;

  std::unique_ptr<LogFollower> follower_;  // consumer thread only (and start(), before it runs)
  bool skip_to_end_ = false;               // start() only
  // What the accounts read so far want delivered, by scope_key(account, mode) (consumer thread
  // only; emptied when an account is updated).
  struct Wanted {
    std::set<std::string> urls;
    std::array<bool, kWebhookEventTypes> types{};  // by WebhookEventType
    bool wants(WebhookEventType type) const { return !urls.empty() && types[static_cast<std::size_t>(type)]; }
  };
  std::map<std::string, Wanted> wanted_of_account_;
  std::atomic<bool> healthy_{true};
  bool unwritable_ = false;   // consumer thread only: its last write failed
  bool log_refused_ = false;  // consumer thread only: the last step stopped on a record the chain refused
  mutable std::mutex fault_mu_;
  std::string consumer_fault_;  // guarded by fault_mu_
  std::string sender_fault_;    // guarded by fault_mu_
  std::atomic<bool> stopping_{false};
  std::atomic<bool> pass_asked_{false};  // a pass asked by wake() waits in the io queue
  std::thread consumer_;

  // Guards read-modify-write of delivery records and the in-flight bookkeeping.
  mutable std::mutex mu_;
  std::set<std::string> in_flight_;                    // delivery ids
  std::map<std::string, std::uint32_t> per_endpoint_;  // host:port -> attempts in flight
  // Deliveries that ended here and are still to be reported (WebhookOptions::ended), by partition.
  std::map<std::uint32_t, std::vector<WebhookDeliveryEnded>> ended_;
  std::uint32_t next_partition_ = 0;  // sender only: where the next scheduling pass starts
  std::map<std::uint32_t, std::string>
      due_cursor_;  // sender only: per partition, where its next pass goes on

  asio::io_context io_;  // last: destroyed first, with the attempts it still holds
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread sender_;
};

// ---- consumer -----------------------------------------------------------------------------------

// Records the deliveries of the events the follower accepts into one WriteBatch.
class Webhooks::Impl::Recorder final : public LogVisitor {
 public:
  Recorder(Impl& impl, rocksdb::WriteBatch& wb) : impl_(impl), wb_(wb) {}
  std::size_t recorded() const { return recorded_; }
  bool refused_log() const { return refused_; }

  Disposition refused(const RefusedRecord& r) override {
    const Disposition d = LogVisitor::refused(r);
    if (d == Disposition::stop) refused_ = true;
    return d;
  }

  Status accepted(const Event& e) override {
    // What the partition's writer delivered: not sent again here, should this node write it next.
    if (const auto* ended = std::get_if<WebhookDeliveriesEnded>(&e.data)) {
      for (const WebhookDeliveryEnded& d : ended->deliveries)
        if (auto st = impl_.end_delivery(e, d, wb_); !st) return st;
      return {};
    }
    // An account's URLs are read once and kept until an account changes.
    if (std::holds_alternative<AccountUpdated>(e.data) || std::holds_alternative<WebhooksConfigured>(e.data))
      impl_.wanted_of_account_.clear();
    // Most accounts want nothing delivered: once that is known, their transactions need nothing
    // of the views, and no wait for the projector (each wait makes it write its batch at once:
    // at 10,000 transfers/s a wait per transfer cut its batches to 17 events, bench/RESULTS.md).
    // An account known to have no URL in the event's mode needs not even its transactions named
    // (each derived id is a SHA-256: a tenth of this thread's time under transfer load).
    const Wanted* known = known_wanted(e);
    if (known != nullptr && known->urls.empty()) return {};
    const auto finalized = transactions_finalized(e.data);
    if (finalized.empty()) return {};
    if (known != nullptr && nothing_wanted(*known, finalized)) return {};
    // The data is the Transaction as the API shows it: read it once the projector has it.
    while (!impl_.projector_.wait_applied(e.partition, e.seq, std::chrono::milliseconds(200))) {
      if (impl_.stopping_.load()) return Status::error("stopping");
      if (!impl_.projector_.healthy()) return Status::error("the projection stopped");
    }
    for (const FinalizedTransaction& f : finalized)
      if (auto s = record(e, f); !s) return s;
    return {};
  }

 private:
  // What the account of `e` wants delivered, when it is known; nullptr for a payout's status
  // change (the account is the webhook event's) and an account not read yet. What is known of an
  // account (wanted_of) is what it wanted at an earlier event of its partition, and a change of
  // the account since, an event of the same partition and so read before this one, emptied it.
  const Wanted* known_wanted(const Event& e) const {
    const AccountId* owner = owner_account(e.data);
    if (owner == nullptr) return nullptr;
    const auto it = impl_.wanted_of_account_.find(scope_key(owner->value, e.live));
    return it == impl_.wanted_of_account_.end() ? nullptr : &it->second;
  }

  // Whether `wanted` wants none of `finalized` delivered.
  static bool nothing_wanted(const Wanted& wanted, const std::vector<FinalizedTransaction>& finalized) {
    return std::all_of(finalized.begin(), finalized.end(), [&](const FinalizedTransaction& f) {
      const auto type = webhook_event_of(f);
      return !type || !wanted.wants(*type);
    });
  }

  // What account `account_id` wanted delivered at event `e`, in its mode: the URLs and event types
  // (all when it never chose) of the settings in effect there, whatever the views applied since
  // (docs/webhooks.md, "Which settings apply"); an error when the views cannot be read.
  Result<const Wanted*> wanted_of(const Event& e, const std::string& account_id) {
    const std::string key = scope_key(account_id, e.live);
    auto it = impl_.wanted_of_account_.find(key);
    if (it != impl_.wanted_of_account_.end()) return &it->second;
    const auto settings = impl_.views_.webhook_settings_at(e.business, account_id, e.live, e.seq);
    if (!settings) return settings.status();
    if (!settings.value())
      return Status::error("the views do not have account " + account_id + ", whose transaction was applied");
    Wanted wanted;
    wanted.urls.insert(settings.value()->urls.begin(), settings.value()->urls.end());
    if (const auto& types = settings.value()->events) {
      for (const std::string& t : *types)
        if (const auto type = webhook_event_type_from_string(t))
          wanted.types[static_cast<std::size_t>(*type)] = true;
    } else {
      wanted.types.fill(true);
    }
    return &impl_.wanted_of_account_.emplace(key, std::move(wanted)).first->second;
  }

  // The deliveries of one transaction's final state, one per URL of its account when the account
  // wants its type. Their ids derive from the event and the transaction, so a re-read event
  // records the same deliveries. The body is the webhook event as the views render it (its
  // sequence counts every type, wanted or not). A read of the views that fails is returned: the
  // event is not recorded, nor its position.
  Status record(const Event& e, const FinalizedTransaction& f) {
    const auto type = webhook_event_of(f);
    if (!type) return {};
    // Most accounts have no webhooks, and then nothing more is done. The account is the one
    // the event names (its transactions are that account's), else the webhook event's.
    const Scope scope{e.business, e.live};
    std::optional<WebhookEvent> event;
    const auto read_event = [&]() -> Status {
      if (event) return {};
      auto read = impl_.views_.webhook_event_of(scope, f.id.value);
      if (!read) return read.status();
      if (!read.value())
        return Status::error("the views have no webhook event of transaction " + f.id.value +
                             ", which they applied");
      event = std::move(read).value();
      return {};
    };
    const AccountId* owner = owner_account(e.data);
    std::string account_id = owner != nullptr ? owner->value : std::string();
    if (owner == nullptr) {
      if (auto s = read_event(); !s) return s;  // a payout's status change: rare
      account_id = event->account;
    }
    const auto read_wanted = wanted_of(e, account_id);
    if (!read_wanted) return read_wanted.status();
    const Wanted& wanted = *read_wanted.value();
    if (!wanted.wants(*type)) return {};
    if (auto s = read_event(); !s) return s;

    const std::string seed = e.hash + "|" + f.id.value;
    const UnixMs now = now_ms();
    const std::string ts = format_iso8601(now);
    for (const auto& url : wanted.urls) {
      const std::string id =
          "whd-" + derived_uuid(std::string("delivery|").append(seed).append("|").append(url));
      const json d{{"id", id},
                   {"event", to_string(*type)},
                   {"eventId", event->id},
                   {"sequence", event->sequence},
                   {"url", url},
                   {"business", e.business},
                   {"account", account_id},
                   {"live", e.live},
                   {"transaction", f.id.value},
                   {"status", to_string(DeliveryStatus::pending)},
                   {"attempts", json::array()},
                   {"nextAttemptAt", ts},
                   {"dueMs", now},
                   {"manual", false},
                   {"createdAt", ts},
                   {"updatedAt", ts},
                   {"body", event->body}};
      KOBO_ASSERT(well_formed_delivery(d), "a delivery is recorded with every member the sender reads");
      if (auto st = batched(wb_.Put(delivery_key(id), d.dump())); !st) return st;
      if (auto st = batched(wb_.Put(list_key(e.business, e.live, now, e.seq, id), "")); !st) return st;
      if (auto st = batched(wb_.Put(due_key(e.partition, now, id), "")); !st) return st;
      ++recorded_;
    }
    return {};
  }

  Impl& impl_;
  rocksdb::WriteBatch& wb_;
  std::size_t recorded_ = 0;
  bool refused_ = false;
};

// Skips events: a new delivery database starts at the log's end.
class SkipAll final : public LogVisitor {
 public:
  Status accepted(const Event&) override { return {}; }
};

Status Webhooks::Impl::open_follower() {
  std::vector<FollowCursor> cursors(log_.partitions());
  bool stored = false;
  for (std::uint32_t p = 0; p < cursors.size(); ++p) {
    std::string value;
    const auto s = db_->Get(rocksdb::ReadOptions(), position_key(p), &value);
    if (s.IsNotFound()) continue;
    if (!s.ok()) return Status::error("webhooks read: " + s.ToString());
    const json j = json::parse(value, nullptr, /*allow_exceptions=*/false);
    if (!well_formed_position(j))
      return Status::error("webhooks read: the position of partition " + std::to_string(p) + " is malformed");
    cursors[p].chain = ChainFollower(Seq(j.at("seq").get<std::uint64_t>()), j.at("hash").get<std::string>(),
                                     Epoch(j.at("epoch").get<std::uint64_t>()));
    cursors[p].next_offset = Offset(j.at("offset").get<std::uint64_t>());
    stored = true;
  }
  if (!stored) {
    // A new database starts at the log's end: it skips from where the views are (all that is
    // before them is before the end too), not from the log's start, so that a new cluster node
    // that started from a peer's checkpoint reads only the log's tail here too
    // (docs/architecture.md, "A new node").
    auto positions = views_.positions();
    if (!positions) return positions.status();
    for (std::uint32_t p = 0; p < cursors.size(); ++p) {
      const ViewPosition& v = positions.value().at(p);
      cursors[p] = FollowCursor{ChainFollower(v.last_seq, v.last_hash, v.epoch), v.next_offset, false};
    }
  }
  follower_ = std::make_unique<LogFollower>(log_, LogFollowerOptions{options_.poll_records_max});
  if (auto s = follower_->open(std::move(cursors)); !s) return s;
  skip_to_end_ = !stored;  // by start(): it needs the log's end, which open() must not ask for
  return {};
}

Status Webhooks::Impl::move_due_index() {
  rocksdb::WriteBatch wb;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek("q"); it->Valid() && it->key().starts_with("q"); it->Next()) {
    const auto key = it->key();
    if (key.size() <= 9) continue;
    const std::string id(key.data() + 9, key.size() - 9);
    const auto d = get(id);
    if (!d) return d.status();
    if (!d.value()) continue;
    std::uint64_t due = 0;
    for (int i = 1; i <= 8; ++i)
      due = (due << 8) | static_cast<unsigned char>(key[static_cast<std::size_t>(i)]);
    if (!wb.Put(due_key(partition_of(*d.value()), static_cast<UnixMs>(due), id), "").ok() ||
        !wb.Delete(key).ok())
      return Status::error("webhooks: moving the due index");
  }
  if (!it->status().ok()) return Status::error("webhooks read: " + it->status().ToString());
  if (wb.Count() == 0) return {};
  return write(wb);
}

Status Webhooks::Impl::skip_to_end() {
  SkipAll skip;
  if (auto s = follower_->follow_to_end(skip); !s) return s;
  rocksdb::WriteBatch wb;
  if (auto s = put_positions(wb); !s) return s;
  return write(wb);
}

Status Webhooks::Impl::put_positions(rocksdb::WriteBatch& wb) const {
  const auto& cursors = follower_->cursors();
  KOBO_ASSERT(cursors.size() == log_.partitions(), "a position per partition of the log");
  for (std::uint32_t p = 0; p < cursors.size(); ++p) {
    const FollowCursor& c = cursors[p];
    const json j{{"offset", c.next_offset.value},
                 {"seq", c.chain.last_seq().value},
                 {"hash", c.chain.last_hash()},
                 {"epoch", c.chain.epoch().value}};
    if (auto s = batched(wb.Put(position_key(p), j.dump())); !s) return s;
  }
  return {};
}

Status Webhooks::Impl::write(rocksdb::WriteBatch& wb) {
  const auto s = db_->Write(rocksdb::WriteOptions(), &wb);
  if (s.ok()) return {};
  return Status::error("webhooks write: " + s.ToString(),
                       s.IsNoSpace() ? ErrorKind::no_space : ErrorKind::other);
}

Status Webhooks::Impl::step(std::chrono::milliseconds wait) {
  rocksdb::WriteBatch wb;
  Recorder recorder(*this, wb);
  auto consumed = follower_->step(recorder, wait);
  log_refused_ = recorder.refused_log();
  if (!consumed) return consumed.status();
  // Positions may stop inside a command: each event's deliveries are in the batch with the
  // position just past it, which is all at-least-once recording needs.
  if (consumed.value() == 0) return {};
  if (auto s = put_positions(wb); !s) return s;
  if (auto s = write(wb); !s) {
    unwritable_ = true;
    return s;
  }
  if (recorder.recorded() > 0) {
    webhook_metrics().recorded.inc(recorder.recorded());
    wake();
  }
  return {};
}

void Webhooks::Impl::consume() {
  while (!stopping_.load()) {
    if (auto s = step(std::chrono::milliseconds(100)); !s) {
      if (stopping_.load()) return;
      // Faults degrade, never crash (guarantee 8, docs/architecture.md): the position was not
      // written either, so after a restart the consumer records these deliveries from where it
      // stopped.
      if (unwritable_ || log_refused_) {
        log::error(unwritable_ ? "webhooks stopped: the delivery database cannot be written; deliveries are "
                                 "recorded again from the last recorded event after a restart"
                               : "webhooks stopped: the log cannot be accepted",
                   {{"error", s.message()}});
        healthy_.store(false);
        return;
      }
      // A read that failed (the log's, the views', the delivery database's): nothing of the step
      // was written, so it is read again from the stored positions.
      start_again(s);
    }
  }
}

void Webhooks::Impl::start_again(const Status& failed) {
  log::warn("webhooks cannot read on; they start again from their recorded positions",
            {{"error", failed.message()}});
  healthy_.store(false);
  set_fault(true, "webhooks paused: " + failed.message());
  Status opened;
  do {
    for (int i = 0; i < 20 && !stopping_.load(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (stopping_.load()) return;
    opened = open_follower();
    // start() recorded the positions before the consumer ran: a database without them now is
    // not the one it wrote, and it is not skipped to the log's end behind the operator's back.
    if (opened && skip_to_end_) opened = Status::error("the delivery database has lost its positions");
    if (!opened) set_fault(true, "webhooks paused: " + opened.message());
  } while (!opened);
  set_fault(true, {});
  healthy_.store(true);
  log::info("webhooks go on");
}

std::string Webhooks::Impl::fault() const {
  std::lock_guard lock(fault_mu_);
  return consumer_fault_.empty() ? sender_fault_ : consumer_fault_;
}

void Webhooks::Impl::set_fault(bool consumer, std::string fault) {
  std::lock_guard lock(fault_mu_);
  std::string& mine = consumer ? consumer_fault_ : sender_fault_;
  if (!consumer && !fault.empty() && fault != mine)
    log::warn("webhook attempts paused: the delivery database cannot be read", {{"error", fault}});
  mine = std::move(fault);
}

Status Webhooks::Impl::start() {
  if (skip_to_end_) {
    if (auto s = skip_to_end(); !s) return s;
    skip_to_end_ = false;
  }
  work_.emplace(io_.get_executor());
  sender_ = std::thread([this] {
    name_this_thread("kobo-hook-send");
    io_.run();
  });
  asio::co_spawn(io_, tick_forever(), asio::detached);
  consumer_ = std::thread([this] {
    name_this_thread("kobo-webhooks");
    consume();
  });
  return {};
}

void Webhooks::Impl::stop() {
  stopping_.store(true);
  if (consumer_.joinable()) consumer_.join();
  io_.stop();
  if (sender_.joinable()) sender_.join();
}

// ---- sender -------------------------------------------------------------------------------------

Result<std::optional<json>> Webhooks::Impl::get(const std::string& id) const {
  std::string value;
  const auto s = db_->Get(rocksdb::ReadOptions(), delivery_key(id), &value);
  if (s.IsNotFound()) return std::optional<json>();
  if (!s.ok()) return Status::error("webhooks read: " + s.ToString());
  json d = json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!well_formed_delivery(d) || d["id"] != id)
    return Status::error("webhooks read: delivery " + id + " is not a delivery record");
  return std::optional<json>(std::move(d));
}

void Webhooks::Impl::wake() {
  if (pass_asked_.exchange(true)) return;
  asio::post(io_, [this] {
    pass_asked_.store(false);  // before the pass: what is recorded during it asks for another
    tick();
  });
}

asio::awaitable<void> Webhooks::Impl::tick_forever() {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!stopping_.load()) {
    tick();
    timer.expires_after(kTickInterval);
    co_await timer.async_wait(asio::use_awaitable);
  }
}

// Starts an attempt for each due delivery that has a free slot overall and at its endpoint.
// A delivery whose endpoint is busy is passed over, so a hung endpoint holds its own slots only.
void Webhooks::Impl::tick() {
  if (stopping_.load()) return;
  report_ended();
  std::vector<json> start;
  std::vector<std::string> stale;
  {
    std::lock_guard lock(mu_);
    const auto now = static_cast<std::uint64_t>(now_ms());
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    std::size_t scanned = 0;
    // The partitions this node sends, from a different one each pass. A read that fails pauses
    // the attempts (fault() says why) until a later tick reads again.
    Status read;
    const std::uint32_t partitions = log_.partitions();
    const std::uint32_t first = next_partition_++ % partitions;
    for (std::uint32_t k = 0; k < partitions && scanned < kDueScanMax && read; ++k) {
      const Partition p((first + k) % partitions);
      if (!sends(p)) continue;
      const std::string prefix = due_prefix(p);
      std::string upper = prefix;
      put_be(upper, now + 1);
      // Each pass goes on from where the last one stopped in the partition's due entries and wraps
      // to their start once: every due entry is looked at within (due entries / kDueScanMax)
      // passes, however many entries of a busy (black-holed) endpoint come before it.
      std::string& cursor = due_cursor_[p.value];
      if (!cursor.starts_with(prefix)) cursor = prefix;
      const std::string from = cursor;
      bool wrapped = from == prefix;  // from the start there is nothing to wrap to
      it->Seek(from);
      while (true) {
        bool past = !it->Valid() || !it->key().starts_with(prefix) || it->key().compare(upper) >= 0;
        if (past && !wrapped) {
          wrapped = true;
          it->Seek(prefix);
          continue;
        }
        if (!past && from != prefix && wrapped && it->key().compare(from) >= 0) past = true;
        if (past) {
          cursor = prefix;
          break;
        }
        const std::string key(it->key().data(), it->key().size());
        if (scanned >= kDueScanMax || in_flight_.size() >= options_.concurrency_max) {
          cursor = key;  // the next pass starts here
          break;
        }
        ++scanned;
        it->Next();
        if (key.size() <= kDueKeyIdAt) {
          read = Status::error("webhooks read: a due entry without a delivery id");
          break;
        }
        const std::string id(key.data() + kDueKeyIdAt, key.size() - kDueKeyIdAt);
        if (in_flight_.contains(id)) continue;
        auto d = get(id);
        if (!d || !d.value()) {
          read = d ? Status::error("webhooks read: a due entry names delivery " + id + ", which is missing")
                   : d.status();
          break;
        }
        json& delivery = *d.value();
        if (delivery.at("status") != to_string(DeliveryStatus::pending)) {
          // Ended meanwhile by its partition's writer's report (a takeover): nothing is due.
          stale.emplace_back(key.data(), key.size());
          continue;
        }
        auto& busy = per_endpoint_[endpoint_of(delivery.at("url").get<std::string>())];
        if (busy >= options_.endpoint_concurrency_max) continue;
        ++busy;
        in_flight_.insert(id);
        start.push_back(std::move(delivery));
      }
    }
    if (read && !it->status().ok()) read = Status::error("webhooks scan: " + it->status().ToString());
    set_fault(false, read ? std::string() : "webhooks paused: " + read.message());
    KOBO_ASSERT(in_flight_.size() <= options_.concurrency_max, "attempts in flight within their limit");
    webhook_metrics().in_flight.set(static_cast<double>(in_flight_.size()));
    if (!stale.empty()) {
      rocksdb::WriteBatch wb;
      for (const std::string& key : stale) KOBO_ASSERT(wb.Delete(key).ok(), "WriteBatch delete");
      if (auto s = write(wb); !s)
        log::warn("webhooks: a stale due entry cannot be removed", {{"error", s.message()}});
    }
  }
  for (auto& d : start) asio::co_spawn(io_, attempt(std::move(d)), asio::detached);
}

// Reports the deliveries that ended here since the last pass, for the log (a cluster node).
void Webhooks::Impl::report_ended() {
  if (!options_.ended) return;
  std::map<std::uint32_t, std::vector<WebhookDeliveryEnded>> ended;
  {
    std::lock_guard lock(mu_);
    ended.swap(ended_);
  }
  for (auto& [p, deliveries] : ended)
    for (std::size_t at = 0; at < deliveries.size(); at += kWebhookDeliveriesPerEventMax) {
      const auto end = std::min(deliveries.size(), at + kWebhookDeliveriesPerEventMax);
      options_.ended(Partition(p), std::vector<WebhookDeliveryEnded>(
                                       deliveries.begin() + static_cast<std::ptrdiff_t>(at),
                                       deliveries.begin() + static_cast<std::ptrdiff_t>(end)));
    }
}

// A delivery the partition's writer reports as ended (WebhookDeliveriesEnded): a pending one
// here ends too, so this node never sends it, whichever partitions it writes later. One in
// flight here (a takeover while its report was on its way) ends as its attempt says.
Status Webhooks::Impl::end_delivery(const Event& e, const WebhookDeliveryEnded& ended,
                                    rocksdb::WriteBatch& wb) {
  std::lock_guard lock(mu_);
  auto read = get(ended.delivery);
  if (!read) return read.status();
  auto& d = read.value();
  if (!d || in_flight_.contains(ended.delivery)) return {};
  if (d->at("status") != to_string(DeliveryStatus::pending)) return {};
  if (!d->at("dueMs").is_null())
    if (auto s = batched(wb.Delete(due_key(partition_of(*d), d->at("dueMs").get<UnixMs>(), ended.delivery)));
        !s)
      return s;
  (*d)["status"] = to_string(ended.succeeded ? DeliveryStatus::succeeded : DeliveryStatus::failed);
  (*d)["nextAttemptAt"] = nullptr;
  (*d)["dueMs"] = nullptr;
  (*d)["updatedAt"] = format_iso8601(e.time);
  return batched(wb.Put(delivery_key(ended.delivery), d->dump()));
}

asio::awaitable<void> Webhooks::Impl::attempt(json record) {
  const UnixMs started = now_ms();
  PostResult result;
  const std::string account = record.at("account").get<std::string>();
  const bool live = record.at("live").get<bool>();
  // The account's current signing key, unwrapped for this attempt only, and the webhook secret
  // current now, whenever the event was: the views know the account's keys and rotations.
  const auto key = signing_key(master_, views_, account, live);
  const auto secret = views_.webhook(account, live);
  const std::string body = record.at("body").get<std::string>();
  const std::string event_id = record.at("eventId").get<std::string>();
  const auto signatures =
      secret ? secrets_.signatures(secret.value(), account, live, event_id, started, body) : secret.status();
  if (!key) {
    // The operator's to see; the tenant's record says only that it was not signed.
    log::warn("a webhook cannot be signed", {{"account", account}, {"error", key.status().message()}});
    result.error = "the delivery could not be signed on this node";
  } else if (!signatures) {
    log::warn("a webhook cannot be signed", {{"account", account}, {"error", signatures.status().message()}});
    result.error = "the delivery could not be signed on this node";
  } else {
    webhooks_detail::PostRequest request{record.at("url").get<std::string>(),
                                         body,
                                         {{"content-type", "application/json"},
                                          {"user-agent", kUserAgent},
                                          {"x-kobo-event-id", event_id},
                                          {"x-kobo-signature", webhook_signature(key.value(), body)},
                                          {"webhook-id", event_id},
                                          {"webhook-timestamp", std::to_string(started / 1000)}}};
    if (!signatures.value().empty()) request.headers.emplace_back("webhook-signature", signatures.value());
    result = co_await webhooks_detail::post(
        tls_, std::move(request), {options_.timeout, options_.allow_private, std::size_t{8} * 1024});
  }
  complete(record, started, result);
}

// Records one attempt and decides what comes next (the transitions of DeliveryStatus).
void Webhooks::Impl::complete(const json& sent, UnixMs started, const PostResult& result) {
  auto& m = webhook_metrics();
  m.attempted.inc();
  m.duration.observe(static_cast<double>(result.duration.count()) / 1000.0);
  if (!result.ok()) m.attempt_failures.inc();
  const std::string id = sent.at("id").get<std::string>();
  std::lock_guard lock(mu_);
  KOBO_ASSERT(in_flight_.contains(id), "a completed attempt was in flight");
  // Its slots are given back whatever can be recorded: unrecorded, the attempt is made again
  // when the delivery is next due (at least once).
  const auto release = [&] {
    in_flight_.erase(id);
    auto busy = per_endpoint_.find(endpoint_of(sent.at("url").get<std::string>()));
    KOBO_ASSERT(busy != per_endpoint_.end() && busy->second > 0, "endpoint slots out of balance");
    if (--busy->second == 0) per_endpoint_.erase(busy);
    m.in_flight.set(static_cast<double>(in_flight_.size()));
    wake();
  };
  auto read = get(id);
  if (!read || !read.value()) {
    log::warn("a webhook attempt's result cannot be recorded: its delivery cannot be read",
              {{"delivery", id}, {"error", read ? std::string("it is missing") : read.status().message()}});
    release();
    return;
  }
  json& d_record = *read.value();
  json* d = &d_record;
  json a{{"at", format_iso8601(started)}, {"durationMs", result.duration.count()}};
  if (result.status_code) a["statusCode"] = *result.status_code;
  if (!result.ok())
    a["error"] = result.error.empty() ? "HTTP " + std::to_string(*result.status_code) : result.error;
  (*d)["attempts"].push_back(std::move(a));
  const auto attempts = static_cast<std::uint32_t>(d->at("attempts").size());
  const UnixMs now = now_ms();
  rocksdb::WriteBatch wb;
  Status batch;
  const Partition partition = partition_of(*d);
  // A delivery a manual retry made due again while this attempt ran has its new due entry.
  if (!d->at("dueMs").is_null())
    batch = batched(wb.Delete(due_key(partition, d->at("dueMs").get<UnixMs>(), id)));
  const DeliveryState next = next_delivery_state(
      options_.schedule, parse_iso8601(d->at("createdAt").get<std::string>()).value_or(now), attempts,
      result.ok(), d->at("manual").get<bool>(), now);
  (*d)["status"] = to_string(next.status);
  if (next.status == DeliveryStatus::succeeded) m.succeeded.inc();
  if (next.status == DeliveryStatus::failed) m.failed.inc();
  (*d)["manual"] = false;
  (*d)["updatedAt"] = format_iso8601(now);
  (*d)["nextAttemptAt"] = next.next_attempt ? json(format_iso8601(*next.next_attempt)) : json(nullptr);
  (*d)["dueMs"] = next.next_attempt ? json(*next.next_attempt) : json(nullptr);
  KOBO_ASSERT(next.status == DeliveryStatus::pending || !next.next_attempt, "only a pending delivery is due");
  if (batch && next.next_attempt) batch = batched(wb.Put(due_key(partition, *next.next_attempt, id), ""));
  if (batch && next.status != DeliveryStatus::pending && options_.ended)
    ended_[partition.value].push_back({id, next.status == DeliveryStatus::succeeded});
  if (batch) batch = batched(wb.Put(delivery_key(id), d->dump()));
  // Unrecorded, the attempt is made again when the delivery is next due: at least once.
  if (batch) batch = write(wb);
  if (!batch)
    log::warn("a webhook attempt's result cannot be recorded",
              {{"delivery", id}, {"error", batch.message()}});
  if (!result.ok()) {
    json fields{{"delivery", id},
                {"url", redacted_url(d->at("url").get<std::string>())},
                {"error", d->at("attempts").back().at("error")}};
    if (!result.detail.empty()) fields["detail"] = result.detail;
    log::warn("webhook attempt failed", fields);
  }
  release();
}

// ---- queries ------------------------------------------------------------------------------------

Result<Page> Webhooks::Impl::deliveries(const Scope& scope, const DeliveryFilter& filter,
                                        const PageRequest& page) const {
  KOBO_ASSERT(page.page >= 1 && page.per_page >= 1, "a page of the deliveries is numbered from 1");
  Page out;
  const std::string prefix = list_prefix(scope.business, scope.live);
  const std::uint64_t first = (page.page - 1) * page.per_page;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->SeekForPrev(prefix + std::string(9, '\xff')); it->Valid(); it->Prev()) {
    const auto key = it->key();
    if (!key.starts_with(prefix)) break;
    const std::string id(listed_delivery(key.ToStringView().substr(prefix.size())));
    if (id.empty()) return Status::error("webhooks read: a listing entry without a delivery id");
    auto d = get(id);
    if (!d) return d.status();
    if (!d.value())
      return Status::error("webhooks read: the listing names delivery " + id + ", which is missing");
    json& record = *d.value();
    if (filter.status &&
        delivery_status_from_string(record.at("status").get<std::string>()) != *filter.status)
      continue;
    if (out.total_count >= first && out.total_count < first + page.per_page)
      out.items.push_back(json_text(public_record(std::move(record))));
    ++out.total_count;
  }
  if (!it->status().ok()) return Status::error("webhooks scan: " + it->status().ToString());
  KOBO_ASSERT(out.items.size() <= page.per_page, "a page holds no more than its size");
  return out;
}

Webhooks::RetryOutcome Webhooks::Impl::retry(const Scope& scope, std::string_view id, std::string* record) {
  std::unique_lock lock(mu_);
  auto read = get(std::string(id));
  if (!read) {
    log::warn("a webhook retry cannot be read",
              {{"delivery", std::string(id)}, {"error", read.status().message()}});
    return RetryOutcome::unavailable;
  }
  auto& d = read.value();
  if (!d || d->at("business") != scope.business || d->at("live") != scope.live)
    return RetryOutcome::not_found;
  if (in_flight_.contains(std::string(id))) return RetryOutcome::in_progress;
  const UnixMs now = now_ms();
  rocksdb::WriteBatch wb;
  const auto status = delivery_status_from_string(d->at("status").get<std::string>());
  KOBO_ASSERT(status.has_value(), "get() hands on deliveries of a known status only");
  Status batch;
  const Partition partition = partition_of(*d);
  if (*status == DeliveryStatus::pending && !d->at("dueMs").is_null())
    batch = batched(wb.Delete(due_key(partition, d->at("dueMs").get<UnixMs>(), id)));
  const RetriedState retried = retried_delivery_state(*status, d->at("manual").get<bool>(), now);
  (*d)["status"] = to_string(retried.state.status);
  (*d)["manual"] = retried.manual;
  (*d)["dueMs"] = now;
  (*d)["nextAttemptAt"] = format_iso8601(now);
  (*d)["updatedAt"] = format_iso8601(now);
  if (batch) batch = batched(wb.Put(due_key(partition, now, id), ""));
  if (batch) batch = batched(wb.Put(delivery_key(id), d->dump()));
  if (batch) batch = write(wb);
  if (!batch) {
    log::warn("a webhook retry cannot be recorded",
              {{"delivery", std::string(id)}, {"error", batch.message()}});
    return RetryOutcome::unavailable;
  }
  lock.unlock();
  wake();
  if (record != nullptr) *record = json_text(public_record(std::move(*d)));
  return RetryOutcome::queued;
}

// ---- Webhooks -----------------------------------------------------------------------------------

Result<std::unique_ptr<Webhooks>> Webhooks::open(const std::string& path, EventLog& log, Views& views,
                                                 Projector& projector, const MasterKey& master,
                                                 const WebhookSecrets& secrets, WebhookOptions options) {
  KOBO_ASSERT(options.concurrency_max > 0 && options.endpoint_concurrency_max > 0, "webhook concurrency");
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Status::error("create " + path + ": " + ec.message());
  rocksdb::Options o;
  o.create_if_missing = true;
  // RocksDB's file logger would write beside the data and abort once a full disk failed it.
  o.info_log = rocksdb_logger("webhooks");
  rocksdb::DB* raw = nullptr;
  const auto s = rocksdb::DB::Open(o, path, &raw);
  if (!s.ok()) return Status::error("open webhooks " + path + ": " + s.ToString());
  auto impl = std::make_unique<Impl>(std::unique_ptr<rocksdb::DB>(raw), log, views, projector, master,
                                     secrets, std::move(options));
  if (auto st = impl->move_due_index(); !st) return st;
  if (auto st = impl->open_follower(); !st) return st;
  return std::unique_ptr<Webhooks>(new Webhooks(std::move(impl)));
}

Webhooks::Webhooks(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Webhooks::~Webhooks() { stop(); }
Status Webhooks::start() { return impl_->start(); }
void Webhooks::stop() { impl_->stop(); }
bool Webhooks::healthy() const { return impl_->healthy(); }
std::string Webhooks::fault() const { return impl_->fault(); }
Result<Page> Webhooks::deliveries(const Scope& scope, const DeliveryFilter& filter,
                                  const PageRequest& page) const {
  return impl_->deliveries(scope, filter, page);
}
std::optional<std::string> Webhooks::refused_url(std::string_view url) const {
  if (impl_->allow_private()) return std::nullopt;
  auto u = boost::urls::parse_absolute_uri(url);
  if (!u ||
      (u->host_type() != boost::urls::host_type::ipv4 && u->host_type() != boost::urls::host_type::ipv6))
    return std::nullopt;
  const std::string host(u->host_address());
  if (auto why = forbidden_address_reason(host)) return host + " is a " + *why + " address";
  return std::nullopt;
}

Webhooks::RetryOutcome Webhooks::retry(const Scope& scope, std::string_view id, std::string* record) {
  return impl_->retry(scope, id, record);
}

}  // namespace kobo
