// Operations: GET /healthz (the process runs), /readyz (503 while the node is not ready; why is
// in the log) and /metrics (Prometheus text). No authentication.

#include <mutex>

#include "common/log.h"
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
  // The public answer says ready or not, nothing more: why a node is not ready names paths,
  // brokers and their errors, which are the operator's. The reason goes to the log when it
  // changes, and kobo_ready on /metrics says 1 or 0.
  struct Last {
    std::mutex mu;
    std::string reason;
  };
  auto last = std::make_shared<Last>();
  auto& ready = metrics::registry().gauge("kobo_ready", "1 while /readyz answers 200; the log says why not");
  router.get("/readyz", [not_ready = std::move(not_ready), last, &ready](Request&&, const PathParams&,
                                                                         Responder respond) {
    const std::string reason = not_ready();
    ready.set(reason.empty() ? 1.0 : 0.0);
    {
      std::lock_guard lock(last->mu);
      if (reason != last->reason) {
        if (reason.empty())
          log::info("ready");
        else
          log::warn("not ready", {{"reason", reason}});
        last->reason = reason;
      }
    }
    if (reason.empty()) return respond(Response{200, R"({"status":"ready"})", "application/json", {}});
    respond(Response{503, R"({"status":"not ready"})", "application/json", {}});
  });
  router.get("/metrics", [](Request&&, const PathParams&, Responder respond) {
    respond(Response{200, metrics::registry().render(), "text/plain; version=0.0.4", {}});
  });
}

}  // namespace kobo
