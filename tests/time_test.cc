// common/time.h: timestamps are written as ISO 8601 UTC with milliseconds, the form every record
// shows, and read back to the same instant.
#include "common/time.h"

#include <gtest/gtest.h>

namespace kobo {
namespace {

TEST(Time, WritesIso8601WithMillisecondsAndReadsItBack) {
  EXPECT_EQ(format_iso8601(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_iso8601(1'764'000'000'123), "2025-11-24T16:00:00.123Z");
  EXPECT_EQ(format_iso8601(951'782'400'000 + 86'399'999), "2000-02-29T23:59:59.999Z");  // a leap day
  EXPECT_EQ(format_iso8601(253'402'300'799'999), "9999-12-31T23:59:59.999Z");
  // Every field at every width, across years: what snprintf would write.
  for (UnixMs t = 0; t < 4'102'444'800'000; t += 7'919'876'543) {
    const std::string text = format_iso8601(t);
    ASSERT_EQ(text.size(), 24u) << t;
    EXPECT_EQ(parse_iso8601(text), t) << text;
  }
}

// The API's time parameters (a statement's from and to, a balance's at): a date, or an RFC 3339
// date-time with or without a fraction, in UTC or with an offset.
TEST(Time, ReadsDatesAndRfc3339DateTimes) {
  const UnixMs day = *parse_date("2026-11-21");
  EXPECT_EQ(parse_time("2026-11-21"), day);
  EXPECT_EQ(parse_time("2026-11-21T07:02:00Z"), day + 25'320'000);
  EXPECT_EQ(parse_time("2026-11-21t07:02:00z"), day + 25'320'000);
  EXPECT_EQ(parse_time("2026-11-21T07:02:00.5Z"), day + 25'320'500);
  EXPECT_EQ(parse_time("2026-11-21T07:02:00.123456Z"), day + 25'320'123);  // finer digits dropped
  EXPECT_EQ(parse_time("2026-11-21T08:02:00+01:00"), day + 25'320'000);
  EXPECT_EQ(parse_time("2026-11-21T06:32:00-00:30"), day + 25'320'000);
  EXPECT_EQ(parse_time("2026-11-21T23:59:60Z"), day + kMsPerDay);  // a leap second
  for (const char* malformed :
       {"", "2026-11-2", "2026-13-01", "2026-02-30", "2026-11-21T", "2026-11-21 07:02:00Z",
        "2026-11-21T24:00:00Z", "2026-11-21T07:60:00Z", "2026-11-21T07:02:61Z", "2026-11-21T07:02:00",
        "2026-11-21T07:02:00.Z", "2026-11-21T07:02:00+0100", "2026-11-21T07:02:00+24:00",
        "2026-11-21T07:02:00Zjunk"})
    EXPECT_EQ(parse_time(malformed), std::nullopt) << malformed;
}

TEST(Time, ReadsTheServicesOwnFormOnlyAsItIsWritten) {
  EXPECT_EQ(parse_iso8601("2026-11-21T07:02:00.000Z"), parse_time("2026-11-21T07:02:00Z"));
  for (const char* other :
       {"2026-11-21T07:02:00Z", "2026-11-21t07:02:00.000Z", "2026-11-21T07:02:00.000z",
        "2026-11-21T07:02:60.000Z", "2026-11-21T07:02:00.00Z", "2026-11-21T08:02:00.000+01:00", "2026-11-21"})
    EXPECT_EQ(parse_iso8601(other), std::nullopt) << other;
}

}  // namespace
}  // namespace kobo
