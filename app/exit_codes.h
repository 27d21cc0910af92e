#pragma once
// The exit codes of `kobo audit`, `kobo replay` and `kobo events` (app/audit_cli.h,
// app/events_cli.h) and of a usage error: done, the audit's violations (or a log `kobo replay`
// cannot apply), and cannot run (no log, a broker that does not answer, a data dir a server
// holds). `kobo serve` exits 1 when it cannot start.

namespace kobo {

inline constexpr int kExitDone = 0;
inline constexpr int kExitViolations = 1;
inline constexpr int kExitCannotRun = 2;

}  // namespace kobo
