// kobo_make_log: writes a large event log through the real Ledger (decide, seal, group commit),
// for measuring replay speed (bench/replay_speed.sh). Appends are not fsync'd: this measures
// the CPU path, and the log is as valid as a served one.
//
//   kobo_make_log --data-dir D [--events 1000000] [--partitions 6] [--businesses 12] [--wallets 20]
//                 [--kafka-brokers B --kafka-topic T]
//
// With --kafka-brokers it writes the topic T (a new one) instead of D/log: the topic a new cluster
// node joins (bench/join_bench.sh).
//
// It creates the businesses and their wallets, funds every wallet from another bank, then runs
// wallet transfers between random wallets of one business (each one is one event,
// WalletTransferSettled) until the log holds --events events. It prints the wire bytes per
// wallet transfer, then starts a second writer on the log and prints how fast its start-up
// replay read it.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <thread>

#include "bench/bench_setup.h"
#include "common/crypto.h"
#include "common/log.h"
#include "events/embedded_log.h"
#include "events/kafka_log.h"

namespace kobo {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::uint64_t log_size(EventLog& log) {
  const auto ends = log.end_offsets();
  KOBO_ASSERT(ends.ok(), "the log's end offsets");
  std::uint64_t n = 0;
  for (Offset o : ends.value()) n += o.value;
  return n;
}

// The wire bytes of the log's wallet transfers, each one event (event contract v2: at most 800).
Status print_transfer_bytes(EventLog& log) {
  const auto ends = log.end_offsets();
  if (!ends.ok()) return ends.status();
  auto reader = log.open_reader(std::vector<Offset>(log.partitions(), Offset(0)));
  if (!reader.ok()) return reader.status();
  std::uint64_t transfers = 0, transfer_bytes = 0, largest = 0;
  // Read to the end offsets (on Kafka they count transaction markers too, which hold no record).
  const auto at_end = [&] {
    for (std::uint32_t p = 0; p < log.partitions(); ++p)
      if (reader.value()->position(Partition(p)) < ends.value()[p]) return false;
    return true;
  };
  std::vector<LogRecord> records;
  while (!at_end()) {
    records.clear();
    if (auto s = reader.value()->poll(65'536, std::chrono::milliseconds(100), records); !s) return s;
    for (const LogRecord& r : records) {
      auto e = decode_event_unverified(r.bytes);
      if (!e.ok()) return e.status();
      if (e.value().type() == EventType::wallet_transfer_settled) {
        ++transfers;
        transfer_bytes += r.bytes.size();
        largest = std::max<std::uint64_t>(largest, r.bytes.size());
      }
    }
  }
  if (transfers > 0)
    std::printf("wallet transfers: %llu, one event each: %.0f bytes on average, %llu at most\n",
                static_cast<unsigned long long>(transfers),
                static_cast<double>(transfer_bytes) / static_cast<double>(transfers),
                static_cast<unsigned long long>(largest));
  return {};
}

Result<std::unique_ptr<EventLog>> open_log(const std::string& data_dir, std::uint32_t partitions,
                                           const std::string& brokers, const std::string& topic) {
  if (brokers.empty())
    return open_embedded_log(
        {(std::filesystem::path(data_dir) / "log").string(), partitions, /*sync=*/false});
  KafkaLogOptions o;
  o.brokers = brokers;
  o.topic = topic;
  o.partitions = partitions;
  o.append_timeout = std::chrono::milliseconds(60'000);  // a group commit of 8,192 transfers
  return open_kafka_log(o);
}

int run(const std::string& data_dir, std::uint64_t events, std::uint32_t partitions, int businesses,
        int wallets, const std::string& brokers, const std::string& topic) {
  log::set_min_level(log::Level::warn);
  if (std::filesystem::exists(std::filesystem::path(data_dir) / "log")) {
    std::fprintf(stderr, "kobo_make_log: %s/log exists; give a fresh data dir\n", data_dir.c_str());
    return 2;
  }
  auto log = open_log(data_dir, partitions, brokers, topic);
  if (!log) {
    std::fprintf(stderr, "kobo_make_log: %s\n", log.status().message().c_str());
    return 2;
  }
  LedgerOptions options;
  options.config.partitions = partitions;
  options.history_dir = std::filesystem::path(data_dir) / "history";  // as kobo serve keeps it
  const auto started = Clock::now();
  {
    Ledger ledger(*log.value(), options);
    if (auto s = ledger.start(); !s) {
      std::fprintf(stderr, "kobo_make_log: %s\n", s.message().c_str());
      return 2;
    }
    const std::vector<bench::Business> all = bench::create_funded_wallets(ledger, businesses, wallets);

    std::mt19937_64 rng(42);
    constexpr std::size_t kWindow = 8'192;  // commands in flight: below the writer's queue limit
    std::uint64_t n = 0;
    while (log_size(*log.value()) < events) {
      bench::Batch batch(ledger);
      for (std::size_t i = 0; i < kWindow; ++i, ++n) {
        const Kobo amount(10'000 + static_cast<std::int64_t>(rng() % 1'000'000));
        batch.submit(bench::random_transfer(all, rng, amount, "bench-" + std::to_string(n)));
      }
      batch.wait();
    }
    ledger.stop();
  }
  const std::uint64_t written = log_size(*log.value());
  const double write_s = seconds_since(started);
  std::printf("wrote %llu events in %.1f s (%.0f events/s) to %s\n", static_cast<unsigned long long>(written),
              write_s, static_cast<double>(written) / write_s,
              brokers.empty() ? (data_dir + "/log").c_str() : ("topic " + topic).c_str());

  if (auto s = print_transfer_bytes(*log.value()); !s) {
    std::fprintf(stderr, "kobo_make_log: %s\n", s.message().c_str());
    return 1;
  }

  // A second writer reads it all back before it takes the partitions: the start-up replay.
  Ledger again(*log.value(), options);
  const auto replay_started = Clock::now();
  if (auto s = again.start(); !s) {
    std::fprintf(stderr, "kobo_make_log: restart: %s\n", s.message().c_str());
    return 1;
  }
  const double replay_s = seconds_since(replay_started);
  again.stop();
  std::printf("writer start-up replay: %llu events in %.2f s (%.0f events/s)\n",
              static_cast<unsigned long long>(written), replay_s, static_cast<double>(written) / replay_s);
  return 0;
}

}  // namespace
}  // namespace kobo

int main(int argc, char** argv) {
  CLI::App app{"Writes a large event log through the Ledger, for replay benchmarks"};
  std::string data_dir;
  std::uint64_t events = 1'000'000;
  std::uint32_t partitions = 6;
  int businesses = 12, wallets = 20;
  app.add_option("--data-dir", data_dir, "A fresh data directory")->required();
  app.add_option("--events", events, "Events to write (at least)")->capture_default_str();
  app.add_option("--partitions", partitions, "Log partitions")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--businesses", businesses, "Businesses")
      ->check(CLI::Range(1, 10'000))
      ->capture_default_str();
  app.add_option("--wallets", wallets, "Wallets per business")
      ->check(CLI::Range(2, 1'000))
      ->capture_default_str();
  std::string brokers, topic = "kobo.ledger.events";
  app.add_option("--kafka-brokers", brokers, "Write this Kafka cluster's topic instead of <data-dir>/log");
  app.add_option("--kafka-topic", topic, "The topic (a new one)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  return kobo::run(data_dir, events, partitions, businesses, wallets, brokers, topic);
}
