#pragma once
// Snapshots of the writer's hot state: every partition's PartitionState (wallets and work in
// flight, never history: that is the history index's, history.h) with the log position it
// reflects, so that a writer starts from the newest snapshot plus the log's tail instead of
// replaying the whole log (docs/architecture.md section 5a). `kobo audit`
// never reads them: it replays from seq 1.
//
// Files: <dir>/snapshot-<events, 20 digits>.bin, each written whole through
// write_file_atomically (a temporary file, fsync, rename, fsync of the directory), so a crash
// leaves the previous snapshot or the new one, never part of one (and the next snapshot removes
// the temporary file a crash left). The two newest are kept.
//
// Layout: "KOBOSNAP", format u32, partitions u32, events u64, then per partition its cursor
// and its state, then the SHA-256 of everything before it. Integers are little-endian, strings
// and containers length-prefixed. A snapshot is used only when its hash holds, its format and
// partition count are this build's, and its positions agree with the log; anything else is
// logged as a warning and the log is replayed from its first event.
//
// Snapshotter: writes them. It keeps a copy of the writer's hot state of its own, following the
// log with the same LogFollower and apply() as the writer's replay, and writes a snapshot every
// `every_events` events at a command boundary, once the history index has reached the same
// position and is synced (a start reads the log after a snapshot only when the index covers
// it). It owns one thread and never involves the writer's, so no command waits for a snapshot;
// the price is a second copy of the hot state (bounded by the wallets, not by the transfers) and
// a second decode of every event. A snapshot that cannot be written (a full disk)
// leaves the older ones as they were and is tried again `every_events` later; /metrics counts
// both outcomes (`kobo_snapshots_written_total`, `kobo_snapshot_failures_total`).

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "command/history.h"
#include "command/state.h"
#include "common/result.h"
#include "events/event_log.h"
#include "events/log_follower.h"

namespace kobo {

struct Snapshot {
  std::uint64_t events = 0;  // events applied to reach it, all partitions together
  std::vector<FollowCursor> cursors;
  std::vector<PartitionState> states;
};

[[nodiscard]] std::string encode_snapshot(const Snapshot& s);
// Checks the hash, the format and the partition count, and decodes.
[[nodiscard]] Result<Snapshot> decode_snapshot(std::string_view bytes, std::uint32_t partitions);

// Writes `s` into `dir` (created if missing) and removes all but the two newest snapshots.
[[nodiscard]] Status write_snapshot(const std::filesystem::path& dir, const Snapshot& s);
// The newest snapshot in `dir` that decodes and whose positions agree with `log` (the log holds
// its head event where the snapshot says, or the event after it extends it); nullopt when there
// is none. Each one refused is logged as a warning, naming why.
[[nodiscard]] std::optional<Snapshot> load_snapshot(const std::filesystem::path& dir, EventLog& log);
// Links (or, across disks, copies) the newest snapshot in `dir` into the directory `into`
// (created), for a peer that joins the cluster (docs/architecture.md, "A new node"); nothing when
// `dir` has none. Safe beside the Snapshotter: a snapshot file never changes once written, and
// the two newest are never removed.
[[nodiscard]] Status copy_newest_snapshot(const std::filesystem::path& dir,
                                          const std::filesystem::path& into);

struct SnapshotterOptions {
  std::filesystem::path dir;
  std::uint64_t every_events = 100'000;   // events between two snapshots
  std::chrono::milliseconds poll{1'000};  // how often it reads what the writer appended since
};

class Snapshotter {
 public:
  Snapshotter(EventLog& log, History& history, SnapshotterOptions options);
  ~Snapshotter();
  Snapshotter(const Snapshotter&) = delete;
  Snapshotter& operator=(const Snapshotter&) = delete;

  // Starts following the log after `from` (the state the writer replayed to) on a thread.
  // `written_at`: the events of the newest snapshot there is (0: none), so that a state replayed
  // far past it is written at the first look rather than `every_events` later.
  [[nodiscard]] Status start(Snapshot from, std::uint64_t written_at);
  void stop();

 private:
  void run();
  bool index_reaches_state() const;

  EventLog& log_;
  History& history_;  // its thread-safe indexed_seq() and sync() only
  const SnapshotterOptions options_;
  Snapshot state_;  // the snapshotter's thread only
  std::unique_ptr<LogFollower> follower_;
  std::uint64_t events_at_last_write_ = 0;
  bool log_unreachable_ = false;  // the last follow failed as unavailable (logged once)
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace kobo
