#pragma once
// An in-memory EventLog for unit tests: same contract as the durable backends, plus fault
// injection (fail_next_appends) to test that a failed append is never acknowledged.

#include <memory>

#include "events/event_log.h"

namespace kobo {

class MemoryLog final : public EventLog {
 public:
  explicit MemoryLog(std::uint32_t partitions);
  ~MemoryLog() override;

  std::uint32_t partitions() const override;
  Status append(std::span<const EncodedEvent> batch) override;
  Result<std::unique_ptr<LogReader>> open_reader(std::vector<Offset> start) override;
  Result<std::vector<Offset>> end_offsets() override;

  // The next `n` appends fail without writing anything.
  void fail_next_appends(int n);
  // Replaces the stored bytes of one record (for tamper tests).
  void overwrite(Partition p, Offset o, std::string bytes);

  struct State;  // shared with readers, which may outlive a poll but not the log

 private:
  std::shared_ptr<State> state_;
};

}  // namespace kobo
