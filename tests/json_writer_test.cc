// JsonWriter writes exactly what nlohmann's dump() writes of the same value (common/json_writer.h):
// every kind of value, every byte of a string (invalid UTF-8 included), doubles, and the commas
// and colons of nested documents.

#include "common/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

namespace kobo {
namespace {

using nlohmann::json;

std::string dumped(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string written(const json& j) {
  std::string out;
  JsonWriter(out).value(j);
  return out;
}

std::string string_of(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

TEST(JsonWriter, WritesEveryKindOfParsedValueAsDumpDoes) {
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
           json(1.0),
           json(0.1),
           json(1e15),
           json(1e16),
           json(1e300),
           json(5e-324),
           json(-123.456e-7),
           json(std::numeric_limits<double>::quiet_NaN()),
           json(std::numeric_limits<double>::infinity()),
           json(""),
           json("plain ascii ~"),
           json("quote \" backslash \\ slash /"),
           json("\b\f\n\r\t\x01\x1f\x7f"),
           json("naira ₦ and emoji 😀"),
           json::object(),
           json::array(),
           json::array({1, "two", nullptr, json::object(), json::array({json::array()})}),
           json{{"b", 1}, {"a", {{"nested", json::array({true, 2.25})}}}, {"é key", "v"}, {"k\"q", "x"}},
       })
    EXPECT_EQ(written(j), dumped(j)) << dumped(j);
}

TEST(JsonWriter, WritesADeeplyNestedParsedValue) {
  json deep = json::array();
  // The expected text is built here, not by dump(): nlohmann's serializer recurses, and 5,000
  // levels of it overflow the stack of an ASan build.
  std::string expected = std::string(5'000, '[') + "[]";
  for (int i = 0; i < 5'000; ++i) {
    deep = json::array({std::move(deep), i});
    expected += "," + std::to_string(i) + "]";
  }
  EXPECT_EQ(written(deep), expected);
}

// Every string of bytes: random bytes weighted towards the ones UTF-8 and escaping care about.
TEST(JsonWriter, EscapesEveryStringAsDumpDoesWithReplace) {
  static constexpr unsigned char kInteresting[] = {0x00, 0x01, 0x08, 0x09, 0x0A, 0x0C, 0x0D, 0x1F, 0x20,
                                                   '"',  '\\', '/',  'a',  0x7F, 0x80, 0x8F, 0x90, 0x9F,
                                                   0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC,
                                                   0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF};
  std::mt19937_64 random(20261124);
  for (int round = 0; round < 200'000; ++round) {
    const std::size_t length = random() % 24;
    std::string s;
    for (std::size_t i = 0; i < length; ++i) {
      const auto r = random();
      s += static_cast<char>(r % 3 == 0 ? static_cast<unsigned char>(r >> 8)
                                        : kInteresting[(r >> 8) % sizeof kInteresting]);
    }
    ASSERT_EQ(string_of(s), dumped(json(s))) << "round " << round;
  }
}

TEST(JsonWriter, EscapesLongPlainRunsAroundSpecialBytes) {
  // The 8-byte fast path: a special byte at every position of a long string.
  for (const char special : {'"', '\\', '\n', '\x01', '\x7f'}) {
    for (std::size_t at = 0; at < 40; ++at) {
      std::string s(40, 'x');
      s[at] = special;
      EXPECT_EQ(string_of(s), dumped(json(s))) << at;
    }
  }
  const std::string utf8 = "abcdefgh₦ijklmnop😀qrstuvwx" + std::string(100, 'y') + "é";
  EXPECT_EQ(string_of(utf8), dumped(json(utf8)));
}

TEST(JsonWriter, PutsCommasAndColonsWhereTheyBelong) {
  std::string out;
  JsonWriter w(out);
  w.begin_object()
      .member("a", 1)
      .member("b", "two")
      .key("c")
      .begin_array()
      .number(1)
      .boolean(true)
      .null()
      .begin_object()
      .end_object()
      .begin_array()
      .end_array()
      .raw(R"({"x":[1]})")
      .end_array()
      .member("d", false)
      .raw_member("e", "[]")
      .null_member("f")
      .key("g")
      .number(std::uint64_t{18446744073709551615ULL})
      .key("h")
      .number(-0.5)
      .end_object();
  EXPECT_TRUE(w.done());
  EXPECT_EQ(out, R"({"a":1,"b":"two","c":[1,true,null,{},[],{"x":[1]}],"d":false,"e":[],"f":null,)"
                 R"("g":18446744073709551615,"h":-0.5})");
}

TEST(JsonWriter, AppendsToWhatTheStringHolds) {
  std::string out = "prefix:";
  JsonWriter(out).begin_array().string("₦\"").end_array();
  EXPECT_EQ(out, "prefix:[\"₦\\\"\"]");
}

TEST(JsonWriterDeathTest, RefusesAMisshapenDocument) {
  std::string out;
  EXPECT_DEATH(JsonWriter(out).begin_object().number(1), "member name");
  EXPECT_DEATH(JsonWriter(out).begin_array().end_object(), "not open");
  EXPECT_DEATH(JsonWriter(out).key("a"), "outside an object");
}

}  // namespace
}  // namespace kobo
