#pragma once
// Per-key rate limits (docs/security.md, "Rate limits and fairness"): a token bucket per API key
// for reads and another for writes, refilled at the configured rate per second and holding at
// most one second's worth (at least one request). A request over its key's limit is answered 429
// with Retry-After and the RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset fields of
// draft-ietf-httpapi-ratelimit-headers-03 (section 3), before any other work.
//
// Bounded in memory: at most `keys_max` keys are tracked; past that, a key whose bucket is full
// again (it carries no state) is forgotten first, else any. A key is its x-service-key header's
// hash, so the table holds no secret; a request without one is left to authentication (401).
//
// Thread-safe and lock-light: the keys are sharded, each shard under its own mutex held for a
// lookup and a few arithmetic operations.

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "query-api/route.h"

namespace kobo::api {

class TokenBuckets {
 public:
  using Clock = std::chrono::steady_clock;
  struct Verdict {
    bool admitted = true;
    std::uint64_t limit = 0;      // the bucket's size
    std::uint64_t remaining = 0;  // whole tokens left after this request
    double retry_after_s = 0;     // when refused: until a token is there
  };

  // `per_second` > 0.
  TokenBuckets(double per_second, std::size_t keys_max);
  Verdict take(std::uint64_t key, Clock::time_point now);
  std::size_t tracked() const;

 private:
  struct Bucket {
    double tokens = 0;
    Clock::time_point at;
  };
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<std::uint64_t, Bucket> buckets;
  };
  static constexpr std::size_t kShards = 16;
  void make_room(Shard& s, Clock::time_point now);

  const double rate_;
  const double capacity_;
  const std::size_t shard_max_;
  std::array<Shard, kShards> shards_;
};

struct RateLimitOptions {
  double reads_per_second = 0;   // per key; 0: reads are not limited
  double writes_per_second = 0;  // per key; 0: commands are not limited
  std::size_t keys_max = 100'000;
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
  EdgeHooks& next_;
  std::optional<TokenBuckets> reads_, writes_;
};

// The 429 answer of a refused verdict.
http::Response too_many_requests(const TokenBuckets::Verdict& v);

}  // namespace kobo::api
