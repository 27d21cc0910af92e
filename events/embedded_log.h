#pragma once
// The embedded EventLog: a RocksDB database under <data-dir>/log. One append is one synced
// WriteBatch (group commit: the writer appends a whole batch of commands at once), so an
// append is durable and atomic. Offsets are dense from 0 in each partition.
//
// Its readers in the process that appends get the last events of each partition with their
// records, as the writer sealed them (LogRecord::event): the projector, the webhooks' consumer
// and the snapshotter follow the tail a few milliseconds behind the writer, and would otherwise
// each decode again what this process has just encoded. Older records, and every record of a log
// opened again, come as bytes only.
//
// Thread safety: as EventLog. Owned by whoever opened it; readers must not outlive it.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "events/event_log.h"

namespace rocksdb {
class Env;
}

namespace kobo {

struct EmbeddedLogOptions {
  std::string path;               // directory of the RocksDB database
  std::uint32_t partitions = 6;   // must match what the log was created with; 0: whatever it was
  bool sync = true;               // fsync every append; only benchmarks of the CPU path turn it off
  bool create_if_missing = true;  // false: opening a directory without a log is an error (auditors)
  // Read beside a running writer (`kobo events` on a served data dir): a RocksDB secondary
  // instance, which takes no lock and catches up with the writer's appends on every read.
  // append() fails. Its own small files go to a temporary directory removed on close.
  bool read_only = false;
  // The RocksDB environment the log's files are written through; null: the machine's own.
  // Fault tests give one whose file system fails on demand (tests/support/faulty_fs.h).
  rocksdb::Env* env = nullptr;
};

class EmbeddedLog;
[[nodiscard]] Result<std::unique_ptr<EventLog>> open_embedded_log(const EmbeddedLogOptions& options);

// How many of each partition's last appended events a log of `partitions` hands its readers
// decoded: 1,024 events in all, and at least 128 a partition, so the memory they take is bounded
// whatever the log's length.
std::size_t embedded_recent_events(std::uint32_t partitions);

}  // namespace kobo
