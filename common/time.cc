#include "common/time.h"

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

std::optional<UnixMs> parse_iso8601(std::string_view s) {
  // 2026-11-21T07:02:00.000Z
  if (s.size() != 24 || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != '.' || s[23] != 'Z')
    return std::nullopt;
  auto day = parse_date(s.substr(0, 10));
  int hh = 0, mm = 0, ss = 0, milli = 0;
  if (!day || !parse_digits(s.substr(11, 2), hh) || !parse_digits(s.substr(14, 2), mm) ||
      !parse_digits(s.substr(17, 2), ss) || !parse_digits(s.substr(20, 3), milli) || hh > 23 || mm > 59 ||
      ss > 59)
    return std::nullopt;
  return *day + hh * 3'600'000LL + mm * 60'000LL + ss * 1000LL + milli;
}

}  // namespace kobo
