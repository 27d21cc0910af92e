// Account settings: GET /v1/accounts and PATCH /v1/accounts/{id}.

#include "query-api/answer.h"
#include "query-api/envelope.h"

namespace kobo::api {
namespace {

using http::PathParams;
using http::Request;
using http::Responder;

constexpr std::size_t kWebhooksMax = 5;

void list_accounts(Protocol& p, Request&& req, const PathParams&, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  http::QueryValidator q(req.query);
  AccountFilter filter;
  filter.name = q.text("name");
  filter.is_default = q.boolean("isDefault");
  filter.live = q.boolean("live");
  const auto page = q.pagination();
  if (auto errors = q.errors()) return respond(http::validation_error(*errors));
  p.barrier(*c, std::move(respond), [&p, business = c->caller.business, filter, page](Responder r) {
    r(list(p.views().accounts(business, filter, to_page(page)), page));
  });
}

void submit_update_account(Protocol& p, UpdateAccount cmd, Responder respond) {
  const std::string business = cmd.caller.business;
  const std::string id = cmd.account_id;
  p.ledger().submit(
      std::move(cmd), [&p, business, id, respond = std::move(respond)](const Outcome& o) mutable {
        if (!o.ok())
          return respond(o.rejection == Rejection::account_not_found ? http::error(404, "Data not found")
                                                                     : rejection_response(o.rejection));
        p.after_projection(o, std::move(respond), [&p, business, id](Responder r) {
          const auto a = p.views().account(business, id);
          if (!a) return r(unavailable(a.status()));
          KOBO_ASSERT(a.value().has_value(), "an updated account is missing from the views");
          r(http::ok(200, *a.value(), "Account updated successfully"));
        });
      });
}

void update_account(Protocol& p, Request&& req, const PathParams& params, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  auto body = http::parse_json_object(req.body);
  if (!body) return respond(http::bad_request());
  http::Validator v(*body);
  v.optional("webhooks").is_array().array_max_size(kWebhooksMax).each_is_url();
  v.optional("live").is_boolean();
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));
  if (p.options().webhooks != nullptr && body->contains("webhooks") && body->at("webhooks").is_array())
    for (const auto& url : body->at("webhooks"))
      if (auto why = p.options().webhooks->refused_url(url.get<std::string>()))
        return respond(http::validation_error(
            {{"webhooks", {{"isUrl", "each value in webhooks must be a public URL address: " + *why}}}}));
  UpdateAccount cmd{c->caller, params.at("id"), std::nullopt, std::nullopt};
  if (body->contains("webhooks") && !body->at("webhooks").is_null())
    cmd.webhooks = body->at("webhooks").get<std::vector<std::string>>();
  if (body->contains("live") && !body->at("live").is_null()) cmd.live = body->at("live").get<bool>();
  p.barrier(*c, std::move(respond), [&p, cmd = std::move(cmd)](Responder r) mutable {
    const auto a = p.views().account(cmd.caller.business, cmd.account_id);
    if (!a) return r(unavailable(a.status()));
    if (!a.value()) return r(http::error(404, "Data not found"));
    submit_update_account(p, std::move(cmd), std::move(r));
  });
}

}  // namespace

void add_account_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol) {
  router.get("/v1/accounts", route(protocol, list_accounts));
  router.patch("/v1/accounts/{id}", route(protocol, update_account));
}

}  // namespace kobo::api
