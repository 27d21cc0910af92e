// Webhook deliveries: GET /v1/webhook-deliveries and POST /v1/webhook-deliveries/{id}/retry,
// when the service delivers webhooks (ApiOptions::webhooks). They are the webhooks' own store,
// not the views: no read barrier.

#include "query-api/envelope.h"
#include "query-api/route.h"

namespace kobo::api {
namespace {

DeliveryFilter delivery_filter(http::QueryValidator& q) {
  DeliveryFilter f;
  if (auto status = q.one_of("status", {"pending", "succeeded", "failed"}))
    f.status = *status == "pending"     ? DeliveryStatus::pending
               : *status == "succeeded" ? DeliveryStatus::succeeded
                                        : DeliveryStatus::failed;
  return f;
}

// Not the writer's work: the answer is the whole of it.
Made retry(const Exchange& x) {
  std::string record;
  switch (x.options().webhooks->retry(x.caller.scope, x.param("id"), &record)) {
    case Webhooks::RetryOutcome::not_found:
      return http::error(404, "Data not found");
    case Webhooks::RetryOutcome::in_progress:
      return http::error(409, "Delivery attempt in progress");
    case Webhooks::RetryOutcome::queued:
      return http::ok_text(200, record, "Webhook delivery queued");
    case Webhooks::RetryOutcome::unavailable:
      break;
  }
  return http::error(503, "Service unavailable");
}

}  // namespace

void add_webhook_delivery_routes(Routes& routes) {
  routes.list(ListRoute<DeliveryFilter>{
      .path = "/v1/webhook-deliveries",
      .filter = delivery_filter,
      .reads_views = false,
      .page = [](const Exchange& x, const DeliveryFilter& f, const PageRequest& p) -> Result<Page> {
        return x.options().webhooks->deliveries(x.caller.scope, f, p);
      }});
  routes.command({.path = "/v1/webhook-deliveries/{id}/retry", .make = retry});
}

}  // namespace kobo::api
