// The admin API, enabled by an admin key (--admin-key-file, KOBO_ADMIN_KEY; header x-admin-key):
// POST /v1/admin/businesses (a business and its keys, shown once), POST
// /v1/admin/businesses/{id}/suspend and /resume, PATCH /v1/admin/accounts/{id} (live mode), and
// POST /v1/admin/accounts/{id}/keys/roll (new keys for a tenant that lost its own).
// Every event they write records the actor "admin".

#include "common/crypto.h"
#include "common/log.h"
#include "projection/render.h"
#include "query-api/answer.h"
#include "query-api/credentials.h"
#include "query-api/envelope.h"

namespace kobo::api {
namespace {

using http::PathParams;
using http::Request;
using http::Responder;
using nlohmann::json;

// Whether the request carries the admin key; answers it otherwise (404 when there is no admin
// API, 401 for a wrong key). Compared by digest, in constant time.
bool admin(const Protocol& p, const Request& req, const Responder& respond) {
  if (p.options().admin_key.empty()) {
    respond(http::route_not_found());
    return false;
  }
  if (!constant_time_equal(sha256_hex(req.header("x-admin-key")), sha256_hex(p.options().admin_key))) {
    respond(http::error(401, "Unauthorized"));
    return false;
  }
  return true;
}

// The caller the admin acts as for business `business`: not a key's, in test mode.
Caller admin_caller(std::string business, std::string account = {}) {
  return Caller{std::move(business), std::move(account), false, std::string(kAdminActor)};
}

void create_business(Protocol& p, Request&& req, const PathParams&, Responder respond) {
  if (!admin(p, req, respond)) return;
  auto body = http::parse_json_object(req.body);
  if (!body) return respond(http::bad_request());
  http::Validator v(*body);
  v.field("name").is_not_empty().is_string().max_length(kNameLengthMax);
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));
  const Credentials creds = new_credentials();
  // Webhooks are signed with the secret keys: the log holds them as digests, and wrapped.
  auto command = create_business_command(creds, body->at("name"), p.options().master_key);
  if (!command) return respond(unavailable(command.status()));
  command.value().actor = std::string(kAdminActor);
  p.ledger().submit(
      std::move(command).value(), [&p, creds, respond = std::move(respond)](const Outcome& o) mutable {
        if (!o.ok()) return respond(rejection_response(o.rejection));
        // The keys must work as soon as they are handed out.
        p.after_projection(o, std::move(respond), [creds, o](Responder r) {
          const Event& e = o.events.front();
          const auto records = render::business_records(e, std::get<BusinessRegistered>(e.data));
          http::Response answer = http::ok(201,
                                           json{{"business", json::parse(records.business)},
                                                {"account", json::parse(records.account)},
                                                {"credentials", to_json(creds)}},
                                           "Business created successfully");
          answer.headers.emplace_back("Cache-Control", "no-store");  // the keys are shown once
          r(std::move(answer));
        });
      });
}

// Suspends (`suspended`) or resumes a business: while suspended, every key of it is refused 403.
void set_suspended(Protocol& p, Request&& req, const PathParams& params, Responder respond, bool suspended) {
  if (!admin(p, req, respond)) return;
  std::optional<std::string> reason;
  if (!req.body.empty()) {
    auto body = http::parse_json_object(req.body);
    if (!body) return respond(http::bad_request());
    http::Validator v(*body);
    v.optional("reason").is_string().max_length(kTextLengthMax);
    if (auto errors = v.errors()) return respond(http::validation_error(*errors));
    reason = optional_string(*body, "reason");
  }
  const std::string business = params.at("id");
  const auto known = p.views().has_business(business);
  if (!known) return respond(unavailable(known.status()));
  if (!known.value()) return respond(http::error(404, "Data not found"));
  SuspendBusiness cmd{admin_caller(business), suspended, suspended ? reason : std::nullopt};
  p.ledger().submit(std::move(cmd), [&p, business, suspended, reason,
                                     respond = std::move(respond)](const Outcome& o) mutable {
    if (!o.ok())
      return respond(o.rejection == Rejection::account_not_found ? http::error(404, "Data not found")
                                                                 : rejection_response(o.rejection));
    // Every key of it is refused (or works again) from the answer on.
    p.after_projection(o, std::move(respond), [o, business, suspended, reason](Responder r) {
      r(http::ok(200,
                 json{{"business", business},
                      {"suspended", suspended},
                      {"reason", suspended && reason ? json(*reason) : json(nullptr)},
                      {"updatedAt", format_iso8601(o.events.front().time)}},
                 suspended ? "Business suspended" : "Business resumed"));
    });
  });
}

void suspend(Protocol& p, Request&& req, const PathParams& params, Responder respond) {
  set_suspended(p, std::move(req), params, std::move(respond), true);
}
void resume(Protocol& p, Request&& req, const PathParams& params, Responder respond) {
  set_suspended(p, std::move(req), params, std::move(respond), false);
}

// The business of account `id`, or nullopt once `respond` has the 404 or 503.
std::optional<std::string> business_of_account(const Protocol& p, const std::string& id,
                                               const Responder& respond) {
  const auto a = p.views().any_account(id);
  if (!a) {
    respond(unavailable(a.status()));
    return std::nullopt;
  }
  if (!a.value()) {
    respond(http::error(404, "Data not found"));
    return std::nullopt;
  }
  return a.value()->value("business", "");
}

// Live mode on (or off) for an account: the admin's act, never a key's.
void update_account(Protocol& p, Request&& req, const PathParams& params, Responder respond) {
  if (!admin(p, req, respond)) return;
  auto body = http::parse_json_object(req.body);
  if (!body) return respond(http::bad_request());
  http::Validator v(*body);
  v.field("live").is_boolean();
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));
  const std::string id = params.at("id");
  const auto business = business_of_account(p, id, respond);
  if (!business) return;
  UpdateAccount cmd{admin_caller(*business, id), id, std::nullopt, body->at("live").get<bool>(),
                    std::nullopt};
  submit_update_account(p, std::move(cmd), std::move(respond));
}

// New keys for an account whose tenant lost its own (or after an upgrade removed credentials.json).
void roll_keys(Protocol& p, Request&& req, const PathParams& params, Responder respond) {
  if (!admin(p, req, respond)) return;
  auto body = http::parse_json_object(req.body);
  if (!body) return respond(http::bad_request());
  http::Validator v(*body);
  v.field("mode").is_string().is_in({"test", "live"});
  v.field("overlapSeconds").is_int().min(0).max(kKeyOverlapSecondsMax);
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));
  const std::string id = params.at("id");
  const auto business = business_of_account(p, id, respond);
  if (!business) return;
  Caller caller = admin_caller(*business, id);
  caller.live = body->at("mode") == "live";
  roll_secret_key(p, std::move(caller), id, *http::as_int64(body->at("overlapSeconds")), std::move(respond));
}

}  // namespace

void add_admin_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol) {
  router.post("/v1/admin/businesses", route(protocol, create_business));
  router.post("/v1/admin/businesses/{id}/suspend", route(protocol, suspend));
  router.post("/v1/admin/businesses/{id}/resume", route(protocol, resume));
  router.patch("/v1/admin/accounts/{id}", route(protocol, update_account));
  router.post("/v1/admin/accounts/{id}/keys/roll", route(protocol, roll_keys));
}

}  // namespace kobo::api
