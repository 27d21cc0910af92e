#pragma once
// `kobo events`: the events of a data dir's log as JSON lines, for analysts, auditors and the
// schema test (tests/schemas/validate_events.py).
//
//   kobo events --data-dir D [--partition N]
//     prints every record of D/log (or of partition N) exactly as stored, one per line, in
//     partition order and, within a partition, in log order. It does not verify the hash chain
//     (`kobo audit` does). Exit 0 when all were printed, 2 when it cannot run (no log, a server
//     holds the dir, no such partition).

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

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
  std::optional<std::uint32_t> partition_;
};

}  // namespace kobo
