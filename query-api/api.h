#pragma once
// Api: the service's HTTP endpoints (spec section 4, docs/architecture.md section 7) on top of
// the ledger (writes) and the views (reads). Every route is a declaration (route.h) that one
// wrapper runs: authenticate, validate, then either submit a command to the Ledger and answer
// from its Outcome, or read the Views after the read barrier (the projection has applied every
// write acknowledged so far, so a GET after an acknowledged write sees it). The declarations live
// one file per resource in query-api/routes/.
//
// Domain rejections are mapped to HTTP in one table, rejections.h.
// Thread safety: handlers run on the HTTP threads and on the ledger's writer thread (answers);
// Api holds no mutable state besides a small thread pool on which answers that had to wait for
// the views, and reads that do real work (lists, statements), are made. Nothing blocks a thread
// while it waits (Projector::when_applied).

#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <memory>
#include <string>

#include "command/ledger.h"
#include "projection/projector.h"
#include "projection/views.h"
#include "query-api/options.h"
#include "query-api/rejections.h"
#include "query-api/router.h"

namespace kobo {

namespace api {
class EdgeHooks;
}

class Api {
 public:
  Api(Ledger& ledger, Views& views, Projector& projector, ApiOptions options = {});
  ~Api();

  void add_routes(http::Router& router);

  // Whether the views have applied everything the ledger has made durable (for /readyz).
  bool caught_up() const;

 private:
  Ledger& ledger_;
  Views& views_;
  Projector& projector_;
  const ApiOptions options_;
  std::unique_ptr<api::EdgeHooks> no_hooks_;  // the hook points' defaults, when options_ names none
  std::unique_ptr<api::EdgeHooks> limits_;    // the rate limits before those, when set
  boost::asio::thread_pool answers_{2};
};

// /healthz (the process runs), /readyz (503 with `not_ready`'s reason while it gives one) and
// /metrics: the operational routes (route.h RouteKind::operational).
void add_operational_routes(http::Router& router, std::function<std::string()> not_ready);

}  // namespace kobo
