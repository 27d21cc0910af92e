#include "events/event.h"

#include <gtest/gtest.h>

#include "common/crypto.h"
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

// `wire` with a space after "commandSeq": and a hash recomputed over the new bytes: what a
// writer that is not ours might write. Its hash holds; its form is not canonical.
std::string respaced(const std::string& wire, const std::string& prev_hash) {
  std::string body = wire.substr(wire.find("\",") + 2);
  body.replace(body.find("\"commandSeq\":"), 13, "\"commandSeq\": ");
  return "{\"hash\":\"" + to_hex(sha256({prev_hash, "{", body})) + "\"," + body;
}

TEST(EventCodec, ChecksTheHashOverTheBytesAndTheCanonicalFormApart) {
  Event e = sample();
  const std::string wire = seal(e);
  EXPECT_TRUE(in_canonical_form(decode_event(wire).value(), wire));

  const std::string odd = respaced(wire, e.prev_hash);
  auto d = decode_event(odd);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_NE(d->hash, e.hash);
  EXPECT_EQ(d->data, e.data);
  EXPECT_FALSE(in_canonical_form(d.value(), odd));

  // The hash must be the record's own first member, over exactly the bytes that follow it.
  std::string moved = wire;
  moved.insert(1, " ");
  EXPECT_FALSE(decode_event(moved).ok());
  std::string trailing = wire;
  trailing.insert(trailing.size() - 1, " ");
  EXPECT_FALSE(decode_event(trailing).ok());
}

TEST(EventCodec, DecodesEveryKindOfValueAsNlohmannWould) {
  Event e = sample();
  e.data = nlohmann::json::parse(R"({"neg":-42,"zero":0,"max":18446744073709551615,"min":-9223372036854775808,
      "half":0.5,"tiny":1e-300,"text":"tab\t quote\" naïra ₦ \u0001","empty":{},"none":null,"yes":true,
      "list":[1,[2,{"deep":[]}],"x",false]})");
  const std::string wire = seal(e);
  auto d = decode_event(wire);
  ASSERT_TRUE(d.ok()) << d.status().message();
  const nlohmann::json want = nlohmann::json::parse(wire).at("data");
  EXPECT_EQ(d->data, want);
  EXPECT_EQ(d->data.dump(), want.dump());
  for (const char* key : {"zero", "max"}) EXPECT_TRUE(d->data[key].is_number_unsigned()) << key;
  for (const char* key : {"neg", "min"}) EXPECT_TRUE(d->data[key].is_number_integer() && !d->data[key].is_number_unsigned());
  EXPECT_TRUE(d->data["half"].is_number_float());
}

TEST(EventCodec, DecodesWhatOnlyTheFallbackParserTakes) {
  // An integer wider than 64 bits: simdjson refuses it, nlohmann reads it as a double.
  Event e = sample();
  const std::string wire = seal(e);
  std::string body = wire.substr(wire.find("\",") + 2);
  body.replace(body.find("\"amount\":10000"), 14, "\"amount\":123456789012345678901234567890");
  const std::string odd = "{\"hash\":\"" + to_hex(sha256({e.prev_hash, "{", body})) + "\"," + body;
  auto d = decode_event(odd);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_TRUE(d->data["amount"].is_number_float());
  EXPECT_FALSE(decode_event(odd.substr(0, odd.size() - 1)).ok());
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
