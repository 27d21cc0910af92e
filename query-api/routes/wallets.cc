// Wallets: POST and GET /v1/virtual-accounts, GET and PATCH /v1/virtual-accounts/{id} (the
// wallet's KYC tier, extensions.md section 3).

#include "query-api/answer.h"
#include "query-api/envelope.h"

namespace kobo::api {
namespace {

using http::PathParams;
using http::Request;
using http::Responder;
using nlohmann::json;

void create_wallet(Protocol& p, Request&& req, const PathParams&, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  auto body = http::parse_json_object(req.body);
  if (!body) return respond(http::bad_request());
  http::Validator v(*body);
  v.field("accountName").is_not_empty().is_string().max_length(kNameLengthMax);
  v.field("category").is_not_empty().is_string().is_in({"primary", "secondary"});
  v.field("currency").is_not_empty().is_string().is_in({"NGN"});
  const bool secondary = body->value("category", json()) == "secondary";
  auto email = secondary ? v.field("emailAddress") : v.optional("emailAddress");
  email.is_string().is_email();
  auto mobile = secondary ? v.field("mobile") : v.optional("mobile");
  mobile.is_object();
  auto m = v.nested("mobile");
  m.field("phoneNumber").is_not_empty().is_string().max_length(32);
  m.field("isoCode").is_not_empty().is_string().max_length(8);
  check_kyc_tier(v, *body, /*required=*/false);
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));

  CreateWallet cmd{c->caller,    body->at("accountName"), body->at("category"), std::nullopt,
                   std::nullopt, kyc_tier_of(*body)};
  if (body->contains("emailAddress") && !body->at("emailAddress").is_null())
    cmd.email_address = body->at("emailAddress");
  if (body->contains("mobile") && !body->at("mobile").is_null())
    cmd.mobile = Mobile{body->at("mobile").at("isoCode"), body->at("mobile").at("phoneNumber")};
  p.ledger().submit(std::move(cmd), [&p, respond = std::move(respond)](Outcome o) {
    if (!o.ok()) return respond(rejection_response(o.rejection));
    p.answer_created(std::move(o), 201, "Virtual account created successfully", respond);
  });
}

void get_wallet(Protocol& p, Request&& req, const PathParams& params, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  p.barrier(*c, std::move(respond), [&p, scope = c->scope, id = params.at("id")](Responder r) {
    r(one_record(p.views().wallet_text(scope, id)));
  });
}

void set_wallet_tier(Protocol& p, Request&& req, const PathParams& params, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  auto body = http::parse_json_object(req.body);
  if (!body) return respond(http::bad_request());
  http::Validator v(*body);
  check_kyc_tier(v, *body, /*required=*/true);
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));
  SetWalletTier cmd{c->caller, params.at("id"), kyc_tier_of(*body)};
  p.ledger().submit(std::move(cmd), [&p, scope = c->scope, id = params.at("id"),
                                     respond = std::move(respond)](const Outcome& o) mutable {
    if (!o.ok()) return respond(rejection_response(o.rejection));
    p.after_projection(o, std::move(respond), [&p, scope, id](Responder r) {
      const auto text = p.views().wallet_text(scope, id);
      if (!text) return r(unavailable(text.status()));
      KOBO_ASSERT(text.value().has_value(), "a wallet the writer changed is missing from the views");
      r(http::ok_text(200, *text.value(), "Virtual account updated successfully"));
    });
  });
}

void list_wallets(Protocol& p, Request&& req, const PathParams&, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  http::QueryValidator q(req.query);
  WalletFilter filter;
  filter.category = q.one_of("category", {"primary", "secondary"});
  filter.is_favourite = q.boolean("isFavourite");
  filter.live = q.boolean("live");
  const auto page = q.pagination();
  if (auto errors = q.errors()) return respond(http::validation_error(*errors));
  p.barrier(*c, std::move(respond), [&p, scope = c->scope, filter, page](Responder r) {
    r(list(p.views().wallets(scope, filter, to_page(page)), page));
  });
}

}  // namespace

void add_wallet_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol) {
  router.post("/v1/virtual-accounts", route(protocol, create_wallet));
  router.get("/v1/virtual-accounts", route(protocol, list_wallets));
  router.get("/v1/virtual-accounts/{id}", route(protocol, get_wallet));
  router.patch("/v1/virtual-accounts/{id}", route(protocol, set_wallet_tier));
}

}  // namespace kobo::api
