#pragma once
// A seeded simulation of the ledger in the style of TigerBeetle's VOPR (docs/architecture.md section 6).
//
// One seed drives everything: a random stream of every command kind, valid and invalid, from
// several businesses in both modes, through the real writer (command/ Ledger) on the in-memory
// log, under a virtual clock and seeded ids, with faults injected at random points: failed
// appends, the writer crashing and restarting from the log, the projector restarting. The
// projector follows the log into real RocksDB views all along.
//
// The oracles:
//   - a plain reference model of balances, written here from the API's rules without the
//     ledger's code: every command's acceptance and every wallet and system balance must agree;
//   - the audit model (`kobo audit`) over the whole log: no violation;
//   - the views: every wallet balance as the model says, and byte-equal to a rebuild from the log.
// The same seed gives the same log, byte for byte: a failing seed is a reproducible bug.

#include <cstdint>
#include <string>

namespace kobo::sim {

struct Options {
  std::uint64_t seed = 1;
  int steps = 300;       // commands issued
  bool verbose = false;  // print every step to stderr
};

struct Report {
  bool ok = false;
  std::string failure;  // what disagreed, at which step; empty when ok
  std::uint64_t accepted = 0, rejected = 0;
  std::uint64_t failed_appends = 0, writer_restarts = 0, projector_restarts = 0;
  std::uint64_t events = 0;
  std::string log_digest;  // SHA-256 over every record of the log, in order
};

Report run(const Options& options);

// One line: seed, verdict, counts (what `make sim` prints per seed).
std::string summary(const Options& options, const Report& report);

}  // namespace kobo::sim
