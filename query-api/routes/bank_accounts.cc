// Banks and beneficiaries: GET /v1/transactions/banks, POST /v1/transactions/validate-account,
// and POST and GET /v1/bank-accounts[/{id}].

#include "common/crypto.h"
#include "common/log.h"
#include "common/time.h"
#include "projection/render.h"
#include "query-api/answer.h"
#include "query-api/banks.h"
#include "query-api/envelope.h"

namespace kobo::api {
namespace {

using http::PathParams;
using http::Request;
using http::Responder;
using http::Response;
using nlohmann::json;

void list_banks(Protocol& p, Request&& req, const PathParams&, Responder respond) {
  if (!p.authenticate(req, respond)) return;
  static const std::string body = [] {
    json data = json::array();
    std::int64_t id = 0;
    for (const Bank& b : banks()) {
      const std::string h = sha256_hex("kobo-bank:" + b.slug);
      const std::string uuid = h.substr(0, 8) + "-" + h.substr(8, 4) + "-4" + h.substr(13, 3) + "-a" +
                               h.substr(17, 3) + "-" + h.substr(20, 12);
      data.push_back(
          {{"id", ++id},
           {"publicId", "bnk-" + uuid},
           {"createdAt", "2026-01-01T00:00:00.000Z"},
           {"updatedAt", "2026-01-01T00:00:00.000Z"},
           {"deletedAt", nullptr},
           {"bankName", b.name},
           {"bankCode", b.bank_code},
           {"nibssBankCode", b.nibss_code},
           {"country", "nigeria"},
           {"slug", b.slug},
           {"type", "nuban"},
           {"currency", "NGN"},
           {"active", true},
           {"processor", "kobo"},
           {"meta", {{"bankCode", b.bank_code}, {"name", b.name}, {"nibssBankCode", b.nibss_code}}}});
    }
    return http::ok(200, data, "Banks retrieved successfully").body;
  }();
  respond(Response{200, body, "application/json", {}});
}

void answer_validated(Protocol& p, const Caller& caller, const std::string& bank_code,
                      const std::string& account_number, const Responder& respond) {
  const auto found = p.resolve(caller.live, bank_code, account_number, respond);
  if (!found) return;
  const ResolvedAccount& r = *found;
  // The answer has the shape of the beneficiary it would be saved as; validating saves nothing.
  const std::string ts = format_iso8601(now_ms());
  respond(http::ok(
      201,
      json{{"publicId", bank_account_id(caller.business, caller.live, r.bank_code, r.account_number)},
           {"auth", caller.business},
           {"account", caller.account},
           {"accountName", r.account_name},
           {"accountNumber", r.account_number},
           {"bankName", r.bank_name},
           {"bankCode", r.bank_code},
           {"nibssBankCode", r.nibss_code},
           {"live", caller.live},
           {"processor", render::kProcessor},
           {"currency", "NGN"},
           {"beneficiaryType", r.own_bank ? "vba" : "external"},
           {"clientIds", json::object()},
           {"nameEnquiryRef", "ner-" + uuid_v4()},
           {"createdAt", ts},
           {"updatedAt", ts}},
      "Account validated successfully"));
}

void validate_account(Protocol& p, Request&& req, const PathParams&, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  auto body = http::parse_json_object(req.body);
  if (!body) return respond(http::bad_request());
  http::Validator v(*body);
  v.field("accountNumber").is_not_empty().is_string().max_length(32);
  v.field("bankCode").is_not_empty().is_string().max_length(16);
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));
  std::string bank_code = body->at("bankCode");
  std::string account_number = body->at("accountNumber");
  // An enquiry at our own bank answers another tenant's customer's name: limited per key and
  // logged, so nobody harvests names by asking for number after number (docs/security.md).
  if (bank_code == p.ledger().config().bank_code) {
    log::info(
        "own-bank name enquiry",
        {{"keyId", c->caller.actor}, {"business", c->caller.business}, {"accountNumber", account_number}});
    if (const auto& limiter = p.options().name_enquiry_limiter) {
      const auto taken = limiter->take(c->caller.actor);
      if (!taken.allowed) {
        log::warn("own-bank name enquiries over their limit", {{"keyId", c->caller.actor}});
        http::Response refused = http::error(429, "Too many requests");
        refused.headers.emplace_back("Retry-After", std::to_string((taken.retry_after.count() + 999) / 1000));
        return respond(std::move(refused));
      }
    }
  }
  p.barrier(
      *c, std::move(respond),
      [&p, caller = c->caller, bank_code = std::move(bank_code), account_number = std::move(account_number)](
          Responder r) { answer_validated(p, caller, bank_code, account_number, r); });
}

void submit_bank_account(Protocol& p, const Context& ctx, const json& body, Responder respond) {
  const auto found = p.resolve(ctx.caller.live, body.at("bankCode").get<std::string>(),
                               body.at("accountNumber").get<std::string>(), respond);
  if (!found) return;
  const ResolvedAccount& r = *found;
  AddBankAccount cmd{ctx.caller,
                     bank_account_id(ctx.caller.business, ctx.caller.live, r.bank_code, r.account_number),
                     body.at("accountName"),
                     r.account_number,
                     body.at("bankName"),
                     r.bank_code,
                     optional_string(body, "beneficiaryType").value_or("personal")};
  const Scope scope = ctx.scope;
  p.ledger().submit(std::move(cmd), [&p, scope, respond = std::move(respond)](Outcome o) mutable {
    if (!o.ok()) return respond(rejection_response(o.rejection));
    if (!o.replayed)
      return p.answer_created(std::move(o), 201, "Bank account added successfully", std::move(respond));
    // Already saved: answer with the beneficiary as it is.
    p.after_projection(o, std::move(respond), [&p, scope, id = o.id](Responder later) {
      later(replayed(p.views().bank_account_text(scope, id), "Bank account already exists"));
    });
  });
}

void add_bank_account(Protocol& p, Request&& req, const PathParams&, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  auto body = http::parse_json_object(req.body);
  if (!body) return respond(http::bad_request());
  http::Validator v(*body);
  v.field("accountName").is_not_empty().is_string().max_length(kNameLengthMax);
  v.field("accountNumber").is_not_empty().is_string().max_length(32);
  v.field("bankName").is_not_empty().is_string().max_length(kNameLengthMax);
  v.field("bankCode").is_not_empty().is_string().max_length(16);
  v.optional("beneficiaryType").is_string().is_in({"vba", "external", "personal"});
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));
  // Resolving the account reads the views (a wallet of ours): after the read barrier.
  p.barrier(*c, std::move(respond), [&p, ctx = *c, body = std::move(*body)](Responder r) {
    submit_bank_account(p, ctx, body, std::move(r));
  });
}

void get_bank_account(Protocol& p, Request&& req, const PathParams& params, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  p.barrier(*c, std::move(respond), [&p, scope = c->scope, id = params.at("id")](Responder r) {
    r(one_record(p.views().bank_account_text(scope, id)));
  });
}

void list_bank_accounts(Protocol& p, Request&& req, const PathParams&, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  http::QueryValidator q(req.query);
  BankAccountFilter filter;
  filter.account_name = q.text("accountName");
  filter.beneficiary_type = q.one_of("beneficiaryType", {"vba", "external", "personal"});
  filter.live = q.boolean("live");
  const auto page = q.pagination();
  if (auto errors = q.errors()) return respond(http::validation_error(*errors));
  p.barrier(*c, std::move(respond), [&p, scope = c->scope, filter, page](Responder r) {
    r(list(p.views().bank_accounts(scope, filter, to_page(page)), page));
  });
}

}  // namespace

void add_bank_account_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol) {
  router.get("/v1/transactions/banks", route(protocol, list_banks));
  router.post("/v1/transactions/validate-account", route(protocol, validate_account));
  router.post("/v1/bank-accounts", route(protocol, add_bank_account));
  router.get("/v1/bank-accounts", route(protocol, list_bank_accounts));
  router.get("/v1/bank-accounts/{id}", route(protocol, get_bank_account));
}

}  // namespace kobo::api
