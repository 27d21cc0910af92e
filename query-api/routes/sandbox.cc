// The sandbox: POST /v1/sandbox/incoming-transfers, money arriving from another bank (test keys
// only).

#include "query-api/banks.h"
#include "query-api/envelope.h"
#include "query-api/route.h"

namespace kobo::api {
namespace {

void incoming_rules(const Exchange&, http::Validator& v) {
  v.field("accountNumber").is_not_empty().is_string().max_length(32);
  v.field("amount").is_int().min(1).max(kAmountMax);
  v.optional("narration").is_string().max_length(kTextLengthMax);
  v.optional("senderName").is_string().max_length(kNameLengthMax);
  v.optional("senderAccountNumber").is_string().max_length(32);
  v.optional("senderBankCode").is_string().max_length(16);
}

Made incoming(const Exchange& x) {
  const nlohmann::json& body = x.body;
  IncomingCredit cmd;
  cmd.caller = x.caller.caller;
  cmd.account_number = body.at("accountNumber");
  cmd.amount = Kobo(*http::as_int64(body.at("amount")));
  cmd.narration = optional_string(body, "narration").value_or("Incoming transfer");
  cmd.sender_name = optional_string(body, "senderName").value_or("Sandbox Sender");
  cmd.sender_account_number = optional_string(body, "senderAccountNumber").value_or("0000014579");
  cmd.sender_bank_code = optional_string(body, "senderBankCode").value_or("058");
  const Bank* bank = find_bank(cmd.sender_bank_code);
  if (bank == nullptr) return http::error(400, "Bank not found");
  cmd.sender_bank_name = bank->name;
  cmd.sender_bank_nibss_code = bank->nibss_code;
  return cmd;
}

}  // namespace

void add_sandbox_routes(Routes& routes) {
  routes.command({.path = "/v1/sandbox/incoming-transfers",
                  .traits = {.test_mode_only = true},
                  .rules = incoming_rules,
                  .make = incoming,
                  .answer = created(201, "Incoming transfer received")});
}

}  // namespace kobo::api
