// The router over a real server and loopback HTTP: parameters, precedence, 404s, metrics.

#include "query-api/router.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/metrics.h"
#include "query-api/envelope.h"
#include "query-api/http_server.h"
#include "tests/support/http_client.h"

namespace kobo::http {
namespace {

using namespace std::chrono_literals;
using kobo::testing::HttpClient;
using kobo::testing::HttpResult;
using nlohmann::json;
namespace bhttp = boost::beast::http;

// Answers which route matched and the parameters it bound.
RouteHandler named(std::string name) {
  return [name = std::move(name)](Request&& req, const PathParams& params, Responder respond) {
    json p = json::object();
    for (const char* key : {"id", "reference", "accountId", "x", "y"})
      if (auto v = params.find(key)) p[key] = std::string(*v);
    respond(ok_text(200, json{{"route", name}, {"params", p}, {"path", req.path}}.dump()));
  };
}

std::uint64_t requests_counted(const std::string& route, const std::string& method, unsigned status) {
  return metrics::registry()
      .counter("kobo_http_requests_total", "",
               "route=\"" + route + "\",method=\"" + method + "\",status=\"" + std::to_string(status) + "\"")
      .value();
}

std::uint64_t durations_observed(const std::string& route) {
  return metrics::registry()
      .histogram("kobo_http_request_duration_seconds", "", "route=\"" + route + "\"")
      .count();
}

class RouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    router_.get("/v1/virtual-accounts/{id}", named("get-wallet"));
    router_.get("/v1/virtual-accounts", named("list-wallets"));
    router_.post("/v1/virtual-accounts", named("create-wallet"));
    router_.get("/v1/transactions/{id}", named("get-transaction"));
    router_.get("/v1/transactions/banks", named("banks"));
    router_.get("/v1/transactions/{reference}/verify", named("verify"));
    router_.post("/v1/transactions/transfer", named("transfer"));
    router_.patch("/v1/accounts/{accountId}", named("update-account"));
    router_.get("/v1/p/{x}/q/{y}", named("two-params"));
    router_.get("/healthz", named("health"));
  }

  void start() {
    server_ = std::make_unique<Server>(ServerOptions{}, router_.handler());
    const Status status = server_->start();
    ASSERT_TRUE(status.ok()) << status.message();
    client_ = std::make_unique<HttpClient>("127.0.0.1", server_->port());
  }

  void TearDown() override {
    client_.reset();
    if (server_) server_->stop();
    for (auto& t : threads_) t.join();
  }

  HttpResult get(const std::string& target) { return client_->get(target); }

  Router router_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<HttpClient> client_;
  std::vector<std::thread> threads_;
};

TEST_F(RouterTest, BindsPathParameters) {
  start();
  HttpResult r = get("/v1/virtual-accounts/vba-1234");
  ASSERT_EQ(r.status, 200u);
  EXPECT_EQ(r.json["data"]["route"], "get-wallet");
  EXPECT_EQ(r.json["data"]["params"], json({{"id", "vba-1234"}}));

  r = get("/v1/p/one/q/two");
  EXPECT_EQ(r.json["data"]["route"], "two-params");
  EXPECT_EQ(r.json["data"]["params"], json({{"x", "one"}, {"y", "two"}}));

  r = get("/v1/transactions/ref%20with%20space/verify");
  EXPECT_EQ(r.json["data"]["route"], "verify");
  EXPECT_EQ(r.json["data"]["params"], json({{"reference", "ref with space"}}));
}

TEST_F(RouterTest, LiteralSegmentBeatsParameter) {
  start();
  EXPECT_EQ(get("/v1/transactions/banks").json["data"]["route"], "banks");
  EXPECT_EQ(get("/v1/transactions/trx-1").json["data"]["route"], "get-transaction");
  // The literal leads nowhere for ".../banks/verify", so the parameter gets it.
  const HttpResult r = get("/v1/transactions/banks/verify");
  EXPECT_EQ(r.json["data"]["route"], "verify");
  EXPECT_EQ(r.json["data"]["params"], json({{"reference", "banks"}}));
}

TEST_F(RouterTest, AConcretePathWinsOverATemplatedOneWhateverTheMethod) {
  // As OpenAPI matches paths: /v1/transactions/transfer is the POST-only concrete path, never
  // /v1/transactions/{id}, so a GET of it is 405 with the methods the concrete path has.
  start();
  EXPECT_EQ(client_->post("/v1/transactions/transfer", json::object()).json["data"]["route"], "transfer");
  const HttpResult r = get("/v1/transactions/transfer");
  EXPECT_EQ(r.status, 405u);
  EXPECT_EQ(r.header("allow"), "POST");
  EXPECT_EQ(get("/v1/transactions/transfers").json["data"]["route"], "get-transaction");
}

TEST_F(RouterTest, DispatchesByMethod) {
  start();
  EXPECT_EQ(get("/v1/virtual-accounts").json["data"]["route"], "list-wallets");
  EXPECT_EQ(client_->post("/v1/virtual-accounts", json::object()).json["data"]["route"], "create-wallet");
  EXPECT_EQ(client_->patch("/v1/accounts/acc-1", json::object()).json["data"]["route"], "update-account");
}

TEST_F(RouterTest, IgnoresOneTrailingSlash) {
  start();
  EXPECT_EQ(get("/v1/virtual-accounts/").json["data"]["route"], "list-wallets");
  EXPECT_EQ(get("/v1/virtual-accounts/vba-1/").json["data"]["route"], "get-wallet");
}

TEST_F(RouterTest, UnknownPathIs404RouteNotFound) {
  start();
  const json expected =
      json::parse(R"({"meta":{"statusCode":404,"error":{"statusCode":404,"message":"Route not found"}}})");
  for (const char* target : {"/", "/v2/virtual-accounts", "/v1/virtual-accounts/vba-1/extra",
                             "/v1//virtual-accounts", "/v1/transactions//verify", "/healthz/x"}) {
    const HttpResult r = get(target);
    EXPECT_EQ(r.status, 404u) << target;
    EXPECT_EQ(r.json, expected) << target;
  }
}

TEST_F(RouterTest, KnownPathWithAnotherMethodIs405WithAllow) {
  start();
  const HttpResult r = client_->request(bhttp::verb::delete_, "/v1/virtual-accounts/vba-1");
  EXPECT_EQ(r.status, 405u);
  EXPECT_EQ(r.json["meta"]["statusCode"], 405);
  EXPECT_EQ(r.json["meta"]["error"]["message"], "Method not allowed");
  EXPECT_EQ(r.header("allow"), "GET");
  // Every route matching the path counts: a literal and a parameter route alike.
  const HttpResult both = client_->request(bhttp::verb::trace, "/v1/virtual-accounts");
  EXPECT_EQ(both.status, 405u);
  EXPECT_EQ(both.header("allow"), "GET, POST");
  EXPECT_EQ(client_->post("/v1/virtual-accounts/vba-1", json::object()).header("allow"), "GET");
  EXPECT_EQ(client_->patch("/v1/transactions/banks", json::object()).status, 405u);
  EXPECT_EQ(client_->post("/v1/transactions/x/verify", json::object()).header("allow"), "GET");
}

TEST_F(RouterTest, UnknownPathIs404WhateverTheMethod) {
  start();
  const HttpResult r = client_->request(bhttp::verb::delete_, "/v1/nowhere/vba-1");
  EXPECT_EQ(r.status, 404u);
  EXPECT_EQ(r.json["meta"]["error"]["message"], "Route not found");
  EXPECT_EQ(r.header("allow"), "");
  EXPECT_EQ(client_->post("/v1/virtual-accounts/vba-1/more", json::object()).status, 404u);
}

TEST_F(RouterTest, CountsRequestsByRouteMethodAndStatus) {
  start();
  const auto wallet_before = requests_counted("/v1/virtual-accounts/{id}", "GET", 200);
  const auto wallet_durations_before = durations_observed("/v1/virtual-accounts/{id}");
  const auto unmatched_before = requests_counted("unmatched", "GET", 404);
  const auto unmatched_put_before = requests_counted("unmatched", "PUT", 404);
  ASSERT_EQ(get("/v1/virtual-accounts/a").status, 200u);
  ASSERT_EQ(get("/v1/virtual-accounts/b").status, 200u);
  ASSERT_EQ(get("/nowhere").status, 404u);
  ASSERT_EQ(client_->request(bhttp::verb::put, "/nowhere").status, 404u);
  EXPECT_EQ(requests_counted("/v1/virtual-accounts/{id}", "GET", 200), wallet_before + 2);
  EXPECT_EQ(durations_observed("/v1/virtual-accounts/{id}"), wallet_durations_before + 2);
  EXPECT_EQ(requests_counted("unmatched", "GET", 404), unmatched_before + 1);
  EXPECT_EQ(requests_counted("unmatched", "PUT", 404), unmatched_put_before + 1);

  const std::string text = metrics::registry().render();
  EXPECT_NE(text.find("# TYPE kobo_http_requests_total counter"), std::string::npos);
  EXPECT_NE(text.find("# TYPE kobo_http_request_duration_seconds histogram"), std::string::npos);
  EXPECT_NE(
      text.find(
          "kobo_http_requests_total{route=\"/v1/virtual-accounts/{id}\",method=\"GET\",status=\"200\"}"),
      std::string::npos);
  EXPECT_NE(
      text.find(
          "kobo_http_request_duration_seconds_bucket{route=\"/v1/virtual-accounts/{id}\",le=\"0.001\"}"),
      std::string::npos);
  EXPECT_NE(text.find("kobo_http_requests_total{route=\"unmatched\",method=\"GET\",status=\"404\"}"),
            std::string::npos);
}

TEST_F(RouterTest, MeasuresUntilAnAsynchronousAnswer) {
  router_.get("/v1/slow", [this](Request&&, const PathParams&, Responder respond) {
    threads_.emplace_back([respond = std::move(respond)] {
      std::this_thread::sleep_for(60ms);
      respond(error(409, "Duplicate reference"));
    });
  });
  start();
  const auto counted_before = requests_counted("/v1/slow", "GET", 409);
  const auto observed_before = durations_observed("/v1/slow");
  ASSERT_EQ(get("/v1/slow").status, 409u);
  EXPECT_EQ(requests_counted("/v1/slow", "GET", 409), counted_before + 1);
  EXPECT_EQ(durations_observed("/v1/slow"), observed_before + 1);
  // Every observation was at least 60 ms: the 0.05 s bucket is still empty.
  const std::string text = metrics::registry().render();
  EXPECT_NE(text.find("kobo_http_request_duration_seconds_bucket{route=\"/v1/slow\",le=\"0.05\"} 0\n"),
            std::string::npos);
}

TEST_F(RouterTest, ThrowingRouteHandlerIs500AndCounted) {
  router_.get("/v1/throws", [](Request&&, const PathParams&, Responder) -> void {
    throw std::logic_error("internal detail");
  });
  start();
  const auto counted_before = requests_counted("/v1/throws", "GET", 500);
  const HttpResult r = get("/v1/throws");
  EXPECT_EQ(r.status, 500u);
  EXPECT_EQ(r.json["meta"]["error"]["message"], "Internal server error");
  EXPECT_EQ(r.body.find("internal detail"), std::string::npos);
  EXPECT_EQ(requests_counted("/v1/throws", "GET", 500), counted_before + 1);
}

TEST_F(RouterTest, DroppedResponderIs500AndCounted) {
  router_.get("/v1/forgets", [](Request&&, const PathParams&, Responder) {});
  start();
  const auto counted_before = requests_counted("/v1/forgets", "GET", 500);
  EXPECT_EQ(get("/v1/forgets").status, 500u);
  EXPECT_EQ(requests_counted("/v1/forgets", "GET", 500), counted_before + 1);
}

TEST(PathParams, FindsByName) {
  PathParams p;
  p.add("id", "vba-1");
  p.add("reference", "ref-9");
  EXPECT_EQ(p.size(), 2u);
  EXPECT_EQ(p.at("reference"), "ref-9");
  EXPECT_EQ(p.find("id"), "vba-1");
  EXPECT_EQ(p.find("missing"), std::nullopt);
}

TEST(Router, ListsItsRoutesInTheOrderTheyWereAdded) {
  Router router;
  router.post("/v1/x", [](Request&&, const PathParams&, Responder) {});
  router.get("/v1/x/{id}", [](Request&&, const PathParams&, Responder) {});
  const auto routes = router.routes();
  ASSERT_EQ(routes.size(), 2u);
  EXPECT_EQ(routes[0].method, boost::beast::http::verb::post);
  EXPECT_EQ(routes[0].pattern, "/v1/x");
  EXPECT_EQ(routes[1].method, boost::beast::http::verb::get);
  EXPECT_EQ(routes[1].pattern, "/v1/x/{id}");
}

TEST(RouterDeathTest, RegisteringARouteTwiceIsAProgrammerError) {
  Router router;
  router.get("/v1/x/{id}", [](Request&&, const PathParams&, Responder) {});
  EXPECT_DEATH(router.get("/v1/x/{other}", [](Request&&, const PathParams&, Responder) {}),
               "route registered twice");
}

}  // namespace
}  // namespace kobo::http
