#pragma once
// Shared pieces of the integration suites: a fixture base that runs one `kobo serve` per test
// suite, request builders for the endpoints under test, and checkers for the response envelopes
// and the Wallet / Transaction records of the API document (sections 1, 2.1, 2.5-2.7).
//
// Helpers that need a particular answer to go on (create a wallet, fund it) throw
// std::runtime_error with the request and the answer when they do not get it; gtest reports the
// exception as the test's failure. Checkers (expect_*) report through EXPECT_* and go on.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/kobo_process.h"

namespace kobo::it {

using json = nlohmann::json;
using kobo::testing::HttpClient;
using kobo::testing::HttpResult;
using kobo::testing::KoboCredentials;
using kobo::testing::KoboOptions;
using kobo::testing::KoboProcess;

// Options for the kobo binary this build made (compile definition KOBO_BINARY).
KoboOptions kobo_options(std::vector<std::string> extra_args = {});

// One server for all tests of a suite. Tests that need fresh state create their own wallets.
class ServerSuite : public ::testing::Test {
 public:
  static void SetUpTestSuite() { start_server({}); }
  static void TearDownTestSuite();
  // For suites whose server needs flags: `static void SetUpTestSuite() { start_server({...}); }`.
  static void start_server(std::vector<std::string> extra_args);

 protected:
  void SetUp() override;
  static KoboProcess& server() { return *server_; }
  static HttpClient& http() { return server_->client(); }
  static const std::string& key() { return server_->test_key(); }

  static std::unique_ptr<KoboProcess> server_;
  static std::string start_error_;
};

// ---- seeds ------------------------------------------------------------------------------------

// KOBO_TEST_SEED when set, else a fresh random seed; printed either way so a run can be repeated.
std::uint64_t test_seed(std::string_view test_name);

// ---- builders ---------------------------------------------------------------------------------

// A name no other call in any process returns.
std::string unique_name(std::string_view prefix);
// A random UUID v4 (for ids that must not exist).
std::string random_uuid();

// A valid create-wallet body. Secondary wallets carry the e-mail and mobile they require.
json wallet_body(const std::string& name, const std::string& category = "secondary");
json transfer_body(const std::string& source, const std::string& destination, std::int64_t amount,
                   const std::string& reference = "", const std::string& narration = "integration test");
json incoming_body(const std::string& account_number, std::int64_t amount);

// ---- actions (throw when the answer is not the expected one) -----------------------------------

// Throws unless res.status == status; returns res.json["data"].
json data_or_throw(const HttpResult& res, unsigned status, std::string_view what);

json create_wallet(HttpClient& http, const std::string& key, const std::string& category = "secondary",
                   const std::string& name = "");
json fund(HttpClient& http, const std::string& key, const json& wallet, std::int64_t amount);
json get_wallet(HttpClient& http, const std::string& key, const std::string& public_id);
std::int64_t balance_of(HttpClient& http, const std::string& key, const std::string& public_id);
// Every record of a list endpoint (all pages, perPage=100); `query` without the leading '?'.
std::vector<json> list_all(HttpClient& http, const std::string& key, const std::string& path,
                           const std::string& query = "");
std::int64_t total_count(HttpClient& http, const std::string& key, const std::string& path,
                         const std::string& query = "");
// Polls until pred() holds or the timeout passes; returns the last pred().
bool wait_until(const std::function<bool()>& pred,
                std::chrono::milliseconds timeout = std::chrono::milliseconds(10'000));
// Waits for the transaction with this reference to reach status success; returns it.
json wait_settled(HttpClient& http, const std::string& key, const std::string& reference);

// ---- checkers -----------------------------------------------------------------------------------

enum class Message { kPresent, kAbsent, kAny };

// A success envelope: meta.statusCode == status, meta.success true, meta.message per rule,
// meta.pagination iff `paginated` (then data is an array), data present.
void expect_success(const HttpResult& res, unsigned status, Message message, bool paginated = false);
// An error envelope with exactly this status and message, no success and no data.
void expect_error(const HttpResult& res, unsigned status, std::string_view message);
// 400 Validation error whose meta.error.messages has exactly the fields `fields`.
void expect_validation(const HttpResult& res, const std::vector<std::string>& fields);
// Also: messages[field][constraint] == text for each given entry.
void expect_constraint(const HttpResult& res, const std::string& field, const std::string& constraint,
                       const std::string& text);

// Every field of 2.1 with its JSON type; `_id` (24 hex) when with_underscore_id.
void expect_wallet(const json& w, bool with_underscore_id);
// Every field of 2.5 with its JSON type, and the snapshot shapes of 2.6 / meta of 2.7.
void expect_transaction(const json& t);
void expect_timestamp(const json& v, std::string_view what);

bool is_uuid_v4(std::string_view s);
bool is_uuid_v7(std::string_view s);

}  // namespace kobo::it
