// Wallet transfers through the real server: the pending debit, its settlement into a credit on
// the destination, idempotent replays, and every rejection (which must move no money).
// API document 4.1, 2.5-2.7; docs/architecture.md sections 6 (guarantees 4, 5, 7) and 7.

#include <gtest/gtest.h>

#include "tests/integration/harness.h"

namespace kobo::it {
namespace {

class Transfers : public ServerSuite {
 protected:
  // Two fresh wallets; the source holds `funds`.
  void make_pair(std::int64_t funds) {
    source_ = create_wallet(http(), key());
    destination_ = create_wallet(http(), key());
    if (funds > 0) fund(http(), key(), source_, funds);
  }
  std::string src() const { return source_["publicId"]; }
  std::string dst() const { return destination_["publicId"]; }
  std::int64_t src_balance() { return balance_of(http(), key(), src()); }
  std::int64_t dst_balance() { return balance_of(http(), key(), dst()); }

  json source_, destination_;
};

TEST_F(Transfers, TransferAnswers200WithAPendingDebit) {
  make_pair(1'000'000);
  const std::string ref = unique_name("ref");
  json body = transfer_body(src(), dst(), 250'000, ref, "rent for march");
  HttpResult res = http().post("/v1/transactions/transfer", body, key());
  expect_success(res, 200, Message::kPresent);
  const json& t = res.json["data"];
  expect_transaction(t);
  EXPECT_EQ(t["entry"], "debit");
  EXPECT_EQ(t["status"], "pending");
  EXPECT_EQ(t["amount"], 250'000);
  EXPECT_EQ(t["fee"], 0);
  EXPECT_EQ(t["actualAmount"], 250'000);
  EXPECT_EQ(t["balance"], 750'000) << "balance is the source's balance after the debit";
  EXPECT_EQ(t["reference"], ref);
  EXPECT_EQ(t["narration"], "rent for march");
  EXPECT_EQ(t["source"], src());
  EXPECT_EQ(t["sourceType"], "VirtualAccount");
  EXPECT_EQ(t["destination"], dst());
  EXPECT_EQ(t["destinationType"], "VirtualAccount");
  EXPECT_EQ(t["currency"], "NGN");
  EXPECT_EQ(t["live"], false);
  EXPECT_FALSE(t["linkRef"].get<std::string>().empty());
  EXPECT_EQ(t["sourceData"]["accountNumber"], source_["accountNumber"]);
  EXPECT_EQ(t["destinationData"]["accountNumber"], destination_["accountNumber"]);
  EXPECT_EQ(t["clientTransaction"]["fee"], 0);
  EXPECT_EQ(t["clientTransaction"]["actualAmount"], 250'000);
  const json& credit = t["meta"]["credit"];
  EXPECT_EQ(credit["source"], src());
  EXPECT_EQ(credit["destination"], dst());
  EXPECT_EQ(credit["amount"], 250'000);
  EXPECT_EQ(credit["currency"], "NGN");
  EXPECT_NE(res.header("idempotent-replayed"), "true") << "a first request is not a replay";
}

TEST_F(Transfers, ReadsAfterTheAnswerSeeTheTransfer) {
  make_pair(500'000);
  const std::string ref = unique_name("ryw");
  data_or_throw(http().post("/v1/transactions/transfer", transfer_body(src(), dst(), 100'000, ref), key()),
                200, "transfer");
  EXPECT_EQ(src_balance(), 400'000);
  HttpResult got = http().get("/v1/transactions/" + ref, key());
  expect_success(got, 200, Message::kAbsent);
  EXPECT_EQ(got.json["data"]["reference"], ref);
  EXPECT_EQ(got.json["data"]["entry"], "debit");
}

TEST_F(Transfers, TransferSettlesIntoACreditOnTheDestination) {
  make_pair(1'000'000);
  const std::string ref = unique_name("settle");
  json debit = data_or_throw(
      http().post("/v1/transactions/transfer", transfer_body(src(), dst(), 300'000, ref), key()), 200,
      "transfer");
  json settled = wait_settled(http(), key(), ref);
  EXPECT_EQ(settled["publicId"], debit["publicId"]);
  EXPECT_EQ(settled["status"], "success");
  EXPECT_EQ(src_balance(), 700'000);
  EXPECT_EQ(dst_balance(), 300'000);

  std::vector<json> credits;
  for (const json& t : list_all(http(), key(), "/v1/transactions", "entry=credit")) {
    if (t["linkRef"] == debit["linkRef"]) credits.push_back(t);
  }
  ASSERT_EQ(credits.size(), 1u) << "exactly one credit leg shares the debit's linkRef";
  const json& c = credits[0];
  expect_transaction(c);
  EXPECT_EQ(c["entry"], "credit");
  EXPECT_EQ(c["status"], "success");
  EXPECT_EQ(c["amount"], 300'000);
  EXPECT_EQ(c["source"], src());
  EXPECT_EQ(c["destination"], dst());
  EXPECT_EQ(c["debitReference"], ref);
  EXPECT_EQ(c["balance"], 300'000) << "a credit records the destination's balance after it";
  EXPECT_NE(c["publicId"], debit["publicId"]);
  EXPECT_NE(c["reference"], ref);
}

TEST_F(Transfers, TransferWithoutReferenceGetsAGeneratedOne) {
  make_pair(200'000);
  json body = transfer_body(src(), dst(), 10'000);
  json t = data_or_throw(http().post("/v1/transactions/transfer", body, key()), 200, "transfer");
  ASSERT_TRUE(t["reference"].is_string());
  EXPECT_FALSE(t["reference"].get<std::string>().empty());
  // Without a reference two identical bodies are two transfers.
  data_or_throw(http().post("/v1/transactions/transfer", body, key()), 200, "second transfer");
  EXPECT_EQ(src_balance(), 180'000);
}

TEST_F(Transfers, MinimumAndMaximumAmountsAreAccepted) {
  make_pair(1'000'010'000);
  data_or_throw(http().post("/v1/transactions/transfer",
                            transfer_body(src(), dst(), 10'000, unique_name("min")), key()),
                200, "minimum transfer");
  data_or_throw(http().post("/v1/transactions/transfer",
                            transfer_body(src(), dst(), 1'000'000'000, unique_name("max")), key()),
                200, "maximum transfer");
  EXPECT_EQ(src_balance(), 0);
}

TEST_F(Transfers, TransferOfTheWholeBalanceSucceedsAndTheNextIs403) {
  make_pair(50'000);
  data_or_throw(http().post("/v1/transactions/transfer",
                            transfer_body(src(), dst(), 50'000, unique_name("all")), key()),
                200, "drain");
  EXPECT_EQ(src_balance(), 0);
  expect_error(http().post("/v1/transactions/transfer",
                           transfer_body(src(), dst(), 10'000, unique_name("more")), key()),
               403, "Insufficient fund");
  EXPECT_EQ(src_balance(), 0);
}

// Domain rejections, in the order the contract lists them. Each leaves both balances and the
// transaction count as they were.
struct DomainRejection {
  std::string name;
  std::function<void(json&, const std::string& src, const std::string& dst)> change;
  unsigned status;
  std::string message;
};

TEST_F(Transfers, DomainRejectionsAnswerTheirStatusAndMoveNothing) {
  make_pair(100'000);
  const std::vector<DomainRejection> rows = {
      {"UnknownSource", [](json& b, auto&, auto&) { b["source"] = "vba-" + random_uuid(); }, 404,
       "Source not found"},
      {"MalformedSource", [](json& b, auto&, auto&) { b["source"] = "nonsense"; }, 404, "Source not found"},
      {"UnknownSourceAndDestination",
       [](json& b, auto&, auto&) {
         b["source"] = "vba-" + random_uuid();
         b["destination"] = "vba-" + random_uuid();
       },
       404, "Source not found"},
      {"UnknownDestination", [](json& b, auto&, auto&) { b["destination"] = "vba-" + random_uuid(); }, 404,
       "Destination not found"},
      {"SourceIsDestination", [](json& b, const std::string& s, auto&) { b["destination"] = s; }, 400,
       "Source and destination cannot be the same"},
      {"AmountAboveBalance", [](json& b, auto&, auto&) { b["amount"] = 100'001; }, 403, "Insufficient fund"},
      {"MaximumAmountAboveBalance", [](json& b, auto&, auto&) { b["amount"] = 1'000'000'000; }, 403,
       "Insufficient fund"},
  };
  const auto transactions_before = total_count(http(), key(), "/v1/transactions");
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    json body = transfer_body(src(), dst(), 20'000, unique_name("rej"));
    row.change(body, src(), dst());
    expect_error(http().post("/v1/transactions/transfer", body, key()), row.status, row.message);
    EXPECT_EQ(src_balance(), 100'000);
    EXPECT_EQ(dst_balance(), 0);
  }
  EXPECT_EQ(total_count(http(), key(), "/v1/transactions"), transactions_before);
}

TEST_F(Transfers, DestinationThatIsAnotherRecordTypeIs404DestinationNotFound) {
  make_pair(100'000);
  json body = transfer_body(src(), dst(), 20'000, unique_name("other"));
  body["destination"] = "trx-" + random_uuid();
  expect_error(http().post("/v1/transactions/transfer", body, key()), 404, "Destination not found");
  EXPECT_EQ(src_balance(), 100'000);
}

// Validation rejections: the body change, the fields named, and the texts we know exactly.
struct ValidationRejection {
  std::string name;
  std::function<void(json&)> change;
  std::vector<std::string> fields;
  std::vector<std::tuple<std::string, std::string, std::string>> constraints;
};

const std::vector<ValidationRejection>& validation_rejections() {
  static const std::vector<ValidationRejection> rows = {
      {"AmountBelowMinimum",
       [](json& b) { b["amount"] = 9'999; },
       {"amount"},
       {{"amount", "min", "amount must not be less than 10000"}}},
      {"AmountAboveMaximum",
       [](json& b) { b["amount"] = 1'000'000'001; },
       {"amount"},
       {{"amount", "max", "amount must not be greater than 1000000000"}}},
      {"AmountZero",
       [](json& b) { b["amount"] = 0; },
       {"amount"},
       {{"amount", "min", "amount must not be less than 10000"}}},
      {"AmountNegative",
       [](json& b) { b["amount"] = -50'000; },
       {"amount"},
       {{"amount", "min", "amount must not be less than 10000"}}},
      {"AmountFraction",
       [](json& b) { b["amount"] = 10'000.5; },
       {"amount"},
       {{"amount", "isInt", "amount must be an integer number"}}},
      {"AmountString",
       [](json& b) { b["amount"] = "10000"; },
       {"amount"},
       {{"amount", "isInt", "amount must be an integer number"}}},
      {"AmountMissing", [](json& b) { b.erase("amount"); }, {"amount"}, {}},
      {"AmountNull", [](json& b) { b["amount"] = nullptr; }, {"amount"}, {}},
      {"AmountHuge", [](json& b) { b["amount"] = 1e30; }, {"amount"}, {}},
      {"NarrationEmpty",
       [](json& b) { b["narration"] = ""; },
       {"narration"},
       {{"narration", "isNotEmpty", "narration should not be empty"}}},
      {"NarrationMissing",
       [](json& b) { b.erase("narration"); },
       {"narration"},
       {{"narration", "isNotEmpty", "narration should not be empty"},
        {"narration", "isString", "narration must be a string"}}},
      {"NarrationNumber",
       [](json& b) { b["narration"] = 5; },
       {"narration"},
       {{"narration", "isString", "narration must be a string"}}},
      {"SourceMissing", [](json& b) { b.erase("source"); }, {"source"}, {}},
      {"SourceNumber",
       [](json& b) { b["source"] = 12; },
       {"source"},
       {{"source", "isString", "source must be a string"}}},
      {"DestinationMissing", [](json& b) { b.erase("destination"); }, {"destination"}, {}},
      {"SourceTypeWrong",
       [](json& b) { b["sourceType"] = "BankAccount"; },
       {"sourceType"},
       {{"sourceType", "isIn", "sourceType must be one of the following values: VirtualAccount"}}},
      {"SourceTypeMissing", [](json& b) { b.erase("sourceType"); }, {"sourceType"}, {}},
      {"DestinationTypeWrong",
       [](json& b) { b["destinationType"] = "Wallet"; },
       {"destinationType"},
       {{"destinationType", "isIn", "destinationType must be one of the following values: VirtualAccount"}}},
      {"DestinationTypeMissing", [](json& b) { b.erase("destinationType"); }, {"destinationType"}, {}},
      {"CurrencyUsd",
       [](json& b) { b["currency"] = "USD"; },
       {"currency"},
       {{"currency", "isIn", "currency must be one of the following values: NGN"}}},
      {"CurrencyMissing", [](json& b) { b.erase("currency"); }, {"currency"}, {}},
      {"ReferenceNumber",
       [](json& b) { b["reference"] = 123; },
       {"reference"},
       {{"reference", "isString", "reference must be a string"}}},
      {"NameEnquiryRefNumber",
       [](json& b) { b["nameEnquiryRef"] = 123; },
       {"nameEnquiryRef"},
       {{"nameEnquiryRef", "isString", "nameEnquiryRef must be a string"}}},
      {"TwoBadFields",
       [](json& b) {
         b["amount"] = 1;
         b["narration"] = "";
       },
       {"amount", "narration"},
       {{"amount", "min", "amount must not be less than 10000"},
        {"narration", "isNotEmpty", "narration should not be empty"}}},
      // Validation comes before any lookup: an unknown source with a bad amount is a 400.
      {"BadAmountAndUnknownSource",
       [](json& b) {
         b["amount"] = 5;
         b["source"] = "vba-" + random_uuid();
       },
       {"amount"},
       {{"amount", "min", "amount must not be less than 10000"}}},
  };
  return rows;
}

TEST_F(Transfers, InvalidBodiesAre400ValidationErrorAndMoveNothing) {
  make_pair(100'000);
  const auto transactions_before = total_count(http(), key(), "/v1/transactions");
  for (const auto& row : validation_rejections()) {
    SCOPED_TRACE(row.name);
    json body = transfer_body(src(), dst(), 20'000, unique_name("val"));
    row.change(body);
    HttpResult res = http().post("/v1/transactions/transfer", body, key());
    expect_validation(res, row.fields);
    for (const auto& [field, constraint, text] : row.constraints)
      expect_constraint(res, field, constraint, text);
  }
  EXPECT_EQ(src_balance(), 100'000);
  EXPECT_EQ(dst_balance(), 0);
  EXPECT_EQ(total_count(http(), key(), "/v1/transactions"), transactions_before);
}

TEST_F(Transfers, SameReferenceAndBodyReplaysTheOriginalAndMovesNothing) {
  make_pair(1'000'000);
  const std::string ref = unique_name("idem");
  json body = transfer_body(src(), dst(), 100'000, ref);
  HttpResult first = http().post("/v1/transactions/transfer", body, key());
  expect_success(first, 200, Message::kPresent);
  const json original = first.json["data"];

  for (int i = 0; i < 3; ++i) {
    HttpResult again = http().post("/v1/transactions/transfer", body, key());
    expect_success(again, 200, Message::kAny);
    EXPECT_EQ(again.header("idempotent-replayed"), "true");
    const json& t = again.json["data"];
    expect_transaction(t);
    for (const char* f : {"_id", "id", "publicId", "reference", "linkRef", "amount", "source", "destination",
                          "entry", "createdAt", "narration"}) {
      EXPECT_EQ(t[f], original[f]) << f;
    }
  }
  wait_settled(http(), key(), ref);
  EXPECT_EQ(src_balance(), 900'000);
  EXPECT_EQ(dst_balance(), 100'000);
  // Still one debit with that reference.
  int debits = 0;
  for (const json& t : list_all(http(), key(), "/v1/transactions", "entry=debit"))
    debits += t["reference"] == ref;
  EXPECT_EQ(debits, 1);
}

TEST_F(Transfers, SameReferenceWithADifferentBodyIs409AndMovesNothing) {
  make_pair(1'000'000);
  json third = create_wallet(http(), key());
  const std::string ref = unique_name("dupref");
  json body = transfer_body(src(), dst(), 100'000, ref);
  data_or_throw(http().post("/v1/transactions/transfer", body, key()), 200, "original");
  wait_settled(http(), key(), ref);

  const std::vector<std::pair<std::string, std::function<void(json&)>>> changes = {
      {"amount", [](json& b) { b["amount"] = 100'001; }},
      {"narration", [](json& b) { b["narration"] = "something else"; }},
      {"destination", [&](json& b) { b["destination"] = third["publicId"]; }},
  };
  for (const auto& [what, change] : changes) {
    SCOPED_TRACE(what);
    json changed = body;
    change(changed);
    expect_error(http().post("/v1/transactions/transfer", changed, key()), 409, "Duplicate reference");
  }
  EXPECT_EQ(src_balance(), 900'000);
  EXPECT_EQ(dst_balance(), 100'000);
  EXPECT_EQ(balance_of(http(), key(), third["publicId"]), 0);
}

TEST_F(Transfers, AReferenceOfARejectedTransferStaysFree) {
  make_pair(10'000);
  const std::string ref = unique_name("free");
  json body = transfer_body(src(), dst(), 50'000, ref);
  expect_error(http().post("/v1/transactions/transfer", body, key()), 403, "Insufficient fund");
  fund(http(), key(), source_, 40'000);
  HttpResult res = http().post("/v1/transactions/transfer", body, key());
  expect_success(res, 200, Message::kPresent);
  EXPECT_NE(res.header("idempotent-replayed"), "true");
  EXPECT_EQ(src_balance(), 0);
}

TEST_F(Transfers, TransferWithTheLiveKeyIs403AndMovesNothing) {
  make_pair(100'000);
  expect_error(http().post("/v1/transactions/transfer",
                           transfer_body(src(), dst(), 20'000, unique_name("live")), server().live_key()),
               403, "Live mode is not enabled for this account");
  EXPECT_EQ(src_balance(), 100'000);
}

TEST_F(Transfers, ChainedTransfersKeepEveryBalanceExact) {
  json a = create_wallet(http(), key()), b = create_wallet(http(), key()), c = create_wallet(http(), key());
  fund(http(), key(), a, 90'000);
  auto move = [&](const json& from, const json& to, std::int64_t amount) {
    data_or_throw(
        http().post("/v1/transactions/transfer",
                    transfer_body(from["publicId"], to["publicId"], amount, unique_name("chain")), key()),
        200, "transfer");
  };
  move(a, b, 60'000);
  // b's credit may still be settling: a transfer out of b must wait for it or see Insufficient
  // fund; read-your-writes makes the balance visible once settled.
  ASSERT_TRUE(wait_until([&] { return balance_of(http(), key(), b["publicId"]) == 60'000; }));
  move(b, c, 40'000);
  ASSERT_TRUE(wait_until([&] { return balance_of(http(), key(), c["publicId"]) == 40'000; }));
  move(c, a, 15'000);
  ASSERT_TRUE(wait_until([&] { return balance_of(http(), key(), a["publicId"]) == 45'000; }));
  EXPECT_EQ(balance_of(http(), key(), b["publicId"]), 20'000);
  EXPECT_EQ(balance_of(http(), key(), c["publicId"]), 25'000);
}

}  // namespace
}  // namespace kobo::it
