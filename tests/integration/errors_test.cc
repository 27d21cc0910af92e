// The edges every endpoint shares, through the real server: authentication, malformed and
// oversized bodies, unknown routes and ids, wrong types and missing fields, and isolation between
// businesses. Every rejected request must leave the state as it was (guarantee 7, docs/architecture.md
// section 6).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/integration/harness.h"

namespace kobo::it {
namespace {

namespace bhttp = boost::beast::http;

class Errors : public ServerSuite {
 protected:
  // Counts that no rejected request may change.
  struct Counts {
    std::int64_t wallets, transactions;
    bool operator==(const Counts&) const = default;
  };
  Counts counts() {
    return {total_count(http(), key(), "/v1/virtual-accounts"),
            total_count(http(), key(), "/v1/transactions")};
  }
};

TEST_F(Errors, HealthzAnswersOkWithoutAKey) {
  HttpResult res = http().get("/healthz");
  EXPECT_EQ(res.status, 200u) << res.body;
  EXPECT_EQ(res.json, json({{"status", "ok"}})) << res.body;
  EXPECT_EQ(http().get("/readyz").status, 200u);
}

TEST_F(Errors, TheLogOnStderrIsJsonLines) {
  create_wallet(http(), key());
  http().get("/v1/nothing", key());
  std::ifstream in(server().log_path());
  ASSERT_TRUE(in) << server().log_path();
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    ++lines;
    json j = json::parse(line, nullptr, false);
    EXPECT_TRUE(j.is_object()) << "log line is not a JSON object: " << line;
  }
  EXPECT_GT(lines, 0) << "kobo serve logged nothing on stderr";
}

TEST_F(Errors, TheMasterKeyFileIsReadableByItsOwnerOnly) {
  // No key is written at start (docs/security.md); the one secret kobo makes when none is given
  // is the master key, and it is 0600.
  EXPECT_FALSE(std::filesystem::exists(server().data_dir() / "credentials.json"));
  const auto perms = std::filesystem::status(server().data_dir() / "master-key").permissions();
  using std::filesystem::perms;
  EXPECT_EQ(perms, perms::owner_read | perms::owner_write) << "master-key should be 0600";
  // Written through a temporary file that the rename consumed (common/file.h).
  for (const auto& entry : std::filesystem::directory_iterator(server().data_dir()))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
}

// Every endpoint of the contract, with a body that would be valid for a real key.
struct Endpoint {
  bhttp::verb method;
  std::string target;
  json body;
};

std::vector<Endpoint> endpoints(const json& wallet, const json& other) {
  return {
      {bhttp::verb::post, "/v1/virtual-accounts", wallet_body(unique_name("auth"))},
      {bhttp::verb::get, "/v1/virtual-accounts", nullptr},
      {bhttp::verb::get, "/v1/virtual-accounts/" + wallet["publicId"].get<std::string>(), nullptr},
      {bhttp::verb::post, "/v1/transactions/transfer",
       transfer_body(wallet["publicId"], other["publicId"], 10'000, unique_name("auth"))},
      {bhttp::verb::get, "/v1/transactions", nullptr},
      {bhttp::verb::get, "/v1/transactions/no-such-ref", nullptr},
      {bhttp::verb::get, "/v1/transactions/no-such-ref/verify", nullptr},
      {bhttp::verb::post, "/v1/sandbox/incoming-transfers", incoming_body(wallet["accountNumber"], 10'000)},
  };
}

HttpResult call(HttpClient& http, const Endpoint& e, const std::optional<std::string>& key_header,
                const std::string& header_name = "x-service-key") {
  kobo::testing::HttpHeaders headers;
  if (key_header) headers.emplace_back(header_name, *key_header);
  std::optional<std::string> body;
  if (!e.body.is_null()) body = e.body.dump();
  return http.request(e.method, e.target, body, headers);
}

TEST_F(Errors, MissingOrUnknownKeyIs401UnauthorizedOnEveryEndpoint) {
  json wallet = create_wallet(http(), key()), other = create_wallet(http(), key());
  fund(http(), key(), wallet, 100'000);
  const Counts before = counts();
  const std::vector<std::pair<std::string, std::optional<std::string>>> keys = {
      {"NoHeader", std::nullopt},
      {"Empty", std::string()},
      {"Garbage", std::string("not-a-key")},
      {"WellFormedButUnknown", std::string("sk_test_") + std::string(40, '0')},
      {"TestPublicKey", server().credentials().test_public_key},
      {"LivePublicKey", server().credentials().live_public_key},
      {"TestKeyWithSuffix", key() + "0"},
      {"TestKeyTruncated", key().substr(0, key().size() - 1)},
  };
  for (const auto& e : endpoints(wallet, other)) {
    for (const auto& [name, k] : keys) {
      SCOPED_TRACE(std::string(bhttp::to_string(e.method)) + " " + e.target + " key " + name);
      expect_error(call(http(), e, k), 401, "Unauthorized");
    }
  }
  EXPECT_EQ(counts(), before);
  EXPECT_EQ(balance_of(http(), key(), wallet["publicId"]), 100'000);
}

TEST_F(Errors, LiveKeyOfANonLiveAccountIs403OnEveryEndpoint) {
  json wallet = create_wallet(http(), key()), other = create_wallet(http(), key());
  fund(http(), key(), wallet, 100'000);
  const Counts before = counts();
  for (const auto& e : endpoints(wallet, other)) {
    SCOPED_TRACE(std::string(bhttp::to_string(e.method)) + " " + e.target);
    expect_error(call(http(), e, server().live_key()), 403, "Live mode is not enabled for this account");
  }
  EXPECT_EQ(counts(), before);
  EXPECT_EQ(balance_of(http(), key(), wallet["publicId"]), 100'000);
}

TEST_F(Errors, TheKeyHeaderNameIsCaseInsensitive) {
  Endpoint list{bhttp::verb::get, "/v1/virtual-accounts", nullptr};
  for (const std::string name : {"X-Service-Key", "X-SERVICE-KEY"}) {
    SCOPED_TRACE(name);
    expect_success(call(http(), list, key(), name), 200, Message::kAbsent, true);
  }
}

TEST_F(Errors, MalformedJsonIs400BadRequestAndChangesNothing) {
  json wallet = create_wallet(http(), key()), other = create_wallet(http(), key());
  const Counts before = counts();
  const std::vector<std::string> bodies = {
      R"({"accountName":)",  "not json",     R"({"accountName": "x",})", R"({"a":1}})",
      "{'single':'quotes'}", "\x01\x02\x03", R"({"amount": 1e99999})",
  };
  for (const std::string target :
       {"/v1/virtual-accounts", "/v1/transactions/transfer", "/v1/sandbox/incoming-transfers"}) {
    for (const auto& body : bodies) {
      SCOPED_TRACE(target + " " + body);
      expect_error(http().request(bhttp::verb::post, target, body, {{"x-service-key", key()}}), 400,
                   "Bad request");
    }
  }
  EXPECT_EQ(counts(), before);
}

TEST_F(Errors, JsonThatIsNotAnObjectIs400) {
  const Counts before = counts();
  for (const std::string body : {"[]", "[1,2]", "\"text\"", "42", "null", "true"}) {
    SCOPED_TRACE(body);
    HttpResult res =
        http().request(bhttp::verb::post, "/v1/virtual-accounts", body, {{"x-service-key", key()}});
    EXPECT_EQ(res.status, 400u) << res.body;
    const std::string message = res.json.is_object() ? res.json["meta"]["error"].value("message", "") : "";
    EXPECT_TRUE(message == "Bad request" || message == "Validation error") << res.body;
  }
  EXPECT_EQ(counts(), before);
}

// A valid create-wallet body padded with JSON whitespace to exactly `size` bytes.
std::string padded_wallet_body(std::size_t size) {
  std::string body = wallet_body(unique_name("big")).dump();
  if (body.size() > size) throw std::logic_error("body already too big");
  body.insert(body.size() - 1, size - body.size(), ' ');
  return body;
}

TEST_F(Errors, BodyOfExactly64KiBIsAccepted) {
  std::string body = padded_wallet_body(64 * 1024);
  ASSERT_EQ(body.size(), 65'536u);
  HttpResult res =
      http().request(bhttp::verb::post, "/v1/virtual-accounts", body, {{"x-service-key", key()}});
  expect_success(res, 201, Message::kPresent);
}

TEST_F(Errors, BodyOneByteOver64KiBIs413AndCreatesNothing) {
  const Counts before = counts();
  std::string body = padded_wallet_body(64 * 1024 + 1);
  ASSERT_EQ(body.size(), 65'537u);
  HttpResult res =
      http().request(bhttp::verb::post, "/v1/virtual-accounts", body, {{"x-service-key", key()}});
  expect_error(res, 413, "Payload too large");
  HttpResult huge = http().request(bhttp::verb::post, "/v1/virtual-accounts", padded_wallet_body(1 << 20),
                                   {{"x-service-key", key()}});
  expect_error(huge, 413, "Payload too large");
  EXPECT_EQ(counts(), before);
  // The server still answers afterwards.
  EXPECT_EQ(http().get("/healthz").status, 200u);
}

TEST_F(Errors, UnknownRoutesAre404RouteNotFound) {
  const std::vector<std::pair<bhttp::verb, std::string>> routes = {
      {bhttp::verb::get, "/"},
      {bhttp::verb::get, "/v1"},
      {bhttp::verb::get, "/v1/nothing-here"},
      {bhttp::verb::get, "/v2/virtual-accounts"},
      {bhttp::verb::post, "/v1/virtual-accounts/vba-x/extra"},
      {bhttp::verb::get, "/v1/transactions/a/b/c"},
  };
  const Counts before = counts();
  for (const auto& [method, target] : routes) {
    SCOPED_TRACE(std::string(bhttp::to_string(method)) + " " + target);
    std::optional<std::string> body;
    if (method != bhttp::verb::get && method != bhttp::verb::delete_) body = "{}";
    expect_error(http().request(method, target, body, {{"x-service-key", key()}}), 404, "Route not found");
  }
  EXPECT_EQ(counts(), before);
}

TEST_F(Errors, AKnownPathWithAnotherMethodIs405WithAllow) {
  const std::vector<std::tuple<bhttp::verb, std::string, std::string>> routes = {
      {bhttp::verb::delete_, "/v1/virtual-accounts", "GET, POST"},
      {bhttp::verb::trace, "/v1/virtual-accounts", "GET, POST"},
      // A concrete path wins over /v1/transactions/{id}, as OpenAPI matches paths.
      {bhttp::verb::put, "/v1/transactions/transfer", "POST"},
      {bhttp::verb::get, "/v1/transactions/bank-transfer", "POST"},
      {bhttp::verb::post, "/v1/transactions", "GET"},
      {bhttp::verb::patch, "/v1/virtual-accounts", "GET, POST"},
      {bhttp::verb::delete_, "/v1/accounts/acc-x", "PATCH"},
  };
  const Counts before = counts();
  for (const auto& [method, target, allow] : routes) {
    SCOPED_TRACE(std::string(bhttp::to_string(method)) + " " + target);
    std::optional<std::string> body;
    if (method != bhttp::verb::get && method != bhttp::verb::delete_ && method != bhttp::verb::trace)
      body = "{}";
    const HttpResult r = http().request(method, target, body, {{"x-service-key", key()}});
    expect_error(r, 405, "Method not allowed");
    EXPECT_EQ(r.header("allow"), allow);
  }
  EXPECT_EQ(counts(), before);
}

TEST_F(Errors, UnknownIdsAre404) {
  const std::vector<std::tuple<std::string, std::string>> rows = {
      {"/v1/virtual-accounts/vba-" + random_uuid(), "Data not found"},
      {"/v1/virtual-accounts/" + random_uuid(), "Data not found"},
      {"/v1/transactions/trx-" + random_uuid(), "Data not found"},
      {"/v1/transactions/424242424242", "Data not found"},
      {"/v1/transactions/" + unique_name("nope"), "Data not found"},
      {"/v1/transactions/" + unique_name("nope") + "/verify", "Transaction not found or does not exist"},
  };
  for (const auto& [target, message] : rows) {
    SCOPED_TRACE(target);
    expect_error(http().get(target, key()), 404, message);
  }
}

// Wrong JSON types for every top-level field of every body, and every required field missing.
// Each is a 400 Validation error naming exactly that field, and changes nothing.
struct BodyField {
  std::string name;
  enum Kind { kString, kInteger, kObject } kind;
  bool required;
};

std::vector<json> wrong_values(BodyField::Kind kind, bool required) {
  std::vector<json> v;
  if (kind != BodyField::kString) v.push_back("text");
  if (kind != BodyField::kInteger) v.push_back(12345);
  if (kind == BodyField::kInteger) v.push_back(12.5);
  v.push_back(true);
  v.push_back(json::array({"a"}));
  if (kind != BodyField::kObject) v.push_back(json::object({{"a", 1}}));
  // class-validator's IsOptional lets null through, so null is wrong only for required fields.
  if (required) v.push_back(nullptr);
  return v;
}

struct BodyCase {
  std::string target;
  std::function<json()> valid;
  std::vector<BodyField> fields;
};

TEST_F(Errors, WrongTypesAndMissingFieldsAre400NamingTheField) {
  json wallet = create_wallet(http(), key()), other = create_wallet(http(), key());
  fund(http(), key(), wallet, 100'000);
  const std::vector<BodyCase> cases = {
      {"/v1/virtual-accounts",
       [] { return wallet_body(unique_name("types")); },
       {{"accountName", BodyField::kString, true},
        {"category", BodyField::kString, true},
        {"currency", BodyField::kString, true},
        {"emailAddress", BodyField::kString, true},
        {"mobile", BodyField::kObject, true}}},
      {"/v1/transactions/transfer",
       [&] { return transfer_body(wallet["publicId"], other["publicId"], 10'000, unique_name("types")); },
       {{"source", BodyField::kString, true},
        {"sourceType", BodyField::kString, true},
        {"destination", BodyField::kString, true},
        {"destinationType", BodyField::kString, true},
        {"amount", BodyField::kInteger, true},
        {"currency", BodyField::kString, true},
        {"narration", BodyField::kString, true},
        {"reference", BodyField::kString, false},
        {"nameEnquiryRef", BodyField::kString, false}}},
      {"/v1/sandbox/incoming-transfers",
       [&] { return incoming_body(wallet["accountNumber"], 10'000); },
       {{"accountNumber", BodyField::kString, true},
        {"amount", BodyField::kInteger, true},
        {"narration", BodyField::kString, false},
        {"senderName", BodyField::kString, false},
        {"senderAccountNumber", BodyField::kString, false},
        {"senderBankCode", BodyField::kString, false}}},
  };
  const Counts before = counts();
  for (const auto& c : cases) {
    for (const auto& field : c.fields) {
      for (const json& value : wrong_values(field.kind, field.required)) {
        SCOPED_TRACE(c.target + " " + field.name + " = " + value.dump());
        json body = c.valid();
        body[field.name] = value;
        expect_validation(http().post(c.target, body, key()), {field.name});
      }
      if (field.required) {
        SCOPED_TRACE(c.target + " without " + field.name);
        json body = c.valid();
        body.erase(field.name);
        expect_validation(http().post(c.target, body, key()), {field.name});
      }
    }
  }
  EXPECT_EQ(counts(), before);
  EXPECT_EQ(balance_of(http(), key(), wallet["publicId"]), 100'000);
  EXPECT_EQ(balance_of(http(), key(), other["publicId"]), 0);
}

TEST_F(Errors, EmptyObjectNamesEveryRequiredField) {
  const Counts before = counts();
  expect_validation(
      http().post("/v1/transactions/transfer", json::object(), key()),
      {"source", "sourceType", "destination", "destinationType", "amount", "currency", "narration"});
  HttpResult wallet = http().post("/v1/virtual-accounts", json::object(), key());
  expect_error(wallet, 400, "Validation error");
  for (const char* f : {"accountName", "category", "currency"}) {
    EXPECT_TRUE(wallet.json["meta"]["error"]["messages"].contains(f)) << f << " in " << wallet.body;
  }
  expect_validation(http().post("/v1/sandbox/incoming-transfers", json::object(), key()),
                    {"accountNumber", "amount"});
  EXPECT_EQ(counts(), before);
}

TEST_F(Errors, AnErrorLeavesTheConnectionUsable) {
  const int before = http().connections_opened();
  expect_error(http().post("/v1/virtual-accounts", json::object({{"accountName", 1}}), key()), 400,
               "Validation error");
  expect_error(http().get("/v1/nothing", key()), 404, "Route not found");
  expect_success(http().get("/v1/virtual-accounts", key()), 200, Message::kAbsent, true);
  EXPECT_EQ(http().connections_opened(), before == 0 ? 1 : before) << "errors keep the connection alive";
}

// Guarantee 6: a key sees only its own business's records. Needs the admin API to make a second
// business; skipped when this server has none.
class Isolation : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    try {
      server_ = std::make_unique<KoboProcess>(kobo_options());
    } catch (const std::exception& e) {
      start_error_ = e.what();
    }
  }
  static void TearDownTestSuite() { server_.reset(); }
  void SetUp() override {
    if (!server_) GTEST_SKIP() << "kobo serve --admin-key did not start: " << start_error_;
  }
  static inline std::unique_ptr<KoboProcess> server_;
  static inline std::string start_error_;
};

TEST_F(Isolation, AnotherBusinessSeesNoneOfTheRecordsAndCannotMoveTheMoney) {
  HttpClient& http = server_->client();
  const std::string mine = server_->test_key();
  HttpResult created = http.request(bhttp::verb::post, "/v1/admin/businesses", json{{"name", "Other"}}.dump(),
                                    {{"x-admin-key", kobo::testing::kTestAdminKey}});
  if (created.status == 404) GTEST_SKIP() << "no admin API: " << created.body;
  expect_success(created, 201, Message::kAny);
  const json& creds = created.json["data"]["credentials"];
  ASSERT_TRUE(creds.is_object()) << created.body;
  for (const char* f : {"testSecretKey", "liveSecretKey", "testPublicKey", "livePublicKey"}) {
    EXPECT_TRUE(creds.contains(f) && creds[f].is_string()) << f;
  }
  const std::string theirs = creds.value("testSecretKey", "");

  json wallet = create_wallet(http, mine), other = create_wallet(http, mine);
  json credit = fund(http, mine, wallet, 500'000);
  const std::string ref = unique_name("iso");
  data_or_throw(http.post("/v1/transactions/transfer",
                          transfer_body(wallet["publicId"], other["publicId"], 20'000, ref), mine),
                200, "transfer");

  expect_error(http.get("/v1/virtual-accounts/" + wallet["publicId"].get<std::string>(), theirs), 404,
               "Data not found");
  expect_error(http.get("/v1/transactions/" + ref, theirs), 404, "Data not found");
  expect_error(http.get("/v1/transactions/" + credit["publicId"].get<std::string>(), theirs), 404,
               "Data not found");
  expect_error(http.get("/v1/transactions/" + ref + "/verify", theirs), 404,
               "Transaction not found or does not exist");
  EXPECT_EQ(total_count(http, theirs, "/v1/virtual-accounts"), 0);
  EXPECT_EQ(total_count(http, theirs, "/v1/transactions"), 0);

  json their_wallet = create_wallet(http, theirs);
  expect_error(
      http.post("/v1/transactions/transfer",
                transfer_body(wallet["publicId"], their_wallet["publicId"], 20'000, unique_name("steal")),
                theirs),
      404, "Source not found");
  fund(http, theirs, their_wallet, 100'000);
  expect_error(
      http.post("/v1/transactions/transfer",
                transfer_body(their_wallet["publicId"], wallet["publicId"], 20'000, unique_name("gift")),
                theirs),
      404, "Destination not found");
  // The same wallet name is free in another business.
  create_wallet(http, theirs, "secondary", wallet["accountName"]);
  EXPECT_EQ(balance_of(http, mine, wallet["publicId"]), 480'000);
  EXPECT_EQ(balance_of(http, theirs, their_wallet["publicId"]), 100'000);
  expect_error(http.get("/v1/virtual-accounts/" + their_wallet["publicId"].get<std::string>(), mine), 404,
               "Data not found");
}

TEST_F(Isolation, AdminApiRejectsAWrongAdminKey) {
  HttpClient& http = server_->client();
  for (const std::optional<std::string>& k :
       {std::optional<std::string>(), std::optional<std::string>("wrong")}) {
    kobo::testing::HttpHeaders headers;
    if (k) headers.emplace_back("x-admin-key", *k);
    HttpResult res =
        http.request(bhttp::verb::post, "/v1/admin/businesses", json{{"name", "Nope"}}.dump(), headers);
    expect_error(res, 401, "Unauthorized");
  }
}

}  // namespace
}  // namespace kobo::it
