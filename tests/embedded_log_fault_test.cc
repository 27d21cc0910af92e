// The embedded log on a disk that really fills up (guarantee 8, docs/architecture.md section 6): a small
// tmpfs, so the test needs root to mount one and skips otherwise. An append that fails is reported, never
// crashes, leaves nothing half-visible, and the log refuses further appends until reset_writer()
// succeeds; once space returns the same process appends again, and everything acknowledged is
// there after a reopen.

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "events/embedded_log.h"
#include "tests/support/small_disk.h"

namespace kobo {
namespace {

class SmallDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::SmallDisk::can_mount()) GTEST_SKIP() << "mounting a tmpfs needs root";
    ASSERT_TRUE(disk_.mounted()) << "mount tmpfs: errno " << disk_.mount_error();
  }

  testing::SmallDisk disk_{"small-disk", "16m"};
};

EncodedEvent record(std::uint64_t n) {
  // The log stores bytes without reading them; a few KiB each fills the disk quickly.
  return EncodedEvent{Partition(0), Seq(n + 1), EventType::writer_started,
                      "",           0,          std::to_string(n) + std::string(4096, 'e')};
}

TEST_F(SmallDisk, AFullDiskFailsAppendsWithoutCrashingAndResumesWhenSpaceReturns) {
  const std::string path = (disk_.path() / "log").string();
  auto opened = open_embedded_log({.path = path, .partitions = 1});
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  auto& log = *opened.value();
  ASSERT_TRUE(disk_.fill(256 * 1024));

  std::uint64_t acknowledged = 0;
  Status failure;
  for (std::uint64_t n = 0; n < 10'000 && failure.ok(); ++n) {
    const EncodedEvent e = record(n);
    failure = log.append(std::span(&e, 1));
    if (failure.ok()) ++acknowledged;
  }
  ASSERT_FALSE(failure.ok()) << "the disk never filled";
  EXPECT_EQ(failure.kind(), ErrorKind::no_space) << failure.message();
  ASSERT_GT(acknowledged, 0u);
  EXPECT_EQ(log.end_offsets().value()[0], Offset(acknowledged)) << "a failed append is not visible";

  // Until the error is cleared every append is refused, however often it is tried.
  {
    const EncodedEvent next = record(acknowledged);
    for (int i = 0; i < 3; ++i) EXPECT_FALSE(log.append(std::span(&next, 1)).ok());
    EXPECT_EQ(log.end_offsets().value()[0], Offset(acknowledged));
  }
  // Clearing it while the disk is nearly full: each append is then either acknowledged (a
  // reopen can free room, flushing and dropping the old WAL) or refused as no space, never
  // a crash.
  for (int i = 0; i < 20; ++i) {
    if (!log.reset_writer().ok()) continue;
    const EncodedEvent next = record(acknowledged);
    const Status s = log.append(std::span(&next, 1));
    if (s.ok())
      ++acknowledged;
    else
      EXPECT_EQ(s.kind(), ErrorKind::no_space) << s.message();
  }
  EXPECT_EQ(log.end_offsets().value()[0], Offset(acknowledged));

  const EncodedEvent next = record(acknowledged);

  disk_.unfill();
  Status resumed = log.reset_writer();
  for (int i = 0; i < 50 && !resumed.ok(); ++i) {
    usleep(100'000);
    resumed = log.reset_writer();
  }
  ASSERT_TRUE(resumed.ok()) << resumed.message();
  ASSERT_TRUE(log.append(std::span(&next, 1)).ok());
  ++acknowledged;

  // Everything acknowledged is there, in order, after a reopen.
  opened.value().reset();
  auto again = open_embedded_log({.path = path, .partitions = 1});
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again.value()->end_offsets().value()[0], Offset(acknowledged));
  auto reader = again.value()->open_reader({Offset(0)});
  ASSERT_TRUE(reader.ok());
  std::vector<LogRecord> records;
  while (records.size() < acknowledged) {
    const std::size_t before = records.size();
    ASSERT_TRUE(reader.value()->poll(1024, std::chrono::milliseconds(0), records).ok());
    ASSERT_GT(records.size(), before);
  }
  for (std::uint64_t n = 0; n < acknowledged; ++n) EXPECT_EQ(records[n].bytes, record(n).bytes) << n;
}

}  // namespace
}  // namespace kobo
