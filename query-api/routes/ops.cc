// Operations: GET /healthz (the process runs), /readyz (503 with the reason while the node is not
// ready) and /metrics (Prometheus text). No authentication: operational routes (route.h).

#include "common/json_writer.h"
#include "common/metrics.h"
#include "query-api/api.h"
#include "query-api/route.h"

namespace kobo {

using http::Response;

void add_operational_routes(http::Router& router, std::function<std::string()> not_ready) {
  using api::Routes;
  Routes::operational(router, "/healthz", [] {
    return Response{200, R"({"status":"ok"})", "application/json", {}};
  });
  Routes::operational(router, "/readyz", [not_ready = std::move(not_ready)] {
    const std::string reason = not_ready();
    if (reason.empty()) return Response{200, R"({"status":"ready"})", "application/json", {}};
    std::string body;
    JsonWriter(body).begin_object().member("reason", reason).member("status", "not ready").end_object();
    return Response{503, std::move(body), "application/json", {}};
  });
  Routes::operational(router, "/metrics", [] {
    return Response{200, metrics::registry().render(), "text/plain; version=0.0.4", {}};
  });
}

}  // namespace kobo
