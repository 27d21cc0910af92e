// Holds (two-phase transfers, extensions section 2) over HTTP against the real server: placing,
// capturing in parts, voiding and expiring a hold; its errors and idempotency; the wallet's
// availableBalance and heldBalance; the must-holds under concurrency (20 concurrent captures of
// a tenth each: exactly 10 succeed; availableBalance never below zero under concurrent holds
// and transfers); void and expiry move no money; and holds survive kill -9, including an expiry
// that comes due while the server is down. Like every integration suite it runs on the embedded
// log and again on a real Kafka broker (ctest -L kafka).

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "tests/integration/harness.h"

namespace kobo::it {
namespace {

json hold_body(const std::string& source, std::int64_t amount, const std::string& reference,
               std::optional<std::int64_t> expires_in = std::nullopt) {
  json b{{"source", source}, {"amount", amount}, {"reference", reference}, {"narration", "order 42"}};
  if (expires_in) b["expiresIn"] = *expires_in;
  return b;
}

json capture_body(const std::string& destination, const std::string& reference,
                  std::optional<std::int64_t> amount = std::nullopt, bool final = false) {
  json b{{"destination", destination}, {"reference", reference}};
  if (amount) b["amount"] = *amount;
  if (final) b["final"] = true;
  return b;
}

json place(HttpClient& http, const std::string& key, const json& body) {
  return data_or_throw(http.post("/v1/holds", body, key), 201, "place a hold");
}

json get_hold(HttpClient& http, const std::string& key, const std::string& id) {
  return data_or_throw(http.get("/v1/holds/" + id, key), 200, "get a hold");
}

std::string id_of(const json& record) { return record["publicId"].get<std::string>(); }

// Every member of the hold record of extensions section 2, with its type.
void expect_hold(const json& h) {
  ASSERT_TRUE(h.is_object()) << h.dump();
  EXPECT_TRUE(h["publicId"].get<std::string>().starts_with("hld-")) << h.dump();
  EXPECT_TRUE(h["source"].get<std::string>().starts_with("vba-"));
  for (const char* k : {"amount", "capturedAmount", "remaining"}) EXPECT_TRUE(h[k].is_number_integer()) << k;
  for (const char* k : {"status", "reference"}) EXPECT_TRUE(h[k].is_string()) << k;
  EXPECT_TRUE(h["narration"].is_string() || h["narration"].is_null());
  EXPECT_TRUE(h["metadata"].is_object());
  EXPECT_TRUE(h["captures"].is_array());
  EXPECT_TRUE(h["live"].is_boolean());
  for (const char* k : {"expiresAt", "createdAt", "updatedAt"}) expect_timestamp(h[k], k);
  if (h["status"] == "pending")
    EXPECT_EQ(h["remaining"], h["amount"].get<std::int64_t>() - h["capturedAmount"].get<std::int64_t>());
  else
    EXPECT_EQ(h["remaining"], 0);
}

void expect_balances(HttpClient& http, const std::string& key, const std::string& wallet,
                     std::int64_t balance, std::int64_t held) {
  const json w = get_wallet(http, key, wallet);
  EXPECT_EQ(w["balance"], balance) << wallet;
  EXPECT_EQ(w["heldBalance"], held) << wallet;
  EXPECT_EQ(w["availableBalance"], balance - held) << wallet;
}

class Holds : public ServerSuite {};

TEST_F(Holds, PlaceCaptureInPartsAndEnd) {
  const json src = create_wallet(http(), key());
  const json dst = create_wallet(http(), key());
  fund(http(), key(), src, 100'000);

  const auto placed =
      http().post("/v1/holds", hold_body(src["publicId"], 60'000, unique_name("hold")), key());
  expect_success(placed, 201, Message::kPresent);
  const json h = placed.json["data"];
  expect_hold(h);
  EXPECT_EQ(h["status"], "pending");
  EXPECT_EQ(h["amount"], 60'000);
  EXPECT_EQ(h["remaining"], 60'000);
  EXPECT_EQ(h["narration"], "order 42");
  EXPECT_EQ(h["live"], false);
  EXPECT_EQ(h, get_hold(http(), key(), id_of(h))) << "the answer and a GET agree";
  expect_balances(http(), key(), src["publicId"], 100'000, 60'000);

  // A transfer may spend what is available, not what is held.
  expect_error(http().post("/v1/transactions/transfer",
                           transfer_body(src["publicId"], dst["publicId"], 50'000, unique_name("t")), key()),
               403, "Insufficient fund");
  expect_error(http().post("/v1/holds", hold_body(src["publicId"], 40'001, unique_name("hold")), key()), 403,
               "Insufficient fund");

  const std::string first_ref = unique_name("cap");
  const auto captured = http().post("/v1/holds/" + id_of(h) + "/capture",
                                    capture_body(dst["publicId"], first_ref, 25'000), key());
  expect_success(captured, 201, Message::kPresent);
  const json after = captured.json["data"];
  expect_hold(after);
  EXPECT_EQ(after["status"], "pending");
  EXPECT_EQ(after["capturedAmount"], 25'000);
  EXPECT_EQ(after["remaining"], 35'000);
  ASSERT_EQ(after["captures"].size(), 1u);
  EXPECT_EQ(after["captures"][0]["reference"], first_ref);
  EXPECT_EQ(after["captures"][0]["destination"], dst["publicId"]);
  EXPECT_EQ(after["captures"][0]["amount"], 25'000);
  expect_balances(http(), key(), src["publicId"], 75'000, 35'000);
  expect_balances(http(), key(), dst["publicId"], 25'000, 0);

  // The capture is a wallet transfer: debit and credit records with meta.hold, verified by reference.
  const json debit = data_or_throw(
      http().get("/v1/transactions/" + after["captures"][0]["transaction"].get<std::string>(), key()), 200,
      "capture debit");
  expect_transaction(debit);
  EXPECT_EQ(debit["entry"], "debit");
  EXPECT_EQ(debit["amount"], 25'000);
  EXPECT_EQ(debit["meta"]["hold"], id_of(h));
  const json verified = data_or_throw(http().get("/v1/transactions/" + first_ref + "/verify", key()), 200,
                                      "verify the capture");
  EXPECT_EQ(verified["publicId"], debit["publicId"]);
  const auto credits = list_all(http(), key(), "/v1/transactions", "entry=credit");
  const auto credit = std::find_if(credits.begin(), credits.end(),
                                   [&](const json& t) { return t["debitReference"] == first_ref; });
  ASSERT_NE(credit, credits.end());
  EXPECT_EQ((*credit)["meta"]["hold"], id_of(h));
  EXPECT_EQ((*credit)["destination"], dst["publicId"]);

  // The rest, by default: nothing remains, so the hold is captured.
  const json rest = data_or_throw(http().post("/v1/holds/" + id_of(h) + "/capture",
                                              capture_body(dst["publicId"], unique_name("cap")), key()),
                                  201, "capture the rest");
  EXPECT_EQ(rest["status"], "captured");
  EXPECT_EQ(rest["capturedAmount"], 60'000);
  EXPECT_EQ(rest["remaining"], 0);
  EXPECT_EQ(rest["captures"].size(), 2u);
  expect_balances(http(), key(), src["publicId"], 40'000, 0);
  expect_balances(http(), key(), dst["publicId"], 60'000, 0);
  expect_error(http().post("/v1/holds/" + id_of(h) + "/capture",
                           capture_body(dst["publicId"], unique_name("cap"), 1), key()),
               409, "Hold is not pending");
  expect_error(http().post("/v1/holds/" + id_of(h) + "/void", json::object(), key()), 409,
               "Hold is not pending");
}

TEST_F(Holds, AFinalCaptureReleasesTheRest) {
  const json src = create_wallet(http(), key());
  const json dst = create_wallet(http(), key());
  fund(http(), key(), src, 50'000);
  const json h = place(http(), key(), hold_body(src["publicId"], 30'000, unique_name("hold")));
  const json done =
      data_or_throw(http().post("/v1/holds/" + id_of(h) + "/capture",
                                capture_body(dst["publicId"], unique_name("cap"), 10'000, true), key()),
                    201, "final capture");
  EXPECT_EQ(done["status"], "captured");
  EXPECT_EQ(done["capturedAmount"], 10'000);
  EXPECT_EQ(done["remaining"], 0);
  expect_balances(http(), key(), src["publicId"], 40'000, 0);
  expect_balances(http(), key(), dst["publicId"], 10'000, 0);
}

TEST_F(Holds, VoidAndExpiryReleaseTheHoldAndMoveNoMoney) {
  const json src = create_wallet(http(), key());
  fund(http(), key(), src, 80'000);
  const std::int64_t transactions_before = total_count(http(), key(), "/v1/transactions");
  const json voided_hold = place(http(), key(), hold_body(src["publicId"], 30'000, unique_name("hold")));
  const json expiring = place(http(), key(), hold_body(src["publicId"], 20'000, unique_name("hold"), 1));
  expect_balances(http(), key(), src["publicId"], 80'000, 50'000);

  const auto voided = http().post("/v1/holds/" + id_of(voided_hold) + "/void", json::object(), key());
  expect_success(voided, 200, Message::kPresent);
  expect_hold(voided.json["data"]);
  EXPECT_EQ(voided.json["data"]["status"], "voided");
  EXPECT_EQ(voided.json["data"]["capturedAmount"], 0);

  ASSERT_TRUE(wait_until([&] { return get_hold(http(), key(), id_of(expiring))["status"] == "expired"; }))
      << "the writer expires a hold at its expiresAt";
  expect_hold(get_hold(http(), key(), id_of(expiring)));
  expect_balances(http(), key(), src["publicId"], 80'000, 0);
  EXPECT_EQ(total_count(http(), key(), "/v1/transactions"), transactions_before) << "no transaction was made";
  expect_error(http().post("/v1/holds/" + id_of(expiring) + "/void", json::object(), key()), 409,
               "Hold is not pending");
}

// A hold changes its source's availableBalance, so the wallet's updatedAt is the hold's latest
// change: its placement, then its void or its expiry.
TEST_F(Holds, AWalletsUpdatedAtFollowsItsHolds) {
  const json src = create_wallet(http(), key());
  fund(http(), key(), src, 80'000);
  const auto updated_at = [&] { return get_wallet(http(), key(), src["publicId"])["updatedAt"]; };
  const auto later = [] { std::this_thread::sleep_for(std::chrono::milliseconds(5)); };

  later();
  const json voided_hold = place(http(), key(), hold_body(src["publicId"], 30'000, unique_name("hold")));
  EXPECT_EQ(updated_at(), voided_hold["createdAt"]);
  later();
  const json voided = data_or_throw(
      http().post("/v1/holds/" + id_of(voided_hold) + "/void", json::object(), key()), 200, "void");
  EXPECT_EQ(updated_at(), voided["updatedAt"]);
  later();
  const json expiring = place(http(), key(), hold_body(src["publicId"], 20'000, unique_name("hold"), 1));
  EXPECT_EQ(updated_at(), expiring["createdAt"]);
  json expired;
  ASSERT_TRUE(wait_until([&] {
    expired = get_hold(http(), key(), id_of(expiring));
    return expired["status"] == "expired";
  }));
  EXPECT_EQ(updated_at(), expired["updatedAt"]);
  EXPECT_NE(expired["updatedAt"], expiring["createdAt"]);
}

TEST_F(Holds, ErrorsAreTheSpecs) {
  const json src = create_wallet(http(), key());
  const json dst = create_wallet(http(), key());
  fund(http(), key(), src, 10'000);
  const std::string missing = "vba-" + random_uuid();
  expect_error(http().post("/v1/holds", hold_body(missing, 100, unique_name("h")), key()), 404,
               "Source not found");
  expect_error(http().post("/v1/holds", hold_body(src["publicId"], 10'001, unique_name("h")), key()), 403,
               "Insufficient fund");
  expect_constraint(http().post("/v1/holds", hold_body(src["publicId"], 0, unique_name("h")), key()),
                    "amount", "min", "amount must not be less than 1");
  expect_constraint(http().post("/v1/holds", hold_body(src["publicId"], 1, unique_name("h"), 0), key()),
                    "expiresIn", "min", "expiresIn must not be less than 1");
  expect_constraint(
      http().post("/v1/holds", hold_body(src["publicId"], 1, unique_name("h"), 2'592'001), key()),
      "expiresIn", "max", "expiresIn must not be greater than 2592000");
  expect_validation(http().post("/v1/holds", hold_body(src["publicId"], 1, std::string(101, 'r')), key()),
                    {"reference"});
  expect_validation(http().post("/v1/holds", json::object(), key()), {"source", "amount", "reference"});

  const json h = place(http(), key(), hold_body(src["publicId"], 1, unique_name("h")));  // 1 kobo is a hold
  expect_error(
      http().post("/v1/holds/" + id_of(h) + "/capture", capture_body(missing, unique_name("c")), key()), 404,
      "Destination not found");
  expect_error(http().post("/v1/holds/" + id_of(h) + "/capture",
                           capture_body(dst["publicId"], unique_name("c"), 2), key()),
               400, "Amount exceeds hold");
  expect_validation(http().post("/v1/holds/" + id_of(h) + "/capture", json{{"amount", 0}}, key()),
                    {"destination", "reference", "amount"});
  const std::string unknown = "/v1/holds/hld-" + random_uuid();
  expect_error(http().post(unknown + "/capture", capture_body(dst["publicId"], unique_name("c")), key()), 404,
               "Data not found");
  expect_error(http().post(unknown + "/void", json::object(), key()), 404, "Data not found");
  expect_error(http().get(unknown, key()), 404, "Data not found");
  expect_constraint(http().get("/v1/holds?status=done", key()), "status", "isIn",
                    "status must be one of the following values: pending, captured, voided, expired");
  // Nothing of the rejected requests moved or held anything.
  expect_balances(http(), key(), src["publicId"], 10'000, 1);
  expect_balances(http(), key(), dst["publicId"], 0, 0);
}

TEST_F(Holds, ReferencesAreIdempotent) {
  const json src = create_wallet(http(), key());
  const json dst = create_wallet(http(), key());
  fund(http(), key(), src, 50'000);
  const std::string ref = unique_name("hold");
  const json h = place(http(), key(), hold_body(src["publicId"], 20'000, ref));
  const auto again = http().post("/v1/holds", hold_body(src["publicId"], 20'000, ref), key());
  expect_success(again, 200, Message::kPresent);
  EXPECT_EQ(again.header("idempotent-replayed"), "true");
  EXPECT_EQ(again.json["data"]["publicId"], h["publicId"]);
  expect_error(http().post("/v1/holds", hold_body(src["publicId"], 20'001, ref), key()), 409,
               "Duplicate reference");
  expect_balances(http(), key(), src["publicId"], 50'000, 20'000);

  // A capture's reference is a transfer reference.
  const std::string cap = unique_name("cap");
  data_or_throw(
      http().post("/v1/holds/" + id_of(h) + "/capture", capture_body(dst["publicId"], cap, 5'000), key()),
      201, "capture");
  const auto repeat =
      http().post("/v1/holds/" + id_of(h) + "/capture", capture_body(dst["publicId"], cap, 5'000), key());
  expect_success(repeat, 200, Message::kPresent);
  EXPECT_EQ(repeat.header("idempotent-replayed"), "true");
  EXPECT_EQ(repeat.json["data"]["capturedAmount"], 5'000);
  expect_error(
      http().post("/v1/holds/" + id_of(h) + "/capture", capture_body(dst["publicId"], cap, 6'000), key()),
      409, "Duplicate reference");
  expect_error(http().post("/v1/transactions/transfer",
                           transfer_body(src["publicId"], dst["publicId"], 10'000, cap), key()),
               409, "Duplicate reference");
  expect_balances(http(), key(), src["publicId"], 45'000, 15'000);
  expect_balances(http(), key(), dst["publicId"], 5'000, 0);
}

TEST_F(Holds, ListsNewestFirstByFilter) {
  const json src = create_wallet(http(), key());
  const json other = create_wallet(http(), key());
  fund(http(), key(), src, 10'000);
  fund(http(), key(), other, 10'000);
  const json a = place(http(), key(), hold_body(src["publicId"], 100, unique_name("h")));
  const json b = place(http(), key(), hold_body(src["publicId"], 200, unique_name("h")));
  const json c = place(http(), key(), hold_body(other["publicId"], 300, unique_name("h")));
  data_or_throw(http().post("/v1/holds/" + id_of(a) + "/void", json::object(), key()), 200, "void");

  const auto mine = http().get("/v1/holds?source=" + src["publicId"].get<std::string>(), key());
  expect_success(mine, 200, Message::kAbsent, /*paginated=*/true);
  ASSERT_EQ(mine.json["data"].size(), 2u);
  EXPECT_EQ(mine.json["data"][0]["publicId"], b["publicId"]) << "newest first";
  EXPECT_EQ(mine.json["data"][1]["publicId"], a["publicId"]);
  EXPECT_EQ(mine.json["meta"]["pagination"]["totalCount"], 2);
  const auto pending =
      list_all(http(), key(), "/v1/holds", "status=pending&source=" + src["publicId"].get<std::string>());
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0]["publicId"], b["publicId"]);
  const auto voided =
      list_all(http(), key(), "/v1/holds", "status=voided&source=" + src["publicId"].get<std::string>());
  ASSERT_EQ(voided.size(), 1u);
  EXPECT_EQ(voided[0]["publicId"], a["publicId"]);
  const auto page =
      http().get("/v1/holds?perPage=1&page=2&source=" + src["publicId"].get<std::string>(), key());
  ASSERT_EQ(page.json["data"].size(), 1u);
  EXPECT_EQ(page.json["data"][0]["publicId"], a["publicId"]);
  bool found_c = false;
  for (const json& x : list_all(http(), key(), "/v1/holds", "status=pending"))
    found_c |= x["publicId"] == c["publicId"];
  EXPECT_TRUE(found_c);
}

// Must hold: the captures of a hold never sum above its amount, under any concurrency.
TEST_F(Holds, TwentyConcurrentCapturesOfATenthEachExactlyTenSucceed) {
  const json src = create_wallet(http(), key());
  const json dst = create_wallet(http(), key());
  fund(http(), key(), src, 1'000'000);
  const json h = place(http(), key(), hold_body(src["publicId"], 100'000, unique_name("hold")));
  const std::string run = unique_name("cap");
  constexpr int kCaptures = 20;
  std::vector<unsigned> status(kCaptures, 0);
  std::vector<std::string> message(kCaptures);
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int i = 0; i < kCaptures; ++i) {
    pool.emplace_back([&, i] {
      auto client = server().new_client();
      while (!go.load()) std::this_thread::yield();
      try {
        const auto res =
            client->post("/v1/holds/" + id_of(h) + "/capture",
                         capture_body(dst["publicId"], run + "-" + std::to_string(i), 10'000), key());
        status[static_cast<std::size_t>(i)] = res.status;
        if (res.json.is_object() && res.json["meta"].contains("error"))
          message[static_cast<std::size_t>(i)] = res.json["meta"]["error"].value("message", "");
      } catch (const std::exception& e) {
        message[static_cast<std::size_t>(i)] = e.what();  // status 0: no answer
      }
    });
  }
  go.store(true);
  for (auto& t : pool) t.join();
  int succeeded = 0;
  for (int i = 0; i < kCaptures; ++i) {
    if (status[static_cast<std::size_t>(i)] == 201) {
      ++succeeded;
    } else {
      EXPECT_EQ(status[static_cast<std::size_t>(i)], 409u) << message[static_cast<std::size_t>(i)];
      EXPECT_EQ(message[static_cast<std::size_t>(i)], "Hold is not pending");
    }
  }
  EXPECT_EQ(succeeded, 10);
  const json after = get_hold(http(), key(), id_of(h));
  EXPECT_EQ(after["status"], "captured");
  EXPECT_EQ(after["capturedAmount"], 100'000);
  EXPECT_EQ(after["captures"].size(), 10u);
  expect_balances(http(), key(), src["publicId"], 900'000, 0);
  expect_balances(http(), key(), dst["publicId"], 100'000, 0);
}

// Must hold: availableBalance >= 0 always, with holds and transfers racing for one wallet.
TEST_F(Holds, AvailableBalanceNeverGoesBelowZeroUnderConcurrentHoldsAndTransfers) {
  const std::uint64_t seed =
      test_seed("Holds.AvailableBalanceNeverGoesBelowZeroUnderConcurrentHoldsAndTransfers");
  std::mt19937_64 rng(seed);
  const json src = create_wallet(http(), key());
  const json dst = create_wallet(http(), key());
  const std::int64_t funded = 500'000 + static_cast<std::int64_t>(rng() % 100'000);
  fund(http(), key(), src, funded);
  constexpr int kRequests = 80;
  std::vector<std::int64_t> amounts(kRequests);
  for (auto& a : amounts) a = 10'000 + static_cast<std::int64_t>(rng() % 30'000);
  std::vector<unsigned> status(kRequests, 0);
  const std::string run = unique_name("race");
  std::atomic<int> next{0};
  std::atomic<bool> go{false}, done{false};
  std::atomic<std::int64_t> lowest{funded};
  std::vector<std::thread> pool;
  for (int t = 0; t < 6; ++t) {
    pool.emplace_back([&] {
      auto client = server().new_client();
      while (!go.load()) std::this_thread::yield();
      for (int i = next.fetch_add(1); i < kRequests; i = next.fetch_add(1)) {
        const auto k = static_cast<std::size_t>(i);
        const std::string ref = run + "-" + std::to_string(i);
        try {
          const auto res =
              i % 2 == 0
                  ? client->post("/v1/holds", hold_body(src["publicId"], amounts[k], ref), key())
                  : client->post("/v1/transactions/transfer",
                                 transfer_body(src["publicId"], dst["publicId"], amounts[k], ref), key());
          status[k] = res.status;
        } catch (const std::exception&) {
          status[k] = 0;  // no answer: reported below
        }
      }
    });
  }
  std::thread watcher([&] {
    auto client = server().new_client();
    while (!done.load()) {
      HttpResult res;
      try {
        res = client->get("/v1/virtual-accounts/" + src["publicId"].get<std::string>(), key());
      } catch (const std::exception&) {
        return;
      }
      if (res.status == 200) {
        const std::int64_t available = res.json["data"]["availableBalance"];
        std::int64_t seen = lowest.load();
        while (available < seen && !lowest.compare_exchange_weak(seen, available)) {
        }
      }
    }
  });
  go.store(true);
  for (auto& t : pool) t.join();
  done.store(true);
  watcher.join();

  std::int64_t held = 0, moved = 0;
  int refused = 0;
  for (int i = 0; i < kRequests; ++i) {
    const auto k = static_cast<std::size_t>(i);
    if (status[k] == 201 || status[k] == 200) {
      (i % 2 == 0 ? held : moved) += amounts[k];
    } else {
      EXPECT_EQ(status[k], 403u) << "request " << i;
      ++refused;
    }
  }
  EXPECT_GT(refused, 0) << "the wallet was meant to run short";
  EXPECT_GE(lowest.load(), 0) << "availableBalance went below zero";
  expect_balances(http(), key(), src["publicId"], funded - moved, held);
  EXPECT_GE(funded - moved - held, 0);
  EXPECT_EQ(balance_of(http(), key(), dst["publicId"]), moved);
}

// Holds survive kill -9: pending and ended holds, what they hold, their idempotency, and an
// expiry that came due while the server was down, decided on time once it is back.
TEST_F(Holds, SurviveKill9AndExpireWhatCameDueWhileDown) {
  const json src = create_wallet(http(), key());
  const json dst = create_wallet(http(), key());
  fund(http(), key(), src, 200'000);
  const std::string ref = unique_name("hold");
  const json pending = place(http(), key(), hold_body(src["publicId"], 50'000, ref));
  const json voided = place(http(), key(), hold_body(src["publicId"], 10'000, unique_name("hold")));
  const json due = place(http(), key(), hold_body(src["publicId"], 30'000, unique_name("hold"), 2));
  const std::string cap = unique_name("cap");
  data_or_throw(http().post("/v1/holds/" + id_of(pending) + "/capture",
                            capture_body(dst["publicId"], cap, 20'000), key()),
                201, "capture");
  data_or_throw(http().post("/v1/holds/" + id_of(voided) + "/void", json::object(), key()), 200, "void");
  expect_balances(http(), key(), src["publicId"], 180'000, 60'000);

  server().kill9();
  std::this_thread::sleep_for(std::chrono::milliseconds(2'500));  // `due` expires while the server is down
  server().start();

  ASSERT_TRUE(wait_until([&] { return get_hold(http(), key(), id_of(due))["status"] == "expired"; }))
      << "the expiry that came due while the server was down is decided after the restart";
  expect_balances(http(), key(), src["publicId"], 180'000, 30'000);
  expect_balances(http(), key(), dst["publicId"], 20'000, 0);
  const json p = get_hold(http(), key(), id_of(pending));
  EXPECT_EQ(p["status"], "pending");
  EXPECT_EQ(p["capturedAmount"], 20'000);
  EXPECT_EQ(get_hold(http(), key(), id_of(voided))["status"], "voided");
  // The writer's hot state is back: what is held, the references, the ended holds.
  expect_error(http().post("/v1/holds", hold_body(src["publicId"], 150'001, unique_name("h")), key()), 403,
               "Insufficient fund");
  const auto replay = http().post("/v1/holds", hold_body(src["publicId"], 50'000, ref), key());
  EXPECT_EQ(replay.status, 200u);
  EXPECT_EQ(replay.header("idempotent-replayed"), "true");
  const auto cap_replay = http().post("/v1/holds/" + id_of(pending) + "/capture",
                                      capture_body(dst["publicId"], cap, 20'000), key());
  EXPECT_EQ(cap_replay.status, 200u);
  expect_error(http().post("/v1/holds/" + id_of(voided) + "/void", json::object(), key()), 409,
               "Hold is not pending");
  expect_error(http().post("/v1/holds/" + id_of(pending) + "/capture",
                           capture_body(dst["publicId"], unique_name("cap"), 30'001), key()),
               400, "Amount exceeds hold");
  const json rest = data_or_throw(http().post("/v1/holds/" + id_of(pending) + "/capture",
                                              capture_body(dst["publicId"], unique_name("cap")), key()),
                                  201, "capture the rest");
  EXPECT_EQ(rest["status"], "captured");
  expect_balances(http(), key(), src["publicId"], 150'000, 0);
  expect_balances(http(), key(), dst["publicId"], 50'000, 0);
}

}  // namespace
}  // namespace kobo::it
