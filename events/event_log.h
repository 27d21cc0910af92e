#pragma once
// EventLog: the durable, partitioned, append-only log every other component stands on.
//
// Backends: EmbeddedLog (RocksDB under <data-dir>/log, the default), MemoryLog (unit tests) and
// the Kafka backend. All pass tests/event_log_contract_test.cc.
//
// Thread safety: append() may be called from one thread at a time (the single writer);
// readers may be opened and polled from any thread, each reader by one thread at a time.

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "events/event.h"
#include "events/types.h"

namespace kobo {

// An event ready to append: its wire form plus what a backend needs for routing and headers.
struct EncodedEvent {
  Partition partition{0};
  Seq seq{0};
  EventType type = EventType::writer_started;
  std::string business;  // the Kafka message key
  UnixMs time = 0;
  std::string bytes;     // seal()ed wire form
};

struct LogRecord {
  Partition partition{0};
  Offset offset{0};
  std::string bytes;
};

class LogReader {
 public:
  virtual ~LogReader() = default;
  // Appends to `out` up to `max_records` records past the reader's positions, in log order
  // within each partition, waiting at most `timeout` when none is available yet.
  [[nodiscard]] virtual Status poll(std::size_t max_records, std::chrono::milliseconds timeout,
                                    std::vector<LogRecord>& out) = 0;
};

class EventLog {
 public:
  virtual ~EventLog() = default;

  virtual std::uint32_t partitions() const = 0;

  // Appends `batch` durably and atomically: on success every event is durable (fsync'd, or
  // in a committed Kafka transaction) and visible to readers; on failure none is visible.
  [[nodiscard]] virtual Status append(std::span<const EncodedEvent> batch) = 0;

  // A reader positioned at `start[p]` for each partition p (size == partitions()).
  [[nodiscard]] virtual Result<std::unique_ptr<LogReader>> open_reader(std::vector<Offset> start) = 0;

  // For each partition, the offset one past its last durable record.
  [[nodiscard]] virtual Result<std::vector<Offset>> end_offsets() = 0;
};

}  // namespace kobo
