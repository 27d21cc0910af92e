// Collection and transit wallets: POST /v1/collection-accounts, POST /v1/transit-accounts.

#include "query-api/envelope.h"
#include "query-api/route.h"

namespace kobo::api {
namespace {

using nlohmann::json;

constexpr std::int64_t kExpireInMax = 1800;  // seconds

void collection_rules(const Exchange& x, http::Validator& v) {
  v.field("destination").is_not_empty().is_string().max_length(kTextLengthMax);
  v.field("accountName").is_not_empty().is_string().max_length(kNameLengthMax);
  v.field("amount").is_int().min(1).max(kAmountMax);
  v.field("expireIn").is_int().min(x.options().expire_in_min_s).max(kExpireInMax);
  v.optional("reference").is_string().min_length(5).max_length(kTextLengthMax);
}

Made collection(const Exchange& x) {
  const json& body = x.body;
  return CreateCollection{x.caller.caller,
                          body.at("destination"),
                          body.at("accountName"),
                          Kobo(*http::as_int64(body.at("amount"))),
                          *http::as_int64(body.at("expireIn")),
                          optional_string(body, "reference")};
}

void transit_rules(const Exchange& x, http::Validator& v) {
  v.field("accountName").is_not_empty().is_string().max_length(kNameLengthMax);
  v.field("currency").is_not_empty().is_string().is_in({"NGN"});
  v.field("settlementAccount").is_not_empty().is_string().max_length(kTextLengthMax);
  v.optional("emailAddress").is_string().is_email();
  v.optional("mobile").is_object();
  auto m = v.nested("mobile");
  m.field("phoneNumber").is_not_empty().is_string().max_length(32);
  m.field("isoCode").is_not_empty().is_string().max_length(8);
  check_kyc_tier(v, x.body, /*required=*/false);
}

Made transit(const Exchange& x) {
  const json& body = x.body;
  CreateTransitWallet cmd{x.caller.caller,
                          body.at("accountName"),
                          body.at("settlementAccount"),
                          optional_string(body, "emailAddress"),
                          std::nullopt,
                          kyc_tier_of(body)};
  if (body.contains("mobile") && body.at("mobile").is_object())
    cmd.mobile = Mobile{body.at("mobile").at("isoCode"), body.at("mobile").at("phoneNumber")};
  return cmd;
}

}  // namespace

void add_collection_routes(Routes& routes) {
  routes.command({.path = "/v1/collection-accounts",
                  .rules = collection_rules,
                  .make = collection,
                  .answer = created(201, "Collection account created successfully")});
  routes.command({.path = "/v1/transit-accounts",
                  .rules = transit_rules,
                  .make = transit,
                  .answer = created(201, "Transit account created successfully")});
}

}  // namespace kobo::api
