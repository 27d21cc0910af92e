#include "query-api/answer.h"

#include <atomic>
#include <boost/asio/post.hpp>
#include <condition_variable>
#include <mutex>

#include "common/crypto.h"
#include "common/log.h"
#include "events/keys.h"
#include "projection/render.h"
#include "query-api/envelope.h"
#include "query-api/rejections.h"

namespace kobo {

namespace api {

using http::Request;
using http::Responder;
using http::Response;
using nlohmann::json;

std::optional<Context> Protocol::authenticate(const Request& req, const Responder& respond) const {
  const std::string_view key = req.header("x-service-key");
  if (key.empty() || key.size() > kApiKeyLengthMax) {
    respond(http::error(401, "Unauthorized"));
    return std::nullopt;
  }
  // The stored form is the key's SHA-256: looking it up by digest compares digests, never
  // the key itself, so timing reveals nothing about stored keys.
  const std::string hash = sha256_hex(key);
  const auto read_owner = views_.key_owner(hash);
  if (!read_owner) {
    respond(unavailable(read_owner.status()));
    return std::nullopt;
  }
  const std::optional<KeyOwner>& owner = read_owner.value();
  // A rolled key past its overlap is refused as an unknown one is: it is no key any more.
  if (!owner || (owner->expires_at != 0 && now_ms() >= owner->expires_at)) {
    respond(http::error(401, "Unauthorized"));
    return std::nullopt;
  }
  const auto suspension = views_.suspension(owner->business);
  if (!suspension) {
    respond(unavailable(suspension.status()));
    return std::nullopt;
  }
  if (suspension.value()) {
    respond(http::error(403, "This business is suspended"));
    return std::nullopt;
  }
  if (owner->live && !owner->account_live) {
    respond(http::error(403, "Live mode is not enabled for this account"));
    return std::nullopt;
  }
  Context c;
  c.caller = Caller{owner->business, owner->account, owner->live, key_id_of_hash(hash)};
  c.scope = Scope{owner->business, owner->live};
  c.partition = ledger_.partition_of(owner->business);
  return c;
}

void Protocol::on_applied(Partition p, Seq seq, std::function<void(bool)> then) {
  projector_.when_applied(
      p, seq, options_.read_barrier_timeout, [this, then = std::move(then)](bool applied) mutable {
        boost::asio::post(answers_, [then = std::move(then), applied]() mutable { then(applied); });
      });
}

void Protocol::run(Where where, Responder respond, Continuation then) {
  if (where == Where::here) return then(std::move(respond));
  boost::asio::post(answers_, [respond = std::move(respond), then = std::move(then)]() mutable {
    then(std::move(respond));
  });
}

void Protocol::barrier(const Context& c, Responder respond, Continuation then, Where where) {
  const Seq durable = ledger_.durable_seq(c.partition);
  if (projector_.views_unwritable() || projector_.applied_seq(c.partition) >= durable)
    return run(where, std::move(respond), std::move(then));
  on_applied(c.partition, durable,
             [this, respond = std::move(respond), then = std::move(then)](bool applied) mutable {
               if (!applied && !projector_.views_unwritable())
                 return respond(http::error(503, "Service unavailable"));
               then(std::move(respond));
             });
}

void Protocol::after_projection(const Outcome& o, Responder respond, Continuation then) {
  on_applied(o.partition, o.seq,
             [respond = std::move(respond), then = std::move(then)](bool applied) mutable {
               if (!applied) return respond(http::error(503, "Service unavailable"));
               then(std::move(respond));
             });
}

void Protocol::answer_created(Outcome o, int status, std::string message, Responder respond,
                              std::optional<TransactionStatus> shown) {
  // Rendered by the connection's own thread as it writes the answer (Response::render), not on
  // the writer's thread that hands the outcome over. The tier limits this writer recorded as it
  // started (WriterStarted): the ones it decided with.
  const render::TierShown tiers{&ledger_.config().tier_limits, now_ms()};
  http::Response answer;
  answer.status = static_cast<unsigned>(status);
  answer.render = [o = std::make_shared<const Outcome>(std::move(o)), status = answer.status,
                   message = std::move(message), shown, tiers] {
    const render::DecidedFacts facts(o->wallets);
    KOBO_ASSERT(render::can_render(o->events, facts), "the writer gives every wallet an answer shows");
    const auto record = render::created_record(o->events, o->id, facts, tiers, shown);
    KOBO_ASSERT(record.has_value(), "a command's events do not create the record it names");
    return http::ok_text(status, *record, message).body;
  };
  respond(std::move(answer));
}

void Protocol::answer_rendered(Outcome o, Responder respond, Render make) {
  boost::asio::post(
      answers_, [o = std::move(o), respond = std::move(respond), make = std::move(make)]() mutable {
        const render::DecidedFacts facts(o.wallets);
        KOBO_ASSERT(render::can_render(o.events, facts), "the writer gives every wallet an answer shows");
        respond(make(o, facts));
      });
}

void Protocol::in_parallel(const std::function<void()>& first, const std::function<void()>& second) const {
  // Whoever claims `second` runs it: a pool thread, or this one once `first` is done. So a full
  // pool (every thread inside an in_parallel of its own) delays a half, never deadlocks.
  struct Shared {
    std::atomic<bool> claimed{false};
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  };
  const auto shared = std::make_shared<Shared>();
  boost::asio::post(answers_, [shared, &second] {
    if (shared->claimed.exchange(true)) return;
    second();
    std::lock_guard lock(shared->mu);
    shared->done = true;
    shared->cv.notify_one();
  });
  first();
  if (!shared->claimed.exchange(true)) return second();
  std::unique_lock lock(shared->mu);
  shared->cv.wait(lock, [&] { return shared->done; });
}

Response unavailable(const Status& error) {
  log::error("a request cannot be answered", {{"error", error.message()}});
  return rejection_response(Rejection::unavailable);
}

Response replayed(const Result<std::optional<std::string>>& original, std::string_view message) {
  if (!original) return unavailable(original.status());
  KOBO_ASSERT(original.value().has_value(), "an idempotent repeat's original record is in the views");
  Response answer = http::ok_text(200, *original.value(), std::string(message));
  answer.headers.emplace_back("Idempotent-Replayed", "true");
  return answer;
}

Response one_record(const Result<std::optional<std::string>>& text) {
  if (!text) return unavailable(text.status());
  if (!text.value()) return http::error(404, "Data not found");
  return http::ok_text(200, *text.value());
}

std::optional<std::string> optional_string(const json& body, const char* name) {
  const auto it = body.find(name);
  if (it == body.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

void check_kyc_tier(http::Validator& v, const json& body, bool required) {
  if (required && !body.contains("kycTier")) {
    v.field("kycTier").is_int().min(1).max(static_cast<std::int64_t>(kKycTiers));
    return;
  }
  v.optional("kycTier").is_int().min(1).max(static_cast<std::int64_t>(kKycTiers));
}

std::optional<std::uint64_t> kyc_tier_of(const json& body) {
  const auto it = body.find("kycTier");
  if (it == body.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<std::uint64_t>();
}

kobo::PageRequest to_page(const http::PageRequest& p) {
  return kobo::PageRequest{static_cast<std::uint64_t>(p.page), static_cast<std::uint64_t>(p.per_page)};
}

Response list(const Result<Page>& page, const http::PageRequest& request) {
  if (!page) return unavailable(page.status());
  return http::ok_list(
      page.value().items,
      http::Pagination{static_cast<std::int64_t>(page.value().total_count), request.per_page, request.page});
}

}  // namespace api
}  // namespace kobo
