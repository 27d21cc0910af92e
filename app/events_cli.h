#pragma once
// `kobo events`: the events of a log as JSON lines, exactly as stored, for analysts, auditors
// and the schema test (tests/schemas/validate_events.py).
//
//   kobo events (--data-dir D | --kafka-brokers B [--kafka-topic T]) [--partition N]
//               [--from SEQ] [--follow]
//     prints every record of the log (or of partition N), one per line: in partition order and,
//     within a partition, in log order; then, with --follow, every record appended after that as
//     it arrives, until SIGINT or SIGTERM. --from SEQ skips each partition's records before seq
//     SEQ. The embedded log is read beside a server that may be running on it (a RocksDB
//     secondary instance: no lock, nothing written). It does not verify the hash chain (`kobo
//     audit` does). Exit 0 when all were printed (or --follow was stopped), 2 when it cannot run
//     (no log, no such partition, a broker that does not answer).

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "app/kafka_flags.h"

namespace kobo {

class EventsCommand {
 public:
  // Adds the `events` subcommand to `app`; must outlive its parsing.
  explicit EventsCommand(CLI::App& app);
  EventsCommand(const EventsCommand&) = delete;
  EventsCommand& operator=(const EventsCommand&) = delete;

  // The exit code when `events` was parsed, else nullopt.
  std::optional<int> run() const;

 private:
  CLI::App* events_ = nullptr;
  std::string data_dir_;
  KafkaFlags kafka_;  // brokers empty: the embedded log under the data dir
  std::optional<std::uint32_t> partition_;
  std::uint64_t from_seq_ = 1;
  bool follow_ = false;
};

}  // namespace kobo
