#pragma once
// EventLog: the durable, partitioned, append-only log every other component stands on.
//
// Backends: EmbeddedLog (RocksDB under <data-dir>/log, the default), MemoryLog (unit tests) and
// KafkaLog (events/kafka_log.h). All pass tests/event_log_contract_test.cc.
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
  std::string bytes;  // seal()ed wire form
  // The sealed event itself, when the writer gives it: a log read in the process that appends
  // (EmbeddedLog) hands it to its readers with the record, so that none decodes again what this
  // process has just encoded. Backends that do not may ignore it.
  std::shared_ptr<const Event> event = nullptr;
};

struct LogRecord {
  Partition partition{0};
  Offset offset{0};
  std::string bytes;
  // What `bytes` decode to, when the log still holds the event its writer appended in this
  // process (EncodedEvent::event); null otherwise. LogFollower takes it in place of decoding.
  std::shared_ptr<const Event> event = nullptr;
};

class LogReader {
 public:
  virtual ~LogReader() = default;
  // Appends to `out` up to `max_records` records past the reader's positions, in log order
  // within each partition, waiting at most `timeout` when none is available yet.
  [[nodiscard]] virtual Status poll(std::size_t max_records, std::chrono::milliseconds timeout,
                                    std::vector<LogRecord>& out) = 0;
  // The offset the reader will read next in partition p: one past the last record it returned,
  // or further when it has passed offsets that hold no record for it (Kafka's transaction
  // markers and aborted records), so a reader can tell it reached an end_offsets() position.
  virtual Offset position(Partition p) const = 0;
  // The partitions whose records the caller does not want from the next polls on (one flag per
  // partition; empty: none), until it says otherwise: a consumer that should not take more of
  // them yet, such as a rebuild's lane whose queue is half full, so that a poll brings what other
  // lanes can apply instead. A hint: the embedded and in-memory readers skip them; Kafka's reader does not
  // (its polls bring what the broker sends), and a caller must take any record it gets.
  void hold_back(std::vector<bool> partitions) { held_back_ = std::move(partitions); }

 protected:
  bool held_back(std::uint32_t p) const { return p < held_back_.size() && held_back_[p]; }

 private:
  std::vector<bool> held_back_;
};

class EventLog {
 public:
  virtual ~EventLog() = default;

  virtual std::uint32_t partitions() const = 0;

  // Appends `batch` durably and atomically: on success every event is durable (fsync'd, or
  // in a committed Kafka transaction) and visible to readers (on Kafka within moments, once the
  // broker has written the transaction markers); on failure none is visible, except that a
  // Kafka append spanning partitions may have committed some of them: re-read after
  // reset_writer() to know.
  [[nodiscard]] virtual Status append(std::span<const EncodedEvent> batch) = 0;

  // A reader positioned at `start[p]` for each partition p (size == partitions()).
  [[nodiscard]] virtual Result<std::unique_ptr<LogReader>> open_reader(std::vector<Offset> start) = 0;

  // For each partition, the offset one past its last durable record: where a reader that has
  // read everything readable stands (Kafka: the last stable offset).
  [[nodiscard]] virtual Result<std::vector<Offset>> end_offsets() = 0;

  // After a failed append: makes sure nothing of it can still become visible, so that reading
  // the log again tells the whole truth (Kafka: re-initialises the transactional producers,
  // which fences their old instances and resolves their open transactions). An error means
  // the log cannot be written now; the writer tries again later.
  [[nodiscard]] virtual Status reset_writer() { return {}; }

  // Whether the log hands its readers in this process the events appended with
  // EncodedEvent::event (the embedded log does): a writer gives them only then.
  virtual bool shares_appended_events() const { return false; }

  // True once another writer has taken the partitions (Kafka's transactional.id fencing):
  // this process must never write to the log again.
  virtual bool fenced() const { return false; }

  // A cluster's writers share the partitions (docs/architecture.md, "Cluster"): a node writes
  // a partition only between acquire() and release(). acquire(p) fences every earlier writer of
  // p, on this node or another (Kafka: a new transactional producer for p, whose
  // init_transactions settles the previous instance's open transaction, committed or aborted),
  // so that once it returns nobody else can append to p. release(p) lets go (what a failed
  // append left open is settled by the next acquire()). fenced(p): another writer has taken p
  // since this one acquired it, and this one must not append to p before acquiring it again.
  // The embedded and memory logs have one writer, which holds every partition from the start.
  // Called by the writer thread, as append().
  [[nodiscard]] virtual Status acquire(Partition p) {
    KOBO_ASSERT(p.value < partitions(), "a writer acquires one of the log's partitions");
    return {};
  }
  virtual void release(Partition p) {
    KOBO_ASSERT(p.value < partitions(), "a writer releases one of the log's partitions");
  }
  virtual bool fenced(Partition p) const {
    KOBO_ASSERT(p.value < partitions(), "only one of the log's partitions can be taken");
    return fenced();
  }

  // Thread-safe. Why the log cannot be used now, or "" (Kafka: the brokers it has not reached
  // yet, or what they refused), for /readyz while a node waits for its log.
  virtual std::string fault() const { return {}; }
};

}  // namespace kobo
