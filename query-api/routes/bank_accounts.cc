// Banks and beneficiaries: GET /v1/transactions/banks, POST /v1/transactions/validate-account,
// and POST and GET /v1/bank-accounts[/{id}].

#include "common/crypto.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/time.h"
#include "projection/render.h"
#include "query-api/banks.h"
#include "query-api/envelope.h"
#include "query-api/route.h"

namespace kobo::api {
namespace {

using http::Response;
using nlohmann::json;

// The bank list's answer, written once: the list is compiled in.
Response banks_answer(const Exchange&, const NoQuery&) {
  static const std::string body = [] {
    std::string data;
    JsonWriter w(data);
    w.begin_array();
    std::int64_t id = 0;
    for (const Bank& b : banks()) {
      const std::string h = sha256_hex("kobo-bank:" + b.slug);
      const std::string uuid = h.substr(0, 8) + "-" + h.substr(8, 4) + "-4" + h.substr(13, 3) + "-a" +
                               h.substr(17, 3) + "-" + h.substr(20, 12);
      // Members in key order, as every record shows them.
      w.begin_object()
          .member("active", true)
          .member("bankCode", b.bank_code)
          .member("bankName", b.name)
          .member("country", "nigeria")
          .member("createdAt", "2026-01-01T00:00:00.000Z")
          .member("currency", "NGN")
          .null_member("deletedAt")
          .member("id", ++id)
          .key("meta")
          .begin_object()
          .member("bankCode", b.bank_code)
          .member("name", b.name)
          .member("nibssBankCode", b.nibss_code)
          .end_object()
          .member("nibssBankCode", b.nibss_code)
          .member("processor", "kobo")
          .member("publicId", "bnk-" + uuid)
          .member("slug", b.slug)
          .member("type", "nuban")
          .member("updatedAt", "2026-01-01T00:00:00.000Z")
          .end_object();
    }
    w.end_array();
    return http::ok_text(200, data, "Banks retrieved successfully").body;
  }();
  return Response{200, body, "application/json", {}};
}

void enquiry_rules(const Exchange&, http::Validator& v) {
  v.field("accountNumber").is_not_empty().is_string().max_length(32);
  v.field("bankCode").is_not_empty().is_string().max_length(16);
}

// The account the body names, by name enquiry, as the beneficiary it would be saved as;
// validating saves nothing.
Response validated(const Exchange& x, const NoQuery&) {
  const Caller& caller = x.caller.caller;
  // An enquiry at our own bank answers another tenant's customer's name: limited per key and
  // logged, so nobody harvests names by asking for number after number (docs/security.md).
  if (x.body.at("bankCode") == x.ledger().config().bank_code) {
    log::info("own-bank name enquiry", {{"keyId", caller.actor},
                                        {"business", caller.business},
                                        {"accountNumber", x.body.at("accountNumber").get<std::string>()}});
    if (const auto& limiter = x.options().name_enquiry_limiter) {
      const auto taken = limiter->take(caller.actor);
      if (!taken.allowed) {
        log::warn("own-bank name enquiries over their limit", {{"keyId", caller.actor}});
        Response refused = http::error(429, "Too many requests");
        refused.headers.emplace_back("Retry-After", std::to_string((taken.retry_after.count() + 999) / 1000));
        return refused;
      }
    }
  }
  auto found =
      resolve_account(x.views(), x.ledger().config(), caller.live, x.body.at("bankCode").get<std::string>(),
                      x.body.at("accountNumber").get<std::string>());
  if (auto* refused = std::get_if<Response>(&found)) return std::move(*refused);
  const ResolvedAccount& r = std::get<ResolvedAccount>(found);
  const std::string id = bank_account_id(caller.business, caller.live, r.bank_code, r.account_number);
  const std::string reference = "ner-" + uuid_v4();
  return http::ok_text(201,
                       render::name_enquiry({.public_id = id,
                                             .business = caller.business,
                                             .account = caller.account,
                                             .live = caller.live,
                                             .account_name = r.account_name,
                                             .account_number = r.account_number,
                                             .bank_name = r.bank_name,
                                             .bank_code = r.bank_code,
                                             .nibss_code = r.nibss_code,
                                             .own_bank = r.own_bank,
                                             .reference = reference,
                                             .at = now_ms()}),
                       "Account validated successfully");
}

void beneficiary_rules(const Exchange&, http::Validator& v) {
  v.field("accountName").is_not_empty().is_string().max_length(kNameLengthMax);
  v.field("accountNumber").is_not_empty().is_string().max_length(32);
  v.field("bankName").is_not_empty().is_string().max_length(kNameLengthMax);
  v.field("bankCode").is_not_empty().is_string().max_length(16);
  v.optional("beneficiaryType").is_string().is_in({"vba", "external", "personal"});
}

// Resolving the account reads the views (a wallet of ours): after the read barrier.
Made beneficiary(const Exchange& x) {
  const Caller& caller = x.caller.caller;
  const json& body = x.body;
  auto found =
      resolve_account(x.views(), x.ledger().config(), caller.live, body.at("bankCode").get<std::string>(),
                      body.at("accountNumber").get<std::string>());
  if (auto* refused = std::get_if<Response>(&found)) return std::move(*refused);
  const ResolvedAccount& r = std::get<ResolvedAccount>(found);
  return AddBankAccount{caller,
                        bank_account_id(caller.business, caller.live, r.bank_code, r.account_number),
                        body.at("accountName"),
                        r.account_number,
                        body.at("bankName"),
                        r.bank_code,
                        optional_string(body, "beneficiaryType").value_or("personal")};
}

Result<std::optional<std::string>> beneficiary_of(const Exchange& x, std::string_view id) {
  return x.views().bank_account_text(x.caller.scope, id);
}

BankAccountFilter beneficiary_filter(http::QueryValidator& q) {
  BankAccountFilter f;
  f.account_name = q.text("accountName");
  f.beneficiary_type = q.one_of("beneficiaryType", {"vba", "external", "personal"});
  f.live = q.boolean("live");
  return f;
}

}  // namespace

void add_bank_account_routes(Routes& routes) {
  routes.read(ReadRoute<>{.path = "/v1/transactions/banks", .reads_views = false, .read = banks_answer});
  routes.read(ReadRoute<>{.method = boost::beast::http::verb::post,
                          .path = "/v1/transactions/validate-account",
                          .rules = enquiry_rules,
                          .read = validated});
  // Already saved: answered with the beneficiary as it is.
  routes.command({.path = "/v1/bank-accounts",
                  .rules = beneficiary_rules,
                  .make_reads_views = true,
                  .make = beneficiary,
                  .answer = or_replayed(created(201, "Bank account added successfully"),
                                        "Bank account already exists", beneficiary_of)});
  routes.list(ListRoute<BankAccountFilter>{
      .path = "/v1/bank-accounts",
      .filter = beneficiary_filter,
      .page = [](const Exchange& x, const BankAccountFilter& f, const PageRequest& p) {
        return x.views().bank_accounts(x.caller.scope, f, p);
      }});
  routes.read(ReadRoute<>{.path = "/v1/bank-accounts/{id}", .read = [](const Exchange& x, const NoQuery&) {
                            return one_record(x.views().bank_account_text(x.caller.scope, x.param("id")));
                          }});
}

}  // namespace kobo::api
