#pragma once
// Per-key rate limits (docs/security.md, "Rate limits and fairness"): a token bucket per API key
// for reads and another for commands, refilled at the key's rate per second and holding at most
// one second's worth (at least one request). The rate is the key's business's own, when the admin
// set one (BusinessRateLimitsSet, PUT /v1/admin/businesses/{id}/rate-limits), else the
// deployment's (`--rate-limit-reads`, `--rate-limit-writes`); 0 is no limit. A request over its
// key's limit is answered 429 with Retry-After and the RateLimit-Limit, RateLimit-Remaining and
// RateLimit-Reset fields of draft-ietf-httpapi-ratelimit-headers-03 (section 3), before any other
// work.
//
// A business's own limits are read from the views (`OwnLimitsOf`) once per key and per
// `own_refresh`: a change applies on every node within its projection lag and that interval.
//
// Bounded in memory: at most `keys_max` keys are tracked per table; past that, a key whose bucket
// is full again (it carries no state) is forgotten first, else any. A key is its x-service-key
// header's hash, so the tables hold no secret; a request without one is left to authentication
// (401).
//
// Thread-safe and lock-light: the keys are sharded, each shard under its own mutex held for a
// lookup and a few arithmetic operations (the views are read outside it).

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "common/token_bucket.h"
#include "events/event.h"
#include "query-api/route.h"

namespace kobo::api {

// A token bucket (common/token_bucket.h) per key, each at the rate its take() names.
class TokenBuckets {
 public:
  using Clock = TokenBucket::Clock;
  struct Verdict {
    bool admitted = true;
    std::uint64_t limit = 0;      // the bucket's size
    std::uint64_t remaining = 0;  // whole tokens left after this request
    double retry_after_s = 0;     // when refused: until a token is there
  };

  explicit TokenBuckets(std::size_t keys_max);
  // A token of `key`'s bucket, which gains `per_second` (> 0) a second and holds that many (at
  // least one); a bucket whose rate changed keeps what it holds, up to the new size.
  Verdict take(std::uint64_t key, double per_second, Clock::time_point now);
  std::size_t tracked() const;

 private:
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<std::uint64_t, TokenBucket> buckets;
  };
  static constexpr std::size_t kShards = 16;
  static void make_room(Shard& s, Clock::time_point now);

  const std::size_t shard_max_;
  std::array<Shard, kShards> shards_;
};

// The own rate limits of the business whose key is `key` (the x-service-key header); nullopt
// when the key is unknown or its business has none. May read the views; called outside the locks.
using OwnLimitsOf = std::function<std::optional<BusinessRateLimitsSet>(std::string_view key)>;

struct RateLimitOptions {
  double reads_per_second = 0;   // per key, the deployment's; 0: reads are not limited
  double writes_per_second = 0;  // per key, the deployment's; 0: commands are not limited
  std::size_t keys_max = 100'000;
  OwnLimitsOf own;  // null: every key has the deployment's limits
  std::chrono::milliseconds own_refresh{1'000};
};

// The admit hook of the route wrapper with the limits above; every other hook as `next` has it.
class RateLimitHooks final : public EdgeHooks {
 public:
  RateLimitHooks(RateLimitOptions options, EdgeHooks& next);
  std::optional<http::Response> admit(const RouteTraits& route, const http::Request& request) override;
  bool forward(const Exchange& x, http::Responder& respond) override { return next_.forward(x, respond); }
  void command_answered(const Exchange& x, LogPosition at, http::Response& answer) override {
    next_.command_answered(x, at, answer);
  }
  void before_read(const Exchange& x, http::Responder respond,
                   std::function<void(http::Responder)> then) override {
    next_.before_read(x, std::move(respond), std::move(then));
  }
  void read_answered(const Exchange& x, http::Response& answer) override { next_.read_answered(x, answer); }

 private:
  // The key's business's own limits, as read at most own_refresh ago.
  std::optional<BusinessRateLimitsSet> own_limits(std::uint64_t hash, std::string_view key,
                                                  TokenBuckets::Clock::time_point now);

  struct Own {
    std::optional<BusinessRateLimitsSet> limits;
    TokenBuckets::Clock::time_point read_at;
  };
  struct OwnShard {
    std::mutex mu;
    std::unordered_map<std::uint64_t, Own> keys;
  };
  static constexpr std::size_t kOwnShards = 16;

  const RateLimitOptions options_;
  EdgeHooks& next_;
  TokenBuckets reads_, writes_;
  std::array<OwnShard, kOwnShards> own_;
};

// The 429 answer of a refused verdict.
http::Response too_many_requests(const TokenBuckets::Verdict& v);

}  // namespace kobo::api
