#pragma once
// The acceptance rule every reader of the log applies (docs/architecture.md section 3): the
// writer's own replay, the projectors and `kobo audit` all go through ChainFollower, so they agree
// on what the log says.
//
// Not thread-safe: one follower per partition per reader.

#include <cstdint>
#include <deque>
#include <string>
#include <utility>

#include "events/event.h"

namespace kobo {

enum class ChainVerdict {
  accept,     // extends the chain: seq = last + 1, prevHash = last hash, epoch not older
  duplicate,  // an event already accepted (same seq and hash), as a retried append can cause
  zombie,     // from an older epoch and not extending the chain: a fenced writer; skip, report
  broken,     // anything else: the reader must stop
};

std::string_view to_string(ChainVerdict v);

class ChainFollower {
 public:
  ChainFollower() = default;
  // Resumes after an accepted event (e.g. from a projector's stored position).
  ChainFollower(Seq last_seq, std::string last_hash, Epoch epoch);

  // Judges `e` and, when it is accepted, advances past it.
  ChainVerdict follow(const Event& e);

  Seq last_seq() const {
    KOBO_ASSERT(recent_.empty() || recent_.back().first == last_seq_,
                "the last event remembered is the head");
    return last_seq_;
  }
  const std::string& last_hash() const {
    KOBO_ASSERT(recent_.empty() || recent_.back().second == last_hash_,
                "the last event remembered is the head");
    return last_hash_;
  }
  Epoch epoch() const {
    KOBO_ASSERT(recent_.size() <= kRecentMax, "the duplicates a follower recognises are bounded");
    return epoch_;
  }

 private:
  static constexpr std::size_t kRecentMax = 4096;  // how far back a duplicate is recognised
  Seq last_seq_{0};
  std::string last_hash_{kGenesisHash};
  Epoch epoch_{0};
  std::deque<std::pair<Seq, std::string>> recent_;  // last accepted (seq, hash), oldest first
};

}  // namespace kobo
