// Sandbox incoming transfers (money arriving from another bank) through the real server.
// docs/architecture.md section 7 (incoming credits, sandbox); API document 2.5-2.7 for the record.

#include <gtest/gtest.h>

#include "tests/integration/harness.h"

namespace kobo::it {
namespace {

class Incoming : public ServerSuite {};

TEST_F(Incoming, CreditAnswers201WithASuccessfulExternalCredit) {
  json w = create_wallet(http(), key());
  json body = incoming_body(w["accountNumber"], 750'000);
  body["narration"] = "school fees";
  HttpResult res = http().post("/v1/sandbox/incoming-transfers", body, key());
  expect_success(res, 201, Message::kAny);
  const json& t = res.json["data"];
  expect_transaction(t);
  EXPECT_EQ(t["entry"], "credit");
  EXPECT_EQ(t["status"], "success");
  EXPECT_EQ(t["sourceType"], "External");
  EXPECT_EQ(t["source"].get<std::string>().rfind("src-", 0), 0u) << t["source"];
  EXPECT_EQ(t["destination"], w["publicId"]);
  EXPECT_EQ(t["destinationType"], "VirtualAccount");
  EXPECT_EQ(t["destinationData"]["accountNumber"], w["accountNumber"]);
  EXPECT_EQ(t["amount"], 750'000);
  EXPECT_EQ(t["balance"], 750'000);
  EXPECT_EQ(t["narration"], "school fees");
  EXPECT_EQ(t["live"], false);
  EXPECT_EQ(t["currency"], "NGN");
  ASSERT_TRUE(t["sourceData"].is_object());
  EXPECT_EQ(t["sourceData"]["accountName"], "Ada Obi");
  EXPECT_EQ(t["sourceData"]["accountNumber"], "0123456784");
  ASSERT_TRUE(t["meta"]["clientResponse"].is_object());
  EXPECT_EQ(t["meta"]["clientResponse"]["amount"], 750'000);
}

TEST_F(Incoming, CreditsAccumulateOnTheWallet) {
  json w = create_wallet(http(), key());
  json first = fund(http(), key(), w, 1);
  json second = fund(http(), key(), w, 99'999);
  EXPECT_EQ(first["balance"], 1);
  EXPECT_EQ(second["balance"], 100'000);
  EXPECT_NE(first["publicId"], second["publicId"]);
  EXPECT_NE(first["reference"], second["reference"]);
  EXPECT_EQ(balance_of(http(), key(), w["publicId"]), 100'000);
}

TEST_F(Incoming, MinimalBodyWithOnlyAccountNumberAndAmountIsAccepted) {
  json w = create_wallet(http(), key());
  HttpResult res = http().post("/v1/sandbox/incoming-transfers",
                               json{{"accountNumber", w["accountNumber"]}, {"amount", 5}}, key());
  expect_success(res, 201, Message::kAny);
  expect_transaction(res.json["data"]);
  EXPECT_EQ(balance_of(http(), key(), w["publicId"]), 5);
}

TEST_F(Incoming, LargestAllowedAmountIsAccepted) {
  json w = create_wallet(http(), key());
  fund(http(), key(), w, 1'000'000'000'000);
  EXPECT_EQ(balance_of(http(), key(), w["publicId"]), 1'000'000'000'000);
}

TEST_F(Incoming, CreditIsFoundByEveryIdentifierAndInTheCreditList) {
  json w = create_wallet(http(), key());
  json t = fund(http(), key(), w, 424'242);
  for (const std::string& id : {t["publicId"].get<std::string>(), std::to_string(t["id"].get<long long>()),
                                t["reference"].get<std::string>()}) {
    SCOPED_TRACE(id);
    HttpResult res = http().get("/v1/transactions/" + id, key());
    expect_success(res, 200, Message::kAbsent);
    EXPECT_EQ(res.json["data"]["publicId"], t["publicId"]);
    EXPECT_EQ(res.json["data"]["amount"], 424'242);
  }
  bool listed = false;
  for (const json& x : list_all(http(), key(), "/v1/transactions", "entry=credit&amount=424242")) {
    listed |= x["publicId"] == t["publicId"];
  }
  EXPECT_TRUE(listed);
}

TEST_F(Incoming, UnknownAccountNumberIs404AccountNotFoundAndCreditsNothing) {
  const auto before = total_count(http(), key(), "/v1/transactions");
  for (const std::string number : {"9999999999", "0000000000", "0123456784"}) {
    SCOPED_TRACE(number);
    expect_error(http().post("/v1/sandbox/incoming-transfers", incoming_body(number, 10'000), key()), 404,
                 "Account not found");
  }
  EXPECT_EQ(total_count(http(), key(), "/v1/transactions"), before);
}

struct AmountRejection {
  std::string name;
  json amount;  // null here means "leave the field out"
  bool omit = false;
};

TEST_F(Incoming, InvalidAmountsAre400ValidationErrorAndCreditNothing) {
  json w = create_wallet(http(), key());
  const std::vector<AmountRejection> rows = {
      {"Zero", 0},
      {"Negative", -1},
      {"Fraction", 1.5},
      {"String", "100"},
      {"AboveMaximum", 1'000'000'000'001},
      {"Null", nullptr},
      {"Boolean", true},
      {"Missing", nullptr, true},
  };
  const auto before = total_count(http(), key(), "/v1/transactions");
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    json body = incoming_body(w["accountNumber"], 1);
    if (row.omit) {
      body.erase("amount");
    } else {
      body["amount"] = row.amount;
    }
    expect_validation(http().post("/v1/sandbox/incoming-transfers", body, key()), {"amount"});
  }
  EXPECT_EQ(balance_of(http(), key(), w["publicId"]), 0);
  EXPECT_EQ(total_count(http(), key(), "/v1/transactions"), before);
}

TEST_F(Incoming, InvalidAccountNumberFieldIs400ValidationError) {
  const std::vector<std::pair<std::string, std::function<void(json&)>>> rows = {
      {"Missing", [](json& b) { b.erase("accountNumber"); }},
      {"Number", [](json& b) { b["accountNumber"] = 1234567890; }},
      {"Null", [](json& b) { b["accountNumber"] = nullptr; }},
  };
  for (const auto& [name, change] : rows) {
    SCOPED_TRACE(name);
    json body = incoming_body("1234567890", 10'000);
    change(body);
    expect_validation(http().post("/v1/sandbox/incoming-transfers", body, key()), {"accountNumber"});
  }
}

TEST_F(Incoming, WrongTypesOfOptionalFieldsAre400ValidationError) {
  json w = create_wallet(http(), key());
  for (const std::string field : {"narration", "senderName", "senderAccountNumber", "senderBankCode"}) {
    SCOPED_TRACE(field);
    json body = incoming_body(w["accountNumber"], 10'000);
    body[field] = 12345;
    expect_validation(http().post("/v1/sandbox/incoming-transfers", body, key()), {field});
    expect_constraint(http().post("/v1/sandbox/incoming-transfers", body, key()), field, "isString",
                      field + " must be a string");
  }
  EXPECT_EQ(balance_of(http(), key(), w["publicId"]), 0);
}

TEST_F(Incoming, LiveKeyIs403AndCreditsNothing) {
  json w = create_wallet(http(), key());
  HttpResult res = http().post("/v1/sandbox/incoming-transfers", incoming_body(w["accountNumber"], 10'000),
                               server().live_key());
  EXPECT_EQ(res.status, 403u) << res.body;
  expect_error(res, 403, res.json["meta"]["error"].value("message", ""));
  EXPECT_EQ(balance_of(http(), key(), w["publicId"]), 0);
}

}  // namespace
}  // namespace kobo::it
