#include "events/event.h"

#include <gtest/gtest.h>

#include "events/partitioner.h"

namespace kobo {
namespace {

Event sample(Seq seq = Seq(1), std::string prev = kGenesisHash) {
  Event e;
  e.partition = Partition(2);
  e.seq = seq;
  e.epoch = Epoch(1);
  e.command_seq = seq;
  e.type = EventType::credited;
  e.business = "biz-1";
  e.time = 1'795'000'000'123;
  e.data = {{"ledgerAccount", "vba-1"}, {"amount", 10000}, {"balance", 10000}, {"note", "naïra ₦"}};
  e.prev_hash = std::move(prev);
  return e;
}

TEST(EventCodec, SealedEventDecodesToTheSameEvent) {
  Event e = sample();
  const std::string wire = seal(e);
  auto d = decode_event(wire);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->hash, e.hash);
  EXPECT_EQ(d->seq, e.seq);
  EXPECT_EQ(d->partition, e.partition);
  EXPECT_EQ(d->type, EventType::credited);
  EXPECT_EQ(d->time, e.time);
  EXPECT_EQ(d->data, e.data);
  EXPECT_EQ(d->business, "biz-1");
}

TEST(EventCodec, WireFormIsCanonicalWithHashFirst) {
  Event e = sample();
  const std::string wire = seal(e);
  EXPECT_EQ(wire.rfind("{\"hash\":\"" + e.hash + "\",\"business\":", 0), 0u) << wire;
  EXPECT_EQ(wire.find(' '), wire.find("naïra ₦") + 6) << "no white space outside strings";
}

TEST(EventCodec, HashCoversThePreviousHash) {
  Event a = sample(Seq(1), kGenesisHash);
  Event b = sample(Seq(1), std::string(64, 'a'));
  permit_unchecked(seal(a));
  permit_unchecked(seal(b));
  EXPECT_NE(a.hash, b.hash);
}

TEST(EventCodec, RejectsAnyEditedByte) {
  Event e = sample();
  const std::string wire = seal(e);
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"\"amount\":10000", "\"amount\":10001"},
           {"\"seq\":1", "\"seq\":2"},
           {"\"live\":false", "\"live\":true"},
           {"biz-1", "biz-2"}}) {
    std::string edited = wire;
    edited.replace(edited.find(from), from.size(), to);
    auto d = decode_event(edited);
    EXPECT_FALSE(d.ok()) << "edit " << from << " -> " << to << " was accepted";
  }
}

TEST(EventCodec, RejectsMalformedInput) {
  for (const char* bad : {"", "[]", "{}", "not json", "{\"hash\":\"x\"}", "{\"hash\":1,\"type\":\"Credited\"}"})
    EXPECT_FALSE(decode_event(bad).ok()) << bad;
  Event e = sample();
  std::string wire = seal(e);
  wire.replace(wire.find("Credited"), 8, "Invented");
  EXPECT_FALSE(decode_event(wire).ok());
}

TEST(Murmur2, MatchesKafkaJavaClient) {
  const std::vector<std::pair<std::string, std::uint32_t>> vectors{
      {"kafka", 0xd067cf64},  {"giberish123456789", 0x8f552b0c},
      {"1234", 0x9fc97b14},   {"234", 0xe7c009ca},
      {"34", 0x873930da},     {"4", 0x5a4b5ca1},
      {"PreAmbleWillBeRemoved,ThePrePartThatIs", 0x78424f1c},
      {"", 0x106e08d9},       {"21", static_cast<std::uint32_t>(-973932308)},
      {"foobar", static_cast<std::uint32_t>(-790332482)}, {"abc", 479470107u},
  };
  for (const auto& [key, want] : vectors) EXPECT_EQ(murmur2(key), want) << key;
  EXPECT_EQ(partition_for("kafka", 12), Partition((0xd067cf64u & 0x7fffffffu) % 12));
}

}  // namespace
}  // namespace kobo
