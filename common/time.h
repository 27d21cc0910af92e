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
// Parses the service's own timestamp format; nullopt when malformed.
std::optional<UnixMs> parse_iso8601(std::string_view text);

constexpr UnixMs kMsPerDay = 86'400'000;

}  // namespace kobo
