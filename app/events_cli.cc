#include "app/events_cli.h"

#include <chrono>
#include <iostream>

#include "app/data_dir.h"

namespace kobo {

namespace {

constexpr int kExitDone = 0;
constexpr int kExitCannotRun = 2;

int cannot_run(const std::string& message) {
  std::cerr << "kobo events: " << message << std::endl;
  return kExitCannotRun;
}

// Prints partition p's records [0, end) in log order: a reader that starts every other
// partition at its end sees only p's records.
Status print_partition(EventLog& log, std::uint32_t p, const std::vector<Offset>& ends, std::ostream& out) {
  std::vector<Offset> start = ends;
  start[p] = Offset(0);
  auto reader = log.open_reader(start);
  if (!reader) return reader.status();
  std::vector<LogRecord> records;
  for (std::uint64_t printed = 0; printed < ends[p].value;) {
    records.clear();
    if (auto s = reader.value()->poll(4096, std::chrono::milliseconds(1000), records); !s) return s;
    // The records up to `ends` are durable, so a poll that finds none of them means a broken log.
    if (records.empty()) return Status::error("partition " + std::to_string(p) + " ends early");
    for (const LogRecord& r : records) {
      if (r.partition.value != p || r.offset.value >= ends[p].value) continue;
      out << r.bytes << '\n';
      ++printed;
    }
  }
  return {};
}

}  // namespace

EventsCommand::EventsCommand(CLI::App& app) {
  events_ = app.add_subcommand(
      "events",
      "Print every event of the embedded log as it is stored, one JSON line each, in partition and log order "
      "(schemas/events/ describes them; `kobo audit` verifies them). Exit 0 when done, 2 when it cannot run");
  events_->add_option("--data-dir", data_dir_, "Data directory of the embedded log")
      ->envname("KOBO_DATA_DIR")
      ->required();
  events_->add_option("--partition", partition_, "Only this partition (0-based)");
}

std::optional<int> EventsCommand::run() const {
  if (!events_->parsed()) return std::nullopt;
  auto log = open_existing_log(data_dir_);
  if (!log) return cannot_run(log.status().message());
  const std::uint32_t partitions = log.value()->partitions();
  if (partition_ && *partition_ >= partitions)
    return cannot_run("--partition " + std::to_string(*partition_) + ": the log has partitions 0 to " +
                      std::to_string(partitions - 1));
  auto ends = log.value()->end_offsets();
  if (!ends) return cannot_run(ends.status().message());
  std::ios::sync_with_stdio(false);
  for (std::uint32_t p = 0; p < partitions; ++p) {
    if (partition_ && *partition_ != p) continue;
    if (auto s = print_partition(*log.value(), p, ends.value(), std::cout); !s)
      return cannot_run("reading partition " + std::to_string(p) + ": " + s.message());
  }
  std::cout.flush();
  if (!std::cout) return cannot_run("cannot write to stdout");
  return kExitDone;
}

}  // namespace kobo
