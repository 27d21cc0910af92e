// The EventLog contract, run over every backend (DESIGN section 1: "Both backends pass the
// same contract test suite"). The Kafka backend joins with its own fixture.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <thread>

#include "events/embedded_log.h"
#include "events/memory_log.h"

namespace kobo {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct Backend {
  std::string name;
  // Opens (or reopens, when `path` names an existing log) a backend with 3 partitions.
  std::function<std::unique_ptr<EventLog>(const std::string& path)> open;
  bool durable;
};

EncodedEvent ev(std::uint32_t p, std::uint64_t seq, std::string bytes) {
  return EncodedEvent{Partition(p), Seq(seq), EventType::credited, "biz", 0, std::move(bytes)};
}

std::vector<LogRecord> read_all(EventLog& log, std::vector<Offset> from, std::size_t want) {
  auto reader = log.open_reader(std::move(from));
  EXPECT_TRUE(reader.ok());
  std::vector<LogRecord> out;
  for (int i = 0; i < 50 && out.size() < want; ++i) EXPECT_TRUE(reader.value()->poll(1000, 100ms, out).ok());
  return out;
}

class EventLogContract : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(test.begin(), test.end(), '/', '_');
    dir_ = fs::temp_directory_path() / ("kobo-log-" + std::to_string(::getpid()) + "-" + test);
    fs::remove_all(dir_);
    log_ = GetParam().open(dir_.string());
    ASSERT_NE(log_, nullptr);
  }
  void TearDown() override {
    log_.reset();
    fs::remove_all(dir_);
  }
  fs::path dir_;
  std::unique_ptr<EventLog> log_;
};

TEST_P(EventLogContract, StartsEmpty) {
  EXPECT_EQ(log_->partitions(), 3u);
  auto ends = log_->end_offsets();
  ASSERT_TRUE(ends.ok());
  EXPECT_EQ(ends.value(), std::vector<Offset>(3, Offset(0)));
}

TEST_P(EventLogContract, ReadsBackWhatWasAppendedInOrderPerPartition) {
  std::vector<EncodedEvent> batch{ev(0, 1, "a"), ev(1, 1, "x"), ev(0, 2, "b"), ev(2, 1, "z"), ev(0, 3, "c")};
  ASSERT_TRUE(log_->append(batch).ok());
  auto ends = log_->end_offsets();
  ASSERT_TRUE(ends.ok());
  EXPECT_EQ(ends.value(), (std::vector<Offset>{Offset(3), Offset(1), Offset(1)}));
  const auto recs = read_all(*log_, std::vector<Offset>(3, Offset(0)), 5);
  ASSERT_EQ(recs.size(), 5u);
  std::vector<std::string> p0;
  for (const auto& r : recs)
    if (r.partition == Partition(0)) p0.push_back(r.bytes);
  EXPECT_EQ(p0, (std::vector<std::string>{"a", "b", "c"}));
}

TEST_P(EventLogContract, ReaderStartsAtTheGivenOffsets) {
  ASSERT_TRUE(log_->append(std::vector<EncodedEvent>{ev(0, 1, "a"), ev(0, 2, "b"), ev(1, 1, "x")}).ok());
  const auto recs = read_all(*log_, {Offset(1), Offset(1), Offset(0)}, 1);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].bytes, "b");
  EXPECT_EQ(recs[0].offset, Offset(1));
}

TEST_P(EventLogContract, PollWakesWhenSomethingIsAppended) {
  auto reader = log_->open_reader(std::vector<Offset>(3, Offset(0)));
  ASSERT_TRUE(reader.ok());
  std::thread writer([&] {
    std::this_thread::sleep_for(50ms);
    ASSERT_TRUE(log_->append(std::vector<EncodedEvent>{ev(2, 1, "late")}).ok());
  });
  std::vector<LogRecord> out;
  for (int i = 0; i < 20 && out.empty(); ++i) ASSERT_TRUE(reader.value()->poll(10, 500ms, out).ok());
  writer.join();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].bytes, "late");
}

TEST_P(EventLogContract, PollReturnsEmptyAfterTheTimeoutWhenNothingComes) {
  auto reader = log_->open_reader(std::vector<Offset>(3, Offset(0)));
  ASSERT_TRUE(reader.ok());
  std::vector<LogRecord> out;
  ASSERT_TRUE(reader.value()->poll(10, 20ms, out).ok());
  EXPECT_TRUE(out.empty());
}

TEST_P(EventLogContract, RespectsTheRecordLimitOfAPoll) {
  std::vector<EncodedEvent> batch;
  for (int i = 1; i <= 10; ++i) batch.push_back(ev(0, static_cast<std::uint64_t>(i), std::to_string(i)));
  ASSERT_TRUE(log_->append(batch).ok());
  auto reader = log_->open_reader(std::vector<Offset>(3, Offset(0)));
  ASSERT_TRUE(reader.ok());
  std::vector<LogRecord> out;
  ASSERT_TRUE(reader.value()->poll(4, 100ms, out).ok());
  EXPECT_LE(out.size(), 4u);
  EXPECT_FALSE(out.empty());
}

TEST_P(EventLogContract, SurvivesReopening) {
  if (!GetParam().durable) GTEST_SKIP() << "not a durable backend";
  ASSERT_TRUE(log_->append(std::vector<EncodedEvent>{ev(1, 1, "kept"), ev(1, 2, "too")}).ok());
  log_.reset();
  log_ = GetParam().open(dir_.string());
  auto ends = log_->end_offsets();
  ASSERT_TRUE(ends.ok());
  EXPECT_EQ(ends.value()[1], Offset(2));
  ASSERT_TRUE(log_->append(std::vector<EncodedEvent>{ev(1, 3, "after")}).ok());
  const auto recs = read_all(*log_, std::vector<Offset>(3, Offset(0)), 3);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[2].bytes, "after");
  EXPECT_EQ(recs[2].offset, Offset(2));
}

INSTANTIATE_TEST_SUITE_P(
    Backends, EventLogContract,
    ::testing::Values(
        Backend{"memory", [](const std::string&) { return std::make_unique<MemoryLog>(3); }, false},
        Backend{"embedded",
                [](const std::string& path) -> std::unique_ptr<EventLog> {
                  auto log = open_embedded_log({path, 3, true});
                  EXPECT_TRUE(log.ok()) << log.status().message();
                  return log.ok() ? std::move(log).value() : nullptr;
                },
                true}),
    [](const auto& param_info) { return param_info.param.name; });

TEST(EmbeddedLog, RefusesToOpenWithAnotherPartitionCount) {
  const auto dir = fs::temp_directory_path() / ("kobo-log-parts-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  { ASSERT_TRUE(open_embedded_log({dir.string(), 3, true}).ok()); }
  auto again = open_embedded_log({dir.string(), 4, true});
  EXPECT_FALSE(again.ok());
  fs::remove_all(dir);
}

TEST(MemoryLog, AFailedAppendWritesNothing) {
  MemoryLog log(1);
  log.fail_next_appends(1);
  EXPECT_FALSE(log.append(std::vector<EncodedEvent>{ev(0, 1, "lost")}).ok());
  auto ends = log.end_offsets();
  ASSERT_TRUE(ends.ok());
  EXPECT_EQ(ends.value()[0], Offset(0));
  EXPECT_TRUE(log.append(std::vector<EncodedEvent>{ev(0, 1, "kept")}).ok());
}

}  // namespace
}  // namespace kobo
