// schemas/openapi.yaml documents exactly the routes the server answers: the route table is built
// as `kobo serve` builds it (Api::add_routes on a Router), and every method and path template in
// it must be an operation under `paths:` in the document, and every operation there a route.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "query-api/api.h"
#include "query-api/router.h"
#include "tests/support/node.h"
#include "tests/support/scratch_dir.h"
#include "webhooks/webhooks.h"

#ifndef KOBO_SOURCE_DIR
#error "needs -DKOBO_SOURCE_DIR=<the repository>"
#endif

namespace kobo {
namespace {

namespace fs = std::filesystem;

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

// "METHOD /path/{param}" for every operation of the document's `paths:` object. A small
// line-based reading of the house layout: paths indented by two spaces, methods by four.
std::set<std::string> documented_operations(const fs::path& file) {
  std::ifstream in(file);
  EXPECT_TRUE(in.good()) << "cannot read " << file;
  static const std::regex path_line(R"(^  (/[^:\s]*):\s*$)");
  static const std::regex method_line(R"(^    (get|put|post|delete|options|head|patch|trace):\s*$)");
  std::set<std::string> out;
  bool in_paths = false;
  std::string path;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != ' ' && line[0] != '#') {  // a top-level key
      in_paths = line.rfind("paths:", 0) == 0;
      path.clear();
      continue;
    }
    if (!in_paths) continue;
    std::smatch m;
    if (std::regex_match(line, m, path_line))
      path = m[1];
    else if (!path.empty() && std::regex_match(line, m, method_line))
      out.insert(upper(m[1]) + " " + path);
  }
  return out;
}

class OpenApiRoutes : public ::testing::Test {
 protected:
  void SetUp() override {
    // The writer, the views and the projector are made, not started: the route table needs them.
    const Status opened = node_.open();
    ASSERT_TRUE(opened.ok()) << opened.message();
    auto master = LocalMasterKey::make(std::string(64, 'a'));
    ASSERT_TRUE(master.ok()) << master.status().message();
    master_ = std::move(master).value();
    secrets_ = std::make_unique<WebhookSecrets>(*master_);
    auto webhooks = Webhooks::open((dir_ / "webhooks").string(), node_.log(), node_.views(),
                                   node_.projector(), *master_, *secrets_);
    ASSERT_TRUE(webhooks.ok()) << webhooks.status().message();
    webhooks_ = std::move(webhooks).value();
    ApiOptions ao;
    ao.webhooks = webhooks_.get();  // as `kobo serve` has it
    ao.webhook_secrets = secrets_.get();
    ao.master_key = master_.get();
    api_ = std::make_unique<Api>(node_.ledger(), node_.views(), node_.projector(), ao);
  }

  // The routes as `kobo serve` registers them.
  std::set<std::string> served_operations() {
    http::Router router;
    api_->add_routes(router);
    std::set<std::string> out;
    for (const auto& r : router.routes())
      out.insert(std::string(boost::beast::http::to_string(r.method)) + " " + r.pattern);
    return out;
  }

  testing::ScratchDir dir_;
  testing::Node node_{dir_.path()};
  std::unique_ptr<LocalMasterKey> master_;
  std::unique_ptr<WebhookSecrets> secrets_;
  std::unique_ptr<Webhooks> webhooks_;
  std::unique_ptr<Api> api_;
};

TEST_F(OpenApiRoutes, EveryServedRouteIsDocumentedAndEveryDocumentedRouteIsServed) {
  const auto served = served_operations();
  const auto documented = documented_operations(fs::path(KOBO_SOURCE_DIR) / "schemas" / "openapi.yaml");
  ASSERT_GE(served.size(), 20u) << "the route table looks empty";
  ASSERT_FALSE(documented.empty()) << "found no operations under paths: in schemas/openapi.yaml";
  for (const auto& op : served) {
    EXPECT_TRUE(documented.contains(op)) << op << " is served but not in schemas/openapi.yaml";
  }
  for (const auto& op : documented)
    EXPECT_TRUE(served.contains(op)) << op << " is in schemas/openapi.yaml but the server does not answer it";
}

TEST(OpenApiDocument, TheLineReaderSeesOperationsAndNothingElse) {
  const testing::ScratchDir dir;
  const fs::path file = dir / "openapi.yaml";
  {
    std::ofstream out(file);
    out << "openapi: 3.1.0\n"
           "paths:\n"
           "  /v1/things/{id}:\n"
           "    parameters: []\n"
           "    get:\n"
           "      responses: {}\n"
           "    patch:\n"
           "      responses: {}\n"
           "  /healthz:\n"
           "    get:\n"
           "      responses:\n"
           "        '200': { description: ok }\n"
           "components:\n"
           "  schemas:\n"
           "    post:\n"
           "      type: object\n";
  }
  const auto ops = documented_operations(file);
  EXPECT_EQ(ops, (std::set<std::string>{"GET /v1/things/{id}", "PATCH /v1/things/{id}", "GET /healthz"}));
}

}  // namespace
}  // namespace kobo
