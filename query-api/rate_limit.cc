#include "query-api/rate_limit.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "query-api/envelope.h"

namespace kobo::api {

TokenBuckets::TokenBuckets(double per_second, std::size_t keys_max)
    : rate_(per_second),
      capacity_(std::max(1.0, per_second)),
      shard_max_(std::max<std::size_t>(1, keys_max / kShards)) {
  KOBO_ASSERT(per_second > 0, "a limit admits something");
}

// Forgets a key to make room: one whose bucket is full again (it carries no state) among the
// first few, else the first.
void TokenBuckets::make_room(Shard& s, Clock::time_point now) {
  constexpr int kLooked = 8;
  auto it = s.buckets.begin();
  for (int i = 0; i < kLooked && it != s.buckets.end(); ++i, ++it) {
    const double refilled =
        it->second.tokens + std::chrono::duration<double>(now - it->second.at).count() * rate_;
    if (refilled >= capacity_) {
      s.buckets.erase(it);
      return;
    }
  }
  s.buckets.erase(s.buckets.begin());
}

TokenBuckets::Verdict TokenBuckets::take(std::uint64_t key, Clock::time_point now) {
  Shard& s = shards_[key % kShards];
  std::lock_guard lock(s.mu);
  auto it = s.buckets.find(key);
  if (it == s.buckets.end()) {
    if (s.buckets.size() >= shard_max_) make_room(s, now);
    it = s.buckets.emplace(key, Bucket{capacity_, now}).first;
  }
  KOBO_ASSERT(s.buckets.size() <= shard_max_, "the keys tracked are bounded");
  Bucket& b = it->second;
  const double elapsed = std::max(0.0, std::chrono::duration<double>(now - b.at).count());
  b.tokens = std::min(capacity_, b.tokens + elapsed * rate_);
  b.at = std::max(b.at, now);
  Verdict v;
  v.limit = static_cast<std::uint64_t>(capacity_);
  if (b.tokens >= 1.0) {
    b.tokens -= 1.0;
    v.remaining = static_cast<std::uint64_t>(b.tokens);
    return v;
  }
  v.admitted = false;
  v.retry_after_s = (1.0 - b.tokens) / rate_;
  return v;
}

std::size_t TokenBuckets::tracked() const {
  std::size_t n = 0;
  for (const Shard& s : shards_) {
    std::lock_guard lock(s.mu);
    n += s.buckets.size();
  }
  return n;
}

RateLimitHooks::RateLimitHooks(RateLimitOptions options, EdgeHooks& next) : next_(next) {
  if (options.reads_per_second > 0) reads_.emplace(options.reads_per_second, options.keys_max);
  if (options.writes_per_second > 0) writes_.emplace(options.writes_per_second, options.keys_max);
}

std::optional<http::Response> RateLimitHooks::admit(const RouteTraits& route, const http::Request& request) {
  TokenBuckets* buckets = route.kind == RouteKind::command ? (writes_ ? &*writes_ : nullptr)
                          : route.kind == RouteKind::read  ? (reads_ ? &*reads_ : nullptr)
                                                           : nullptr;
  const std::string_view key = request.header("x-service-key");
  if (buckets == nullptr || key.empty())
    return next_.admit(route, request);  // no key: authentication answers
  const auto v = buckets->take(std::hash<std::string_view>{}(key), TokenBuckets::Clock::now());
  if (!v.admitted) return too_many_requests(v);
  return next_.admit(route, request);
}

http::Response too_many_requests(const TokenBuckets::Verdict& v) {
  http::Response r = http::error(429, "Too many requests");
  const auto seconds = std::to_string(static_cast<std::uint64_t>(std::max(1.0, std::ceil(v.retry_after_s))));
  r.headers.emplace_back("Retry-After", seconds);
  r.headers.emplace_back("RateLimit-Limit", std::to_string(v.limit));
  r.headers.emplace_back("RateLimit-Remaining", std::to_string(v.remaining));
  r.headers.emplace_back("RateLimit-Reset", seconds);
  return r;
}

}  // namespace kobo::api
