// Transactions: GET /v1/transactions, GET /v1/transactions/{id} and
// GET /v1/transactions/{reference}/verify.

#include "query-api/envelope.h"
#include "query-api/route.h"

namespace kobo::api {
namespace {

TransactionFilter transaction_filter(http::QueryValidator& q) {
  TransactionFilter f;
  f.entry = q.one_of("entry", {"credit", "debit"});
  f.status = q.one_of("status", {"pending", "processing", "success", "failed"});
  f.amount = q.integer("amount", 0, kAmountMax);
  f.live = q.boolean("live");
  f.created_from = q.date("createdAt[startDate]", "createdAt.startDate");
  if (const auto until = q.date("createdAt[endDate]", "createdAt.endDate"))
    f.created_until = *until + kMsPerDay;  // the end day is inclusive
  return f;
}

http::Response verified(const Exchange& x, const NoQuery&) {
  const auto t =
      x.views().transaction_by_reference_text(x.caller.scope, x.caller.caller.account, x.param("reference"));
  if (!t) return unavailable(t.status());
  if (!t.value()) return http::error(404, "Transaction not found or does not exist");
  return http::ok_text(200, *t.value());
}

}  // namespace

void add_transaction_routes(Routes& routes) {
  routes.list(ListRoute<TransactionFilter>{
      .path = "/v1/transactions",
      .filter = transaction_filter,
      .page = [](const Exchange& x, const TransactionFilter& f, const PageRequest& p) {
        return x.views().transactions(x.caller.scope, f, p);
      }});
  routes.read(ReadRoute<>{.path = "/v1/transactions/{id}", .read = [](const Exchange& x, const NoQuery&) {
                            return one_record(x.views().transaction_text(
                                x.caller.scope, x.caller.caller.account, x.param("id")));
                          }});
  routes.read(ReadRoute<>{.path = "/v1/transactions/{reference}/verify", .read = verified});
}

}  // namespace kobo::api
