// The EventLog contract, run over every backend (docs/architecture.md section 3: both
// backends pass one contract test). events_test runs it on the memory and embedded logs; kafka_log_test
// compiles this file again with KOBO_CONTRACT_KAFKA and runs it on a real broker (ctest label
// `kafka`, KOBO_TEST_KAFKA_DIR). Kafka's offsets are not dense (transaction markers take some),
// so the contract promises increasing offsets and reader positions that reach end_offsets().
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <thread>

#include "events/embedded_log.h"
#include "events/memory_log.h"
#include "tests/support/scratch_dir.h"
#ifdef KOBO_CONTRACT_KAFKA
#include "events/kafka_log.h"
#include "tests/support/kobo_process.h"
#include "tests/support/test_kafka.h"
#endif

namespace kobo {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct Backend {
  std::string name;
  // Opens (or reopens, when `path` names an existing log) a backend with 3 partitions.
  std::function<std::unique_ptr<EventLog>(const std::string& path)> open;
  bool durable;
  bool dense = true;            // offsets 0, 1, 2, … with nothing between records
  bool skips_held_back = true;  // LogReader::hold_back() is followed, not only allowed
};

EncodedEvent ev(std::uint32_t p, std::uint64_t seq, std::string bytes) {
  return EncodedEvent{Partition(p), Seq(seq), EventType::wallet_transfer_settled, "biz", 0, std::move(bytes)};
}

std::vector<LogRecord> read_all(EventLog& log, std::vector<Offset> from, std::size_t want) {
  auto reader = log.open_reader(std::move(from));
  EXPECT_TRUE(reader.ok());
  std::vector<LogRecord> out;
  for (int i = 0; i < 50 && out.size() < want; ++i) EXPECT_TRUE(reader.value()->poll(1000, 100ms, out).ok());
  return out;
}

// The end offsets once they cover at least `records[p]` records of each partition p: Kafka's
// last stable offset passes a committed append a moment after the commit returns.
std::vector<Offset> ends_covering(EventLog& log, const std::vector<std::uint64_t>& records) {
  for (int i = 0;; ++i) {
    auto ends = log.end_offsets();
    EXPECT_TRUE(ends.ok());
    if (!ends.ok()) return {};
    bool covered = true;
    for (std::size_t p = 0; p < records.size(); ++p) covered = covered && ends.value()[p].value >= records[p];
    if (covered || i == 100) return ends.value();
    std::this_thread::sleep_for(50ms);
  }
}

class EventLogContract : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    log_ = GetParam().open(dir_.string());
    ASSERT_NE(log_, nullptr);
  }
  testing::ScratchDir scratch_;
  const fs::path dir_ = scratch_.path();
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
  const auto ends = ends_covering(*log_, {3, 1, 1});
  ASSERT_EQ(ends.size(), 3u);
  if (GetParam().dense) {
    EXPECT_EQ(ends, (std::vector<Offset>{Offset(3), Offset(1), Offset(1)}));
  }
  const auto recs = read_all(*log_, std::vector<Offset>(3, Offset(0)), 5);
  ASSERT_EQ(recs.size(), 5u);
  std::vector<std::string> p0;
  Offset last(0);
  for (const auto& r : recs) {
    EXPECT_LT(r.offset, ends[r.partition.value]);
    if (r.partition != Partition(0)) continue;
    if (!p0.empty()) {
      EXPECT_GT(r.offset, last);
    }
    last = r.offset;
    p0.push_back(r.bytes);
  }
  EXPECT_EQ(p0, (std::vector<std::string>{"a", "b", "c"}));
}

// A rebuild's reader holds back the partitions of a lane with a full queue (LogReader::hold_back):
// a reader that can skips them until told otherwise, and every reader then reads them whole.
TEST_P(EventLogContract, APartitionHeldBackIsReadOnceItIsNoLonger) {
  ASSERT_TRUE(
      log_->append(std::vector<EncodedEvent>{ev(0, 1, "a"), ev(1, 1, "x"), ev(0, 2, "b"), ev(2, 1, "z")})
          .ok());
  ASSERT_EQ(ends_covering(*log_, {2, 1, 1}).size(), 3u);
  auto reader = log_->open_reader(std::vector<Offset>(3, Offset(0)));
  ASSERT_TRUE(reader.ok());
  reader.value()->hold_back({true, false, false});
  std::vector<LogRecord> out;
  for (int i = 0; i < 50 && out.size() < 2; ++i) ASSERT_TRUE(reader.value()->poll(1000, 100ms, out).ok());
  if (GetParam().skips_held_back) {
    ASSERT_TRUE(reader.value()->poll(1000, 10ms, out).ok());
    std::vector<std::string> read;
    for (const auto& r : out) read.push_back(r.bytes);
    EXPECT_EQ(read, (std::vector<std::string>{"x", "z"})) << "partition 0 is held back";
    EXPECT_EQ(reader.value()->position(Partition(0)), Offset(0));
  }
  reader.value()->hold_back({});
  for (int i = 0; i < 50 && out.size() < 4; ++i) ASSERT_TRUE(reader.value()->poll(1000, 100ms, out).ok());
  std::vector<std::string> p0;
  for (const auto& r : out)
    if (r.partition == Partition(0)) p0.push_back(r.bytes);
  EXPECT_EQ(out.size(), 4u);
  EXPECT_EQ(p0, (std::vector<std::string>{"a", "b"}));
}

TEST_P(EventLogContract, AReaderThatReadEverythingStandsAtTheEndOffsets) {
  ASSERT_TRUE(log_->append(std::vector<EncodedEvent>{ev(0, 1, "a"), ev(1, 1, "x")}).ok());
  ASSERT_TRUE(log_->append(std::vector<EncodedEvent>{ev(0, 2, "b")}).ok());
  auto reader = log_->open_reader(std::vector<Offset>(3, Offset(0)));
  ASSERT_TRUE(reader.ok());
  std::vector<LogRecord> out;
  std::vector<Offset> ends;
  auto at_end = [&] {
    auto e = log_->end_offsets();
    if (!e.ok()) return false;
    ends = e.value();
    for (std::uint32_t p = 0; p < 3; ++p)
      if (reader.value()->position(Partition(p)) != ends[p]) return false;
    return out.size() == 3;
  };
  for (int i = 0; i < 50 && !at_end(); ++i) ASSERT_TRUE(reader.value()->poll(100, 100ms, out).ok());
  ASSERT_TRUE(at_end());
  // And a reader opened at the end offsets reads only what comes after.
  auto tail = log_->open_reader(ends);
  ASSERT_TRUE(tail.ok());
  ASSERT_TRUE(log_->append(std::vector<EncodedEvent>{ev(2, 1, "new")}).ok());
  std::vector<LogRecord> more;
  for (int i = 0; i < 50 && more.empty(); ++i) ASSERT_TRUE(tail.value()->poll(100, 100ms, more).ok());
  ASSERT_EQ(more.size(), 1u);
  EXPECT_EQ(more[0].bytes, "new");
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
  // Each poll holds at most 4; a remote log may take a few polls to hand over the first records
  // (a TLS broker on a loaded machine), so poll until some come, every one within the limit.
  std::vector<LogRecord> out;
  for (int polls = 0; out.empty() && polls < 50; ++polls) {
    ASSERT_TRUE(reader.value()->poll(4, 100ms, out).ok());
    EXPECT_LE(out.size(), 4u);
  }
  EXPECT_FALSE(out.empty());
}

TEST_P(EventLogContract, SurvivesReopening) {
  if (!GetParam().durable) GTEST_SKIP() << "not a durable backend";
  ASSERT_TRUE(log_->append(std::vector<EncodedEvent>{ev(1, 1, "kept"), ev(1, 2, "too")}).ok());
  log_.reset();
  log_ = GetParam().open(dir_.string());
  auto ends = log_->end_offsets();
  ASSERT_TRUE(ends.ok());
  if (GetParam().dense) {
    EXPECT_EQ(ends.value()[1], Offset(2));
  }
  EXPECT_GE(ends.value()[1], Offset(2));
  ASSERT_TRUE(log_->append(std::vector<EncodedEvent>{ev(1, 3, "after")}).ok());
  const auto recs = read_all(*log_, std::vector<Offset>(3, Offset(0)), 3);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[2].bytes, "after");
  EXPECT_GE(recs[2].offset, ends.value()[1]);
}

#ifdef KOBO_CONTRACT_KAFKA
// A topic per test, named after the test's scratch path; reopening the same path reopens it.
std::unique_ptr<EventLog> open_kafka_topic(const std::string& path) {
  KafkaLogOptions o;
  o.brokers = testing::test_kafka_brokers();
  o.topic = "contract." + fs::path(path).filename().string();
  o.partitions = 3;
  o.config = testing::test_kafka_config();  // a secured broker: SASL over TLS
  testing::ensure_test_topic(o.topic, 3);   // which denies CreateTopics
  auto log = open_kafka_log(o);
  EXPECT_TRUE(log.ok()) << log.status().message();
  return log.ok() ? std::move(log).value() : nullptr;
}

INSTANTIATE_TEST_SUITE_P(Backends, EventLogContract,
                         ::testing::Values(Backend{"kafka", open_kafka_topic, true, false, false}),
                         [](const auto& param_info) { return param_info.param.name; });
#else
INSTANTIATE_TEST_SUITE_P(
    Backends, EventLogContract,
    ::testing::Values(Backend{"memory", [](const std::string&) { return std::make_unique<MemoryLog>(3); },
                              false},
                      Backend{"embedded",
                              [](const std::string& path) -> std::unique_ptr<EventLog> {
                                auto log = open_embedded_log({path, 3, true});
                                EXPECT_TRUE(log.ok()) << log.status().message();
                                return log.ok() ? std::move(log).value() : nullptr;
                              },
                              true}),
    [](const auto& param_info) { return param_info.param.name; });

TEST(EmbeddedLog, RefusesToOpenWithAnotherPartitionCount) {
  const testing::ScratchDir dir;
  { ASSERT_TRUE(open_embedded_log({dir.str(), 3, true}).ok()); }
  auto again = open_embedded_log({dir.str(), 4, true});
  EXPECT_FALSE(again.ok());
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
#endif

}  // namespace
}  // namespace kobo
