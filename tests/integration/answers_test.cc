// Write answers (docs/architecture.md section 2, the answer step): every command that creates a
// record answers it rendered from the committed event and the wallet facts the writer decided
// with, without waiting for the projector, and a GET right after the answer shows the same
// record. The one difference the API allows: a wallet transfer answers `pending` (section 7).
#include <gtest/gtest.h>

#include "tests/integration/harness.h"

namespace kobo::it {
namespace {

class Answers : public ServerSuite {
 public:
  // A slow rail: a payout is read back before it settles.
  static void SetUpTestSuite() { start_server({"--rail-delay-ms", "60000"}); }
};

json created(const HttpResult& res, unsigned status, std::string_view what) {
  expect_success(res, status, Message::kPresent);
  return data_or_throw(res, status, what);
}

json got(HttpClient& http, const std::string& key, const std::string& path) {
  return data_or_throw(http.get(path, key), 200, path);
}

TEST_F(Answers, EveryCreatedRecordIsWhatAGetRightAfterShows) {
  // A wallet, and another with contact details.
  const json a = created(http().post("/v1/virtual-accounts", wallet_body(unique_name("answer-a")), key()),
                         201, "wallet");
  EXPECT_EQ(a, got(http(), key(), "/v1/virtual-accounts/" + a["publicId"].get<std::string>()));
  json b_body = wallet_body(unique_name("answer-b"));
  b_body["emailAddress"] = "ada@example.com";
  b_body["mobile"] = {{"isoCode", "NG"}, {"phoneNumber", "+2348012345678"}};
  const json b = created(http().post("/v1/virtual-accounts", b_body, key()), 201, "wallet");
  EXPECT_EQ(b, got(http(), key(), "/v1/virtual-accounts/" + b["publicId"].get<std::string>()));

  // An incoming credit.
  const json credit = created(
      http().post("/v1/sandbox/incoming-transfers", incoming_body(a["accountNumber"], 900'000), key()), 201,
      "credit");
  EXPECT_EQ(credit, got(http(), key(), "/v1/transactions/" + credit["publicId"].get<std::string>()));

  // A wallet transfer: pending in its answer, settled when read; nothing else differs.
  json debit = created(
      http().post("/v1/transactions/transfer",
                  transfer_body(a["publicId"], b["publicId"], 100'000, unique_name("answer-t")), key()),
      200, "transfer");
  json read = got(http(), key(), "/v1/transactions/" + debit["publicId"].get<std::string>());
  EXPECT_EQ(debit["status"], "pending");
  EXPECT_EQ(read["status"], "success");
  debit.erase("status");
  read.erase("status");
  EXPECT_EQ(debit, read);

  // A payout: pending in its answer; the rail takes it to processing at once (and no further on
  // this slow rail), which is all a read may show besides.
  json payout = created(http().post("/v1/transactions/bank-transfer",
                                    json{{"source", a["publicId"]},
                                         {"accountNumber", "0123456784"},
                                         {"bankCode", "044"},
                                         {"amount", 50'000},
                                         {"currency", "NGN"},
                                         {"narration", "answer payout"},
                                         {"metadata", {{"order", 7}}}},
                                    key()),
                        200, "payout");
  EXPECT_EQ(payout["status"], "pending");
  json on_rail = got(http(), key(), "/v1/transactions/" + payout["publicId"].get<std::string>());
  if (on_rail["status"] == "processing") {
    EXPECT_EQ(on_rail["meta"]["verify"]["data"]["status"], "processing");
    on_rail["meta"].erase("verify");
    for (json* r : {&payout, &on_rail})
      for (const char* member : {"status", "updatedAt"}) r->erase(member);
  }
  EXPECT_EQ(payout, on_rail);

  // A collection wallet (it shows its destination's account number) and a transit wallet.
  const json collection = created(http().post("/v1/collection-accounts",
                                              json{{"destination", b["publicId"]},
                                                   {"accountName", "Order"},
                                                   {"amount", 25'000},
                                                   {"expireIn", 900},
                                                   {"reference", unique_name("answer-c")}},
                                              key()),
                                  201, "collection");
  EXPECT_EQ(collection["parentAccountNumber"], b["accountNumber"]);
  EXPECT_EQ(collection,
            got(http(), key(), "/v1/virtual-accounts/" + collection["publicId"].get<std::string>()));
  const json transit = created(
      http().post("/v1/transit-accounts",
                  json{{"accountName", "Till"}, {"currency", "NGN"}, {"settlementAccount", a["publicId"]}},
                  key()),
      201, "transit");
  EXPECT_EQ(transit, got(http(), key(), "/v1/virtual-accounts/" + transit["publicId"].get<std::string>()));

  // A credit to a transit wallet, which sweeps it on in the same command.
  const json swept = created(
      http().post("/v1/sandbox/incoming-transfers", incoming_body(transit["accountNumber"], 30'000), key()),
      201, "transit credit");
  EXPECT_EQ(swept, got(http(), key(), "/v1/transactions/" + swept["publicId"].get<std::string>()));

  // A saved bank account.
  const json beneficiary = created(http().post("/v1/bank-accounts",
                                               json{{"accountName", unique_name("Mum")},
                                                    {"accountNumber", "0000014579"},
                                                    {"bankName", "First Bank"},
                                                    {"bankCode", "011"}},
                                               key()),
                                   201, "bank account");
  EXPECT_EQ(beneficiary,
            got(http(), key(), "/v1/bank-accounts/" + beneficiary["publicId"].get<std::string>()));
}

}  // namespace
}  // namespace kobo::it
