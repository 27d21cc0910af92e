#pragma once
// Always-on invariant checks. A failed KOBO_ASSERT is a programmer error: it prints where and
// why, then aborts, in release builds too. Never assert on user input; reject it instead.

#include <cstdio>
#include <cstdlib>

namespace kobo::detail {
[[noreturn]] inline void assert_failed(const char* cond, const char* msg, const char* file, int line) {
  std::fprintf(stderr, "{\"level\":\"fatal\",\"msg\":\"assertion failed: %s (%s)\",\"at\":\"%s:%d\"}\n", msg,
               cond, file, line);
  std::fflush(stderr);
  std::abort();
}
}  // namespace kobo::detail

#define KOBO_ASSERT(cond, msg)                                       \
  do {                                                               \
    if (!(cond)) [[unlikely]]                                        \
      ::kobo::detail::assert_failed(#cond, msg, __FILE__, __LINE__); \
  } while (false)

namespace kobo {
// The one searchable way to drop a [[nodiscard]] result on purpose.
template <typename T>
inline void permit_unchecked(T&&) noexcept {}
}  // namespace kobo
