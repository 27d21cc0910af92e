#pragma once
// What an audit reports (audit.h): the checks, their violations and the totals of what it read.
// A header of its own so that the audit's parts (model.h, signatures.h) report into it without
// including audit.h, which includes them in turn through audit.cc: audit/'s units form no cycle.
//
// Thread safety: an AuditReport is a value; one thread fills it.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "events/types.h"

namespace kobo::audit {

enum class Check {
  chain,
  epoch,
  command,
  double_entry,
  balance,
  negative,
  reference,
  transfer,
  status,
  record,
  hold,  // a hold's captures sum above its amount, a change of an ended hold, available below zero
  views,
  limits,
  signature  // the writer key's checkpoints (audit/signatures.h)
};
std::string_view to_string(Check c);

struct Violation {
  Check check = Check::chain;
  std::optional<Partition> partition;
  std::optional<Seq> seq;        // the event it shows at
  std::optional<Offset> offset;  // the record, for chain violations
  std::string key;               // the view key, for view violations
  std::string reason;
};

// A checkpoint an audit verified: where it is and its hash. `kobo audit --json` lists each
// partition's last one; `--verified-before` hands them to a later audit, which checks that the log
// still holds them (the way a cut tail shows).
struct VerifiedCheckpoint {
  Partition partition{0};
  Seq seq{0};
  std::string hash;
};

struct SignaturesCheck {
  bool checked = false;
  std::string key;                       // the key the partitions' last checkpoints verify with
  std::uint64_t checkpoints = 0;         // verified
  std::uint64_t unsigned_events = 0;     // after each partition's last checkpoint, summed
  std::vector<VerifiedCheckpoint> last;  // per partition that has one
};

struct ViewsCheck {
  bool checked = false;
  bool caught_up = false;  // the views were at the end of the log
  std::uint64_t keys_compared = 0;
  std::string note;  // why they were not checked, or how far behind they are
};

struct AuditReport {
  std::uint32_t partitions = 0;
  std::uint64_t records = 0;  // read from the log
  std::uint64_t events = 0;   // accepted (or re-joined) by the chain
  std::uint64_t commands = 0;
  std::uint64_t duplicates = 0;  // skipped: a retried append
  std::uint64_t zombies = 0;     // skipped: an event from a fenced writer
  std::uint64_t businesses = 0, accounts = 0, wallets = 0, transactions = 0;
  std::vector<Seq> last_seqs;          // per partition: the seq of the last event read
  Kobo wallets_test, wallets_live;     // sum of wallet balances per mode
  std::map<std::string, Kobo> system;  // sys:… accounts, summed over partitions
  ViewsCheck views;
  SignaturesCheck signatures;
  std::vector<Violation> violations;  // the first kViolationsListedMax
  std::uint64_t violation_count = 0;  // all of them
  std::vector<std::string> notes;     // skipped records and the like (the first kNotesMax)
  double seconds = 0;                 // time spent reading the log

  static constexpr std::size_t kViolationsListedMax = 10'000;
  static constexpr std::size_t kNotesMax = 1'000;

  bool clean() const { return violation_count == 0; }
  void add(Violation v);
  void note(std::string text);
};

}  // namespace kobo::audit
