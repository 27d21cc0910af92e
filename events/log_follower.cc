#include "events/log_follower.h"

#include <algorithm>
#include <memory>
#include <optional>

#include "common/log.h"

namespace kobo {

namespace {

// Whether each partition's records in `records` have increasing offsets.
bool in_log_order(const std::deque<LogRecord>& records, std::size_t partitions) {
  std::vector<std::optional<Offset>> last(partitions);
  for (const LogRecord& r : records) {
    std::optional<Offset>& previous = last.at(r.partition.value);
    if (previous && !(*previous < r.offset)) return false;
    previous = r.offset;
  }
  return true;
}

}  // namespace

std::string describe(const RefusedRecord& r) {
  KOBO_ASSERT(r.verdict != ChainVerdict::accept || !r.problem.empty(),
              "a record the chain would accept is refused only for a problem it names");
  const std::string where = "partition " + std::to_string(r.partition.value);
  if (!r.problem.empty()) return where + " offset " + std::to_string(r.offset.value) + ": " + r.problem;
  const std::string seq = r.event != nullptr ? " seq " + std::to_string(r.event->seq.value) : "";
  switch (r.verdict) {
    case ChainVerdict::duplicate:
      return where + seq + " is a duplicate";
    case ChainVerdict::zombie:
      return where + seq + " is from a fenced writer";
    case ChainVerdict::accept:
    case ChainVerdict::broken:
      break;
  }
  return where + seq + " does not extend the hash chain";
}

Disposition LogVisitor::refused(const RefusedRecord& r) {
  KOBO_ASSERT(r.chain != nullptr, "a refused record comes with its partition's head");
  switch (r.verdict) {
    case ChainVerdict::duplicate:
      return Disposition::skip;
    case ChainVerdict::zombie:
      log::warn("skipped an event from a fenced writer",
                {{"partition", r.partition.value},
                 {"seq", r.event != nullptr ? r.event->seq.value : 0},
                 {"epoch", r.event != nullptr ? r.event->epoch.value : 0}});
      return Disposition::skip;
    case ChainVerdict::accept:
    case ChainVerdict::broken:
      break;
  }
  return Disposition::stop;
}

LogFollower::LogFollower(EventLog& log, LogFollowerOptions options) : log_(log), options_(options) {
  KOBO_ASSERT(options_.poll_records_max > 0, "a follower must read something per poll");
}

Status LogFollower::open() {
  KOBO_ASSERT(log_.partitions() > 0, "a follower of a log of one partition at least");
  return open(std::vector<FollowCursor>(log_.partitions()));
}

Status LogFollower::open(std::vector<FollowCursor> cursors) {
  if (cursors.size() != log_.partitions()) return Status::error("a follower needs one cursor per partition");
  std::vector<Offset> start;
  start.reserve(cursors.size());
  for (const FollowCursor& c : cursors) start.push_back(c.next_offset);
  auto reader = log_.open_reader(std::move(start));
  if (!reader) return reader.status();
  reader_ = std::move(reader).value();
  cursors_ = std::move(cursors);
  held_.clear();
  KOBO_ASSERT(reader_ != nullptr && cursors_.size() == log_.partitions(),
              "an open follower reads every partition");
  return {};
}

void LogFollower::take(FollowCursor& c, const Event& e) {
  KOBO_ASSERT(c.chain.last_seq() == e.seq && c.chain.last_hash() == e.hash,
              "the event handed on is its partition's head");
  c.mid_command = !e.last_of_command();
  ++events_accepted_;
  KOBO_ASSERT(events_accepted_ <= records_read_, "an event is handed on once, of a record read");
}

Status LogFollower::handle(LogVisitor& v, const LogRecord& r) {
  KOBO_ASSERT(r.partition.value < cursors_.size(), "step() hands on records of the log's partitions only");
  FollowCursor& c = cursors_[r.partition.value];
  KOBO_ASSERT(r.offset >= c.next_offset, "a reader went backwards");
  c.next_offset = Offset(r.offset.value + 1);
  ++records_read_;

  RefusedRecord refused{r.partition, r.offset, ChainVerdict::broken, nullptr, {}, &c.chain, r.bytes};
  // A record this process appended may come with the event it was sealed from (EventLog's
  // LogRecord::event): what its bytes decode to, taken as it is. The audit's canonical-form check
  // reads the bytes themselves.
  std::shared_ptr<const Event> event = options_.require_canonical_form ? nullptr : r.event;
  Result<Event> as_written = Status::error("unread");
  if (event == nullptr) {
    auto decoded = decode_event(r.bytes);
    if (decoded) {
      event = std::make_shared<const Event>(std::move(decoded).value());
    } else {
      refused.problem = decoded.status().message();
      as_written = decode_event_unverified(r.bytes);
      if (as_written) refused.event = &as_written.value();
    }
  }
  if (event != nullptr) {
    const Event& e = *event;
    if (e.partition != r.partition) {
      refused.event = &e;
      refused.problem = "the event says it belongs to partition " + std::to_string(e.partition.value);
    } else if (options_.require_canonical_form && !in_canonical_form(e, r.bytes)) {
      refused.event = &e;
      refused.problem = "its bytes are not the event's canonical form";
    } else {
      refused.verdict = c.chain.follow(e);
      if (refused.verdict == ChainVerdict::accept) {
        take(c, e);
        return v.accepted_shared(event);
      }
      refused.event = &e;
    }
  }

  // What extends the chain and is in its partition and form has been taken above.
  KOBO_ASSERT(refused.verdict != ChainVerdict::accept || !refused.problem.empty(),
              "a record refused though the chain would take it is refused for a problem it names");
  switch (v.refused(refused)) {
    case Disposition::skip:
      return {};
    case Disposition::stop:
      return Status::error(describe(refused));
    case Disposition::adopt:
      break;
  }
  if (refused.event == nullptr) return {};  // nothing to adopt: skipped
  const Event& e = *refused.event;
  c.chain = ChainFollower(e.seq, e.hash, e.epoch);
  KOBO_ASSERT(c.next_offset.value == r.offset.value + 1, "the cursor is past the adopted record");
  take(c, e);
  return v.accepted(e);
}

Result<std::size_t> LogFollower::step(LogVisitor& v, std::chrono::milliseconds wait,
                                      const std::vector<Offset>* until) {
  KOBO_ASSERT(reader_ != nullptr, "step() before open()");
  KOBO_ASSERT(until == nullptr || until->size() == cursors_.size(), "one limit per partition");
  auto due = [&](const LogRecord& r) { return until == nullptr || r.offset < (*until)[r.partition.value]; };
  records_.clear();
  // Held records come first: a partition with a held record has all its later records held too,
  // so this keeps each partition in log order.
  if (!held_.empty()) {
    std::deque<LogRecord> still;
    for (LogRecord& r : held_) {
      if (due(r))
        records_.push_back(std::move(r));
      else
        still.push_back(std::move(r));
    }
    held_.swap(still);
  }
  if (records_.empty()) {
    if (auto s = reader_->poll(options_.poll_records_max, wait, records_); !s) return s;
  }
  std::size_t consumed = 0;
  for (LogRecord& r : records_) {
    if (r.partition.value >= cursors_.size())
      return Status::error("the log returned a record of partition " + std::to_string(r.partition.value));
    if (!due(r)) {
      held_.push_back(std::move(r));
      continue;
    }
    if (auto s = handle(v, r); !s) return s;
    ++consumed;
  }
  for (const LogRecord& r : held_) KOBO_ASSERT(!due(r), "only records past `until` are held back");
  // Held back in log order: the loop below takes a partition's first held record as its end.
  KOBO_ASSERT(in_log_order(held_, cursors_.size()), "a partition's held-back records are in log order");
  // The reader may have passed offsets that hold nothing to read (Kafka's transaction markers
  // and aborted records): a partition is read up to its first held-back record, or else to
  // wherever the reader stands.
  for (std::uint32_t p = 0; p < cursors_.size(); ++p) {
    const auto held =
        std::find_if(held_.begin(), held_.end(), [p](const LogRecord& r) { return r.partition.value == p; });
    const Offset passed = held != held_.end() ? held->offset : reader_->position(Partition(p));
    cursors_[p].next_offset = std::max(cursors_[p].next_offset, passed);
  }
  KOBO_ASSERT(consumed <= records_.size(), "a step hands on no more records than it read");
  return consumed;
}

bool LogFollower::reached(const std::vector<Offset>& until) const {
  KOBO_ASSERT(until.size() == cursors_.size(), "one limit per partition");
  for (std::size_t p = 0; p < cursors_.size(); ++p)
    if (cursors_[p].next_offset < until[p]) return false;
  return true;
}

bool LogFollower::mid_command() const {
  KOBO_ASSERT(reader_ != nullptr, "mid_command() of an open follower");
  for (const FollowCursor& c : cursors_)
    if (c.mid_command) return true;
  return false;
}

Status LogFollower::follow_to(LogVisitor& v, const std::vector<Offset>& until,
                              const std::function<void()>& after_step) {
  if (until.size() != cursors_.size()) return Status::error("one limit per partition");
  auto ends = log_.end_offsets();
  if (!ends) return ends.status();
  for (std::size_t p = 0; p < until.size(); ++p)
    if (until[p] > ends.value()[p])
      return Status::error("partition " + std::to_string(p) + ": cannot read to offset " +
                           std::to_string(until[p].value) + ", the log ends at " +
                           std::to_string(ends.value()[p].value));
  while (!reached(until)) {
    auto n = step(v, std::chrono::milliseconds(100), &until);
    if (!n) return n.status();
    KOBO_ASSERT(n.value() <= records_.size(), "a step takes no more records than it read");
    if (after_step) after_step();
  }
  KOBO_ASSERT(
      std::ranges::none_of(held_, [&](const LogRecord& r) { return r.offset < until[r.partition.value]; }),
      "nothing before `until` is left held back");
  return {};
}

Status LogFollower::follow_to_end(LogVisitor& v, const std::function<void()>& after_step) {
  auto ends = log_.end_offsets();
  if (!ends) return ends.status();
  KOBO_ASSERT(ends.value().size() == cursors_.size(), "the log has an end per partition the follower reads");
  return follow_to(v, ends.value(), after_step);
}

// ---- check_positions ----------------------------------------------------------------------------

namespace {

// How far back from a position its head is looked for: 16 records, then 16 times more each round
// up to 65,536 (Kafka's transaction markers, duplicates and a fenced writer's events may lie
// between the head and the position).
constexpr std::uint64_t kHeadWindowMin = 16;
constexpr std::uint64_t kHeadWindowMax = 65'536;
constexpr std::size_t kHeadPollRecords = 1'024;

// What one window of a partition showed before the cursor's next_offset.
struct HeadSearch {
  std::optional<Offset> head;       // the first event with the head's seq, hash and epoch
  std::optional<Offset> extension;  // the first event after `head` that extends it
  std::string mismatch;             // the first event with the head's seq and another hash or epoch
};

std::string short_hash(const std::string& hex) { return hex.substr(0, 16) + (hex.size() > 16 ? "…" : ""); }

void look_at(HeadSearch& h, const FollowCursor& c, const LogRecord& r) {
  KOBO_ASSERT(r.offset < c.next_offset, "only records before the position are looked at");
  auto decoded = decode_event(r.bytes);
  if (!decoded) return;  // not an event of the chain: a reader would not have applied it either
  const Event& e = decoded.value();
  if (e.partition != r.partition) return;
  const ChainFollower& head = c.chain;
  if (e.seq == head.last_seq()) {
    if (e.hash == head.last_hash() && e.epoch == head.epoch()) {
      if (!h.head) h.head = r.offset;  // a later copy is a duplicate of a retried append
    } else if (h.mismatch.empty()) {
      h.mismatch = "partition " + std::to_string(r.partition.value) + " seq " + std::to_string(e.seq.value) +
                   ": the log's event (offset " + std::to_string(r.offset.value) + ") has hash " +
                   short_hash(e.hash) + " and epoch " + std::to_string(e.epoch.value) +
                   ", the position says " + short_hash(head.last_hash()) + " and epoch " +
                   std::to_string(head.epoch().value);
    }
    return;
  }
  if (h.head && !h.extension && e.seq.value == head.last_seq().value + 1 && e.prev_hash == head.last_hash() &&
      e.epoch >= head.epoch())
    h.extension = r.offset;
  KOBO_ASSERT(!h.extension || (h.head && *h.head < *h.extension), "what extends the head comes after it");
}

}  // namespace

Status check_positions(EventLog& log, const std::vector<FollowCursor>& cursors,
                       std::chrono::milliseconds timeout) {
  const std::uint32_t n = log.partitions();
  if (cursors.size() != n)
    return Status::error("positions of " + std::to_string(cursors.size()) + " partitions, for a log of " +
                         std::to_string(n));
  auto ends = log.end_offsets();
  if (!ends) return ends.status();
  KOBO_ASSERT(ends.value().size() == n, "the log has an end offset per partition");
  std::vector<std::uint32_t> pending;
  for (std::uint32_t p = 0; p < n; ++p) {
    const FollowCursor& c = cursors[p];
    const std::string where = "partition " + std::to_string(p);
    if (ends.value()[p] < c.next_offset)
      return Status::error(where + ": the log ends at offset " + std::to_string(ends.value()[p].value) +
                           ", before the position's offset " + std::to_string(c.next_offset.value));
    if (c.chain.last_seq().value == 0) continue;  // no event yet: nothing to hold
    if (c.next_offset.value == 0)
      return Status::error(where + ": seq " + std::to_string(c.chain.last_seq().value) + " at offset 0");
    pending.push_back(p);
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (std::uint64_t window = kHeadWindowMin; !pending.empty(); window *= 16) {
    KOBO_ASSERT(window <= kHeadWindowMax, "a head is looked for within a bounded window");
    std::vector<Offset> start = ends.value();  // the partitions not looked at are read from their end
    for (const std::uint32_t p : pending) {
      const std::uint64_t next = cursors[p].next_offset.value;
      start[p] = Offset(next > window ? next - window : 0);
      KOBO_ASSERT(start[p] <= cursors[p].next_offset, "a head is looked for before its position");
    }
    auto reader = log.open_reader(start);
    if (!reader) return reader.status();
    std::vector<HeadSearch> seen(n);
    std::vector<bool> read(n, true);
    for (const std::uint32_t p : pending) read[p] = false;
    std::vector<LogRecord> records;
    while (!std::all_of(read.begin(), read.end(), [](bool b) { return b; })) {
      if (std::chrono::steady_clock::now() > deadline)
        return Status::error(
            "the log was not read back to the positions within " + std::to_string(timeout.count()) + " ms",
            ErrorKind::unavailable);
      records.clear();
      if (auto s = reader.value()->poll(kHeadPollRecords, std::chrono::milliseconds(100), records); !s)
        return s;
      for (const LogRecord& r : records) {
        const std::uint32_t p = r.partition.value;
        if (p >= n || read[p]) continue;
        if (r.offset >= cursors[p].next_offset) {
          read[p] = true;
          continue;
        }
        look_at(seen[p], cursors[p], r);
      }
      for (const std::uint32_t p : pending)
        if (reader.value()->position(Partition(p)) >= cursors[p].next_offset) read[p] = true;
    }
    std::vector<std::uint32_t> wider;
    for (const std::uint32_t p : pending) {
      const HeadSearch& h = seen[p];
      const FollowCursor& c = cursors[p];
      const std::string where = "partition " + std::to_string(p);
      if (h.head && h.extension)
        return Status::error(where + ": the position (offset " + std::to_string(c.next_offset.value) +
                             ") is past seq " + std::to_string(c.chain.last_seq().value + 1) + " (offset " +
                             std::to_string(h.extension->value) + "), which extends its head");
      if (h.head) continue;
      if (!h.mismatch.empty()) return Status::error(h.mismatch);
      if (start[p].value == 0 || window >= kHeadWindowMax)
        return Status::error(where + ": the log holds no seq " + std::to_string(c.chain.last_seq().value) +
                             " with hash " + short_hash(c.chain.last_hash()) + " before offset " +
                             std::to_string(c.next_offset.value));
      wider.push_back(p);
    }
    pending = std::move(wider);
  }
  return {};
}

}  // namespace kobo
