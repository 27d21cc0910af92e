// The bank list, name enquiry (validate-account) and saved beneficiaries over HTTP.
#include <gtest/gtest.h>

#include <set>

#include "tests/integration/harness.h"

namespace kobo::it {
namespace {

class BanksAndBeneficiaries : public ServerSuite {};

json validate_body(const std::string& number, const std::string& bank) {
  return json{{"accountNumber", number}, {"bankCode", bank}};
}

TEST_F(BanksAndBeneficiaries, ListsEveryBankWithItsFields) {
  const auto res = http().get("/v1/transactions/banks", key());
  expect_success(res, 200, Message::kPresent);
  const json& banks = res.json["data"];
  ASSERT_TRUE(banks.is_array());
  EXPECT_GE(banks.size(), 20u);
  std::set<std::string> ids;
  for (const json& b : banks) {
    for (const char* f : {"publicId", "bankName", "bankCode", "nibssBankCode", "country", "slug", "type",
                          "currency", "processor", "createdAt", "updatedAt"})
      EXPECT_TRUE(b[f].is_string()) << f << " in " << b.dump();
    EXPECT_TRUE(b["id"].is_number_integer());
    EXPECT_TRUE(b["active"].is_boolean());
    EXPECT_TRUE(b["deletedAt"].is_null());
    EXPECT_TRUE(b["meta"].is_object());
    EXPECT_TRUE(b["publicId"].get<std::string>().starts_with("bnk-"));
    EXPECT_TRUE(ids.insert(b["publicId"]).second) << "publicIds are unique";
  }
  EXPECT_EQ(http().get("/v1/transactions/banks", key()).json["data"], banks) << "stable across calls";
  expect_error(http().get("/v1/transactions/banks"), 401, "Unauthorized");
}

TEST_F(BanksAndBeneficiaries, ValidatesAccountNumbersWithTheNubanCheck) {
  for (const auto& [number, bank] : std::vector<std::pair<std::string, std::string>>{
           {"0000014579", "011"}, {"0123456784", "044"}, {"0123456784", "000014"}}) {
    const auto res = http().post("/v1/transactions/validate-account", validate_body(number, bank), key());
    expect_success(res, 201, Message::kPresent);
    EXPECT_EQ(res.json["data"]["accountNumber"], number);
    EXPECT_TRUE(res.json["data"]["accountName"].is_string());
    EXPECT_TRUE(res.json["data"]["nameEnquiryRef"].is_string());
    EXPECT_TRUE(res.json["data"]["publicId"].get<std::string>().starts_with("bka-"));
  }
  const auto a = http().post("/v1/transactions/validate-account", validate_body("0123456784", "044"), key());
  const auto b = http().post("/v1/transactions/validate-account", validate_body("0123456784", "044"), key());
  EXPECT_EQ(a.json["data"]["accountName"], b.json["data"]["accountName"]) << "same number, same name";
  expect_error(http().post("/v1/transactions/validate-account", validate_body("0123456785", "044"), key()),
               400, "Invalid account number");
  expect_error(http().post("/v1/transactions/validate-account", validate_body("012345678", "044"), key()),
               400, "Invalid account number");
  expect_error(http().post("/v1/transactions/validate-account", validate_body("0123456784", "123"), key()),
               400, "Bank not found");
  expect_validation(http().post("/v1/transactions/validate-account", json::object(), key()),
                    {"accountNumber", "bankCode"});
}

TEST_F(BanksAndBeneficiaries, ResolvesOurOwnWalletsToTheirNames) {
  const std::string name = unique_name("Resolved");
  const json w = create_wallet(http(), key(), "secondary", name);
  const auto res =
      http().post("/v1/transactions/validate-account", validate_body(w["accountNumber"], "099999"), key());
  expect_success(res, 201, Message::kPresent);
  EXPECT_EQ(res.json["data"]["accountName"], name);
  expect_error(http().post("/v1/transactions/validate-account", validate_body("0000000000", "099999"), key()),
               400, "Invalid account number");
}

TEST_F(BanksAndBeneficiaries, SavesListsAndFetchesBankAccounts) {
  const std::string name = unique_name("Mum");
  const json body{{"accountName", name},
                  {"accountNumber", "0000014579"},
                  {"bankName", "First Bank"},
                  {"bankCode", "011"}};
  const auto created = http().post("/v1/bank-accounts", body, key());
  expect_success(created, 201, Message::kPresent);
  const json& b = created.json["data"];
  EXPECT_EQ(b["beneficiaryType"], "personal") << "the default";
  for (const char* f :
       {"publicId", "auth", "account", "accountName", "accountNumber", "bankName", "bankCode", "reference",
        "processor", "currency", "beneficiaryType", "createdAt", "updatedAt", "lastUpdated"})
    EXPECT_TRUE(b[f].is_string()) << f;
  EXPECT_TRUE(b["id"].is_number_integer());
  EXPECT_TRUE(b["version"].is_number_integer());
  EXPECT_TRUE(b["clientIds"].is_object());
  EXPECT_EQ(b["live"], false);

  const auto again = http().post("/v1/bank-accounts", body, key());
  EXPECT_EQ(again.status, 200u) << "saving the same account twice finds the first";
  EXPECT_EQ(again.json["data"]["publicId"], b["publicId"]);

  const auto got = http().get("/v1/bank-accounts/" + b["publicId"].get<std::string>(), key());
  expect_success(got, 200, Message::kAbsent);
  EXPECT_EQ(got.json["data"]["accountName"], name);
  const auto listed = http().get("/v1/bank-accounts?accountName=" + name, key());
  expect_success(listed, 200, Message::kAbsent, true);
  EXPECT_EQ(listed.json["meta"]["pagination"]["totalCount"], 1);
  EXPECT_EQ(http()
                .get("/v1/bank-accounts?accountName=" + name + "&beneficiaryType=vba", key())
                .json["meta"]["pagination"]["totalCount"],
            0);
  expect_error(http().get("/v1/bank-accounts/bka-" + random_uuid(), key()), 404, "Data not found");
  expect_constraint(http().get("/v1/bank-accounts?beneficiaryType=friend", key()), "beneficiaryType", "isIn",
                    "beneficiaryType must be one of the following values: vba, external, personal");
  json bad = body;
  bad["beneficiaryType"] = "friend";
  expect_validation(http().post("/v1/bank-accounts", bad, key()), {"beneficiaryType"});
  expect_validation(http().post("/v1/bank-accounts", json::object(), key()),
                    {"accountName", "accountNumber", "bankName", "bankCode"});
}

}  // namespace
}  // namespace kobo::it
