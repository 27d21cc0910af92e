// Views rebuilt from the log are byte-identical to the ones the server built as it went
// (docs/architecture.md section 4, "Deterministic"), on the embedded log and, in the Kafka run, on Kafka:
// after traffic of every kind that moves money, `kobo audit` on the stopped server's log finds it clean,
// rebuilds every view from it and compares them with the server's, key by key.

#include <gtest/gtest.h>

#include <fstream>

#include "tests/audit/run_kobo.h"
#include "tests/integration/harness.h"

namespace kobo::it {
namespace {

using kobo::testing::run_kobo;

TEST(Rebuild, ViewsRebuiltFromTheLogEqualTheOnesTheServerBuilt) {
  KoboProcess server(kobo_options({"--rail-delay-ms", "20"}));
  HttpClient& http = server.client();
  const std::string key = server.test_key();

  const json a = create_wallet(http, key), b = create_wallet(http, key);
  fund(http, key, a, 5'000'000);
  for (int i = 0; i < 5; ++i)
    data_or_throw(
        http.post("/v1/transactions/transfer",
                  transfer_body(a["publicId"], b["publicId"], 10'000 + i, unique_name("rebuild"), "rent"),
                  key),
        200, "transfer");
  // A payout that succeeds and one that fails and is reversed.
  for (const json& metadata : {json::object(), json{{"sandboxOutcome", "failed"}}}) {
    const std::string ref = unique_name("payout");
    data_or_throw(http.post("/v1/transactions/bank-transfer",
                            json{{"source", a["publicId"]},
                                 {"accountNumber", "0123456784"},
                                 {"bankCode", "044"},
                                 {"amount", 70'000},
                                 {"currency", "NGN"},
                                 {"narration", "payout"},
                                 {"reference", ref},
                                 {"metadata", metadata}},
                            key),
                  200, "bank transfer");
    ASSERT_TRUE(wait_until([&] {
      const json t = data_or_throw(http.get("/v1/transactions/" + ref, key), 200, "payout");
      return t["status"] == "success" || t["status"] == "failed";
    })) << ref
        << " did not reach a final status";
  }
  // A transit wallet sweeps what it receives; a collection wallet is paid once.
  const json transit = data_or_throw(
      http.post("/v1/transit-accounts",
                json{{"accountName", "Till"}, {"currency", "NGN"}, {"settlementAccount", b["publicId"]}},
                key),
      201, "transit wallet");
  fund(http, key, transit, 25'000);
  const json collection = data_or_throw(http.post("/v1/collection-accounts",
                                                  json{{"destination", a["publicId"]},
                                                       {"accountName", "Order"},
                                                       {"amount", 40'000},
                                                       {"expireIn", 900}},
                                                  key),
                                        201, "collection wallet");
  fund(http, key, collection, 40'000);
  ASSERT_EQ(server.terminate(), 0) << server.log_tail();

  std::vector<std::string> args{"audit", "--data-dir", server.data_dir().string(), "--json",
                                (server.data_dir() / "audit.json").string()};
  if (const std::string brokers = kobo::testing::test_kafka_brokers(); !brokers.empty())
    for (std::string arg :
         {std::string("--kafka-brokers"), brokers, std::string("--kafka-topic"), server.kafka_topic()})
      args.push_back(std::move(arg));
  const auto r = run_kobo(KOBO_BINARY, args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(server.data_dir() / "audit.json");
  const json report = json::parse(in);
  EXPECT_EQ(report["violationCount"], 0) << r.output;
  EXPECT_TRUE(report["views"]["checked"].get<bool>()) << r.output;
  EXPECT_TRUE(report["views"]["caughtUp"].get<bool>()) << r.output;
  EXPECT_GT(report["views"]["keysCompared"].get<std::uint64_t>(), 40u) << r.output;
  EXPECT_GE(report["transactions"].get<std::uint64_t>(), 14u) << r.output;
}

}  // namespace
}  // namespace kobo::it
