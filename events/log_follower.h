#pragma once
// LogFollower: the one loop that reads the log (docs/architecture.md section 3). It polls a
// LogReader, decodes every record, judges it with its partition's ChainFollower and hands the
// accepted events, in chain order within each partition, to a LogVisitor. The writer's start-up
// replay, the projectors and `kobo audit` all read the log through it, so they agree on what the
// log says.
//
// A record the chain does not accept (a duplicate, a zombie's event, a break, a record that does
// not decode) goes to LogVisitor::refused(), which decides: skip it, stop reading, or, for the
// auditor, adopt it as the new head of the chain after reporting the break, so one tampered
// event is reported once instead of stopping the audit.
//
// Lifecycle: construct over an EventLog, open() (from the start, or resuming from cursors), then
// step() or follow_to() as often as needed. Not thread-safe: one thread uses a follower at a
// time, and it must not outlive its EventLog.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "events/chain.h"
#include "events/event.h"
#include "events/event_log.h"

namespace kobo {

// Where a follower is in one partition.
struct FollowCursor {
  ChainFollower chain;       // the head: the last accepted event
  Offset next_offset{0};     // the next record to read
  bool mid_command = false;  // the head is not the last event of its command
};

// A record the chain did not accept.
struct RefusedRecord {
  Partition partition{0};
  Offset offset{0};
  ChainVerdict verdict = ChainVerdict::broken;  // duplicate, zombie or broken
  // The event as written. For a record that fails to decode (problem not empty) it is what
  // decode_event_unverified() makes of it, or null when even that fails.
  const Event* event = nullptr;
  std::string problem;                   // why the record did not decode; empty when it did
  const ChainFollower* chain = nullptr;  // the partition's head before this record
  std::string_view bytes;                // the record as stored
};

// What to do with a refused record.
enum class Disposition {
  skip,   // leave the head where it is and read on
  stop,   // stop reading: step() and follow_to() return an error that describes the record
  adopt,  // make the event the new head and hand it to accepted() (only when event != null)
};

// "partition 2 seq 17 does not extend the hash chain", "partition 2 offset 16: hash mismatch".
std::string describe(const RefusedRecord& r);

class LogVisitor {
 public:
  virtual ~LogVisitor() = default;
  // An accepted (or adopted) event. An error stops the follower and is returned to its caller.
  [[nodiscard]] virtual Status accepted(const Event& e) = 0;
  // The same, shared: a visitor that keeps events (the projector hands them to its lanes) keeps
  // this one instead of copying it. The event may be the one the log's writer sealed in this
  // process (LogRecord::event), which other readers share too. By default accepted().
  [[nodiscard]] virtual Status accepted_shared(const std::shared_ptr<const Event>& e) { return accepted(*e); }
  // The default: skip duplicates, log and skip zombies, stop on anything else.
  virtual Disposition refused(const RefusedRecord& r);
};

struct LogFollowerOptions {
  std::size_t poll_records_max = 4096;  // records per poll
  // Refuse an event whose bytes are not the canonical form of what they decode to (the hash is
  // always checked). Costs a re-encoding per event; `kobo audit` asks for it.
  bool require_canonical_form = false;
};

// Whether `log` holds the heads `cursors` name (one per partition, as a reader stored them: a
// snapshot's, or the views' positions of a peer's checkpoint), before they are trusted. For
// each partition whose head is an event: the log reaches its next_offset, an event before that
// offset has the head's seq, hash and epoch, and no event between it and next_offset extends
// it (a position past an event it never applied). A partition is read backwards from its
// next_offset in growing windows, so Kafka's transaction markers, duplicates and a fenced
// writer's events there are passed over. An error names the partition and what disagrees
// (ErrorKind::unavailable when the log could not be read in `timeout`).
[[nodiscard]] Status check_positions(EventLog& log, const std::vector<FollowCursor>& cursors,
                                     std::chrono::milliseconds timeout = std::chrono::milliseconds(10'000));

class LogFollower {
 public:
  explicit LogFollower(EventLog& log, LogFollowerOptions options = {});
  LogFollower(const LogFollower&) = delete;
  LogFollower& operator=(const LogFollower&) = delete;

  // From the first record of every partition.
  [[nodiscard]] Status open();
  // Resuming after `cursors` (one per partition, e.g. a projector's stored positions).
  [[nodiscard]] Status open(std::vector<FollowCursor> cursors);

  // Reads one poll's worth of records (waiting up to `wait` when none is there) and hands each
  // to `v`. With `until`, records at or past until[p] are held back for a later step. Returns
  // how many records it consumed.
  [[nodiscard]] Result<std::size_t> step(LogVisitor& v, std::chrono::milliseconds wait,
                                         const std::vector<Offset>* until = nullptr);

  // Steps until every partition p has been read up to until[p], calling `after_step` (if any)
  // after each step. An `until` past the log's end is an error, not a wait.
  [[nodiscard]] Status follow_to(LogVisitor& v, const std::vector<Offset>& until,
                                 const std::function<void()>& after_step = {});
  // follow_to() the log's end offsets as they are when it is called.
  [[nodiscard]] Status follow_to_end(LogVisitor& v, const std::function<void()>& after_step = {});

  bool reached(const std::vector<Offset>& until) const;
  // LogReader::hold_back() of the follower's reader.
  void hold_back(std::vector<bool> partitions) {
    KOBO_ASSERT(reader_ != nullptr, "hold_back() before open()");
    reader_->hold_back(std::move(partitions));
  }
  // Some partition's head is not the last event of its command.
  bool mid_command() const;
  std::uint32_t partitions() const {
    KOBO_ASSERT(reader_ != nullptr || cursors_.empty(), "a follower has cursors once it is open");
    return static_cast<std::uint32_t>(cursors_.size());
  }
  const FollowCursor& cursor(Partition p) const {
    KOBO_ASSERT(p.value < cursors_.size(), "the cursor of one of the follower's partitions");
    return cursors_[p.value];
  }
  const std::vector<FollowCursor>& cursors() const {
    KOBO_ASSERT(reader_ != nullptr || cursors_.empty(), "a follower has cursors once it is open");
    return cursors_;
  }
  std::uint64_t records_read() const {
    KOBO_ASSERT(events_accepted_ <= records_read_, "every event handed on is of a record read");
    return records_read_;
  }
  std::uint64_t events_accepted() const {
    KOBO_ASSERT(events_accepted_ <= records_read_, "every event handed on is of a record read");
    return events_accepted_;
  }

 private:
  [[nodiscard]] Status handle(LogVisitor& v, const LogRecord& r);
  // Moves the cursor's head to `e`, which the chain took, before `e` goes to the visitor.
  void take(FollowCursor& c, const Event& e);

  EventLog& log_;
  const LogFollowerOptions options_;
  std::unique_ptr<LogReader> reader_;
  std::vector<FollowCursor> cursors_;
  std::deque<LogRecord> held_;  // read but past `until`: handed out by a later step
  std::vector<LogRecord> records_;
  std::uint64_t records_read_ = 0;
  std::uint64_t events_accepted_ = 0;
};

}  // namespace kobo
