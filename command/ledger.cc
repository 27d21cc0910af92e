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
  // A cluster node's takeovers (docs/architecture.md, "Cluster").
  metrics::Counter& takeovers =
      metrics::registry().counter("kobo_partition_takeovers_total",
                                  "Partitions this node took over (fenced, read to the end, WriterStarted)");
  metrics::Histogram& takeover_ready_seconds = metrics::registry().histogram(
      "kobo_partition_takeover_ready_seconds",
      "From a partition's assignment to its WriterStarted appended: fencing plus the log's tail");
  metrics::Histogram& takeover_seconds = metrics::registry().histogram(
      "kobo_partition_takeover_seconds", "From a partition's assignment to its first command answered");
  metrics::Counter& fenced = metrics::registry().counter(
      "kobo_partition_fenced_total", "Partitions this node lost because another writer fenced it");
  metrics::Gauge& owned(Partition p) {
    return metrics::registry().gauge("kobo_partition_owned", "1 while this node writes the partition",
                                     "partition=\"" + std::to_string(p.value) + "\"");
  }
};

LedgerMetrics& ledger_metrics() {
  static LedgerMetrics m;
  return m;
}

Outcome unavailable(std::string detail, ErrorKind kind = ErrorKind::other) {
  KOBO_ASSERT(!detail.empty(), "an unavailable answer says why");
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
    case Rejection::not_owner:
      return "not_owner";
  }
  return "unknown";
}

std::optional<Rejection> rejection_from_string(std::string_view name) {
  for (int k = 0; k <= static_cast<int>(Rejection::not_owner); ++k) {
    const auto r = static_cast<Rejection>(k);
    if (to_string(r) == name) return r;
  }
  return std::nullopt;
}

std::string_view to_string(Ownership o) {
  switch (o) {
    case Ownership::standby:
      return "standby";
    case Ownership::taking:
      return "taking";
    case Ownership::owned:
      return "owned";
  }
  return "unknown";
}

Ledger::Ledger(EventLog& log, LedgerOptions options)
    : log_(log),
      options_(std::move(options)),
      ids_(options_.ids ? options_.ids : std::make_shared<RandomIds>()),
      durable_seq_(std::make_unique<std::atomic<std::uint64_t>[]>(log.partitions())),
      epoch_(std::make_unique<std::atomic<std::uint64_t>[]>(log.partitions())),
      followed_offset_(std::make_unique<std::atomic<std::uint64_t>[]>(log.partitions())),
      ownership_(std::make_unique<std::atomic<std::uint8_t>[]>(log.partitions())),
      queue_(options_.queue_max, options_.queue_max_per_business) {
  KOBO_ASSERT(log.partitions() == options_.config.partitions, "ledger and log disagree on partitions");
  KOBO_ASSERT(ids_ != nullptr && options_.batch_max > 0 && options_.queue_max > 0,
              "a writer draws ids and takes a command at least");
  KOBO_ASSERT(options_.previous_signer == nullptr ||
                  (options_.signer != nullptr &&
                   options_.previous_signer->public_key() != options_.signer->public_key()),
              "a writer rotates from a key other than its own, to its own");
  const std::uint32_t n = log.partitions();
  released_.assign(n, 0);
  unsigned_events_.assign(n, 0);
  unsigned_since_.assign(n, 0);
  take_asked_.assign(n, {});
  awaiting_first_.assign(n, false);
  // A single node's writer owns every partition; a cluster node's none until take().
  for (std::uint32_t p = 0; p < n; ++p) {
    const Ownership o = options_.cluster ? Ownership::standby : Ownership::owned;
    ownership_[p].store(static_cast<std::uint8_t>(o), std::memory_order_release);
    if (options_.cluster) ledger_metrics().owned(Partition(p)).set(0);
  }
}

Ledger::~Ledger() { stop(); }

Partition Ledger::partition_of(std::string_view business) const {
  const Partition p = partition_for(business, options_.config.partitions);
  KOBO_ASSERT(p.value < options_.config.partitions, "a business lives in one of the log's partitions");
  return p;
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
  const Partition p = std::visit(
      [&](const auto& cmd) -> Partition {
        using T = std::decay_t<decltype(cmd)>;
        if constexpr (std::is_same_v<T, CreateBusiness>)
          return partition_of(cmd.business_id);
        else if constexpr (std::is_same_v<T, AdvancePayout> || std::is_same_v<T, ExpireCollection> ||
                           std::is_same_v<T, ExpireHold> || std::is_same_v<T, EndWebhookDeliveries>)
          return cmd.partition;
        else
          return partition_of(cmd.caller.business);
      },
      c);
  // A partition a command names itself is one the writer scheduled it for.
  KOBO_ASSERT(p.value < options_.config.partitions, "a command is routed to one of the log's partitions");
  return p;
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
  KOBO_ASSERT(history.position().size() == s.states.size(),
              "the index and the snapshot have the same partitions");
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
  KOBO_ASSERT(!s.ok() || states_.size() == options_.config.partitions, "a replay rebuilds every partition");
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
  // The index's head is checked against the log as the replay passes it (below), but a head at
  // the snapshot's own seq is not passed: it must be the snapshot's head, which load_snapshot()
  // checked against the log (an index copied from a peer may be of another log).
  for (std::uint32_t p = 0; p < n && !whole_log; ++p) {
    const IndexPosition& indexed = history_->position()[p];
    if (indexed.seq == states_[p].chain.last_seq() && indexed.seq.value > 0 &&
        indexed.hash != states_[p].chain.last_hash())
      return index_of_another_log();
  }
  // The same loop and acceptance rule as the projectors and `kobo audit` (events/log_follower.h).
  // An event the state reflects already (the snapshot's) is not applied again, and one whose facts
  // the index holds is not noted again: the index's position is checked against the log instead.
  class Replayer final : public LogVisitor {
   public:
    Replayer(std::vector<PartitionState>& into, History& index) : states(into), history(index) {
      for (const auto& st : states) applied.push_back(st.chain.last_seq());
      KOBO_ASSERT(applied.size() == states.size(), "a replay knows where each partition's state stands");
    }
    Status accepted(const Event& e) override {
      const std::uint32_t p = e.partition.value;
      KOBO_ASSERT(p < states.size() && states[p].partition == e.partition,
                  "an event of a partition replayed");
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
    KOBO_ASSERT(states_[p].partition.value == p && states_[p].total.value == 0,
                "a partition's state is its own, and its balances sum to zero");
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
  KOBO_ASSERT(states_.size() == options_.config.partitions, "a durable position per partition");
  for (std::uint32_t p = 0; p < states_.size(); ++p) {
    durable_seq_[p].store(states_[p].chain.last_seq().value, std::memory_order_release);
    epoch_[p].store(states_[p].chain.epoch().value, std::memory_order_release);
  }
}

namespace {

// Gives a drafted event its place in the partition's chain, seals it (seal() asserts
// validate()), applies it and notes its facts into the history's tail. The sealed event is kept for the
// command's answer.
EncodedEvent place(PartitionState& st, History& history, EventDraft& draft, Seq command_seq,
                   std::uint32_t command_size, UnixMs now, const std::string& actor,
                   std::vector<Event>& sealed, bool share) {
  KOBO_ASSERT(command_size >= 1 && command_seq.value >= 1, "an event of a command");
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
  if (share) out.event = std::make_shared<const Event>(e);  // EventLog::shares_appended_events()
  const ChainVerdict v = st.chain.follow(e);
  KOBO_ASSERT(v == ChainVerdict::accept, "the writer's own event must extend its chain");
  apply(st, e);
  history.note(e);
  KOBO_ASSERT(st.chain.last_seq() == e.seq && out.seq == e.seq, "the event placed is its partition's head");
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
  KOBO_ASSERT(out.size() == shown.size(), "each wallet shown once");
  return out;
}

}  // namespace

Status Ledger::append_writer_started(const std::vector<Partition>& partitions) {
  std::vector<EncodedEvent> batch;
  const UnixMs now = this->now();
  for (const Partition p : partitions) {
    PartitionState& st = states_[p.value];
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
    const ChainVerdict verdict = st.chain.follow(e);
    KOBO_ASSERT(verdict == ChainVerdict::accept, "WriterStarted must extend the chain");
    apply(st, e);
    history_->note(e);
    KOBO_ASSERT(st.chain.epoch() == next, "each writer takes its partitions with the next epoch");
    // Signed right away: the new epoch is the writer's only if its key says so.
    if (options_.signer) {
      check_checkpoint_key(st);
      auto checkpoint = place_checkpoint(st, now);
      if (!checkpoint) return checkpoint.status();
      batch.push_back(std::move(checkpoint).value());
    }
  }
  KOBO_ASSERT(
      batch.size() == partitions.size() * (options_.signer ? 2 : 1),
      "a WriterStarted per partition taken, each followed by its checkpoint when the writer has a key");
  if (auto s = log_.append(batch); !s) return s;
  publish_durable();
  return history_->write_tail();
}

// Whether st's next checkpoint hands over from the previous key to this writer's: the partition's
// checkpoints are signed by the key this writer's replaces.
bool Ledger::rotates(const PartitionState& st) const {
  return options_.previous_signer != nullptr && !st.checkpoint_key.empty() &&
         st.checkpoint_key != options_.signer->public_key() &&
         st.checkpoint_key == options_.previous_signer->public_key();
}

// At a writer's start on st: a partition whose checkpoints another key signs, and that this
// writer cannot rotate from, is the operator's to know about (its next checkpoints will not
// verify with the key the audit follows).
void Ledger::check_checkpoint_key(const PartitionState& st) const {
  if (st.checkpoint_key.empty() || st.checkpoint_key == options_.signer->public_key() || rotates(st)) return;
  log::error(
      "the partition's checkpoints are signed by another writer key; give that key as "
      "--previous-writer-key-file to rotate from it, or kobo audit --verify-key flags this writer's "
      "checkpoints",
      {{"partition", st.partition.value},
       {"signedBy", st.checkpoint_key},
       {"writerKey", options_.signer->public_key()}});
}

// A signed checkpoint of st's head, placed like any event (a command of its own). It signs
// everything up to the head, so the partition has no unsigned event after it. Where the partition
// is still signed by the key this writer's replaces, that key signs it and names this writer's as
// the next (a rotation, LedgerOptions::previous_signer).
Result<EncodedEvent> Ledger::place_checkpoint(PartitionState& st, UnixMs now) {
  KOBO_ASSERT(options_.signer != nullptr, "a checkpoint is placed by a writer with a key");
  Event e;
  e.partition = st.partition;
  e.seq = Seq(st.chain.last_seq().value + 1);
  e.epoch = st.chain.epoch();
  e.command_seq = e.seq;
  e.time = now;
  ChainCheckpointed checkpoint;
  checkpoint.log = options_.log_name;
  const bool rotation = rotates(st);
  if (rotation) checkpoint.next_key = options_.signer->public_key();
  e.data = std::move(checkpoint);
  e.prev_hash = st.chain.last_hash();
  if (auto s = sign_checkpoint(rotation ? *options_.previous_signer : *options_.signer, e); !s) return s;
  EncodedEvent out{e.partition, e.seq, e.type(), "", now, seal(e)};
  const ChainVerdict verdict = st.chain.follow(e);
  KOBO_ASSERT(verdict == ChainVerdict::accept, "a checkpoint extends the chain it signs");
  apply(st, e);
  history_->note(e);
  KOBO_ASSERT(!rotation || st.checkpoint_key == options_.signer->public_key(),
              "after a rotation this writer's key signs the partition");
  if (rotation)
    log::info("the writer key rotated: the previous key signed the handover",
              {{"partition", st.partition.value},
               {"seq", e.seq.value},
               {"from", options_.previous_signer->public_key()},
               {"to", options_.signer->public_key()}});
  unsigned_events_[st.partition.value] = 0;
  return out;
}

void Ledger::note_unsigned(Partition p, std::uint64_t events, UnixMs now) {
  if (unsigned_events_[p.value] == 0) unsigned_since_[p.value] = now;
  unsigned_events_[p.value] += events;
}

// When the oldest unsigned event of a partition this writer writes is checkpoint_interval old.
std::optional<UnixMs> Ledger::checkpoint_due() const {
  if (!options_.signer) return std::nullopt;
  std::optional<UnixMs> due;
  for (std::uint32_t p = 0; p < unsigned_events_.size(); ++p) {
    if (unsigned_events_[p] == 0 || !owns(Partition(p))) continue;
    const UnixMs at = unsigned_since_[p] + options_.checkpoint_interval.count();
    due = due ? std::min(*due, at) : at;
  }
  return due;
}

// Appends a checkpoint to every partition this writer writes whose unsigned events are due (all:
// every one that has any, as the writer stops). A failure is an append's: the writer re-reads the
// log, and the partitions are signed again after it.
void Ledger::sign_overdue(bool all) {
  if (!options_.signer || !healthy_.load()) return;
  const UnixMs now = this->now();
  std::vector<EncodedEvent> batch;
  for (std::uint32_t p = 0; p < states_.size(); ++p) {
    if (unsigned_events_[p] == 0 || !owns(Partition(p))) continue;
    if (!all && now < unsigned_since_[p] + options_.checkpoint_interval.count()) continue;
    auto checkpoint = place_checkpoint(states_[p], now);
    if (!checkpoint) {
      log::error("the writer key could not sign a checkpoint", {{"error", checkpoint.status().message()}});
      unsigned_since_[p] = now;  // tried again an interval on
      continue;
    }
    batch.push_back(std::move(checkpoint).value());
  }
  if (batch.empty()) return;
  if (auto s = log_.append(batch); !s) {
    ledger_metrics().append_failures.inc();
    set_fault(s);
    log::error("appending checkpoints failed; re-reading the log", {{"error", s.message()}});
    recover();
    return;
  }
  publish_durable();
  (void)write_history();
}

// After a durable append: the facts of its events go to the history index. A failure leaves them
// in the tail, where lookups still find them, and takes the writer through recover().
Status Ledger::write_history() {
  auto s = history_->write_tail();
  KOBO_ASSERT(!s.ok() || history_->tail_size() == 0, "a tail written is a tail emptied");
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
  if (s && options_.cluster) s = open_standby();  // owns nothing until take()
  if (s && !options_.cluster) {
    std::vector<Partition> all;
    for (std::uint32_t p = 0; p < options_.config.partitions; ++p) all.emplace_back(p);
    s = append_writer_started(all);
  }
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

Status Ledger::checkpoint(const std::filesystem::path& dir) {
  {
    std::lock_guard lock(mu_);  // started_ under mu_: history_ was made before it was set
    if (!started_) return Status::error("the writer has not started");
  }
  KOBO_ASSERT(history_ != nullptr, "a started writer has its history index");
  if (options_.history_dir.empty()) return Status::error("the writer keeps its history index in memory");
  if (!options_.snapshot_dir.empty())
    if (auto s = copy_newest_snapshot(options_.snapshot_dir, dir / "snapshots"); !s) return s;
  return history_->checkpoint(dir / "history");
}

void Ledger::stop() {
  if (snapshotter_) snapshotter_->stop();
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  released_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  KOBO_ASSERT(!thread_.joinable(), "a stopped writer holds no thread");
  std::deque<Pending> left;
  {
    std::lock_guard lock(mu_);
    left = queue_.take_all();
  }
  for (auto& p : left) p.done(unavailable("the ledger is stopping"));
}

namespace {

// Whose share of the writer's queue a command takes: its business's; a partition's own duties
// share one.
std::string queue_key(const Command& c) {
  return std::visit(
      [](const auto& cmd) -> std::string {
        using T = std::decay_t<decltype(cmd)>;
        if constexpr (std::is_same_v<T, CreateBusiness>)
          return cmd.business_id;
        else if constexpr (requires { cmd.caller.business; })
          return cmd.caller.business;
        else
          return {};
      },
      c);
}

}  // namespace

void Ledger::submit(Command command, Callback done) {
  KOBO_ASSERT(done != nullptr, "submit needs a callback");
  bool stopping = false;
  auto pushed = FairQueue<Pending>::Pushed::full;
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
    if (!stopping) {
      std::string key = queue_key(command);
      pushed = queue_.admits(key);
      if (pushed == FairQueue<Pending>::Pushed::queued) {
        queue_.push(key, Pending{std::move(command), std::move(done)});
        lock.unlock();
        cv_.notify_one();
        return;
      }
    }
  }
  if (!stopping) ledger_metrics().rejected_full.inc();
  done(unavailable(stopping ? "the ledger is stopping"
                   : pushed == FairQueue<Pending>::Pushed::key_full
                       ? "the business has too many commands waiting"
                       : "the command queue is full"));
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
  // resume_schedule() asserts a follow-up per duty of the partition (command/decide.cc).
  for (const auto& st : states_) {
    if (!owns(st.partition)) continue;  // a standby's duties are its owner's
    for (auto& s : resume_schedule(st, options_.config)) scheduled_.emplace(s.due, std::move(s.command));
  }
  KOBO_ASSERT(std::ranges::all_of(scheduled_, [this](const auto& s) { return owns(route(s.second)); }),
              "a writer holds the duties of the partitions it writes, and only those");
}

void Ledger::take_due(std::vector<Pending>& batch) {
  KOBO_ASSERT(batch.empty(), "what is due opens the batch, before anything queued");
  const UnixMs now = this->now();
  while (!scheduled_.empty() && scheduled_.begin()->first <= now) {
    batch.push_back(Pending{std::move(scheduled_.begin()->second), nullptr});
    scheduled_.erase(scheduled_.begin());
  }
  KOBO_ASSERT(scheduled_.empty() || scheduled_.begin()->first > now, "nothing due is left behind");
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
  KOBO_ASSERT(!s.ok(), "a fault is an error");
  std::lock_guard lock(fault_mu_);
  fault_kind_ = s.kind();
  fault_ = s.kind() == ErrorKind::no_space ? "the event log's disk is full: " + s.message()
                                           : "the event log cannot be written: " + s.message();
}

void Ledger::recover() {
  healthy_.store(false);
  // A cluster node fenced on a partition lets that one go and writes the others on: another
  // node was given it (this one may have been paused past its session), and only a new
  // take() brings it back.
  if (options_.cluster) {
    for (std::uint32_t p = 0; p < options_.config.partitions; ++p)
      if (ownership(Partition(p)) != Ownership::standby && log_.fenced(Partition(p))) {
        ledger_metrics().fenced.inc();
        let_go(Partition(p), "another writer has fenced this one");
      }
  }
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
  if (options_.cluster) {
    if (auto s = open_standby(); !s) {
      set_fault(s);
      log::warn("the log cannot be followed yet; retrying", {{"error", s.message()}});
      return retry_later();
    }
  }
  resume_scheduled();
  KOBO_ASSERT(states_.size() == options_.config.partitions, "a recovered writer has every partition's state");
  // What the log holds after its last checkpoint is not known here: each partition is signed an
  // interval on, whatever it holds.
  for (std::uint32_t p = 0; p < states_.size(); ++p) {
    unsigned_events_[p] = 0;
    if (options_.signer && owns(Partition(p))) note_unsigned(Partition(p), 1, now());
  }
  healthy_.store(true);
  log::info("the writer is writing again");
}

void Ledger::run() {
  name_this_thread("kobo-writer");
  std::vector<Pending> batch;
  for (;;) {
    batch.clear();
    bool stop_now = false;
    {
      std::unique_lock lock(mu_);
      auto ready = [&] { return stopping_ || !queue_.empty() || !ownership_requests_.empty(); };
      if (!healthy_.load() && !log_.fenced()) {
        cv_.wait_until(lock, next_recovery_, ready);
      } else if (options_.cluster) {
        // A cluster node also reads what other nodes append, at least every standby_poll.
        auto wait = options_.standby_poll;
        if (!scheduled_.empty())
          wait = std::min(wait,
                          std::chrono::milliseconds(std::max<UnixMs>(0, scheduled_.begin()->first - now())));
        cv_.wait_for(lock, wait, ready);
      } else if (options_.clock) {
        // Under a virtual clock time moves only when its driver says, and the driver submits
        // after moving it: what fell due is taken then, never on a timer of its own.
        cv_.wait(lock, ready);
      } else {
        // The next duty, or the next checkpoint due.
        std::optional<UnixMs> wake = checkpoint_due();
        if (!scheduled_.empty())
          wake = std::min(wake.value_or(scheduled_.begin()->first), scheduled_.begin()->first);
        if (!wake)
          cv_.wait(lock, ready);
        else
          cv_.wait_for(lock, std::chrono::milliseconds(std::max<UnixMs>(0, *wake - now())), ready);
      }
      stop_now = stopping_;
    }
    if (stop_now) {
      sign_overdue(true);  // a writer that stops leaves no unsigned tail behind
      return;
    }
    if (options_.cluster) handle_ownership_requests();
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
    sign_overdue(false);
    if (options_.cluster && healthy_.load()) {
      follow_standby();
      if (healthy_.load()) complete_takes();
    }
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

  KOBO_ASSERT(states_.size() == options_.config.partitions, "a healthy writer has every partition's state");
  const bool share = log_.shares_appended_events();
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const Partition p = route(batch[i].command);
    if (!owns(p)) {
      // A cluster node decides only for the partitions it writes; a duty of one it let go is
      // its new owner's (resumed from the log there).
      outcomes[i].partition = p;
      outcomes[i].rejection = Rejection::not_owner;
      outcomes[i].detail = "partition " + std::to_string(p.value) + " is not written by this node";
      continue;
    }
    PartitionState& st = states_[p.value];
    const auto* bulk = std::get_if<BulkTransfer>(&batch[i].command);
    Decision d = bulk != nullptr ? decide_bulk(st, *history_, *bulk, options_.config, now, *ids_)
                                 : decide(st, *history_, batch[i].command, options_.config, now, *ids_);
    KOBO_ASSERT(d.rejection == Rejection::none || d.events.empty(), "a rejected command appends nothing");
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
        events.push_back(place(st, *history_, draft, command_seq, size, now, actor, o.events, share));
      KOBO_ASSERT(st.chain.last_seq().value == command_seq.value + size - 1,
                  "a command's events take consecutive seqs");
      KOBO_ASSERT(o.events.size() == size && o.events.front().seq == command_seq,
                  "a command is answered with every event it appended, from its first");
      if (options_.signer) note_unsigned(p, size, now);
      // What nobody is answered (a command the writer ran on its own: a settlement, a payout's
      // step) needs no wallet's facts.
      if (batch[i].done) o.wallets = facts_shown(st, o.events);
      if (std::holds_alternative<CreateBusiness>(batch[i].command)) ++businesses_added;
      for (auto& f : d.schedule) follow_ups.push_back(std::move(f));
    }
    o.seq = st.chain.last_seq();
    KOBO_ASSERT(st.total.value == 0, "a partition's balances sum to zero after every command");
  }

  // A partition whose unsigned events reach checkpoint_events is signed in the same append.
  if (options_.signer && !events.empty())
    for (std::uint32_t p = 0; p < states_.size(); ++p)
      if (unsigned_events_[p] >= options_.checkpoint_events) {
        auto checkpoint = place_checkpoint(states_[p], now);
        if (checkpoint)
          events.push_back(std::move(checkpoint).value());
        else
          log::error("the writer key could not sign a checkpoint",
                     {{"error", checkpoint.status().message()}});
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
  if (options_.cluster) note_first_commands(batch, outcomes);
  for (std::size_t i = 0; i < batch.size(); ++i)
    if (batch[i].done) batch[i].done(std::move(outcomes[i]));
  if (appended && !write_history().ok()) follow_ups.clear();  // recover() schedules them again from the log
  for (auto& f : follow_ups) scheduled_.emplace(f.due, std::move(f.command));
}

}  // namespace kobo

namespace kobo {

// ---- ownership (a cluster node) ---------------------------------------------------------------

void Ledger::take(Partition p) {
  KOBO_ASSERT(options_.cluster, "only a cluster node's writer is handed partitions");
  KOBO_ASSERT(p.value < options_.config.partitions, "no such partition");
  {
    std::lock_guard lock(mu_);
    ownership_requests_.push_back({p, true});
  }
  cv_.notify_one();
}

void Ledger::release(const std::vector<Partition>& partitions) {
  KOBO_ASSERT(options_.cluster, "only a cluster node's writer is handed partitions");
  std::unique_lock lock(mu_);
  std::vector<std::uint64_t> before;
  for (const Partition p : partitions) {
    KOBO_ASSERT(p.value < options_.config.partitions, "no such partition");
    ownership_requests_.push_back({p, false});
    before.push_back(released_[p.value]);
  }
  if (!started_ || stopping_) return;  // handled, in order, once the writer runs (or never)
  cv_.notify_one();
  const auto all_released = [&] {
    for (std::size_t i = 0; i < partitions.size(); ++i)
      if (released_[partitions[i].value] <= before[i]) return false;
    return true;
  };
  if (!released_cv_.wait_for(lock, options_.release_wait, [&] { return all_released() || stopping_; }))
    log::warn("the writer did not let its partitions go in time; going on (fencing keeps them safe)",
              {{"partitions", partitions.size()}});
}

void Ledger::set_ownership(Partition p, Ownership o) {
  KOBO_ASSERT(p.value < options_.config.partitions, "the ownership of one of the log's partitions");
  ownership_[p.value].store(static_cast<std::uint8_t>(o), std::memory_order_release);
  ledger_metrics().owned(p).set(o == Ownership::owned ? 1 : 0);
}

Status Ledger::open_standby() {
  standby_ = std::make_unique<LogFollower>(log_);
  if (auto s = standby_->open(replayed_cursors_); !s) {
    standby_.reset();
    return s;
  }
  KOBO_ASSERT(standby_->partitions() == options_.config.partitions, "a standby follows every partition");
  for (std::uint32_t p = 0; p < options_.config.partitions; ++p)
    followed_offset_[p].store(standby_->cursor(Partition(p)).next_offset.value, std::memory_order_release);
  return {};
}

// Requests in the order they were made, so a release that follows a take of the same partition
// wins, and the other way round.
void Ledger::handle_ownership_requests() {
  std::vector<OwnershipRequest> requests;
  {
    std::lock_guard lock(mu_);
    requests.swap(ownership_requests_);
  }
  for (const OwnershipRequest& r : requests) {
    const Partition p = r.partition;
    if (!r.take) {
      let_go(p, "released");
      {
        std::lock_guard lock(mu_);
        ++released_[p.value];
      }
      released_cv_.notify_all();
      continue;
    }
    if (ownership(p) != Ownership::standby) continue;  // taken already, or being taken
    set_ownership(p, Ownership::taking);
    KOBO_ASSERT(std::ranges::count_if(taking_, [p](const Taking& t) { return t.partition == p; }) == 0,
                "a partition is taken once at a time");
    taking_.push_back({p, false});
    take_asked_[p.value] = std::chrono::steady_clock::now();
    next_take_attempt_ = {};  // at once
  }
}

void Ledger::let_go(Partition p, std::string_view why) {
  const Ownership was = ownership(p);
  if (was == Ownership::standby) return;
  std::erase_if(taking_, [p](const Taking& t) { return t.partition == p; });
  set_ownership(p, Ownership::standby);
  log_.release(p);
  // Its duties are its next owner's, resumed there from the log.
  std::erase_if(scheduled_, [&](const auto& entry) { return route(entry.second) == p; });
  awaiting_first_[p.value] = false;
  KOBO_ASSERT(ownership(p) == Ownership::standby, "a partition let go is followed as a standby");
  unsigned_events_[p.value] = 0;  // signed by its next writer's first checkpoint
  log::info("this node no longer writes the partition",
            {{"partition", p.value}, {"was", to_string(was)}, {"why", why}});
}

// One read of what the log has past the standby's position: every event of a partition this
// writer does not own (standby, or being taken) is applied to its state and noted in the
// history index, as a replay does. An event of a partition it owns is its own, already applied;
// one beyond its state means another writer has appended to it, so this one was fenced: it
// lets the partition go and follows it as a standby from there.
Result<std::size_t> Ledger::standby_step(std::chrono::milliseconds wait) {
  KOBO_ASSERT(standby_ != nullptr, "a cluster node's writer follows the log once started");
  class Standby final : public LogVisitor {
   public:
    explicit Standby(Ledger& ledger) : l(ledger) {}
    Status accepted(const Event& e) override {
      KOBO_ASSERT(e.partition.value < l.states_.size(), "an event of one of the log's partitions");
      PartitionState& st = l.states_[e.partition.value];
      if (e.seq <= st.chain.last_seq()) {
        if (e.seq == st.chain.last_seq() && e.hash != st.chain.last_hash())
          return Status::error("partition " + std::to_string(e.partition.value) + " seq " +
                               std::to_string(e.seq.value) + " is not the event the writer's state holds");
        return {};  // in the state already: this writer's own, or applied before a re-read
      }
      if (l.owns(e.partition)) {
        ledger_metrics().fenced.inc();
        l.let_go(e.partition, "another writer has appended to it");
      }
      if (st.chain.follow(e) != ChainVerdict::accept)
        return Status::error("partition " + std::to_string(e.partition.value) + " seq " +
                             std::to_string(e.seq.value) + " does not extend the writer's state");
      apply(st, e);
      KOBO_ASSERT(st.chain.last_seq() == e.seq, "a standby's state is at the event it applied");
      l.history_->note(e);
      ++applied;
      return {};
    }
    Ledger& l;
    std::size_t applied = 0;
  };
  Standby visitor(*this);
  auto n = standby_->step(visitor, wait);
  for (std::uint32_t p = 0; p < options_.config.partitions; ++p)
    followed_offset_[p].store(standby_->cursor(Partition(p)).next_offset.value, std::memory_order_release);
  if (visitor.applied > 0) {
    publish_durable();
    std::size_t businesses = 0;
    for (const auto& st : states_) businesses += st.businesses.size();
    business_count_.store(businesses);
    if (n && !write_history().ok()) return Status::error("the history index cannot be written");
  }
  return n;
}

void Ledger::follow_standby() {
  if (auto n = standby_step(std::chrono::milliseconds(0)); !n) {
    // Like a failed append: nothing is decided on a state that may not be the log's.
    set_fault(n.status());
    log::error("the writer cannot follow the log; re-reading it", {{"error", n.status().message()}});
    recover();
  }
}

// A takeover, on the writer thread: fence the partitions' previous writers, read them to the end
// the log has after that, append WriterStarted with the next epoch, and only then decide their
// commands and resume their duties. While the log cannot be written it is tried again every
// recovery_retry.
void Ledger::complete_takes() {
  using Clock = std::chrono::steady_clock;
  if (taking_.empty() || Clock::now() < next_take_attempt_) return;
  const auto later = [this](const Status& s, std::string_view step) {
    log::warn("a takeover cannot go on yet; retrying", {{"step", step}, {"error", s.message()}});
    next_take_attempt_ = Clock::now() + options_.recovery_retry;
  };
  const auto started = Clock::now();
  for (Taking& t : taking_) {
    if (t.acquired) continue;
    if (auto s = log_.acquire(t.partition); !s) return later(s, "fencing the previous writer");
    t.acquired = true;
  }
  KOBO_ASSERT(std::ranges::all_of(taking_, [](const Taking& t) { return t.acquired; }),
              "every partition taken has fenced its previous writer before its tail is read");
  const auto fenced = Clock::now();
  auto ends = log_.end_offsets();
  if (!ends) return later(ends.status(), "the log's end");
  const auto deadline = Clock::now() + options_.takeover_read_max;
  const auto read_to_end = [&] {
    for (const Taking& t : taking_)
      if (standby_->cursor(t.partition).next_offset < ends.value()[t.partition.value]) return false;
    return true;
  };
  while (!read_to_end()) {
    if (Clock::now() > deadline)
      return later(Status::error("the log's tail was not read in time"), "reading");
    if (auto n = standby_step(std::chrono::milliseconds(50)); !n) {
      set_fault(n.status());
      log::error("the writer cannot follow the log; re-reading it", {{"error", n.status().message()}});
      return recover();
    }
  }
  const auto read = Clock::now();
  std::vector<Partition> partitions;
  for (const Taking& t : taking_) partitions.push_back(t.partition);
  KOBO_ASSERT(!partitions.empty(), "a takeover takes a partition at least");
  if (auto s = append_writer_started(partitions); !s) {
    ledger_metrics().append_failures.inc();
    set_fault(s);
    log::error("WriterStarted could not be appended; re-reading the log", {{"error", s.message()}});
    return recover();  // the partitions stay being taken; the next attempt appends it again
  }
  const auto now = Clock::now();
  const auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  for (const Partition p : partitions) {
    set_ownership(p, Ownership::owned);
    for (auto& s : resume_schedule(states_[p.value], options_.config))
      scheduled_.emplace(s.due, std::move(s.command));
    awaiting_first_[p.value] = true;
    ledger_metrics().takeovers.inc();
    ledger_metrics().takeover_ready_seconds.observe(seconds(now - take_asked_[p.value]));
    log::info(
        "this node writes the partition",
        {{"partition", p.value},
         {"epoch", states_[p.value].chain.epoch().value},
         {"seq", states_[p.value].chain.last_seq().value},
         {"since_assigned_ms",
          std::chrono::duration_cast<std::chrono::milliseconds>(now - take_asked_[p.value]).count()},
         {"fence_ms", std::chrono::duration_cast<std::chrono::milliseconds>(fenced - started).count()},
         {"tail_ms", std::chrono::duration_cast<std::chrono::milliseconds>(read - fenced).count()},
         {"writer_started_ms", std::chrono::duration_cast<std::chrono::milliseconds>(now - read).count()}});
  }
  taking_.clear();
}

// The takeover histogram: from a partition's assignment to the first command of a client
// answered after it (decided, not refused as not_owner or unavailable).
void Ledger::note_first_commands(const std::vector<Pending>& batch, const std::vector<Outcome>& outcomes) {
  KOBO_ASSERT(batch.size() == outcomes.size(), "an outcome per command");
  const auto now = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const Outcome& o = outcomes[i];
    const std::uint32_t p = o.partition.value;
    if (!batch[i].done || !awaiting_first_[p] ||
        std::holds_alternative<EndWebhookDeliveries>(batch[i].command) ||
        o.rejection == Rejection::not_owner || o.rejection == Rejection::unavailable ||
        o.rejection == Rejection::storage_full)
      continue;
    awaiting_first_[p] = false;
    ledger_metrics().takeover_seconds.observe(std::chrono::duration<double>(now - take_asked_[p]).count());
  }
}

}  // namespace kobo
