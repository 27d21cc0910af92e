// Disposable collection wallets (exact amount, once, before expiry) and transit wallets
// (every credit swept to the settlement wallet), over HTTP.
#include <gtest/gtest.h>

#include <thread>

#include "tests/integration/harness.h"

namespace kobo::it {
namespace {

json collection_body(const std::string& destination, std::int64_t amount, std::int64_t expire_in,
                     const std::string& reference = "") {
  json b{{"destination", destination}, {"accountName", "Order"}, {"amount", amount}, {"expireIn", expire_in}};
  if (!reference.empty()) b["reference"] = reference;
  return b;
}

class Collections : public ServerSuite {
 public:
  static void SetUpTestSuite() { start_server({"--collection-expire-min-s", "1"}); }
};

TEST_F(Collections, AcceptsTheExactAmountOnceThenCloses) {
  const json dest = create_wallet(http(), key());
  const auto created =
      http().post("/v1/collection-accounts",
                  collection_body(dest["publicId"], 250'000, 900, unique_name("order")), key());
  expect_success(created, 201, Message::kPresent);
  const json& c = created.json["data"];
  EXPECT_EQ(c["active"], true);
  EXPECT_EQ(c["status"], "pending");
  EXPECT_EQ(c["amount"], 250'000);
  EXPECT_EQ(c["parentAccountNumber"], dest["accountNumber"]);
  EXPECT_TRUE(c["publicId"].get<std::string>().starts_with("vba-"));
  expect_timestamp(c["expiration"], "expiration");
  const std::string number = c["accountNumber"];
  EXPECT_NE(number, dest["accountNumber"]);

  expect_error(http().post("/v1/sandbox/incoming-transfers", incoming_body(number, 249'999), key()), 400,
               "Amount mismatch");
  EXPECT_EQ(balance_of(http(), key(), dest["publicId"]), 0) << "nothing credited on a mismatch";
  const auto paid = http().post("/v1/sandbox/incoming-transfers", incoming_body(number, 250'000), key());
  expect_success(paid, 201, Message::kPresent);
  EXPECT_EQ(paid.json["data"]["destination"], dest["publicId"]);
  EXPECT_EQ(balance_of(http(), key(), dest["publicId"]), 250'000);
  expect_error(http().post("/v1/sandbox/incoming-transfers", incoming_body(number, 250'000), key()), 400,
               "Collection account is not active");
  EXPECT_EQ(balance_of(http(), key(), dest["publicId"]), 250'000) << "paid once";
  const json after = get_wallet(http(), key(), c["publicId"]);
  EXPECT_EQ(after["active"], false);
  EXPECT_EQ(after["status"], "success");
}

TEST_F(Collections, ExpiresAtItsExpiration) {
  const json dest = create_wallet(http(), key());
  const json c = data_or_throw(
      http().post("/v1/collection-accounts", collection_body(dest["publicId"], 10'000, 1), key()), 201,
      "collection");
  ASSERT_TRUE(wait_until([&] { return get_wallet(http(), key(), c["publicId"])["status"] == "expired"; }));
  EXPECT_EQ(get_wallet(http(), key(), c["publicId"])["active"], false);
  expect_error(
      http().post("/v1/sandbox/incoming-transfers", incoming_body(c["accountNumber"], 10'000), key()), 400,
      "Collection account is not active");
  EXPECT_EQ(balance_of(http(), key(), dest["publicId"]), 0);
}

TEST_F(Collections, RejectsBadRequests) {
  const json dest = create_wallet(http(), key());
  const std::string ref = unique_name("dup-ref");
  data_or_throw(
      http().post("/v1/collection-accounts", collection_body(dest["publicId"], 10'000, 900, ref), key()), 201,
      "first");
  expect_error(
      http().post("/v1/collection-accounts", collection_body(dest["publicId"], 10'000, 900, ref), key()), 400,
      "Reference already exists");
  expect_constraint(
      http().post("/v1/collection-accounts", collection_body(dest["publicId"], 10'000, 900, "abcd"), key()),
      "reference", "minLength", "reference must be longer than or equal to 5 characters");
  expect_constraint(
      http().post("/v1/collection-accounts", collection_body(dest["publicId"], 10'000, 1801), key()),
      "expireIn", "max", "expireIn must not be greater than 1800");
  expect_error(
      http().post("/v1/collection-accounts", collection_body("vba-" + random_uuid(), 10'000, 900), key()),
      404, "Destination not found");
  expect_validation(http().post("/v1/collection-accounts", json::object(), key()),
                    {"destination", "accountName", "amount", "expireIn"});
}

TEST_F(Collections, TransitWalletsSweepEveryCreditToTheSettlementWallet) {
  const json settlement = create_wallet(http(), key());
  const auto created = http().post(
      "/v1/transit-accounts",
      json{{"accountName", "Till"}, {"currency", "NGN"}, {"settlementAccount", settlement["publicId"]}},
      key());
  expect_success(created, 201, Message::kPresent);
  const json& t = created.json["data"];
  EXPECT_EQ(t["settlementAccount"], settlement["publicId"]);
  EXPECT_EQ(t["alias"], "Till");
  EXPECT_TRUE(t["reference"].is_null());
  EXPECT_FALSE(t.contains("category"));
  for (std::int64_t amount : {70'000, 30'000}) {
    expect_success(
        http().post("/v1/sandbox/incoming-transfers", incoming_body(t["accountNumber"], amount), key()), 201,
        Message::kPresent);
  }
  EXPECT_EQ(balance_of(http(), key(), settlement["publicId"]), 100'000);
  EXPECT_EQ(balance_of(http(), key(), t["publicId"]), 0);
  expect_error(
      http().post(
          "/v1/transit-accounts",
          json{{"accountName", "Till"}, {"currency", "NGN"}, {"settlementAccount", "vba-" + random_uuid()}},
          key()),
      404, "Settlement account not found");
  expect_validation(http().post("/v1/transit-accounts", json{{"accountName", "Till"}}, key()),
                    {"currency", "settlementAccount"});
}

TEST(CollectionRestart, ExpiresAfterKill9) {
  KoboProcess server(kobo_options({"--collection-expire-min-s", "1"}));
  const std::string& key = server.test_key();
  const json dest = create_wallet(server.client(), key);
  const json c = data_or_throw(
      server.client().post("/v1/collection-accounts", collection_body(dest["publicId"], 10'000, 2), key), 201,
      "collection");
  server.kill9();
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // it falls due while the server is down
  server.start();
  ASSERT_TRUE(
      wait_until([&] { return get_wallet(server.client(), key, c["publicId"])["status"] == "expired"; }));
  expect_error(
      server.client().post("/v1/sandbox/incoming-transfers", incoming_body(c["accountNumber"], 10'000), key),
      400, "Collection account is not active");
}

}  // namespace
}  // namespace kobo::it
