// The admin API: POST /v1/admin/businesses, enabled by --admin-key (header x-admin-key).

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

void create_business(Protocol& p, Request&& req, const PathParams&, Responder respond) {
  if (p.options().admin_key.empty()) return respond(http::route_not_found());
  if (!constant_time_equal(sha256_hex(req.header("x-admin-key")), sha256_hex(p.options().admin_key)))
    return respond(http::error(401, "Unauthorized"));
  auto body = http::parse_json_object(req.body);
  if (!body) return respond(http::bad_request());
  http::Validator v(*body);
  v.field("name").is_not_empty().is_string().max_length(kNameLengthMax);
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));
  const Credentials creds = new_credentials();
  // Webhooks are signed with the secret keys, which the log holds only as digests.
  if (p.options().signing_keys != nullptr) {
    if (auto s =
            p.options().signing_keys->put(creds.account_id, creds.test_secret_key, creds.live_secret_key);
        !s) {
      log::error("cannot store signing keys", {{"error", s.message()}});
      return respond(http::internal_error());
    }
  }
  p.ledger().submit(create_business_command(creds, body->at("name")),
                    [&p, creds, respond = std::move(respond)](const Outcome& o) mutable {
                      if (!o.ok()) return respond(rejection_response(o.rejection));
                      // The keys must work as soon as they are handed out.
                      p.after_projection(o, std::move(respond), [creds, o](Responder r) {
                        const Event& e = o.events.front();
                        const auto records =
                            render::business_records(e, std::get<BusinessRegistered>(e.data));
                        r(http::ok(201,
                                   json{{"business", json::parse(records.business)},
                                        {"account", json::parse(records.account)},
                                        {"credentials", to_json(creds)}},
                                   "Business created successfully"));
                      });
                    });
}

}  // namespace

void add_admin_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol) {
  router.post("/v1/admin/businesses", route(protocol, create_business));
}

}  // namespace kobo::api
