#include "app/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace kobo {

namespace {

std::string clock_text(double seconds) {
  const auto s = static_cast<long long>(std::max(0.0, seconds));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  return buf;
}

}  // namespace

ProgressBar::ProgressBar(bool enabled)
    : enabled_(enabled), terminal_(::isatty(STDERR_FILENO) == 1), phase_started_(Clock::now()) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(std::string_view phase, std::uint64_t done, std::uint64_t total) {
  if (!enabled_) return;
  const auto now = Clock::now();
  if (phase != phase_) {
    if (drawn_) std::fputc('\n', stderr);
    drawn_ = false;
    if (!phase_.empty()) phase_started_ = now;  // the first phase started with the bar
    phase_ = phase;
  } else if (done < total && now - last_drawn_ < std::chrono::milliseconds(100)) {
    return;
  }
  last_drawn_ = now;
  constexpr int kWidth = 30;
  const double fraction =
      total == 0 ? 1.0 : std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
  const double elapsed = std::chrono::duration<double>(now - phase_started_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
  const double left = rate > 0 && total > done ? static_cast<double>(total - done) / rate : 0;
  std::string bar(kWidth, '.');
  std::fill_n(bar.begin(), static_cast<int>(fraction * kWidth), '#');
  std::fprintf(stderr, "%s%-5s [%s] %3d%%  %llu/%llu events  %.0f events/s  ETA %s%s",
               terminal_ ? "\r\x1b[K" : "\r", phase_.c_str(), bar.c_str(), static_cast<int>(fraction * 100),
               static_cast<unsigned long long>(done), static_cast<unsigned long long>(total), rate,
               clock_text(left).c_str(), terminal_ ? "" : "   ");
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::finish() {
  if (drawn_) std::fputc('\n', stderr);
  drawn_ = false;
  phase_.clear();
}

}  // namespace kobo
