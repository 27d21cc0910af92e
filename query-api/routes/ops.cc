// Operations: GET /healthz (the process runs), /readyz (503 while the node is not ready; why is
// in the log) and /metrics (Prometheus text). No authentication: operational routes (route.h).

#include <memory>
#include <mutex>

#include "common/log.h"
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
  // The public answer says ready or not, nothing more: why a node is not ready names paths,
  // brokers and their errors, which are the operator's. The reason goes to the log when it
  // changes, and kobo_ready on /metrics says 1 or 0.
  struct Last {
    std::mutex mu;
    std::string reason;
  };
  auto last = std::make_shared<Last>();
  auto& ready = metrics::registry().gauge("kobo_ready", "1 while /readyz answers 200; the log says why not");
  Routes::operational(router, "/readyz", [not_ready = std::move(not_ready), last, &ready] {
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
    if (reason.empty()) return Response{200, R"({"status":"ready"})", "application/json", {}};
    return Response{503, R"({"status":"not ready"})", "application/json", {}};
  });
  Routes::operational(router, "/metrics", [] {
    return Response{200, metrics::registry().render(), "text/plain; version=0.0.4", {}};
  });
}

}  // namespace kobo
