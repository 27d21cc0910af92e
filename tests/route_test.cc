// The route wrapper (query-api/route.h): every route of the API takes its steps through it, so a
// hook point reaches every route of its kind, once, with no route's own code involved. Runs the
// API in process (as `kobo serve` wires it) with hooks that record and answer.

#include "query-api/route.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "events/memory_log.h"
#include "query-api/api.h"
#include "query-api/credentials.h"
#include "query-api/envelope.h"
#include "query-api/rate_limit.h"
#include "webhooks/webhooks.h"

namespace kobo {
namespace {

namespace fs = std::filesystem;
namespace bhttp = boost::beast::http;
using namespace std::chrono_literals;

// Hooks that do what the features they stand for will do, in the simplest way.
class RecordingHooks final : public api::EdgeHooks {
 public:
  std::optional<http::Response> admit(const api::RouteTraits& route, const http::Request& request) override {
    std::lock_guard lock(mu);
    admitted.insert(request.path);
    kinds.insert(route.kind);
    if (request.header("x-rate-limited") == "yes") return http::error(429, "Too many requests");
    return std::nullopt;
  }
  bool forward(const api::Exchange& x, http::Responder& respond) override {
    {
      std::lock_guard lock(mu);
      forwarded_partitions.insert(x.caller.partition.value);
    }
    if (x.request.header("x-forward") != "yes") return false;
    // The owner's answer, as it came: its status, its headers, its body.
    http::Response foreign{299, "owner's own bytes", "text/plain", {{"X-Owner", "node-2"}}};
    respond(std::move(foreign));
    return true;
  }
  void command_answered(const api::Exchange&, api::LogPosition at, http::Response& answer) override {
    answer.headers.emplace_back("Kobo-Position",
                                std::to_string(at.partition.value) + ":" + std::to_string(at.seq.value));
  }
  void before_read(const api::Exchange& x, http::Responder respond,
                   std::function<void(http::Responder)> then) override {
    if (x.request.header("kobo-position") == "ahead") return respond(http::error(503, "Service unavailable"));
    then(std::move(respond));
  }
  void read_answered(const api::Exchange&, http::Response& answer) override {
    answer.headers.emplace_back("Kobo-Position", "read");
  }

  std::mutex mu;
  std::set<std::string> admitted;
  std::set<api::RouteKind> kinds;
  std::set<std::uint32_t> forwarded_partitions;
};

class RouteWrapper : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kobo-route-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    LedgerOptions o;
    o.config.partitions = kPartitions;
    ledger_ = std::make_unique<Ledger>(log_, o);
    ASSERT_TRUE(ledger_->start().ok());
    auto views = Views::open((dir_ / "views").string(), kPartitions);
    ASSERT_TRUE(views.ok()) << views.status().message();
    views_ = std::move(views).value();
    projector_ = std::make_unique<Projector>(log_, *views_);
    ASSERT_TRUE(projector_->start().ok());
    auto master = LocalMasterKey::make(std::string(64, 'a'));
    ASSERT_TRUE(master.ok()) << master.status().message();
    master_ = std::move(master).value();
    secrets_ = std::make_unique<WebhookSecrets>(*master_);
    auto webhooks =
        Webhooks::open((dir_ / "webhooks").string(), log_, *views_, *projector_, *master_, *secrets_);
    ASSERT_TRUE(webhooks.ok()) << webhooks.status().message();
    webhooks_ = std::move(webhooks).value();

    creds_ = new_credentials();
    auto business = create_business_command(creds_, "Routes", master_.get());
    ASSERT_TRUE(business.ok()) << business.status().message();
    ASSERT_TRUE(ledger_->execute(std::move(business).value()).ok());
    for (std::uint32_t p = 0; p < kPartitions; ++p)
      ASSERT_TRUE(projector_->wait_applied(Partition(p), ledger_->durable_seq(Partition(p)), 5s));

    ApiOptions ao;
    ao.admin_key = "route-test-admin-key";
    ao.webhooks = webhooks_.get();
    ao.webhook_secrets = secrets_.get();
    ao.master_key = master_.get();
    ao.hooks = &hooks_;
    api_ = std::make_unique<Api>(*ledger_, *views_, *projector_, ao);
    api_->add_routes(router_);
  }
  void TearDown() override {
    api_.reset();
    webhooks_.reset();
    secrets_.reset();
    master_.reset();
    projector_.reset();
    views_.reset();
    ledger_.reset();
    fs::remove_all(dir_);
  }

  http::Response call(bhttp::verb method, const std::string& path, const std::string& body = "",
                      std::vector<std::pair<std::string, std::string>> headers = {}) {
    http::Request req;
    req.method = method;
    req.path = path;
    req.body = body;
    req.headers.set("x-service-key", creds_.test_secret_key);
    req.headers.set("x-admin-key", "route-test-admin-key");
    for (const auto& [name, value] : headers) req.headers.set(name, value);
    auto answered = std::make_shared<std::promise<http::Response>>();
    auto answer = answered->get_future();
    dispatch_to_->dispatch(
        std::move(req), [answered](http::Response r) { answered->set_value(http::rendered(std::move(r))); });
    if (answer.wait_for(10s) != std::future_status::ready) {
      ADD_FAILURE() << path << " was not answered";
      return http::Response{0, "", "", {}};
    }
    return answer.get();
  }

  // Each route of the table with its parameters filled in.
  static std::string concrete(std::string pattern) {
    for (std::size_t at; (at = pattern.find('{')) != std::string::npos;)
      pattern.replace(at, pattern.find('}', at) - at + 1, "x-1");
    return pattern;
  }
  static bool operational(const std::string& pattern) {
    return pattern == "/healthz" || pattern == "/readyz" || pattern == "/metrics";
  }
  static std::string header(const http::Response& r, std::string_view name) {
    for (const auto& [n, v] : r.headers)
      if (n == name) return v;
    return "";
  }

  static constexpr std::uint32_t kPartitions = 2;
  fs::path dir_;
  MemoryLog log_{kPartitions};
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<Views> views_;
  std::unique_ptr<Projector> projector_;
  std::unique_ptr<LocalMasterKey> master_;
  std::unique_ptr<WebhookSecrets> secrets_;
  std::unique_ptr<Webhooks> webhooks_;
  RecordingHooks hooks_;
  std::unique_ptr<Api> api_;
  http::Router router_;
  http::Router* dispatch_to_ = &router_;  // what call() asks
  Credentials creds_;
};

TEST_F(RouteWrapper, AdmitsEveryRouteButTheOperationalOnesBeforeAnyWork) {
  std::size_t routes = 0;
  for (const auto& r : router_.routes()) {
    const std::string path = concrete(r.pattern);
    // A body that every route would refuse, and a key nobody has: admission answers first.
    const http::Response answer = call(r.method, path, "{not json", {{"x-rate-limited", "yes"}});
    if (operational(r.pattern)) {
      EXPECT_NE(answer.status, 429u) << r.pattern << " is operational: no admission";
      continue;
    }
    ++routes;
    EXPECT_EQ(answer.status, 429u) << bhttp::to_string(r.method) << " " << r.pattern << ": " << answer.body;
    EXPECT_EQ(answer.body, http::error(429, "Too many requests").body);
  }
  EXPECT_GE(routes, 30u) << "the route table looks short";
  EXPECT_EQ(hooks_.kinds,
            (std::set<api::RouteKind>{api::RouteKind::command, api::RouteKind::read, api::RouteKind::admin}));
}

TEST_F(RouteWrapper, ForwardsACommandWithTheCallersPartitionBeforeItsBodyIsRead) {
  // A body that would be 400 here: the owner's answer comes back whole instead.
  const http::Response answer =
      call(bhttp::verb::post, "/v1/virtual-accounts", "{not json", {{"x-forward", "yes"}});
  EXPECT_EQ(answer.status, 299u);
  EXPECT_EQ(answer.body, "owner's own bytes");
  EXPECT_EQ(answer.content_type, "text/plain");
  EXPECT_EQ(header(answer, "X-Owner"), "node-2");
  EXPECT_EQ(hooks_.forwarded_partitions,
            std::set<std::uint32_t>{ledger_->partition_of(creds_.business_id).value});

  // Reads and the admin's command are not forwarded (a read is answered by any node).
  hooks_.forwarded_partitions.clear();
  EXPECT_EQ(call(bhttp::verb::get, "/v1/virtual-accounts", "", {{"x-forward", "yes"}}).status, 200u);
  EXPECT_EQ(
      call(bhttp::verb::post, "/v1/admin/businesses", R"({"name":"Other"})", {{"x-forward", "yes"}}).status,
      201u);
  EXPECT_TRUE(hooks_.forwarded_partitions.empty());
}

TEST_F(RouteWrapper, GivesEveryAnswerAfterASubmitItsPosition) {
  const std::string wallet = R"({"accountName":"Ada","category":"primary","currency":"NGN"})";
  const http::Response created = call(bhttp::verb::post, "/v1/virtual-accounts", wallet);
  ASSERT_EQ(created.status, 201u) << created.body;
  const std::string partition = std::to_string(ledger_->partition_of(creds_.business_id).value);
  const std::string position = header(created, "Kobo-Position");
  EXPECT_EQ(position.substr(0, partition.size() + 1), partition + ":") << position;
  // A rejection after the submit has one too; a refusal before it (validation) has none.
  const http::Response taken = call(bhttp::verb::post, "/v1/virtual-accounts", wallet);
  EXPECT_EQ(taken.status, 400u) << taken.body;
  EXPECT_FALSE(header(taken, "Kobo-Position").empty());
  EXPECT_TRUE(header(call(bhttp::verb::post, "/v1/virtual-accounts", "{}"), "Kobo-Position").empty());
}

TEST_F(RouteWrapper, WaitsForTheRequestsPositionsBeforeARead) {
  const http::Response ahead = call(bhttp::verb::get, "/v1/transactions", "", {{"kobo-position", "ahead"}});
  EXPECT_EQ(ahead.status, 503u);
  const http::Response read = call(bhttp::verb::get, "/v1/transactions");
  EXPECT_EQ(read.status, 200u) << read.body;
  EXPECT_EQ(header(read, "Kobo-Position"), "read");
  const http::Response one = call(bhttp::verb::get, "/v1/virtual-accounts/vba-none");
  EXPECT_EQ(one.status, 404u);
  EXPECT_EQ(header(one, "Kobo-Position"), "read");
}

}  // namespace
}  // namespace kobo

namespace kobo {
namespace {

// Per-key rate limits (query-api/rate_limit.h): a key over its writes' limit is answered 429 with
// Retry-After and the RateLimit fields, before any work; another key, and the same key's reads,
// are not.
TEST_F(RouteWrapper, RateLimitsAnswer429PerKeyAndKind) {
  ApiOptions ao;
  ao.admin_key = "route-test-admin-key";
  ao.webhooks = webhooks_.get();
  ao.webhook_secrets = secrets_.get();
  ao.master_key = master_.get();
  ao.rate_limit_writes = 2;
  ao.rate_limit_reads = 1'000;
  Api limited(*ledger_, *views_, *projector_, ao);
  http::Router router;
  limited.add_routes(router);
  dispatch_to_ = &router;
  const auto post = [&](const std::string& key) {
    return call(bhttp::verb::post, "/v1/virtual-accounts", "{not json", {{"x-service-key", key}});
  };
  EXPECT_EQ(post(creds_.test_secret_key).status, 400u);
  EXPECT_EQ(post(creds_.test_secret_key).status, 400u);
  const http::Response refused = post(creds_.test_secret_key);
  ASSERT_EQ(refused.status, 429u) << refused.body;
  EXPECT_EQ(refused.body, http::error(429, "Too many requests").body);
  EXPECT_EQ(header(refused, "Retry-After"), "1");
  EXPECT_EQ(header(refused, "RateLimit-Limit"), "2");
  EXPECT_EQ(header(refused, "RateLimit-Remaining"), "0");
  EXPECT_EQ(header(refused, "RateLimit-Reset"), "1");
  EXPECT_NE(post("sk_test_another_key").status, 429u) << "each key has its own bucket";
  EXPECT_NE(call(bhttp::verb::get, "/v1/virtual-accounts").status, 429u) << "reads have their own";
  dispatch_to_ = &router_;
}

// The admin sets a business's own limits (PUT /v1/admin/businesses/{id}/rate-limits, an event the
// views apply): its keys are limited though the deployment has no limit; another business's keys
// are not; the body's limits are checked; the route is the admin's.
TEST_F(RouteWrapper, TheAdminSetsABusinesssOwnRateLimits) {
  const Credentials other = new_credentials();
  auto business = create_business_command(other, "Other", master_.get());
  ASSERT_TRUE(business.ok()) << business.status().message();
  ASSERT_TRUE(ledger_->execute(std::move(business).value()).ok());
  for (std::uint32_t p = 0; p < kPartitions; ++p)
    ASSERT_TRUE(projector_->wait_applied(Partition(p), ledger_->durable_seq(Partition(p)), 5s));
  const std::string route = "/v1/admin/businesses/" + creds_.business_id + "/rate-limits";
  const auto post = [&](const std::string& key) {
    return call(bhttp::verb::post, "/v1/virtual-accounts", "{not json", {{"x-service-key", key}});
  };
  EXPECT_NE(post(creds_.test_secret_key).status, 429u) << "the deployment has no limit";

  EXPECT_EQ(call(bhttp::verb::put, route, R"({"writesPerSecond":-1})").status, 400u);
  EXPECT_EQ(call(bhttp::verb::put, route, R"({"readsPerSecond":1000001})").status, 400u);
  EXPECT_EQ(call(bhttp::verb::put, "/v1/admin/businesses/biz-none/rate-limits", "{}").status, 404u);
  EXPECT_EQ(
      call(bhttp::verb::put, route, R"({"writesPerSecond":2})", {{"x-admin-key", "not-the-admin"}}).status,
      401u);
  const http::Response set = call(bhttp::verb::put, route, R"({"writesPerSecond":2})");
  ASSERT_EQ(set.status, 200u) << set.body;
  EXPECT_NE(set.body.find(R"("readsPerSecond":null)"), std::string::npos) << set.body;
  EXPECT_NE(set.body.find(R"("writesPerSecond":2)"), std::string::npos) << set.body;

  // The limiter read the business's limits before they were set: within its refresh they apply.
  std::this_thread::sleep_for(1'100ms);
  EXPECT_EQ(post(creds_.test_secret_key).status, 400u);
  EXPECT_EQ(post(creds_.test_secret_key).status, 400u);
  const http::Response refused = post(creds_.test_secret_key);
  EXPECT_EQ(refused.status, 429u) << refused.body;
  EXPECT_EQ(header(refused, "RateLimit-Limit"), "2");
  EXPECT_NE(post(creds_.live_secret_key).status, 429u) << "each key of the business has its own bucket";
  for (int i = 0; i < 5; ++i) EXPECT_NE(post(other.test_secret_key).status, 429u) << "another business's key";
  EXPECT_NE(call(bhttp::verb::get, "/v1/virtual-accounts").status, 429u) << "reads keep the deployment's";
}

// A body of 10,000 nested arrays is 400 at once, and nothing of it reaches the log.
TEST_F(RouteWrapper, ADeeplyNestedBodyIs400AndNothingReachesTheLog) {
  std::vector<Seq> before;
  for (std::uint32_t p = 0; p < kPartitions; ++p) before.push_back(ledger_->durable_seq(Partition(p)));
  const std::string deep = R"({"name":"deep","category":"secondary","metadata":)" + std::string(10'000, '[') +
                           std::string(10'000, ']') + "}";
  const auto started = std::chrono::steady_clock::now();
  const http::Response answer = call(bhttp::verb::post, "/v1/virtual-accounts", deep);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 100ms) << "refused before any parsing";
  EXPECT_EQ(answer.status, 400u) << answer.body;
  EXPECT_EQ(answer.body, http::bad_request().body);
  for (std::uint32_t p = 0; p < kPartitions; ++p) EXPECT_EQ(ledger_->durable_seq(Partition(p)), before[p]);
}

TEST(TokenBuckets, RefillAtTheRateAndTrackABoundedNumberOfKeys) {
  using Clock = api::TokenBuckets::Clock;
  api::TokenBuckets buckets(64);
  const auto t0 = Clock::now();
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(buckets.take(7, 10, t0).admitted);
  const auto refused = buckets.take(7, 10, t0);
  EXPECT_FALSE(refused.admitted);
  EXPECT_NEAR(refused.retry_after_s, 0.1, 1e-9);
  EXPECT_FALSE(buckets.take(7, 10, t0 + 50ms).admitted);
  EXPECT_TRUE(buckets.take(7, 10, t0 + 100ms).admitted);
  // Many keys, few slots: the table stays within its bound.
  for (std::uint64_t k = 0; k < 10'000; ++k) EXPECT_TRUE(buckets.take(k * 16 + 1, 10, t0).admitted);
  EXPECT_LE(buckets.tracked(), 64u);
}

// A key's rate can change (its business's own limits were set): the bucket keeps what it holds,
// up to its new size, and refills at the new rate.
TEST(TokenBuckets, ABucketWhoseRateChangesKeepsWhatItHoldsUpToItsNewSize) {
  using Clock = api::TokenBuckets::Clock;
  api::TokenBuckets buckets(64);
  const auto t0 = Clock::now();
  EXPECT_TRUE(buckets.take(7, 100, t0).admitted);  // 99 left
  const auto smaller = buckets.take(7, 2, t0);     // 2 at most: 1 left after this one
  EXPECT_TRUE(smaller.admitted);
  EXPECT_EQ(smaller.limit, 2u);
  EXPECT_EQ(smaller.remaining, 1u);
  EXPECT_TRUE(buckets.take(7, 2, t0).admitted);
  EXPECT_FALSE(buckets.take(7, 2, t0).admitted);
  EXPECT_TRUE(buckets.take(7, 2, t0 + 500ms).admitted) << "refilled at 2 a second";
}

}  // namespace
}  // namespace kobo
