// The sandbox: POST /v1/sandbox/incoming-transfers, money arriving from another bank (test keys
// only).

#include "query-api/answer.h"
#include "query-api/banks.h"
#include "query-api/envelope.h"

namespace kobo::api {
namespace {

using http::PathParams;
using http::Request;
using http::Responder;

void incoming_transfer(Protocol& p, Request&& req, const PathParams&, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  if (c->caller.live) return respond(http::error(403, "Sandbox transfers are only available in test mode"));
  auto body = http::parse_json_object(req.body);
  if (!body) return respond(http::bad_request());
  http::Validator v(*body);
  v.field("accountNumber").is_not_empty().is_string().max_length(32);
  v.field("amount").is_int().min(1).max(kAmountMax);
  v.optional("narration").is_string().max_length(kTextLengthMax);
  v.optional("senderName").is_string().max_length(kNameLengthMax);
  v.optional("senderAccountNumber").is_string().max_length(32);
  v.optional("senderBankCode").is_string().max_length(16);
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));

  IncomingCredit cmd;
  cmd.caller = c->caller;
  cmd.account_number = body->at("accountNumber");
  cmd.amount = Kobo(*http::as_int64(body->at("amount")));
  cmd.narration = optional_string(*body, "narration").value_or("Incoming transfer");
  cmd.sender_name = optional_string(*body, "senderName").value_or("Sandbox Sender");
  cmd.sender_account_number = optional_string(*body, "senderAccountNumber").value_or("0000014579");
  cmd.sender_bank_code = optional_string(*body, "senderBankCode").value_or("058");
  if (const Bank* bank = find_bank(cmd.sender_bank_code)) {
    cmd.sender_bank_name = bank->name;
    cmd.sender_bank_nibss_code = bank->nibss_code;
  } else {
    return respond(http::error(400, "Bank not found"));
  }
  p.ledger().submit(std::move(cmd), [&p, respond = std::move(respond)](Outcome o) {
    if (!o.ok()) return respond(rejection_response(o.rejection));
    p.answer_created(std::move(o), 201, "Incoming transfer received", respond);
  });
}

}  // namespace

void add_sandbox_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol) {
  router.post("/v1/sandbox/incoming-transfers", route(protocol, incoming_transfer));
}

}  // namespace kobo::api
