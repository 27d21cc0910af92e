#pragma once
// LogAuditor: the auditor's own model of the ledger, fed by a LogFollower. Internal to audit/.
//
// It is deliberately not command/state.h: apply() there asserts, because for the writer an
// inconsistent log is a bug, while for the auditor it is the finding. The model keeps what the
// checks of audit.h need, per partition, and reports into an AuditReport instead of crashing.
// It reads the typed events (event contract v2) and moves balances with the one posting rule,
// post() of events/ledger.h; what records an event creates comes from transactions_created().
//
// Its memory follows wallets, not history (docs/architecture.md section 5a, "The audit"): it
// holds businesses, accounts, wallets, system accounts and what is still in flight (collection
// wallets not yet paid or expired, payouts not yet settled, pending holds). The past is in the
// ScratchIndex (scratch_index.h): the records that have ended, which leave memory for it as they
// end, and a claim of every id, number, name and reference an event uses, whose reuses finish()
// finds in one ordered pass and a ReuseNamer describes.
//
// Not thread-safe: one follower thread feeds it.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "audit/report.h"
#include "audit/scratch_index.h"
#include "audit/signatures.h"
#include "events/ledger.h"
#include "events/log_follower.h"

namespace kobo::audit {

class LogAuditor final : public LogVisitor {
 public:
  // The past goes to `scratch`; with `signatures`, every event also goes through it (the writer
  // key's checks). Both outlive the auditor.
  LogAuditor(std::uint32_t partitions, AuditReport& report, ScratchIndex& scratch,
             SignatureAuditor* signatures = nullptr);
  ~LogAuditor() override;

  Status accepted(const Event& e) override;
  Disposition refused(const RefusedRecord& r) override;
  // The end of the log: reports commands left open, fills in the report's totals, and finds the
  // names used again (their count is in the report; the first of them are reuses(), for a
  // ReuseNamer to describe). An error is the scratch index's.
  [[nodiscard]] Status finish();
  // The names used again that the report will list, by partition and seq (after finish()).
  const std::vector<Reuse>& reuses() const { return reuses_; }
  // The entries the model holds in memory, over every partition (the scratch index's batch of
  // claims not included: it is bounded by ScratchIndex::kClaimsBatchMax). It follows wallets,
  // accounts and the records in flight, never the events read.
  std::size_t entries() const;

 private:
  struct Model;  // one partition
  void report_refused(const RefusedRecord& r);
  void apply(Model& m, const Event& e);
  void begin_command(Model& m, const Event& e);
  void end_command(Model& m, bool complete);
  void post(Model& m, const Event& e, const std::vector<Posting>& postings);
  void check_movement(Model& m, const Event& e);
  void check_limits(Model& m, const Event& e);
  void check_bulk(Model& m, const Event& e);
  void check_records(Model& m, const Event& e, const std::vector<CreatedTransaction>& created);
  void claim_names(Model& m, const Event& e, const std::vector<CreatedTransaction>& created);
  void change_status(Model& m, const Event& e);
  void place_hold(Model& m, const Event& e, const HoldPlaced& x);
  void change_hold(Model& m, const Event& e, const HoldId& id, Kobo captured, bool ends,
                   const std::string& from);
  // The records that have ended, in the scratch index.
  bool collection_exists(Model& m, const std::string& id);
  std::optional<std::string> closed_collection(Model& m, const std::string& id);
  void close_collection(Model& m, const std::string& id);
  struct Payout;
  std::optional<Payout> payout(Model& m, const std::string& id);
  void sum_into(Kobo& total, Kobo amount, std::string_view what);
  void violation(Check check, const Event& e, std::string reason);
  void violation(Check check, Partition p, Seq seq, std::string reason);

  const std::uint32_t partitions_;
  AuditReport& report_;
  ScratchIndex& scratch_;
  std::vector<std::unique_ptr<Model>> models_;
  SignatureAuditor* const signatures_;
  std::vector<Reuse> reuses_;
};

// The audit's second pass, only when the first found names used again: it reads the log again,
// as far as the last event that reused one, and reports each reuse with what was used (the id,
// reference or number, from the event's own claims, claims_of() in model.cc). The first pass
// keeps only where the reuses are, so that it never holds what it would need to describe them.
//
// Not thread-safe: one follower thread feeds it.
class ReuseNamer final : public LogVisitor {
 public:
  // `reuses`: LogAuditor::reuses().
  ReuseNamer(const std::vector<Reuse>& reuses, AuditReport& report);

  Status accepted(const Event& e) override;
  Disposition refused(const RefusedRecord& r) override;
  // Every reuse is reported.
  bool done() const { return wanted_.empty(); }
  // The end of the log: reports the reuses whose events it did not read again.
  void finish();

 private:
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<Reuse>> wanted_;  // (partition, seq)
  AuditReport& report_;
};

}  // namespace kobo::audit
