#include "projection/projector.h"

#include <algorithm>
#include <deque>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "common/log.h"
#include "common/metrics.h"
#include "common/thread.h"
#include "events/chain.h"
#include "projection/apply.h"

namespace kobo {

namespace {

struct ProjectorMetrics {
  metrics::Histogram& lag_seconds = metrics::registry().histogram(
      "kobo_projection_lag_seconds",
      "Time from an event's decision (just before its append) until the views show it");
  metrics::Gauge& last_lag =
      metrics::registry().gauge("kobo_projection_lag_last_seconds", "Lag of the most recently applied event");
  metrics::Histogram& batch_events = metrics::registry().histogram(
      "kobo_projection_batch_events", "Events per view WriteBatch", "", metrics::size_buckets());
};

ProjectorMetrics& projector_metrics() {
  static ProjectorMetrics m;
  return m;
}

// What a lane is handed after each read of the log: the events of its partitions, in order, and
// where its partitions stand after them.
struct Handed {
  std::vector<std::shared_ptr<const Event>> events;  // shared with the log's other readers (LogVisitor)
  std::vector<std::pair<std::uint32_t, ViewPosition>> positions;
  bool whole = true;  // no partition of the lane stops in the middle of a command
  bool sync = false;  // write everything now and say so (sync_lanes)
};

}  // namespace

// A thread that applies some partitions' events to the views: one batch, flushed with those
// partitions' positions when it holds whole commands and its queue ran dry (or, in a rebuild,
// when it is large).
class Projector::Lane {
 public:
  Lane(Projector& owner, std::uint32_t index) : owner_(owner), index_(index), batch_(owner.views_) {
    // A rebuild writes into views that held nothing (checked as the projector is made).
    if (owner.options_.ingest_bytes > 0) batch_.began_on_empty_views();
  }

  void start() {
    KOBO_ASSERT(!thread_.joinable(), "a lane starts once");
    thread_ = std::thread([this] { run(); });
  }
  void stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    KOBO_ASSERT(!thread_.joinable(), "a stopped lane's thread has ended");
  }

  // Wakes whoever waits on the lane, to see that the projector stops.
  void wake() {
    std::lock_guard lock(mu_);
    space_.notify_all();
    cv_.notify_all();
    done_.notify_all();
  }
  // The reader's side: hands `h` over, waiting while the lane holds too much.
  void hand(Handed h) {
    for (std::size_t i = 0; i < h.events.size(); ++i) {
      const Event& e = *h.events[i];
      KOBO_ASSERT(owner_.lane_index(e.partition.value) == index_,
                  "an event handed to a lane not its partition's");
      // The batch applies them in the order handed: a partition's in the order of its chain.
      KOBO_ASSERT(i == 0 || h.events[i - 1]->partition != e.partition || h.events[i - 1]->seq < e.seq,
                  "a partition's events are handed to its lane in chain order");
    }
    std::unique_lock lock(mu_);
    space_.wait(lock, [&] {
      return held_ < owner_.options_.lane_events_max || stopping_ || exited_ || owner_.stopping_.load();
    });
    held_ += h.events.size();
    queue_.push_back(std::move(h));
    cv_.notify_all();
  }
  // Drops what the lane was handed and its batch, and waits until it did.
  void drop() {
    std::unique_lock lock(mu_);
    queue_.clear();
    held_ = 0;
    drop_ = true;
    cv_.notify_all();
    space_.notify_all();
    done_.wait(lock, [&] { return !drop_ || stopping_ || exited_; });
    KOBO_ASSERT(queue_.empty() && held_ == 0, "a dropped lane holds nothing handed to it");
  }
  // Waits until everything handed so far is applied and written; the lane's error, if any.
  Status sync() {
    std::unique_lock lock(mu_);
    const std::uint64_t ticket = ++sync_asked_;
    KOBO_ASSERT(sync_done_ < ticket, "a sync waits for what is not written yet");
    Handed h;
    h.sync = true;
    queue_.push_back(std::move(h));
    cv_.notify_all();
    done_.wait(lock, [&] { return sync_done_ >= ticket || !failed_.ok() || stopping_ || exited_; });
    if (exited_ && failed_.ok() && sync_done_ < ticket) return Status::error("the projector stopped");
    return failed_;
  }
  // Whether the lane holds at least half the events it may be handed (ProjectorOptions::
  // lane_events_max): a rebuild's reader then reads other lanes' partitions first (hold_back()).
  bool half_full() {
    std::lock_guard lock(mu_);
    return held_ >= owner_.options_.lane_events_max / 2;
  }
  // The error the lane met applying events, if any; it applies nothing more until drop().
  Status failure() {
    std::lock_guard lock(mu_);
    return failed_;
  }
  bool failed() {
    std::lock_guard lock(mu_);
    return !failed_.ok();
  }

 private:
  void run() {
    name_this_thread("kobo-project-" + std::to_string(index_));
    if (owner_.options_.nice) permit_unchecked(set_this_thread_nice(*owner_.options_.nice));
    try {
      loop();
    } catch (const std::exception& e) {
      owner_.stopped("projection stopped: an exception reached a projector lane", e.what());
    } catch (...) {
      owner_.stopped("projection stopped: an exception reached a projector lane", "not a std::exception");
    }
    std::lock_guard lock(mu_);
    exited_ = true;  // whoever waits for the lane waits no more
    done_.notify_all();
    space_.notify_all();
  }

  void loop() {
    std::deque<Handed> work;
    bool sync_pending = false;
    for (;;) {
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || drop_ || !queue_.empty(); });
        if (stopping_) return;
        if (drop_) {
          batch_.forget();
          pending_.clear();
          whole_ = true;
          sync_pending = false;
          drop_ = false;
          failed_ = Status();
          done_.notify_all();
          continue;
        }
        work.swap(queue_);
        held_ = 0;
        KOBO_ASSERT(queue_.empty(), "the lane takes all it was handed");
        space_.notify_all();
        if (!failed_.ok()) {  // a batch half applied waits to be dropped
          work.clear();
          continue;
        }
      }
      for (Handed& h : work) {
        for (const auto& e : h.events) {
          if (Status s = batch_.apply(*e); !s) {
            fail(s);
            break;
          }
        }
        if (failed()) break;
        for (auto& [p, position] : h.positions) {
          // The follower only reads on; a drop() empties what is pending before it reads again.
          KOBO_ASSERT(!pending_.contains(p) || pending_.at(p).last_seq <= position.last_seq,
                      "a partition's position handed to its lane never goes back");
          pending_[p] = std::move(position);
        }
        whole_ = h.whole;
        sync_pending = sync_pending || h.sync;
        // A long tail is written in batches of flush_events_max, whole commands each; a rebuild
        // writes a file once its share of ingest_bytes is full.
        if (whole_ && full() && !flush()) return;  // stopping while the views cannot be written
      }
      work.clear();
      if (failed()) continue;  // the reader starts again (drop())
      if (!whole_) continue;   // the rest of a command comes in a later hand-over
      if (!sync_pending) {
        if (owner_.options_.ingest_bytes > 0) continue;  // the file waits until it is full
        if (!space_flush()) continue;                    // more came meanwhile: it joins this flush
      }
      if (!flush()) return;  // stopping while the views cannot be written
      if (sync_pending) {
        sync_pending = false;
        std::lock_guard lock(mu_);
        sync_done_ = sync_asked_;
        done_.notify_all();
      }
    }
  }

  bool full() const {
    if (owner_.options_.ingest_bytes > 0)
      return batch_.bytes() >= owner_.options_.ingest_bytes / owner_.lanes_.size();
    return batch_.events() >= owner_.options_.flush_events_max;
  }

  void fail(const Status& s) {
    KOBO_ASSERT(!s.ok(), "a lane fails for a reason");
    std::lock_guard lock(mu_);
    if (failed_.ok()) failed_ = s;
    done_.notify_all();
  }

  // Holds a flush back until flush_spacing after the last one, unless someone waits; false when
  // more was handed meanwhile (the loop takes it first, and comes back).
  bool space_flush() {
    const auto spacing = owner_.options_.flush_spacing;
    if (spacing.count() == 0) {
      std::lock_guard lock(mu_);
      return queue_.empty();
    }
    constexpr auto kCheck = std::chrono::microseconds(250);  // how soon a new waiter is seen
    const auto due = last_flush_ + spacing;
    for (auto now = std::chrono::steady_clock::now(); now < due && owner_.waiting_.load() == 0;
         now = std::chrono::steady_clock::now()) {
      std::unique_lock lock(mu_);
      if (stopping_ || drop_) return false;
      cv_.wait_for(lock, std::min<std::chrono::steady_clock::duration>(kCheck, due - now),
                   [&] { return stopping_ || drop_; });
    }
    std::lock_guard lock(mu_);
    // What came meanwhile joins this flush when it is whole commands: the loop applies it first.
    return queue_.empty() || owner_.waiting_.load() > 0 || drop_ || stopping_;
  }

  // Writes the batch with its partitions' positions; retries every second while the views cannot
  // be written. False when the lane stops meanwhile.
  bool flush() {
    std::vector<std::pair<std::uint32_t, Seq>> moved;
    for (const auto& [p, position] : pending_) {
      if (written_.contains(p) && written_.at(p) == position) continue;
      batch_.put_position(p, position);
      moved.emplace_back(p, position.last_seq);
    }
    if (batch_.empty()) return true;
    const std::size_t events = batch_.events();
    bool forget_rows = false;
    Status s = write();
    if (!s) {
      owner_.unwritten_.fetch_add(1);
      log::warn("the views cannot be written; retrying", {{"error", s.message()}});
      for (;;) {
        // A write can fail after reaching the views' write-ahead log (an acknowledgement lost),
        // and the reopen then recovers it: the batch is not written twice, as a list's numbers
        // would be counted twice.
        owner_.set_fault(std::string(s.kind() == ErrorKind::no_space ? "the views' disk is full: "
                                                                     : "the views cannot be written: ") +
                         s.message());
        owner_.sleep_answering_waiters(std::chrono::seconds(1));
        {
          std::lock_guard lock(mu_);
          if (stopping_ || owner_.stopping_.load()) {
            owner_.unwritten_.fetch_sub(1);
            return false;
          }
        }
        s = owner_.views_.reopen();
        if (s && !landed()) s = write();
        if (s) break;
      }
      owner_.unwritten_.fetch_sub(1);
      owner_.set_fault({});
      log::info("the views are written again");
      // The views were opened again meanwhile: the next batch reads its rows from them afresh.
      forget_rows = true;
    }
    const UnixMs now = now_ms();
    for (const UnixMs t : batch_.times())
      projector_metrics().lag_seconds.observe(static_cast<double>(now - t) / 1000.0);
    if (!batch_.times().empty())
      projector_metrics().last_lag.set(static_cast<double>(now - batch_.times().back()) / 1000.0);
    projector_metrics().batch_events.observe(static_cast<double>(events));
    if (forget_rows)
      batch_.forget();
    else
      batch_.clear();
    for (const auto& [p, position] : pending_) written_[p] = position;
    KOBO_ASSERT(written_.size() >= pending_.size() && moved.size() <= pending_.size(),
                "the views hold where the batch brought each of its partitions");
    last_flush_ = std::chrono::steady_clock::now();
    for (const auto& [p, seq] : moved) owner_.publish(p, seq);
    return true;
  }

  Status write() {
    KOBO_ASSERT(!batch_.empty(), "a write of a batch that holds something");
    const auto changes = batch_.changes();
    return owner_.options_.ingest_bytes > 0 ? owner_.views_.ingest(changes, owner_.options_.ingest_run_bytes)
                                            : owner_.views_.write(changes);
  }

  // Whether the views hold this batch already: the positions it moves, written with it at once,
  // are what they hold.
  bool landed() const {
    for (const auto& [p, position] : pending_) {
      if (written_.contains(p) && written_.at(p) == position) continue;
      const auto stored = owner_.views_.positions();
      return stored.ok() && p < stored.value().size() && stored.value()[p] == position;
    }
    return false;
  }

  Projector& owner_;
  const std::uint32_t index_;
  ViewBatch batch_;                                // the lane's thread only
  std::map<std::uint32_t, ViewPosition> pending_;  // where the batch brings its partitions
  std::map<std::uint32_t, ViewPosition> written_;  // what the views hold of them
  bool whole_ = true;
  std::chrono::steady_clock::time_point last_flush_{};
  std::thread thread_;

  std::mutex mu_;
  std::condition_variable cv_;     // the lane waits for work
  std::condition_variable space_;  // the reader waits for room
  std::condition_variable done_;   // drop() and sync() wait for the lane
  std::deque<Handed> queue_;       // guarded by mu_
  std::size_t held_ = 0;           // events in queue_
  bool stopping_ = false;
  bool exited_ = false;  // the lane's thread ended (stopped, or an exception)
  bool drop_ = false;
  std::uint64_t sync_asked_ = 0, sync_done_ = 0;
  Status failed_;
};

// Hands each event the follower accepts to its partition's lane.
class Projector::Dispatcher final : public LogVisitor {
 public:
  explicit Dispatcher(Projector& p) : p_(p), handed_(p.lanes_.size()) {
    KOBO_ASSERT(!handed_.empty(), "a projector hands events to a lane at least");
  }
  Status accepted(const Event& e) override { return accepted_shared(std::make_shared<const Event>(e)); }
  Status accepted_shared(const std::shared_ptr<const Event>& e) override {
    KOBO_ASSERT(e != nullptr && !handed_.empty() && e->partition.value < p_.log_.partitions(),
                "an event of a partition the log lacks");
    handed_[p_.lane_index(e->partition.value)].events.push_back(e);
    return {};
  }
  Disposition refused(const RefusedRecord& r) override {
    const Disposition d = LogVisitor::refused(r);
    // The views apply only what extends the chain: a duplicate or a fenced writer's event is
    // skipped, anything else stops the projection.
    KOBO_ASSERT(d != Disposition::adopt, "the projection adopts no record the chain refuses");
    if (d == Disposition::stop) refused_ = true;
    return d;
  }
  // Whether the step ended on a record of the log it refuses (a broken chain, say): reading
  // again would meet the same record.
  bool refused_log() const { return refused_; }
  // Hands the lanes what the step read, with their partitions' positions.
  void hand_over(const LogFollower& follower) {
    const auto& cursors = follower.cursors();
    KOBO_ASSERT(cursors.size() == p_.log_.partitions(), "a position per partition of the log");
    std::vector<bool> moved(handed_.size(), false);
    p_.handed_.resize(cursors.size());
    for (std::uint32_t p = 0; p < cursors.size(); ++p) {
      const std::size_t lane = p_.lane_index(p);
      Handed& h = handed_[lane];
      const FollowCursor& c = cursors[p];
      ViewPosition now{c.next_offset, c.chain.last_seq(), c.chain.last_hash(), c.chain.epoch()};
      if (!(p_.handed_[p] == now)) moved[lane] = true;
      p_.handed_[p] = now;
      h.positions.emplace_back(p, std::move(now));
      if (c.mid_command) h.whole = false;
    }
    // A lane whose partitions did not move is not woken.
    for (std::size_t lane = 0; lane < handed_.size(); ++lane) {
      if (moved[lane] || !handed_[lane].events.empty()) p_.lanes_[lane]->hand(std::move(handed_[lane]));
      handed_[lane] = Handed{};
    }
    KOBO_ASSERT(p_.handed_.size() == cursors.size(), "the positions handed are one per partition");
  }

 private:
  Projector& p_;
  std::vector<Handed> handed_;
  bool refused_ = false;
};

Projector::Projector(EventLog& log, Views& views, ProjectorOptions options)
    : log_(log),
      views_(views),
      options_(std::move(options)),
      applied_(std::make_unique<std::atomic<std::uint64_t>[]>(log.partitions())) {
  KOBO_ASSERT(log.partitions() == views.partitions(), "log and views disagree on partitions");
  std::uint32_t lanes = options_.lanes;
  if (lanes == 0) lanes = cores_available();
  lanes = std::min(lanes, log.partitions());
  lane_of_ = assign_lanes(log.partitions(), lanes, options_.partition_events);
  if (options_.ingest_bytes > 0) {
    // What a rebuild's lanes rely on (ViewBatch::began_on_empty_views): views that hold nothing
    // yet. A read that fails here fails again, reported, as the follower opens.
    const auto held = views.positions();
    KOBO_ASSERT(!held || std::all_of(held.value().begin(), held.value().end(),
                                     [](const ViewPosition& v) {
                                       return v.last_seq.value == 0 && v.next_offset.value == 0;
                                     }),
                "a rebuild's views hold nothing when it begins");
  }
  for (std::uint32_t i = 0; i < lanes; ++i) lanes_.push_back(std::make_unique<Lane>(*this, i));
  for (auto& lane : lanes_) lane->start();
  KOBO_ASSERT(!lanes_.empty() && lanes_.size() <= log.partitions(),
              "a lane at least, none without a partition");
}

Projector::~Projector() { stop(); }

std::vector<std::uint32_t> assign_lanes(std::uint32_t partitions, std::uint32_t lanes,
                                        const std::vector<std::uint64_t>& events) {
  KOBO_ASSERT(lanes >= 1 && lanes <= partitions, "a lane at least, none without a partition");
  KOBO_ASSERT(events.empty() || events.size() == partitions, "events known for every partition or none");
  std::vector<std::uint32_t> lane_of(partitions);
  if (events.empty()) {
    for (std::uint32_t p = 0; p < partitions; ++p) lane_of[p] = p % lanes;
    return lane_of;
  }
  std::vector<std::uint32_t> order(partitions);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return events[a] > events[b]; });
  std::vector<std::pair<std::uint64_t, std::uint32_t>> load(lanes);  // events, partitions
  for (const std::uint32_t p : order) {
    const auto least = std::min_element(load.begin(), load.end());
    lane_of[p] = static_cast<std::uint32_t>(least - load.begin());
    least->first += events[p];
    ++least->second;
  }
  KOBO_ASSERT(std::all_of(load.begin(), load.end(), [](const auto& l) { return l.second >= 1; }),
              "every lane applies a partition at least");
  return lane_of;
}

Status Projector::start() {
  KOBO_ASSERT(!thread_.joinable(), "a projector started twice");
  if (auto s = catch_up(); !s) return s;
  thread_ = std::thread([this] { run(); });
  return {};
}

void Projector::stop() {
  stopping_.store(true);
  for (auto& lane : lanes_) lane->wake();  // a reader waiting for a lane's room sees it
  if (thread_.joinable()) thread_.join();
  KOBO_ASSERT(!thread_.joinable(), "the reader stops before its lanes");
  stop_lanes();
  answer_waiters(/*all=*/true);
}

void Projector::stop_lanes() {
  KOBO_ASSERT(!thread_.joinable(), "lanes stopped while the reader hands them events");
  for (auto& lane : lanes_) lane->stop();
}

bool Projector::wait_applied(Partition p, Seq seq, std::chrono::milliseconds timeout) const {
  KOBO_ASSERT(p.value < log_.partitions(), "a wait for a partition the log lacks");
  waiting_.fetch_add(1);
  const struct Done {
    std::atomic<int>& waiting;
    ~Done() { waiting.fetch_sub(1); }
  } done{waiting_};
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return applied_seq(p) >= seq || !healthy_.load(); }) &&
         applied_seq(p) >= seq;
}

void Projector::when_applied(Partition p, Seq seq, std::chrono::milliseconds timeout,
                             std::function<void(bool)> then) {
  KOBO_ASSERT(p.value < log_.partitions() && then,
              "a wait for a partition the log lacks, or no one to answer");
  if (applied_seq(p) >= seq) return then(true);
  {
    std::lock_guard lock(waiters_mu_);
    // Checked again under the lock that answer_waiters takes after each publish, so a seq
    // applied in between is never missed; a stopped projection answers at once.
    if (applied_seq(p) < seq && healthy_.load() && !stopping_.load()) {
      waiters_.push_back(Waiter{p, seq, std::chrono::steady_clock::now() + timeout, std::move(then)});
      waiting_.fetch_add(1);
      return;
    }
  }
  then(applied_seq(p) >= seq);
}

void Projector::answer_waiters(bool all) {
  std::vector<std::pair<std::function<void(bool)>, bool>> due;
  {
    std::lock_guard lock(waiters_mu_);
    const auto now = std::chrono::steady_clock::now();
    const bool stopped = all || !healthy_.load();
    std::erase_if(waiters_, [&](Waiter& w) {
      const bool applied = applied_seq(w.partition) >= w.seq;
      if (!applied && !stopped && w.deadline > now) return false;
      due.emplace_back(std::move(w.then), applied);
      return true;
    });
    waiting_.fetch_sub(static_cast<int>(due.size()));
    KOBO_ASSERT(waiting_.load() >= 0, "more waiters answered than waited");
  }
  for (auto& [then, applied] : due) then(applied);
}

void Projector::sleep_answering_waiters(std::chrono::milliseconds d) {
  KOBO_ASSERT(d.count() >= 0, "a sleep of negative length");
  const auto until = std::chrono::steady_clock::now() + d;
  while (!stopping_.load() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(kWaiterTick, until - std::chrono::steady_clock::now()));
    answer_waiters();
  }
}

std::string Projector::fault() const {
  std::lock_guard lock(fault_mu_);
  return fault_;
}

void Projector::set_fault(std::string fault) {
  std::lock_guard lock(fault_mu_);
  fault_ = std::move(fault);
}

void Projector::publish(std::uint32_t p, Seq seq) {
  KOBO_ASSERT(p < log_.partitions(), "a seq applied of a partition the log has");
  {
    std::lock_guard lock(mu_);
    KOBO_ASSERT(seq.value >= applied_[p].load(), "a partition's applied seq went back");
    applied_[p].store(seq.value, std::memory_order_release);
  }
  cv_.notify_all();
  answer_waiters();
}

// The reading thread's boundary: nothing thrown below it may end the process through
// std::terminate. An exception stops the projection as a log it cannot apply does: logged,
// healthy() false, and fault() naming it, which /readyz reports.
void Projector::run() {
  name_this_thread("kobo-projector");
  if (options_.nice)
    if (const Status s = set_this_thread_nice(*options_.nice); !s)
      log::warn("the projector runs at the priority it started with; the views may lag further under load",
                {{"error", s.message()}});
  try {
    follow();
  } catch (const std::exception& e) {
    stopped("projection stopped: an exception reached the projector's thread", e.what());
  } catch (...) {
    stopped("projection stopped: an exception reached the projector's thread", "not a std::exception");
  }
}

void Projector::stopped(std::string_view what, const std::string& error) {
  KOBO_ASSERT(!what.empty(), "a projection stops saying why");
  log::error(what, {{"error", error}});
  dead_.store(true);
  halt(error);
}

void Projector::halt(const std::string& error) {
  KOBO_ASSERT(!error.empty(), "a projection stopped for no reason");
  set_fault("the projection stopped: " + error);
  healthy_.store(false);  // waiters are answered at once from here on
  cv_.notify_all();
  answer_waiters();
}

Status Projector::lane_failure() {
  KOBO_ASSERT(!lanes_.empty(), "a projector without lanes");
  for (auto& lane : lanes_)
    if (Status s = lane->failure(); !s) return s;
  return {};
}

void Projector::follow() {
  while (!stopping_.load()) {
    if (Status failed = lane_failure(); !failed) {
      start_again(failed);
      continue;
    }
    if (dead_.load()) return;
    auto s = step(std::chrono::milliseconds(100));
    if (!s) {
      if (log_refused_) {
        stopped("projection stopped: the log cannot be applied", s.status().message());
        return;
      }
      start_again(s.status());
      continue;
    }
    answer_waiters();  // their deadlines
  }
}

void Projector::start_again(const Status& failed) {
  KOBO_ASSERT(!failed.ok(), "the projection starts again after no failure");
  log::warn("the projection cannot read on; it starts again from the views' positions",
            {{"error", failed.message()}});
  halt(failed.message());
  for (auto& lane : lanes_) lane->drop();
  follower_.reset();
  Status opened;
  do {
    sleep_answering_waiters(std::chrono::seconds(1));
    if (stopping_.load()) return;
    opened = open_follower();
    if (!opened) set_fault("the projection stopped: " + opened.message());
  } while (!opened);
  set_fault({});
  KOBO_ASSERT(follower_ != nullptr, "the projection goes on with a follower open");
  healthy_.store(true);
  log::info("the projection goes on");
}

Status Projector::open_follower() {
  const auto read = views_.positions();
  if (!read) return read.status();
  const std::vector<ViewPosition>& positions = read.value();
  KOBO_ASSERT(positions.size() == log_.partitions(), "the views hold a position per partition of the log");
  std::vector<FollowCursor> cursors;
  for (std::uint32_t p = 0; p < positions.size(); ++p) {
    FollowCursor c;
    c.chain = ChainFollower(positions[p].last_seq, positions[p].last_hash, positions[p].epoch);
    c.next_offset = positions[p].next_offset;
    cursors.push_back(std::move(c));
    applied_[p].store(positions[p].last_seq.value, std::memory_order_release);
  }
  handed_.assign(positions.size(), ViewPosition{});
  auto follower = std::make_unique<LogFollower>(log_, LogFollowerOptions{options_.poll_records_max});
  if (auto s = follower->open(std::move(cursors)); !s) return s;
  follower_ = std::move(follower);
  KOBO_ASSERT(handed_.size() == log_.partitions(), "a position handed per partition of the log");
  return {};
}

Status Projector::catch_up() {
  auto ends = log_.end_offsets();
  if (!ends) return ends.status();
  KOBO_ASSERT(ends.value().size() == log_.partitions(), "an end offset per partition of the log");
  return catch_up_to(ends.value());
}

Status Projector::sync_lanes() {
  KOBO_ASSERT(follower_ == nullptr || !follower_->mid_command(), "lanes synced in the middle of a command");
  Status out;
  for (auto& lane : lanes_)
    if (Status s = lane->sync(); !s && out.ok()) out = s;
  return out;
}

Status Projector::catch_up_to(const std::vector<Offset>& until) {
  if (!follower_) {
    if (auto s = open_follower(); !s) return s;
  }
  if (until.size() != follower_->partitions())
    return Status::error("catch_up_to needs one offset per partition");
  auto ends = log_.end_offsets();
  if (!ends) return ends.status();
  for (std::uint32_t p = 0; p < until.size(); ++p)
    if (until[p] > ends.value()[p])
      return Status::error("partition " + std::to_string(p) + ": cannot apply the log to offset " +
                           std::to_string(until[p].value) + ", it ends at " +
                           std::to_string(ends.value()[p].value));
  // On an error the lanes drop what they hold, and a later catch-up starts again from the views'
  // positions.
  const auto failed = [&](Status s) {
    for (auto& lane : lanes_) lane->drop();
    follower_.reset();
    return s;
  };
  while (!follower_->reached(until)) {
    if (auto s = step(std::chrono::milliseconds(100), &until); !s) return failed(s.status());
    if (Status s = lane_failure(); !s) return failed(s);
    if (dead_.load()) return failed(Status::error(fault()));
  }
  if (follower_->mid_command())
    return failed(Status::error("catch_up_to stopped in the middle of a command"));
  if (Status s = sync_lanes(); !s) return failed(s);
  if (dead_.load()) return failed(Status::error(fault()));
  KOBO_ASSERT(follower_ != nullptr && follower_->reached(until), "a catch-up reaches where it was asked");
  return {};
}

void Projector::hold_back(const std::vector<Offset>& until) {
  KOBO_ASSERT(follower_ != nullptr && until.size() == follower_->partitions(),
              "a rebuild holds back partitions of the log it follows");
  std::vector<bool> half_full(lanes_.size());
  for (std::size_t l = 0; l < lanes_.size(); ++l) half_full[l] = lanes_[l]->half_full();
  bool others = false;  // a lane with room has a partition still to read
  for (std::uint32_t p = 0; p < until.size(); ++p)
    others = others || (!half_full[lane_index(p)] && follower_->cursor(Partition(p)).next_offset < until[p]);
  std::vector<bool> held(until.size(), false);
  if (others)
    for (std::uint32_t p = 0; p < until.size(); ++p) held[p] = half_full[lane_index(p)];
  follower_->hold_back(std::move(held));
}

Result<std::size_t> Projector::step(std::chrono::milliseconds wait, const std::vector<Offset>* until) {
  KOBO_ASSERT(follower_ != nullptr, "a step before the follower opened");
  if (until != nullptr && options_.ingest_bytes > 0) hold_back(*until);
  Dispatcher dispatcher(*this);
  auto consumed = follower_->step(dispatcher, wait, until);
  log_refused_ = dispatcher.refused_log();
  if (!consumed) return consumed.status();
  dispatcher.hand_over(*follower_);
  return consumed.value();
}

}  // namespace kobo
