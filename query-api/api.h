#pragma once
// Api: the service's HTTP endpoints (schemas/openapi.yaml; decisions: docs/architecture.md section 7)
// on top of the ledger (writes) and the views (reads). Every route is a declaration (route.h) that one
// wrapper runs: authenticate, validate, then either submit a command to the Ledger and answer
// from its Outcome, or read the Views after the read barrier (the projection has applied every
// write acknowledged so far, so a GET after an acknowledged write sees it). The declarations live
// one file per resource in query-api/routes/.
//
// Domain rejections are mapped to HTTP in one table, rejections.h.
// Thread safety: handlers run on the HTTP threads and on the ledger's writer thread (answers,
// which the connection's thread renders); Api holds no mutable state besides a thread pool on
// which answers that had to wait for the views, and reads that do real work (lists,
// statements), are made. Nothing blocks a thread while it waits (Projector::when_applied).

#include <algorithm>
#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "command/ledger.h"
#include "common/thread.h"
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

  // What the routes are made with, beyond ApiOptions; set before add_routes(). A read that
  // sends a Kobo-Position token waits this long for the views to include it, then is answered 503
  // (--read-wait-ms; query-api/positions.h).
  void set_read_wait(std::chrono::milliseconds wait) { read_wait_ = wait; }
  // /readyz: once the views have caught up with the log (since the process started), the node is
  // ready while they are at most this many events behind it (all partitions together), so that a
  // busy node, whose views always trail its writer by a batch or two, does not flap
  // (--ready-max-lag).
  void set_ready_max_lag(std::uint64_t events) { ready_max_lag_ = events; }

  void add_routes(http::Router& router);

  // Whether the views have applied everything the ledger has made durable.
  bool caught_up() const;
  // How many events the views are behind what the ledger has made durable, all partitions.
  std::uint64_t lag() const;
  // Why the node is not ready (/readyz), or "": not before the views caught up once since the
  // start, then while they are more than ready_max_lag events behind.
  std::string not_ready() const;

 private:
  Ledger& ledger_;
  Views& views_;
  Projector& projector_;
  const ApiOptions options_;
  std::chrono::milliseconds read_wait_{2'000};
  std::uint64_t ready_max_lag_ = 10'000;
  mutable std::atomic<bool> caught_up_once_{false};
  std::unique_ptr<api::EdgeHooks>
      position_hooks_;                      // the hook points (position tokens), when options_ names none
  std::unique_ptr<api::EdgeHooks> limits_;  // the rate limits before those
  // Reads that do real work (lists, statements), answers that waited for the views and a bulk's
  // answer: a thread per core available, two at least, as the HTTP threads follow the machine.
  boost::asio::thread_pool answers_{std::max<std::size_t>(2, cores_available())};
};

// /healthz (the process runs), /readyz (503 with `not_ready`'s reason while it gives one) and
// /metrics: the operational routes (route.h RouteKind::operational).
void add_operational_routes(http::Router& router, std::function<std::string()> not_ready);

}  // namespace kobo
