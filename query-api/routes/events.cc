// The caller's account's webhook events: GET /v1/events?after=&limit= (docs/webhooks.md), for a
// receiver that missed deliveries. Each event as it was or would have been delivered: the body is
// rendered by the one renderer deliveries use (render::webhook_body), from the views' rows.

#include "query-api/answer.h"
#include "query-api/envelope.h"

namespace kobo::api {
namespace {

using http::PathParams;
using http::Request;
using http::Responder;
using nlohmann::json;

constexpr std::int64_t kEventsLimitMax = 1000;
constexpr std::int64_t kEventsLimitDefault = 100;

void list_events(Protocol& p, Request&& req, const PathParams&, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  http::QueryValidator q(req.query);
  const auto after = q.integer("after", 0);
  const auto limit = q.integer("limit", 1, kEventsLimitMax);
  if (auto errors = q.errors()) return respond(http::validation_error(*errors));
  p.barrier(*c, std::move(respond),
            [&p, account = c->caller.account, live = c->scope.live, after = after.value_or(0),
             limit = limit.value_or(kEventsLimitDefault)](Responder r) {
              const auto events = p.views().webhook_events(account, live, static_cast<std::uint64_t>(after),
                                                           static_cast<std::uint64_t>(limit));
              if (!events) return r(unavailable(events.status()));
              json data = json::array();
              for (const WebhookEvent& e : events.value())
                data.push_back(json{{"id", e.id},
                                    {"sequence", e.sequence},
                                    {"event", to_string(e.type)},
                                    {"createdAt", format_iso8601(e.time)},
                                    {"body", json::parse(e.body)}});
              r(http::ok(200, data));
            });
}

}  // namespace

void add_event_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol) {
  router.get("/v1/events", route(protocol, list_events));
}

}  // namespace kobo::api
