// Transactions: GET /v1/transactions, GET /v1/transactions/{id} and
// GET /v1/transactions/{reference}/verify.

#include "query-api/answer.h"
#include "query-api/envelope.h"

namespace kobo::api {
namespace {

using http::PathParams;
using http::Request;
using http::Responder;
using nlohmann::json;

void list_transactions(Protocol& p, Request&& req, const PathParams&, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  http::QueryValidator q(req.query);
  TransactionFilter filter;
  filter.entry = q.one_of("entry", {"credit", "debit"});
  filter.status = q.one_of("status", {"pending", "processing", "success", "failed"});
  filter.amount = q.integer("amount", 0, kAmountMax);
  filter.live = q.boolean("live");
  const auto page = q.pagination();
  json date_errors = json::object();
  for (const auto& [param, name] :
       {std::pair{"createdAt[startDate]", "startDate"}, {"createdAt[endDate]", "endDate"}}) {
    const auto text = q.text(param);
    if (!text) continue;
    const auto day = parse_date(*text);
    if (!day) {
      date_errors[std::string("createdAt.") + name]["isDateString"] =
          std::string("createdAt.") + name + " must be a valid ISO 8601 date string";
      continue;
    }
    if (std::string_view(name) == "startDate")
      filter.created_from = *day;
    else
      filter.created_until = *day + kMsPerDay;  // the end day is inclusive
  }
  auto errors = q.errors();
  if (errors || !date_errors.empty()) {
    json all = errors.value_or(json::object());
    all.update(date_errors);
    return respond(http::validation_error(all));
  }
  p.barrier(*c, std::move(respond), [&p, scope = c->scope, filter, page](Responder r) {
    r(list(p.views().transactions(scope, filter, to_page(page)), page));
  });
}

void get_transaction(Protocol& p, Request&& req, const PathParams& params, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  p.barrier(*c, std::move(respond), [&p, ctx = *c, id = params.at("id")](Responder r) {
    r(one_record(p.views().transaction_text(ctx.scope, ctx.caller.account, id)));
  });
}

void verify_transaction(Protocol& p, Request&& req, const PathParams& params, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  p.barrier(*c, std::move(respond), [&p, ctx = *c, reference = params.at("reference")](Responder r) {
    const auto t = p.views().transaction_by_reference_text(ctx.scope, ctx.caller.account, reference);
    if (!t) return r(unavailable(t.status()));
    if (!t.value()) return r(http::error(404, "Transaction not found or does not exist"));
    r(http::ok_text(200, *t.value()));
  });
}

}  // namespace

void add_transaction_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol) {
  router.get("/v1/transactions", route(protocol, list_transactions));
  router.get("/v1/transactions/{id}", route(protocol, get_transaction));
  router.get("/v1/transactions/{reference}/verify", route(protocol, verify_transaction));
}

}  // namespace kobo::api
