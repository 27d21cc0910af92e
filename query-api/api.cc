#include "query-api/api.h"

#include "query-api/answer.h"

namespace kobo {

Api::Api(Ledger& ledger, Views& views, Projector& projector, ApiOptions options)
    : ledger_(ledger), views_(views), projector_(projector), options_(std::move(options)) {}

Api::~Api() { answers_.join(); }

bool Api::caught_up() const {
  for (std::uint32_t p = 0; p < ledger_.config().partitions; ++p)
    if (projector_.applied_seq(Partition(p)) < ledger_.durable_seq(Partition(p))) return false;
  return true;
}

void Api::add_routes(http::Router& router) {
  const auto protocol = std::make_shared<api::Protocol>(ledger_, views_, projector_, options_, answers_);
  api::add_wallet_routes(router, protocol);
  api::add_statement_routes(router, protocol);
  api::add_transfer_routes(router, protocol);
  api::add_bulk_transfer_routes(router, protocol);
  api::add_collection_routes(router, protocol);
  api::add_hold_routes(router, protocol);
  api::add_event_routes(router, protocol);
  api::add_transaction_routes(router, protocol);
  api::add_sandbox_routes(router, protocol);
  api::add_bank_account_routes(router, protocol);
  api::add_account_routes(router, protocol);
  api::add_key_routes(router, protocol);
  api::add_admin_routes(router, protocol);
  if (options_.webhooks != nullptr) api::add_webhook_delivery_routes(router, protocol);

  add_operational_routes(router, [this]() -> std::string {
    if (auto fault = ledger_.fault(); !fault.empty()) return fault;
    if (auto fault = projector_.fault(); !fault.empty()) return fault;
    if (!caught_up()) return "the views have not caught up with the log yet";
    if (options_.starting) return options_.starting();
    return {};
  });
}

}  // namespace kobo
