// Keys, modes and the surface (docs/security.md): a rolled key works during its overlap and is
// refused after; a revoked key is refused at once; a suspended business gets 403 on every route;
// live mode is the admin's, and each mode has its own webhooks; no file under the data dir and no
// line of output holds a secret key; account numbers cannot be found by counting, and own-bank
// name enquiries are limited per key; a weak admin key and SASL PLAIN in clear are refused at start.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "common/time.h"
#include "tests/audit/run_kobo.h"
#include "tests/integration/harness.h"
#include "tests/support/test_kafka.h"

namespace kobo::it {
namespace {

namespace fs = std::filesystem;
namespace bhttp = boost::beast::http;
using kobo::testing::kTestAdminKey;
using kobo::testing::run_kobo;
using namespace std::chrono_literals;

struct Business {
  std::string id, account, test_key, live_key;
};

HttpResult admin(HttpClient& http, bhttp::verb method, const std::string& path, const json& body = nullptr) {
  return http.request(method, path, body.is_null() ? "" : body.dump(), {{"x-admin-key", kTestAdminKey}});
}

Business new_business(HttpClient& http, const std::string& name = "") {
  const json d = data_or_throw(admin(http, bhttp::verb::post, "/v1/admin/businesses",
                                     json{{"name", name.empty() ? unique_name("keys") : name}}),
                               201, "create business");
  const json& c = d["credentials"];
  return {c["businessId"], c["accountId"], c["testSecretKey"], c["liveSecretKey"]};
}

json roll(HttpClient& http, const std::string& key, const std::string& account, std::int64_t overlap_s) {
  const HttpResult res =
      http.post("/v1/accounts/" + account + "/keys/roll", json{{"overlapSeconds", overlap_s}}, key);
  EXPECT_EQ(res.header("cache-control"), "no-store") << "a new key is shown once";
  return data_or_throw(res, 201, "roll a key");
}

unsigned status_of(HttpClient& http, const std::string& key) {
  return http.get("/v1/virtual-accounts", key).status;
}

class Keys : public ServerSuite {};

TEST_F(Keys, ARolledKeyWorksDuringItsOverlapAndIsRefusedAfter) {
  const Business b = new_business(http());
  const json rolled = roll(http(), b.test_key, b.account, 2);
  const std::string fresh = rolled["secretKey"];
  EXPECT_TRUE(fresh.starts_with("sk_test_") && fresh.size() == 48u) << fresh;
  EXPECT_EQ(rolled["live"], false);
  EXPECT_TRUE(rolled["previousKeyId"].is_string());
  // During the overlap both keys work; the keys list shows the old one expiring.
  EXPECT_EQ(status_of(http(), fresh), 200u);
  EXPECT_EQ(status_of(http(), b.test_key), 200u);
  const HttpResult listed = http().get("/v1/accounts/" + b.account + "/keys", fresh);
  expect_success(listed, 200, Message::kAbsent, true);
  ASSERT_EQ(listed.json["data"].size(), 2u) << listed.body;
  EXPECT_EQ(listed.json["data"][0]["keyId"], rolled["keyId"]);
  EXPECT_EQ(listed.json["data"][0]["status"], "current");
  EXPECT_EQ(listed.json["data"][1]["keyId"], rolled["previousKeyId"]);
  EXPECT_EQ(listed.json["data"][1]["status"], "expiring");
  EXPECT_EQ(listed.body.find("sk_test_"), std::string::npos) << "a listing never shows a key";
  // After it, the old key is refused as an unknown one; the new one goes on.
  const UnixMs until = *parse_iso8601(rolled["previousKeyExpiresAt"].get<std::string>());
  while (now_ms() < until + 50) std::this_thread::sleep_for(50ms);
  expect_error(http().get("/v1/virtual-accounts", b.test_key), 401, "Unauthorized");
  EXPECT_EQ(status_of(http(), fresh), 200u);
  EXPECT_EQ(http().get("/v1/accounts/" + b.account + "/keys", fresh).json["data"].size(), 1u);
  // The live key was not rolled: a key acts in its own mode only.
  expect_error(http().post("/v1/accounts/" + b.account + "/keys/roll",
                           json{{"mode", "live"}, {"overlapSeconds", 0}}, fresh),
               403, "A key acts in its own mode only");
  expect_validation(
      http().post("/v1/accounts/" + b.account + "/keys/roll", json{{"overlapSeconds", 259201}}, fresh),
      {"overlapSeconds"});
  expect_validation(http().post("/v1/accounts/" + b.account + "/keys/roll", json::object(), fresh),
                    {"overlapSeconds"});
}

TEST_F(Keys, ARevokedKeyIsRefusedAtOnceAndTheCurrentOneCannotBe) {
  const Business b = new_business(http());
  const json rolled = roll(http(), b.test_key, b.account, 3600);
  const std::string fresh = rolled["secretKey"];
  EXPECT_EQ(status_of(http(), b.test_key), 200u) << "within its overlap";
  const std::string path = "/v1/accounts/" + b.account + "/keys/revoke";
  expect_error(http().post(path, json{{"keyId", rolled["keyId"]}}, fresh), 409,
               "The current key cannot be revoked: roll it first");
  expect_error(http().post(path, json{{"keyId", "key-0000000000000000"}}, fresh), 404, "Key not found");
  const HttpResult revoked = http().post(path, json{{"keyId", rolled["previousKeyId"]}}, fresh);
  expect_success(revoked, 200, Message::kPresent);
  // Refused from the answer on: no wait.
  expect_error(http().get("/v1/virtual-accounts", b.test_key), 401, "Unauthorized");
  EXPECT_EQ(status_of(http(), fresh), 200u);
  expect_error(http().post(path, json{{"keyId", rolled["previousKeyId"]}}, fresh), 404, "Key not found");
  // A roll with no overlap retires the old key at once too.
  const json again = roll(http(), fresh, b.account, 0);
  expect_error(http().get("/v1/virtual-accounts", fresh), 401, "Unauthorized");
  EXPECT_EQ(status_of(http(), again["secretKey"]), 200u);
  // Another business's key cannot touch this account's keys.
  const Business other = new_business(http());
  expect_error(
      http().post("/v1/accounts/" + b.account + "/keys/roll", json{{"overlapSeconds", 0}}, other.test_key),
      404, "Data not found");
}

TEST_F(Keys, TheAdminRollsAKeyForATenantThatLostIt) {
  const Business b = new_business(http());
  ASSERT_EQ(admin(http(), bhttp::verb::patch, "/v1/admin/accounts/" + b.account, json{{"live", true}}).status,
            200u);
  const HttpResult res = admin(http(), bhttp::verb::post, "/v1/admin/accounts/" + b.account + "/keys/roll",
                               json{{"mode", "live"}, {"overlapSeconds", 0}});
  const json rolled = data_or_throw(res, 201, "admin roll");
  EXPECT_EQ(rolled["live"], true);
  EXPECT_EQ(status_of(http(), rolled["secretKey"]), 200u);
  expect_error(http().get("/v1/virtual-accounts", b.live_key), 401, "Unauthorized");
  EXPECT_EQ(status_of(http(), b.test_key), 200u) << "the other mode's key is untouched";
  expect_error(
      http().request(bhttp::verb::post, "/v1/admin/accounts/" + b.account + "/keys/roll",
                     json{{"mode", "live"}, {"overlapSeconds", 0}}.dump(), {{"x-admin-key", "wrong"}}),
      401, "Unauthorized");
}

// Every route a key can call, with a body it could send.
std::vector<std::pair<bhttp::verb, std::string>> tenant_routes(const Business& b) {
  const std::string w = "vba-" + random_uuid(), acc = b.account;
  return {{bhttp::verb::get, "/v1/virtual-accounts"},
          {bhttp::verb::post, "/v1/virtual-accounts"},
          {bhttp::verb::get, "/v1/virtual-accounts/" + w},
          {bhttp::verb::patch, "/v1/virtual-accounts/" + w},
          {bhttp::verb::get, "/v1/virtual-accounts/" + w + "/statement"},
          {bhttp::verb::get, "/v1/virtual-accounts/" + w + "/balance"},
          {bhttp::verb::post, "/v1/collection-accounts"},
          {bhttp::verb::post, "/v1/transit-accounts"},
          {bhttp::verb::post, "/v1/transactions/transfer"},
          {bhttp::verb::post, "/v1/transactions/bank-transfer"},
          {bhttp::verb::post, "/v1/transactions/bulk-transfer"},
          {bhttp::verb::get, "/v1/transactions"},
          {bhttp::verb::get, "/v1/transactions/trx-x"},
          {bhttp::verb::get, "/v1/transactions/trx-x/verify"},
          {bhttp::verb::post, "/v1/transactions/validate-account"},
          {bhttp::verb::post, "/v1/holds"},
          {bhttp::verb::get, "/v1/holds"},
          {bhttp::verb::get, "/v1/holds/hld-x"},
          {bhttp::verb::post, "/v1/holds/hld-x/capture"},
          {bhttp::verb::post, "/v1/holds/hld-x/void"},
          {bhttp::verb::post, "/v1/bank-accounts"},
          {bhttp::verb::get, "/v1/bank-accounts"},
          {bhttp::verb::get, "/v1/bank-accounts/bka-x"},
          {bhttp::verb::get, "/v1/accounts"},
          {bhttp::verb::patch, "/v1/accounts/" + acc},
          {bhttp::verb::get, "/v1/accounts/" + acc + "/keys"},
          {bhttp::verb::post, "/v1/accounts/" + acc + "/keys/roll"},
          {bhttp::verb::post, "/v1/accounts/" + acc + "/keys/revoke"},
          {bhttp::verb::post, "/v1/accounts/" + acc + "/webhook-secret"},
          {bhttp::verb::get, "/v1/events"},
          {bhttp::verb::get, "/v1/webhook-deliveries"},
          {bhttp::verb::post, "/v1/webhook-deliveries/whd-x/retry"},
          {bhttp::verb::post, "/v1/sandbox/incoming-transfers"}};
}

TEST_F(Keys, ASuspendedBusinessGets403OnEveryRouteUntilItIsResumed) {
  const Business b = new_business(http()), bystander = new_business(http());
  ASSERT_EQ(admin(http(), bhttp::verb::patch, "/v1/admin/accounts/" + b.account, json{{"live", true}}).status,
            200u);
  const json wallet = create_wallet(http(), b.test_key);
  const HttpResult suspended = admin(http(), bhttp::verb::post, "/v1/admin/businesses/" + b.id + "/suspend",
                                     json{{"reason", "leaked key under investigation"}});
  expect_success(suspended, 200, Message::kPresent);
  EXPECT_EQ(suspended.json["data"]["suspended"], true);
  for (const std::string& key : {b.test_key, b.live_key})
    for (const auto& [method, path] : tenant_routes(b))
      expect_error(http().request(method, path, json::object().dump(), {{"x-service-key", key}}), 403,
                   "This business is suspended");
  EXPECT_EQ(status_of(http(), bystander.test_key), 200u) << "another business goes on";
  EXPECT_EQ(admin(http(), bhttp::verb::post, "/v1/admin/businesses/biz-" + random_uuid() + "/suspend").status,
            404u);
  expect_error(http().post("/v1/admin/businesses/" + b.id + "/resume", json::object()), 401, "Unauthorized");

  const HttpResult resumed = admin(http(), bhttp::verb::post, "/v1/admin/businesses/" + b.id + "/resume");
  expect_success(resumed, 200, Message::kPresent);
  EXPECT_EQ(resumed.json["data"]["suspended"], false);
  EXPECT_EQ(http().get("/v1/virtual-accounts/" + wallet["publicId"].get<std::string>(), b.test_key).status,
            200u);
  EXPECT_EQ(status_of(http(), b.live_key), 200u);
}

TEST_F(Keys, ATestKeyCannotChangeTheLiveFlagNorTouchLiveWebhooks) {
  const Business b = new_business(http());
  const std::string account = "/v1/accounts/" + b.account;
  expect_error(http().patch(account, json{{"live", true}}, b.test_key), 403,
               "Live mode is enabled by the admin");
  expect_error(http().get("/v1/virtual-accounts", b.live_key), 403,
               "Live mode is not enabled for this account");
  const HttpResult enabled =
      admin(http(), bhttp::verb::patch, "/v1/admin/accounts/" + b.account, json{{"live", true}});
  expect_success(enabled, 200, Message::kPresent);
  EXPECT_EQ(enabled.json["data"]["live"], true);
  expect_error(http().patch(account, json{{"live", false}}, b.live_key), 403,
               "Live mode is enabled by the admin");

  // Each mode has its own URLs and subscriptions.
  const HttpResult test_set = http().patch(
      account, json{{"webhooks", {"https://test.example.com/h"}}, {"webhookEvents", {"account.debit"}}},
      b.test_key);
  expect_success(test_set, 200, Message::kPresent);
  EXPECT_EQ(test_set.json["data"]["webhooks"], json({"https://test.example.com/h"}));
  EXPECT_EQ(test_set.json["data"].find("liveWebhooks"), test_set.json["data"].end()) << test_set.body;
  const json live_view = http().get("/v1/accounts", b.live_key).json["data"][0];
  EXPECT_EQ(live_view["webhooks"], json::array()) << "a test key's URLs are not the live mode's";
  EXPECT_EQ(live_view["webhookEvents"].size(), 3u);
  expect_success(http().patch(account, json{{"webhooks", {"https://live.example.com/h"}}}, b.live_key), 200,
                 Message::kPresent);
  EXPECT_EQ(http().get("/v1/accounts", b.test_key).json["data"][0]["webhooks"],
            json({"https://test.example.com/h"}));
  EXPECT_EQ(http().get("/v1/accounts", b.live_key).json["data"][0]["webhooks"],
            json({"https://live.example.com/h"}));

  // Live money is not seen with the test key: its events and deliveries are the live mode's.
  const json live_wallet = data_or_throw(
      http().post("/v1/virtual-accounts", wallet_body(unique_name("live")), b.live_key), 201, "live wallet");
  const json payout{{"source", live_wallet["publicId"]},
                    {"accountNumber", "0123456784"},
                    {"bankCode", "044"},
                    {"amount", 10'000},
                    {"currency", "NGN"},
                    {"narration", "live payout"},
                    {"metadata", {{"sandboxOutcome", "failed"}}}};
  EXPECT_EQ(http().post("/v1/transactions/bank-transfer", payout, b.live_key).status, 403u) << "no money yet";
  EXPECT_EQ(total_count(http(), b.test_key, "/v1/webhook-deliveries"), 0);
  EXPECT_EQ(http().get("/v1/events", b.test_key).json["data"].size(), 0u);
  // Sandbox switches act in test mode only: a live key gets no sandbox money.
  expect_error(http().post("/v1/sandbox/incoming-transfers",
                           incoming_body(live_wallet["accountNumber"], 50'000), b.live_key),
               403, "Sandbox transfers are only available in test mode");
}

// ---- keys at rest -------------------------------------------------------------------------------

// Every file under `dir`, read whole.
std::map<fs::path, std::string> files_under(const fs::path& dir) {
  std::map<fs::path, std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    out.emplace(entry.path(), bytes.str());
  }
  return out;
}

TEST(KeysAtRest, NoFileUnderTheDataDirAndNoLineOfOutputHoldsASecretKey) {
  // Snapshots every few events, so that they are among the files.
  KoboProcess server(kobo_options({"--snapshot-every-events", "5", "--webhook-allow-private"}));
  HttpClient& http = server.client();
  std::vector<std::string> keys{server.test_key(), server.live_key()};
  const Business b = new_business(http);
  keys.insert(keys.end(), {b.test_key, b.live_key});
  ASSERT_EQ(admin(http, bhttp::verb::patch, "/v1/admin/accounts/" + b.account, json{{"live", true}}).status,
            200u);
  // Webhooks signed with the keys, a roll, a revocation, an admin roll.
  ASSERT_EQ(
      http.patch("/v1/accounts/" + b.account, json{{"webhooks", {"http://127.0.0.1:9/hook"}}}, b.test_key)
          .status,
      200u);
  const json w = create_wallet(http, b.test_key);
  fund(http, b.test_key, w, 500'000);
  const json rolled = roll(http, b.test_key, b.account, 3600);
  keys.push_back(rolled["secretKey"]);
  ASSERT_EQ(http.post("/v1/accounts/" + b.account + "/keys/revoke", json{{"keyId", rolled["previousKeyId"]}},
                      rolled["secretKey"].get<std::string>())
                .status,
            200u);
  const json by_admin =
      data_or_throw(admin(http, bhttp::verb::post, "/v1/admin/accounts/" + b.account + "/keys/roll",
                          json{{"mode", "live"}, {"overlapSeconds", 60}}),
                    201, "admin roll");
  keys.push_back(by_admin["secretKey"]);
  for (int i = 0; i < 4; ++i) create_wallet(http, rolled["secretKey"]);
  // Let a delivery attempt sign with the key, then stop: the databases are flushed and closed.
  std::this_thread::sleep_for(500ms);
  server.graceful_restart();
  ASSERT_EQ(status_of(server.client(), rolled["secretKey"]), 200u) << "the keys survive a restart";
  ASSERT_EQ(server.terminate(), 0);

  const auto files = files_under(server.data_dir());
  ASSERT_GT(files.size(), 10u);
  std::set<std::string> names;
  for (const auto& [path, bytes] : files) {
    names.insert(path.filename().string());
    for (const std::string& key : keys)
      EXPECT_EQ(bytes.find(key), std::string::npos)
          << path << " holds the secret key " << key.substr(0, 12) << "…";
  }
  EXPECT_TRUE(names.contains("kobo.1.log") && names.contains("kobo.1.stdout")) << "the output is checked too";
  // RocksDB compresses its blocks: a key would not show as its bytes there. Read every database
  // under the data dir (log, views, webhooks, history) record by record, and the log as events.
  for (const auto& entry : fs::recursive_directory_iterator(server.data_dir())) {
    if (entry.path().filename() != "CURRENT") continue;
    for (const auto& [k, v] : kobo::testing::dump_db(entry.path().parent_path()))
      for (const std::string& key : keys)
        EXPECT_TRUE(k.find(key) == std::string::npos && v.find(key) == std::string::npos)
            << entry.path().parent_path() << " holds the secret key " << key.substr(0, 12) << "…";
  }
  std::vector<std::string> events_args{"events"};
  if (const std::string brokers = kobo::testing::test_kafka_brokers(); !brokers.empty())
    events_args.insert(events_args.end(),
                       {"--kafka-brokers", brokers, "--kafka-topic", server.kafka_topic()});
  else
    events_args.insert(events_args.end(), {"--data-dir", server.data_dir().string()});
  const auto events = run_kobo(kobo_options().binary, events_args);
  ASSERT_EQ(events.exit_code, 0) << events.output;
  EXPECT_NE(events.output.find("SecretKeyRolled"), std::string::npos);
  EXPECT_NE(events.output.find("\"testSigningKey\":\"kw1."), std::string::npos)
      << "the signing keys are wrapped";
  for (const std::string& key : keys)
    EXPECT_EQ(events.output.find(key), std::string::npos)
        << "the log holds the secret key " << key.substr(0, 12) << "…";
  // Every event written on a key's behalf names the key; the admin's name the admin.
  EXPECT_NE(events.output.find("\"actor\":\"" + rolled["keyId"].get<std::string>() + "\""),
            std::string::npos);
  EXPECT_NE(events.output.find("\"actor\":\"admin\""), std::string::npos);
}

// ---- no harvesting --------------------------------------------------------------------------------

TEST_F(Keys, AnUnknownTenantsAccountNumbersCannotBeFoundByCounting) {
  const Business b = new_business(http());
  std::vector<std::int64_t> serials;
  for (int i = 0; i < 30; ++i) {
    const json w = create_wallet(http(), b.test_key);
    serials.push_back(std::stoll(w["accountNumber"].get<std::string>().substr(0, 9)));
  }
  // The old writer numbered a partition's wallets n * partitions + p + 1: 29 of 29 differences
  // were 6. Random serials repeat no difference, and spread over the serial space.
  std::map<std::int64_t, int> differences;
  for (std::size_t i = 1; i < serials.size(); ++i) ++differences[serials[i] - serials[i - 1]];
  int most = 0;
  for (const auto& [d, n] : differences) most = std::max(most, n);
  EXPECT_LE(most, 2) << "consecutive account numbers repeat a step";
  EXPECT_GE(differences.size(), 25u);
  const auto [lo, hi] = std::minmax_element(serials.begin(), serials.end());
  EXPECT_GT(*hi - *lo, 100'000'000) << "the serials huddle together";
  EXPECT_EQ(std::set<std::int64_t>(serials.begin(), serials.end()).size(), serials.size());
}

class NameEnquiry : public ServerSuite {
 public:
  static void SetUpTestSuite() { start_server({"--name-enquiries-per-minute", "5"}); }
};

TEST_F(NameEnquiry, OwnBankEnquiriesAreLimitedPerKey) {
  const Business b = new_business(http()), other = new_business(http());
  const json w = create_wallet(http(), other.test_key);
  // Another tenant's new wallet is found once the views hold it (a read of its own partition
  // waits for that); an enquiry from another partition does not wait for it.
  get_wallet(http(), other.test_key, w["publicId"].get<std::string>());
  const json ours{{"accountNumber", w["accountNumber"]}, {"bankCode", "099999"}};
  const json elsewhere{{"accountNumber", "0123456784"}, {"bankCode", "044"}};
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(http().post("/v1/transactions/validate-account", ours, b.test_key).status, 201u) << i;
  const HttpResult refused = http().post("/v1/transactions/validate-account", ours, b.test_key);
  expect_error(refused, 429, "Too many requests");
  EXPECT_FALSE(refused.header("retry-after").empty());
  EXPECT_GE(std::stoi(std::string(refused.header("retry-after"))), 1);
  // Another bank's, and another key's, are not counted against it.
  EXPECT_EQ(http().post("/v1/transactions/validate-account", elsewhere, b.test_key).status, 201u);
  EXPECT_EQ(http().post("/v1/transactions/validate-account", ours, other.test_key).status, 201u);
  // Each is logged with the key that asked.
  EXPECT_TRUE(
      wait_until([&] { return server().log_tail(400).find("own-bank name enquiry") != std::string::npos; }));
}

// ---- rate limits -----------------------------------------------------------------------------------

class RateLimits : public ServerSuite {};

// The p-th percentile (0 < p < 100) of `samples_us`, in microseconds.
double percentile(std::vector<double> samples_us, double p) {
  std::sort(samples_us.begin(), samples_us.end());
  const auto at = static_cast<std::size_t>(p / 100.0 * static_cast<double>(samples_us.size() - 1));
  return samples_us.at(at);
}

// A burst from one key against a business whose own read limit the admin set (5 a second): 16
// connections ask for a page of 20 wallets at 500 requests a second in all (100 times the limit),
// 3,040 of them (what a load test sent unrefused before there were limits). The burst gets 429s, and another
// business's key, reading one request at a time throughout, keeps its p99 while the burst runs
// within 2x of its p99 while it does not.
//
// The burst runs in phases of 250 ms, on and off in turn, and each read counts for the phase it
// started and ended in: a machine busy with something else (these two cores are shared) slows
// both sides alike, where a burst measured after a quiet spell would measure the neighbours. The
// burst's pace is bounded because its client runs on the same cores as the server; unbounded, it
// measures the machine, not the limiter. Without the limit the server answers each page, falls
// behind the burst, and the other key's p99 grows many times over. The figures are printed.
TEST_F(RateLimits, ABurstFromOneKeyGets429sWhileAnotherKeysP99StaysWithin2x) {
  constexpr int kConnections = 16, kBurst = 3'040, kPhases = 52;
  constexpr auto kPhase = std::chrono::milliseconds(250);
  constexpr auto kEach = std::chrono::microseconds(32'000);  // per connection: 500 a second in all
  const Business abuser = new_business(http()), other = new_business(http());
  const std::string mine = create_wallet(http(), other.test_key)["publicId"];
  // What the burst asks for costs the server something when it is answered: a page of 20 wallets.
  for (int i = 0; i < 20; ++i) create_wallet(http(), abuser.test_key);
  const json set =
      data_or_throw(admin(http(), bhttp::verb::put, "/v1/admin/businesses/" + abuser.id + "/rate-limits",
                          json{{"readsPerSecond", 5}}),
                    200, "set the abuser's limits");
  EXPECT_EQ(set["readsPerSecond"], 5);
  EXPECT_TRUE(set["writesPerSecond"].is_null());
  std::this_thread::sleep_for(1'100ms);  // each node's limiter reads a business's limits within a second

  // The phase now: odd ones are the burst's. kPhases when they are over.
  const auto t0 = std::chrono::steady_clock::now();
  const auto phase = [&] {
    return static_cast<int>(
        std::min<std::int64_t>(kPhases, (std::chrono::steady_clock::now() - t0) / kPhase));
  };
  std::atomic<int> sent{0}, refused{0}, admitted{0};
  std::vector<std::thread> burst;
  for (int c = 0; c < kConnections; ++c)
    burst.emplace_back([&] {
      HttpClient client("127.0.0.1", server().port());
      auto next = std::chrono::steady_clock::now();
      for (int now = phase(); now < kPhases && sent.load() < kBurst; now = phase()) {
        next = std::max(next, std::chrono::steady_clock::now());
        if (now % 2 == 1 && sent.fetch_add(1) < kBurst) {
          const HttpResult r = client.get("/v1/virtual-accounts?perPage=20", abuser.test_key);
          (r.status == 429 ? refused : admitted).fetch_add(1);
        }
        next += kEach;
        std::this_thread::sleep_until(next);
      }
    });
  HttpClient reader("127.0.0.1", server().port());
  std::vector<double> quiet, bursting;  // microseconds
  for (int began = phase(); began < kPhases; began = phase()) {
    const auto started = std::chrono::steady_clock::now();
    const HttpResult r = reader.get("/v1/virtual-accounts/" + mine, other.test_key);
    const double took_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started).count();
    ASSERT_EQ(r.status, 200u) << r.body;
    if (phase() == began) (began % 2 == 1 ? bursting : quiet).push_back(took_us);
  }
  for (auto& t : burst) t.join();
  ASSERT_FALSE(quiet.empty() || bursting.empty());
  const double p99_quiet = percentile(quiet, 99), p99_bursting = percentile(bursting, 99);
  std::cout << "[rate limits] burst: " << sent.load() << " sent, " << admitted.load() << " admitted, "
            << refused.load() << " refused (429); the other key's p50/p99 without the burst "
            << percentile(quiet, 50) << "/" << p99_quiet << " us over " << quiet.size()
            << " reads, during it " << percentile(bursting, 50) << "/" << p99_bursting << " us over "
            << bursting.size() << " reads\n";
  // The latency ratio, and a burst sent whole, are held in the release build (make test). Under
  // ASan (make asan: a Debug build, every access checked) the instrumentation, not the limiter,
  // sets the latency: one slow read of a few thousand moves the p99 past 2x, and the 16 senders'
  // pace can fall a few requests short of the burst in its 26 phases. The rest holds there too.
#if defined(__SANITIZE_ADDRESS__)  // GCC's name for an ASan build
#define KOBO_UNDER_ASAN
#elif defined(__has_feature)  // clang's
#if __has_feature(address_sanitizer)
#define KOBO_UNDER_ASAN
#endif
#endif
#if defined(KOBO_UNDER_ASAN)
  EXPECT_GE(sent.load(), kBurst * 9 / 10) << "the burst was not sent";
#else
  EXPECT_GE(sent.load(), kBurst) << "the burst was not sent whole";
  EXPECT_LE(p99_bursting, 2 * p99_quiet) << "the other key's p99 more than doubled under the burst";
#endif
  EXPECT_GT(refused.load(), sent.load() * 3 / 4) << "the burst was mostly refused";
}

// ---- a smaller surface ---------------------------------------------------------------------------

TEST(Surface, AWeakAdminKeyAndSaslPlainInClearAreRefusedAtStart) {
  const fs::path dir = fs::temp_directory_path() / ("kobo-surface-" + random_uuid());
  int runs = 0;
  const auto serve = [&](std::vector<std::string> args) {  // each on a data dir of its own
    const std::string data = (dir / std::to_string(++runs)).string();
    args.insert(args.begin(), {"serve", "--listen", "127.0.0.1:0", "--data-dir", data});
    return run_kobo(kobo_options().binary, args);
  };
  const auto weak = serve({"--admin-key", "admin-admin-admin"});
  EXPECT_NE(weak.exit_code, 0);
  EXPECT_NE(weak.output.find("the admin key is too weak"), std::string::npos) << weak.output;
  const auto repeated = serve({"--admin-key", std::string(40, 'a')});
  EXPECT_NE(repeated.exit_code, 0);
  EXPECT_NE(repeated.output.find("distinct"), std::string::npos) << repeated.output;
  const auto plain = serve({"--kafka-brokers", "127.0.0.1:1", "--kafka-sasl-mechanism", "PLAIN",
                            "--kafka-sasl-username", "u", "--kafka-sasl-password", "p"});
  EXPECT_NE(plain.exit_code, 0);
  EXPECT_NE(plain.output.find("SASL PLAIN without TLS"), std::string::npos) << plain.output;
  fs::remove_all(dir);
}

TEST(Surface, TheAdminKeyComesFromAFileAndRefusedDeliveriesNameNoAddressNorQuery) {
  const fs::path key_file = fs::temp_directory_path() / ("kobo-admin-key-" + random_uuid());
  {
    std::ofstream out(key_file);
    out << "file-admin-key-0123456789abcdefghijklmnop\n";
  }
  fs::permissions(key_file, fs::perms::owner_read | fs::perms::owner_write);
  KoboOptions options = kobo_options({"--admin-key-file", key_file.string()});
  options.credentials = kobo::testing::KoboCredentials{};  // none made: this test makes its own
  options.credentials->test_secret_key = "unused";
  KoboProcess server(options);
  HttpClient& http = server.client();
  const HttpResult made =
      http.request(bhttp::verb::post, "/v1/admin/businesses", json{{"name", "From a file"}}.dump(),
                   {{"x-admin-key", "file-admin-key-0123456789abcdefghijklmnop"}});
  const json d = data_or_throw(made, 201, "create business with the file's key");
  const std::string key = d["credentials"]["testSecretKey"], account = d["credentials"]["accountId"];
  EXPECT_EQ(http.request(bhttp::verb::post, "/v1/admin/businesses", json{{"name", "x"}}.dump(),
                         {{"x-admin-key", kTestAdminKey}})
                .status,
            401u);
  // A literal private address is refused when set, in words that name no address.
  const HttpResult literal =
      http.patch("/v1/accounts/" + account, json{{"webhooks", {"http://10.1.2.3/h"}}}, key);
  expect_validation(literal, {"webhooks"});
  EXPECT_EQ(literal.body.find("10.1.2.3"), std::string::npos) << literal.body;
  // A name that resolves to loopback is refused when delivering: the tenant's record names no
  // address, and the node's log shows the URL without its query.
  ASSERT_EQ(
      http.patch("/v1/accounts/" + account, json{{"webhooks", {"http://localhost:9/hook?token=sesame"}}}, key)
          .status,
      200u);
  fund(http, key, create_wallet(http, key), 50'000);
  json attempt;
  ASSERT_TRUE(wait_until([&] {
    const auto list = http.get("/v1/webhook-deliveries", key).json["data"];
    if (list.empty() || list[0]["attempts"].empty()) return false;
    attempt = list[0]["attempts"][0];
    return true;
  })) << server.log_tail();
  const std::string error = attempt.value("error", "");
  EXPECT_TRUE(error.starts_with("refused: ")) << error;
  EXPECT_EQ(error.find("127.0.0.1"), std::string::npos) << error;
  EXPECT_EQ(error.find("::1"), std::string::npos) << error;
  ASSERT_TRUE(
      wait_until([&] { return server.log_tail(400).find("webhook attempt failed") != std::string::npos; }));
  const std::string log = server.log_tail(400);
  EXPECT_EQ(log.find("sesame"), std::string::npos) << "the log shows a URL's query";
  EXPECT_NE(log.find("http://localhost:9/hook?"), std::string::npos) << log;
  fs::remove(key_file);
}

}  // namespace
}  // namespace kobo::it
