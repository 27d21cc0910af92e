// Bank transfers over HTTP: fees at the tier boundaries, debits of exactly amount + fee, the
// sandbox rail to success or failure, reversal of a failed payout, and a payout in flight
// across kill -9.
#include <gtest/gtest.h>

#include "tests/integration/harness.h"

namespace kobo::it {
namespace {

// A valid Access Bank NUBAN (a NUBAN test vector).
constexpr const char* kAccessBank = "044";
constexpr const char* kAccessNumber = "0123456784";

json bank_transfer_body(const std::string& source, std::int64_t amount, const std::string& reference = "",
                        json metadata = nullptr) {
  json b{{"source", source},  {"accountNumber", kAccessNumber}, {"bankCode", kAccessBank}, {"amount", amount},
         {"currency", "NGN"}, {"narration", "payout test"}};
  if (!reference.empty()) b["reference"] = reference;
  if (!metadata.is_null()) b["metadata"] = std::move(metadata);
  return b;
}

json get_transaction(HttpClient& http, const std::string& key, const std::string& id) {
  return data_or_throw(http.get("/v1/transactions/" + id, key), 200, "get transaction");
}

// One server for the suite, with a fast sandbox rail.
class Payouts : public ServerSuite {
 public:
  static void SetUpTestSuite() { start_server({"--rail-delay-ms", "200"}); }
};

TEST_F(Payouts, DebitsAmountPlusTheFeeOfItsTier) {
  struct Row {
    std::int64_t amount;
    std::int64_t fee;
  };
  for (const Row& row : std::vector<Row>{{10'000, 1'075},
                                         {500'000, 1'075},
                                         {500'001, 2'688},
                                         {5'000'000, 2'688},
                                         {5'000'001, 5'375},
                                         {1'000'000'000, 5'375}}) {
    const json w = create_wallet(http(), key());
    fund(http(), key(), w, row.amount + row.fee);
    const auto res =
        http().post("/v1/transactions/bank-transfer", bank_transfer_body(w["publicId"], row.amount), key());
    expect_success(res, 200, Message::kPresent);
    const json& t = res.json["data"];
    expect_transaction(t);
    EXPECT_EQ(t["fee"], row.fee) << row.amount;
    EXPECT_EQ(t["actualAmount"], row.amount + row.fee) << row.amount;
    EXPECT_EQ(t["clientTransaction"]["fee"], row.fee);
    EXPECT_EQ(t["amount"], row.amount);
    EXPECT_EQ(t["balance"], 0);
    EXPECT_EQ(t["status"], "pending");
    EXPECT_EQ(t["destinationType"], "BankAccount");
    EXPECT_EQ(t["meta"]["isThirdParty"], true);
    EXPECT_TRUE(t["feeReference"].get<std::string>().starts_with("fee-"));
    EXPECT_TRUE(t["destination"].get<std::string>().starts_with("bka-"));
    EXPECT_TRUE(t["destinationData"]["nameEnquiryRef"].is_string());
    EXPECT_EQ(balance_of(http(), key(), w["publicId"]), 0) << row.amount;
  }
}

TEST_F(Payouts, RefusesWhenTheBalanceDoesNotCoverTheFee) {
  const json w = create_wallet(http(), key());
  fund(http(), key(), w, 500'000 + 1'075 - 1);
  expect_error(
      http().post("/v1/transactions/bank-transfer", bank_transfer_body(w["publicId"], 500'000), key()), 403,
      "Insufficient fund");
  EXPECT_EQ(balance_of(http(), key(), w["publicId"]), 500'000 + 1'075 - 1);
}

TEST_F(Payouts, SettlesToSuccessWithVerifyData) {
  const json w = create_wallet(http(), key());
  fund(http(), key(), w, 100'000);
  const std::string ref = unique_name("payout-ok");
  data_or_throw(
      http().post("/v1/transactions/bank-transfer", bank_transfer_body(w["publicId"], 50'000, ref), key()),
      200, "bank transfer");
  ASSERT_TRUE(wait_until([&] { return get_transaction(http(), key(), ref)["status"] == "success"; }));
  const auto verified = http().get("/v1/transactions/" + ref + "/verify", key());
  expect_success(verified, 200, Message::kAbsent);
  const json& v = verified.json["data"]["meta"]["verify"];
  EXPECT_EQ(v["status"], "success");
  EXPECT_EQ(v["data"]["data"]["beneficiary"]["accountNumber"], kAccessNumber);
  EXPECT_EQ(v["data"]["data"]["amount"], 50'000);
  EXPECT_EQ(balance_of(http(), key(), w["publicId"]), 100'000 - 50'000 - 1'075);
}

TEST_F(Payouts, AFailedPayoutIsReversedExactlyOnce) {
  const json w = create_wallet(http(), key());
  fund(http(), key(), w, 60'000);
  const std::string ref = unique_name("payout-fail");
  const json debit = data_or_throw(
      http().post("/v1/transactions/bank-transfer",
                  bank_transfer_body(w["publicId"], 50'000, ref, json{{"sandboxOutcome", "failed"}}), key()),
      200, "bank transfer");
  EXPECT_EQ(debit["metadata"]["sandboxOutcome"], "failed");
  EXPECT_EQ(balance_of(http(), key(), w["publicId"]), 60'000 - 51'075);
  ASSERT_TRUE(wait_until([&] { return get_transaction(http(), key(), ref)["status"] == "failed"; }));
  EXPECT_EQ(balance_of(http(), key(), w["publicId"]), 60'000);
  std::vector<json> reversals;
  for (const json& t : list_all(http(), key(), "/v1/transactions", "entry=credit"))
    if (t["linkRef"] == debit["linkRef"]) reversals.push_back(t);
  ASSERT_EQ(reversals.size(), 1u);
  EXPECT_EQ(reversals[0]["amount"], 51'075);
  EXPECT_EQ(reversals[0]["destination"], w["publicId"]);
  EXPECT_EQ(reversals[0]["debitReference"], ref);
  EXPECT_EQ(http().get("/v1/transactions/" + ref + "/verify", key()).json["data"]["meta"]["verify"]["status"],
            "failed");
}

TEST_F(Payouts, SavesTheBeneficiaryWhenAsked) {
  const json w = create_wallet(http(), key());
  fund(http(), key(), w, 20'000);
  json body = bank_transfer_body(w["publicId"], 10'000);
  body["accountNumber"] = "0000014579";
  body["bankCode"] = "011";
  body["saveBeneficiary"] = true;
  const json t =
      data_or_throw(http().post("/v1/transactions/bank-transfer", body, key()), 200, "bank transfer");
  const auto saved = http().get("/v1/bank-accounts/" + t["destination"].get<std::string>(), key());
  expect_success(saved, 200, Message::kAbsent);
  EXPECT_EQ(saved.json["data"]["accountNumber"], "0000014579");
  EXPECT_EQ(saved.json["data"]["bankCode"], "011");
}

TEST_F(Payouts, RejectsBadRequestsAndChangesNothing) {
  const json w = create_wallet(http(), key());
  fund(http(), key(), w, 30'000);
  json unknown_bank = bank_transfer_body(w["publicId"], 10'000);
  unknown_bank["bankCode"] = "999";
  expect_error(http().post("/v1/transactions/bank-transfer", unknown_bank, key()), 400, "Bank not found");
  json bad_number = bank_transfer_body(w["publicId"], 10'000);
  bad_number["accountNumber"] = "0123456785";
  expect_error(http().post("/v1/transactions/bank-transfer", bad_number, key()), 400,
               "Invalid account number");
  expect_error(http().post("/v1/transactions/bank-transfer",
                           bank_transfer_body("vba-" + random_uuid(), 10'000), key()),
               404, "Source not found");
  expect_constraint(
      http().post("/v1/transactions/bank-transfer", bank_transfer_body(w["publicId"], 9'999), key()),
      "amount", "min", "amount must not be less than 10000");
  json bad_meta = bank_transfer_body(w["publicId"], 10'000);
  bad_meta["metadata"] = "text";
  expect_constraint(http().post("/v1/transactions/bank-transfer", bad_meta, key()), "metadata", "isObject",
                    "metadata must be an object");
  EXPECT_EQ(balance_of(http(), key(), w["publicId"]), 30'000);

  const std::string ref = unique_name("payout-ref");
  data_or_throw(
      http().post("/v1/transactions/bank-transfer", bank_transfer_body(w["publicId"], 10'000, ref), key()),
      200, "first");
  const auto replay =
      http().post("/v1/transactions/bank-transfer", bank_transfer_body(w["publicId"], 10'000, ref), key());
  EXPECT_EQ(replay.status, 200u);
  EXPECT_EQ(replay.headers.count("idempotent-replayed"), 1u);
  expect_error(
      http().post("/v1/transactions/bank-transfer", bank_transfer_body(w["publicId"], 11'000, ref), key()),
      409, "Duplicate reference");
  EXPECT_EQ(balance_of(http(), key(), w["publicId"]), 30'000 - 11'075);
}

TEST(PayoutRestart, APayoutInFlightFinishesAfterKill9) {
  KoboProcess server(kobo_options({"--rail-delay-ms", "1500"}));
  HttpClient& http = server.client();
  const std::string& key = server.test_key();
  const json ok_wallet = create_wallet(http, key);
  const json fail_wallet = create_wallet(http, key);
  fund(http, key, ok_wallet, 100'000);
  fund(http, key, fail_wallet, 100'000);
  data_or_throw(http.post("/v1/transactions/bank-transfer",
                          bank_transfer_body(ok_wallet["publicId"], 50'000, "r-ok"), key),
                200, "ok payout");
  data_or_throw(http.post("/v1/transactions/bank-transfer",
                          bank_transfer_body(fail_wallet["publicId"], 50'000, "r-fail",
                                             json{{"sandboxOutcome", "failed"}}),
                          key),
                200, "failing payout");
  server.kill9();
  server.start();
  HttpClient& again = server.client();
  ASSERT_TRUE(wait_until([&] { return get_transaction(again, key, "r-ok")["status"] == "success"; }));
  ASSERT_TRUE(wait_until([&] { return get_transaction(again, key, "r-fail")["status"] == "failed"; }));
  EXPECT_EQ(balance_of(again, key, ok_wallet["publicId"]), 100'000 - 51'075);
  EXPECT_EQ(balance_of(again, key, fail_wallet["publicId"]), 100'000) << "reversed exactly once";
  // And nothing more happens on another restart.
  server.kill9();
  server.start();
  EXPECT_EQ(balance_of(server.client(), key, fail_wallet["publicId"]), 100'000);
}

}  // namespace
}  // namespace kobo::it
