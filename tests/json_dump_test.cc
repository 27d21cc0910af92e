// dump_json() must write exactly what nlohmann's dump() writes (common/json_dump.h).

#include "common/json_dump.h"

#include <gtest/gtest.h>

#include <random>

namespace kobo {
namespace {

using nlohmann::json;

void expect_same(const json& j) {
  EXPECT_EQ(dump_json(j), j.dump()) << j.dump();
  EXPECT_EQ(dump_json(j, json::error_handler_t::replace),
            j.dump(-1, ' ', false, json::error_handler_t::replace));
}

TEST(JsonDump, MatchesDumpOnEveryKindOfValue) {
  for (const json& j : {
           json(nullptr),
           json(true),
           json(false),
           json(0),
           json(-1),
           json(INT64_MIN),
           json(INT64_MAX),
           json(UINT64_MAX),
           json(1.5),
           json(-0.0),
           json(1e300),
           json(""),
           json("plain ascii ~"),
           json("quote \" backslash \\ slash /"),
           json("\b\f\n\r\t\x01\x1f\x7f"),
           json("naira ₦ and emoji 😀"),
           json::object(),
           json::array(),
           json::array({1, "two", nullptr, json::object()}),
           json{{"b", 1}, {"a", {{"nested", json::array({true, 2.25})}}}, {"é key", "v"}, {"k\"q", "x"}},
           json::binary({1, 2, 3}),
       })
    expect_same(j);
}

TEST(JsonDump, MatchesDumpOnATransactionShapedRecord) {
  const json trx{{"_id", "0123456789abcdef01234567"},
                 {"id", 42},
                 {"amount", 1000000},
                 {"live", false},
                 {"deletedAt", nullptr},
                 {"tags", json::array({"sweep"})},
                 {"meta", {{"credit", {{"narration", "Ọmọ́ bench"}, {"balance", -5}}}}},
                 {"createdAt", "2026-11-21T07:02:00.000Z"}};
  expect_same(trx);
}

TEST(JsonDump, WritesAStringAsDumpDoes) {
  for (const std::string s : {"", "biz-1", "a \"quoted\" \\ word", "line\nbreak", "₦", "\x7f"}) {
    std::string out = "x";
    append_json_string(out, s);
    EXPECT_EQ(out, "x" + json(s).dump());
  }
}

TEST(JsonDump, KeepsTheInsertionOrderOfOrderedJson) {
  nlohmann::ordered_json meta;
  meta["statusCode"] = 200;
  meta["success"] = true;
  meta["message"] = "ok";
  EXPECT_EQ(dump_json(meta), meta.dump());
  EXPECT_EQ(dump_json(meta), R"({"statusCode":200,"success":true,"message":"ok"})");
}

TEST(JsonDump, InvalidUtf8ThrowsWithStrictAndIsReplacedWithReplace) {
  const json bad{{"name", std::string("ab\xff")}};
  EXPECT_THROW(bad.dump(), json::type_error);
  EXPECT_THROW((void)dump_json(bad), json::type_error);
  EXPECT_EQ(dump_json(bad, json::error_handler_t::replace),
            bad.dump(-1, ' ', false, json::error_handler_t::replace));
}

json random_value(std::mt19937_64& rng, int depth) {
  static const char* kStrings[] = {"",     "a",    "kobo", "with \"quote\"", "tab\there", "₦500",
                                   "x\\y", "\x7f", "ü"};
  switch (rng() % (depth > 3 ? 5 : 7)) {
    case 0:
      return nullptr;
    case 1:
      return rng() % 2 == 0;
    case 2:
      return static_cast<std::int64_t>(rng()) >> (rng() % 64);
    case 3:
      return kStrings[rng() % std::size(kStrings)];
    case 4:
      return static_cast<double>(static_cast<std::int64_t>(rng() % 100000)) / 8.0;
    case 5: {
      json a = json::array();
      for (std::uint64_t i = rng() % 4; i > 0; --i) a.push_back(random_value(rng, depth + 1));
      return a;
    }
    default: {
      json o = json::object();
      for (std::uint64_t i = rng() % 5; i > 0; --i)
        o[kStrings[rng() % std::size(kStrings)] + std::to_string(rng() % 3)] = random_value(rng, depth + 1);
      return o;
    }
  }
}

TEST(JsonDump, MatchesDumpOnRandomDocuments) {
  const std::uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (int i = 0; i < 2000; ++i) expect_same(random_value(rng, 0));
}

}  // namespace
}  // namespace kobo
