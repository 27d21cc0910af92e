#include "query-api/rate_limit.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "query-api/envelope.h"

namespace kobo::api {

TokenBuckets::TokenBuckets(std::size_t keys_max) : shard_max_(std::max<std::size_t>(1, keys_max / kShards)) {}

// Forgets a key to make room: one whose bucket is full again (it carries no state) among the
// first few, else the first.
void TokenBuckets::make_room(Shard& s, Clock::time_point now) {
  constexpr int kLooked = 8;
  auto it = s.buckets.begin();
  for (int i = 0; i < kLooked && it != s.buckets.end(); ++i, ++it) {
    if (it->second.full(now)) {
      s.buckets.erase(it);
      return;
    }
  }
  s.buckets.erase(s.buckets.begin());
}

TokenBuckets::Verdict TokenBuckets::take(std::uint64_t key, double per_second, Clock::time_point now) {
  KOBO_ASSERT(per_second > 0, "a limit admits something");
  const TokenBucketLimit limit{per_second, std::max(1.0, per_second)};
  Shard& s = shards_[key % kShards];
  std::lock_guard lock(s.mu);
  auto it = s.buckets.find(key);
  if (it == s.buckets.end()) {
    if (s.buckets.size() >= shard_max_) make_room(s, now);
    it = s.buckets.emplace(key, TokenBucket(limit, now)).first;
  } else if (it->second.limit().rate_per_s != per_second) {
    it->second.set_limit(limit, now);
  }
  KOBO_ASSERT(s.buckets.size() <= shard_max_, "the keys tracked are bounded");
  const TokenBucket::Taken taken = it->second.take(now);
  Verdict v;
  v.limit = static_cast<std::uint64_t>(limit.burst);
  v.admitted = taken.allowed;
  v.remaining = static_cast<std::uint64_t>(std::max(0.0, taken.remaining));
  if (!v.admitted) v.retry_after_s = (1.0 - taken.remaining) / per_second;
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

RateLimitHooks::RateLimitHooks(RateLimitOptions options, EdgeHooks& next)
    : options_(std::move(options)), next_(next), reads_(options_.keys_max), writes_(options_.keys_max) {
  KOBO_ASSERT(options_.reads_per_second >= 0 && options_.writes_per_second >= 0,
              "a rate limit is not negative");
}

std::optional<BusinessRateLimitsSet> RateLimitHooks::own_limits(std::uint64_t hash, std::string_view key,
                                                                TokenBuckets::Clock::time_point now) {
  OwnShard& s = own_[hash % kOwnShards];
  {
    std::lock_guard lock(s.mu);
    const auto it = s.keys.find(hash);
    if (it != s.keys.end() && now - it->second.read_at < options_.own_refresh) return it->second.limits;
  }
  auto limits = options_.own(key);  // the views, outside the lock
  std::lock_guard lock(s.mu);
  if (s.keys.size() >= std::max<std::size_t>(1, options_.keys_max / kOwnShards) && !s.keys.contains(hash))
    s.keys.erase(s.keys.begin());
  s.keys[hash] = Own{limits, now};
  return limits;
}

std::optional<http::Response> RateLimitHooks::admit(const RouteTraits& route, const http::Request& request) {
  const bool command = route.kind == RouteKind::command;
  const std::string_view key = request.header("x-service-key");
  if ((!command && route.kind != RouteKind::read) || key.empty())
    return next_.admit(route, request);  // not limited, or no key: authentication answers
  const auto now = TokenBuckets::Clock::now();
  const std::uint64_t hash = std::hash<std::string_view>{}(key);
  double per_second = command ? options_.writes_per_second : options_.reads_per_second;
  if (options_.own)
    if (const auto own = own_limits(hash, key, now))
      if (const auto& limit = command ? own->writes_per_second : own->reads_per_second)
        per_second = static_cast<double>(*limit);
  if (per_second <= 0) return next_.admit(route, request);
  const auto v = (command ? writes_ : reads_).take(hash, per_second, now);
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
