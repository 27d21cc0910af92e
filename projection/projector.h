#pragma once
// Projector: follows the event log and keeps the Views up to date (docs/architecture.md sections 2
// and 5). One thread reads the log (decoding and checking the chain) and hands each partition's
// events to one of its *lanes*: threads that apply partitions in parallel (assign_lanes()), each
// with its own batch and its partitions' positions. The views of different
// partitions share no key, so lanes never meet. Each flush of a lane is one RocksDB WriteBatch
// holding the view changes of whole commands together with the log positions they reflect, so a
// crash never applies an event twice or skips one, and a reader never sees half a command.
//
// Lifecycle: construct over open Views and an EventLog, start(), stop() (or destructor).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/assert.h"
#include "events/event_log.h"
#include "events/log_follower.h"
#include "projection/views.h"

namespace kobo {

struct ProjectorOptions {
  // Records read per poll; a flush covers one poll, extended to the end of a split command.
  std::size_t poll_records_max = 4096;
  // While nobody waits for the views (no read barrier, no when_applied), a flush follows the one
  // before by at least this much, so that under load each covers many group commits: a batch
  // sums its counters and writes a wallet row once however many events it holds. Anyone waiting
  // ends the wait at once. Zero: a flush as soon as the log has more.
  std::chrono::microseconds flush_spacing = std::chrono::microseconds(0);
  // The projector threads' nice value (common/thread.h), or nullopt to leave them as started.
  // Sharing cores with the HTTP threads, the writer and a load generator, the projector at the
  // default priority falls behind under load by tens of milliseconds (docs/architecture.md).
  std::optional<int> nice = std::nullopt;
  // A live flush (WriteBatches) holds at most about this many events: a lane catching up on a
  // long tail writes it in batches of this size rather than in one that holds the whole tail.
  std::size_t flush_events_max = 4096;
  // How many lanes apply partitions in parallel; 0: one per core the machine has, at most one
  // per partition.
  std::uint32_t lanes = 0;
  // A rebuild's way: the lanes write their batches, once they hold about this many bytes in all,
  // as sorted files the views ingest (Views::ingest), not through the memtable, into views that
  // held nothing when the projector began. 0: WriteBatches (the live views).
  std::size_t ingest_bytes = 0;
  // A rebuild's run of keys that is a file of its own (Views::ingest).
  std::size_t ingest_run_bytes = std::size_t{1} << 20;
  // A lane holds at most this many events handed to it and not applied yet: the reader waits
  // beyond (a lane that cannot write its views must not make the projector hold the log in
  // memory). In a rebuild, the reader reads the partitions of lanes holding half as many or more
  // only when no other lane has room and something to read (Projector::hold_back()).
  std::size_t lane_events_max = std::size_t{1} << 16;
  // How many events each partition holds, where that is known ahead (a rebuild: the records up to
  // where it stops); the lanes then share the partitions by it (assign_lanes()). Empty: unknown.
  std::vector<std::uint64_t> partition_events;
};

// The lane that applies each partition. Without `events`, partition p goes to lane p % lanes;
// with them (one per partition), the partition with the most goes first, each to the lane with
// the fewest events so far (then the fewest partitions), so that lanes that share a few uneven
// partitions finish together: a rebuild's lanes otherwise split 2 to 1 on the benchmark's log,
// whose businesses fill three of six partitions, and the larger share set its wall time.
std::vector<std::uint32_t> assign_lanes(std::uint32_t partitions, std::uint32_t lanes,
                                        const std::vector<std::uint64_t>& events = {});

class Projector {
 public:
  Projector(EventLog& log, Views& views, ProjectorOptions options = {});
  ~Projector();
  Projector(const Projector&) = delete;
  Projector& operator=(const Projector&) = delete;

  [[nodiscard]] Status start();
  void stop();

  // The lanes the projector applies partitions with.
  std::uint32_t lanes() const {
    KOBO_ASSERT(!lanes_.empty(), "a projector applies with a lane at least");
    return static_cast<std::uint32_t>(lanes_.size());
  }

  // Thread-safe. The seq of the last event applied to the views in partition p.
  Seq applied_seq(Partition p) const {
    KOBO_ASSERT(p.value < log_.partitions(), "the applied seq of one of the log's partitions");
    return Seq(applied_[p.value].load(std::memory_order_acquire));
  }
  // Thread-safe. Waits until partition p has applied `seq`; false on timeout or failure.
  bool wait_applied(Partition p, Seq seq, std::chrono::milliseconds timeout) const;
  // Thread-safe, and blocks no thread: calls `then(true)` once partition p has applied `seq`,
  // or `then(false)` when `timeout` passes first, the projection stops on a log it cannot
  // accept, or the projector stops. `then` is called exactly once, on the calling thread when
  // `seq` is applied already, else on the projector's thread (timeouts within
  // kWaiterTick): it must be quick, so it hands any real work to a thread of its own.
  void when_applied(Partition p, Seq seq, std::chrono::milliseconds timeout, std::function<void(bool)> then);
  // How late a when_applied timeout may fire.
  static constexpr std::chrono::milliseconds kWaiterTick{100};
  // Thread-safe. False once the projection stopped for good (on a log it cannot accept, or an
  // exception on its thread), and while it starts again after a read that failed (the log's,
  // or the views' while applying an event): every second, from the positions the views hold,
  // until it goes on. fault() says why.
  bool healthy() const { return healthy_.load(); }
  // Thread-safe. True while the views cannot be written (a full disk, an I/O error) and the
  // projector retries: they lag the log but still hold every command applied before.
  bool views_unwritable() const {
    const int unwritten = unwritten_.load();
    KOBO_ASSERT(unwritten >= 0 && static_cast<std::size_t>(unwritten) <= lanes_.size(),
                "each lane retries one flush at a time");
    return unwritten > 0;
  }
  // Thread-safe. Why the views are not being kept up to date ("the views' disk is full: …"),
  // or "" while they are. A write fault clears itself once the views can be written again.
  std::string fault() const;

  // Applies everything currently in the log and returns (no thread). For `kobo replay` and tests.
  [[nodiscard]] Status catch_up();
  // Applies the log up to offset until[p] of each partition p (command boundaries, such as the
  // positions another copy of the views is at) and returns. For `kobo audit`.
  [[nodiscard]] Status catch_up_to(const std::vector<Offset>& until);

 private:
  class Lane;
  class Dispatcher;
  void run();     // the reading thread's body: follow() with every exception caught
  void follow();  // reads and hands out the log until stop() or a failure
  // Stops the projection for good (healthy() false), logging `what` and naming `error` in fault().
  void stopped(std::string_view what, const std::string& error);
  // healthy() false and fault() naming `error`; the waiters are answered (false).
  void halt(const std::string& error);
  // After a read that failed: drops every lane's batch, half applied, and opens the follower
  // again at the views' positions, every second until it opens or the projector stops
  // (healthy() false and fault() naming `failed` meanwhile).
  void start_again(const Status& failed);
  [[nodiscard]] Status open_follower();
  // Reads a poll's worth of the log (up to `until`) and hands it to the lanes.
  [[nodiscard]] Result<std::size_t> step(std::chrono::milliseconds wait,
                                         const std::vector<Offset>* until = nullptr);
  // Waits until every lane applied and wrote everything handed to it; a lane's error, if any.
  [[nodiscard]] Status sync_lanes();
  // The first error a lane met applying events, or ok (clears it).
  Status lane_failure();
  std::uint32_t lane_index(std::uint32_t partition) const {
    KOBO_ASSERT(partition < lane_of_.size() && lane_of_[partition] < lanes_.size(),
                "the lane of one of the log's partitions");
    return lane_of_[partition];
  }
  Lane& lane_of(std::uint32_t partition) { return *lanes_[lane_index(partition)]; }
  // A rebuild's next poll skips the partitions of lanes that hold half of what they may
  // (lane_events_max), while a lane with room has a partition still to read up to `until`. The
  // reader fills a poll from the lowest partition first; without this it waited on the one lane
  // whose partition it was reading, another lane idle, and a lane writing its file stopped the
  // whole rebuild (docs/architecture.md, "Rebuilds write files").
  void hold_back(const std::vector<Offset>& until);
  void stop_lanes();

  EventLog& log_;
  Views& views_;
  const ProjectorOptions options_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::vector<std::uint32_t> lane_of_;     // by partition (assign_lanes())
  std::unique_ptr<LogFollower> follower_;  // the reading thread (or catch_up's caller) only
  bool log_refused_ = false;               // the last step ended on a record the follower refused (ditto)
  std::unique_ptr<std::atomic<std::uint64_t>[]> applied_;
  std::atomic<bool> healthy_{true};
  std::atomic<bool> dead_{false};     // stopped for good (stopped())
  std::vector<ViewPosition> handed_;  // where the lanes were last told their partitions are (reader only)
  std::atomic<int> unwritten_{0};     // lanes whose flush failed and is retried
  mutable std::mutex fault_mu_;
  std::string fault_;  // guarded by fault_mu_
  void set_fault(std::string fault);
  // The callers of when_applied still waiting, bounded by theirs (one per HTTP request in
  // flight). Called back outside waiters_mu_.
  struct Waiter {
    Partition partition;
    Seq seq;
    std::chrono::steady_clock::time_point deadline;
    std::function<void(bool)> then;
  };
  std::mutex waiters_mu_;
  std::vector<Waiter> waiters_;  // guarded by waiters_mu_
  // Answers the waiters whose seq is applied (true), whose deadline passed (false), or all of
  // them (false) when `all` is set, as the projector stops.
  void answer_waiters(bool all = false);
  // Sleeps `d` on the calling thread, answering the waiters whose deadline passes meanwhile.
  void sleep_answering_waiters(std::chrono::milliseconds d);
  // Partition p has applied `seq` (called by its lane after a flush).
  void publish(std::uint32_t p, Seq seq);
  // How many wait for the views: when_applied's waiters and wait_applied's callers.
  mutable std::atomic<int> waiting_{0};
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::thread thread_;
};

}  // namespace kobo
