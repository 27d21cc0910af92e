// KYC tiers and their limits (docs/architecture.md, "KYC tiers") through the real server: what a
// wallet record shows, what is refused, the rule under concurrency, and the day's counters through
// kill -9. The day rollover and the audit of the rules from the log alone are ledger_test's and
// audit_test's (they need the writer's clock and a forged log).

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/integration/harness.h"

namespace kobo::it {
namespace {

class Tiers : public ServerSuite {
 protected:
  static json tiered_wallet(std::optional<int> tier) {
    json body = wallet_body(unique_name("tier"));
    if (tier) body["kycTier"] = *tier;
    return data_or_throw(http().post("/v1/virtual-accounts", body, key()), 201, "create a tiered wallet");
  }
  static HttpResult set_tier(const std::string& wallet, const json& tier) {
    return http().patch("/v1/virtual-accounts/" + wallet, json{{"kycTier", tier}}, key());
  }
  static HttpResult transfer(const json& from, const json& to, std::int64_t amount) {
    return http().post("/v1/transactions/transfer",
                       transfer_body(from["publicId"], to["publicId"], amount, unique_name("t")), key());
  }
};

constexpr std::int64_t kNaira = 100;

TEST_F(Tiers, AWalletShowsItsTierAndItsLimitsForTheDay) {
  const json none = tiered_wallet(std::nullopt);
  EXPECT_TRUE(none["kycTier"].is_null());
  EXPECT_TRUE(none["limits"].is_null());

  const json one = tiered_wallet(1);
  EXPECT_EQ(one["kycTier"], 1);
  EXPECT_EQ(one["limits"],
            (json{{"dailyDebit", 50'000 * kNaira}, {"dailyDebitUsed", 0}, {"maxBalance", 300'000 * kNaira}}));
  // The answer is the record a GET shows.
  EXPECT_EQ(get_wallet(http(), key(), one["publicId"])["limits"], one["limits"]);

  fund(http(), key(), one, 20'000 * kNaira);
  ASSERT_EQ(transfer(one, none, 1'500 * kNaira).status, 200u);
  EXPECT_EQ(get_wallet(http(), key(), one["publicId"])["limits"]["dailyDebitUsed"], 1'500 * kNaira);

  // Tier 3 has no balance cap.
  const HttpResult three = set_tier(one["publicId"], 3);
  expect_success(three, 200, Message::kPresent);
  EXPECT_EQ(three.json["data"]["kycTier"], 3);
  EXPECT_EQ(three.json["data"]["limits"], (json{{"dailyDebit", 5'000'000 * kNaira},
                                                {"dailyDebitUsed", 1'500 * kNaira},
                                                {"maxBalance", nullptr}}));
  // Removing the tier removes the limits.
  const HttpResult removed = set_tier(one["publicId"], nullptr);
  expect_success(removed, 200, Message::kPresent);
  EXPECT_TRUE(removed.json["data"]["kycTier"].is_null());
  EXPECT_TRUE(removed.json["data"]["limits"].is_null());

  const json transit = data_or_throw(http().post("/v1/transit-accounts",
                                                 json{{"accountName", unique_name("transit")},
                                                      {"currency", "NGN"},
                                                      {"settlementAccount", none["publicId"]},
                                                      {"kycTier", 2}},
                                                 key()),
                                     201, "create a tiered transit wallet");
  EXPECT_EQ(transit["kycTier"], 2);
  EXPECT_EQ(transit["limits"]["maxBalance"], 500'000 * kNaira);
}

TEST_F(Tiers, BadTiersAreValidationErrorsAndChangeNothing) {
  const json w = tiered_wallet(1);
  for (const json& bad : {json(0), json(4), json("1"), json(1.5), json::array()})
    expect_validation(set_tier(w["publicId"], bad), {"kycTier"});
  expect_validation(
      http().patch("/v1/virtual-accounts/" + w["publicId"].get<std::string>(), json::object(), key()),
      {"kycTier"});
  json body = wallet_body(unique_name("tier"));
  body["kycTier"] = 7;
  expect_validation(http().post("/v1/virtual-accounts", body, key()), {"kycTier"});
  expect_error(set_tier("vba-" + random_uuid(), 2), 404, "Data not found");
  EXPECT_EQ(get_wallet(http(), key(), w["publicId"])["kycTier"], 1);
}

TEST_F(Tiers, DebitsBeyondTheDaysAllowanceAreRefused) {
  const json source = tiered_wallet(1);
  const json destination = tiered_wallet(std::nullopt);
  fund(http(), key(), source, 100'000 * kNaira);
  ASSERT_EQ(transfer(source, destination, 45'000 * kNaira).status, 200u);
  expect_error(transfer(source, destination, 5'001 * kNaira), 403, "Daily limit exceeded");
  ASSERT_EQ(transfer(source, destination, 5'000 * kNaira).status, 200u);
  expect_error(transfer(source, destination, 100 * kNaira), 403, "Daily limit exceeded");
  // Nothing moved on a refusal: 100,000 - 45,000 - 5,000.
  EXPECT_EQ(balance_of(http(), key(), source["publicId"]), 50'000 * kNaira);
  // A lower tier keeps the day's debits; a higher one allows more.
  ASSERT_EQ(set_tier(source["publicId"], 2).status, 200u);
  EXPECT_EQ(transfer(source, destination, 50'000 * kNaira).status, 200u);
}

TEST_F(Tiers, CreditsAboveTheBalanceCapAreRefusedAndALowerTierTakesNothing) {
  const json rich = tiered_wallet(std::nullopt);
  fund(http(), key(), rich, 1'000'000 * kNaira);
  const json capped = tiered_wallet(1);
  ASSERT_EQ(transfer(rich, capped, 300'000 * kNaira).status, 200u);  // exactly the cap
  expect_error(transfer(rich, capped, 100 * kNaira), 403, "Balance limit exceeded");
  expect_error(http().post("/v1/sandbox/incoming-transfers",
                           incoming_body(capped["accountNumber"], 1 * kNaira), key()),
               403, "Balance limit exceeded");
  EXPECT_EQ(balance_of(http(), key(), capped["publicId"]), 300'000 * kNaira);

  // Tier 3 lifts the cap; back to tier 1, the wallet keeps what it holds above it.
  ASSERT_EQ(set_tier(capped["publicId"], 3).status, 200u);
  ASSERT_EQ(transfer(rich, capped, 100'000 * kNaira).status, 200u);
  ASSERT_EQ(set_tier(capped["publicId"], 1).status, 200u);
  EXPECT_EQ(balance_of(http(), key(), capped["publicId"]), 400'000 * kNaira);
  expect_error(transfer(rich, capped, 100 * kNaira), 403, "Balance limit exceeded");
  EXPECT_EQ(transfer(capped, rich, 10'000 * kNaira).status, 200u);  // it may still spend
}

// The allowance holds: 50 concurrent N2,000 transfers from a tier-1 wallet holding N100,000:
// exactly 25 succeed (N50,000 a day), whatever the interleaving.
TEST_F(Tiers, ConcurrentDebitsNeverPassTheDailyAllowance) {
  const json source = tiered_wallet(1);
  const json destination = tiered_wallet(std::nullopt);
  fund(http(), key(), source, 100'000 * kNaira);
  constexpr int kRequests = 50;
  std::atomic<int> next{0}, accepted{0}, limited{0}, other{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 10; ++t)
    pool.emplace_back([&] {
      auto client = server().new_client();
      for (int i = next.fetch_add(1); i < kRequests; i = next.fetch_add(1)) {
        const HttpResult r = client->post(
            "/v1/transactions/transfer",
            transfer_body(source["publicId"], destination["publicId"], 2'000 * kNaira, unique_name("c")),
            key());
        if (r.status == 200)
          ++accepted;
        else if (r.status == 403 && r.json["meta"]["error"]["message"] == "Daily limit exceeded")
          ++limited;
        else
          ++other;
      }
    });
  for (auto& t : pool) t.join();
  EXPECT_EQ(accepted.load(), 25);
  EXPECT_EQ(limited.load(), 25);
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(balance_of(http(), key(), source["publicId"]), 50'000 * kNaira);
  EXPECT_EQ(get_wallet(http(), key(), source["publicId"])["limits"]["dailyDebitUsed"], 50'000 * kNaira);
}

// The day's counters and the tiers are in the log: a kill -9 and a restart keep them.
TEST_F(Tiers, TiersAndTheDaysDebitsSurviveKill9) {
  const json source = tiered_wallet(1);
  const json destination = tiered_wallet(2);
  fund(http(), key(), source, 100'000 * kNaira);
  ASSERT_EQ(transfer(source, destination, 40'000 * kNaira).status, 200u);
  ASSERT_EQ(set_tier(destination["publicId"], 1).status, 200u);

  server().kill9();
  server().start();

  const json after = get_wallet(http(), key(), source["publicId"]);
  EXPECT_EQ(after["limits"]["dailyDebitUsed"], 40'000 * kNaira);
  EXPECT_EQ(get_wallet(http(), key(), destination["publicId"])["kycTier"], 1);
  expect_error(transfer(source, destination, 10'001 * kNaira), 403, "Daily limit exceeded");
  EXPECT_EQ(transfer(source, destination, 10'000 * kNaira).status, 200u);
}

// A hold counts toward its source's day when it is placed (its captures do not count again), and a
// capture is a credit its destination's cap refuses (docs/architecture.md, "KYC tiers").
TEST_F(Tiers, AHoldCountsTowardTheDayAndACaptureRespectsTheCap) {
  const json source = tiered_wallet(1);
  const json destination = tiered_wallet(std::nullopt);
  fund(http(), key(), source, 100'000 * kNaira);
  const HttpResult placed = http().post(
      "/v1/holds",
      json{{"source", source["publicId"]}, {"amount", 45'000 * kNaira}, {"reference", unique_name("h")}},
      key());
  ASSERT_EQ(placed.status, 201u) << placed.body;
  EXPECT_EQ(get_wallet(http(), key(), source["publicId"])["limits"]["dailyDebitUsed"], 45'000 * kNaira);
  expect_error(transfer(source, destination, 5'001 * kNaira), 403, "Daily limit exceeded");
  expect_error(
      http().post(
          "/v1/holds",
          json{{"source", source["publicId"]}, {"amount", 5'001 * kNaira}, {"reference", unique_name("h")}},
          key()),
      403, "Daily limit exceeded");
  // Capturing the hold counts nothing again: the day's N5,000 left is still there after it.
  const std::string hold = placed.json["data"]["publicId"];
  const HttpResult captured = http().post("/v1/holds/" + hold + "/capture",
                                          json{{"destination", destination["publicId"]},
                                               {"reference", unique_name("cap")},
                                               {"amount", 10'000 * kNaira}},
                                          key());
  ASSERT_EQ(captured.status, 201u) << captured.body;
  EXPECT_EQ(transfer(source, destination, 5'000 * kNaira).status, 200u);

  // A capture into a tier-1 wallet at its cap is refused, and moves nothing.
  const json rich = tiered_wallet(std::nullopt);
  fund(http(), key(), rich, 1'000'000 * kNaira);
  const json capped = tiered_wallet(1);
  ASSERT_EQ(transfer(rich, capped, 300'000 * kNaira).status, 200u);
  const HttpResult big = http().post(
      "/v1/holds",
      json{{"source", rich["publicId"]}, {"amount", 1'000 * kNaira}, {"reference", unique_name("h")}}, key());
  ASSERT_EQ(big.status, 201u) << big.body;
  const std::string big_hold = big.json["data"]["publicId"];
  expect_error(
      http().post("/v1/holds/" + big_hold + "/capture",
                  json{{"destination", capped["publicId"]}, {"reference", unique_name("cap")}}, key()),
      403, "Balance limit exceeded");
  EXPECT_EQ(balance_of(http(), key(), capped["publicId"]), 300'000 * kNaira);
}

}  // namespace
}  // namespace kobo::it
