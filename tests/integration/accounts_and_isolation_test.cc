// Account settings, the admin API for businesses, live mode, and isolation: a key sees only
// its own business's records in its own mode.
#include <gtest/gtest.h>

#include "tests/integration/harness.h"

namespace kobo::it {
namespace {

constexpr const char* kAdminKey = kobo::testing::kTestAdminKey;

HttpResult admin_post(HttpClient& http, const json& body, const std::string& admin_key = kAdminKey) {
  return http.request(boost::beast::http::verb::post, "/v1/admin/businesses", body.dump(),
                      {{"x-admin-key", admin_key}});
}

class AccountsAndIsolation : public ServerSuite {
 public:
  static void SetUpTestSuite() { start_server({}); }

 protected:
  struct Business {
    json business, account, credentials;
    std::string test_key() const { return credentials["testSecretKey"]; }
    std::string live_key() const { return credentials["liveSecretKey"]; }
  };
  static Business new_business(const std::string& name) {
    const auto res = admin_post(http(), json{{"name", name}});
    const json d = data_or_throw(res, 201, "create business");
    return Business{d["business"], d["account"], d["credentials"]};
  }
};

TEST_F(AccountsAndIsolation, AdminCreatesBusinessesWithWorkingKeys) {
  const auto res = admin_post(http(), json{{"name", "Acme"}});
  expect_success(res, 201, Message::kPresent);
  const json& c = res.json["data"]["credentials"];
  for (const char* k :
       {"businessId", "accountId", "testSecretKey", "liveSecretKey", "testPublicKey", "livePublicKey"})
    EXPECT_TRUE(c[k].is_string()) << k;
  EXPECT_TRUE(c["testSecretKey"].get<std::string>().starts_with("sk_test_"));
  EXPECT_EQ(c["testSecretKey"].get<std::string>().size(), 8u + 40u);
  EXPECT_EQ(res.json["data"]["business"]["name"], "Acme");
  expect_success(http().get("/v1/virtual-accounts", c["testSecretKey"].get<std::string>()), 200,
                 Message::kAbsent, true);

  expect_error(admin_post(http(), json{{"name", "X"}}, "wrong"), 401, "Unauthorized");
  expect_error(http().post("/v1/admin/businesses", json{{"name", "X"}}), 401, "Unauthorized");
  expect_validation(admin_post(http(), json::object()), {"name"});
}

TEST_F(AccountsAndIsolation, ListsAndUpdatesAccountSettings) {
  const Business b = new_business("Settings");
  const auto list = http().get("/v1/accounts", b.test_key());
  expect_success(list, 200, Message::kAbsent, true);
  ASSERT_EQ(list.json["data"].size(), 1u);
  const json& a = list.json["data"][0];
  for (const char* f : {"_id", "id", "publicId", "name", "business", "createdAt", "updatedAt"})
    EXPECT_TRUE(a[f].is_string()) << f;
  EXPECT_TRUE(a["webhooks"].is_array());
  EXPECT_EQ(a["isDefault"], true);
  EXPECT_TRUE(a["pubKey"]["live"].is_string());
  EXPECT_TRUE(a["__v"].is_number_integer());
  EXPECT_EQ(http().get("/v1/accounts?isDefault=false", b.test_key()).json["meta"]["pagination"]["totalCount"],
            0);

  const std::string path = "/v1/accounts/" + a["publicId"].get<std::string>();
  const auto updated =
      http().patch(path, json{{"webhooks", {"https://example.com/a", "http://example.org/b"}}}, b.test_key());
  expect_success(updated, 200, Message::kPresent);
  EXPECT_EQ(updated.json["data"]["webhooks"].size(), 2u);
  EXPECT_EQ(updated.json["data"]["__v"], a["__v"].get<int>() + 1);

  json six = json::array();
  for (int i = 0; i < 6; ++i) six.push_back("https://example.com/" + std::to_string(i));
  expect_validation(http().patch(path, json{{"webhooks", six}}, b.test_key()), {"webhooks"});
  expect_validation(http().patch(path, json{{"webhooks", {"not a url"}}}, b.test_key()), {"webhooks"});
  expect_validation(http().patch(path, json{{"live", "yes"}}, b.test_key()), {"live"});
  expect_error(
      http().patch("/v1/accounts/acc-" + random_uuid(), json{{"webhooks", json::array()}}, b.test_key()), 404,
      "Data not found");
  expect_error(http().patch(path, json{{"live", true}}, b.test_key()), 403,
               "Live mode is enabled by the admin");
  EXPECT_EQ(http().get("/v1/accounts", b.test_key()).json["data"][0]["webhooks"].size(), 2u)
      << "rejections changed nothing";
}

TEST_F(AccountsAndIsolation, LiveKeysWorkOnlyOnceLiveModeIsEnabled) {
  const Business b = new_business("Live");
  expect_error(http().get("/v1/virtual-accounts", b.live_key()), 403,
               "Live mode is not enabled for this account");
  const json test_wallet = create_wallet(http(), b.test_key());
  // Going live is the admin's act (docs/security.md).
  data_or_throw(http().request(boost::beast::http::verb::patch,
                               "/v1/admin/accounts/" + b.account["publicId"].get<std::string>(),
                               json{{"live", true}}.dump(), {{"x-admin-key", kAdminKey}}),
                200, "enable live");
  const auto live_list = http().get("/v1/virtual-accounts", b.live_key());
  expect_success(live_list, 200, Message::kAbsent, true);
  EXPECT_EQ(live_list.json["meta"]["pagination"]["totalCount"], 0) << "test records never show in live mode";
  expect_error(http().get("/v1/virtual-accounts/" + test_wallet["publicId"].get<std::string>(), b.live_key()),
               404, "Data not found");
  const json live_wallet = create_wallet(http(), b.live_key());
  EXPECT_EQ(live_wallet["live"], true);
  expect_error(http().get("/v1/virtual-accounts/" + live_wallet["publicId"].get<std::string>(), b.test_key()),
               404, "Data not found");
  expect_error(http().post("/v1/sandbox/incoming-transfers",
                           incoming_body(live_wallet["accountNumber"], 10'000), b.live_key()),
               403, "Sandbox transfers are only available in test mode");
}

TEST_F(AccountsAndIsolation, ABusinessCannotReadListOrMoveAnothersRecords) {
  const Business a = new_business("Alpha");
  const Business b = new_business("Beta");
  const json a1 = create_wallet(http(), a.test_key());
  const json a2 = create_wallet(http(), a.test_key());
  fund(http(), a.test_key(), a1, 50'000);
  const std::string ref = unique_name("alpha-ref");
  data_or_throw(http().post("/v1/transactions/transfer",
                            transfer_body(a1["publicId"], a2["publicId"], 10'000, ref), a.test_key()),
                200, "alpha transfer");
  const json a_trx = wait_settled(http(), a.test_key(), ref);
  const json b1 = create_wallet(http(), b.test_key());
  fund(http(), b.test_key(), b1, 50'000);

  const std::string a1_id = a1["publicId"];
  expect_error(http().get("/v1/virtual-accounts/" + a1_id, b.test_key()), 404, "Data not found");
  expect_error(http().get("/v1/transactions/" + a_trx["publicId"].get<std::string>(), b.test_key()), 404,
               "Data not found");
  expect_error(
      http().get("/v1/transactions/" + std::to_string(a_trx["id"].get<std::int64_t>()), b.test_key()), 404,
      "Data not found");
  expect_error(http().get("/v1/transactions/" + ref, b.test_key()), 404, "Data not found");
  expect_error(http().get("/v1/transactions/" + ref + "/verify", b.test_key()), 404,
               "Transaction not found or does not exist");
  for (const json& w : list_all(http(), b.test_key(), "/v1/virtual-accounts"))
    EXPECT_NE(w["publicId"], a1_id);
  for (const json& t : list_all(http(), b.test_key(), "/v1/transactions"))
    EXPECT_EQ(t["auth"], b.business["publicId"]);
  EXPECT_EQ(http().get("/v1/accounts", b.test_key()).json["data"].size(), 1u);
  expect_error(http().patch("/v1/accounts/" + a.account["publicId"].get<std::string>(),
                            json{{"webhooks", json::array()}}, b.test_key()),
               404, "Data not found");

  // Moving money: someone else's wallet is unknown, as source or destination.
  expect_error(
      http().post("/v1/transactions/transfer", transfer_body(a1_id, b1["publicId"], 10'000), b.test_key()),
      404, "Source not found");
  expect_error(
      http().post("/v1/transactions/transfer", transfer_body(b1["publicId"], a1_id, 10'000), b.test_key()),
      404, "Destination not found");
  json payout{{"source", a1_id},   {"accountNumber", "0123456784"}, {"bankCode", "044"}, {"amount", 10'000},
              {"currency", "NGN"}, {"narration", "steal"}};
  expect_error(http().post("/v1/transactions/bank-transfer", payout, b.test_key()), 404, "Source not found");
  expect_error(
      http().post("/v1/sandbox/incoming-transfers", incoming_body(a1["accountNumber"], 10'000), b.test_key()),
      404, "Account not found");
  EXPECT_EQ(balance_of(http(), a.test_key(), a1_id), 40'000);
  EXPECT_EQ(balance_of(http(), b.test_key(), b1["publicId"]), 50'000);
}

TEST(AdminApi, IsAbsentWithoutAnAdminKey) {
  KoboOptions options = kobo_options();
  options.admin_api = false;
  KoboProcess server(options);
  expect_error(admin_post(server.client(), json{{"name", "X"}}, "any"), 404, "Route not found");
}

}  // namespace
}  // namespace kobo::it
