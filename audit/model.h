#pragma once
// LogAuditor: the auditor's own model of the ledger, fed by a LogFollower. Internal to audit/.
//
// It is deliberately not command/state.h: apply() there asserts, because for the writer an
// inconsistent log is a bug, while for the auditor it is the finding. The model keeps what the
// checks of audit.h need, per partition, and reports into an AuditReport instead of crashing.
// It reads the typed events (event contract v2) and moves balances with the one posting rule,
// post() of events/ledger.h; what records an event creates comes from transactions_created().
//
// Not thread-safe: one follower thread feeds it.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "audit/report.h"
#include "audit/signatures.h"
#include "events/log_follower.h"

namespace kobo::audit {

class LogAuditor final : public LogVisitor {
 public:
  // With `signatures`, every event also goes through it (the writer key's checks).
  LogAuditor(std::uint32_t partitions, AuditReport& report, SignatureAuditor* signatures = nullptr);
  ~LogAuditor() override;

  Status accepted(const Event& e) override;
  Disposition refused(const RefusedRecord& r) override;
  // The end of the log: reports commands left open and fills in the report's totals.
  void finish();

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
  void sum_into(Kobo& total, Kobo amount, std::string_view what);
  void violation(Check check, const Event& e, std::string reason);
  void violation(Check check, Partition p, Seq seq, std::string reason);

  const std::uint32_t partitions_;
  AuditReport& report_;
  std::vector<std::unique_ptr<Model>> models_;
  SignatureAuditor* const signatures_;
};

}  // namespace kobo::audit
