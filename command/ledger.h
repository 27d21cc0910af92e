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
//
// Ownership (docs/architecture.md, "Cluster"). A single node's writer owns every partition. A
// cluster node's (LedgerOptions::cluster) owns none until take() hands it one, and decides
// commands only for the partitions it owns: any other is answered Rejection::not_owner, never
// decided. Meanwhile it keeps the state of every partition warm from the log (a standby: its
// writer thread follows the log, applying what other nodes append, snapshots and the history
// index included), so that a takeover costs fencing plus the log's tail, not a replay. Per
// partition (Ownership): standby -> taking (take()) -> owned, once the writer has fenced the
// previous writer (EventLog::acquire), read the partition to the end the log has after that,
// and appended WriterStarted with the next epoch; owned -> standby on release() (the batch in
// flight is appended or fails first, what is queued is answered not_owner, the partition's
// duties are dropped) or when another writer fenced this one (it then waits for the next
// take()); taking -> standby on release(). The duties of a partition (payout rail steps,
// collection and hold expiries) run on its owner only and are resumed from its state by the
// next owner: what the old owner did is in the log the new one read to its end, so nothing is
// done twice.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "command/commands.h"
#include "command/decide.h"
#include "command/fair_queue.h"
#include "command/snapshot.h"
#include "command/state.h"
#include "common/assert.h"
#include "events/checkpoint.h"
#include "events/event_log.h"
#include "events/log_follower.h"

namespace kobo {

struct LedgerOptions {
  LedgerConfig config;
  std::size_t queue_max = 65'536;  // commands waiting; a full queue answers `unavailable`
  // Commands of one business waiting (fair_queue.h): the queue is drained round-robin between
  // businesses, and one business's burst past this is answered `unavailable` (503), so that it
  // cannot take the whole queue.
  std::size_t queue_max_per_business = 16'384;
  std::size_t batch_max = 8'192;  // commands decided and appended together (a bulk weighs 1 + its items)
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
  // A cluster node: owns no partition until take(), keeps every other one warm from the log
  // (see Ownership above). false: owns every partition from start() on.
  bool cluster = false;
  // A cluster node: how long release() waits for the writer to let a partition go, and how long
  // a takeover may read the log's tail before it is tried again.
  std::chrono::milliseconds release_wait{10'000};
  std::chrono::milliseconds takeover_read_max{10'000};
  // A cluster node: while no command arrives, how often the writer reads what other nodes
  // appended to the partitions it does not own.
  std::chrono::milliseconds standby_poll{10};
  // Signed checkpoints (events/checkpoint.h, docs/security.md): null, none are written. With a
  // signer (`--writer-key-file`), the writer appends a ChainCheckpointed right after each
  // WriterStarted, and signs a partition it writes once checkpoint_events events are unsigned or
  // the oldest of them is checkpoint_interval old, and when it stops. `log_name` is what the
  // signatures name the log by: the Kafka topic, or "embedded".
  std::shared_ptr<CheckpointSigner> signer;
  // The key `signer` replaces (`--previous-writer-key-file`): a rotation. Where a partition's
  // checkpoints are still signed by it, its next checkpoint is signed by it and names `signer`'s
  // public key as `nextKey`, and from then on `signer` signs (docs/security.md, "Rotating the
  // writer key"). Null: no rotation; a partition signed by another key is logged as an error at
  // each start and `kobo audit --verify-key` will flag its checkpoints.
  std::shared_ptr<CheckpointSigner> previous_signer;
  std::string log_name = "embedded";
  std::uint64_t checkpoint_events = 1'000;
  std::chrono::milliseconds checkpoint_interval{10'000};
};

// A partition's place in a writer (see "Ownership" above).
enum class Ownership : std::uint8_t { standby, taking, owned };
std::string_view to_string(Ownership o);

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
  Seq durable_seq(Partition p) const {
    KOBO_ASSERT(p.value < options_.config.partitions, "the durable seq of one of the log's partitions");
    return Seq(durable_seq_[p.value].load(std::memory_order_acquire));
  }
  // Thread-safe. How many businesses exist (all partitions).
  std::size_t business_count() const { return business_count_.load(); }
  // Thread-safe. False until start() succeeded, while the writer cannot write (an append failed
  // and the log is not yet settled and re-read), and for good once another writer has fenced it;
  // /readyz reports it.
  bool healthy() const { return healthy_.load(); }
  // Thread-safe. Why the writer is not healthy ("the event log's disk is full: …"); empty
  // while it is.
  std::string fault() const;

  // ---- ownership (a cluster node; see above). Thread-safe.
  // Hands partition p to this writer: it fences the previous writer, reads p to its end and
  // appends WriterStarted, retrying while the log cannot be written, until p is owned or
  // release()d. Returns at once.
  void take(Partition p);
  // Takes partitions away: returns once the writer has let them go (the batch in flight appended
  // or failed, the producers closed), or after LedgerOptions::release_wait.
  void release(const std::vector<Partition>& partitions);
  bool owns(Partition p) const { return ownership(p) == Ownership::owned; }
  Ownership ownership(Partition p) const {
    KOBO_ASSERT(p.value < options_.config.partitions, "the ownership of one of the log's partitions");
    const std::uint8_t o = ownership_[p.value].load(std::memory_order_acquire);
    KOBO_ASSERT(o <= static_cast<std::uint8_t>(Ownership::owned), "an ownership set_ownership() stored");
    return static_cast<Ownership>(o);
  }
  // The epoch of partition p's last writer as this writer's state has it (its own once owned).
  Epoch epoch(Partition p) const {
    KOBO_ASSERT(p.value < options_.config.partitions, "the epoch of one of the log's partitions");
    return Epoch(epoch_[p.value].load(std::memory_order_acquire));
  }
  // The next offset this writer reads of partition p: how far its state has followed the log
  // (the log's end offset less this is the standby's lag). 0 on a single node.
  Offset followed_offset(Partition p) const {
    KOBO_ASSERT(p.value < options_.config.partitions,
                "how far the writer follows one of the log's partitions");
    return Offset(followed_offset_[p.value].load(std::memory_order_acquire));
  }

  // Thread-safe, once start() succeeded. What a new node's writer starts from, copied into
  // `dir` for a peer that joins the cluster (docs/architecture.md, "A new node"): the newest
  // snapshot into dir/snapshots (when there is one) and then a checkpoint of the history index
  // into dir/history, in that order, so that the index covers the snapshot (the Snapshotter
  // writes one only once the index has reached it).
  [[nodiscard]] Status checkpoint(const std::filesystem::path& dir);

 private:
  struct Pending {
    Command command;
    Callback done;
  };

  [[nodiscard]] Status replay();
  [[nodiscard]] Status replay_newest();
  [[nodiscard]] Status replay_after(Snapshot from);
  [[nodiscard]] Status write_history();
  [[nodiscard]] Status append_writer_started(const std::vector<Partition>& partitions);
  void run();
  // Ownership, on the writer thread (a cluster node).
  [[nodiscard]] Status open_standby();
  void handle_ownership_requests();
  void let_go(Partition p, std::string_view why);
  void follow_standby();
  [[nodiscard]] Result<std::size_t> standby_step(std::chrono::milliseconds wait);
  void complete_takes();
  void set_ownership(Partition p, Ownership o);
  void note_first_commands(const std::vector<Pending>& batch, const std::vector<Outcome>& outcomes);
  void recover();
  void resume_scheduled();
  void take_due(std::vector<Pending>& batch);
  void process(std::vector<Pending>& batch);
  // Signed checkpoints (LedgerOptions::signer), on the writer thread.
  [[nodiscard]] Result<EncodedEvent> place_checkpoint(PartitionState& st, UnixMs now);
  bool rotates(const PartitionState& st) const;
  void check_checkpoint_key(const PartitionState& st) const;
  void note_unsigned(Partition p, std::uint64_t events, UnixMs now);
  std::optional<UnixMs> checkpoint_due() const;
  void sign_overdue(bool all);
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
  std::unique_ptr<std::atomic<std::uint64_t>[]> epoch_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> followed_offset_;
  std::unique_ptr<std::atomic<std::uint8_t>[]> ownership_;  // Ownership, written by the writer thread
  std::atomic<std::size_t> business_count_{0};
  std::atomic<bool> healthy_{false};
  bool start_failed_ = false;  // start() only: an earlier attempt may have appended part of WriterStarted
  mutable std::mutex fault_mu_;
  std::string fault_ = "the writer has not started";  // guarded by fault_mu_; why healthy_ is false
  ErrorKind fault_kind_ = ErrorKind::other;           // guarded by fault_mu_
  void set_fault(const Status& s);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  FairQueue<Pending> queue_;  // guarded by mu_
  bool stopping_ = false;     // guarded by mu_
  bool started_ = false;      // guarded by mu_: start() succeeded, the writer thread takes the queue
  // Writer thread only: internal commands (payout rail steps, collection expiries) by due time.
  std::multimap<UnixMs, Command> scheduled_;
  // Ownership requests (a cluster node), guarded by mu_; released_[p] counts the releases of p
  // the writer has done, which release() waits on (released_cv_).
  struct OwnershipRequest {
    Partition partition;
    bool take = false;  // else a release
  };
  std::vector<OwnershipRequest> ownership_requests_;
  std::vector<std::uint64_t> released_;
  std::condition_variable released_cv_;
  // Writer thread only (a cluster node): the standby's reader of the log, the partitions being
  // taken (acquired: their previous writer is fenced) and when each take() was asked, and the
  // partitions whose first command after a takeover is still to be answered (for metrics).
  std::unique_ptr<LogFollower> standby_;
  struct Taking {
    Partition partition;
    bool acquired = false;
  };
  std::vector<Taking> taking_;
  std::vector<std::chrono::steady_clock::time_point> take_asked_;
  std::vector<bool> awaiting_first_;
  std::chrono::steady_clock::time_point next_take_attempt_{};
  std::chrono::steady_clock::time_point next_recovery_{};  // writer thread only
  // Writer thread only, with a signer: per partition, the events appended since its last signed
  // checkpoint and when the first of them was.
  std::vector<std::uint64_t> unsigned_events_;
  std::vector<UnixMs> unsigned_since_;
  std::thread thread_;
};

}  // namespace kobo
