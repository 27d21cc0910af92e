#include "webhooks/webhooks.h"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

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
#include "common/log.h"
#include "common/metrics.h"
#include "events/ledger.h"
#include "events/log_follower.h"
#include "events/rocksdb_logger.h"
#include "projection/render.h"
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
//   l<business>|<t|l>|<createdAt ms:8><id>    -> "" (listing, newest first)
//   q<due ms:8><id>                           -> "" (pending deliveries by next attempt time)
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
std::string list_key(std::string_view business, bool live, UnixMs created, std::string_view id) {
  std::string k = list_prefix(business, live);
  put_be(k, static_cast<std::uint64_t>(created));
  return k + std::string(id);
}
std::string due_key(UnixMs due, std::string_view id) {
  std::string k("q");
  put_be(k, static_cast<std::uint64_t>(std::max<UnixMs>(due, 0)));
  return k + std::string(id);
}

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

  Status open_follower();
  Status skip_to_end();  // a new delivery database starts at the log's end
  Status start();
  void stop();
  bool healthy() const { return healthy_.load(); }
  bool allow_private() const { return options_.allow_private; }
  Page deliveries(const Scope& scope, const DeliveryFilter& filter, const PageRequest& page) const;
  RetryOutcome retry(const Scope& scope, std::string_view id, json* record);

 private:
  class Recorder;
  void consume();
  [[nodiscard]] Status step(std::chrono::milliseconds wait);
  std::optional<json> get(const std::string& id) const;
  [[nodiscard]] Status write(rocksdb::WriteBatch& wb);
  void put_positions(rocksdb::WriteBatch& wb) const;

  // Sender: these run on the io thread.
  asio::awaitable<void> tick_forever();
  void tick();
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
  };
  std::map<std::string, Wanted> wanted_of_account_;
  std::atomic<bool> healthy_{true};
  bool unwritable_ = false;  // consumer thread only: its last write failed
  std::atomic<bool> stopping_{false};
  std::thread consumer_;

  // Guards read-modify-write of delivery records and the in-flight bookkeeping.
  mutable std::mutex mu_;
  std::set<std::string> in_flight_;                    // delivery ids
  std::map<std::string, std::uint32_t> per_endpoint_;  // host:port -> attempts in flight

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

  Status accepted(const Event& e) override {
    // An account's URLs are read once and kept until an account changes.
    if (std::holds_alternative<AccountUpdated>(e.data) || std::holds_alternative<WebhooksConfigured>(e.data))
      impl_.wanted_of_account_.clear();
    const auto finalized = transactions_finalized(e.data);
    if (finalized.empty()) return {};
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
  // What an account wants delivered in mode `live`: that mode's URLs and event types (all when
  // it never chose); an error when the views cannot be read.
  Result<const Wanted*> wanted_of(const std::string& business, const std::string& account_id, bool live) {
    const std::string key = scope_key(account_id, live);
    auto it = impl_.wanted_of_account_.find(key);
    if (it != impl_.wanted_of_account_.end()) return &it->second;
    const auto read = impl_.views_.account(business, account_id);
    if (!read) return read.status();
    KOBO_ASSERT(read.value().has_value(), "a transaction of an account the views do not have");
    const json account = render::account_in_mode(std::move(*read.value()), live);
    Wanted wanted;
    for (const auto& u : account.value("webhooks", json::array()))
      if (u.is_string()) wanted.urls.insert(u.get<std::string>());
    if (const auto types = account.find("webhookEvents"); types != account.end()) {
      for (const auto& t : *types)
        if (const auto type =
                t.is_string() ? webhook_event_type_from_string(t.get<std::string>()) : std::nullopt)
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
      KOBO_ASSERT(read.value().has_value(), "a finalized transaction has no webhook event in the views");
      event = std::move(read).value();
      return {};
    };
    std::string account_id = std::visit(
        [](const auto& x) -> std::string {
          if constexpr (requires { x.account.value; })
            return x.account.value;
          else
            return {};
        },
        e.data);
    if (account_id.empty()) {
      if (auto s = read_event(); !s) return s;  // a payout's status change: rare
      account_id = event->account;
    }
    const auto read_wanted = wanted_of(e.business, account_id, e.live);
    if (!read_wanted) return read_wanted.status();
    const Wanted& wanted = *read_wanted.value();
    if (wanted.urls.empty() || !wanted.types[static_cast<std::size_t>(*type)]) return {};
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
      KOBO_ASSERT(wb_.Put(delivery_key(id), d.dump()).ok(), "WriteBatch put");
      KOBO_ASSERT(wb_.Put(list_key(e.business, e.live, now, id), "").ok(), "WriteBatch put");
      KOBO_ASSERT(wb_.Put(due_key(now, id), "").ok(), "WriteBatch put");
      ++recorded_;
    }
    return {};
  }

  Impl& impl_;
  rocksdb::WriteBatch& wb_;
  std::size_t recorded_ = 0;
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
    const json j = json::parse(value);
    cursors[p].chain = ChainFollower(Seq(j.at("seq").get<std::uint64_t>()), j.at("hash").get<std::string>(),
                                     Epoch(j.at("epoch").get<std::uint64_t>()));
    cursors[p].next_offset = Offset(j.at("offset").get<std::uint64_t>());
    stored = true;
  }
  follower_ = std::make_unique<LogFollower>(log_, LogFollowerOptions{options_.poll_records_max});
  if (auto s = follower_->open(std::move(cursors)); !s) return s;
  skip_to_end_ = !stored;  // by start(): it needs the log's end, which open() must not ask for
  return {};
}

Status Webhooks::Impl::skip_to_end() {
  SkipAll skip;
  if (auto s = follower_->follow_to_end(skip); !s) return s;
  rocksdb::WriteBatch wb;
  put_positions(wb);
  return write(wb);
}

void Webhooks::Impl::put_positions(rocksdb::WriteBatch& wb) const {
  const auto& cursors = follower_->cursors();
  for (std::uint32_t p = 0; p < cursors.size(); ++p) {
    const FollowCursor& c = cursors[p];
    const json j{{"offset", c.next_offset.value},
                 {"seq", c.chain.last_seq().value},
                 {"hash", c.chain.last_hash()},
                 {"epoch", c.chain.epoch().value}};
    KOBO_ASSERT(wb.Put(position_key(p), j.dump()).ok(), "WriteBatch put");
  }
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
  if (!consumed) return consumed.status();
  // Positions may stop inside a command: each event's deliveries are in the batch with the
  // position just past it, which is all at-least-once recording needs.
  if (consumed.value() == 0) return {};
  put_positions(wb);
  if (auto s = write(wb); !s) {
    unwritable_ = true;
    return s;
  }
  if (recorder.recorded() > 0) {
    webhook_metrics().recorded.inc(recorder.recorded());
    asio::post(io_, [this] { tick(); });
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
      if (unwritable_)
        log::error(
            "webhooks stopped: the delivery database cannot be written; deliveries are recorded "
            "again from the last recorded event after a restart",
            {{"error", s.message()}});
      else
        log::error("webhooks stopped: the log or the views cannot be read", {{"error", s.message()}});
      healthy_.store(false);
      return;
    }
  }
}

Status Webhooks::Impl::start() {
  if (skip_to_end_) {
    if (auto s = skip_to_end(); !s) return s;
    skip_to_end_ = false;
  }
  work_.emplace(io_.get_executor());
  sender_ = std::thread([this] { io_.run(); });
  asio::co_spawn(io_, tick_forever(), asio::detached);
  consumer_ = std::thread([this] { consume(); });
  return {};
}

void Webhooks::Impl::stop() {
  stopping_.store(true);
  if (consumer_.joinable()) consumer_.join();
  io_.stop();
  if (sender_.joinable()) sender_.join();
}

// ---- sender -------------------------------------------------------------------------------------

std::optional<json> Webhooks::Impl::get(const std::string& id) const {
  std::string value;
  const auto s = db_->Get(rocksdb::ReadOptions(), delivery_key(id), &value);
  if (s.IsNotFound()) return std::nullopt;
  KOBO_ASSERT(s.ok(), "webhooks read failed");
  return json::parse(value);
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
  std::vector<json> start;
  {
    std::lock_guard lock(mu_);
    std::string upper("q");
    put_be(upper, static_cast<std::uint64_t>(now_ms()) + 1);
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    std::size_t scanned = 0;
    for (it->Seek("q"); it->Valid() && scanned < kDueScanMax; it->Next(), ++scanned) {
      if (in_flight_.size() >= options_.concurrency_max) break;
      const auto key = it->key();
      if (!key.starts_with("q") || key.compare(upper) >= 0) break;
      const std::string id(key.data() + 9, key.size() - 9);
      if (in_flight_.contains(id)) continue;
      auto d = get(id);
      KOBO_ASSERT(d.has_value(), "a due entry points at a missing delivery");
      auto& busy = per_endpoint_[endpoint_of(d->at("url").get<std::string>())];
      if (busy >= options_.endpoint_concurrency_max) continue;
      ++busy;
      in_flight_.insert(id);
      start.push_back(std::move(*d));
    }
    KOBO_ASSERT(it->status().ok(), "webhooks scan failed");
    webhook_metrics().in_flight.set(static_cast<double>(in_flight_.size()));
  }
  for (auto& d : start) asio::co_spawn(io_, attempt(std::move(d)), asio::detached);
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
  auto d = get(id);
  KOBO_ASSERT(d.has_value(), "an attempted delivery is missing");
  json a{{"at", format_iso8601(started)}, {"durationMs", result.duration.count()}};
  if (result.status_code) a["statusCode"] = *result.status_code;
  if (!result.ok())
    a["error"] = result.error.empty() ? "HTTP " + std::to_string(*result.status_code) : result.error;
  (*d)["attempts"].push_back(std::move(a));
  const auto attempts = static_cast<std::uint32_t>(d->at("attempts").size());
  const UnixMs now = now_ms();
  rocksdb::WriteBatch wb;
  KOBO_ASSERT(wb.Delete(due_key(d->at("dueMs").get<UnixMs>(), id)).ok(), "WriteBatch delete");
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
  if (next.next_attempt) KOBO_ASSERT(wb.Put(due_key(*next.next_attempt, id), "").ok(), "WriteBatch put");
  KOBO_ASSERT(wb.Put(delivery_key(id), d->dump()).ok(), "WriteBatch put");
  // Unrecorded, the attempt is made again when the delivery is next due: at least once.
  if (auto s = write(wb); !s)
    log::warn("a webhook attempt's result cannot be recorded", {{"delivery", id}, {"error", s.message()}});
  if (!result.ok()) {
    json fields{{"delivery", id},
                {"url", redacted_url(d->at("url").get<std::string>())},
                {"error", d->at("attempts").back().at("error")}};
    if (!result.detail.empty()) fields["detail"] = result.detail;
    log::warn("webhook attempt failed", fields);
  }
  in_flight_.erase(id);
  auto busy = per_endpoint_.find(endpoint_of(d->at("url").get<std::string>()));
  KOBO_ASSERT(busy != per_endpoint_.end() && busy->second > 0, "endpoint slots out of balance");
  if (--busy->second == 0) per_endpoint_.erase(busy);
  m.in_flight.set(static_cast<double>(in_flight_.size()));
  asio::post(io_, [this] { tick(); });
}

// ---- queries ------------------------------------------------------------------------------------

Page Webhooks::Impl::deliveries(const Scope& scope, const DeliveryFilter& filter,
                                const PageRequest& page) const {
  Page out;
  const std::string prefix = list_prefix(scope.business, scope.live);
  const std::uint64_t first = (page.page - 1) * page.per_page;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->SeekForPrev(prefix + std::string(9, '\xff')); it->Valid(); it->Prev()) {
    const auto key = it->key();
    if (!key.starts_with(prefix)) break;
    auto d = get(std::string(key.data() + prefix.size() + 8, key.size() - prefix.size() - 8));
    KOBO_ASSERT(d.has_value(), "the delivery listing points at a missing delivery");
    if (filter.status && delivery_status_from_string(d->at("status").get<std::string>()) != *filter.status)
      continue;
    if (out.total_count >= first && out.total_count < first + page.per_page)
      out.items.push_back(public_record(std::move(*d)));
    ++out.total_count;
  }
  KOBO_ASSERT(it->status().ok(), "webhooks scan failed");
  return out;
}

Webhooks::RetryOutcome Webhooks::Impl::retry(const Scope& scope, std::string_view id, json* record) {
  std::unique_lock lock(mu_);
  auto d = get(std::string(id));
  if (!d || d->at("business") != scope.business || d->at("live") != scope.live)
    return RetryOutcome::not_found;
  if (in_flight_.contains(std::string(id))) return RetryOutcome::in_progress;
  const UnixMs now = now_ms();
  rocksdb::WriteBatch wb;
  const auto status = delivery_status_from_string(d->at("status").get<std::string>());
  KOBO_ASSERT(status.has_value(), "a delivery of an unknown status");
  if (*status == DeliveryStatus::pending)
    KOBO_ASSERT(wb.Delete(due_key(d->at("dueMs").get<UnixMs>(), id)).ok(), "WriteBatch delete");
  const RetriedState retried = retried_delivery_state(*status, d->at("manual").get<bool>(), now);
  (*d)["status"] = to_string(retried.state.status);
  (*d)["manual"] = retried.manual;
  (*d)["dueMs"] = now;
  (*d)["nextAttemptAt"] = format_iso8601(now);
  (*d)["updatedAt"] = format_iso8601(now);
  KOBO_ASSERT(wb.Put(due_key(now, id), "").ok(), "WriteBatch put");
  KOBO_ASSERT(wb.Put(delivery_key(id), d->dump()).ok(), "WriteBatch put");
  if (auto s = write(wb); !s) {
    log::warn("a webhook retry cannot be recorded", {{"delivery", std::string(id)}, {"error", s.message()}});
    return RetryOutcome::unavailable;
  }
  lock.unlock();
  asio::post(io_, [this] { tick(); });
  if (record != nullptr) *record = public_record(std::move(*d));
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
  if (auto st = impl->open_follower(); !st) return st;
  return std::unique_ptr<Webhooks>(new Webhooks(std::move(impl)));
}

Webhooks::Webhooks(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Webhooks::~Webhooks() { stop(); }
Status Webhooks::start() { return impl_->start(); }
void Webhooks::stop() { impl_->stop(); }
bool Webhooks::healthy() const { return impl_->healthy(); }
Page Webhooks::deliveries(const Scope& scope, const DeliveryFilter& filter, const PageRequest& page) const {
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

Webhooks::RetryOutcome Webhooks::retry(const Scope& scope, std::string_view id, json* record) {
  return impl_->retry(scope, id, record);
}

}  // namespace kobo
