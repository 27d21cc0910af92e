#include "common/token_bucket.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "common/assert.h"

namespace kobo {

TokenBucket::Taken TokenBucket::take(Clock::time_point now) {
  if (now > at_) {
    const double elapsed_s = std::chrono::duration<double>(now - at_).count();
    tokens_ = std::min(limit_.burst, tokens_ + elapsed_s * limit_.rate_per_s);
    at_ = now;
  }
  if (tokens_ >= 1) {
    tokens_ -= 1;
    return {true, std::chrono::milliseconds(0), tokens_};
  }
  const double wait_ms = std::ceil((1 - tokens_) / limit_.rate_per_s * 1000);
  return {false, std::chrono::milliseconds(std::max<std::int64_t>(1, static_cast<std::int64_t>(wait_ms))),
          tokens_};
}

bool TokenBucket::full(Clock::time_point now) const {
  const double elapsed_s = now > at_ ? std::chrono::duration<double>(now - at_).count() : 0.0;
  return tokens_ + elapsed_s * limit_.rate_per_s >= limit_.burst;
}

void TokenBucket::set_limit(TokenBucketLimit limit, Clock::time_point now) {
  KOBO_ASSERT(limit.rate_per_s > 0 && limit.burst >= 1, "a token bucket gains tokens and holds one");
  if (now > at_) {
    tokens_ = std::min(limit_.burst,
                       tokens_ + std::chrono::duration<double>(now - at_).count() * limit_.rate_per_s);
    at_ = now;
  }
  limit_ = limit;
  tokens_ = std::min(tokens_, limit_.burst);
}

KeyedTokenBuckets::KeyedTokenBuckets(TokenBucketLimit limit, std::size_t keys_max)
    : limit_(limit), keys_max_(keys_max) {
  KOBO_ASSERT(limit.rate_per_s > 0 && limit.burst >= 1, "a token bucket gains tokens and holds one");
  KOBO_ASSERT(keys_max > 0, "keyed token buckets hold a bucket");
}

TokenBucket::Taken KeyedTokenBuckets::take(std::string_view key, Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto it = buckets_.find(std::string(key));
  if (it == buckets_.end()) {
    if (buckets_.size() >= keys_max_) {
      buckets_.erase(used_.back());
      used_.pop_back();
    }
    used_.emplace_front(key);
    it = buckets_.emplace(used_.front(), Entry{TokenBucket(limit_, now), used_.begin()}).first;
  } else {
    used_.splice(used_.begin(), used_, it->second.used);
  }
  return it->second.bucket.take(now);
}

std::size_t KeyedTokenBuckets::size() const {
  std::lock_guard lock(mu_);
  return buckets_.size();
}

}  // namespace kobo
