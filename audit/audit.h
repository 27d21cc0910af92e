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
// What it is given and what it reports are in options.h and report.h, which audit/'s parts include
// instead of this header.
//
// Thread safety: the functions are independent; each reads through its own reader.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "audit/options.h"
#include "audit/report.h"
#include "common/result.h"
#include "events/event_log.h"
#include "projection/views.h"

namespace kobo::audit {

// phase is "log", "reuses" (the second read of the log, only when names were used again) or
// "views"; done and total count records (log, reuses) or events (views).
using AuditProgress = std::function<void(std::string_view phase, std::uint64_t done, std::uint64_t total)>;

// Replays the whole log and checks it. An error means the log (or the audit's scratch index on
// disk, AuditOptions) could not be read at all; everything the log itself gets wrong is a
// violation in the report. Its memory follows the wallets and what is in flight, not the log's
// length.
[[nodiscard]] Result<AuditReport> audit_log(EventLog& log, const AuditOptions& options,
                                            const AuditProgress& progress = {});
// The same with the default options (a scratch index in the system's temporary directory).
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
