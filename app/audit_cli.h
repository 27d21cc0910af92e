#pragma once
// `kobo audit` and `kobo replay` (README.md, "The data directory holds"): their flags and what they run.
//
//   kobo audit (--data-dir D | --kafka-brokers B [--kafka-topic T] [--data-dir D]) [--json FILE] [--progress]
//              [--verify-key KEY [--verified-before REPORT] [--unsigned-max-age-s S]] [--scratch-dir S]
//     exit 0: the log (and the views, when D has them) are clean; 1: violations; 2: cannot run.
//     With --verify-key, the writer's signed checkpoints too (audit/signatures.h). What the audit
//     remembers of the past goes to a scratch index in a directory it makes under S (default: the
//     system's temporary directory) and removes (audit/options.h).
//   kobo replay --data-dir D [--kafka-brokers B [--kafka-topic T]] [--progress]
//     rebuilds D/views from the log (D/log, or the Kafka topic) into D/views.rebuild-<pid> and
//     swaps it in; exit 0 when done,
//     1 when the log cannot be applied, 2 when it cannot run (no log, a server holds the dir).
//
// Both refuse a data dir that a running `kobo serve` holds (RocksDB's LOCK).

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "app/kafka_flags.h"

namespace kobo {

class AuditCommands {
 public:
  // Adds the `audit` and `replay` subcommands to `app`; must outlive its parsing.
  explicit AuditCommands(CLI::App& app);
  AuditCommands(const AuditCommands&) = delete;
  AuditCommands& operator=(const AuditCommands&) = delete;

  // The exit code of the subcommand that was parsed, or nullopt when it was neither of these.
  std::optional<int> run() const;

 private:
  struct AuditFlags {
    std::string data_dir;
    KafkaFlags log;  // brokers empty: the embedded log under the data dir
    std::string json_file;
    bool progress = false;
    std::string verify_key;       // the writer's public key, or a file holding it
    std::string verified_before;  // an earlier --json report
    double unsigned_max_age_s = 60;
    std::string scratch_dir;  // empty: the system's temporary directory
  };
  struct ReplayFlags {
    std::string data_dir;
    KafkaFlags log;  // brokers empty: the embedded log under the data dir
    bool progress = false;
  };

  CLI::App* audit_ = nullptr;
  CLI::App* replay_ = nullptr;
  AuditFlags audit_flags_;
  ReplayFlags replay_flags_;
};

}  // namespace kobo
