#pragma once
// Api: the service's HTTP endpoints (spec section 4, docs/architecture.md section 7) on top of
// the ledger (writes) and the views (reads). Handlers authenticate the caller, validate the
// request, then either submit a command to the Ledger and answer from its Outcome, or read the
// Views after the read barrier (the projection has applied every write acknowledged so far, so a
// GET after an acknowledged write sees it). The handlers live one file per resource in
// query-api/routes/, beside the answer protocol they share (query-api/answer.h).
//
// Domain rejections are mapped to HTTP in one table, `rejection_response()`.
// Thread safety: handlers run on the HTTP threads and on the ledger's writer thread (answers);
// Api holds no mutable state besides a small thread pool on which answers that had to wait for
// the views are rendered. Nothing blocks a thread while it waits (Projector::when_applied).

#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <functional>
#include <string>

#include "command/ledger.h"
#include "common/token_bucket.h"
#include "projection/projector.h"
#include "projection/views.h"
#include "query-api/router.h"
#include "webhooks/webhooks.h"

namespace kobo {

struct ApiOptions {
  std::chrono::milliseconds read_barrier_timeout{5'000};  // a GET waits this long for the views
  std::string admin_key;               // enables /v1/admin/* (header x-admin-key) when not empty
  std::int64_t expire_in_min_s = 600;  // collection wallets' shortest life (spec: 600; tests lower it)
  Webhooks* webhooks = nullptr;        // enables /v1/webhook-deliveries when set
  // Wraps new secret keys for signing webhooks (webhooks.h wrap_signing_key); null: keys are
  // registered without a signing copy (a service that signs no webhooks).
  const MasterKey* master_key = nullptr;
  // Derives webhook secrets; enables POST /v1/accounts/{id}/webhook-secret when set.
  const WebhookSecrets* webhook_secrets = nullptr;
  // Own-bank name enquiries per key (POST /v1/transactions/validate-account at the service's own
  // bank code): over the limit they are answered 429 with Retry-After. Null: no limit.
  std::shared_ptr<KeyedTokenBuckets> name_enquiry_limiter;
  // Why the node has not finished starting (/readyz), or "" once it has; null: started.
  std::function<std::string()> starting;
};

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
  boost::asio::thread_pool answers_{2};
};

// /healthz (the process runs), /readyz (503 while `ready` says no) and /metrics.
// /healthz, /readyz and /metrics. `not_ready` says why the node is not ready, or "" when it is;
// /readyz answers 503 with that reason.
void add_operational_routes(http::Router& router, std::function<std::string()> not_ready);

// The one table from domain rejections to HTTP answers.
http::Response rejection_response(Rejection r);
// The status and message of that answer (a bulk transfer's items show them).
struct RejectionAnswer {
  unsigned status;
  std::string_view message;
};
RejectionAnswer rejection_answer(Rejection r);

}  // namespace kobo
