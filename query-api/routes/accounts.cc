// Account settings: GET /v1/accounts, PATCH /v1/accounts/{id} (the caller's mode's webhook URLs and
// subscriptions; live mode is the admin's), and the account's webhook secret:
// POST /v1/accounts/{id}/webhook-secret (when the service delivers webhooks).

#include "events/ledger.h"
#include "projection/render.h"
#include "query-api/answer.h"
#include "query-api/envelope.h"
#include "webhooks/webhooks.h"

namespace kobo::api {
namespace {

using http::PathParams;
using http::Request;
using http::Responder;
using nlohmann::json;

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
  p.barrier(*c, std::move(respond),
            [&p, business = c->caller.business, live = c->caller.live, filter, page](Responder r) {
              auto accounts = p.views().accounts(business, filter, to_page(page));
              // Each mode sees its own webhook settings.
              if (accounts)
                for (auto& a : accounts.value().items) a = render::account_in_mode(std::move(a), live);
              r(list(std::move(accounts), page));
            });
}

}  // namespace

void submit_update_account(Protocol& p, UpdateAccount cmd, http::Responder respond) {
  const std::string business = cmd.caller.business;
  const std::string id = cmd.account_id;
  const bool live = cmd.caller.live;
  p.ledger().submit(std::move(cmd), [&p, business, id, live,
                                     respond = std::move(respond)](const Outcome& o) mutable {
    if (!o.ok())
      return respond(o.rejection == Rejection::account_not_found ? http::error(404, "Data not found")
                                                                 : rejection_response(o.rejection));
    p.after_projection(o, std::move(respond), [&p, business, id, live](http::Responder r) {
      const auto a = p.views().account(business, id);
      if (!a) return r(unavailable(a.status()));
      KOBO_ASSERT(a.value().has_value(), "an updated account is missing from the views");
      r(http::ok(200, render::account_in_mode(std::move(*a.value()), live), "Account updated successfully"));
    });
  });
}

namespace {

void update_account(Protocol& p, Request&& req, const PathParams& params, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  auto body = http::parse_json_object(req.body);
  if (!body) return respond(http::bad_request());
  http::Validator v(*body);
  v.optional("webhooks").is_array().array_max_size(kWebhooksMax).each_is_url();
  v.optional("live").is_boolean();
  v.optional("webhookEvents").is_array().each_is_string();
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));
  // Going live is the admin's act (PATCH /v1/admin/accounts/{id}); a key of either mode changes
  // only its own mode's settings.
  if (body->contains("live") && !body->at("live").is_null())
    return respond(http::error(403, "Live mode is enabled by the admin"));
  // The event types the account wants, each once, in the order of the catalog.
  std::optional<std::vector<std::string>> webhook_events;
  if (body->contains("webhookEvents") && !body->at("webhookEvents").is_null()) {
    std::array<bool, kWebhookEventTypes> wanted{};
    for (const auto& t : body->at("webhookEvents")) {
      const auto type = webhook_event_type_from_string(t.get<std::string>());
      if (!type)
        return respond(http::validation_error(
            {{"webhookEvents",
              {{"isIn",
                "each value in webhookEvents must be one of the following values: account.credit, "
                "account.debit, account.debit.failed"}}}}));
      wanted[static_cast<std::size_t>(*type)] = true;
    }
    webhook_events.emplace();
    for (std::size_t i = 0; i < wanted.size(); ++i)
      if (wanted[i]) webhook_events->emplace_back(to_string(static_cast<WebhookEventType>(i)));
  }
  if (p.options().webhooks != nullptr && body->contains("webhooks") && body->at("webhooks").is_array())
    for (const auto& url : body->at("webhooks"))
      // Said without naming the address or why it is not public: a tenant learns nothing of
      // what is inside the service's network.
      if (p.options().webhooks->refused_url(url.get<std::string>()))
        return respond(http::validation_error(
            {{"webhooks", {{"isUrl", "each value in webhooks must be a public URL address"}}}}));
  UpdateAccount cmd{c->caller, params.at("id"), std::nullopt, std::nullopt, std::move(webhook_events)};
  if (body->contains("webhooks") && !body->at("webhooks").is_null())
    cmd.webhooks = body->at("webhooks").get<std::vector<std::string>>();
  p.barrier(*c, std::move(respond), [&p, cmd = std::move(cmd)](Responder r) mutable {
    const auto a = p.views().account(cmd.caller.business, cmd.account_id);
    if (!a) return r(unavailable(a.status()));
    if (!a.value()) return r(http::error(404, "Data not found"));
    submit_update_account(p, std::move(cmd), std::move(r));
  });
}

// Issues or rotates the account's webhook secret of the caller's mode and answers it, the only
// time it is shown: derived from the committed event (webhooks.h WebhookSecrets), so the answer
// needs no wait for the views. The previous secret, if any, is still signed with for 24 hours.
void rotate_webhook_secret(Protocol& p, Request&& req, const PathParams& params, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  RotateWebhookSecret cmd{c->caller, params.at("id")};
  p.barrier(*c, std::move(respond), [&p, cmd = std::move(cmd)](Responder r) mutable {
    const auto a = p.views().account(cmd.caller.business, cmd.account_id);
    if (!a) return r(unavailable(a.status()));
    if (!a.value()) return r(http::error(404, "Data not found"));
    const auto before = p.views().webhook(cmd.account_id, cmd.caller.live);
    if (!before) return r(unavailable(before.status()));
    const bool had_secret = !before.value().secret.empty();
    const std::string account = cmd.account_id;
    const bool live = cmd.caller.live;
    p.ledger().submit(
        std::move(cmd), [&p, account, live, had_secret, r = std::move(r)](const Outcome& o) mutable {
          if (!o.ok())
            return r(o.rejection == Rejection::account_not_found ? http::error(404, "Data not found")
                                                                 : rejection_response(o.rejection));
          KOBO_ASSERT(o.events.size() == 1, "a webhook secret's rotation is one event");
          const Event& e = o.events.front();
          const UnixMs overlap_ms =
              std::chrono::duration_cast<std::chrono::milliseconds>(kWebhookSecretOverlap).count();
          const auto secret = p.options().webhook_secrets->secret(account, live, e.hash);
          if (!secret) return r(unavailable(secret.status()));
          r(http::ok(201,
                     json{{"account", account},
                          {"live", live},
                          {"secret", secret.value()},
                          {"createdAt", format_iso8601(e.time)},
                          {"previousSecretExpiresAt",
                           had_secret ? json(format_iso8601(e.time + overlap_ms)) : json(nullptr)}},
                     "Webhook secret created successfully"));
        });
  });
}

}  // namespace

void add_account_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol) {
  router.get("/v1/accounts", route(protocol, list_accounts));
  router.patch("/v1/accounts/{id}", route(protocol, update_account));
  if (protocol->options().webhook_secrets != nullptr)
    router.post("/v1/accounts/{id}/webhook-secret", route(protocol, rotate_webhook_secret));
}

}  // namespace kobo::api
