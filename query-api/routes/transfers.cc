// Money movement: POST /v1/transactions/transfer (between wallets) and
// POST /v1/transactions/bank-transfer (to another bank).

#include "common/crypto.h"
#include "common/json_dump.h"
#include "projection/render.h"
#include "query-api/answer.h"
#include "query-api/envelope.h"

namespace kobo::api {
namespace {

using http::PathParams;
using http::Request;
using http::Responder;
using nlohmann::json;

constexpr std::int64_t kTransferMin = 10'000;
constexpr std::int64_t kTransferMax = 1'000'000'000;
constexpr std::size_t kMetadataBytesMax = std::size_t{8} * 1024;

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
  v.field("source").is_not_empty().is_string().max_length(kTextLengthMax);
  v.field("sourceType").is_not_empty().is_string().is_in({"VirtualAccount"});
  v.field("destination").is_not_empty().is_string().max_length(kTextLengthMax);
  v.field("destinationType").is_not_empty().is_string().is_in({"VirtualAccount"});
  v.field("amount").is_int().min(kTransferMin).max(kTransferMax);
  v.field("currency").is_not_empty().is_string().is_in({"NGN"});
  v.field("narration").is_not_empty().is_string().max_length(kTextLengthMax);
  v.optional("reference").is_not_empty().is_string().max_length(kTextLengthMax);
  v.optional("nameEnquiryRef").is_string().max_length(kTextLengthMax);
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));

  WalletTransfer cmd;
  cmd.caller = c->caller;
  cmd.source = body->at("source");
  cmd.destination = body->at("destination");
  cmd.amount = Kobo(*http::as_int64(body->at("amount")));
  cmd.narration = body->at("narration");
  if (auto r = optional_string(*body, "reference")) cmd.reference = *r;
  if (auto r = optional_string(*body, "nameEnquiryRef")) cmd.name_enquiry_ref = *r;
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

  BankTransfer cmd;
  cmd.caller = ctx.caller;
  cmd.source = body.at("source");
  cmd.bank_account_id = bank_account_id(ctx.caller.business, ctx.caller.live, r.bank_code, r.account_number);
  cmd.account_number = r.account_number;
  cmd.account_name = r.account_name;
  cmd.bank_code = r.bank_code;
  cmd.bank_name = r.bank_name;
  cmd.name_enquiry_ref = "ner-" + uuid_v4();
  cmd.amount = Kobo(*http::as_int64(body.at("amount")));
  cmd.narration = body.at("narration");
  if (auto ref = optional_string(body, "reference")) cmd.reference = *ref;
  cmd.save_beneficiary =
      body.value("saveBeneficiary", json(false)).is_boolean() && body.value("saveBeneficiary", false);
  if (body.contains("metadata") && body.at("metadata").is_object())
    cmd.metadata = RawJson{dump_json(body.at("metadata"))};
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
  v.field("source").is_not_empty().is_string().max_length(kTextLengthMax);
  v.field("accountNumber").is_not_empty().is_string().max_length(32);
  v.field("bankCode").is_not_empty().is_string().max_length(16);
  v.field("amount").is_int().min(kTransferMin).max(kTransferMax);
  v.field("currency").is_not_empty().is_string().is_in({"NGN"});
  v.field("narration").is_not_empty().is_string().max_length(kTextLengthMax);
  v.optional("reference").is_not_empty().is_string().max_length(kTextLengthMax);
  v.optional("saveBeneficiary").is_boolean();
  v.optional("metadata").is_object();
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));
  if (body->contains("metadata") && body->at("metadata").dump().size() > kMetadataBytesMax)
    return respond(http::validation_error(
        {{"metadata",
          {{"maxSize", "metadata must be at most " + std::to_string(kMetadataBytesMax) + " bytes"}}}}));
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
