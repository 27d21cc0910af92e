#include "tests/integration/harness.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <random>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace kobo::it {

#ifndef KOBO_BINARY
#error "integration tests need -DKOBO_BINARY=<path of the kobo executable>"
#endif

KoboOptions kobo_options(std::vector<std::string> extra_args) {
  KoboOptions options;
  const char* env = std::getenv("KOBO_BINARY");
  options.binary = (env != nullptr && *env != '\0') ? env : KOBO_BINARY;
  options.extra_args = std::move(extra_args);
  return options;
}

std::unique_ptr<KoboProcess> ServerSuite::server_;
std::string ServerSuite::start_error_;

void ServerSuite::start_server(std::vector<std::string> extra_args) {
  start_error_.clear();
  try {
    server_ = std::make_unique<KoboProcess>(kobo_options(std::move(extra_args)));
  } catch (const std::exception& e) {
    start_error_ = e.what();
  }
}

void ServerSuite::TearDownTestSuite() { server_.reset(); }

void ServerSuite::SetUp() {
  if (!server_) GTEST_FAIL() << "kobo serve did not start: " << start_error_;
}

std::uint64_t test_seed(std::string_view test_name) {
  std::uint64_t seed = 0;
  if (const char* env = std::getenv("KOBO_TEST_SEED"); env != nullptr && *env != '\0') {
    seed = std::strtoull(env, nullptr, 10);
  } else {
    seed = (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  }
  std::cout << "[seed] " << test_name << ": KOBO_TEST_SEED=" << seed << std::endl;
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  return seed;
}

// ---- builders ---------------------------------------------------------------------------------

namespace {

std::mt19937_64& rng() {
  thread_local std::mt19937_64 gen{std::random_device{}() ^ (static_cast<std::uint64_t>(::getpid()) << 20) ^
                                   std::hash<std::thread::id>{}(std::this_thread::get_id())};
  return gen;
}

std::string hex(std::uint64_t v, int digits) {
  static const char* d = "0123456789abcdef";
  std::string out(static_cast<std::size_t>(digits), '0');
  for (int i = digits - 1; i >= 0; --i, v >>= 4) out[static_cast<std::size_t>(i)] = d[v & 0xf];
  return out;
}

std::string describe(const HttpResult& res) {
  return std::to_string(res.status) + " " + res.body.substr(0, 2000);
}

}  // namespace

std::string unique_name(std::string_view prefix) {
  static std::atomic<int> counter{0};
  return std::string(prefix) + "-" + std::to_string(++counter) + "-" + hex(rng()(), 8);
}

std::string random_uuid() {
  std::uint64_t a = rng()(), b = rng()();
  std::string h = hex(a, 16) + hex(b, 16);
  h[12] = '4';
  h[16] = "89ab"[b & 3];
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" +
         h.substr(20, 12);
}

json wallet_body(const std::string& name, const std::string& category) {
  json body = {{"accountName", name}, {"category", category}, {"currency", "NGN"}};
  if (category == "secondary") {
    body["emailAddress"] = "owner@example.com";
    body["mobile"] = {{"phoneNumber", "+2348012345678"}, {"isoCode", "NG"}};
  }
  return body;
}

json transfer_body(const std::string& source, const std::string& destination, std::int64_t amount,
                   const std::string& reference, const std::string& narration) {
  json body = {{"source", source},           {"sourceType", "VirtualAccount"},
               {"destination", destination}, {"destinationType", "VirtualAccount"},
               {"amount", amount},           {"currency", "NGN"},
               {"narration", narration}};
  if (!reference.empty()) body["reference"] = reference;
  return body;
}

json incoming_body(const std::string& account_number, std::int64_t amount) {
  return {{"accountNumber", account_number},     {"amount", amount},
          {"narration", "incoming test credit"}, {"senderName", "Ada Obi"},
          {"senderAccountNumber", "0123456784"}, {"senderBankCode", "044"}};
}

// ---- actions ------------------------------------------------------------------------------------

json data_or_throw(const HttpResult& res, unsigned status, std::string_view what) {
  if (res.status != status || !res.json.is_object() || !res.json.contains("data")) {
    throw std::runtime_error(std::string(what) + ": expected " + std::to_string(status) + ", got " +
                             describe(res));
  }
  return res.json["data"];
}

json create_wallet(HttpClient& http, const std::string& key, const std::string& category,
                   const std::string& name) {
  const std::string n = name.empty() ? unique_name("wallet") : name;
  return data_or_throw(http.post("/v1/virtual-accounts", wallet_body(n, category), key), 201,
                       "POST /v1/virtual-accounts " + n);
}

json fund(HttpClient& http, const std::string& key, const json& wallet, std::int64_t amount) {
  return data_or_throw(
      http.post("/v1/sandbox/incoming-transfers", incoming_body(wallet.at("accountNumber"), amount), key),
      201, "POST /v1/sandbox/incoming-transfers");
}

json get_wallet(HttpClient& http, const std::string& key, const std::string& public_id) {
  return data_or_throw(http.get("/v1/virtual-accounts/" + public_id, key), 200, "GET wallet " + public_id);
}

std::int64_t balance_of(HttpClient& http, const std::string& key, const std::string& public_id) {
  json w = get_wallet(http, key, public_id);
  if (!w.contains("balance") || !w["balance"].is_number_integer()) {
    throw std::runtime_error("wallet " + public_id + " has no integer balance: " + w.dump());
  }
  return w["balance"].get<std::int64_t>();
}

std::vector<json> list_all(HttpClient& http, const std::string& key, const std::string& path,
                           const std::string& query) {
  std::vector<json> out;
  for (int page = 1;; ++page) {
    std::string target =
        path + "?" + (query.empty() ? "" : query + "&") + "perPage=100&page=" + std::to_string(page);
    HttpResult res = http.get(target, key);
    json data = data_or_throw(res, 200, "GET " + target);
    if (!data.is_array()) throw std::runtime_error("GET " + target + ": data is not an array");
    for (auto& item : data) out.push_back(item);
    const std::int64_t total = res.json["meta"]["pagination"]["totalCount"].get<std::int64_t>();
    if (data.empty() || static_cast<std::int64_t>(out.size()) >= total) break;
    if (page > 10'000) throw std::runtime_error("GET " + path + ": pagination does not end");
  }
  return out;
}

std::int64_t total_count(HttpClient& http, const std::string& key, const std::string& path,
                         const std::string& query) {
  std::string target = path + "?" + (query.empty() ? "" : query + "&") + "perPage=1";
  HttpResult res = http.get(target, key);
  data_or_throw(res, 200, "GET " + target);
  const json& p = res.json["meta"]["pagination"];
  if (!p.is_object() || !p["totalCount"].is_number_integer()) {
    throw std::runtime_error("GET " + target + ": no meta.pagination.totalCount: " + res.body);
  }
  return p["totalCount"].get<std::int64_t>();
}

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

json wait_settled(HttpClient& http, const std::string& key, const std::string& reference) {
  json last;
  bool ok = wait_until([&] {
    HttpResult res = http.get("/v1/transactions/" + reference, key);
    if (res.status != 200) return false;
    last = res.json["data"];
    return last.value("status", "") == "success";
  });
  if (!ok) throw std::runtime_error("transaction " + reference + " did not settle; last: " + last.dump());
  return last;
}

// ---- checkers -------------------------------------------------------------------------------------

namespace {

// obj[k] for a const object without the undefined behaviour of a missing key: null instead.
const json& at(const json& obj, const char* k) {
  static const json null_value;
  if (!obj.is_object()) return null_value;
  auto it = obj.find(k);
  return it == obj.end() ? null_value : *it;
}

}  // namespace

void expect_success(const HttpResult& res, unsigned status, Message message, bool paginated) {
  SCOPED_TRACE("response: " + describe(res));
  EXPECT_EQ(res.status, status);
  ASSERT_TRUE(res.json.is_object()) << "body is not a JSON object";
  EXPECT_NE(res.header("content-type").find("application/json"), std::string::npos)
      << "content-type: " << res.header("content-type");
  ASSERT_TRUE(res.json.contains("meta") && res.json["meta"].is_object());
  const json& meta = res.json["meta"];
  EXPECT_EQ(meta.value("statusCode", json()), json(status));
  EXPECT_EQ(meta.value("success", json()), json(true));
  EXPECT_FALSE(meta.contains("error"));
  switch (message) {
    case Message::kPresent:
      EXPECT_TRUE(meta.contains("message") && meta["message"].is_string() &&
                  !meta["message"].get<std::string>().empty())
          << "meta.message should be a non-empty string";
      break;
    case Message::kAbsent:
      EXPECT_FALSE(meta.contains("message")) << "meta.message should be absent";
      break;
    case Message::kAny:
      if (meta.contains("message")) {
        EXPECT_TRUE(meta["message"].is_string());
      }
      break;
  }
  ASSERT_TRUE(res.json.contains("data"));
  if (paginated) {
    EXPECT_TRUE(res.json["data"].is_array());
    ASSERT_TRUE(meta.contains("pagination") && meta["pagination"].is_object());
    const json& p = meta["pagination"];
    for (const char* f : {"totalCount", "perPage", "current"}) {
      EXPECT_TRUE(p.contains(f) && p[f].is_number_integer()) << "meta.pagination." << f;
    }
    if (p.contains("totalCount") && p["totalCount"].is_number_integer()) {
      EXPECT_GE(p["totalCount"].get<long long>(), 0);
    }
  } else {
    EXPECT_FALSE(meta.contains("pagination"));
  }
}

void expect_error(const HttpResult& res, unsigned status, std::string_view message) {
  SCOPED_TRACE("response: " + describe(res));
  EXPECT_EQ(res.status, status);
  ASSERT_TRUE(res.json.is_object()) << "body is not a JSON object";
  EXPECT_NE(res.header("content-type").find("application/json"), std::string::npos)
      << "content-type: " << res.header("content-type");
  EXPECT_FALSE(res.json.contains("data")) << "an error has no data";
  ASSERT_TRUE(res.json.contains("meta") && res.json["meta"].is_object());
  const json& meta = res.json["meta"];
  EXPECT_FALSE(meta.contains("success")) << "an error has no meta.success";
  EXPECT_EQ(meta.value("statusCode", json()), json(status));
  ASSERT_TRUE(meta.contains("error") && meta["error"].is_object());
  const json& err = meta["error"];
  EXPECT_EQ(err.value("statusCode", json()), json(status));
  EXPECT_EQ(err.value("message", json()), json(std::string(message)));
  if (message != "Validation error") {
    EXPECT_FALSE(err.contains("messages")) << "only validation errors carry meta.error.messages";
  }
}

void expect_validation(const HttpResult& res, const std::vector<std::string>& fields) {
  expect_error(res, 400, "Validation error");
  SCOPED_TRACE("response: " + describe(res));
  const json& messages = at(at(at(res.json, "meta"), "error"), "messages");
  ASSERT_TRUE(messages.is_object()) << "meta.error.messages should be an object";
  std::vector<std::string> got;
  for (const auto& [field, constraints] : messages.items()) {
    got.push_back(field);
    EXPECT_TRUE(constraints.is_object() && !constraints.empty())
        << field << " should map constraints to texts";
    for (const auto& [name, text] : constraints.items()) {
      EXPECT_TRUE(text.is_string() && !text.get<std::string>().empty()) << field << "." << name;
    }
  }
  std::vector<std::string> want = fields;
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want) << "fields named in meta.error.messages";
}

void expect_constraint(const HttpResult& res, const std::string& field, const std::string& constraint,
                       const std::string& text) {
  const json& messages = at(at(at(res.json, "meta"), "error"), "messages");
  EXPECT_EQ(at(at(messages, field.c_str()), constraint.c_str()), json(text))
      << "meta.error.messages." << field << "." << constraint << " in " << res.body;
}

void expect_timestamp(const json& v, std::string_view what) {
  static const std::regex re(R"(^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$)");
  EXPECT_TRUE(v.is_string() && std::regex_match(v.get<std::string>(), re))
      << what << " should be a timestamp like 2026-11-21T07:02:00.000Z, is " << v.dump();
}

bool is_uuid_v4(std::string_view s) {
  static const std::regex re(R"(^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$)");
  return std::regex_match(std::string(s), re);
}

bool is_uuid_v7(std::string_view s) {
  static const std::regex re(R"(^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$)");
  return std::regex_match(std::string(s), re);
}

namespace {

enum class Kind { kString, kInteger, kBool, kObject, kArray, kStringOrNull, kTimestamp, kTimestampOrNull };

struct FieldRule {
  const char* name;
  Kind kind;
};

void expect_fields(const json& obj, std::string_view what, std::initializer_list<FieldRule> rules) {
  ASSERT_TRUE(obj.is_object()) << what << " should be an object, is " << obj.dump();
  for (const auto& rule : rules) {
    const std::string where = std::string(what) + "." + rule.name;
    if (!obj.contains(rule.name)) {
      ADD_FAILURE() << where << " is missing in " << obj.dump();
      continue;
    }
    const json& v = obj[rule.name];
    switch (rule.kind) {
      case Kind::kString:
        EXPECT_TRUE(v.is_string()) << where << " should be a string, is " << v.dump();
        break;
      case Kind::kInteger:
        EXPECT_TRUE(v.is_number_integer()) << where << " should be an integer, is " << v.dump();
        break;
      case Kind::kBool:
        EXPECT_TRUE(v.is_boolean()) << where << " should be a boolean, is " << v.dump();
        break;
      case Kind::kObject:
        EXPECT_TRUE(v.is_object()) << where << " should be an object, is " << v.dump();
        break;
      case Kind::kArray:
        EXPECT_TRUE(v.is_array()) << where << " should be an array, is " << v.dump();
        break;
      case Kind::kStringOrNull:
        EXPECT_TRUE(v.is_string() || v.is_null()) << where << " should be a string or null, is " << v.dump();
        break;
      case Kind::kTimestamp:
        expect_timestamp(v, where);
        break;
      case Kind::kTimestampOrNull:
        if (!v.is_null()) expect_timestamp(v, where);
        break;
    }
  }
}

bool has_prefix(const json& v, std::string_view prefix) {
  return v.is_string() && v.get<std::string>().rfind(prefix, 0) == 0;
}

void expect_public_id(const json& v, std::string_view prefix, std::string_view what) {
  // Transactions' ids are time-ordered (docs/events.md, "Time-ordered transaction ids").
  const auto is_uuid = prefix == "trx-" ? is_uuid_v7 : is_uuid_v4;
  EXPECT_TRUE(has_prefix(v, prefix) && is_uuid(v.get<std::string>().substr(prefix.size())))
      << what << " should be " << prefix << (prefix == "trx-" ? "<uuid7>" : "<uuid4>") << ", is " << v.dump();
}

void expect_wallet_snapshot(const json& s, std::string_view what) {
  expect_fields(s, what,
                {{"id", Kind::kInteger},
                 {"publicId", Kind::kString},
                 {"bankName", Kind::kString},
                 {"bankCode", Kind::kString},
                 {"accountName", Kind::kString},
                 {"accountNumber", Kind::kString},
                 {"currency", Kind::kString},
                 {"reference", Kind::kStringOrNull},
                 {"processor", Kind::kString}});
  if (s.is_object() && s.contains("publicId"))
    expect_public_id(at(s, "publicId"), "vba-", std::string(what) + ".publicId");
}

void expect_external_snapshot(const json& s, std::string_view what) {
  expect_fields(s, what,
                {{"processor", Kind::kString},
                 {"type", Kind::kString},
                 {"publicId", Kind::kString},
                 {"createdAt", Kind::kTimestamp},
                 {"updatedAt", Kind::kTimestamp},
                 {"channel", Kind::kString},
                 {"reference", Kind::kString},
                 {"sessionId", Kind::kString},
                 {"bankName", Kind::kString},
                 {"bankCode", Kind::kString},
                 {"nibssBankCode", Kind::kString},
                 {"accountName", Kind::kString},
                 {"accountNumber", Kind::kString},
                 {"currency", Kind::kString},
                 {"live", Kind::kBool}});
  if (!s.is_object()) return;
  EXPECT_TRUE(s.contains("id") && (at(s, "id").is_number_integer() || at(s, "id").is_string()))
      << what << ".id should be present: " << s.dump();
  if (s.contains("publicId")) expect_public_id(at(s, "publicId"), "src-", std::string(what) + ".publicId");
}

}  // namespace

void expect_wallet(const json& w, bool with_underscore_id) {
  expect_fields(w, "wallet",
                {{"publicId", Kind::kString},
                 {"auth", Kind::kString},
                 {"account", Kind::kString},
                 {"accountName", Kind::kString},
                 {"accountNumber", Kind::kString},
                 {"bankName", Kind::kString},
                 {"bankCode", Kind::kString},
                 {"live", Kind::kBool},
                 {"isFavourite", Kind::kBool},
                 {"processor", Kind::kString},
                 {"category", Kind::kString},
                 {"id", Kind::kInteger},
                 {"balance", Kind::kInteger},
                 {"currency", Kind::kString},
                 {"createdAt", Kind::kTimestamp},
                 {"updatedAt", Kind::kTimestamp},
                 {"lastUpdated", Kind::kTimestamp}});
  if (!w.is_object()) return;
  if (w.contains("publicId")) expect_public_id(at(w, "publicId"), "vba-", "wallet.publicId");
  static const std::regex ten_digits(R"(^\d{10}$)");
  if (w.contains("accountNumber") && at(w, "accountNumber").is_string()) {
    EXPECT_TRUE(std::regex_match(at(w, "accountNumber").get<std::string>(), ten_digits))
        << at(w, "accountNumber");
  }
  EXPECT_EQ(w.value("currency", json()), json("NGN"));
  EXPECT_TRUE(w.value("category", json()) == json("primary") ||
              w.value("category", json()) == json("secondary"))
      << "category " << w.value("category", json());
  if (w.contains("id") && at(w, "id").is_number_integer()) {
    EXPECT_GT(at(w, "id").get<long long>(), 0);
  }
  if (w.contains("balance") && at(w, "balance").is_number_integer()) {
    EXPECT_GE(at(w, "balance").get<long long>(), 0);
  }
  if (with_underscore_id) {
    static const std::regex hex24(R"(^[0-9a-f]{24}$)");
    EXPECT_TRUE(w.contains("_id") && at(w, "_id").is_string() &&
                std::regex_match(at(w, "_id").get<std::string>(), hex24))
        << "wallet._id should be 24 lowercase hex characters: " << w.value("_id", json());
  }
}

void expect_transaction(const json& t) {
  expect_fields(t, "transaction",
                {{"_id", Kind::kString},
                 {"id", Kind::kInteger},
                 {"publicId", Kind::kString},
                 {"auth", Kind::kString},
                 {"account", Kind::kString},
                 {"deletedAt", Kind::kTimestampOrNull},
                 {"tags", Kind::kArray},
                 {"currency", Kind::kString},
                 {"entry", Kind::kString},
                 {"live", Kind::kBool},
                 {"source", Kind::kString},
                 {"sourceType", Kind::kString},
                 {"sourceData", Kind::kObject},
                 {"destination", Kind::kString},
                 {"destinationType", Kind::kString},
                 {"destinationData", Kind::kObject},
                 {"amount", Kind::kInteger},
                 {"balance", Kind::kInteger},
                 {"fee", Kind::kInteger},
                 {"feeReference", Kind::kStringOrNull},
                 {"actualAmount", Kind::kInteger},
                 {"clientTransaction", Kind::kObject},
                 {"narration", Kind::kString},
                 {"reference", Kind::kString},
                 {"debitReference", Kind::kStringOrNull},
                 {"tRef", Kind::kString},
                 {"linkRef", Kind::kString},
                 {"status", Kind::kString},
                 {"processor", Kind::kString},
                 {"currencyPair", Kind::kString},
                 {"batchId", Kind::kStringOrNull},
                 {"metadata", Kind::kObject},
                 {"meta", Kind::kObject},
                 {"createdAt", Kind::kTimestamp},
                 {"updatedAt", Kind::kTimestamp}});
  if (!t.is_object()) return;
  static const std::regex hex24(R"(^[0-9a-f]{24}$)");
  if (t.contains("_id") && at(t, "_id").is_string()) {
    EXPECT_TRUE(std::regex_match(at(t, "_id").get<std::string>(), hex24)) << at(t, "_id");
  }
  if (t.contains("publicId")) expect_public_id(at(t, "publicId"), "trx-", "transaction.publicId");
  if (t.contains("requestSrc")) {
    EXPECT_TRUE(at(t, "requestSrc").is_string()) << "requestSrc " << at(t, "requestSrc");
  }
  EXPECT_EQ(t.value("currency", json()), json("NGN"));
  const std::string entry = t.value("entry", "");
  EXPECT_TRUE(entry == "credit" || entry == "debit") << "entry " << entry;
  const std::string status = t.value("status", "");
  EXPECT_TRUE(status == "pending" || status == "processing" || status == "success" || status == "failed")
      << "status " << status;
  if (t.value("feeReference", json()).is_string()) {
    EXPECT_TRUE(has_prefix(at(t, "feeReference"), "fee-")) << at(t, "feeReference");
  }
  if (t.contains("amount") && at(t, "amount").is_number_integer()) {
    EXPECT_GT(at(t, "amount").get<long long>(), 0);
  }
  if (t.contains("balance") && at(t, "balance").is_number_integer()) {
    EXPECT_GE(at(t, "balance").get<long long>(), 0);
  }
  if (t.contains("clientTransaction") && at(t, "clientTransaction").is_object()) {
    expect_fields(at(t, "clientTransaction"), "transaction.clientTransaction",
                  {{"fee", Kind::kInteger}, {"actualAmount", Kind::kInteger}});
  }

  const std::string source_type = t.value("sourceType", "");
  if (source_type == "VirtualAccount") {
    expect_public_id(at(t, "source"), "vba-", "transaction.source");
    expect_wallet_snapshot(at(t, "sourceData"), "transaction.sourceData");
    EXPECT_EQ(at(t, "sourceData").value("publicId", json()), at(t, "source"));
  } else if (source_type == "External") {
    expect_public_id(at(t, "source"), "src-", "transaction.source");
    expect_external_snapshot(at(t, "sourceData"), "transaction.sourceData");
    EXPECT_EQ(at(t, "sourceData").value("publicId", json()), at(t, "source"));
  } else {
    ADD_FAILURE() << "transaction.sourceType " << t.value("sourceType", json());
  }
  const std::string destination_type = t.value("destinationType", "");
  if (destination_type == "VirtualAccount") {
    expect_public_id(at(t, "destination"), "vba-", "transaction.destination");
    expect_wallet_snapshot(at(t, "destinationData"), "transaction.destinationData");
    EXPECT_EQ(at(t, "destinationData").value("publicId", json()), at(t, "destination"));
  } else if (destination_type != "BankAccount") {
    ADD_FAILURE() << "transaction.destinationType " << t.value("destinationType", json());
  }

  if (!t.contains("meta") || !at(t, "meta").is_object()) return;
  const json& meta = at(t, "meta");
  if (meta.contains("isThirdParty")) {
    EXPECT_TRUE(at(meta, "isThirdParty").is_boolean()) << "meta.isThirdParty";
  }
  if (meta.contains("rate")) {
    expect_fields(at(meta, "rate"), "transaction.meta.rate",
                  {{"rateId", Kind::kInteger},
                   {"sourceCurrency", Kind::kString},
                   {"destinationCurrency", Kind::kString}});
    if (at(meta, "rate").is_object()) {
      EXPECT_TRUE(at(meta, "rate").value("rate", json()).is_number()) << "meta.rate.rate";
      EXPECT_TRUE(at(meta, "rate").value("convertedAmount", json()).is_number())
          << "meta.rate.convertedAmount";
    }
  }
  const bool wallet_transfer = source_type == "VirtualAccount" && destination_type == "VirtualAccount";
  if (wallet_transfer) {
    EXPECT_EQ(meta.value("isThirdParty", json()), json(false)) << "meta.isThirdParty of a wallet transfer";
    EXPECT_EQ(t.value("fee", json()), json(0)) << "wallet transfers are free";
    EXPECT_EQ(t.value("actualAmount", json()), t.value("amount", json()));
  }
  if (wallet_transfer || meta.contains("credit")) {
    ASSERT_TRUE(meta.contains("credit")) << "meta.credit missing: " << meta.dump();
    const json& credit = at(meta, "credit");
    expect_fields(credit, "transaction.meta.credit",
                  {{"source", Kind::kString},
                   {"sourceType", Kind::kString},
                   {"sourceData", Kind::kObject},
                   {"destination", Kind::kString},
                   {"destinationType", Kind::kString},
                   {"destinationData", Kind::kObject},
                   {"amount", Kind::kInteger},
                   {"currency", Kind::kString},
                   {"actualAmount", Kind::kInteger},
                   {"fee", Kind::kInteger},
                   {"narration", Kind::kString},
                   {"balance", Kind::kInteger}});
    if (source_type == "External") {
      expect_fields(credit, "transaction.meta.credit (incoming)",
                    {{"auth", Kind::kString}, {"account", Kind::kString}, {"linkRef", Kind::kString}});
    }
  }
  if (source_type == "External") {
    ASSERT_TRUE(meta.contains("clientResponse")) << "meta.clientResponse missing on an incoming credit";
    const json& cr = at(meta, "clientResponse");
    expect_fields(cr, "transaction.meta.clientResponse",
                  {{"message", Kind::kString},
                   {"tranDateTime", Kind::kString},
                   {"currency", Kind::kString},
                   {"processor", Kind::kString},
                   {"narration", Kind::kString},
                   {"reference", Kind::kString},
                   {"type", Kind::kString},
                   {"authorization", Kind::kObject},
                   {"status", Kind::kString}});
    if (cr.is_object()) {
      EXPECT_TRUE(cr.value("amount", json()).is_number()) << "meta.clientResponse.amount";
      if (cr.contains("authorization")) {
        expect_fields(at(cr, "authorization"), "transaction.meta.clientResponse.authorization",
                      {{"channel", Kind::kString},
                       {"reference", Kind::kString},
                       {"sessionId", Kind::kString},
                       {"bankName", Kind::kString},
                       {"bankCode", Kind::kString},
                       {"nibssBankCode", Kind::kString},
                       {"accountName", Kind::kString},
                       {"accountNumber", Kind::kString}});
      }
    }
  }
}

}  // namespace kobo::it
