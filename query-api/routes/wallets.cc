// Wallets: POST and GET /v1/virtual-accounts, GET and PATCH /v1/virtual-accounts/{id} (the
// wallet's KYC tier, docs/architecture.md, KYC tiers).

#include "query-api/envelope.h"
#include "query-api/route.h"

namespace kobo::api {
namespace {

using nlohmann::json;

void wallet_rules(const Exchange& x, http::Validator& v) {
  const json& body = x.body;
  v.field("accountName").is_not_empty().is_string().max_length(kNameLengthMax);
  v.field("category").is_not_empty().is_string().is_in({"primary", "secondary"});
  v.field("currency").is_not_empty().is_string().is_in({"NGN"});
  const bool secondary = body.value("category", json()) == "secondary";
  auto email = secondary ? v.field("emailAddress") : v.optional("emailAddress");
  email.is_string().is_email();
  auto mobile = secondary ? v.field("mobile") : v.optional("mobile");
  mobile.is_object();
  auto m = v.nested("mobile");
  m.field("phoneNumber").is_not_empty().is_string().max_length(32);
  m.field("isoCode").is_not_empty().is_string().max_length(8);
  check_kyc_tier(v, body, /*required=*/false);
}

Made create_wallet(const Exchange& x) {
  const json& body = x.body;
  CreateWallet cmd{x.caller.caller, body.at("accountName"), body.at("category"),
                   std::nullopt,    std::nullopt,           kyc_tier_of(body)};
  if (body.contains("emailAddress") && !body.at("emailAddress").is_null())
    cmd.email_address = body.at("emailAddress");
  if (body.contains("mobile") && !body.at("mobile").is_null())
    cmd.mobile = Mobile{body.at("mobile").at("isoCode"), body.at("mobile").at("phoneNumber")};
  return cmd;
}

Result<std::optional<std::string>> wallet_named(const Exchange& x, std::string_view) {
  return x.views().wallet_text(x.caller.scope, x.param("id"));
}

WalletFilter wallet_filter(http::QueryValidator& q) {
  WalletFilter f;
  f.category = q.one_of("category", {"primary", "secondary"});
  f.is_favourite = q.boolean("isFavourite");
  f.live = q.boolean("live");
  return f;
}

}  // namespace

void add_wallet_routes(Routes& routes) {
  routes.command({.path = "/v1/virtual-accounts",
                  .rules = wallet_rules,
                  .make = create_wallet,
                  .answer = created(201, "Virtual account created successfully")});
  routes.list(
      ListRoute<WalletFilter>{.path = "/v1/virtual-accounts",
                              .filter = wallet_filter,
                              .page = [](const Exchange& x, const WalletFilter& f, const PageRequest& p) {
                                return x.views().wallets(x.caller.scope, f, p);
                              }});
  routes.read(ReadRoute<>{.path = "/v1/virtual-accounts/{id}", .read = [](const Exchange& x, const NoQuery&) {
                            return one_record(x.views().wallet_text(x.caller.scope, x.param("id")));
                          }});
  routes.command(
      {.method = boost::beast::http::verb::patch,
       .path = "/v1/virtual-accounts/{id}",
       .rules = [](const Exchange& x, http::Validator& v) { check_kyc_tier(v, x.body, /*required=*/true); },
       .make = [](const Exchange& x) -> Made {
         return SetWalletTier{x.caller.caller, x.param("id"), kyc_tier_of(x.body)};
       },
       .answer = projected(200, "Virtual account updated successfully", wallet_named)});
}

}  // namespace kobo::api
