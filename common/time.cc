#include "common/time.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace kobo {
namespace {

bool parse_digits(std::string_view s, int& out) {
  if (s.empty()) return false;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

// Two decimal digits at `at` of `s`, or -1.
int two_digits(std::string_view s, std::size_t at) {
  if (at + 2 > s.size() || s[at] < '0' || s[at] > '9' || s[at + 1] < '0' || s[at + 1] > '9') return -1;
  return (s[at] - '0') * 10 + (s[at + 1] - '0');
}

std::optional<UnixMs> from_civil(int y, int m, int d) {
  using namespace std::chrono;
  const year_month_day ymd{year{y}, month{static_cast<unsigned>(m)}, day{static_cast<unsigned>(d)}};
  if (!ymd.ok()) return std::nullopt;
  return duration_cast<milliseconds>(sys_days{ymd}.time_since_epoch()).count();
}

}  // namespace

UnixMs now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string format_iso8601(UnixMs ms) {
  using namespace std::chrono;
  const sys_days day = floor<days>(sys_time<milliseconds>{milliseconds{ms}});
  const year_month_day ymd{day};
  UnixMs rem = ms - duration_cast<milliseconds>(day.time_since_epoch()).count();
  const int hh = static_cast<int>(rem / 3'600'000);
  rem %= 3'600'000;
  const int mm = static_cast<int>(rem / 60'000);
  rem %= 60'000;
  const int ss = static_cast<int>(rem / 1000);
  const int milli = static_cast<int>(rem % 1000);
  const int year = static_cast<int>(ymd.year());
  char buf[32];
  if (year < 0 || year > 9999) {
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", year,
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), hh, mm, ss, milli);
    return buf;
  }
  // Written digit by digit: every record rendered on a read shows a few of these.
  std::string out = "0000-00-00T00:00:00.000Z";
  const auto digits = [&out](std::size_t at, int width, int v) {
    for (int i = width - 1; i >= 0; --i, v /= 10)
      out[at + static_cast<std::size_t>(i)] = static_cast<char>('0' + v % 10);
  };
  digits(0, 4, year);
  digits(5, 2, static_cast<int>(static_cast<unsigned>(ymd.month())));
  digits(8, 2, static_cast<int>(static_cast<unsigned>(ymd.day())));
  digits(11, 2, hh);
  digits(14, 2, mm);
  digits(17, 2, ss);
  digits(20, 3, milli);
  return out;
}

std::optional<UnixMs> parse_date(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return std::nullopt;
  int y = 0, m = 0, d = 0;
  if (!parse_digits(s.substr(0, 4), y) || !parse_digits(s.substr(5, 2), m) ||
      !parse_digits(s.substr(8, 2), d))
    return std::nullopt;
  return from_civil(y, m, d);
}

std::optional<UnixMs> parse_time(std::string_view s) {
  if (s.size() < 10) return std::nullopt;
  const auto day = parse_date(s.substr(0, 10));
  if (!day || s.size() == 10) return day;
  if ((s[10] != 'T' && s[10] != 't') || s.size() < 20 || s[13] != ':' || s[16] != ':') return std::nullopt;
  const int hh = two_digits(s, 11), mm = two_digits(s, 14), ss = two_digits(s, 17);
  if (hh < 0 || hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 60) return std::nullopt;
  UnixMs t = *day + hh * 3'600'000LL + mm * 60'000LL + ss * 1000LL;
  std::size_t i = 19;
  if (i < s.size() && s[i] == '.') {
    ++i;
    const std::size_t digits = i;
    UnixMs ms = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i)
      if (i - digits < 3) ms = ms * 10 + (s[i] - '0');
    if (i == digits) return std::nullopt;
    for (std::size_t k = std::min<std::size_t>(i - digits, 3); k < 3; ++k) ms *= 10;
    t += ms;
  }
  if (i + 1 == s.size() && (s[i] == 'Z' || s[i] == 'z')) return t;
  if (i + 6 != s.size() || (s[i] != '+' && s[i] != '-') || s[i + 3] != ':') return std::nullopt;
  const int oh = two_digits(s, i + 1), om = two_digits(s, i + 4);
  if (oh < 0 || oh > 23 || om < 0 || om > 59) return std::nullopt;
  const UnixMs offset = oh * 3'600'000LL + om * 60'000LL;
  return s[i] == '+' ? t - offset : t + offset;
}

std::optional<UnixMs> parse_iso8601(std::string_view s) {
  // 2026-11-21T07:02:00.000Z
  if (s.size() != 24 || s[10] != 'T' || s[19] != '.' || s[23] != 'Z' || s.substr(17, 2) == "60")
    return std::nullopt;
  return parse_time(s);
}

}  // namespace kobo
