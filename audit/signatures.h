#pragma once
// SignatureAuditor: `kobo audit --verify-key`'s checks of the signed checkpoints
// (events/checkpoint.h, docs/security.md "A log nobody can forge"). Internal to audit/; fed by
// LogAuditor with every event the chain accepts (or re-joins at) and every record it refuses.
//
// Per partition it follows the key (the one given, then each `nextKey` a checkpoint it verified
// names: a rotation, noted in the report) and reports, as `signature` or `epoch` violations with
// their positions:
//   - a checkpoint whose signature does not hold, or that another key signed: the events since
//     the last good checkpoint are not what the writer signed (added, edited or removed);
//   - a WriterStarted not followed at once by a checkpoint of its epoch the key signed: an
//     epoch nobody with the key started (a forged one);
//   - an event of a fenced writer (a zombie): the partition's newer epoch fenced a writer that
//     signed on, which only a forged epoch does once every epoch is signed;
//   - events after the last good checkpoint when that checkpoint is older than the unsigned age
//     allowed (the writer signs within its interval, and when it stops), or a partition with
//     events and no checkpoint at all;
//   - a checkpoint an earlier audit verified (`--verified-before`) that the log no longer holds
//     as it was: a truncated or rewritten tail.
// What it cannot see, docs/security.md says: a tail cut exactly after a checkpoint, with no
// earlier audit's positions to compare with.
//
// Not thread-safe: the follower's thread feeds it.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "audit/options.h"
#include "audit/report.h"
#include "events/log_follower.h"

namespace kobo::audit {

class SignatureAuditor {
 public:
  SignatureAuditor(std::uint32_t partitions, const SignatureOptions& options, AuditReport& report);

  void accepted(const Event& e);
  void refused(const RefusedRecord& r);
  // The end of the log: the unsigned tails, the epochs left unsigned, the earlier audit's
  // checkpoints not found; fills report.signatures.
  void finish();

 private:
  struct PartitionCheck {
    std::string key;                   // verifies the next checkpoint
    Seq last{0};                       // the last event accepted
    Seq checkpoint{0};                 // the last good checkpoint (0: none yet)
    std::string checkpoint_hash;       // its hash
    UnixMs checkpoint_time = 0;        // its (signed) time
    std::optional<Seq> epoch_started;  // a WriterStarted waiting for its checkpoint
    Epoch epoch{0};
    std::map<std::uint64_t, std::string> expected;  // an earlier audit's checkpoints: seq -> hash
  };
  void violation(Check check, Partition p, Seq seq, std::optional<Offset> offset, std::string reason);

  const SignatureOptions& options_;
  AuditReport& report_;
  std::vector<PartitionCheck> partitions_;
};

}  // namespace kobo::audit
