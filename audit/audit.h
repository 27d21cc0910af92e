#pragma once
// The auditor behind `kobo audit` (docs/architecture.md sections 3, 4 and 6). It replays every
// partition of an EventLog from the first record through the same LogFollower as the writer and
// the projectors, and checks, without trusting anything it reads:
//   - chain:        every record decodes, its hash matches, seq is gapless, prevHash links;
//   - epoch:        each writer generation starts with WriterStarted raising the epoch by one,
//                   and every other event carries its writer's epoch;
//   - command:      a command's events are all there, together, of one business and mode;
//   - double_entry: each command's postings sum to zero, and so does every partition, system
//                   accounts included, after every command;
//   - balance:      each posting's `balance` is its account's balance after it;
//   - negative:     no wallet balance below zero at any point;
//   - reference:    no reference used twice within an account and mode;
//   - transfer:     the legs of a transfer agree (accounts, amounts, fee, linkRef, references);
//   - status:       a transaction's status only moves forward: pending -> processing ->
//                   success | failed;
//   - limits:       no debit over its wallet's KYC-tier daily allowance, no credit (but a
//                   reversal) taking a wallet above its tier's balance cap, with the tier limits
//                   the log's WriterStarted events recorded (events/limits.h);
//   - record:       records are well formed, ids unique, owners exist, businesses in the
//                   partition they hash to;
//   - views:        (audit_views) the views equal a rebuild from the log, key by key;
//   - signature:    (with the writer's public key, SignatureOptions) every event is covered by a
//                   later checkpoint the writer key signed, every epoch is signed as it starts,
//                   no fenced writer's event, no unsigned tail older than allowed, and an earlier
//                   audit's checkpoints are still there (audit/signatures.h).
// A violation is reported with its partition and seq, and the audit goes on: a broken chain is
// re-joined at the next readable event, and an account whose balance disagrees takes the
// balance the log states, so one tampered event is reported where it is, not everywhere after.
//
// Thread safety: the functions are independent; each reads through its own reader.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "events/event_log.h"
#include "events/types.h"
#include "projection/views.h"

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

// What `kobo audit --verify-key` checks the checkpoints with.
struct SignatureOptions {
  std::string public_key;  // the writer's Ed25519 public key, 64 hex digits
  UnixMs now = 0;          // the audit's clock
  // An unsigned tail whose last checkpoint is older than this is a violation (the writer signs
  // every `--checkpoint-seconds` and as it stops): allow that interval and some margin.
  UnixMs unsigned_max_age_ms = 60'000;
  std::vector<VerifiedCheckpoint> verified_before;
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

// phase is "log" or "views"; done and total count records (log) or events (views).
using AuditProgress = std::function<void(std::string_view phase, std::uint64_t done, std::uint64_t total)>;

// Replays the whole log and checks it. An error means the log could not be read at all;
// everything the log itself gets wrong is a violation in the report.
[[nodiscard]] Result<AuditReport> audit_log(EventLog& log, const AuditProgress& progress = {});
// The same, checking the writer key's checkpoints too (`kobo audit --verify-key`).
[[nodiscard]] Result<AuditReport> audit_log(EventLog& log, const SignatureOptions& signatures,
                                            const AuditProgress& progress = {});

// Rebuilds the views from `log` into `scratch` (which must not exist; removed afterwards) up to
// the positions `actual` is at, compares every key and adds a `views` violation per difference.
// Call it only on a log audit_log() found clean: the projection code it runs trusts the log.
[[nodiscard]] Status audit_views(EventLog& log, const Views& actual, const std::filesystem::path& scratch,
                                 AuditReport& report, const AuditProgress& progress = {});

// The machine-readable report (`kobo audit --json`).
nlohmann::json to_json(const AuditReport& report);
// The checkpoints a `--json` report lists as verified (its "signatures.last"), for
// `--verified-before`.
[[nodiscard]] Result<std::vector<VerifiedCheckpoint>> verified_checkpoints(const nlohmann::json& report);
// The short human summary, listing at most `listed_max` violations.
std::string summary(const AuditReport& report, std::size_t listed_max = 20);

}  // namespace kobo::audit
