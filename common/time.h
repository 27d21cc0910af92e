#pragma once
// Wall-clock time as the service shows it: milliseconds since the epoch, UTC, and the
// `2026-11-21T07:02:00.000Z` text form used in every record.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kobo {

using UnixMs = std::int64_t;

UnixMs now_ms();
std::string format_iso8601(UnixMs ms);
// Parses `YYYY-MM-DD` to the first millisecond of that UTC day; nullopt when malformed.
std::optional<UnixMs> parse_date(std::string_view yyyy_mm_dd);
// Parses an ISO 8601 date (its first millisecond, UTC), or an RFC 3339 date-time: `T`, hours,
// minutes, seconds (60: a leap second), an optional fraction (milliseconds count, finer digits
// are dropped), `Z` or an offset. nullopt when malformed. What the API's time parameters take.
std::optional<UnixMs> parse_time(std::string_view text);
// Parses the service's own timestamp format (what format_iso8601() writes): parse_time()'s form
// with three fraction digits, `Z` and no leap second. nullopt when malformed.
std::optional<UnixMs> parse_iso8601(std::string_view text);

constexpr UnixMs kMsPerDay = 86'400'000;

}  // namespace kobo
