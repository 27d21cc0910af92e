// Operations: GET /healthz (the process runs), /readyz (503 with the reason while the node is not
// ready) and /metrics (Prometheus text). No authentication.

#include "common/metrics.h"
#include "query-api/api.h"

namespace kobo {

using http::PathParams;
using http::Request;
using http::Responder;
using http::Response;
using nlohmann::json;

void add_operational_routes(http::Router& router, std::function<std::string()> not_ready) {
  router.get("/healthz", [](Request&&, const PathParams&, Responder respond) {
    respond(Response{200, R"({"status":"ok"})", "application/json", {}});
  });
  router.get("/readyz", [not_ready = std::move(not_ready)](Request&&, const PathParams&, Responder respond) {
    const std::string reason = not_ready();
    if (reason.empty()) return respond(Response{200, R"({"status":"ready"})", "application/json", {}});
    respond(Response{503, json{{"status", "not ready"}, {"reason", reason}}.dump(), "application/json", {}});
  });
  router.get("/metrics", [](Request&&, const PathParams&, Responder respond) {
    respond(Response{200, metrics::registry().render(), "text/plain; version=0.0.4", {}});
  });
}

}  // namespace kobo
