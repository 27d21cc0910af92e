#include "query-api/answer.h"

#include <boost/asio/post.hpp>

#include "common/crypto.h"
#include "common/log.h"
#include "events/keys.h"
#include "projection/render.h"
#include "query-api/envelope.h"

namespace kobo {

RejectionAnswer rejection_answer(Rejection r) {
  switch (r) {
    case Rejection::none:
      break;
    case Rejection::duplicate_reference:
      return {409, "Duplicate reference"};
    case Rejection::source_not_found:
      return {404, "Source not found"};
    case Rejection::destination_not_found:
      return {404, "Destination not found"};
    case Rejection::same_source_and_destination:
      return {400, "Source and destination cannot be the same"};
    case Rejection::insufficient_funds:
      return {403, "Insufficient fund"};
    case Rejection::daily_limit_exceeded:
      return {403, "Daily limit exceeded"};
    case Rejection::balance_limit_exceeded:
      return {403, "Balance limit exceeded"};
    case Rejection::wallet_not_found:
      return {404, "Data not found"};
    case Rejection::wallet_name_taken:
      return {400, "Virtual Account name already exist"};
    case Rejection::primary_wallet_limit:
      return {400, "Primary wallet limit reached"};
    case Rejection::account_not_found:
      return {404, "Account not found"};
    case Rejection::business_exists:
      return {409, "Business already exists"};
    case Rejection::reference_exists:
      return {400, "Reference already exists"};
    case Rejection::settlement_account_not_found:
      return {404, "Settlement account not found"};
    case Rejection::amount_mismatch:
      return {400, "Amount mismatch"};
    case Rejection::collection_inactive:
      return {400, "Collection account is not active"};
    case Rejection::unavailable:
      return {503, "Service unavailable"};
    case Rejection::storage_full:
      return {507, "Insufficient storage"};
    case Rejection::hold_not_found:
      return {404, "Data not found"};
    case Rejection::hold_not_pending:
      return {409, "Hold is not pending"};
    case Rejection::amount_exceeds_hold:
      return {400, "Amount exceeds hold"};
    case Rejection::out_of_range:
      return {400, "Amount out of range"};
    case Rejection::bank_not_found:
      return {400, "Bank not found"};
    case Rejection::invalid_account_number:
      return {400, "Invalid account number"};
  }
  KOBO_ASSERT(false, "no HTTP answer for an accepted command");
  return {500, "Internal server error"};
}

http::Response rejection_response(Rejection r) {
  const RejectionAnswer a = rejection_answer(r);
  return http::error(a.status, a.message);
}

namespace api {

using http::Request;
using http::Responder;
using http::Response;
using nlohmann::json;

std::optional<Context> Protocol::authenticate(const Request& req, const Responder& respond) const {
  const std::string_view key = req.header("x-service-key");
  if (key.empty() || key.size() > 128) {
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

void Protocol::barrier(const Context& c, Responder respond, Continuation then) {
  const Seq durable = ledger_.durable_seq(c.partition);
  if (projector_.views_unwritable() || projector_.applied_seq(c.partition) >= durable)
    return then(std::move(respond));
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
  // Rendered on the answers' pool, off the writer's thread that hands the outcome over.
  // The tier limits this writer recorded as it started (WriterStarted): the ones it decided with.
  const render::TierShown tiers{&ledger_.config().tier_limits, now_ms()};
  boost::asio::post(answers_, [o = std::move(o), status, message = std::move(message), shown, tiers,
                               respond = std::move(respond)]() mutable {
    const render::DecidedFacts facts(o.wallets);
    KOBO_ASSERT(render::can_render(o.events, facts), "the writer gives every wallet an answer shows");
    const auto record = render::created_record(o.events, o.id, facts, tiers, shown);
    KOBO_ASSERT(record.has_value(), "a command's events do not create the record it names");
    respond(http::ok_text(status, *record, message));
  });
}

void Protocol::answer_rendered(Outcome o, Responder respond, Render make) {
  boost::asio::post(
      answers_, [o = std::move(o), respond = std::move(respond), make = std::move(make)]() mutable {
        const render::DecidedFacts facts(o.wallets);
        KOBO_ASSERT(render::can_render(o.events, facts), "the writer gives every wallet an answer shows");
        respond(make(o, facts));
      });
}

std::optional<ResolvedAccount> Protocol::resolve(bool live, const std::string& bank_code,
                                                 const std::string& account_number,
                                                 const Responder& respond) const {
  auto resolved = resolve_account(views_, ledger_.config(), live, bank_code, account_number);
  if (auto* error = std::get_if<Response>(&resolved)) {
    respond(std::move(*error));
    return std::nullopt;
  }
  return std::get<ResolvedAccount>(std::move(resolved));
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

Response list(Result<Page> page, const http::PageRequest& request) {
  if (!page) return unavailable(page.status());
  json items = json::array();
  for (auto& item : page.value().items) items.push_back(std::move(item));
  return http::ok_list(items, http::Pagination{static_cast<std::int64_t>(page.value().total_count),
                                               request.per_page, request.page});
}

http::RouteHandler route(std::shared_ptr<Protocol> protocol, RouteFn fn) {
  return
      [protocol = std::move(protocol), fn](Request&& req, const http::PathParams& params, Responder respond) {
        fn(*protocol, std::move(req), params, std::move(respond));
      };
}

}  // namespace api
}  // namespace kobo
