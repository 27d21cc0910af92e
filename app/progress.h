#pragma once
// A one-line progress bar on stderr for long runs (`kobo audit`, `kobo replay`): phase, bar,
// done/total, events per second and the time left. Drawn at most ten times a second.
//
// Not thread-safe: call it from the thread that owns it.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace kobo {

class ProgressBar {
 public:
  // `enabled` false: every call is a no-op (stderr is not a terminal and --progress was not given).
  explicit ProgressBar(bool enabled);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void update(std::string_view phase, std::uint64_t done, std::uint64_t total);
  // Ends the line, if one was drawn.
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  const bool enabled_;
  const bool terminal_;
  Clock::time_point phase_started_;
  bool drawn_ = false;
  std::string phase_;
  Clock::time_point last_drawn_{};
};

}  // namespace kobo
