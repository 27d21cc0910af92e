#pragma once
// Wakes readers of an in-process log when something was appended. Internal to events/.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "common/assert.h"

namespace kobo {

class AppendSignal {
 public:
  std::uint64_t generation() const {
    std::lock_guard lock(mu_);
    return generation_;
  }
  void notify() {
    {
      std::lock_guard lock(mu_);
      ++generation_;
      KOBO_ASSERT(generation_ != 0, "a generation only moves forward");
    }
    cv_.notify_all();
  }
  // Waits until the generation moves past `seen` or the timeout passes.
  void wait_past(std::uint64_t seen, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mu_);
    KOBO_ASSERT(seen <= generation_, "a reader waits past a generation it has seen");
    cv_.wait_for(lock, timeout, [&] { return generation_ != seen; });
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::uint64_t generation_ = 0;
};

}  // namespace kobo
