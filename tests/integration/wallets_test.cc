// Wallets (virtual accounts) through the real server: create, get one, find, and every way a
// create can be refused. API document 2.1, 4.3-4.5; docs/architecture.md section 7 (limits, NUBAN).

#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "tests/integration/harness.h"

namespace kobo::it {
namespace {

class Wallets : public ServerSuite {};

// NUBAN (docs/architecture.md section 7): check digit over the 6-digit institution code and the 9-digit
// serial.
int nuban_check_digit(const std::string& institution, const std::string& serial) {
  static const int weights[15] = {3, 7, 3, 3, 7, 3, 3, 7, 3, 3, 7, 3, 3, 7, 3};
  const std::string digits = institution + serial;
  int sum = 0;
  for (std::size_t i = 0; i < 15; ++i) sum += (digits[i] - '0') * weights[i];
  return (10 - sum % 10) % 10;
}

TEST(Nuban, CheckDigitMatchesTheDesignVectors) {
  EXPECT_EQ(nuban_check_digit("000011", "000001457"), 9);
  EXPECT_EQ(nuban_check_digit("000044", "012345678"), 4);
  EXPECT_EQ(nuban_check_digit("950547", "000000001"), 1);
}

TEST_F(Wallets, CreatePrimaryAnswers201WithACompleteZeroBalanceWallet) {
  // Primary wallets are limited to 5 per account; this suite's only other primaries are made by
  // the limit test, which tops up to exactly 5 whatever exists.
  const std::string name = unique_name("primary");
  HttpResult res = http().post("/v1/virtual-accounts", wallet_body(name, "primary"), key());
  if (res.status == 400 && res.body.find("Primary wallet limit reached") != std::string::npos) {
    GTEST_SKIP() << "primary limit already reached by another test of this suite";
  }
  expect_success(res, 201, Message::kPresent);
  const json& w = res.json["data"];
  expect_wallet(w, false);
  EXPECT_EQ(w["accountName"], name);
  EXPECT_EQ(w["category"], "primary");
  EXPECT_EQ(w["balance"], 0);
  EXPECT_EQ(w["live"], false);
  EXPECT_EQ(w["isFavourite"], false);
  EXPECT_EQ(w["currency"], "NGN");
  EXPECT_EQ(w["bankName"], "Kobo Sandbox MFB");
  EXPECT_EQ(w["bankCode"], "099999");
}

TEST_F(Wallets, CreateSecondaryWithEmailAndMobileAnswers201) {
  const std::string name = unique_name("secondary");
  HttpResult res = http().post("/v1/virtual-accounts", wallet_body(name, "secondary"), key());
  expect_success(res, 201, Message::kPresent);
  const json& w = res.json["data"];
  expect_wallet(w, false);
  EXPECT_EQ(w["accountName"], name);
  EXPECT_EQ(w["category"], "secondary");
  EXPECT_EQ(w["balance"], 0);
  EXPECT_EQ(w["live"], false);
}

TEST_F(Wallets, AccountNumbersPassTheNubanCheckOfTheServiceBank) {
  for (int i = 0; i < 3; ++i) {
    json w = create_wallet(http(), key());
    const std::string number = w["accountNumber"];
    ASSERT_EQ(number.size(), 10u) << number;
    EXPECT_EQ(number[9] - '0', nuban_check_digit("999999", number.substr(0, 9)))
        << number << " fails the NUBAN check for institution 999999";
  }
}

TEST_F(Wallets, EachWalletGetsItsOwnIdPublicIdAndAccountNumber) {
  std::set<long long> ids;
  std::set<std::string> public_ids, numbers;
  for (int i = 0; i < 5; ++i) {
    json w = create_wallet(http(), key());
    ids.insert(w["id"].get<long long>());
    public_ids.insert(w["publicId"].get<std::string>());
    numbers.insert(w["accountNumber"].get<std::string>());
  }
  EXPECT_EQ(ids.size(), 5u);
  EXPECT_EQ(public_ids.size(), 5u);
  EXPECT_EQ(numbers.size(), 5u);
}

TEST_F(Wallets, GetOneAnswersTheWalletWithUnderscoreIdAndBalance) {
  json created = create_wallet(http(), key());
  HttpResult res = http().get("/v1/virtual-accounts/" + created["publicId"].get<std::string>(), key());
  expect_success(res, 200, Message::kAbsent);
  const json& w = res.json["data"];
  expect_wallet(w, true);
  for (const char* f : {"publicId", "id", "accountName", "accountNumber", "category", "bankName", "bankCode",
                        "currency", "live", "isFavourite", "createdAt"}) {
    EXPECT_EQ(w[f], created[f]) << f;
  }
  EXPECT_EQ(w["balance"], 0);
}

TEST_F(Wallets, GetOneShowsTheCurrentBalance) {
  json w = create_wallet(http(), key());
  fund(http(), key(), w, 123456);
  fund(http(), key(), w, 1);
  EXPECT_EQ(balance_of(http(), key(), w["publicId"]), 123457);
}

TEST_F(Wallets, GetOneOfAnUnknownWalletIs404DataNotFound) {
  const std::vector<std::string> ids = {"vba-" + random_uuid(), random_uuid(), "nonsense", "123456",
                                        "trx-" + random_uuid()};
  for (const auto& id : ids) {
    SCOPED_TRACE(id);
    expect_error(http().get("/v1/virtual-accounts/" + id, key()), 404, "Data not found");
  }
}

TEST_F(Wallets, DuplicateNameIs400AndCreatesNothing) {
  const std::string name = unique_name("dup");
  create_wallet(http(), key(), "secondary", name);
  const auto before = total_count(http(), key(), "/v1/virtual-accounts");
  expect_error(http().post("/v1/virtual-accounts", wallet_body(name, "secondary"), key()), 400,
               "Virtual Account name already exist");
  // The name is taken whatever the category.
  HttpResult primary = http().post("/v1/virtual-accounts", wallet_body(name, "primary"), key());
  EXPECT_EQ(primary.status, 400u) << primary.body;
  EXPECT_EQ(total_count(http(), key(), "/v1/virtual-accounts"), before);
}

TEST_F(Wallets, SixthPrimaryWalletIs400PrimaryWalletLimitReached) {
  auto primaries = [&] { return total_count(http(), key(), "/v1/virtual-accounts", "category=primary"); };
  for (auto n = primaries(); n < 5; ++n) create_wallet(http(), key(), "primary");
  ASSERT_EQ(primaries(), 5);
  const auto before = total_count(http(), key(), "/v1/virtual-accounts");
  expect_error(http().post("/v1/virtual-accounts", wallet_body(unique_name("sixth"), "primary"), key()), 400,
               "Primary wallet limit reached");
  EXPECT_EQ(primaries(), 5);
  EXPECT_EQ(total_count(http(), key(), "/v1/virtual-accounts"), before);
  // Secondary wallets have no limit.
  create_wallet(http(), key(), "secondary");
}

// One row per way a create body fails validation: the body change, the fields the answer must
// name, and the exact class-validator texts we know.
struct CreateRejection {
  std::string name;
  std::function<void(json&)> change;
  std::vector<std::string> fields;
  std::vector<std::tuple<std::string, std::string, std::string>> constraints;  // field, constraint, text
  std::string category = "secondary";
};

const std::vector<CreateRejection>& create_rejections() {
  static const std::vector<CreateRejection> rows = {
      {"MissingAccountName",
       [](json& b) { b.erase("accountName"); },
       {"accountName"},
       {{"accountName", "isNotEmpty", "accountName should not be empty"},
        {"accountName", "isString", "accountName must be a string"}}},
      {"EmptyAccountName",
       [](json& b) { b["accountName"] = ""; },
       {"accountName"},
       {{"accountName", "isNotEmpty", "accountName should not be empty"}}},
      {"NumericAccountName",
       [](json& b) { b["accountName"] = 42; },
       {"accountName"},
       {{"accountName", "isString", "accountName must be a string"}}},
      {"NullAccountName", [](json& b) { b["accountName"] = nullptr; }, {"accountName"}, {}},
      {"UnknownCategory",
       [](json& b) { b["category"] = "tertiary"; },
       {"category"},
       {{"category", "isIn", "category must be one of the following values: primary, secondary"}}},
      {"MissingCategory",
       [](json& b) { b.erase("category"); },
       {"category"},
       {{"category", "isIn", "category must be one of the following values: primary, secondary"}}},
      {"NumericCategory",
       [](json& b) { b["category"] = 1; },
       {"category"},
       {{"category", "isIn", "category must be one of the following values: primary, secondary"}}},
      {"UsdCurrency",
       [](json& b) { b["currency"] = "USD"; },
       {"currency"},
       {{"currency", "isIn", "currency must be one of the following values: NGN"}}},
      {"LowerCaseCurrency",
       [](json& b) { b["currency"] = "ngn"; },
       {"currency"},
       {{"currency", "isIn", "currency must be one of the following values: NGN"}}},
      {"MissingCurrency",
       [](json& b) { b.erase("currency"); },
       {"currency"},
       {{"currency", "isIn", "currency must be one of the following values: NGN"}}},
      {"SecondaryWithoutEmail", [](json& b) { b.erase("emailAddress"); }, {"emailAddress"}, {}},
      {"SecondaryWithInvalidEmail",
       [](json& b) { b["emailAddress"] = "not-an-email"; },
       {"emailAddress"},
       {{"emailAddress", "isEmail", "emailAddress must be an email"}}},
      {"SecondaryWithNumericEmail", [](json& b) { b["emailAddress"] = 7; }, {"emailAddress"}, {}},
      {"SecondaryWithoutMobile", [](json& b) { b.erase("mobile"); }, {"mobile"}, {}},
      {"SecondaryWithStringMobile", [](json& b) { b["mobile"] = "+2348012345678"; }, {"mobile"}, {}},
  };
  return rows;
}

TEST_F(Wallets, CreateRejectsEachInvalidBodyWith400ValidationErrorAndCreatesNothing) {
  const auto before = total_count(http(), key(), "/v1/virtual-accounts");
  for (const auto& row : create_rejections()) {
    SCOPED_TRACE(row.name);
    json body = wallet_body(unique_name("invalid"), row.category);
    row.change(body);
    HttpResult res = http().post("/v1/virtual-accounts", body, key());
    expect_validation(res, row.fields);
    for (const auto& [field, constraint, text] : row.constraints)
      expect_constraint(res, field, constraint, text);
  }
  EXPECT_EQ(total_count(http(), key(), "/v1/virtual-accounts"), before);
}

TEST_F(Wallets, SecondaryMobileWithoutPhoneNumberIsAValidationError) {
  json body = wallet_body(unique_name("mobile"), "secondary");
  body["mobile"].erase("phoneNumber");
  HttpResult res = http().post("/v1/virtual-accounts", body, key());
  expect_error(res, 400, "Validation error");
  const json& messages = res.json["meta"]["error"]["messages"];
  bool names_mobile = false;
  for (const auto& [field, _] : messages.items()) names_mobile |= field.rfind("mobile", 0) == 0;
  EXPECT_TRUE(names_mobile) << res.body;
}

TEST_F(Wallets, FindListsNewestFirstWithDefaultPagination) {
  for (int i = 0; i < 3; ++i) create_wallet(http(), key());
  HttpResult res = http().get("/v1/virtual-accounts", key());
  expect_success(res, 200, Message::kAbsent, true);
  const json& p = res.json["meta"]["pagination"];
  EXPECT_EQ(p["perPage"], 10);
  EXPECT_EQ(p["current"], 1);
  EXPECT_GE(p["totalCount"].get<long long>(), 3);
  const json& data = res.json["data"];
  ASSERT_TRUE(data.is_array());
  EXPECT_LE(data.size(), 10u);
  for (const auto& w : data) expect_wallet(w, true);
  for (std::size_t i = 1; i < data.size(); ++i) {
    EXPECT_GT(data[i - 1]["id"].get<long long>(), data[i]["id"].get<long long>()) << "newest first";
    EXPECT_GE(data[i - 1]["createdAt"].get<std::string>(), data[i]["createdAt"].get<std::string>());
  }
}

TEST_F(Wallets, FindShowsANewWalletFirstImmediately) {
  json w = create_wallet(http(), key());
  HttpResult res = http().get("/v1/virtual-accounts?perPage=1", key());
  expect_success(res, 200, Message::kAbsent, true);
  ASSERT_EQ(res.json["data"].size(), 1u);
  EXPECT_EQ(res.json["data"][0]["publicId"], w["publicId"]);
}

TEST_F(Wallets, FindPagesAreSlicesOfTheWholeList) {
  for (int i = 0; i < 4; ++i) create_wallet(http(), key());
  std::vector<json> all = list_all(http(), key(), "/v1/virtual-accounts");
  ASSERT_GE(all.size(), 4u);
  EXPECT_EQ(static_cast<long long>(all.size()), total_count(http(), key(), "/v1/virtual-accounts"));
  HttpResult page2 = http().get("/v1/virtual-accounts?perPage=2&page=2", key());
  expect_success(page2, 200, Message::kAbsent, true);
  EXPECT_EQ(page2.json["meta"]["pagination"]["perPage"], 2);
  EXPECT_EQ(page2.json["meta"]["pagination"]["current"], 2);
  ASSERT_EQ(page2.json["data"].size(), 2u);
  EXPECT_EQ(page2.json["data"][0]["publicId"], all[2]["publicId"]);
  EXPECT_EQ(page2.json["data"][1]["publicId"], all[3]["publicId"]);

  HttpResult beyond = http().get("/v1/virtual-accounts?perPage=100&page=1000", key());
  expect_success(beyond, 200, Message::kAbsent, true);
  EXPECT_TRUE(beyond.json["data"].empty());
  EXPECT_EQ(beyond.json["meta"]["pagination"]["totalCount"], static_cast<long long>(all.size()));

  HttpResult max = http().get("/v1/virtual-accounts?perPage=100", key());
  expect_success(max, 200, Message::kAbsent, true);
  EXPECT_EQ(max.json["meta"]["pagination"]["perPage"], 100);
}

TEST_F(Wallets, FindFiltersByCategoryFavouriteAndLive) {
  create_wallet(http(), key(), "secondary");
  for (const std::string category : {"primary", "secondary"}) {
    for (const json& w : list_all(http(), key(), "/v1/virtual-accounts", "category=" + category)) {
      EXPECT_EQ(w["category"], category);
    }
  }
  const auto all = total_count(http(), key(), "/v1/virtual-accounts");
  EXPECT_EQ(total_count(http(), key(), "/v1/virtual-accounts", "category=primary") +
                total_count(http(), key(), "/v1/virtual-accounts", "category=secondary"),
            all);
  EXPECT_EQ(total_count(http(), key(), "/v1/virtual-accounts", "isFavourite=false"), all);
  EXPECT_EQ(total_count(http(), key(), "/v1/virtual-accounts", "isFavourite=true"), 0);
  EXPECT_EQ(total_count(http(), key(), "/v1/virtual-accounts", "live=false"), all);
  EXPECT_EQ(total_count(http(), key(), "/v1/virtual-accounts", "live=true"), 0);
}

TEST_F(Wallets, FindRejectsBadPaginationWith400ValidationError) {
  for (const std::string query : {"perPage=101", "perPage=0", "page=0", "perPage=abc", "page=-1"}) {
    SCOPED_TRACE(query);
    expect_error(http().get("/v1/virtual-accounts?" + query, key()), 400, "Validation error");
  }
}

TEST_F(Wallets, CreateWithTheLiveKeyOfANonLiveAccountIs403AndCreatesNothing) {
  const auto before = total_count(http(), key(), "/v1/virtual-accounts");
  expect_error(
      http().post("/v1/virtual-accounts", wallet_body(unique_name("live"), "secondary"), server().live_key()),
      403, "Live mode is not enabled for this account");
  EXPECT_EQ(total_count(http(), key(), "/v1/virtual-accounts"), before);
}

}  // namespace
}  // namespace kobo::it
