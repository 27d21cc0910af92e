#include "app/events_cli.h"

#include <atomic>
#include <charconv>
#include <chrono>
#include <csignal>
#include <iostream>

#include "app/data_dir.h"
#include "app/exit_codes.h"
#include "events/event.h"

namespace kobo {

namespace {

constexpr std::size_t kPollRecordsMax = 4096;

std::atomic<bool> stop_following{false};
extern "C" void on_stop_signal(int) { stop_following.store(true); }

int cannot_run(const std::string& message) {
  std::cerr << "kobo events: " << message << std::endl;
  return kExitCannotRun;
}

// The top-level `seq` of a record as stored. Members are in key order and `data` comes before
// `seq`, so the last `,"seq":` is the envelope's. 0 when there is none (such a record is printed:
// this command shows what is stored, `kobo audit` judges it).
std::uint64_t seq_of(std::string_view record) {
  constexpr std::string_view kSeq = ",\"seq\":";
  const auto at = record.rfind(kSeq);
  if (at == std::string_view::npos) return 0;
  std::uint64_t seq = 0;
  const char* first = record.data() + at + kSeq.size();
  std::from_chars(first, record.data() + record.size(), seq);
  return seq;
}

class Printer {
 public:
  Printer(std::optional<std::uint32_t> partition, std::uint64_t from_seq)
      : partition_(partition), from_seq_(from_seq) {}
  // Prints a record as stored; refuses one of another schemaVersion (docs/architecture.md section 4).
  [[nodiscard]] Status print(const LogRecord& r) {
    if (partition_ && r.partition.value != *partition_) return {};
    if (auto s = check_schema_version(r.bytes); !s)
      return Status::error("partition " + std::to_string(r.partition.value) + " offset " +
                           std::to_string(r.offset.value) + ": " + s.message());
    if (from_seq_ > 1 && seq_of(r.bytes) < from_seq_) return {};
    std::cout << r.bytes << '\n';
    return {};
  }

 private:
  const std::optional<std::uint32_t> partition_;
  const std::uint64_t from_seq_;
};

// Prints partition p's records [start, end) in log order: a reader that starts every other
// partition at its end sees only p's records. Everything before `ends` is durable, so a reader
// that stops moving short of it means a broken log: at once for the embedded log, after
// `patience` for Kafka, whose consumer may take a while to fetch.
Status print_partition(EventLog& log, std::uint32_t p, Offset start, const std::vector<Offset>& ends,
                       Printer& out, std::chrono::milliseconds patience) {
  std::vector<Offset> starts = ends;
  starts[p] = std::min(start, ends[p]);
  auto reader = log.open_reader(starts);
  if (!reader) return reader.status();
  std::vector<LogRecord> records;
  auto moved_at = std::chrono::steady_clock::now();
  while (reader.value()->position(Partition(p)) < ends[p]) {
    records.clear();
    const Offset before = reader.value()->position(Partition(p));
    if (auto s = reader.value()->poll(kPollRecordsMax, std::chrono::milliseconds(1000), records); !s)
      return s;
    for (const LogRecord& r : records)
      if (r.partition.value == p && r.offset < ends[p])
        if (auto s = out.print(r); !s) return s;
    if (reader.value()->position(Partition(p)) != before) {
      moved_at = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - moved_at >= patience) {
      return Status::error("partition " + std::to_string(p) + " ends early, at offset " +
                           std::to_string(before.value) + " of " + std::to_string(ends[p].value));
    }
  }
  return {};
}

// Prints what is appended after `ends` as it arrives, until SIGINT or SIGTERM.
Status follow(EventLog& log, const std::vector<Offset>& ends, Printer& out) {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  auto reader = log.open_reader(ends);
  if (!reader) return reader.status();
  std::vector<LogRecord> records;
  while (!stop_following.load()) {
    records.clear();
    if (auto s = reader.value()->poll(kPollRecordsMax, std::chrono::milliseconds(200), records); !s) return s;
    for (const LogRecord& r : records)
      if (auto s = out.print(r); !s) return s;
    if (!records.empty()) std::cout.flush();
    if (!std::cout) return Status::error("cannot write to stdout");
  }
  return {};
}

}  // namespace

EventsCommand::EventsCommand(CLI::App& app) {
  events_ = app.add_subcommand(
      "events",
      "Print the events of the log as they are stored, one JSON line each, in partition and log order, "
      "and with --follow those appended afterwards (schemas/events/ describes them; `kobo audit` verifies "
      "them). Reads beside a running server. Exit 0 when done, 2 when it cannot run");
  events_->add_option("--data-dir", data_dir_, "Data directory of the embedded log")
      ->envname("KOBO_DATA_DIR");
  add_kafka_flags(events_, kafka_, "Read the Kafka topic through these brokers instead");
  events_->add_option("--partition", partition_, "Only this partition (0-based)");
  events_->add_option("--from", from_seq_, "Skip each partition's events before this seq")
      ->check(CLI::PositiveNumber);
  events_->add_flag("--follow,-f", follow_,
                    "Keep printing events as they are appended, until SIGINT or SIGTERM");
}

std::optional<int> EventsCommand::run() const {
  if (!events_->parsed()) return std::nullopt;
  if (data_dir_.empty() && kafka_.brokers.empty())
    return cannot_run("give --data-dir D or --kafka-brokers B");
  auto log = open_log_to_read(data_dir_, kafka_, /*beside_a_writer=*/true);
  if (!log) return cannot_run(log.status().message());
  const std::uint32_t partitions = log.value()->partitions();
  if (partition_ && *partition_ >= partitions)
    return cannot_run("--partition " + std::to_string(*partition_) + ": the log has partitions 0 to " +
                      std::to_string(partitions - 1));
  auto ends = log.value()->end_offsets();
  if (!ends) return cannot_run(ends.status().message());
  // The embedded log's offsets are dense (offset = seq - 1): start at --from. Kafka's are not
  // (transaction markers): read from the start and skip by seq.
  const Offset start(kafka_.brokers.empty() ? from_seq_ - 1 : 0);
  std::ios::sync_with_stdio(false);
  Printer printer(partition_, from_seq_);
  for (std::uint32_t p = 0; p < partitions; ++p) {
    if (partition_ && *partition_ != p) continue;
    const auto patience =
        kafka_.brokers.empty() ? std::chrono::milliseconds(0) : std::chrono::milliseconds(30'000);
    if (auto s = print_partition(*log.value(), p, start, ends.value(), printer, patience); !s)
      return cannot_run("reading partition " + std::to_string(p) + ": " + s.message());
  }
  std::cout.flush();
  if (follow_) {
    if (auto s = follow(*log.value(), ends.value(), printer); !s)
      return cannot_run("following: " + s.message());
  }
  std::cout.flush();
  if (!std::cout) return cannot_run("cannot write to stdout");
  return kExitDone;
}

}  // namespace kobo
