// The admin API, enabled by an admin key (--admin-key-file, KOBO_ADMIN_KEY; header x-admin-key):
// POST /v1/admin/businesses (a business and its keys, shown once), POST
// /v1/admin/businesses/{id}/suspend and /resume, PUT /v1/admin/businesses/{id}/rate-limits (the
// business's own, docs/security.md), and PATCH /v1/admin/accounts/{id} (live mode).
// The admin's roll of a tenant's keys is with the keys (routes/keys.cc). Every event they write
// records the actor "admin".

#include "common/json_writer.h"
#include "common/log.h"
#include "projection/render.h"
#include "query-api/credentials.h"
#include "query-api/envelope.h"
#include "query-api/rejections.h"
#include "query-api/route.h"

namespace kobo::api {
namespace {

using http::Response;

// The caller the admin acts as for business `business`: not a key's, in test mode.
Caller admin_caller(std::string business, std::string account = {}) {
  return Caller{std::move(business), std::move(account), false, std::string(kAdminActor)};
}

// The new business's keys: the only time its secret keys are shown. Once the views have the
// business, so that the keys work as soon as they are handed out.
Answer business_answer(Credentials creds) {
  Answer a;
  a.accepted = [creds = std::move(creds)](const Exchange& x, const Outcome& o, http::Responder respond) {
    x.protocol.after_projection(o, std::move(respond), [creds, o](http::Responder r) {
      const Event& e = o.events.front();
      const auto records = render::business_records(e, std::get<BusinessRegistered>(e.data));
      std::string data;
      JsonWriter w(data);
      w.begin_object().raw_member("account", records.account).raw_member("business", records.business);
      w.key("credentials");
      write_credentials(w, creds);
      w.end_object();
      Response answer = http::ok_text(201, data, "Business created successfully");
      answer.headers.emplace_back("Cache-Control", "no-store");  // the keys are shown once
      r(std::move(answer));
    });
  };
  return a;
}

Made create_business(const Exchange& x) {
  const Credentials creds = new_credentials();
  // Webhooks are signed with the secret keys: the log holds them as digests, and wrapped.
  auto command = create_business_command(creds, x.body.at("name"), x.options().master_key);
  if (!command) return unavailable(command.status());
  command.value().actor = std::string(kAdminActor);
  return Submission(std::move(command).value(), business_answer(creds));
}

// Suspends (`suspended`) or resumes a business: while suspended, every key of it is refused 403.
// The body is optional ({"reason": …} for a suspension), so make() reads it itself.
Made set_suspended(const Exchange& x, bool suspended) {
  std::optional<std::string> reason;
  if (!x.request.body.empty()) {
    auto body = http::parse_json_object(x.request.body);
    if (!body) return http::bad_request();
    http::Validator v(*body);
    v.optional("reason").is_string().max_length(kTextLengthMax);
    if (auto errors = v.errors()) return http::validation_error(*errors);
    reason = optional_string(*body, "reason");
  }
  const std::string& business = x.param("id");
  const auto known = x.views().has_business(business);
  if (!known) return unavailable(known.status());
  if (!known.value()) return http::error(404, "Data not found");
  if (!suspended) reason.reset();
  Answer answer;
  answer.accepted = [business, suspended, reason](const Exchange& done, const Outcome& o,
                                                  http::Responder respond) {
    // Every key of it is refused (or works again) from the answer on.
    done.protocol.after_projection(
        o, std::move(respond), [o, business, suspended, reason](http::Responder r) {
          std::string data;
          JsonWriter w(data);
          w.begin_object().member("business", business);
          if (reason)
            w.member("reason", *reason);
          else
            w.null_member("reason");
          w.member("suspended", suspended)
              .member("updatedAt", format_iso8601(o.events.front().time))
              .end_object();
          r(http::ok_text(200, data, suspended ? "Business suspended" : "Business resumed"));
        });
  };
  return Submission(SuspendBusiness{admin_caller(business), suspended, reason}, std::move(answer));
}

// A rate limit of the body: absent or null, the deployment's.
std::optional<std::uint64_t> limit_of(const nlohmann::json& body, const char* name) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) return std::nullopt;
  return it->get<std::uint64_t>();
}

void write_limit(JsonWriter& w, std::string_view name, const std::optional<std::uint64_t>& limit) {
  if (limit)
    w.member(name, *limit);
  else
    w.null_member(name);
}

// The business's own rate limits, in place of the deployment's: every node's limiter reads them
// from its views, within a second of applying the event.
Made set_rate_limits(const Exchange& x) {
  const std::string& business = x.param("id");
  const auto known = x.views().has_business(business);
  if (!known) return unavailable(known.status());
  if (!known.value()) return http::error(404, "Data not found");
  const auto reads = limit_of(x.body, "readsPerSecond");
  const auto writes = limit_of(x.body, "writesPerSecond");
  Answer answer;
  answer.accepted = [business, reads, writes](const Exchange& done, const Outcome& o,
                                              http::Responder respond) {
    done.protocol.after_projection(o, std::move(respond), [o, business, reads, writes](http::Responder r) {
      std::string data;
      JsonWriter w(data);
      w.begin_object().member("business", business);
      write_limit(w, "readsPerSecond", reads);
      w.member("updatedAt", format_iso8601(o.events.front().time));
      write_limit(w, "writesPerSecond", writes);
      w.end_object();
      r(http::ok_text(200, data, "Rate limits set"));
    });
  };
  return Submission(SetRateLimits{admin_caller(business), reads, writes}, std::move(answer));
}

// The account the admin changed, as a test key sees it (its live flag is the business's own).
Result<std::optional<std::string>> admin_account(const Exchange& x, std::string_view) {
  const auto business = x.views().account_business(x.param("id"));
  if (!business) return business.status();
  if (!business.value()) return std::optional<std::string>();
  return x.views().account_text(*business.value(), x.param("id"), false);
}

// Live mode on (or off) for an account: the admin's act, never a key's.
Made update_account(const Exchange& x) {
  const std::string& id = x.param("id");
  const auto business = x.views().account_business(id);
  if (!business) return unavailable(business.status());
  if (!business.value()) return http::error(404, "Data not found");
  return UpdateAccount{admin_caller(*business.value(), id), id, std::nullopt, x.body.at("live").get<bool>(),
                       std::nullopt};
}

}  // namespace

void add_admin_routes(Routes& routes) {
  const RouteTraits admin{.kind = RouteKind::admin, .partition = PartitionOf::none};
  routes.command({.path = "/v1/admin/businesses",
                  .traits = admin,
                  .rules =
                      [](const Exchange&, http::Validator& v) {
                        v.field("name").is_not_empty().is_string().max_length(kNameLengthMax);
                      },
                  .make = create_business});
  routes.command({.path = "/v1/admin/businesses/{id}/suspend",
                  .traits = admin,
                  .make = [](const Exchange& x) { return set_suspended(x, true); },
                  .rejected = account_rejected});
  routes.command({.path = "/v1/admin/businesses/{id}/resume",
                  .traits = admin,
                  .make = [](const Exchange& x) { return set_suspended(x, false); },
                  .rejected = account_rejected});
  routes.command({.method = boost::beast::http::verb::put,
                  .path = "/v1/admin/businesses/{id}/rate-limits",
                  .traits = admin,
                  .rules =
                      [](const Exchange&, http::Validator& v) {
                        for (const char* name : {"readsPerSecond", "writesPerSecond"})
                          v.optional(name).is_int().min(0).max(
                              static_cast<std::int64_t>(kRateLimitPerSecondMax));
                      },
                  .make = set_rate_limits,
                  .rejected = account_rejected});
  routes.command({.method = boost::beast::http::verb::patch,
                  .path = "/v1/admin/accounts/{id}",
                  .traits = admin,
                  .rules = [](const Exchange&, http::Validator& v) { v.field("live").is_boolean(); },
                  .make = update_account,
                  .answer = projected(200, "Account updated successfully", admin_account),
                  .rejected = account_rejected});
}

}  // namespace kobo::api
