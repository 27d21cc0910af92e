#include "audit/report.h"

namespace kobo::audit {

std::string_view to_string(Check c) {
  switch (c) {
    case Check::chain:
      return "chain";
    case Check::epoch:
      return "epoch";
    case Check::command:
      return "command";
    case Check::double_entry:
      return "double_entry";
    case Check::balance:
      return "balance";
    case Check::negative:
      return "negative";
    case Check::reference:
      return "reference";
    case Check::transfer:
      return "transfer";
    case Check::status:
      return "status";
    case Check::record:
      return "record";
    case Check::hold:
      return "hold";
    case Check::limits:
      return "limits";
    case Check::views:
      return "views";
    case Check::signature:
      return "signature";
  }
  return "unknown";
}

void AuditReport::add(Violation v) {
  ++violation_count;
  if (violations.size() < kViolationsListedMax) violations.push_back(std::move(v));
}

void AuditReport::note(std::string text) {
  if (notes.size() < kNotesMax) notes.push_back(std::move(text));
}

}  // namespace kobo::audit
