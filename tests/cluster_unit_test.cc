// What a node reads of the other members from the group's description: their addresses (client.id)
// and their partitions (the assignment bytes, Kafka's ConsumerProtocolAssignment), checked here
// against bytes made as Kafka lays them out, and against bytes that lie.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/cluster.h"

namespace kobo {
namespace {

void int16(std::vector<std::uint8_t>& b, std::int16_t v) {
  b.push_back(static_cast<std::uint8_t>(static_cast<std::uint16_t>(v) >> 8));
  b.push_back(static_cast<std::uint8_t>(v));
}
void int32(std::vector<std::uint8_t>& b, std::int32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    b.push_back(static_cast<std::uint8_t>(static_cast<std::uint32_t>(v) >> shift));
}
void text(std::vector<std::uint8_t>& b, const std::string& s) {
  int16(b, static_cast<std::int16_t>(s.size()));
  b.insert(b.end(), s.begin(), s.end());
}

struct Topic {
  std::string name;
  std::vector<std::int32_t> partitions;
};
std::vector<std::uint8_t> assignment(const std::vector<Topic>& topics, std::int16_t version = 1) {
  std::vector<std::uint8_t> b;
  int16(b, version);
  int32(b, static_cast<std::int32_t>(topics.size()));
  for (const Topic& t : topics) {
    text(b, t.name);
    int32(b, static_cast<std::int32_t>(t.partitions.size()));
    for (const std::int32_t p : t.partitions) int32(b, p);
  }
  int32(b, -1);  // no user data
  return b;
}

std::vector<std::uint32_t> values(const std::vector<Partition>& ps) {
  std::vector<std::uint32_t> out;
  for (const Partition p : ps) out.push_back(p.value);
  return out;
}

TEST(MemberAssignment, ReadsThePartitionsOfTheLogsTopicOnly) {
  const auto bytes = assignment({{"other", {0, 1}}, {"kobo.events", {2, 5, 7}}});
  const auto ps = parse_member_assignment(bytes, "kobo.events");
  ASSERT_TRUE(ps.has_value());
  EXPECT_EQ(values(*ps), (std::vector<std::uint32_t>{2, 5, 7}));
  EXPECT_TRUE(parse_member_assignment(bytes, "kobo.other")->empty());
}

TEST(MemberAssignment, EmptyBytesAreAMemberThatHoldsNothingYet) {
  const auto ps = parse_member_assignment({}, "kobo.events");
  ASSERT_TRUE(ps.has_value());
  EXPECT_TRUE(ps->empty());
}

TEST(MemberAssignment, RefusesBytesThatEndEarlyOrLie) {
  const auto whole = assignment({{"kobo.events", {0, 1, 2}}});
  // Every cut short of the user data ends inside a field the reader needs.
  for (std::size_t cut = 1; cut + 4 < whole.size(); ++cut) {
    const std::vector<std::uint8_t> part(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut));
    EXPECT_FALSE(parse_member_assignment(part, "kobo.events").has_value()) << "cut at " << cut;
  }
  std::vector<std::uint8_t> huge;  // a partition count far beyond the bytes that follow
  int16(huge, 1);
  int32(huge, 1);
  text(huge, "kobo.events");
  int32(huge, 1'000'000'000);
  int32(huge, 3);
  EXPECT_FALSE(parse_member_assignment(huge, "kobo.events").has_value());
  EXPECT_FALSE(parse_member_assignment(assignment({{"kobo.events", {-3}}}), "kobo.events").has_value());
  EXPECT_FALSE(parse_member_assignment(assignment({{"kobo.events", {1}}}, -1), "kobo.events").has_value());
}

TEST(MemberClientId, RoundTripsAndRefusesWhatIsNotANode) {
  const auto a = parse_member_client_id(member_client_id("node-1", "http://10.0.0.1:8080"));
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node_id, "node-1");
  EXPECT_EQ(a->url, "http://10.0.0.1:8080");
  EXPECT_FALSE(parse_member_client_id("rdkafka").has_value());
  EXPECT_FALSE(parse_member_client_id("kobo:node-1").has_value());
  EXPECT_FALSE(parse_member_client_id("kobo:node 1@http://10.0.0.1:8080").has_value());
  EXPECT_FALSE(parse_member_client_id("kobo:node-1@ftp://10.0.0.1").has_value());
}

}  // namespace
}  // namespace kobo
