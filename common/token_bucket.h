#pragma once
// Token buckets: a rate limit that allows bursts. A bucket holds up to `burst` tokens and gains
// `rate_per_s` a second; each request takes one, and a request that finds none is refused with
// the wait until one is there (HTTP 429 with Retry-After). Time is an input (`now`), so tests
// need no clock.
//
// KeyedTokenBuckets keeps one bucket per key (a secret key's id): own-bank name enquiry
// (docs/security.md, "No harvesting"). The per-key request limits (query-api/rate_limit.h) keep
// their buckets in a table of their own, sharded, each bucket at its key's business's rate.
// It holds at most `keys_max` buckets; past that the least recently used is dropped, and a
// dropped bucket comes back full, so the bound errs toward allowing, never toward refusing a key
// that has not been busy. Thread-safe (one mutex; a take is a hash lookup and a few arithmetic
// operations).

#include <chrono>
#include <cstddef>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace kobo {

struct TokenBucketLimit {
  double rate_per_s = 1;  // tokens gained a second; > 0
  double burst = 1;       // the most a bucket holds (and holds when new); >= 1
};

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;
  TokenBucket(TokenBucketLimit limit, Clock::time_point now)
      : limit_(limit), tokens_(limit.burst), at_(now) {}

  struct Taken {
    bool allowed = false;
    std::chrono::milliseconds retry_after{0};  // refused: the wait until a token is there (>= 1 ms)
    double remaining = 0;                      // tokens left after this take
  };
  // Takes a token at `now` when there is one.
  Taken take(Clock::time_point now);
  // Whether the bucket is full at `now` (it carries no state: dropping it loses nothing).
  bool full(Clock::time_point now) const;
  // From `now` on, the bucket gains and holds as `limit` says; what it holds beyond the new burst
  // is dropped.
  void set_limit(TokenBucketLimit limit, Clock::time_point now);
  const TokenBucketLimit& limit() const { return limit_; }

 private:
  TokenBucketLimit limit_;
  double tokens_;
  Clock::time_point at_;  // when tokens_ was last brought up to date
};

class KeyedTokenBuckets {
 public:
  using Clock = TokenBucket::Clock;
  KeyedTokenBuckets(TokenBucketLimit limit, std::size_t keys_max);
  KeyedTokenBuckets(const KeyedTokenBuckets&) = delete;
  KeyedTokenBuckets& operator=(const KeyedTokenBuckets&) = delete;

  TokenBucket::Taken take(std::string_view key, Clock::time_point now = Clock::now());
  const TokenBucketLimit& limit() const { return limit_; }
  std::size_t size() const;

 private:
  struct Entry {
    TokenBucket bucket;
    std::list<std::string>::iterator used;  // its place in used_
  };
  const TokenBucketLimit limit_;
  const std::size_t keys_max_;
  mutable std::mutex mu_;
  std::list<std::string> used_;  // most recently used first
  std::unordered_map<std::string, Entry> buckets_;
};

}  // namespace kobo
