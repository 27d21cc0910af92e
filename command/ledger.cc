#include "command/ledger.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <unordered_set>

#include "command/bulk.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/thread.h"
#include "events/log_follower.h"
#include "events/partitioner.h"

namespace kobo {
namespace {

struct LedgerMetrics {
  metrics::Histogram& batch_commands = metrics::registry().histogram(
      "kobo_writer_batch_commands", "Commands decided per group commit", "", metrics::size_buckets());
  metrics::Histogram& batch_events = metrics::registry().histogram(
      "kobo_writer_batch_events", "Events appended per group commit", "", metrics::size_buckets());
  metrics::Histogram& append_seconds =
      metrics::registry().histogram("kobo_log_append_duration_seconds", "Durable append latency");
  metrics::Counter& append_failures =
      metrics::registry().counter("kobo_log_append_failures_total", "Appends that failed");
  metrics::Counter& append_failures_no_space = metrics::registry().counter(
      "kobo_log_append_failures_no_space_total", "Appends that failed because the log's disk is full");
  metrics::Counter& rejected_full = metrics::registry().counter(
      "kobo_writer_queue_full_total", "Commands refused because the queue was full");
  metrics::Gauge& queue_depth = metrics::registry().gauge("kobo_writer_queue_depth", "Commands waiting");
};

LedgerMetrics& ledger_metrics() {
  static LedgerMetrics m;
  return m;
}

Outcome unavailable(std::string detail, ErrorKind kind = ErrorKind::other) {
  Outcome o;
  o.rejection = kind == ErrorKind::no_space ? Rejection::storage_full : Rejection::unavailable;
  o.detail = std::move(detail);
  return o;
}

}  // namespace

std::string_view to_string(Rejection r) {
  switch (r) {
    case Rejection::none:
      return "none";
    case Rejection::duplicate_reference:
      return "duplicate_reference";
    case Rejection::source_not_found:
      return "source_not_found";
    case Rejection::destination_not_found:
      return "destination_not_found";
    case Rejection::same_source_and_destination:
      return "same_source_and_destination";
    case Rejection::insufficient_funds:
      return "insufficient_funds";
    case Rejection::daily_limit_exceeded:
      return "daily_limit_exceeded";
    case Rejection::balance_limit_exceeded:
      return "balance_limit_exceeded";
    case Rejection::wallet_not_found:
      return "wallet_not_found";
    case Rejection::wallet_name_taken:
      return "wallet_name_taken";
    case Rejection::primary_wallet_limit:
      return "primary_wallet_limit";
    case Rejection::account_not_found:
      return "account_not_found";
    case Rejection::business_exists:
      return "business_exists";
    case Rejection::reference_exists:
      return "reference_exists";
    case Rejection::settlement_account_not_found:
      return "settlement_account_not_found";
    case Rejection::amount_mismatch:
      return "amount_mismatch";
    case Rejection::collection_inactive:
      return "collection_inactive";
    case Rejection::unavailable:
      return "unavailable";
    case Rejection::storage_full:
      return "storage_full";
    case Rejection::hold_not_found:
      return "hold_not_found";
    case Rejection::hold_not_pending:
      return "hold_not_pending";
    case Rejection::amount_exceeds_hold:
      return "amount_exceeds_hold";
    case Rejection::out_of_range:
      return "out_of_range";
    case Rejection::bank_not_found:
      return "bank_not_found";
    case Rejection::invalid_account_number:
      return "invalid_account_number";
  }
  return "unknown";
}

std::optional<Rejection> rejection_from_string(std::string_view name) {
  for (int k = 0; k <= static_cast<int>(Rejection::invalid_account_number); ++k) {
    const auto r = static_cast<Rejection>(k);
    if (to_string(r) == name) return r;
  }
  return std::nullopt;
}

Ledger::Ledger(EventLog& log, LedgerOptions options)
    : log_(log),
      options_(std::move(options)),
      ids_(options_.ids ? options_.ids : std::make_shared<RandomIds>()),
      durable_seq_(std::make_unique<std::atomic<std::uint64_t>[]>(log.partitions())) {
  KOBO_ASSERT(log.partitions() == options_.config.partitions, "ledger and log disagree on partitions");
}

Ledger::~Ledger() { stop(); }

Partition Ledger::partition_of(std::string_view business) const {
  return partition_for(business, options_.config.partitions);
}

namespace {

// Who asked for `c` (Caller::actor), recorded on its events.
const std::string& actor_of(const Command& c) {
  return std::visit(
      [](const auto& cmd) -> const std::string& {
        using T = std::decay_t<decltype(cmd)>;
        static const std::string none;
        if constexpr (std::is_same_v<T, CreateBusiness>)
          return cmd.actor;
        else if constexpr (requires { cmd.caller.actor; })
          return cmd.caller.actor;
        else
          return none;
      },
      c);
}

}  // namespace

Partition Ledger::route(const Command& c) const {
  return std::visit(
      [&](const auto& cmd) -> Partition {
        using T = std::decay_t<decltype(cmd)>;
        if constexpr (std::is_same_v<T, CreateBusiness>)
          return partition_of(cmd.business_id);
        else if constexpr (std::is_same_v<T, AdvancePayout> || std::is_same_v<T, ExpireCollection> ||
                           std::is_same_v<T, ExpireHold>)
          return cmd.partition;
        else
          return partition_of(cmd.caller.business);
      },
      c);
}

namespace {

// replay_after() answers ErrorKind::other_format when the history index holds what this log does
// not (another log's facts, or a log that lost its end): the index is then emptied and rebuilt.
Status index_of_another_log() {
  return Status::error("the history index holds facts this log does not", ErrorKind::other_format);
}

// How many facts a replay notes before it writes them to the index, so that rebuilding the index
// from a long log takes bounded memory.
constexpr std::size_t kReplayTailMax = 100'000;

// Whether the index holds the facts of every event the snapshot reflects: then the log after the
// snapshot is all a start reads. Otherwise (an index lost or rebuilt) the whole log is read.
bool index_covers(const History& history, const Snapshot& s) {
  for (std::size_t p = 0; p < s.states.size(); ++p)
    if (history.position()[p].seq < s.states[p].chain.last_seq()) return false;
  return true;
}

}  // namespace

// The state from the newest usable snapshot and the log after it; from the whole log when there
// is none, the history index is behind it, or the log after it cannot be replayed onto it. The
// history index is brought to the log's end on the way: the facts it lacked are written.
Status Ledger::replay() {
  if (!history_) {
    auto h = History::open({options_.history_dir, options_.config.partitions, options_.history_cache_bytes});
    if (!h) return h.status();
    history_ = std::move(h).value();
  }
  Status s = replay_newest();
  if (s.ok() || s.kind() != ErrorKind::other_format) return s;
  log::warn("rebuilding the history index from the log", {{"why", s.message()}});
  if (auto c = history_->clear(); !c) return c;
  return replay_after(Snapshot{});
}

Status Ledger::replay_newest() {
  if (!options_.snapshot_dir.empty()) {
    if (auto snapshot = load_snapshot(options_.snapshot_dir, log_)) {
      const std::uint64_t at = snapshot->events;
      if (!index_covers(*history_, *snapshot)) {
        log::info("the history index is behind the newest snapshot; replaying the whole log",
                  {{"snapshot_events", at}});
      } else {
        auto s = replay_after(std::move(*snapshot));
        if (s.ok() || s.kind() == ErrorKind::other_format) return s;
        log::warn("the log after the snapshot cannot be replayed onto it; replaying the whole log",
                  {{"snapshot_events", at}, {"error", s.message()}});
      }
    }
  }
  return replay_after(Snapshot{});
}

Status Ledger::replay_after(Snapshot from) {
  const std::uint32_t n = options_.config.partitions;
  const bool whole_log = from.states.empty();
  states_ = std::move(from.states);
  if (whole_log) {
    states_.assign(n, PartitionState{});
    for (std::uint32_t p = 0; p < n; ++p) states_[p].partition = Partition(p);
  }
  KOBO_ASSERT(states_.size() == n, "a snapshot of another partition count");
  // The same loop and acceptance rule as the projectors and `kobo audit` (events/log_follower.h).
  // An event the state reflects already (the snapshot's) is not applied again, and one whose facts
  // the index holds is not noted again: the index's position is checked against the log instead.
  class Replayer final : public LogVisitor {
   public:
    Replayer(std::vector<PartitionState>& into, History& index) : states(into), history(index) {
      for (const auto& st : states) applied.push_back(st.chain.last_seq());
    }
    Status accepted(const Event& e) override {
      const std::uint32_t p = e.partition.value;
      if (e.seq > applied[p]) apply(states[p], e);
      const IndexPosition& indexed = history.position()[p];
      if (e.seq > indexed.seq) {
        history.note(e);
      } else if (e.seq == indexed.seq && e.hash != indexed.hash) {
        return index_of_another_log();
      }
      return {};
    }
    std::vector<PartitionState>& states;
    History& history;
    std::vector<Seq> applied;
  };
  history_->drop_tail();
  LogFollower follower(log_);
  if (auto s = whole_log ? follower.open() : follower.open(std::move(from.cursors)); !s) return s;
  Replayer replayer(states_, *history_);
  Status written;
  const auto write_now_and_then = [&] {
    if (written && history_->tail_size() >= kReplayTailMax) written = history_->write_tail();
  };
  if (auto s = follower.follow_to_end(replayer, write_now_and_then); !s) return s;
  if (!written) return written;
  for (std::uint32_t p = 0; p < n; ++p) {
    states_[p].chain = follower.cursor(Partition(p)).chain;
    // An index ahead of the log holds facts the log does not (another log, or one that lost its end).
    if (history_->position()[p].seq > states_[p].chain.last_seq()) return index_of_another_log();
  }
  if (auto s = history_->write_tail(); !s) return s;
  const std::uint64_t events = follower.events_accepted();
  replayed_events_ = from.events + events;
  replayed_snapshot_events_ = from.events;
  replayed_cursors_ = follower.cursors();
  std::size_t businesses = 0;
  for (const auto& st : states_) businesses += st.businesses.size();
  business_count_.store(businesses);
  publish_durable();
  log::info(whole_log ? "writer state rebuilt from the log"
                      : "writer state rebuilt from a snapshot and the log after it",
            {{"events", events}, {"snapshot_events", from.events}, {"businesses", businesses}});
  return {};
}

void Ledger::publish_durable() {
  for (std::uint32_t p = 0; p < states_.size(); ++p)
    durable_seq_[p].store(states_[p].chain.last_seq().value, std::memory_order_release);
}

namespace {

// Gives a drafted event its place in the partition's chain, seals it (seal() asserts
// validate()), applies it and notes its facts into the history's tail. The sealed event is kept for the
// command's answer.
EncodedEvent place(PartitionState& st, History& history, EventDraft& draft, Seq command_seq,
                   std::uint32_t command_size, UnixMs now, const std::string& actor,
                   std::vector<Event>& sealed) {
  Event e;
  e.actor = actor;
  e.partition = st.partition;
  e.seq = Seq(st.chain.last_seq().value + 1);
  e.epoch = st.chain.epoch();
  e.command_seq = command_seq;
  e.command_size = command_size;
  e.business = std::move(draft.business);
  e.live = draft.live;
  e.time = now;
  e.data = std::move(draft.data);
  e.prev_hash = st.chain.last_hash();
  EncodedEvent out{e.partition, e.seq, e.type(), e.business, e.time, seal(e)};
  const ChainVerdict v = st.chain.follow(e);
  KOBO_ASSERT(v == ChainVerdict::accept, "the writer's own event must extend its chain");
  apply(st, e);
  history.note(e);
  sealed.push_back(std::move(e));
  return out;
}

// The facts of every wallet `events` show, once each (a bulk's events show many wallets, each
// many times), as the state holds them after the events: what an answer renders them with.
std::vector<WalletFacts> facts_shown(const PartitionState& st, const std::vector<Event>& events) {
  std::vector<WalletFacts> out;
  std::unordered_set<std::string> shown;
  for (const Event& e : events)
    for (std::string& id : wallets_shown(e.data))
      if (!shown.contains(id))
        if (auto facts = st.wallets.facts(id)) {
          out.push_back(std::move(*facts));
          shown.insert(std::move(id));
        }
  return out;
}

}  // namespace

Status Ledger::append_writer_started() {
  std::vector<EncodedEvent> batch;
  const UnixMs now = this->now();
  for (auto& st : states_) {
    // Each writer generation takes the partition with the next epoch.
    const Epoch next(st.chain.epoch().value + 1);
    Event e;
    e.partition = st.partition;
    e.seq = Seq(st.chain.last_seq().value + 1);
    e.epoch = next;
    e.command_seq = e.seq;
    e.time = now;
    e.data = WriterStarted{next, options_.config.tier_limits};
    e.prev_hash = st.chain.last_hash();
    batch.push_back(EncodedEvent{e.partition, e.seq, e.type(), "", now, seal(e)});
    KOBO_ASSERT(st.chain.follow(e) == ChainVerdict::accept, "WriterStarted must extend the chain");
    apply(st, e);
    history_->note(e);
  }
  if (auto s = log_.append(batch); !s) return s;
  publish_durable();
  return history_->write_tail();
}

// After a durable append: the facts of its events go to the history index. A failure leaves them
// in the tail, where lookups still find them, and takes the writer through recover().
Status Ledger::write_history() {
  auto s = history_->write_tail();
  if (!s) {
    set_fault(s);
    healthy_.store(false);
    next_recovery_ = std::chrono::steady_clock::now();
    log::error("the history index cannot be written; the writer stops deciding until it can",
               {{"error", s.message()}, {"facts", history_->tail_size()}});
  }
  return s;
}

Status Ledger::start() {
  KOBO_ASSERT(!thread_.joinable(), "start() after a start that succeeded");
  std::optional<Snapshot> replayed;
  // An attempt that failed may have appended WriterStarted to some partitions (Kafka): settle the
  // log's writer before reading it again, as recover() does.
  Status s = start_failed_ ? log_.reset_writer() : Status{};
  if (s) s = replay();
  if (s && !options_.snapshot_dir.empty()) replayed = Snapshot{replayed_events_, replayed_cursors_, states_};
  if (s) s = append_writer_started();
  if (!s) {
    start_failed_ = true;
    std::lock_guard lock(fault_mu_);
    fault_kind_ = s.kind();
    fault_ = "the writer cannot start: " + s.message();
    return s;
  }
  resume_scheduled();
  {
    std::lock_guard lock(mu_);
    started_ = true;
  }
  healthy_.store(true);
  thread_ = std::thread([this] { run(); });
  if (replayed) {
    snapshotter_ = std::make_unique<Snapshotter>(
        log_, *history_,
        SnapshotterOptions{options_.snapshot_dir, options_.snapshot_every_events, options_.snapshot_poll});
    if (auto started = snapshotter_->start(std::move(*replayed), replayed_snapshot_events_); !started) {
      log::warn("no snapshots of the writer's state will be written", {{"error", started.message()}});
      snapshotter_.reset();
    }
  }
  return {};
}

void Ledger::stop() {
  if (snapshotter_) snapshotter_->stop();
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::deque<Pending> left;
  {
    std::lock_guard lock(mu_);
    left.swap(queue_);
  }
  for (auto& p : left) p.done(unavailable("the ledger is stopping"));
}

void Ledger::submit(Command command, Callback done) {
  KOBO_ASSERT(done != nullptr, "submit needs a callback");
  bool stopping = false;
  {
    std::unique_lock lock(mu_);
    stopping = stopping_;
    if (!stopping && !started_) {
      lock.unlock();
      std::unique_lock fault_lock(fault_mu_);
      Outcome not_started = unavailable(fault_, fault_kind_);
      fault_lock.unlock();
      return done(std::move(not_started));
    }
    if (!stopping && queue_.size() < options_.queue_max) {
      queue_.push_back(Pending{std::move(command), std::move(done)});
      lock.unlock();
      cv_.notify_one();
      return;
    }
  }
  if (!stopping) ledger_metrics().rejected_full.inc();
  done(unavailable(stopping ? "the ledger is stopping" : "the command queue is full"));
}

Outcome Ledger::execute(Command command) {
  std::promise<Outcome> promise;
  auto future = promise.get_future();
  submit(std::move(command), [&promise](Outcome o) { promise.set_value(std::move(o)); });
  return future.get();
}

// Work in flight (payout rail steps, collection expiries) as the log says it is: after a start, and after a
// failed append re-read the log.
void Ledger::resume_scheduled() {
  scheduled_.clear();
  for (const auto& st : states_)
    for (auto& s : resume_schedule(st, options_.config)) scheduled_.emplace(s.due, std::move(s.command));
}

void Ledger::take_due(std::vector<Pending>& batch) {
  const UnixMs now = this->now();
  while (!scheduled_.empty() && scheduled_.begin()->first <= now) {
    batch.push_back(Pending{std::move(scheduled_.begin()->second), nullptr});
    scheduled_.erase(scheduled_.begin());
  }
}

// After a failed append: settle the log's writer, then rebuild the state from what the log
// says, so nothing is decided on top of events that may not exist. Until that works, every
// command is answered `unavailable` and run() tries again every second; a fenced writer never
// writes again.
std::string Ledger::fault() const {
  if (healthy_.load()) return {};
  bool started = false;
  {
    std::lock_guard lock(mu_);
    started = started_;
  }
  // Before a start succeeded, the log says best why it cannot (a broker it cannot reach yet).
  if (!started) {
    if (std::string why = log_.fault(); !why.empty()) return "the writer cannot start: " + why;
  }
  std::lock_guard lock(fault_mu_);
  return healthy_.load() ? std::string() : fault_;
}

void Ledger::set_fault(const Status& s) {
  std::lock_guard lock(fault_mu_);
  fault_kind_ = s.kind();
  fault_ = s.kind() == ErrorKind::no_space ? "the event log's disk is full: " + s.message()
                                           : "the event log cannot be written: " + s.message();
}

void Ledger::recover() {
  healthy_.store(false);
  if (log_.fenced()) {
    set_fault(Status::error("another writer has taken the log"));
    log::error("another writer has taken the log; this writer stops accepting commands");
    return;
  }
  // The next attempt is a second after this one ends, so that commands queued meanwhile are
  // answered (unavailable) in between rather than waiting behind attempt after attempt.
  const auto retry_later = [this] {
    next_recovery_ = std::chrono::steady_clock::now() + options_.recovery_retry;
  };
  if (auto s = log_.reset_writer(); !s) {
    set_fault(s);
    log::warn("the log cannot be written yet; retrying", {{"error", s.message()}});
    return retry_later();
  }
  if (auto s = history_->reopen(); !s) {
    set_fault(s);
    log::warn("the history index cannot be opened yet; retrying", {{"error", s.message()}});
    return retry_later();
  }
  if (auto s = replay(); !s) {
    set_fault(s);
    log::warn("the log cannot be re-read yet; retrying", {{"error", s.message()}});
    return retry_later();
  }
  resume_scheduled();
  healthy_.store(true);
  log::info("the writer is writing again");
}

void Ledger::run() {
  name_this_thread("kobo-writer");
  std::vector<Pending> batch;
  for (;;) {
    batch.clear();
    {
      std::unique_lock lock(mu_);
      auto ready = [&] { return stopping_ || !queue_.empty(); };
      if (!healthy_.load() && !log_.fenced()) {
        cv_.wait_until(lock, next_recovery_, ready);
      } else if (scheduled_.empty() || options_.clock) {
        // Under a virtual clock time moves only when its driver says, and the driver submits
        // after moving it: what fell due is taken then, never on a timer of its own.
        cv_.wait(lock, ready);
      } else {
        const auto wait_ms = std::max<UnixMs>(0, scheduled_.begin()->first - now());
        cv_.wait_for(lock, std::chrono::milliseconds(wait_ms), ready);
      }
      if (stopping_) return;
    }
    // What is due goes before what is queued: whatever woke the writer, a command submitted at
    // time T is decided after everything scheduled up to T, so a run under a virtual clock is
    // the same run every time.
    take_due(batch);
    {
      std::lock_guard lock(mu_);
      // A bulk transfer weighs its items: a group commit holds at most batch_max commands'
      // worth of events, whatever their mix (always at least one command).
      std::size_t weight = batch.size();
      while (!queue_.empty() && weight < options_.batch_max) {
        const auto* bulk = std::get_if<BulkTransfer>(&queue_.front().command);
        const std::size_t w = bulk != nullptr ? bulk->items.size() + 1 : 1;
        if (weight + w > options_.batch_max && !batch.empty()) break;
        weight += w;
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      ledger_metrics().queue_depth.set(static_cast<double>(queue_.size()));
    }
    if (!batch.empty()) process(batch);  // while unhealthy: answers every command unavailable at once
    if (!healthy_.load() && !log_.fenced() && std::chrono::steady_clock::now() >= next_recovery_) recover();
  }
}

void Ledger::process(std::vector<Pending>& batch) {
  const UnixMs now = this->now();
  std::vector<EncodedEvent> events;
  std::vector<Outcome> outcomes(batch.size());
  std::vector<Scheduled> follow_ups;
  std::size_t businesses_added = 0;

  if (!healthy_.load()) {
    std::string detail;
    ErrorKind kind = ErrorKind::other;
    {
      std::lock_guard lock(fault_mu_);
      detail = fault_;
      kind = fault_kind_;
    }
    for (auto& p : batch)
      if (p.done) p.done(unavailable(detail, kind));
    return;
  }

  for (std::size_t i = 0; i < batch.size(); ++i) {
    const Partition p = route(batch[i].command);
    PartitionState& st = states_[p.value];
    const auto* bulk = std::get_if<BulkTransfer>(&batch[i].command);
    Decision d = bulk != nullptr ? decide_bulk(st, *history_, *bulk, options_.config, now, *ids_)
                                 : decide(st, *history_, batch[i].command, options_.config, now, *ids_);
    Outcome& o = outcomes[i];
    o.partition = p;
    o.item = d.item;
    o.rejection = d.rejection;
    o.replayed = d.replayed;
    o.id = std::move(d.id);
    if (!d.events.empty()) {
      const Seq command_seq(st.chain.last_seq().value + 1);
      const auto size = static_cast<std::uint32_t>(d.events.size());
      o.events.reserve(d.events.size());
      const std::string& actor = actor_of(batch[i].command);
      for (auto& draft : d.events)
        events.push_back(place(st, *history_, draft, command_seq, size, now, actor, o.events));
      // What nobody is answered (a command the writer ran on its own: a settlement, a payout's
      // step) needs no wallet's facts.
      if (batch[i].done) o.wallets = facts_shown(st, o.events);
      if (std::holds_alternative<CreateBusiness>(batch[i].command)) ++businesses_added;
      for (auto& f : d.schedule) follow_ups.push_back(std::move(f));
    }
    o.seq = st.chain.last_seq();
  }

  bool appended = false;
  if (!events.empty()) {
    const auto started = std::chrono::steady_clock::now();
    const Status s = log_.append(events);
    ledger_metrics().append_seconds.observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    if (!s) {
      ledger_metrics().append_failures.inc();
      if (s.kind() == ErrorKind::no_space) ledger_metrics().append_failures_no_space.inc();
      set_fault(s);
      log::error("append failed; answering the batch unavailable and re-reading the log",
                 {{"error", s.message()}, {"events", events.size()}});
      // Even a rejection may rest on an earlier command of the batch whose fate is now unknown.
      for (auto& o : outcomes)
        o = unavailable("the event log could not be written: " + s.message(), s.kind());
      follow_ups.clear();
      recover();
    } else {
      publish_durable();
      business_count_.fetch_add(businesses_added);
      appended = true;
    }
  }
  ledger_metrics().batch_commands.observe(static_cast<double>(batch.size()));
  ledger_metrics().batch_events.observe(static_cast<double>(events.size()));

  // The batch is durable, so it is answered as decided, before and whatever the history index
  // says next: the index is the writer's, read only by the commands after this batch.
  for (std::size_t i = 0; i < batch.size(); ++i)
    if (batch[i].done) batch[i].done(std::move(outcomes[i]));
  if (appended && !write_history().ok()) follow_ups.clear();  // recover() schedules them again from the log
  for (auto& f : follow_ups) scheduled_.emplace(f.due, std::move(f.command));
}

}  // namespace kobo
