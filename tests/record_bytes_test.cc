// projection/record_bytes.h: members found and replaced in a record's bytes give exactly what
// decoding, setting and dumping the record gives.
#include "projection/record_bytes.h"

#include <gtest/gtest.h>

#include "common/json_dump.h"

namespace kobo {
namespace {

using nlohmann::json;

// A record with what the scan must step over: nested objects and arrays, strings holding
// quotes, backslashes, braces and commas, and a nested member with a top-level member's name.
const json kRecord = {
    {"amount", 1500},
    {"balance", -20},
    {"meta", {{"status", "nested"}, {"list", {1, "}", json::array(), json::object()}}}},
    {"narration", "a \"quoted\" {brace}, [bracket] and \\ backslash"},
    {"status", "pending"},
    {"updatedAt", "2026-01-01T00:00:00.000Z"},
    {"z", nullptr},
};

TEST(RecordBytesTest, FindsTopLevelMembersOnly) {
  const std::string bytes = dump_json(kRecord);
  EXPECT_EQ(record_bytes::member(bytes, "status"), "\"pending\"");
  EXPECT_EQ(record_bytes::member(bytes, "balance"), "-20");
  EXPECT_EQ(record_bytes::member(bytes, "z"), "null");
  EXPECT_EQ(record_bytes::member(bytes, "meta"), dump_json(kRecord.at("meta")));
  EXPECT_EQ(record_bytes::member(bytes, "narration"), dump_json(kRecord.at("narration")));
  EXPECT_EQ(record_bytes::member(bytes, "list"), std::nullopt);  // nested only
  EXPECT_EQ(record_bytes::member(bytes, "missing"), std::nullopt);
}

TEST(RecordBytesTest, ReplacingGivesWhatDumpGivesForTheChangedRecord) {
  std::string bytes = dump_json(kRecord);
  ASSERT_TRUE(record_bytes::replace_members(
      bytes, {{"z", "true"}, {"status", "\"success\""}, {"amount", "7"}, {"updatedAt", "\"later\""}}));
  json changed = kRecord;
  changed["z"] = true;
  changed["status"] = "success";
  changed["amount"] = 7;
  changed["updatedAt"] = "later";
  EXPECT_EQ(bytes, dump_json(changed));
}

TEST(RecordBytesTest, LeavesTheRecordAloneWhenAMemberIsMissing) {
  const std::string original = dump_json(kRecord);
  std::string bytes = original;
  EXPECT_FALSE(record_bytes::replace_members(bytes, {{"status", "\"success\""}, {"lastUpdated", "\"x\""}}));
  EXPECT_FALSE(record_bytes::replace_members(bytes, {{"list", "1"}}));
  EXPECT_EQ(bytes, original);
}

TEST(RecordBytesTest, RefusesWhatDumpDoesNotWrite) {
  for (std::string bytes : {"", "[1]", "{\"a\": 1}", "{\"a\":\"open", "{\"a\":1", "{\"a\":1}x"}) {
    const std::string original = bytes;
    EXPECT_FALSE(record_bytes::replace_members(bytes, {{"a", "3"}})) << original;
    EXPECT_EQ(bytes, original);
  }
  EXPECT_EQ(record_bytes::member("{}", "a"), std::nullopt);
}

}  // namespace
}  // namespace kobo
