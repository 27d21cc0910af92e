#include "audit/signatures.h"

#include "events/checkpoint.h"

namespace kobo::audit {

namespace {

std::string seconds_text(UnixMs ms) { return std::to_string(ms / 1000) + " s"; }

}  // namespace

SignatureAuditor::SignatureAuditor(std::uint32_t partitions, const SignatureOptions& options,
                                   AuditReport& report)
    : options_(options), report_(report), partitions_(partitions) {
  for (auto& p : partitions_) p.key = options_.public_key;
  for (const VerifiedCheckpoint& c : options_.verified_before) {
    if (c.partition.value < partitions_.size())
      partitions_[c.partition.value].expected[c.seq.value] = c.hash;
    else
      report_.add(Violation{Check::signature,
                            c.partition,
                            c.seq,
                            std::nullopt,
                            {},
                            "an earlier audit verified a checkpoint of partition " +
                                std::to_string(c.partition.value) + ", which this log does not have"});
  }
  report_.signatures.checked = true;
  report_.signatures.key = options_.public_key;
}

void SignatureAuditor::violation(Check check, Partition p, Seq seq, std::optional<Offset> offset,
                                 std::string reason) {
  report_.add(Violation{check, p, seq, offset, {}, std::move(reason)});
}

void SignatureAuditor::accepted(const Event& e) {
  KOBO_ASSERT(e.partition.value < partitions_.size(), "the follower checks the partition");
  PartitionCheck& p = partitions_[e.partition.value];
  const auto* checkpoint = std::get_if<ChainCheckpointed>(&e.data);
  bool good = false;
  if (checkpoint != nullptr) {
    good = checkpoint_verifies(e, *checkpoint, p.key);
    if (good) {
      p.checkpoint = e.seq;
      p.checkpoint_hash = e.hash;
      p.checkpoint_time = e.time;
      if (checkpoint->next_key && *checkpoint->next_key != p.key) {
        report_.note("partition " + std::to_string(e.partition.value) + ": at seq " +
                     std::to_string(e.seq.value) + " the writer key " + p.key.substr(0, 16) +
                     "… handed over to " + checkpoint->next_key->substr(0, 16) + "… (a rotation it signed)");
        p.key = *checkpoint->next_key;
      }
      ++report_.signatures.checkpoints;
    } else {
      const std::string since =
          p.checkpoint.value == 0 ? "the first event" : "seq " + std::to_string(p.checkpoint.value + 1);
      violation(Check::signature, e.partition, e.seq, std::nullopt,
                (checkpoint->key != p.key ? "a checkpoint signed by another key (" +
                                                checkpoint->key.substr(0, 16) + "…) than the writer's"
                                          : std::string("a checkpoint whose signature does not hold")) +
                    ": the events from " + since + " to seq " + std::to_string(e.seq.value - 1) +
                    " are not what the writer signed (added, edited or removed without its key)");
    }
  }
  if (p.epoch_started) {
    const Seq started = *p.epoch_started;
    p.epoch_started.reset();
    if (!good || e.seq.value != started.value + 1 || e.epoch != p.epoch)
      violation(Check::epoch, e.partition, started, std::nullopt,
                "WriterStarted raises the epoch to " + std::to_string(p.epoch.value) +
                    " with no checkpoint the writer key signed right after it: an epoch nobody with the key "
                    "started (forged)");
  }
  if (e.type() == EventType::writer_started) {
    p.epoch_started = e.seq;
    p.epoch = e.epoch;
  }
  if (auto it = p.expected.find(e.seq.value); it != p.expected.end()) {
    if (it->second != e.hash)
      violation(Check::signature, e.partition, e.seq, std::nullopt,
                "an earlier audit verified a checkpoint at this seq with another hash: the log was rewritten "
                "from here or before");
    p.expected.erase(it);
  }
  p.last = e.seq;
}

void SignatureAuditor::refused(const RefusedRecord& r) {
  if (r.verdict != ChainVerdict::zombie || r.event == nullptr) return;
  const Event& e = *r.event;
  const PartitionCheck& p = partitions_.at(r.partition.value);
  const auto* checkpoint = std::get_if<ChainCheckpointed>(&e.data);
  const bool signed_by_writer = checkpoint != nullptr && checkpoint_verifies(e, *checkpoint, p.key);
  violation(Check::epoch, r.partition, e.seq, r.offset,
            "an event of epoch " + std::to_string(e.epoch.value) + " after the partition's epoch " +
                std::to_string(r.chain->epoch().value) + " fenced its writer" +
                (signed_by_writer ? ", and the writer key signed it: the epoch that fenced it is forged"
                                  : ": a zombie, or the newer epoch is forged"));
}

void SignatureAuditor::finish() {
  for (std::uint32_t i = 0; i < partitions_.size(); ++i) {
    PartitionCheck& p = partitions_[i];
    const Partition partition(i);
    if (p.epoch_started)
      violation(
          Check::epoch, partition, *p.epoch_started, std::nullopt,
          "WriterStarted raises the epoch to " + std::to_string(p.epoch.value) +
              " and the log ends with no checkpoint the writer key signed after it: an epoch nobody with "
              "the key started (forged)");
    for (const auto& [seq, hash] : p.expected)
      violation(Check::signature, partition, Seq(seq), std::nullopt,
                "the log ends at seq " + std::to_string(p.last.value) +
                    ", but an earlier audit verified a checkpoint at seq " + std::to_string(seq) +
                    ": its tail was cut");
    if (p.checkpoint.value > 0)
      report_.signatures.last.push_back(VerifiedCheckpoint{partition, p.checkpoint, p.checkpoint_hash});
    if (p.last <= p.checkpoint) continue;
    const std::uint64_t tail = p.last.value - p.checkpoint.value;
    report_.signatures.unsigned_events += tail;
    const std::string events = std::to_string(tail) + (tail == 1 ? " event" : " events");
    if (p.checkpoint.value == 0) {
      violation(Check::signature, partition, Seq(1), std::nullopt,
                "no checkpoint the writer key signed covers any of the partition's " + events);
      continue;
    }
    const UnixMs age = options_.now - p.checkpoint_time;
    if (age > options_.unsigned_max_age_ms)
      violation(Check::signature, partition, Seq(p.checkpoint.value + 1), std::nullopt,
                events + " after the checkpoint at seq " + std::to_string(p.checkpoint.value) +
                    " are signed by no checkpoint, and that one is " + seconds_text(age) +
                    " old: appended without the writer key, or the writer stopped before signing them");
    else
      report_.note("partition " + std::to_string(i) + ": the last " + events +
                   " are not signed yet (the checkpoint before them is " + seconds_text(age) + " old)");
  }
}

}  // namespace kobo::audit
