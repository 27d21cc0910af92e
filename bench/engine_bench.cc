// kobo_engine_bench: the command engine alone, in process, no HTTP (bench/README.md).
//
//   kobo_engine_bench transfers --data-dir D [--seconds 10] [--producers 2] [--window 8192]
//                               [--writer-key-file PEM]
//       Wallet transfers decided and durably logged per second: the real Ledger on the embedded
//       log with fsync on every group commit, `producers` threads each keeping `window` transfers
//       in flight between pre-created funded wallets. A transfer counts once its callback has
//       run, i.e. once its events are fsync'd. Its settlement (an internal command the writer
//       runs moments later) is part of the work measured.
//
//   kobo_engine_bench render [--records 50000]
//       One transaction record rendered from its event, as an answer, a GET, a list page and a
//       webhook render it (projection/render.h): a wallet transfer's debit, from the committed
//       event and the wallets' facts the writer answered with, on one thread, in microseconds.
//
//   kobo_engine_bench project --data-dir D [--poll N]
//       The live projector's CPU per event: the log kobo_make_log wrote in D applied to fresh,
//       logged views (D/views-bench) with WriteBatches, as `kobo serve` applies it, by one lane,
//       each batch one poll of at most N records (a group commit under HTTP load holds about 30).
//       Prints the lane's CPU and the whole process's (RocksDB's flushes and compactions too)
//       per event.
//
//   kobo_engine_bench make-wallets --data-dir D --wallets N
//   kobo_engine_bench writer-memory --data-dir D
//       Resident memory of the writer per wallet: make-wallets appends N wallets (fsync off: this
//       measures memory, not the disk); writer-memory, in a fresh process, reads VmRSS and the
//       heap in use before and after the writer's start-up replay of that log, and divides the
//       growth by the wallets. The growth includes what RocksDB caches while reading (its block
//       cache holds at most 32 MiB), so it is an upper bound.

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <semaphore>
#include <thread>

#include "bench/bench_setup.h"
#include "common/log.h"
#include "events/embedded_log.h"
#include "events/memory_log.h"
#include "projection/projector.h"
#include "projection/render.h"

namespace kobo::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::unique_ptr<EventLog> open_log(const std::string& data_dir, bool sync) {
  auto log = open_embedded_log({(std::filesystem::path(data_dir) / "log").string(), 6, sync});
  if (!log) {
    std::fprintf(stderr, "kobo_engine_bench: %s\n", log.status().message().c_str());
    std::exit(2);
  }
  return std::move(log).value();
}

void start(Ledger& ledger) {
  if (auto s = ledger.start(); !s) {
    std::fprintf(stderr, "kobo_engine_bench: %s\n", s.message().c_str());
    std::exit(2);
  }
}

double percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const auto at = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(at), v.end());
  return v[at];
}

int transfers(const std::string& data_dir, double seconds, int producers, std::ptrdiff_t window,
              const std::string& key_file) {
  auto log = open_log(data_dir, /*sync=*/true);
  LedgerOptions options;
  if (!key_file.empty()) {  // signed checkpoints, as `kobo serve --writer-key-file` (defaults: 1,000 events,
                            // 10 s)
    auto signer = open_key_file_signer(key_file);
    if (!signer) {
      std::fprintf(stderr, "--writer-key-file: %s\n", signer.status().message().c_str());
      return 2;
    }
    options.signer = signer.value();
  }
  options.history_dir = std::filesystem::path(data_dir) / "history";  // every reference looked up on disk
  Ledger ledger(*log, options);
  start(ledger);
  const std::vector<Business> all = create_funded_wallets(ledger, 12, 100);

  std::atomic<bool> running{true}, measuring{false};
  std::atomic<std::uint64_t> acked{0};
  std::mutex latency_mu;
  std::vector<double> latencies_ms;  // of acknowledgements while measuring
  std::vector<std::thread> threads;
  for (int t = 0; t < producers; ++t) {
    threads.emplace_back([&, t] {
      std::counting_semaphore<> in_flight(window);
      std::mt19937_64 rng(static_cast<std::uint64_t>(t) * 7919 + 1);
      for (std::uint64_t n = 0; running.load(std::memory_order_relaxed); ++n) {
        in_flight.acquire();
        WalletTransfer c =
            random_transfer(all, rng, Kobo(10'000), "e" + std::to_string(t) + "-" + std::to_string(n));
        ledger.submit(std::move(c), [&, submitted = Clock::now()](Outcome o) {
          if (!o.ok()) {
            std::fprintf(stderr, "transfer rejected: %s\n", std::string(to_string(o.rejection)).c_str());
            std::exit(2);
          }
          if (measuring.load(std::memory_order_relaxed)) {
            acked.fetch_add(1, std::memory_order_relaxed);
            std::lock_guard lock(latency_mu);
            latencies_ms.push_back(
                std::chrono::duration<double, std::milli>(Clock::now() - submitted).count());
          }
          in_flight.release();
        });
      }
      // Every callback must have run before `in_flight` goes away.
      for (std::ptrdiff_t i = 0; i < window; ++i) in_flight.acquire();
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));  // warm-up
  measuring.store(true);
  const auto started = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  measuring.store(false);
  const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
  running.store(false);
  for (auto& th : threads) th.join();
  ledger.stop();
  std::lock_guard lock(latency_mu);
  const double rate = static_cast<double>(acked.load()) / elapsed;
  std::printf(
      "engine: %llu wallet transfers durable in %.1f s: %.0f transfers/s; ack latency p50 %.1f ms, p99 %.1f "
      "ms "
      "(%d producers x %td in flight, fsync per group commit)\n",
      static_cast<unsigned long long>(acked.load()), elapsed, rate, percentile(latencies_ms, 0.5),
      percentile(latencies_ms, 0.99), producers, window);
  std::printf("RESULT engine_tps=%.0f\n", rate);
  return 0;
}

int render_records(int records) {
  MemoryLog log(6);
  Ledger ledger(log, LedgerOptions{});
  start(ledger);
  std::mt19937_64 rng(1);
  const std::vector<Business> all = create_funded_wallets(ledger, 1, 2);
  std::vector<Command> transfer;
  transfer.emplace_back(random_transfer(all, rng, Kobo(100'000), "render-1"));
  const Outcome o = std::move(execute_all(ledger, std::move(transfer)).at(0));
  ledger.stop();
  const render::DecidedFacts wallets(o.wallets);  // as the answers read them
  std::size_t bytes = 0;
  for (int i = 0; i < records / 10; ++i)  // warm-up
    bytes += render::transaction(o.events.at(0), 0, {}, wallets, TransactionStatus::pending).size();
  const auto started = Clock::now();
  for (int i = 0; i < records; ++i)
    bytes += render::transaction(o.events.at(0), 0, {}, wallets, TransactionStatus::pending).size();
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - started).count() / records;
  std::printf("render: %d wallet transfer records of %zu bytes, %.2f us each\n", records,
              bytes / static_cast<std::size_t>(records + records / 10), us);
  std::printf("RESULT render_us=%.2f\n", us);
  return 0;
}

// CPU seconds of this process's threads whose name starts with `prefix` (all threads: empty).
double threads_cpu_seconds(std::string_view prefix) {
  double total = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::FILE* f = std::fopen((task.path() / "stat").c_str(), "r");
    if (f == nullptr) continue;
    char line[1024];
    const std::size_t n = std::fread(line, 1, sizeof line - 1, f);
    std::fclose(f);
    line[n] = 0;
    const std::string_view stat(line, n);
    const auto open = stat.find('('), close = stat.rfind(')');
    if (open == std::string_view::npos || close == std::string_view::npos) continue;
    if (!stat.substr(open + 1, close - open - 1).starts_with(prefix)) continue;
    unsigned long utime = 0, stime = 0;  // fields 14 and 15
    std::string rest(stat.substr(close + 2));
    if (std::sscanf(rest.c_str(), "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) == 2)
      total += static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  return total;
}

int project(const std::string& data_dir, std::size_t poll) {
  auto log = open_log(data_dir, false);
  const std::string dir = (std::filesystem::path(data_dir) / "views-bench").string();
  std::filesystem::remove_all(dir);
  auto views = Views::open(dir, log->partitions());
  if (!views) {
    std::fprintf(stderr, "kobo_engine_bench: %s\n", views.status().message().c_str());
    return 2;
  }
  auto ends = log->end_offsets();
  if (!ends) {
    std::fprintf(stderr, "kobo_engine_bench: %s\n", ends.status().message().c_str());
    return 2;
  }
  ProjectorOptions options;
  options.lanes = 1;
  options.poll_records_max = poll;
  options.flush_events_max = poll;
  Projector projector(*log, *views.value(), options);
  rusage before{};
  ::getrusage(RUSAGE_SELF, &before);
  const auto t0 = Clock::now();
  if (auto s = projector.catch_up_to(ends.value()); !s) {
    std::fprintf(stderr, "kobo_engine_bench: %s\n", s.message().c_str());
    return 2;
  }
  const double lane = threads_cpu_seconds("kobo-project-");
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  rusage after{};
  ::getrusage(RUSAGE_SELF, &after);
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  const double cpu =
      seconds(after.ru_utime) - seconds(before.ru_utime) + seconds(after.ru_stime) - seconds(before.ru_stime);
  std::uint64_t events = 0;
  for (std::uint32_t p = 0; p < log->partitions(); ++p) events += projector.applied_seq(Partition(p)).value;
  std::printf("projected %llu events in %.2f s: lane %.1f us of CPU per event, process %.1f us\n",
              static_cast<unsigned long long>(events), wall, lane * 1e6 / static_cast<double>(events),
              cpu * 1e6 / static_cast<double>(events));
  std::printf("RESULT project_lane_us=%.1f project_process_us=%.1f\n",
              lane * 1e6 / static_cast<double>(events), cpu * 1e6 / static_cast<double>(events));
  return 0;
}

int make_wallets(const std::string& data_dir, std::uint64_t wallets) {
  auto log = open_log(data_dir, /*sync=*/false);
  Ledger ledger(*log, LedgerOptions{});
  start(ledger);
  const Caller caller = create_business(ledger, "Bench");
  const auto started = Clock::now();
  constexpr std::uint64_t kWindow = 8'192;
  for (std::uint64_t n = 0; n < wallets;) {
    Batch batch(ledger);
    for (std::uint64_t i = 0; i < kWindow && n < wallets; ++i, ++n)
      batch.submit(CreateWallet{caller, "wallet " + std::to_string(n), "secondary", {}, {}});
    batch.wait();
  }
  ledger.stop();
  const double s = std::chrono::duration<double>(Clock::now() - started).count();
  std::printf("created %llu wallets in %.1f s (%.0f/s)\n", static_cast<unsigned long long>(wallets), s,
              static_cast<double>(wallets) / s);
  return 0;
}

int writer_memory(const std::string& data_dir) {
  auto log = open_log(data_dir, /*sync=*/false);
  malloc_trim(0);
  const std::size_t rss_before = resident_bytes();
  const std::size_t heap_before = mallinfo2().uordblks + mallinfo2().hblkhd;
  Ledger ledger(*log, LedgerOptions{});
  const auto started = Clock::now();
  start(ledger);
  const double s = std::chrono::duration<double>(Clock::now() - started).count();
  malloc_trim(0);
  const std::size_t rss_after = resident_bytes();
  const std::size_t heap_after = mallinfo2().uordblks + mallinfo2().hblkhd;
  std::size_t wallets = 0;
  // The writer's state is private; the log says how many wallets it holds.
  const auto ends = log->end_offsets();
  for (Offset o : ends.value()) wallets += o.value;
  wallets -= 6 * 2 + 1;  // WriterStarted of two starts in 6 partitions, BusinessRegistered
  ledger.stop();
  const double per_wallet = static_cast<double>(rss_after - rss_before) / static_cast<double>(wallets);
  std::printf(
      "writer memory: %zu wallets replayed in %.1f s; resident +%.1f MiB = %.0f bytes/wallet "
      "(%.0f MiB per million); heap in use +%.0f bytes/wallet\n",
      wallets, s, static_cast<double>(rss_after - rss_before) / (1 << 20), per_wallet,
      per_wallet * 1e6 / (1 << 20),
      static_cast<double>(heap_after - heap_before) / static_cast<double>(wallets));
  std::printf("RESULT bytes_per_wallet=%.0f\n", per_wallet);
  return 0;
}

}  // namespace
}  // namespace kobo::bench

int main(int argc, char** argv) {
  CLI::App app{"The command engine alone: durable transfers per second, and writer memory per wallet"};
  app.require_subcommand(1);
  std::string data_dir;
  double seconds = 10;
  int producers = 2;
  std::ptrdiff_t window = 1'024;
  std::uint64_t wallets = 1'000'000;
  auto* t = app.add_subcommand("transfers", "Wallet transfers decided and durably logged per second");
  t->add_option("--data-dir", data_dir, "A fresh data directory")->required();
  t->add_option("--seconds", seconds, "How long to measure")->capture_default_str();
  t->add_option("--producers", producers, "Submitting threads")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  t->add_option("--window", window, "Transfers in flight per producer")
      ->check(CLI::Range(1, 30'000))
      ->capture_default_str();
  std::string key_file;
  t->add_option("--writer-key-file", key_file,
                "Sign checkpoints with this Ed25519 key (PEM), as kobo serve does");
  int records = 50'000;
  auto* rr = app.add_subcommand("render", "One transaction record rendered, in microseconds");
  rr->add_option("--records", records, "Records to render")
      ->check(CLI::Range(1, 10'000'000))
      ->capture_default_str();
  std::size_t poll = 32;
  auto* pj = app.add_subcommand("project", "The live projector's CPU per event over a kobo_make_log log");
  pj->add_option("--data-dir", data_dir, "The data directory kobo_make_log wrote")->required();
  pj->add_option("--poll", poll, "Records per batch")->check(CLI::Range(1, 100'000))->capture_default_str();
  auto* m = app.add_subcommand("make-wallets", "Append wallets to a fresh log (fsync off)");
  m->add_option("--data-dir", data_dir, "A fresh data directory")->required();
  m->add_option("--wallets", wallets, "Wallets to create")->capture_default_str();
  auto* r = app.add_subcommand("writer-memory", "Resident memory per wallet after the writer's replay");
  r->add_option("--data-dir", data_dir, "The data directory make-wallets wrote")->required();
  CLI11_PARSE(app, argc, argv);
  kobo::log::set_min_level(kobo::log::Level::warn);
  if (t->parsed()) return kobo::bench::transfers(data_dir, seconds, producers, window, key_file);
  if (rr->parsed()) return kobo::bench::render_records(records);
  if (pj->parsed()) return kobo::bench::project(data_dir, poll);
  if (m->parsed()) return kobo::bench::make_wallets(data_dir, wallets);
  return kobo::bench::writer_memory(data_dir);
}
