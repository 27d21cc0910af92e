#include "query-api/api.h"

#include "query-api/rate_limit.h"
#include "query-api/route.h"

namespace kobo {

Api::Api(Ledger& ledger, Views& views, Projector& projector, ApiOptions options)
    : ledger_(ledger),
      views_(views),
      projector_(projector),
      options_(std::move(options)),
      no_hooks_(std::make_unique<api::EdgeHooks>()) {
  if (options_.rate_limit_reads > 0 || options_.rate_limit_writes > 0)
    limits_ = std::make_unique<api::RateLimitHooks>(
        api::RateLimitOptions{options_.rate_limit_reads, options_.rate_limit_writes},
        options_.hooks != nullptr ? *options_.hooks : *no_hooks_);
}

Api::~Api() { answers_.join(); }

bool Api::caught_up() const {
  for (std::uint32_t p = 0; p < ledger_.config().partitions; ++p)
    if (projector_.applied_seq(Partition(p)) < ledger_.durable_seq(Partition(p))) return false;
  return true;
}

void Api::add_routes(http::Router& router) {
  api::Routes routes(router, std::make_shared<api::Protocol>(ledger_, views_, projector_, options_, answers_),
                     limits_                     ? *limits_
                     : options_.hooks != nullptr ? *options_.hooks
                                                 : *no_hooks_);
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
  api::add_admin_routes(routes);
  if (options_.webhooks != nullptr) api::add_webhook_delivery_routes(routes);

  add_operational_routes(router, [this]() -> std::string {
    if (auto fault = ledger_.fault(); !fault.empty()) return fault;
    if (auto fault = projector_.fault(); !fault.empty()) return fault;
    if (options_.webhooks != nullptr)
      if (auto fault = options_.webhooks->fault(); !fault.empty()) return fault;
    if (!caught_up()) return "the views have not caught up with the log yet";
    if (options_.starting) return options_.starting();
    return {};
  });
}

}  // namespace kobo
