// Webhooks (docs/webhooks.md): signed deliveries to a receiver in this process,
// retries with a stable event id, delivery across a kill -9, a hung receiver that delays no
// other, the private-address guard, and GET /v1/webhook-deliveries + POST .../retry.
//
// Every delivery these tests check also verifies as Standard Webhooks: each test's
// business is issued a webhook secret first, and at the end of each test every delivery checked
// is handed to tests/webhooks/verify_deliveries.py, which verifies it with the `standardwebhooks`
// package from PyPI, not with our code. (tests/webhooks/run_standard_webhooks.py covers what
// only a receiver's view shows: rotation, subscriptions, sequences and catching up.)
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "common/crypto.h"
#include "tests/integration/harness.h"
#include "tests/support/webhook_receiver.h"

namespace kobo::it {
namespace {

using kobo::testing::ReceivedRequest;
using kobo::testing::WebhookReceiver;
using namespace std::chrono_literals;

using kobo::testing::kTestAdminKey;

struct Business {
  std::string key;
  std::string account;
  std::string webhook_secret;  // whsec_…
};

// The account's webhook secret of test mode, issued (POST /v1/accounts/{id}/webhook-secret).
std::string issue_webhook_secret(HttpClient& http, const std::string& key, const std::string& account) {
  const json d = data_or_throw(http.post("/v1/accounts/" + account + "/webhook-secret", json::object(), key),
                               201, "issue webhook secret");
  EXPECT_EQ(d["account"], account);
  EXPECT_TRUE(d["previousSecretExpiresAt"].is_null()) << "the first secret replaces none";
  return d["secret"];
}

Business new_business(HttpClient& http) {
  const auto res =
      http.request(boost::beast::http::verb::post, "/v1/admin/businesses",
                   json{{"name", unique_name("hooks")}}.dump(), {{"x-admin-key", kTestAdminKey}});
  const json d = data_or_throw(res, 201, "create business");
  Business b{d["credentials"]["testSecretKey"], d["credentials"]["accountId"], ""};
  b.webhook_secret = issue_webhook_secret(http, b.key, b.account);
  return b;
}

// The deliveries expect_signed() saw, with the secret each must verify with: handed to the
// Standard Webhooks library at the end of each test (verify_with_standard_webhooks).
std::vector<json>& deliveries_to_verify() {
  static std::vector<json> all;
  return all;
}

// Every delivery seen since the last call verifies with `standardwebhooks` (PyPI), run in the
// virtualenv of tools/venv.sh.
void verify_with_standard_webhooks() {
  std::vector<json> batch;
  batch.swap(deliveries_to_verify());
  if (batch.empty()) return;
  // Not a data dir: not among those the integration run keeps for its audit.
  const kobo::testing::ScratchDir dir("it-deliveries", kobo::testing::ScratchDir::Keep::on_failure);
  const auto file = dir / "deliveries.jsonl";
  {
    std::ofstream out(file);
    for (const json& d : batch) out << d.dump() << "\n";
  }
  const std::string source = KOBO_SOURCE_DIR;
  const std::string command = "venv=$(" + source + "/tools/venv.sh) && \"$venv/bin/python\" " + source +
                              "/tests/webhooks/verify_deliveries.py " + file.string();
  const int rc = std::system(command.c_str());
  EXPECT_EQ(rc, 0) << "deliveries that standardwebhooks does not verify (" << batch.size() << " checked)";
}

void set_webhooks(HttpClient& http, const Business& b, const std::vector<std::string>& urls) {
  data_or_throw(http.patch("/v1/accounts/" + b.account, json{{"webhooks", urls}}, b.key), 200,
                "PATCH webhooks");
}

std::vector<json> deliveries(HttpClient& http, const std::string& key, const std::string& query = "") {
  return list_all(http, key, "/v1/webhook-deliveries", query);
}

// The body as JSON, or throws.
json body_of(const ReceivedRequest& r) { return json::parse(r.body); }

// Every request is a signed POST of {"data","event","sequence"} with the headers the issues name:
// ours (checked here) and Standard Webhooks' (kept for verify_with_standard_webhooks).
void expect_signed(const ReceivedRequest& r, const Business& b) {
  SCOPED_TRACE(r.body.substr(0, 300));
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.header("content-type"), "application/json");
  EXPECT_NE(r.header("user-agent").find("Kobo"), std::string::npos) << r.header("user-agent");
  EXPECT_TRUE(r.header("x-kobo-event-id").starts_with("evt-"));
  EXPECT_EQ(r.header("x-kobo-signature"), hmac_sha512_hex(b.key, r.body)) << "signature of the exact bytes";
  EXPECT_EQ(r.header("webhook-id"), r.header("x-kobo-event-id"));
  const auto now_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  EXPECT_LT(std::abs(std::stoll(r.header("webhook-timestamp")) - now_s), 120)
      << r.header("webhook-timestamp");
  EXPECT_TRUE(r.header("webhook-signature").starts_with("v1,")) << r.header("webhook-signature");
  deliveries_to_verify().push_back(
      json{{"secret", b.webhook_secret}, {"headers", r.headers}, {"body", r.body}});
  const json body = body_of(r);
  ASSERT_TRUE(body.is_object());
  EXPECT_EQ(body.size(), 3u);
  EXPECT_TRUE(body["event"].is_string());
  EXPECT_TRUE(body["data"].is_object());
  EXPECT_TRUE(body["sequence"].is_number_unsigned() && body["sequence"] >= 1) << body["sequence"];
}

// One server for the suite: private addresses allowed (the receivers are on loopback), quick
// retries, a short window, a long attempt timeout (so a hung receiver stays hung) and two
// attempts per endpoint.
class Webhooks : public ServerSuite {
 public:
  static void SetUpTestSuite() {
    start_server({"--webhook-allow-private", "--webhook-retry-schedule", "300ms", "--webhook-retry-window",
                  "3s", "--webhook-timeout-ms", "30000", "--webhook-endpoint-concurrency", "2",
                  "--rail-delay-ms", "100"});
  }
  void TearDown() override { verify_with_standard_webhooks(); }
};

TEST_F(Webhooks, ReceiverGetsEachEventOnceWithAValidSignature) {
  WebhookReceiver receiver;
  const Business b = new_business(http());
  set_webhooks(http(), b, {receiver.url()});
  const json source = create_wallet(http(), b.key);
  const json destination = create_wallet(http(), b.key);
  const json credit = fund(http(), b.key, source, 50'000);
  const std::string reference = unique_name("ref");
  data_or_throw(
      http().post("/v1/transactions/transfer",
                  transfer_body(source["publicId"], destination["publicId"], 20'000, reference), b.key),
      200, "transfer");
  const json debit = wait_settled(http(), b.key, reference);

  // The funding credit, the transfer's debit once it succeeded, and the transfer's credit.
  ASSERT_TRUE(wait_until([&] { return receiver.count() >= 3; })) << receiver.count();
  std::this_thread::sleep_for(1s);  // nothing more comes
  const auto got = receiver.requests();
  ASSERT_EQ(got.size(), 3u);
  std::multiset<std::string> events;
  std::set<std::string> event_ids, transactions;
  for (const auto& r : got) {
    expect_signed(r, b);
    const json body = body_of(r);
    events.insert(body["event"].get<std::string>());
    event_ids.insert(r.header("x-kobo-event-id"));
    transactions.insert(body["data"]["publicId"].get<std::string>());
    // data is the Transaction record exactly as the API shows it.
    const auto shown = http().get("/v1/transactions/" + body["data"]["publicId"].get<std::string>(), b.key);
    EXPECT_EQ(body["data"], shown.json["data"]);
    expect_transaction(body["data"]);
    EXPECT_TRUE(body["data"]["status"] == "success");
  }
  EXPECT_EQ(events, (std::multiset<std::string>{"account.credit", "account.credit", "account.debit"}));
  EXPECT_EQ(event_ids.size(), 3u) << "one event id per event";
  EXPECT_TRUE(transactions.contains(credit["publicId"].get<std::string>()));
  EXPECT_TRUE(transactions.contains(debit["publicId"].get<std::string>()));

  // Each attempt is recorded.
  ASSERT_TRUE(wait_until([&] { return deliveries(http(), b.key, "status=succeeded").size() == 3; }));
  for (const json& d : deliveries(http(), b.key)) {
    EXPECT_TRUE(d["id"].get<std::string>().starts_with("whd-"));
    EXPECT_EQ(d["url"], receiver.url());
    EXPECT_EQ(d["account"], b.account);
    EXPECT_EQ(d["live"], false);
    EXPECT_TRUE(d["transaction"].get<std::string>().starts_with("trx-"));
    EXPECT_TRUE(event_ids.contains(d["eventId"].get<std::string>()));
    ASSERT_EQ(d["attempts"].size(), 1u);
    EXPECT_EQ(d["attempts"][0]["statusCode"], 200);
    EXPECT_TRUE(d["attempts"][0]["durationMs"].is_number_integer());
    expect_timestamp(d["attempts"][0]["at"], "attempts[0].at");
    EXPECT_TRUE(d["nextAttemptAt"].is_null());
    EXPECT_FALSE(d.contains("body")) << "internal fields stay inside";
    expect_timestamp(d["createdAt"], "createdAt");
  }
  const std::string metrics = http().get("/metrics").body;
  for (const char* m :
       {"kobo_webhook_attempts_total ", "kobo_webhook_deliveries_total{status=\"succeeded\"} ",
        "kobo_webhook_deliveries_total{status=\"failed\"} ", "kobo_webhook_in_flight ",
        "kobo_webhook_deliveries_recorded_total ", "kobo_webhook_attempt_duration_seconds_count "})
    EXPECT_NE(metrics.find(m), std::string::npos) << m;
}

// The consumer keeps each account's URLs once read: webhooks set on an account that already
// had transactions without them, and webhooks removed, take effect from the next transaction.
TEST_F(Webhooks, URLsSetOrRemovedAfterEarlierTransactionsApplyToTheNextOnes) {
  WebhookReceiver receiver;
  const Business b = new_business(http());
  const json wallet = create_wallet(http(), b.key);
  fund(http(), b.key, wallet, 10'000);  // read with no URLs
  set_webhooks(http(), b, {receiver.url()});
  const json second = fund(http(), b.key, wallet, 20'000);
  ASSERT_TRUE(wait_until([&] { return receiver.count() >= 1; })) << "URLs set later are used";
  set_webhooks(http(), b, {});
  fund(http(), b.key, wallet, 30'000);
  const json fourth = fund(http(), b.key, wallet, 40'000);
  // Deliveries are recorded in log order: once the fourth credit is in the views and a moment
  // has passed for its recording, only the second credit was ever delivered.
  ASSERT_TRUE(wait_until([&] {
    return http().get("/v1/transactions/" + fourth["publicId"].get<std::string>(), b.key).status == 200;
  }));
  std::this_thread::sleep_for(1s);
  const auto got = receiver.requests();
  ASSERT_EQ(got.size(), 1u);
  expect_signed(got[0], b);
  EXPECT_EQ(body_of(got[0])["data"]["publicId"], second["publicId"]);
  EXPECT_EQ(deliveries(http(), b.key).size(), 1u);
}

TEST_F(Webhooks, PayoutsSendDebitOnSuccessAndDebitFailedOnFailure) {
  WebhookReceiver receiver;
  const Business b = new_business(http());
  set_webhooks(http(), b, {receiver.url()});
  const json wallet = create_wallet(http(), b.key);
  fund(http(), b.key, wallet, 100'000);
  const auto payout = [&](json metadata) {
    json body{{"source", wallet["publicId"]},
              {"accountNumber", "0123456784"},
              {"bankCode", "044"},
              {"amount", 20'000},
              {"currency", "NGN"},
              {"narration", "webhook payout"}};
    if (!metadata.is_null()) body["metadata"] = std::move(metadata);
    return data_or_throw(http().post("/v1/transactions/bank-transfer", body, b.key), 200, "bank transfer");
  };
  const json paid = payout(nullptr);
  const json bounced = payout(json{{"sandboxOutcome", "failed"}});

  // The funding credit, the paid debit, the failed debit and the reversal's credit; nothing
  // for the pending and processing steps in between.
  ASSERT_TRUE(wait_until([&] { return receiver.count() >= 4; })) << receiver.count();
  std::this_thread::sleep_for(500ms);
  const auto got = receiver.requests();
  ASSERT_EQ(got.size(), 4u);
  std::map<std::string, std::vector<json>> by_event;
  for (const auto& r : got) {
    expect_signed(r, b);
    const json body = body_of(r);
    by_event[body["event"]].push_back(body["data"]);
  }
  ASSERT_EQ(by_event["account.debit"].size(), 1u);
  EXPECT_EQ(by_event["account.debit"][0]["publicId"], paid["publicId"]);
  EXPECT_EQ(by_event["account.debit"][0]["status"], "success");
  ASSERT_EQ(by_event["account.debit.failed"].size(), 1u);
  EXPECT_EQ(by_event["account.debit.failed"][0]["publicId"], bounced["publicId"]);
  EXPECT_EQ(by_event["account.debit.failed"][0]["status"], "failed");
  ASSERT_EQ(by_event["account.credit"].size(), 2u);
  const auto& credits = by_event["account.credit"];
  EXPECT_TRUE(credits[0]["amount"] == bounced["actualAmount"] ||
              credits[1]["amount"] == bounced["actualAmount"])
      << "one credit is the reversal of amount + fee";
}

TEST_F(Webhooks, FailingReceiverGetsTheRetryWithTheSameEventId) {
  WebhookReceiver receiver;
  receiver.answer_with({500, 302});  // a redirect is not followed: it is a failure too
  const Business b = new_business(http());
  set_webhooks(http(), b, {receiver.url()});
  fund(http(), b.key, create_wallet(http(), b.key), 10'000);

  ASSERT_TRUE(wait_until([&] { return receiver.count() >= 3; })) << receiver.count();
  const auto got = receiver.requests();
  ASSERT_EQ(got.size(), 3u);
  for (const auto& r : got) {
    expect_signed(r, b);
    EXPECT_EQ(r.header("x-kobo-event-id"), got[0].header("x-kobo-event-id")) << "stable across retries";
    EXPECT_EQ(r.body, got[0].body) << "the same bytes every time";
  }
  EXPECT_GE(got[1].at - got[0].at, 250ms) << "retried after the backoff, not at once";

  json d;
  ASSERT_TRUE(wait_until([&] {
    const auto all = deliveries(http(), b.key);
    if (all.size() != 1) return false;
    d = all[0];
    return d["status"] == "succeeded";
  })) << d.dump();
  ASSERT_EQ(d["attempts"].size(), 3u);
  EXPECT_EQ(d["attempts"][0]["statusCode"], 500);
  EXPECT_EQ(d["attempts"][0]["error"], "HTTP 500");
  EXPECT_EQ(d["attempts"][1]["statusCode"], 302);
  EXPECT_EQ(d["attempts"][2]["statusCode"], 200);
  EXPECT_FALSE(d["attempts"][2].contains("error"));
}

TEST_F(Webhooks, ReceiverThatNeverAnswersDoesNotDelayAnother) {
  WebhookReceiver hung(WebhookReceiver::Mode::hang);
  WebhookReceiver healthy;
  const Business b = new_business(http());
  set_webhooks(http(), b, {hung.url(), healthy.url()});
  const json wallet = create_wallet(http(), b.key);
  constexpr int kEvents = 6;
  // The hung receiver never answers, so an attempt to it ends only at the 30 s attempt timeout:
  // anything that waited for it would take at least that long. The bounds below stay well under
  // it and well above what a loaded machine's stalls (an fsync of seconds) take.
  constexpr auto kWellBeforeTheAttemptTimeout = 20s;
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < kEvents; ++i) {
    const auto before = std::chrono::steady_clock::now();
    fund(http(), b.key, wallet, 10'000 + i);
    EXPECT_LT(std::chrono::steady_clock::now() - before, kWellBeforeTheAttemptTimeout)
        << "the API does not wait for receivers";
  }
  ASSERT_TRUE(wait_until([&] { return healthy.count() >= kEvents; }, kWellBeforeTheAttemptTimeout))
      << "the healthy receiver got " << healthy.count() << " of " << kEvents;
  EXPECT_LT(std::chrono::steady_clock::now() - started, 25s) << "inside the hung attempts' 30 s timeout";
  // The hung endpoint holds its own two slots, no more.
  ASSERT_TRUE(wait_until([&] { return hung.count() >= 2; }, kWellBeforeTheAttemptTimeout)) << hung.count();
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(hung.count(), 2u);
  EXPECT_EQ(deliveries(http(), b.key, "status=pending").size(), static_cast<std::size_t>(kEvents));
  EXPECT_EQ(deliveries(http(), b.key, "status=succeeded").size(), static_cast<std::size_t>(kEvents));

  // An attempt in flight cannot be retried on top of itself: exactly the hung ones are 409.
  std::size_t in_progress = 0;
  for (const json& d : deliveries(http(), b.key, "status=pending")) {
    const auto res =
        http().post("/v1/webhook-deliveries/" + d["id"].get<std::string>() + "/retry", json::object(), b.key);
    if (res.status == 409) {
      expect_error(res, 409, "Delivery attempt in progress");
      ++in_progress;
    } else {
      expect_success(res, 200, Message::kPresent);
    }
  }
  EXPECT_EQ(in_progress, hung.count());
  for (const auto& r : healthy.requests()) expect_signed(r, b);
  for (const auto& r : hung.requests()) expect_signed(r, b);
}

TEST_F(Webhooks, FailedDeliveryIsSentAgainOnRequest) {
  WebhookReceiver receiver;
  receiver.answer_with(std::vector<unsigned>(100, 503));
  const Business b = new_business(http());
  set_webhooks(http(), b, {receiver.url()});
  fund(http(), b.key, create_wallet(http(), b.key), 10'000);
  // 300 ms apart within a 3 s window: failed after a handful of attempts.
  // (The waits are generous for a loaded machine; they end as soon as the state is reached.)
  ASSERT_TRUE(wait_until([&] { return deliveries(http(), b.key, "status=failed").size() == 1; }, 60s));
  const json failed = deliveries(http(), b.key, "status=failed")[0];
  EXPECT_GE(failed["attempts"].size(), 3u);
  EXPECT_TRUE(failed["nextAttemptAt"].is_null());
  const std::size_t before = receiver.count();
  EXPECT_EQ(before, failed["attempts"].size());

  receiver.answer_with({});
  const auto res = http().post("/v1/webhook-deliveries/" + failed["id"].get<std::string>() + "/retry",
                               json::object(), b.key);
  expect_success(res, 200, Message::kPresent);
  EXPECT_EQ(res.json["data"]["status"], "pending");
  ASSERT_TRUE(wait_until([&] { return deliveries(http(), b.key, "status=succeeded").size() == 1; }, 60s));
  EXPECT_EQ(receiver.count(), before + 1);
  EXPECT_EQ(receiver.requests().back().header("x-kobo-event-id"), failed["eventId"]);
  EXPECT_EQ(deliveries(http(), b.key)[0]["attempts"].size(), failed["attempts"].size() + 1);
  for (const auto& r : receiver.requests()) expect_signed(r, b);
}

TEST_F(Webhooks, DeliveryEndpointsRejectBadRequestsAndOtherBusinessesIds) {
  WebhookReceiver receiver;
  const Business mine = new_business(http());
  const Business theirs = new_business(http());
  set_webhooks(http(), theirs, {receiver.url()});
  const json wallet = create_wallet(http(), theirs.key);
  fund(http(), theirs.key, wallet, 10'000);
  fund(http(), theirs.key, wallet, 20'000);
  ASSERT_TRUE(wait_until([&] { return deliveries(http(), theirs.key, "status=succeeded").size() == 2; }));
  const std::string their_id = deliveries(http(), theirs.key)[0]["id"];

  // Pagination, newest first.
  const auto page2 = http().get("/v1/webhook-deliveries?perPage=1&page=2", theirs.key);
  expect_success(page2, 200, Message::kAbsent, true);
  EXPECT_EQ(page2.json["meta"]["pagination"]["totalCount"], 2);
  EXPECT_EQ(page2.json["meta"]["pagination"]["current"], 2);
  ASSERT_EQ(page2.json["data"].size(), 1u);
  EXPECT_NE(page2.json["data"][0]["id"], their_id);
  EXPECT_EQ(total_count(http(), theirs.key, "/v1/webhook-deliveries", "status=failed"), 0);

  // Isolation: another business sees none of them and cannot retry them.
  EXPECT_EQ(total_count(http(), mine.key, "/v1/webhook-deliveries"), 0);
  expect_error(http().post("/v1/webhook-deliveries/" + their_id + "/retry", json::object(), mine.key), 404,
               "Data not found");
  expect_error(
      http().post("/v1/webhook-deliveries/whd-" + random_uuid() + "/retry", json::object(), theirs.key), 404,
      "Data not found");

  expect_validation(http().get("/v1/webhook-deliveries?status=done", theirs.key), {"status"});
  expect_validation(http().get("/v1/webhook-deliveries?page=0", theirs.key), {"page"});
  expect_validation(http().get("/v1/webhook-deliveries?perPage=101", theirs.key), {"perPage"});
  expect_error(http().get("/v1/webhook-deliveries"), 401, "Unauthorized");
  expect_error(http().post("/v1/webhook-deliveries/" + their_id + "/retry", json::object()), 401,
               "Unauthorized");
  // Known paths asked with another method: 405 with the methods they have.
  const auto wrong_method =
      http().request(boost::beast::http::verb::delete_, "/v1/webhook-deliveries/" + their_id + "/retry",
                     std::nullopt, {{"x-service-key", theirs.key}});
  expect_error(wrong_method, 405, "Method not allowed");
  EXPECT_EQ(wrong_method.header("allow"), "POST");
  expect_error(http().get("/v1/webhook-deliveries/" + their_id + "/retry", theirs.key), 405,
               "Method not allowed");
  expect_error(http().post("/v1/webhook-deliveries", json::object(), theirs.key), 405, "Method not allowed");

  // A retry of a delivered event sends it again, same event id.
  expect_success(http().post("/v1/webhook-deliveries/" + their_id + "/retry", json::object(), theirs.key),
                 200, Message::kPresent);
  ASSERT_TRUE(wait_until([&] { return receiver.count() == 3; }));
  for (const json& d : deliveries(http(), theirs.key))
    if (d["id"] == their_id) {
      EXPECT_EQ(receiver.requests()[2].header("x-kobo-event-id"), d["eventId"]);
      const auto r = receiver.requests();
      EXPECT_TRUE(r[2].body == r[0].body || r[2].body == r[1].body) << "the same bytes as the first time";
    }
  for (const auto& r : receiver.requests()) expect_signed(r, theirs);
}

// Servers of their own: one restarted between two attempts, one without --webhook-allow-private.
class WebhooksOwnServer : public ::testing::Test {
 protected:
  void TearDown() override { verify_with_standard_webhooks(); }
  std::unique_ptr<KoboProcess> server_;
};

TEST_F(WebhooksOwnServer, RestartBetweenAttemptsStillDelivers) {
  server_ = std::make_unique<KoboProcess>(kobo_options(
      {"--webhook-allow-private", "--webhook-retry-schedule", "2s", "--webhook-retry-window", "1m"}));
  WebhookReceiver receiver;
  receiver.answer_with({500});
  Business b{server_->test_key(), server_->credentials().account_id, ""};
  b.webhook_secret = issue_webhook_secret(server_->client(), b.key, b.account);
  set_webhooks(server_->client(), b, {receiver.url()});
  fund(server_->client(), b.key, create_wallet(server_->client(), b.key), 10'000);

  // The first attempt failed and is on record, the next one is due in 2 s: crash now.
  ASSERT_TRUE(wait_until([&] {
    const auto d = deliveries(server_->client(), b.key);
    return d.size() == 1 && d[0]["attempts"].size() == 1;
  }));
  EXPECT_EQ(receiver.count(), 1u);
  server_->kill9();
  server_->start();

  ASSERT_TRUE(wait_until([&] { return receiver.count() >= 2; }, 15s));
  const auto got = receiver.requests();
  EXPECT_EQ(got[1].header("x-kobo-event-id"), got[0].header("x-kobo-event-id"));
  EXPECT_EQ(got[1].body, got[0].body);
  expect_signed(got[0], b);
  expect_signed(got[1], b);
  ASSERT_TRUE(
      wait_until([&] { return deliveries(server_->client(), b.key, "status=succeeded").size() == 1; }));
  const json d = deliveries(server_->client(), b.key)[0];
  ASSERT_EQ(d["attempts"].size(), 2u);
  EXPECT_EQ(d["attempts"][0]["statusCode"], 500);
  EXPECT_EQ(d["attempts"][1]["statusCode"], 200);
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(receiver.count(), 2u) << "the restart recorded nothing twice";
}

// The scheduler is fair between endpoints and tenants: a hung receiver with more due deliveries
// than a scheduling pass looks at (1,024), all due before another tenant's, does not starve that
// tenant's healthy receiver (one partition, so both tenants' deliveries share its due index).
TEST_F(WebhooksOwnServer, AHungEndpointsBacklogDoesNotStarveAnotherTenant) {
  server_ = std::make_unique<KoboProcess>(
      kobo_options({"--partitions", "1", "--no-fsync", "--webhook-allow-private", "--webhook-retry-schedule",
                    "1s", "--webhook-retry-window", "5m", "--webhook-timeout-ms", "60000",
                    "--webhook-endpoint-concurrency", "2"}));
  WebhookReceiver hung(WebhookReceiver::Mode::hang);
  WebhookReceiver healthy;
  const Business flooder = new_business(server_->client());
  set_webhooks(server_->client(), flooder, {hung.url()});
  const json wallet = create_wallet(server_->client(), flooder.key);
  constexpr int kBacklog = 1'300;
  for (int i = 0; i < kBacklog; ++i) fund(server_->client(), flooder.key, wallet, 10'000 + i);
  ASSERT_TRUE(wait_until([&] { return hung.count() >= 2; }, 10s)) << hung.count();

  const Business other = new_business(server_->client());
  set_webhooks(server_->client(), other, {healthy.url()});
  fund(server_->client(), other.key, create_wallet(server_->client(), other.key), 10'000);
  EXPECT_TRUE(wait_until([&] { return healthy.count() >= 1; }, 10s))
      << "the healthy receiver got nothing behind " << kBacklog << " deliveries due to a hung one";
  EXPECT_EQ(hung.count(), 2u) << "the hung endpoint holds its own slots only";
  for (const auto& r : healthy.requests()) expect_signed(r, other);
  deliveries_to_verify().clear();
}

TEST_F(WebhooksOwnServer, PrivateAddressesAreRefusedWithoutTheFlag) {
  server_ = std::make_unique<KoboProcess>(
      kobo_options({"--webhook-retry-schedule", "200ms", "--webhook-retry-window", "1s"}));
  WebhookReceiver receiver;
  const Business b{server_->test_key(), server_->credentials().account_id, ""};
  // A literal address is refused when it is set...
  for (const char* url :
       {"http://127.0.0.1:9/h", "http://10.0.0.7/h", "https://[::1]/h", "http://169.254.169.254/x"}) {
    const auto res = server_->client().patch("/v1/accounts/" + b.account, json{{"webhooks", {url}}}, b.key);
    expect_validation(res, {"webhooks"});
    EXPECT_NE(res.body.find("must be a public URL"), std::string::npos) << res.body;
  }
  // ...a name only when it resolves, at every attempt.
  set_webhooks(server_->client(), b, {"http://localhost:" + std::to_string(receiver.port()) + "/h"});
  fund(server_->client(), b.key, create_wallet(server_->client(), b.key), 10'000);

  ASSERT_TRUE(
      wait_until([&] { return deliveries(server_->client(), b.key, "status=failed").size() == 1; }, 15s));
  for (const json& d : deliveries(server_->client(), b.key)) {
    ASSERT_FALSE(d["attempts"].empty());
    for (const json& a : d["attempts"]) {
      const std::string error = a["error"];
      EXPECT_TRUE(error.starts_with("refused: ")) << error;
      // The tenant learns nothing of what the name resolves to (docs/security.md); the log does.
      EXPECT_EQ(error.find("127.0.0.1"), std::string::npos) << error;
      EXPECT_EQ(error.find("loopback"), std::string::npos) << error;
      EXPECT_FALSE(a.contains("statusCode"));
    }
  }
  EXPECT_NE(server_->log_tail(400).find("a loopback address"), std::string::npos) << server_->log_tail();
  EXPECT_EQ(receiver.count(), 0u) << "nothing reached the loopback receiver";
}

}  // namespace
}  // namespace kobo::it
