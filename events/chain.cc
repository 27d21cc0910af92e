#include "events/chain.h"

namespace kobo {

std::string_view to_string(ChainVerdict v) {
  switch (v) {
    case ChainVerdict::accept:
      return "accept";
    case ChainVerdict::duplicate:
      return "duplicate";
    case ChainVerdict::zombie:
      return "zombie";
    case ChainVerdict::broken:
      return "broken";
  }
  return "broken";
}

ChainFollower::ChainFollower(Seq last_seq, std::string last_hash, Epoch epoch)
    : last_seq_(last_seq), last_hash_(std::move(last_hash)), epoch_(epoch) {}

ChainVerdict ChainFollower::follow(const Event& e) {
  KOBO_ASSERT(e.seq.value >= 1 && recent_.size() <= kRecentMax, "a chain's events count from 1");
  const bool extends = e.seq.value == last_seq_.value + 1 && e.prev_hash == last_hash_;
  if (extends && e.epoch >= epoch_) {
    if (e.type() == EventType::writer_started && !(e.epoch > epoch_)) return ChainVerdict::broken;
    last_seq_ = e.seq;
    last_hash_ = e.hash;
    epoch_ = e.epoch;
    recent_.emplace_back(e.seq, e.hash);
    if (recent_.size() > kRecentMax) recent_.pop_front();
    KOBO_ASSERT(recent_.size() <= kRecentMax, "the duplicates a follower recognises are bounded");
    KOBO_ASSERT(last_seq_ == e.seq && recent_.back().first == e.seq, "an accepted event is the chain's head");
    // The search for a duplicate below stops at the first entry of its seq: one entry per seq, in order.
    KOBO_ASSERT(recent_.size() < 2 || recent_[recent_.size() - 2].first.value + 1 == e.seq.value,
                "the events a follower remembers are consecutive, oldest first");
    return ChainVerdict::accept;
  }
  if (e.seq <= last_seq_) {
    for (auto it = recent_.rbegin(); it != recent_.rend(); ++it) {
      if (it->first == e.seq) {
        if (it->second == e.hash) return ChainVerdict::duplicate;
        break;
      }
    }
  }
  if (e.epoch < epoch_) return ChainVerdict::zombie;
  KOBO_ASSERT(!extends || e.epoch < epoch_ || e.type() == EventType::writer_started,
              "an event that extends the chain is refused for its epoch only");
  return ChainVerdict::broken;
}

}  // namespace kobo
