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

}  // namespace
}  // namespace kobo
