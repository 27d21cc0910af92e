#include "events/memory_log.h"

#include <mutex>

#include "events/append_signal.h"

namespace kobo {

struct MemoryLog::State {
  std::mutex mu;
  std::vector<std::vector<std::string>> records;
  int failures_pending = 0;
  AppendSignal signal;
};

namespace {

class MemoryReader final : public LogReader {
 public:
  MemoryReader(std::shared_ptr<MemoryLog::State> state, std::vector<Offset> start)
      : state_(std::move(state)), pos_(std::move(start)) {
    KOBO_ASSERT(state_ != nullptr && !pos_.empty(), "a reader of a log, with a position per partition");
  }

  Status poll(std::size_t max_records, std::chrono::milliseconds timeout,
              std::vector<LogRecord>& out) override {
    const std::uint64_t generation = state_->signal.generation();
    const std::size_t before = out.size();
    KOBO_ASSERT(max_records > 0, "a poll asks for a record at least");
    read_available(max_records, out);
    if (out.size() == before && timeout.count() > 0) {
      state_->signal.wait_past(generation, timeout);
      read_available(max_records, out);
    }
    KOBO_ASSERT(out.size() - before <= max_records, "a poll returns no more records than asked");
    return {};
  }

  Offset position(Partition p) const override {
    KOBO_ASSERT(p.value < pos_.size(), "the position of one of the reader's partitions");
    return pos_[p.value];
  }

 private:
  void read_available(std::size_t budget, std::vector<LogRecord>& out) {
    std::lock_guard lock(state_->mu);
    KOBO_ASSERT(pos_.size() == state_->records.size(), "a reader has a position per partition");
    for (std::uint32_t p = 0; p < pos_.size() && budget > 0; ++p) {
      if (held_back(p)) continue;
      const auto& recs = state_->records[p];
      while (pos_[p].value < recs.size() && budget > 0) {
        out.push_back(LogRecord{Partition(p), pos_[p], recs[pos_[p].value]});
        pos_[p] = Offset(pos_[p].value + 1);
        --budget;
      }
      KOBO_ASSERT(pos_[p].value <= recs.size(), "a reader reads no further than its partition's end");
    }
  }

  std::shared_ptr<MemoryLog::State> state_;
  std::vector<Offset> pos_;
};

}  // namespace

MemoryLog::MemoryLog(std::uint32_t partitions) : state_(std::make_shared<State>()) {
  KOBO_ASSERT(partitions > 0, "a log has a partition at least");
  state_->records.resize(partitions);
}
MemoryLog::~MemoryLog() = default;

std::uint32_t MemoryLog::partitions() const {
  // Sized once, by the constructor: read without the lock.
  KOBO_ASSERT(!state_->records.empty(), "a log has a partition at least");
  return static_cast<std::uint32_t>(state_->records.size());
}

Status MemoryLog::append(std::span<const EncodedEvent> batch) {
  {
    std::lock_guard lock(state_->mu);
    KOBO_ASSERT(state_->failures_pending >= 0, "a count of appends to fail is never negative");
    if (state_->failures_pending > 0) {
      --state_->failures_pending;
      return Status::error("injected append failure");
    }
    std::size_t appended = 0;
    for (const auto& e : batch) {
      KOBO_ASSERT(e.partition.value < state_->records.size(), "append to a partition the log does not have");
      state_->records[e.partition.value].push_back(e.bytes);
      ++appended;
    }
    KOBO_ASSERT(appended == batch.size(), "every event of the batch is appended");
  }
  state_->signal.notify();
  return {};
}

Result<std::unique_ptr<LogReader>> MemoryLog::open_reader(std::vector<Offset> start) {
  if (start.size() != partitions()) return Status::error("reader needs one start offset per partition");
  KOBO_ASSERT(!start.empty(), "a log has a partition at least");
  return std::unique_ptr<LogReader>(std::make_unique<MemoryReader>(state_, std::move(start)));
}

Result<std::vector<Offset>> MemoryLog::end_offsets() {
  std::lock_guard lock(state_->mu);
  std::vector<Offset> out;
  for (const auto& r : state_->records) out.emplace_back(r.size());
  KOBO_ASSERT(out.size() == state_->records.size(), "an end offset per partition");
  return out;
}

void MemoryLog::fail_next_appends(int n) {
  KOBO_ASSERT(n >= 0, "a count of appends to fail");
  std::lock_guard lock(state_->mu);
  state_->failures_pending = n;
}

void MemoryLog::overwrite(Partition p, Offset o, std::string bytes) {
  std::lock_guard lock(state_->mu);
  KOBO_ASSERT(p.value < state_->records.size() && o.value < state_->records[p.value].size(),
              "a test overwrites a record the log has");
  state_->records.at(p.value).at(o.value) = std::move(bytes);
}

}  // namespace kobo
