// common/token_bucket.h: a burst, then one a refill period, with the wait until the next said;
// buckets kept per key, a bounded number of them.
#include "common/token_bucket.h"

#include <gtest/gtest.h>

namespace kobo {
namespace {

using namespace std::chrono_literals;
using Clock = TokenBucket::Clock;

TEST(TokenBucket, AllowsABurstThenOneARefillAndSaysHowLongToWait) {
  const Clock::time_point t0{};
  TokenBucket b({/*rate_per_s=*/2, /*burst=*/3}, t0);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(b.take(t0).allowed) << i;
  const auto refused = b.take(t0);
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.retry_after, 500ms);
  EXPECT_FALSE(b.take(t0 + 499ms).allowed);
  EXPECT_TRUE(b.take(t0 + 500ms).allowed);
  // Idle time fills it up to the burst, no more.
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(b.take(t0 + 1h).allowed) << i;
  EXPECT_FALSE(b.take(t0 + 1h).allowed);
  // A clock that goes back takes nothing and gives nothing.
  EXPECT_FALSE(b.take(t0).allowed);
}

TEST(KeyedTokenBuckets, KeepsOneBucketPerKeyAndDropsTheLeastRecentlyUsed) {
  const Clock::time_point t0{};
  KeyedTokenBuckets buckets({1, 1}, 2);
  EXPECT_TRUE(buckets.take("a", t0).allowed);
  EXPECT_FALSE(buckets.take("a", t0).allowed);
  EXPECT_TRUE(buckets.take("b", t0).allowed) << "another key has its own bucket";
  EXPECT_FALSE(buckets.take("a", t0).allowed);  // a is the most recently used now
  EXPECT_TRUE(buckets.take("c", t0).allowed);   // drops b, the least recently used
  EXPECT_EQ(buckets.size(), 2u);
  EXPECT_FALSE(buckets.take("a", t0).allowed) << "a was kept";
  EXPECT_TRUE(buckets.take("b", t0).allowed) << "a dropped bucket comes back full";
}

}  // namespace
}  // namespace kobo
