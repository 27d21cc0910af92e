#pragma once
// Ledger: the single writer (docs/architecture.md sections 2 and 5a).
//
// HTTP threads submit() commands into a bounded queue. One writer thread drains up to
// `batch_max` of them, decides each against the in-memory state of its partition (applying
// the resulting events at once, so later commands in the batch see earlier ones), appends the
// whole batch's events in one durable append (group commit), and only then calls each
// command's callback. A failed append acknowledges nothing: every command of the batch is
// answered `unavailable` and the state is rebuilt from the log.
//
// What it decides with is in memory (state.h: wallets, work in flight); what was used before
// (references, bank accounts, closed collection wallets) is asked of History (history.h), an
// index on disk that the writer writes after each durable append. So its memory depends on the
// wallets and caches of a named size, never on the transfers ever made.
//
// Lifecycle: construct, start() (opens the history index; rebuilds the state from the newest
// snapshot and the log after it, or from the whole log, and brings the index up to the log's
// end; appends WriterStarted to every partition; starts the thread and, with a snapshot dir, the
// Snapshotter's), submit() from any thread, stop() (or the destructor) drains the queue
// answering `unavailable` and joins the threads. A start() that failed may be called again (a
// node started in a broker outage tries until the log answers); until one succeeds, submit()
// answers `unavailable` at once and fault() says why.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "command/commands.h"
#include "command/decide.h"
#include "command/snapshot.h"
#include "command/state.h"
#include "events/event_log.h"

namespace kobo {

struct LedgerOptions {
  LedgerConfig config;
  std::size_t queue_max = 65'536;  // commands waiting; a full queue answers `unavailable`
  std::size_t batch_max = 8'192;   // commands decided and appended together (a bulk weighs 1 + its items)
  // Where decide() draws the ids it assigns; null: secure random ids (RandomIds). Tests and
  // simulations give a seeded one (SeededIds) to replay a run exactly. Used by the writer
  // thread only.
  std::shared_ptr<IdSource> ids;
  // The time decisions are made at; null: the wall clock (now_ms). A simulation drives a virtual
  // one, so that a seeded run replays exactly (tests/simulation/); under it the writer takes what
  // fell due only when a command arrives, never on a timer.
  std::function<UnixMs()> clock;
  // After a failed append, how long the writer waits between attempts to settle and re-read the
  // log (commands meanwhile are answered `unavailable`).
  std::chrono::milliseconds recovery_retry{1000};
  // Where snapshots of the writer's state are kept (command/snapshot.h); empty: none are read or
  // written, and every start replays the whole log.
  std::filesystem::path snapshot_dir;
  // Where the history index lives (history.h); empty: in memory, rebuilt from the log at every
  // start (unit tests). Its block cache and memtables take at most `history_cache_bytes`.
  std::filesystem::path history_dir;
  std::size_t history_cache_bytes = std::size_t{64} << 20;
  std::uint64_t snapshot_every_events = 100'000;
  std::chrono::milliseconds snapshot_poll{1'000};  // how often the Snapshotter reads the log's new events
};

class Ledger {
 public:
  using Callback = std::function<void(Outcome)>;

  Ledger(EventLog& log, LedgerOptions options);
  ~Ledger();
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  // Not thread-safe with itself; an error leaves the ledger as constructed, ready to try again.
  [[nodiscard]] Status start();
  void stop();

  // Thread-safe. `done` runs exactly once: on the writer thread after the command's events are
  // durable (or it was rejected), or inline when the queue is full or the ledger has stopped.
  void submit(Command command, Callback done);
  // Blocking convenience for bootstrap and tests.
  Outcome execute(Command command);

  Partition partition_of(std::string_view business) const;
  const LedgerConfig& config() const { return options_.config; }

  // Thread-safe. The seq of the last durable event of partition p (read-your-writes target).
  Seq durable_seq(Partition p) const { return Seq(durable_seq_[p.value].load(std::memory_order_acquire)); }
  // Thread-safe. How many businesses exist (all partitions).
  std::size_t business_count() const { return business_count_.load(); }
  // Thread-safe. False until start() succeeded, while the writer cannot write (an append failed
  // and the log is not yet settled and re-read), and for good once another writer has fenced it;
  // /readyz reports it.
  bool healthy() const { return healthy_.load(); }
  // Thread-safe. Why the writer is not healthy ("the event log's disk is full: …"); empty
  // while it is.
  std::string fault() const;

 private:
  struct Pending {
    Command command;
    Callback done;
  };

  [[nodiscard]] Status replay();
  [[nodiscard]] Status replay_newest();
  [[nodiscard]] Status replay_after(Snapshot from);
  [[nodiscard]] Status write_history();
  [[nodiscard]] Status append_writer_started();
  void run();
  void recover();
  void resume_scheduled();
  void take_due(std::vector<Pending>& batch);
  void process(std::vector<Pending>& batch);
  void publish_durable();
  Partition route(const Command& c) const;
  UnixMs now() const { return options_.clock ? options_.clock() : now_ms(); }

  EventLog& log_;
  const LedgerOptions options_;
  const std::shared_ptr<IdSource> ids_;  // writer thread only
  std::vector<PartitionState> states_;
  std::unique_ptr<History> history_;  // writer thread only, but for what History says is thread-safe
  // Where the last replay() ended: what the Snapshotter starts from.
  std::uint64_t replayed_events_ = 0;
  std::uint64_t replayed_snapshot_events_ = 0;  // of the snapshot it started from; 0: none
  std::vector<FollowCursor> replayed_cursors_;
  std::unique_ptr<Snapshotter> snapshotter_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> durable_seq_;
  std::atomic<std::size_t> business_count_{0};
  std::atomic<bool> healthy_{false};
  bool start_failed_ = false;  // start() only: an earlier attempt may have appended part of WriterStarted
  mutable std::mutex fault_mu_;
  std::string fault_ = "the writer has not started";  // guarded by fault_mu_; why healthy_ is false
  ErrorKind fault_kind_ = ErrorKind::other;           // guarded by fault_mu_
  void set_fault(const Status& s);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;  // guarded by mu_
  bool stopping_ = false;      // guarded by mu_
  bool started_ = false;       // guarded by mu_: start() succeeded, the writer thread takes the queue
  // Writer thread only: internal commands (payout rail steps, collection expiries) by due time.
  std::multimap<UnixMs, Command> scheduled_;
  std::chrono::steady_clock::time_point next_recovery_{};  // writer thread only
  std::thread thread_;
};

}  // namespace kobo
