// Money movement: POST /v1/transactions/transfer (between wallets) and
// POST /v1/transactions/bank-transfer (to another bank).

#include "query-api/answer.h"
#include "query-api/envelope.h"
#include "query-api/transfer_requests.h"

namespace kobo::api {
namespace {

using http::PathParams;
using http::Request;
using http::Responder;
using nlohmann::json;

// The original transaction of an idempotent repeat, read once the views have it, on Api's
// pool: never on the writer thread.
void answer_replay(Protocol& p, const Context& ctx, const Outcome& o, Responder respond) {
  p.after_projection(o, std::move(respond), [&p, ctx, id = o.id](Responder later) {
    later(replayed(p.views().transaction_text(ctx.scope, ctx.caller.account, id),
                   "Transfer initiated successfully"));
  });
}

void transfer(Protocol& p, Request&& req, const PathParams&, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  auto body = http::parse_json_object(req.body);
  if (!body) return respond(http::bad_request());
  http::Validator v(*body);
  check_wallet_transfer(v);
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));
  WalletTransfer cmd = wallet_transfer_of(c->caller, *body);
  const Context ctx = *c;
  p.ledger().submit(std::move(cmd), [&p, ctx, respond = std::move(respond)](Outcome o) {
    if (o.replayed) return answer_replay(p, ctx, o, respond);
    if (!o.ok()) return respond(rejection_response(o.rejection));
    p.answer_created(std::move(o), 200, "Transfer initiated successfully", respond,
                     TransactionStatus::pending);
  });
}

void submit_bank_transfer(Protocol& p, const Context& ctx, const json& body, Responder respond) {
  const auto found = p.resolve(ctx.caller.live, body.at("bankCode").get<std::string>(),
                               body.at("accountNumber").get<std::string>(), respond);
  if (!found) return;
  const ResolvedAccount& r = *found;

  BankTransfer cmd = bank_transfer_of(ctx.caller, body, &r);
  p.ledger().submit(std::move(cmd), [&p, ctx, respond = std::move(respond)](Outcome o) {
    if (o.replayed) return answer_replay(p, ctx, o, respond);
    if (!o.ok()) return respond(rejection_response(o.rejection));
    p.answer_created(std::move(o), 200, "Transfer initiated successfully", respond,
                     TransactionStatus::pending);
  });
}

void bank_transfer(Protocol& p, Request&& req, const PathParams&, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  auto body = http::parse_json_object(req.body);
  if (!body) return respond(http::bad_request());
  http::Validator v(*body);
  check_bank_transfer(v);
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));
  // Resolving the account reads the views (a wallet of ours): after the read barrier.
  p.barrier(*c, std::move(respond), [&p, ctx = *c, body = std::move(*body)](Responder r) {
    submit_bank_transfer(p, ctx, body, std::move(r));
  });
}

}  // namespace

void add_transfer_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol) {
  router.post("/v1/transactions/transfer", route(protocol, transfer));
  router.post("/v1/transactions/bank-transfer", route(protocol, bank_transfer));
}

}  // namespace kobo::api
