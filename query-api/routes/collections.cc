// Collection and transit wallets: POST /v1/collection-accounts, POST /v1/transit-accounts.

#include "query-api/answer.h"
#include "query-api/envelope.h"

namespace kobo::api {
namespace {

using http::PathParams;
using http::Request;
using http::Responder;

constexpr std::int64_t kExpireInMax = 1800;  // seconds

void create_collection(Protocol& p, Request&& req, const PathParams&, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  auto body = http::parse_json_object(req.body);
  if (!body) return respond(http::bad_request());
  http::Validator v(*body);
  v.field("destination").is_not_empty().is_string().max_length(kTextLengthMax);
  v.field("accountName").is_not_empty().is_string().max_length(kNameLengthMax);
  v.field("amount").is_int().min(1).max(kAmountMax);
  v.field("expireIn").is_int().min(p.options().expire_in_min_s).max(kExpireInMax);
  v.optional("reference").is_string().min_length(5).max_length(kTextLengthMax);
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));
  CreateCollection cmd{c->caller,
                       body->at("destination"),
                       body->at("accountName"),
                       Kobo(*http::as_int64(body->at("amount"))),
                       *http::as_int64(body->at("expireIn")),
                       optional_string(*body, "reference")};
  p.ledger().submit(std::move(cmd), [&p, respond = std::move(respond)](Outcome o) {
    if (!o.ok()) return respond(rejection_response(o.rejection));
    p.answer_created(std::move(o), 201, "Collection account created successfully", respond);
  });
}

void create_transit(Protocol& p, Request&& req, const PathParams&, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  auto body = http::parse_json_object(req.body);
  if (!body) return respond(http::bad_request());
  http::Validator v(*body);
  v.field("accountName").is_not_empty().is_string().max_length(kNameLengthMax);
  v.field("currency").is_not_empty().is_string().is_in({"NGN"});
  v.field("settlementAccount").is_not_empty().is_string().max_length(kTextLengthMax);
  v.optional("emailAddress").is_string().is_email();
  v.optional("mobile").is_object();
  auto m = v.nested("mobile");
  m.field("phoneNumber").is_not_empty().is_string().max_length(32);
  m.field("isoCode").is_not_empty().is_string().max_length(8);
  check_kyc_tier(v, *body, /*required=*/false);
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));
  CreateTransitWallet cmd{c->caller,
                          body->at("accountName"),
                          body->at("settlementAccount"),
                          optional_string(*body, "emailAddress"),
                          std::nullopt,
                          kyc_tier_of(*body)};
  if (body->contains("mobile") && body->at("mobile").is_object())
    cmd.mobile = Mobile{body->at("mobile").at("isoCode"), body->at("mobile").at("phoneNumber")};
  p.ledger().submit(std::move(cmd), [&p, respond = std::move(respond)](Outcome o) {
    if (!o.ok()) return respond(rejection_response(o.rejection));
    p.answer_created(std::move(o), 201, "Transit account created successfully", respond);
  });
}

}  // namespace

void add_collection_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol) {
  router.post("/v1/collection-accounts", route(protocol, create_collection));
  router.post("/v1/transit-accounts", route(protocol, create_transit));
}

}  // namespace kobo::api
