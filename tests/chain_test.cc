#include "events/chain.h"

#include <gtest/gtest.h>

#include "tests/support/sample_events.h"

namespace kobo {
namespace {

// Builds a sealed chain the way a writer would.
struct ChainBuilder {
  Seq last{0};
  std::string hash{kGenesisHash};
  Event next(Epoch epoch, EventType type = EventType::collection_wallet_expired) {
    Event e;
    e.seq = Seq(last.value + 1);
    e.command_seq = e.seq;
    e.epoch = epoch;
    e.prev_hash = hash;
    test::set_sample_data(e, type, e.seq.value);
    permit_unchecked(seal(e));
    last = e.seq;
    hash = e.hash;
    return e;
  }
};

TEST(ChainFollower, AcceptsAnExtendingChain) {
  ChainBuilder b;
  ChainFollower f;
  EXPECT_EQ(f.follow(b.next(Epoch(1), EventType::writer_started)), ChainVerdict::accept);
  EXPECT_EQ(f.follow(b.next(Epoch(1))), ChainVerdict::accept);
  EXPECT_EQ(f.last_seq(), Seq(2));
  EXPECT_EQ(f.epoch(), Epoch(1));
}

TEST(ChainFollower, SkipsADuplicateOfAnAcceptedEvent) {
  ChainBuilder b;
  ChainFollower f;
  const Event e1 = b.next(Epoch(1), EventType::writer_started);
  const Event e2 = b.next(Epoch(1));
  ASSERT_EQ(f.follow(e1), ChainVerdict::accept);
  ASSERT_EQ(f.follow(e2), ChainVerdict::accept);
  EXPECT_EQ(f.follow(e1), ChainVerdict::duplicate);
  EXPECT_EQ(f.follow(e2), ChainVerdict::duplicate);
  EXPECT_EQ(f.last_seq(), Seq(2));
}

TEST(ChainFollower, SkipsAZombieFromAnOlderEpoch) {
  ChainBuilder b;
  ChainFollower f;
  ASSERT_EQ(f.follow(b.next(Epoch(1), EventType::writer_started)), ChainVerdict::accept);
  ChainBuilder zombie = b;  // the old writer keeps going from the same point
  ASSERT_EQ(f.follow(b.next(Epoch(2), EventType::writer_started)), ChainVerdict::accept);
  EXPECT_EQ(f.follow(zombie.next(Epoch(1))), ChainVerdict::zombie);
  EXPECT_EQ(f.follow(b.next(Epoch(2))), ChainVerdict::accept);
}

TEST(ChainFollower, StopsOnAGap) {
  ChainBuilder b;
  ChainFollower f;
  ASSERT_EQ(f.follow(b.next(Epoch(1), EventType::writer_started)), ChainVerdict::accept);
  (void)b.next(Epoch(1));  // dropped
  EXPECT_EQ(f.follow(b.next(Epoch(1))), ChainVerdict::broken);
}

TEST(ChainFollower, StopsOnAWrongPrevHash) {
  ChainBuilder b;
  ChainFollower f;
  ASSERT_EQ(f.follow(b.next(Epoch(1), EventType::writer_started)), ChainVerdict::accept);
  b.hash = std::string(64, 'f');
  EXPECT_EQ(f.follow(b.next(Epoch(1))), ChainVerdict::broken);
}

TEST(ChainFollower, StopsOnAWriterStartedThatDoesNotRaiseTheEpoch) {
  ChainBuilder b;
  ChainFollower f;
  ASSERT_EQ(f.follow(b.next(Epoch(1), EventType::writer_started)), ChainVerdict::accept);
  EXPECT_EQ(f.follow(b.next(Epoch(1), EventType::writer_started)), ChainVerdict::broken);
}

}  // namespace
}  // namespace kobo
