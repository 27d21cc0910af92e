#pragma once
// FairQueue: the writer's queue of commands, shared fairly between businesses (docs/security.md,
// "Rate limits and fairness"). Each business (or key) has its own first-come queue, and the
// queues are drained round-robin, one command each in turn, so a burst of one tenant's commands
// delays another's by at most one command per business waiting, not by the whole burst. A key
// holds at most `per_key_max` commands; push() refuses beyond that, as beyond `total_max` in all.
//
// front() and pop_front() are the next command in that order. Not thread-safe: the writer's
// queue is guarded by its mutex.

#include <cstddef>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>

#include "common/assert.h"

namespace kobo {

template <typename T>
class FairQueue {
 public:
  FairQueue(std::size_t total_max, std::size_t per_key_max)
      : total_max_(total_max), per_key_max_(per_key_max) {
    KOBO_ASSERT(total_max > 0 && per_key_max > 0, "a queue takes something");
  }

  enum class Pushed { queued, key_full, full };
  // Whether push(key, …) would queue it, without queuing anything.
  Pushed admits(const std::string& key) const {
    if (size_ >= total_max_) return Pushed::full;
    const auto it = queues_.find(key);
    if (it != queues_.end() && it->second.size() >= per_key_max_) return Pushed::key_full;
    return Pushed::queued;
  }
  Pushed push(const std::string& key, T item) {
    if (const Pushed p = admits(key); p != Pushed::queued) return p;
    auto [it, added] = queues_.try_emplace(key);
    if (added) turns_.push_back(key);
    it->second.push_back(std::move(item));
    ++size_;
    return Pushed::queued;
  }

  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }

  T& front() {
    KOBO_ASSERT(!empty(), "front() of a queue with something in it");
    return queues_.at(turns_.front()).front();
  }
  // Takes the front command; its key goes to the back of the turns when it has more.
  void pop_front() {
    KOBO_ASSERT(!empty(), "pop_front() of a queue with something in it");
    std::string key = std::move(turns_.front());
    turns_.pop_front();
    auto it = queues_.find(key);
    it->second.pop_front();
    --size_;
    if (it->second.empty())
      queues_.erase(it);  // an idle key holds no memory
    else
      turns_.push_back(std::move(key));
    KOBO_ASSERT(turns_.size() == queues_.size(), "each key with commands has one turn");
  }

  // Everything, in the order it would be taken.
  std::deque<T> take_all() {
    std::deque<T> out;
    while (!empty()) {
      out.push_back(std::move(front()));
      pop_front();
    }
    return out;
  }

 private:
  const std::size_t total_max_;
  const std::size_t per_key_max_;
  std::unordered_map<std::string, std::deque<T>> queues_;
  std::deque<std::string> turns_;  // the keys with commands, in the order they are served
  std::size_t size_ = 0;
};

}  // namespace kobo
