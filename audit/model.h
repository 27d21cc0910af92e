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
// wallets not yet paid or expired, payouts not yet settled, pending holds), and asks the
// ScratchIndex (scratch_index.h) about the past: every id, number, name and reference used, and
// the records that have ended, which leave memory for it as they end.
//
// Not thread-safe: one follower thread feeds it.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "audit/report.h"
#include "audit/scratch_index.h"
#include "audit/signatures.h"
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
  // The end of the log: reports commands left open and fills in the report's totals.
  void finish();
  // The entries the model holds in memory, over every partition (the scratch index's tail not
  // included: it is bounded by ScratchIndex::kTailEntriesMax). It follows wallets, accounts and
  // the records in flight, never the events read.
  std::size_t entries() const;

 private:
  struct Model;  // one partition
  void apply(Model& m, const Event& e);
  void begin_command(Model& m, const Event& e);
  void end_command(Model& m, bool complete);
  void post(Model& m, const Event& e, const std::vector<Posting>& postings);
  void check_movement(Model& m, const Event& e);
  void check_limits(Model& m, const Event& e);
  void check_bulk(Model& m, const Event& e);
  void check_records(Model& m, const Event& e);
  void change_status(Model& m, const Event& e);
  void place_hold(Model& m, const Event& e, const HoldPlaced& x);
  void change_hold(Model& m, const Event& e, const HoldId& id, Kobo captured, bool ends,
                   const std::string& from);
  // The past, in the scratch index.
  bool used_before(Model& m, char tag, std::string_view a, std::string_view b = {});
  bool used_before(Model& m, char tag, std::uint64_t n);
  std::optional<Seq> first_use(Model& m, char tag, std::string_view a, std::string_view b, Seq seq);
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
};

}  // namespace kobo::audit
