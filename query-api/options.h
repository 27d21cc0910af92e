#pragma once
// ApiOptions: what `kobo serve` tells the API (Api, api.h) beyond the ledger and the views.
// Plain values, read-only once the API is made.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/master_key.h"
#include "common/token_bucket.h"
#include "webhooks/webhooks.h"

namespace kobo {

namespace api {
class EdgeHooks;  // route.h
}

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
  // The route wrapper's hook points (route.h: forwarding, position tokens, rate limits); null:
  // their no-op defaults, a single node's.
  api::EdgeHooks* hooks = nullptr;
  // Per-key rate limits (query-api/rate_limit.h), requests per second per API key; 0: none.
  double rate_limit_reads = 0;
  double rate_limit_writes = 0;
};

}  // namespace kobo
