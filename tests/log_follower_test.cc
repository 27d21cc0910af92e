// LogFollower: the one loop the writer's replay, the projectors and `kobo audit` read the log
// with. Accepted events reach the visitor in chain order; duplicates and zombies are skipped; a
// break stops a default visitor and is adopted by one that asks; `until` holds records back.
#include "events/log_follower.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "tests/support/sample_events.h"

#include "common/crypto.h"
#include "events/embedded_log.h"
#include "events/memory_log.h"
#include "tests/support/scratch_dir.h"

namespace kobo {
namespace {

using namespace std::chrono_literals;

// Seals events for one partition the way a writer does, and appends them as one command.
struct Writer {
  EventLog& log;
  Partition partition{0};
  Seq last{0};
  std::string hash{kGenesisHash};
  Epoch epoch{0};
  // What the writer gives the log as each event itself (EncodedEvent::event): nothing, or the
  // event with this actor in place of its own, so that a reader shows which one it took.
  std::optional<std::string> attach_as = std::nullopt;

  Event make(EventType type, Seq command_seq, std::uint32_t size) {
    Event e;
    e.partition = partition;
    e.seq = Seq(last.value + 1);
    e.command_seq = command_seq;
    e.command_size = size;
    e.epoch = epoch;
    test::set_sample_data(e, type, e.seq.value);
    e.prev_hash = hash;
    permit_unchecked(seal(e));
    last = e.seq;
    hash = e.hash;
    return e;
  }
  EncodedEvent encode(Event e) const {
    EncodedEvent out{e.partition, e.seq, e.type(), e.business, e.time, ""};
    out.bytes = seal(e);
    if (attach_as) {
      e.actor = *attach_as;
      out.event = std::make_shared<const Event>(std::move(e));
    }
    return out;
  }
  std::vector<Event> command(std::uint32_t size) {
    std::vector<Event> events;
    const Seq first(last.value + 1);
    for (std::uint32_t i = 0; i < size; ++i)
      events.push_back(make(EventType::collection_wallet_expired, first, size));
    append(events);
    return events;
  }
  void start() {
    epoch = Epoch(epoch.value + 1);
    append({make(EventType::writer_started, Seq(last.value + 1), 1)});
  }
  void append(const std::vector<Event>& events) {
    std::vector<EncodedEvent> batch;
    for (const Event& e : events) batch.push_back(encode(e));
    ASSERT_TRUE(log.append(batch).ok());
  }
};

struct Recorder : LogVisitor {
  std::vector<std::pair<std::uint32_t, std::uint64_t>> seen;  // (partition, seq)
  std::vector<std::string> actors;                            // of each event seen
  std::vector<RefusedRecord> refusals;
  std::vector<ChainVerdict> verdicts;
  Disposition on_broken = Disposition::stop;
  Status accepted(const Event& e) override {
    seen.emplace_back(e.partition.value, e.seq.value);
    actors.push_back(e.actor);
    return {};
  }
  Disposition refused(const RefusedRecord& r) override {
    verdicts.push_back(r.verdict);
    if (r.verdict != ChainVerdict::broken) return LogVisitor::refused(r);
    return on_broken;
  }
};

TEST(LogFollower, HandsOverEveryEventOfEveryPartitionInChainOrder) {
  MemoryLog log(2);
  Writer a{log, Partition(0)}, b{log, Partition(1)};
  a.start();
  b.start();
  a.command(2);
  b.command(3);
  a.command(1);
  LogFollower f(log);
  ASSERT_TRUE(f.open().ok());
  Recorder r;
  ASSERT_TRUE(f.follow_to_end(r).ok());
  std::vector<std::uint64_t> p0, p1;
  for (auto [p, s] : r.seen) (p == 0 ? p0 : p1).push_back(s);
  EXPECT_EQ(p0, (std::vector<std::uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(p1, (std::vector<std::uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(f.records_read(), 8u);
  EXPECT_EQ(f.events_accepted(), 8u);
  EXPECT_FALSE(f.mid_command());
  EXPECT_EQ(f.cursor(Partition(0)).chain.last_hash(), a.hash);
  EXPECT_EQ(f.cursor(Partition(1)).next_offset, Offset(4));
}

// The embedded log hands its readers in this process the events its writer sealed (EventLog's
// LogRecord::event), from a ring per partition: the follower takes those as they are and decodes
// the bytes of every other record (older than the ring, or of a log opened again). The attached
// events here carry another actor, which shows which of the two each event seen came from.
TEST(LogFollower, TakesTheEventsThisProcessAppendedAsSealedAndDecodesTheRest) {
  const testing::ScratchDir dir;
  constexpr std::uint32_t kPartitions = 64;  // the ring's smallest
  const std::size_t ring = embedded_recent_events(kPartitions);
  const std::size_t commands = ring + 44;
  auto actors_read = [&](EventLog& log, LogFollowerOptions options) {
    LogFollower f(log, options);
    EXPECT_TRUE(f.open().ok());
    Recorder r;
    EXPECT_TRUE(f.follow_to_end(r).ok());
    EXPECT_EQ(r.seen.size(), commands + 1);
    for (std::size_t i = 0; i < r.seen.size(); ++i) EXPECT_EQ(r.seen[i].second, i + 1) << "in chain order";
    return r.actors;
  };
  {
    auto opened = open_embedded_log({dir.str(), kPartitions, /*sync=*/false});
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    EventLog& log = *opened.value();
    EXPECT_TRUE(log.shares_appended_events());
    Writer w{log};
    w.attach_as = "attached";
    w.start();
    for (std::size_t i = 0; i < commands; ++i) w.command(1);

    auto reader = log.open_reader(std::vector<Offset>(kPartitions));
    ASSERT_TRUE(reader.ok());
    std::vector<LogRecord> records;
    ASSERT_TRUE(reader.value()->poll(1000, 0ms, records).ok());
    ASSERT_EQ(records.size(), commands + 1);
    for (const LogRecord& rec : records) {
      const bool in_ring = rec.offset.value + ring >= records.size();
      ASSERT_EQ(rec.event != nullptr, in_ring) << "offset " << rec.offset.value;
      if (!in_ring) continue;
      auto decoded = decode_event(rec.bytes);
      ASSERT_TRUE(decoded.ok());
      EXPECT_EQ(rec.event->seq, decoded.value().seq);
      EXPECT_EQ(rec.event->hash, decoded.value().hash);
      EXPECT_EQ(rec.event->data, decoded.value().data);
    }

    const auto actors = actors_read(log, {});
    for (std::size_t i = 0; i < actors.size(); ++i)
      EXPECT_EQ(actors[i], i + ring >= actors.size() ? "attached" : "") << "offset " << i;
    // The audit's canonical-form check reads every record's bytes.
    LogFollowerOptions canonical;
    canonical.require_canonical_form = true;
    for (const std::string& actor : actors_read(log, canonical)) EXPECT_EQ(actor, "");
  }
  auto again = open_embedded_log({dir.str(), kPartitions, false});
  ASSERT_TRUE(again.ok()) << again.status().message();
  for (const std::string& actor : actors_read(*again.value(), {}))
    EXPECT_EQ(actor, "") << "a log opened again decodes";
  EXPECT_FALSE(MemoryLog(1).shares_appended_events());
}

TEST(LogFollower, SkipsADuplicateAndAZombieAndGoesOn) {
  MemoryLog log(1);
  Writer w{log};
  w.start();
  const auto first = w.command(1);
  w.append(first);  // a retried append
  Writer zombie = w;
  w.start();  // a new writer fences the old one
  zombie.command(1);
  w.command(1);
  LogFollower f(log);
  ASSERT_TRUE(f.open().ok());
  Recorder r;
  ASSERT_TRUE(f.follow_to_end(r).ok());
  EXPECT_EQ(r.verdicts, (std::vector<ChainVerdict>{ChainVerdict::duplicate, ChainVerdict::zombie}));
  EXPECT_EQ(r.seen.size(), 4u);
  EXPECT_EQ(f.cursor(Partition(0)).chain.last_seq(), Seq(4));
}

TEST(LogFollower, StopsOnABreakUnlessTheVisitorAdoptsIt) {
  MemoryLog log(1);
  Writer w{log};
  w.start();
  w.command(1);
  w.last = Seq(w.last.value + 1);  // seq 3 goes missing
  w.command(1);
  w.command(1);
  {
    LogFollower f(log);
    ASSERT_TRUE(f.open().ok());
    Recorder r;
    const Status s = f.follow_to_end(r);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.message(), "partition 0 seq 4 does not extend the hash chain");
  }
  LogFollower f(log);
  ASSERT_TRUE(f.open().ok());
  Recorder r;
  r.on_broken = Disposition::adopt;
  ASSERT_TRUE(f.follow_to_end(r).ok());
  EXPECT_EQ(r.seen, (std::vector<std::pair<std::uint32_t, std::uint64_t>>{{0, 1}, {0, 2}, {0, 4}, {0, 5}}));
}

TEST(LogFollower, GivesAnUndecodableRecordToTheVisitorAsWritten) {
  MemoryLog log(1);
  Writer w{log};
  w.start();
  w.command(1);
  w.command(1);
  auto reader = log.open_reader({Offset(1)});
  std::vector<LogRecord> records;
  ASSERT_TRUE(reader.value()->poll(1, 0ms, records).ok());
  auto edited = nlohmann::json::parse(records[0].bytes);
  edited["data"]["wallet"] = "vba-99";
  log.overwrite(Partition(0), Offset(1), edited.dump());

  LogFollower f(log);
  ASSERT_TRUE(f.open().ok());
  Recorder r;
  EXPECT_EQ(f.follow_to_end(r).message(), "partition 0 offset 1: hash mismatch");

  struct Adopter : Recorder {
    std::string problem;
    std::string wallet;
    Disposition refused(const RefusedRecord& rr) override {
      problem = rr.problem;
      wallet = std::get<CollectionWalletExpired>(rr.event->data).wallet.value;
      return Disposition::adopt;
    }
  } adopter;
  LogFollower g(log);
  ASSERT_TRUE(g.open().ok());
  ASSERT_TRUE(g.follow_to_end(adopter).ok());
  EXPECT_EQ(adopter.problem, "hash mismatch");
  EXPECT_EQ(adopter.wallet, "vba-99");
  EXPECT_EQ(adopter.seen.size(), 3u);  // the edited event's claimed hash still chains the next one
}

TEST(LogFollower, RefusesAnEventNotInCanonicalFormOnlyWhenAsked) {
  MemoryLog log(1);
  Writer w{log};
  w.start();
  Event e = w.make(EventType::collection_wallet_expired, Seq(2), 1);
  // Re-spaced and re-hashed over its new bytes: the hash holds, the form is not canonical.
  const std::string wire = seal(e);
  std::string body = wire.substr(wire.find("\",") + 2);
  body.replace(body.find("\"data\":"), 7, "\"data\": ");
  EncodedEvent odd = w.encode(e);
  odd.bytes = "{\"hash\":\"" + to_hex(sha256({e.prev_hash, "{", body})) + "\"," + body;
  ASSERT_TRUE(log.append(std::vector<EncodedEvent>{odd}).ok());

  LogFollower lenient(log);
  ASSERT_TRUE(lenient.open().ok());
  Recorder r;
  ASSERT_TRUE(lenient.follow_to_end(r).ok());
  EXPECT_EQ(r.seen.size(), 2u);

  LogFollower strict(log, LogFollowerOptions{.require_canonical_form = true});
  ASSERT_TRUE(strict.open().ok());
  Recorder s;
  EXPECT_EQ(strict.follow_to_end(s).message(),
            "partition 0 offset 1: its bytes are not the event's canonical form");
  EXPECT_EQ(s.seen.size(), 1u);
}

TEST(LogFollower, HoldsBackRecordsPastUntilForALaterStep) {
  MemoryLog log(2);
  Writer a{log, Partition(0)}, b{log, Partition(1)};
  a.start();
  b.start();
  a.command(2);
  b.command(2);
  LogFollower f(log);
  ASSERT_TRUE(f.open().ok());
  Recorder r;
  ASSERT_TRUE(f.follow_to(r, {Offset(1), Offset(3)}).ok());
  EXPECT_EQ(r.seen.size(), 4u);
  EXPECT_EQ(f.cursor(Partition(0)).next_offset, Offset(1));
  EXPECT_FALSE(f.follow_to(r, {Offset(4), Offset(3)}).ok()) << "past the end is an error, not a wait";
  ASSERT_TRUE(f.follow_to_end(r).ok());
  EXPECT_EQ(r.seen.size(), 6u);
  EXPECT_EQ(r.seen[4], (std::pair<std::uint32_t, std::uint64_t>{0, 2}));
}

TEST(LogFollower, ResumesFromCursorsAndKnowsCommandBoundaries) {
  MemoryLog log(1);
  Writer w{log};
  w.start();
  w.command(3);
  LogFollower f(log, LogFollowerOptions{1});  // one record per poll
  ASSERT_TRUE(f.open().ok());
  Recorder r;
  ASSERT_TRUE(f.step(r, 0ms).ok());
  ASSERT_TRUE(f.step(r, 0ms).ok());
  EXPECT_TRUE(f.mid_command());
  std::vector<FollowCursor> cursors{f.cursor(Partition(0))};
  LogFollower g(log);
  ASSERT_TRUE(g.open(cursors).ok());
  Recorder rest;
  ASSERT_TRUE(g.follow_to_end(rest).ok());
  EXPECT_EQ(rest.seen, (std::vector<std::pair<std::uint32_t, std::uint64_t>>{{0, 3}, {0, 4}}));
  EXPECT_FALSE(g.mid_command());
}

// check_positions: a stored position is trusted only where the log holds its head (a peer's
// checkpoint, a snapshot). One row per way a position can disagree with the log, and the ways a
// good one is still found (records past its head: duplicates, a zombie's).
TEST(CheckPositions, HoldsWhereTheLogHasTheHeadAndNamesWhatDisagrees) {
  MemoryLog log(2);
  Writer a{log, Partition(0)}, b{log, Partition(1)};
  a.start();
  b.start();
  a.command(2);
  const auto last = a.command(1);
  b.command(1);
  LogFollower f(log);
  ASSERT_TRUE(f.open().ok());
  Recorder r;
  ASSERT_TRUE(f.follow_to_end(r).ok());
  const std::vector<FollowCursor> good = f.cursors();
  EXPECT_TRUE(check_positions(log, good).ok());
  EXPECT_TRUE(check_positions(log, std::vector<FollowCursor>(2)).ok()) << "no event yet holds anywhere";

  struct Row {
    std::string what;
    std::function<void(FollowCursor&)> edit;
    std::string error;
  };
  const std::vector<Row> rows{
      {"a hash the log does not have",
       [](FollowCursor& c) {
         c.chain = ChainFollower(c.chain.last_seq(), std::string(64, 'a'), c.chain.epoch());
       },
       "partition 0 seq 4: the log's event (offset 3) has hash "},
      {"another epoch",
       [](FollowCursor& c) { c.chain = ChainFollower(c.chain.last_seq(), c.chain.last_hash(), Epoch(7)); },
       "partition 0 seq 4: the log's event (offset 3) has hash "},
      {"a position past the log's end", [](FollowCursor& c) { c.next_offset = Offset(9); },
       "partition 0: the log ends at offset 4, before the position's offset 9"},
      {"a seq the log does not have before the position",
       [](FollowCursor& c) { c.chain = ChainFollower(Seq(9), c.chain.last_hash(), c.chain.epoch()); },
       "partition 0: the log holds no seq 9 with hash "},
      {"a position past an event that extends its head",
       [&](FollowCursor& c) {
         const Event& third = last.front();
         c.chain = ChainFollower(Seq(third.seq.value - 1), third.prev_hash, third.epoch);
       },
       "partition 0: the position (offset 4) is past seq 4 (offset 3), which extends its head"},
  };
  for (const Row& row : rows) {
    std::vector<FollowCursor> cursors = good;
    row.edit(cursors[0]);
    const Status s = check_positions(log, cursors);
    ASSERT_FALSE(s.ok()) << row.what;
    EXPECT_EQ(s.message().substr(0, row.error.size()), row.error) << row.what << ": " << s.message();
  }
  EXPECT_FALSE(check_positions(log, std::vector<FollowCursor>(1)).ok()) << "a cursor per partition";

  // A duplicate and a fenced writer's event after the head: the head is still found.
  const auto second = a.command(1);
  a.append(second);
  Writer zombie = a;
  a.start();
  zombie.command(1);
  LogFollower g(log);
  ASSERT_TRUE(g.open().ok());
  Recorder all;
  ASSERT_TRUE(g.follow_to_end(all).ok());
  std::vector<FollowCursor> past = g.cursors();
  EXPECT_TRUE(check_positions(log, past).ok());
  past[0] = FollowCursor{ChainFollower(second.front().seq, second.front().hash, second.front().epoch),
                         g.cursor(Partition(0)).next_offset, false};
  EXPECT_FALSE(check_positions(log, past).ok()) << "WriterStarted after it extends it";
}

}  // namespace
}  // namespace kobo
