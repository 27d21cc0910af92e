#include "query-api/api.h"

#include "common/crypto.h"
#include "query-api/answer.h"
#include "query-api/positions.h"
#include "query-api/rate_limit.h"
#include "query-api/route.h"

namespace kobo {

Api::Api(Ledger& ledger, Views& views, Projector& projector, ApiOptions options)
    : ledger_(ledger), views_(views), projector_(projector), options_(std::move(options)) {}

Api::~Api() { answers_.join(); }

bool Api::caught_up() const {
  for (std::uint32_t p = 0; p < ledger_.config().partitions; ++p)
    if (projector_.applied_seq(Partition(p)) < ledger_.durable_seq(Partition(p))) return false;
  return true;
}

std::uint64_t Api::lag() const {
  std::uint64_t behind = 0;
  for (std::uint32_t p = 0; p < ledger_.config().partitions; ++p) {
    const Seq durable = ledger_.durable_seq(Partition(p));
    const Seq applied = projector_.applied_seq(Partition(p));
    if (applied < durable) behind += durable.value - applied.value;
  }
  return behind;
}

std::string Api::not_ready() const {
  if (auto fault = ledger_.fault(); !fault.empty()) return fault;
  if (auto fault = projector_.fault(); !fault.empty()) return fault;
  if (options_.webhooks != nullptr)
    if (auto fault = options_.webhooks->fault(); !fault.empty()) return fault;
  // Caught up once the node has started: what it wrote while starting (a first business) is in
  // the views before it says it is ready.
  if (options_.starting)
    if (auto starting = options_.starting(); !starting.empty()) return starting;
  if (!caught_up_once_.load()) {
    if (!caught_up()) return "the views have not caught up with the log yet";
    caught_up_once_.store(true);
  } else if (const std::uint64_t behind = lag(); behind > ready_max_lag_) {
    return "the views are " + std::to_string(behind) + " events behind the log (more than " +
           std::to_string(ready_max_lag_) + ")";
  }
  return {};
}

void Api::add_routes(http::Router& router) {
  position_hooks_ = std::make_unique<api::PositionHooks>(projector_, ledger_.config().partitions, read_wait_);
  api::EdgeHooks& hooks = options_.hooks != nullptr ? *options_.hooks : *position_hooks_;
  // The rate limits admit (or refuse) a request before the other hooks see it: the deployment's,
  // or the key's business's own (which the admin may set whatever the deployment's are).
  api::RateLimitOptions limits;
  limits.reads_per_second = options_.rate_limit_reads;
  limits.writes_per_second = options_.rate_limit_writes;
  limits.own = [&views = views_](std::string_view key) -> std::optional<BusinessRateLimitsSet> {
    if (key.size() > api::kApiKeyLengthMax) return std::nullopt;  // no key: authentication answers 401
    const auto owner = views.key_owner(sha256_hex(key));
    if (!owner || !owner.value()) return std::nullopt;
    auto own = views.rate_limits(owner.value()->business);
    if (!own) return std::nullopt;  // unreadable views: the deployment's limits; the route answers 503
    return own.value();
  };
  limits_ = std::make_unique<api::RateLimitHooks>(std::move(limits), hooks);
  api::Routes routes(router, std::make_shared<api::Protocol>(ledger_, views_, projector_, options_, answers_),
                     *limits_);
  api::add_wallet_routes(routes);
  api::add_statement_routes(routes);
  api::add_transfer_routes(routes);
  api::add_bulk_transfer_routes(routes);
  api::add_collection_routes(routes);
  api::add_hold_routes(routes);
  api::add_event_routes(routes);
  api::add_transaction_routes(routes);
  api::add_sandbox_routes(routes);
  api::add_bank_account_routes(routes);
  api::add_account_routes(routes);
  api::add_key_routes(routes);
  api::add_admin_routes(routes);
  if (options_.webhooks != nullptr) api::add_webhook_delivery_routes(routes);

  add_operational_routes(router, [this] { return not_ready(); });
}

}  // namespace kobo
