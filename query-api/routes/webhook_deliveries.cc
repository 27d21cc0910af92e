// Webhook deliveries: GET /v1/webhook-deliveries and POST /v1/webhook-deliveries/{id}/retry,
// when the service delivers webhooks (ApiOptions::webhooks).

#include "query-api/answer.h"
#include "query-api/envelope.h"

namespace kobo::api {
namespace {

using http::PathParams;
using http::Request;
using http::Responder;
using nlohmann::json;

void list_webhook_deliveries(Protocol& p, Request&& req, const PathParams&, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  http::QueryValidator q(req.query);
  DeliveryFilter filter;
  if (auto status = q.one_of("status", {"pending", "succeeded", "failed"}))
    filter.status = *status == "pending"     ? DeliveryStatus::pending
                    : *status == "succeeded" ? DeliveryStatus::succeeded
                                             : DeliveryStatus::failed;
  const auto page = q.pagination();
  if (auto errors = q.errors()) return respond(http::validation_error(*errors));
  respond(list(p.options().webhooks->deliveries(c->scope, filter, to_page(page)), page));
}

void retry_webhook_delivery(Protocol& p, Request&& req, const PathParams& params, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  json record;
  switch (p.options().webhooks->retry(c->scope, params.at("id"), &record)) {
    case Webhooks::RetryOutcome::not_found:
      return respond(http::error(404, "Data not found"));
    case Webhooks::RetryOutcome::in_progress:
      return respond(http::error(409, "Delivery attempt in progress"));
    case Webhooks::RetryOutcome::queued:
      return respond(http::ok(200, record, "Webhook delivery queued"));
    case Webhooks::RetryOutcome::unavailable:
      return respond(http::error(503, "Service unavailable"));
  }
}

}  // namespace

void add_webhook_delivery_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol) {
  router.get("/v1/webhook-deliveries", route(protocol, list_webhook_deliveries));
  router.post("/v1/webhook-deliveries/{id}/retry", route(protocol, retry_webhook_delivery));
}

}  // namespace kobo::api
