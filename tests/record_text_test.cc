// projection/record_text.h: an Object's text is exactly what nlohmann's dump() writes for the same
// record decoded, whatever order its members were set in, with values replaced, nested objects,
// and strings that need escapes or are not ASCII.
#include "projection/record_text.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>

namespace kobo {
namespace {

using nlohmann::json;
using record_text::Object;

TEST(RecordTextTest, WritesMembersInKeyOrderAsDumpJsonDoes) {
  Object inner;
  inner.string("z", "last").number("a", -1).null("_x");
  Object o;
  o.string("updatedAt", "2026-01-01T00:00:00.000Z")
      .number("balance", std::int64_t{-20})
      .number("id", std::numeric_limits<std::uint64_t>::max())
      .boolean("live", false)
      .null("batchId")
      .string("narration", "a \"quoted\" \\ narration, ₦ and \x01")
      .object("meta", inner)
      .raw("tags", R"(["sweep"])")
      .string("_id", "0b97")
      .string("tRef", "r")
      .string("tags2", "t")
      .string("Zed", "upper case sorts first");
  const json expected = {
      {"updatedAt", "2026-01-01T00:00:00.000Z"},
      {"balance", -20},
      {"id", std::numeric_limits<std::uint64_t>::max()},
      {"live", false},
      {"batchId", nullptr},
      {"narration", "a \"quoted\" \\ narration, ₦ and \x01"},
      {"meta", {{"z", "last"}, {"a", -1}, {"_x", nullptr}}},
      {"tags", {"sweep"}},
      {"_id", "0b97"},
      {"tRef", "r"},
      {"tags2", "t"},
      {"Zed", "upper case sorts first"},
  };
  EXPECT_EQ(o.text(), expected.dump());
}

TEST(RecordTextTest, SettingAMemberAgainReplacesItsValue) {
  Object o;
  o.number("fee", 0).string("status", "success").number("amount", 5);
  o.number("fee", 1075).string("status", "pending");
  EXPECT_EQ(o.text(), R"({"amount":5,"fee":1075,"status":"pending"})");
  EXPECT_EQ(o.get("fee"), "1075");
  EXPECT_EQ(o.get("status"), R"("pending")");
  EXPECT_EQ(o.get("missing"), std::nullopt);
}

TEST(RecordTextTest, ManyMembersInReverseOrderAreOrderedToo) {
  std::vector<std::string> keys;                                          // an Object keeps its keys as views
  for (int i = 99; i >= 0; --i) keys.push_back("k" + std::to_string(i));  // more than it orders inline
  Object o;
  json expected = json::object();
  for (int i = 99; i >= 0; --i) {
    o.number(keys[static_cast<std::size_t>(99 - i)], i);
    expected[keys[static_cast<std::size_t>(99 - i)]] = i;
  }
  o.number("k50", -50);
  expected["k50"] = -50;
  EXPECT_EQ(o.text(), expected.dump());
}

TEST(RecordTextTest, AnEmptyObjectIsTwoBraces) { EXPECT_EQ(Object().text(), "{}"); }

}  // namespace
}  // namespace kobo
