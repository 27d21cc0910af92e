#pragma once
// LogAuditor: the auditor's own model of the ledger, fed by a LogFollower. Internal to audit/.
//
// It is deliberately not command/state.h: apply() there asserts, because for the writer an
// inconsistent log is a bug, while for the auditor it is the finding. The model keeps what the
// checks of audit.h need, per partition, and reports into an AuditReport instead of crashing.
//
// Not thread-safe: one follower thread feeds it.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "audit/audit.h"
#include "events/log_follower.h"

namespace kobo::audit {

class LogAuditor final : public LogVisitor {
 public:
  LogAuditor(std::uint32_t partitions, AuditReport& report);
  ~LogAuditor() override;

  Status accepted(const Event& e) override;
  Disposition refused(const RefusedRecord& r) override;
  // The end of the log: reports commands left open and fills in the report's totals.
  void finish();

 private:
  struct Model;  // one partition
  struct Leg;
  void apply(Model& m, const Event& e);
  void begin_command(Model& m, const Event& e);
  void end_command(Model& m, bool complete);
  void check_legs(Model& m);
  void post(Model& m, const Event& e, bool debit);
  void check_transaction(Model& m, const Event& e, Leg& leg, const nlohmann::json& trx);
  void change_status(Model& m, const Event& e);
  void violation(Check check, const Event& e, std::string reason);
  void violation(Check check, Partition p, Seq seq, std::string reason);

  const std::uint32_t partitions_;
  AuditReport& report_;
  std::vector<std::unique_ptr<Model>> models_;
};

}  // namespace kobo::audit
