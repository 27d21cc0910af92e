// Finding, getting and verifying transactions through the real server.
// API document 4.13-4.15; docs/architecture.md section 7 (pagination).

#include <gtest/gtest.h>

#include <ctime>
#include <functional>
#include <utility>

#include "tests/integration/harness.h"

namespace kobo::it {
namespace {

std::string utc_day(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

class Transactions : public ServerSuite {
 protected:
  // A funded wallet, a settled transfer out of it: one external credit, one debit, one credit.
  struct Scenario {
    json source, destination, incoming, debit;
    std::int64_t amount;
  };
  Scenario make_scenario() {
    Scenario s;
    s.source = create_wallet(http(), key());
    s.destination = create_wallet(http(), key());
    s.amount = 10'000 + static_cast<std::int64_t>(next_amount_++) * 7 + 3'000'000;  // unique in this suite
    s.incoming = fund(http(), key(), s.source, s.amount * 2);
    const std::string ref = unique_name("txref");
    s.debit = data_or_throw(
        http().post("/v1/transactions/transfer",
                    transfer_body(s.source["publicId"], s.destination["publicId"], s.amount, ref), key()),
        200, "transfer");
    wait_settled(http(), key(), ref);
    return s;
  }
  static inline int next_amount_ = 0;
};

TEST_F(Transactions, GetOneFindsATransactionByPublicIdIntegerIdAndReference) {
  Scenario s = make_scenario();
  const json& d = s.debit;
  for (const std::string& id : {d["publicId"].get<std::string>(), std::to_string(d["id"].get<long long>()),
                                d["reference"].get<std::string>()}) {
    SCOPED_TRACE(id);
    HttpResult res = http().get("/v1/transactions/" + id, key());
    expect_success(res, 200, Message::kAbsent);
    const json& t = res.json["data"];
    expect_transaction(t);
    for (const char* f :
         {"_id", "id", "publicId", "reference", "linkRef", "amount", "entry", "source", "destination"}) {
      EXPECT_EQ(t[f], d[f]) << f;
    }
    EXPECT_EQ(t["status"], "success");
  }
}

// Single records are answered from their stored text. The body must be the bytes the envelope
// makes of the parsed record (meta first, data as compact JSON with sorted keys): the records
// here carry escapes, non-ASCII text, nested objects and a floating-point number.
TEST_F(Transactions, GetOneAnswersAreTheEnvelopeOfTheRecordsCanonicalJson) {
  const auto expect_canonical = [](const HttpResult& res) {
    ASSERT_EQ(res.status, 200u) << res.body;
    EXPECT_EQ(res.body,
              R"({"meta":{"statusCode":200,"success":true},"data":)" + res.json["data"].dump() + "}");
  };
  const std::string odd = "Adé \"Q\" \\ \t ✓ ";
  const json source = create_wallet(http(), key(), "secondary", unique_name(odd));
  const json destination = create_wallet(http(), key());
  fund(http(), key(), source, 5'000'000);
  const std::string ref = unique_name("canon");
  data_or_throw(
      http().post("/v1/transactions/transfer",
                  transfer_body(source["publicId"], destination["publicId"], 20'000, ref, "naïve \"x\"\n"),
                  key()),
      200, "transfer");
  json payout{
      {"source", source["publicId"]},
      {"accountNumber", "0123456784"},
      {"bankCode", "044"},
      {"amount", 10'000},
      {"currency", "NGN"},
      {"narration", "payout ☺"},
      {"reference", unique_name("canon-payout")},
      {"metadata", {{"rate", 1.25}, {"note", "é\u0001"}, {"nested", {{"auth", "x"}, {"live", true}}}}}};
  const json debit =
      data_or_throw(http().post("/v1/transactions/bank-transfer", payout, key()), 200, "payout");
  const json beneficiary = data_or_throw(http().post("/v1/bank-accounts",
                                                     json{{"accountName", unique_name("Mum ✓")},
                                                          {"accountNumber", "0000014579"},
                                                          {"bankName", "First \"Bank\""},
                                                          {"bankCode", "011"}},
                                                     key()),
                                         201, "bank account");

  const HttpResult wallet =
      http().get("/v1/virtual-accounts/" + source["publicId"].get<std::string>(), key());
  expect_canonical(wallet);
  EXPECT_EQ(wallet.json["data"]["accountName"].get<std::string>().substr(0, odd.size()), odd);
  const HttpResult transfer = http().get("/v1/transactions/" + ref + "/verify", key());
  expect_canonical(transfer);
  EXPECT_EQ(transfer.json["data"]["narration"], "naïve \"x\"\n");
  const HttpResult by_id = http().get("/v1/transactions/" + debit["publicId"].get<std::string>(), key());
  expect_canonical(by_id);
  EXPECT_EQ(by_id.json["data"]["metadata"]["rate"], 1.25);
  expect_canonical(http().get("/v1/transactions/" + std::to_string(debit["id"].get<long long>()), key()));
  expect_canonical(http().get("/v1/bank-accounts/" + beneficiary["publicId"].get<std::string>(), key()));
}

TEST_F(Transactions, GetOneOfAnUnknownIdIs404DataNotFound) {
  for (const std::string& id : {"trx-" + random_uuid(), std::string("999999999"),
                                std::string("no-such-reference"), "vba-" + random_uuid(), std::string("0")}) {
    SCOPED_TRACE(id);
    expect_error(http().get("/v1/transactions/" + id, key()), 404, "Data not found");
  }
}

TEST_F(Transactions, VerifyAnswersTheTransactionOfAReference) {
  Scenario s = make_scenario();
  const std::string ref = s.debit["reference"];
  HttpResult res = http().get("/v1/transactions/" + ref + "/verify", key());
  expect_success(res, 200, Message::kAbsent);
  const json& t = res.json["data"];
  expect_transaction(t);
  EXPECT_EQ(t["publicId"], s.debit["publicId"]);
  EXPECT_EQ(t["reference"], ref);
  EXPECT_EQ(t["status"], "success");
  EXPECT_TRUE(t.contains("requestSrc") && t["requestSrc"].is_string()) << "verify shows requestSrc";
}

TEST_F(Transactions, VerifyOfAnIncomingCreditAnswersIt) {
  Scenario s = make_scenario();
  HttpResult res =
      http().get("/v1/transactions/" + s.incoming["reference"].get<std::string>() + "/verify", key());
  expect_success(res, 200, Message::kAbsent);
  EXPECT_EQ(res.json["data"]["publicId"], s.incoming["publicId"]);
}

TEST_F(Transactions, VerifyOfAnUnknownReferenceIs404) {
  for (const std::string& ref : {std::string("no-such-reference"), "trx-" + random_uuid()}) {
    SCOPED_TRACE(ref);
    expect_error(http().get("/v1/transactions/" + ref + "/verify", key()), 404,
                 "Transaction not found or does not exist");
  }
}

TEST_F(Transactions, FindListsNewestFirstWithDefaultPagination) {
  make_scenario();
  HttpResult res = http().get("/v1/transactions", key());
  expect_success(res, 200, Message::kAbsent, true);
  const json& p = res.json["meta"]["pagination"];
  EXPECT_EQ(p["perPage"], 10);
  EXPECT_EQ(p["current"], 1);
  EXPECT_GE(p["totalCount"].get<long long>(), 3);
  const json& data = res.json["data"];
  EXPECT_LE(data.size(), 10u);
  for (const json& t : data) expect_transaction(t);
  for (std::size_t i = 1; i < data.size(); ++i) {
    EXPECT_GE(data[i - 1]["createdAt"].get<std::string>(), data[i]["createdAt"].get<std::string>())
        << "newest first";
    EXPECT_GT(data[i - 1]["id"].get<long long>(), data[i]["id"].get<long long>()) << "newest first";
  }
}

TEST_F(Transactions, FindHoldsBothLegsOfATransferAndTheIncomingCredit) {
  Scenario s = make_scenario();
  std::vector<json> all = list_all(http(), key(), "/v1/transactions");
  EXPECT_EQ(static_cast<long long>(all.size()), total_count(http(), key(), "/v1/transactions"));
  int debit = 0, credit_leg = 0, incoming = 0;
  for (const json& t : all) {
    debit += t["publicId"] == s.debit["publicId"];
    credit_leg += t["linkRef"] == s.debit["linkRef"] && t["entry"] == "credit";
    incoming += t["publicId"] == s.incoming["publicId"];
  }
  EXPECT_EQ(debit, 1);
  EXPECT_EQ(credit_leg, 1);
  EXPECT_EQ(incoming, 1);
}

TEST_F(Transactions, PagesAreSlicesOfTheWholeList) {
  make_scenario();
  std::vector<json> all = list_all(http(), key(), "/v1/transactions");
  ASSERT_GE(all.size(), 3u);
  for (int page = 1; page <= 3; ++page) {
    HttpResult res = http().get("/v1/transactions?perPage=1&page=" + std::to_string(page), key());
    expect_success(res, 200, Message::kAbsent, true);
    EXPECT_EQ(res.json["meta"]["pagination"]["current"], page);
    EXPECT_EQ(res.json["meta"]["pagination"]["perPage"], 1);
    ASSERT_EQ(res.json["data"].size(), 1u);
    EXPECT_EQ(res.json["data"][0]["publicId"], all[static_cast<std::size_t>(page - 1)]["publicId"]);
  }
  HttpResult beyond = http().get("/v1/transactions?page=100000", key());
  expect_success(beyond, 200, Message::kAbsent, true);
  EXPECT_TRUE(beyond.json["data"].empty());
}

TEST_F(Transactions, FindFiltersByEntryStatusAmountAndLive) {
  Scenario s = make_scenario();
  const auto all = total_count(http(), key(), "/v1/transactions");
  for (const std::string entry : {"credit", "debit"}) {
    for (const json& t : list_all(http(), key(), "/v1/transactions", "entry=" + entry))
      EXPECT_EQ(t["entry"], entry);
  }
  EXPECT_EQ(total_count(http(), key(), "/v1/transactions", "entry=credit") +
                total_count(http(), key(), "/v1/transactions", "entry=debit"),
            all);
  // The suite's server is shared: an earlier test's payout may still be processing. Each status
  // lists only its own records, the three together list them all, and this scenario's are settled.
  long long by_status = 0;
  for (const std::string status : {"success", "processing", "failed"}) {
    for (const json& t : list_all(http(), key(), "/v1/transactions", "status=" + status)) {
      EXPECT_EQ(t["status"], status);
      if (status != "success") {
        EXPECT_NE(t["linkRef"], s.debit["linkRef"]);
      }
    }
    by_status += total_count(http(), key(), "/v1/transactions", "status=" + status);
  }
  EXPECT_EQ(by_status, all);

  // The transfer's amount is unique to this scenario: its debit and its credit leg.
  std::vector<json> by_amount =
      list_all(http(), key(), "/v1/transactions", "amount=" + std::to_string(s.amount));
  ASSERT_EQ(by_amount.size(), 2u);
  for (const json& t : by_amount) {
    EXPECT_EQ(t["amount"], s.amount);
    EXPECT_EQ(t["linkRef"], s.debit["linkRef"]);
  }
  EXPECT_EQ(
      total_count(http(), key(), "/v1/transactions", "amount=" + std::to_string(s.amount) + "&entry=debit"),
      1);
  EXPECT_EQ(total_count(http(), key(), "/v1/transactions", "live=false"), all);
  EXPECT_EQ(total_count(http(), key(), "/v1/transactions", "live=true"), 0);
}

TEST_F(Transactions, FindFiltersByCreatedAtDays) {
  make_scenario();
  const auto all = total_count(http(), key(), "/v1/transactions");
  const std::time_t now = std::time(nullptr);
  const std::string yesterday = utc_day(now - 86'400), today = utc_day(now), tomorrow = utc_day(now + 86'400);
  auto count = [&](const std::string& start, const std::string& end) {
    return total_count(http(), key(), "/v1/transactions",
                       "createdAt%5BstartDate%5D=" + start + "&createdAt%5BendDate%5D=" + end);
  };
  EXPECT_EQ(count(yesterday, tomorrow), all);
  // Inclusive days: a range of today alone holds everything made just now (unless the test
  // straddles midnight UTC, when yesterday..today does).
  EXPECT_EQ(count(today, today) + (utc_day(std::time(nullptr)) == today ? 0 : count(tomorrow, tomorrow)),
            all);
  EXPECT_EQ(count("2000-01-01", "2000-01-31"), 0);
  EXPECT_EQ(count(utc_day(now + 2 * 86'400), utc_day(now + 3 * 86'400)), 0);
}

// The API document writes the filter as createdAt[startDate]=…; clients such as curl -g send the
// brackets as they are, others percent-encode them (the test above). Both name the same filter.
TEST_F(Transactions, FindAcceptsTheCreatedAtFilterWithUnencodedBrackets) {
  make_scenario();
  const std::time_t now = std::time(nullptr);
  HttpResult res = http().get("/v1/transactions?createdAt[startDate]=" + utc_day(now - 86'400) +
                                  "&createdAt[endDate]=" + utc_day(now + 86'400),
                              key());
  expect_success(res, 200, Message::kAbsent, true);
  if (res.status != 200) return;
  EXPECT_EQ(res.json["meta"]["pagination"].value("totalCount", json()),
            json(total_count(http(), key(), "/v1/transactions")));
}

TEST_F(Transactions, FindRejectsBadFilterValuesWith400ValidationError) {
  const std::vector<std::string> queries = {
      "entry=bogus",
      "status=done",
      "status=SUCCESS",
      "perPage=101",
      "perPage=0",
      "page=0",
      "amount=abc",
      "live=maybe",
      "createdAt%5BstartDate%5D=yesterday&createdAt%5BendDate%5D=2026-01-01",
      "createdAt%5BstartDate%5D=2026-13-45&createdAt%5BendDate%5D=2026-01-01",
  };
  for (const auto& q : queries) {
    SCOPED_TRACE(q);
    expect_error(http().get("/v1/transactions?" + q, key()), 400, "Validation error");
  }
  HttpResult entry = http().get("/v1/transactions?entry=bogus", key());
  expect_constraint(entry, "entry", "isIn", "entry must be one of the following values: credit, debit");
  HttpResult status = http().get("/v1/transactions?status=done", key());
  expect_constraint(status, "status", "isIn",
                    "status must be one of the following values: pending, processing, success, failed");
}

TEST_F(Transactions, TheLiveKeyOfANonLiveAccountCannotList) {
  expect_error(http().get("/v1/transactions", server().live_key()), 403,
               "Live mode is not enabled for this account");
}

// Every combination of the list's filters answers, page by page, what filtering the whole list
// says, with the exact totalCount (projection/list_index.h: the filters are bitmaps ANDed): on a
// server of its own, with transfers of several amounts and payouts that succeed and fail.
class TransactionFilters : public ServerSuite {
 public:
  static void SetUpTestSuite() { start_server({"--rail-delay-ms", "20"}); }
};

TEST_F(TransactionFilters, EveryCombinationAgreesWithFilteringTheWholeList) {
  std::vector<json> wallets;
  for (int i = 0; i < 3; ++i) {
    wallets.push_back(create_wallet(http(), key()));
    fund(http(), key(), wallets.back(), 5'000'000);
  }
  const std::int64_t amounts[] = {10'000, 20'000, 30'000};
  int payouts = 0;
  for (int i = 0; i < 12; ++i) {
    const json& source = wallets[static_cast<std::size_t>(i % 3)];
    const json& destination = wallets[static_cast<std::size_t>((i + 1) % 3)];
    data_or_throw(http().post("/v1/transactions/transfer",
                              transfer_body(source["publicId"], destination["publicId"], amounts[i % 3],
                                            unique_name("combination")),
                              key()),
                  200, "transfer");
    if (i % 3 == 0) {
      json payout{{"source", source["publicId"]},
                  {"accountNumber", "0123456784"},
                  {"bankCode", "044"},
                  {"amount", amounts[(i / 3) % 3]},
                  {"currency", "NGN"},
                  {"narration", "combination payout"}};
      if (i % 2 == 0) payout["metadata"] = json{{"sandboxOutcome", "failed"}};
      data_or_throw(http().post("/v1/transactions/bank-transfer", payout, key()), 200, "bank transfer");
      ++payouts;
    }
  }
  // Fundings, two records a transfer, a payout each, and a reversal per failed payout: once every
  // payout has ended.
  const auto expected_records = static_cast<std::size_t>(3 + 2 * 12 + payouts + payouts / 2);
  ASSERT_TRUE(wait_until([&] {
    return total_count(http(), key(), "/v1/transactions", "status=processing") == 0 &&
           total_count(http(), key(), "/v1/transactions", "status=pending") == 0 &&
           list_all(http(), key(), "/v1/transactions").size() == expected_records;
  }));

  // The model: the whole list, newest first by (createdAt, id).
  const std::vector<json> all = list_all(http(), key(), "/v1/transactions");
  ASSERT_EQ(all.size(), expected_records);
  for (std::size_t i = 1; i < all.size(); ++i)
    EXPECT_GT(std::pair(all[i - 1]["createdAt"].get<std::string>(), all[i - 1]["id"].get<std::uint64_t>()),
              std::pair(all[i]["createdAt"].get<std::string>(), all[i]["id"].get<std::uint64_t>()))
        << "the list is newest first";
  const std::time_t now = std::time(nullptr);
  const std::string today = utc_day(now), yesterday = utc_day(now - 86'400), tomorrow = utc_day(now + 86'400);

  struct Part {
    std::string query;  // without the leading '&'
    std::function<bool(const json&)> keeps;
  };
  const auto any = [](const json&) { return true; };
  std::vector<Part> entries{{"", any}}, statuses{{"", any}}, amount_values{{"", any}}, lives{{"", any}},
      days{{"", any}};
  for (const std::string entry : {"credit", "debit"})
    entries.push_back({"entry=" + entry, [entry](const json& t) { return t["entry"] == entry; }});
  for (const std::string status : {"pending", "processing", "success", "failed"})
    statuses.push_back({"status=" + status, [status](const json& t) { return t["status"] == status; }});
  for (const std::int64_t amount : {amounts[0], amounts[1], std::int64_t{5'000'000}, std::int64_t{77}})
    amount_values.push_back(
        {"amount=" + std::to_string(amount), [amount](const json& t) { return t["amount"] == amount; }});
  lives.push_back({"live=false", any});
  lives.push_back({"live=true", [](const json&) { return false; }});
  // createdAt ranges of whole days (UTC): every record was made today (or, across midnight, yesterday).
  const auto made_on = [](const json& t, const std::string& from, const std::string& to) {
    const std::string day = t["createdAt"].get<std::string>().substr(0, 10);
    return day >= from && day <= to;
  };
  for (const auto& [from, to] :
       {std::pair{yesterday, tomorrow}, std::pair{today, today}, std::pair{tomorrow, tomorrow}})
    days.push_back({"createdAt%5BstartDate%5D=" + from + "&createdAt%5BendDate%5D=" + to,
                    [made_on, lo = from, hi = to](const json& t) { return made_on(t, lo, hi); }});
  days.push_back(
      {"createdAt%5BstartDate%5D=" + today, [=](const json& t) { return made_on(t, today, "9999"); }});
  days.push_back(
      {"createdAt%5BendDate%5D=" + yesterday, [=](const json& t) { return made_on(t, "0000", yesterday); }});

  int combinations = 0, nonempty = 0;
  for (const Part& entry : entries)
    for (const Part& status : statuses)
      for (const Part& amount : amount_values)
        for (const Part& live : lives)
          for (const Part& day : days) {
            std::string query;
            for (const Part* part : {&entry, &status, &amount, &live, &day})
              if (!part->query.empty()) query += (query.empty() ? "" : "&") + part->query;
            std::vector<std::string> expected;
            for (const json& t : all)
              if (entry.keeps(t) && status.keeps(t) && amount.keeps(t) && live.keeps(t) && day.keeps(t))
                expected.push_back(t["publicId"]);
            ++combinations;
            if (!expected.empty()) ++nonempty;
            // The first page of 4 and the whole list: the page and its count, then every record.
            HttpResult first = http().get("/v1/transactions?perPage=4&" + query, key());
            expect_success(first, 200, Message::kAbsent, true);
            ASSERT_EQ(first.json["meta"]["pagination"]["totalCount"], expected.size()) << query;
            std::vector<std::string> got;
            for (const json& t : list_all(http(), key(), "/v1/transactions", query))
              got.push_back(t["publicId"]);
            ASSERT_EQ(got, expected) << query;
            for (std::size_t i = 0; i < first.json["data"].size(); ++i)
              ASSERT_EQ(first.json["data"][i]["publicId"], expected.at(i)) << query;
          }
  EXPECT_EQ(combinations, 3 * 5 * 5 * 3 * 6);
  EXPECT_GE(nonempty, 60) << "most combinations match nothing: the test tests little";
}

}  // namespace
}  // namespace kobo::it
