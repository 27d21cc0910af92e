// The caller's account's webhook events: GET /v1/events?after=&limit= (docs/webhooks.md), for a
// receiver that missed deliveries. Each event as it was or would have been delivered: the body is
// rendered by the one renderer deliveries use (render::webhook_body), from the views' rows.

#include "projection/render.h"
#include "query-api/envelope.h"
#include "query-api/route.h"

namespace kobo::api {
namespace {

constexpr std::int64_t kEventsLimitMax = 1000;
constexpr std::int64_t kEventsLimitDefault = 100;

struct EventsQuery {
  std::uint64_t after = 0;
  std::uint64_t limit = kEventsLimitDefault;
};

EventsQuery events_query(const Exchange&, http::QueryValidator& q) {
  const auto after = q.integer("after", 0);
  const auto limit = q.integer("limit", 1, kEventsLimitMax);
  return {static_cast<std::uint64_t>(after.value_or(0)),
          static_cast<std::uint64_t>(limit.value_or(kEventsLimitDefault))};
}

http::Response events(const Exchange& x, const EventsQuery& q) {
  const auto events =
      x.views().webhook_events(x.caller.caller.account, x.caller.scope.live, q.after, q.limit);
  if (!events) return unavailable(events.status());
  std::string data;
  JsonWriter w(data);
  w.begin_array();
  for (const WebhookEvent& e : events.value())
    render::webhook_event(w, e.sequence, e.id, e.type, e.time, e.body);
  w.end_array();
  return http::ok_text(200, data);
}

}  // namespace

void add_event_routes(Routes& routes) {
  routes.read(ReadRoute<EventsQuery>{.path = "/v1/events",
                                     .traits = {.kind = RouteKind::read, .cost = ReadCost::heavy},
                                     .query = events_query,
                                     .read = events});
}

}  // namespace kobo::api
