// Account settings: GET /v1/accounts, PATCH /v1/accounts/{id} (the caller's mode's webhook URLs and
// subscriptions; live mode is the admin's, routes/admin.cc), and the account's webhook secret:
// POST /v1/accounts/{id}/webhook-secret (when the service delivers webhooks).

#include "common/json_writer.h"
#include "events/ledger.h"
#include "query-api/envelope.h"
#include "query-api/rejections.h"
#include "query-api/route.h"
#include "webhooks/webhooks.h"

namespace kobo::api {
namespace {

using http::Response;
using nlohmann::json;

constexpr std::size_t kWebhooksMax = 5;

AccountFilter account_filter(http::QueryValidator& q) {
  AccountFilter f;
  f.name = q.text("name");
  f.is_default = q.boolean("isDefault");
  f.live = q.boolean("live");
  return f;
}

// The account as the caller's mode shows it: that mode's webhook settings only.
Result<std::optional<std::string>> account_named(const Exchange& x, std::string_view) {
  return x.views().account_text(x.caller.caller.business, x.param("id"), x.caller.caller.live);
}

// Whether the caller's business has the account the path names: nullopt if so, else the answer.
std::optional<Response> unknown_account(const Exchange& x) {
  const auto a = account_named(x, {});
  if (!a) return unavailable(a.status());
  if (!a.value()) return http::error(404, "Data not found");
  return std::nullopt;
}

void update_rules(const Exchange&, http::Validator& v) {
  v.optional("webhooks").is_array().array_max_size(kWebhooksMax).each_is_url();
  v.optional("live").is_boolean();
  v.optional("webhookEvents").is_array().each_is_string();
}

// The account's settings must name event types of the catalog and public URLs (what the rules
// cannot say), and the account must be the caller's business's (it reads the views).
Made update(const Exchange& x) {
  const json& body = x.body;
  // Going live is the admin's act (PATCH /v1/admin/accounts/{id}); a key of either mode changes
  // only its own mode's settings.
  if (body.contains("live") && !body.at("live").is_null())
    return http::error(403, "Live mode is enabled by the admin");
  // The event types the account wants, each once, in the order of the catalog.
  std::optional<std::vector<std::string>> webhook_events;
  if (body.contains("webhookEvents") && !body.at("webhookEvents").is_null()) {
    std::array<bool, kWebhookEventTypes> wanted{};
    for (const auto& t : body.at("webhookEvents")) {
      const auto type = webhook_event_type_from_string(t.get<std::string>());
      if (!type)
        return http::validation_error(
            {{"webhookEvents",
              {{"isIn",
                "each value in webhookEvents must be one of the following values: account.credit, "
                "account.debit, account.debit.failed"}}}});
      wanted[static_cast<std::size_t>(*type)] = true;
    }
    webhook_events.emplace();
    for (std::size_t i = 0; i < wanted.size(); ++i)
      if (wanted[i]) webhook_events->emplace_back(to_string(static_cast<WebhookEventType>(i)));
  }
  if (x.options().webhooks != nullptr && body.contains("webhooks") && body.at("webhooks").is_array())
    for (const auto& url : body.at("webhooks"))
      // Said without naming the address or why it is not public: a tenant learns nothing of
      // what is inside the service's network.
      if (x.options().webhooks->refused_url(url.get<std::string>()))
        return http::validation_error(
            {{"webhooks", {{"isUrl", "each value in webhooks must be a public URL address"}}}});
  if (auto unknown = unknown_account(x)) return std::move(*unknown);
  UpdateAccount cmd{x.caller.caller, x.param("id"), std::nullopt, std::nullopt, std::move(webhook_events)};
  if (body.contains("webhooks") && !body.at("webhooks").is_null())
    cmd.webhooks = body.at("webhooks").get<std::vector<std::string>>();
  return cmd;
}

// Issues or rotates the account's webhook secret of the caller's mode and answers it, the only
// time it is shown: derived from the appended event (webhooks.h WebhookSecrets), so the answer
// needs no wait for the views. The previous secret, if any, is still signed with for 24 hours.
Made rotate(const Exchange& x) {
  if (auto unknown = unknown_account(x)) return std::move(*unknown);
  const auto before = x.views().webhook(x.param("id"), x.caller.caller.live);
  if (!before) return unavailable(before.status());
  const bool had_secret = !before.value().secret.empty();
  Answer answer;
  answer.accepted = [had_secret](const Exchange& done, Outcome o, http::Responder respond) {
    KOBO_ASSERT(o.events.size() == 1, "a webhook secret's rotation is one event");
    const Event& e = o.events.front();
    const std::string& account = done.param("id");
    const bool live = done.caller.caller.live;
    const UnixMs overlap_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(kWebhookSecretOverlap).count();
    const auto secret = done.options().webhook_secrets->secret(account, live, e.hash);
    if (!secret) return respond(unavailable(secret.status()));
    std::string data;
    JsonWriter w(data);
    w.begin_object()
        .member("account", account)
        .member("createdAt", format_iso8601(e.time))
        .member("live", live);
    if (had_secret)
      w.member("previousSecretExpiresAt", format_iso8601(e.time + overlap_ms));
    else
      w.null_member("previousSecretExpiresAt");
    w.member("secret", secret.value()).end_object();
    respond(http::ok_text(201, data, "Webhook secret created successfully"));
  };
  return Submission(RotateWebhookSecret{x.caller.caller, x.param("id")}, std::move(answer));
}

}  // namespace

void add_account_routes(Routes& routes) {
  // Accounts belong to the business, not to a mode; each mode sees its own webhook settings.
  routes.list(ListRoute<AccountFilter>{
      .path = "/v1/accounts",
      .filter = account_filter,
      .page = [](const Exchange& x, const AccountFilter& f, const PageRequest& p) {
        return x.views().accounts(x.caller.caller.business, x.caller.caller.live, f, p);
      }});
  routes.command({.method = boost::beast::http::verb::patch,
                  .path = "/v1/accounts/{id}",
                  .rules = update_rules,
                  .make_reads_views = true,
                  .make = update,
                  .answer = projected(200, "Account updated successfully", account_named),
                  .rejected = account_rejected});
  if (routes.options().webhook_secrets != nullptr)
    routes.command({.path = "/v1/accounts/{id}/webhook-secret",
                    .make_reads_views = true,
                    .make = rotate,
                    .rejected = account_rejected});
}

}  // namespace kobo::api
