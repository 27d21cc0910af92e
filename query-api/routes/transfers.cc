// Money movement: POST /v1/transactions/transfer (between wallets) and
// POST /v1/transactions/bank-transfer (to another bank).

#include "query-api/envelope.h"
#include "query-api/route.h"
#include "query-api/transfer_requests.h"

namespace kobo::api {
namespace {

constexpr std::string_view kInitiated = "Transfer initiated successfully";

// The original transaction of an idempotent repeat, by the id the writer answered.
Result<std::optional<std::string>> original_transaction(const Exchange& x, std::string_view id) {
  return x.views().transaction_text(x.caller.scope, x.caller.caller.account, id);
}

// A transfer answers the debit `pending` (docs/architecture.md section 7); a repeat, the original.
Answer transfer_answer() {
  return or_replayed(created(200, std::string(kInitiated), TransactionStatus::pending),
                     std::string(kInitiated), original_transaction);
}

// The account the body names, by name enquiry (it reads the views: after the read barrier).
Made bank_transfer(const Exchange& x) {
  auto found = resolve_account(x.views(), x.ledger().config(), x.caller.caller.live,
                               x.body.at("bankCode").get<std::string>(),
                               x.body.at("accountNumber").get<std::string>());
  if (auto* refused = std::get_if<http::Response>(&found)) return std::move(*refused);
  return bank_transfer_of(x.caller.caller, x.body, &std::get<ResolvedAccount>(found));
}

}  // namespace

void add_transfer_routes(Routes& routes) {
  routes.command(
      {.path = "/v1/transactions/transfer",
       .rules = [](const Exchange&, http::Validator& v) { check_wallet_transfer(v); },
       .make = [](const Exchange& x) -> Made { return wallet_transfer_of(x.caller.caller, x.body); },
       .answer = transfer_answer()});
  routes.command({.path = "/v1/transactions/bank-transfer",
                  .rules = [](const Exchange&, http::Validator& v) { check_bank_transfer(v); },
                  .make_reads_views = true,
                  .make = bank_transfer,
                  .answer = transfer_answer()});
}

}  // namespace kobo::api
