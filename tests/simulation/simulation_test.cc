// The seeded simulation (tests/simulation/simulation.h) in `make test`: a few seeds, quickly;
// `make sim SEEDS=N` runs many.

#include "tests/simulation/simulation.h"

#include <gtest/gtest.h>

namespace kobo::sim {
namespace {

Options options_for(std::uint64_t seed, int steps) {
  Options o;
  o.seed = seed;
  o.steps = steps;
  return o;
}

TEST(Simulation, SeedsRunWithTheModelTheAuditAndTheViewsAgreeing) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const Options o = options_for(seed, 600);
    const Report r = run(o);
    std::cout << summary(o, r) << "\n";
    EXPECT_TRUE(r.ok) << summary(o, r);
    EXPECT_GT(r.accepted, 50u) << "a simulation that accepts little tests little";
    EXPECT_GT(r.rejected, 20u) << "invalid commands are part of every stream";
  }
}

TEST(Simulation, ASeedReplaysExactly) {
  const Options o = options_for(77, 150);
  const Report first = run(o);
  const Report second = run(o);
  ASSERT_TRUE(first.ok) << summary(o, first);
  EXPECT_EQ(first.log_digest, second.log_digest) << "the same seed must write the same log, byte for byte";
  EXPECT_EQ(first.accepted, second.accepted);
  EXPECT_EQ(first.failed_appends, second.failed_appends);
  const Report other = run(options_for(78, 150));
  EXPECT_NE(first.log_digest, other.log_digest);
}

}  // namespace
}  // namespace kobo::sim
