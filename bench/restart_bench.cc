// kobo_restart_bench: on a data dir kobo_make_log wrote (and `kobo replay` gave views), how long
// the writer takes to be ready again, and how long a transaction list takes deep into the
// biggest business (bench/replay_speed.sh runs both for run.sh).
//
//   kobo_restart_bench restart --data-dir D   the writer's start from the whole log (no snapshot
//                                             yet), then, once a snapshot is written, from it
//   kobo_restart_bench lists --data-dir D [--deep-page N]
//                                             GET /v1/transactions' read of the views in the
//                                             scope with most records: every combination of its
//                                             filters, page 1 and page N (10,000) of 10
//   kobo_restart_bench ready --data-dir D [--crash-after N]
//                                             after `restart` left a snapshot: a writer that
//                                             decides N more transfers and is killed with
//                                             SIGKILL (a child process), then a fresh start:
//                                             how long until it is ready, and its resident
//                                             memory then (bounded by wallets, not history)
//   kobo_restart_bench statements --data-dir D
//                                             the statement of the wallet with most movements:
//                                             a page of 100 of a random window, and the balance
//                                             at a random time (projection/statements.h)
//   kobo_restart_bench keys --data-dir D [--transfers N]
//                                             the views' keys by tag and bytes on disk per
//                                             transfer (read only: beside a running server)
//   kobo_restart_bench compact --data-dir D   the views' bytes on disk as `kobo replay` left
//                                             them, and once compacted to rest (every record in
//                                             the bottommost level, zstd with its dictionary)
#include <rocksdb/db.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "bench/bench_setup.h"
#include "command/ledger.h"
#include "common/crypto.h"
#include "common/log.h"
#include "events/embedded_log.h"
#include "events/fact_codec.h"
#include "projection/rows.h"
#include "projection/statements.h"
#include "projection/view_keys.h"
#include "projection/views.h"

namespace kobo::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::unique_ptr<EventLog> open_log(const fs::path& data_dir) {
  EmbeddedLogOptions o;
  o.path = (data_dir / "log").string();
  o.partitions = 0;
  o.create_if_missing = false;
  auto log = open_embedded_log(o);
  KOBO_ASSERT(log.ok(), "open the log");
  return std::move(log).value();
}

std::size_t snapshots_in(const fs::path& dir) {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) n += e.path().extension() == ".bin";
  return n;
}

// The writer as kobo serve runs it on `data_dir`.
LedgerOptions writer_options(const fs::path& data_dir, std::uint32_t partitions) {
  LedgerOptions o;
  o.config.partitions = partitions;
  o.snapshot_dir = data_dir / "snapshots";
  o.snapshot_poll = std::chrono::milliseconds(50);
  o.history_dir = data_dir / "history";
  return o;
}

int restart(const fs::path& data_dir) {
  const fs::path snapshots = data_dir / "snapshots";
  fs::remove_all(snapshots);
  auto log = open_log(data_dir);
  const LedgerOptions o = writer_options(data_dir, log->partitions());
  std::uint64_t events = 0;
  const auto ends = log->end_offsets();
  KOBO_ASSERT(ends.ok(), "the log's end offsets");
  for (const Offset end : ends.value()) events += end.value;

  auto started = Clock::now();
  auto first = std::make_unique<Ledger>(*log, o);
  const Status first_started = first->start();
  KOBO_ASSERT(first_started.ok(), "the writer's start from the whole log");
  const double whole = seconds_since(started);
  // The state replayed from the whole log is written as a snapshot at the snapshotter's first look.
  const auto deadline = Clock::now() + std::chrono::minutes(5);
  while (snapshots_in(snapshots) == 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const double written = seconds_since(started);
  first.reset();
  KOBO_ASSERT(snapshots_in(snapshots) > 0, "no snapshot was written");
  std::uintmax_t snapshot_bytes = 0;
  for (const auto& e : fs::directory_iterator(snapshots)) snapshot_bytes += fs::file_size(e.path());

  started = Clock::now();
  auto second = std::make_unique<Ledger>(*log, o);
  const Status second_started = second->start();
  KOBO_ASSERT(second_started.ok(), "the writer's start from the snapshot");
  const double from_snapshot = seconds_since(started);
  second.reset();
  std::printf(
      "writer ready on a log of %lu events: from the whole log in %.2f s; snapshot written %.2f s after "
      "the start (%.1f MiB); from the snapshot in %.3f s\n",
      static_cast<unsigned long>(events), whole, written, static_cast<double>(snapshot_bytes) / (1 << 20),
      from_snapshot);
  std::printf("RESULT restart_whole_s=%.2f restart_snapshot_s=%.3f snapshot_mib=%.1f\n", whole, from_snapshot,
              static_cast<double>(snapshot_bytes) / (1 << 20));
  return 0;
}

int ready(const fs::path& data_dir, std::uint64_t crash_after) {
  if (crash_after > 0) {
    // The crash: a writer that starts from the snapshot, decides more transfers (their references
    // in the history index's tail and memtable), and is killed mid-flight.
    const pid_t child = ::fork();
    KOBO_ASSERT(child >= 0, "fork");
    if (child == 0) {
      auto log = open_log(data_dir);
      Ledger l(*log, writer_options(data_dir, log->partitions()));
      const Status crashing_started = l.start();
      KOBO_ASSERT(crashing_started.ok(), "the crashing writer's start");
      const std::vector<Business> all = create_funded_wallets(l, 1, 2);
      std::mt19937_64 rng(::getpid());
      Batch batch(l);
      for (std::uint64_t i = 0; i < crash_after; ++i)
        batch.submit(random_transfer(all, rng, Kobo(10'000),
                                     "crash-" + std::to_string(::getpid()) + "-" + std::to_string(i)));
      batch.wait();
      ::kill(::getpid(), SIGKILL);
    }
    int status = 0;
    const pid_t waited = ::waitpid(child, &status, 0);
    KOBO_ASSERT(waited == child && WIFSIGNALED(status), "the writer was killed");
  }
  const auto started = Clock::now();
  auto log = open_log(data_dir);
  Ledger l(*log, writer_options(data_dir, log->partitions()));
  const Status restarted = l.start();
  KOBO_ASSERT(restarted.ok(), "the writer's start after the crash");
  const double ready_s = seconds_since(started);
  // The snapshotter follows the log into its copy of the hot state: counted too, once it has.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const double rss_mib = static_cast<double>(resident_bytes()) / (1 << 20);
  std::uintmax_t snapshot_bytes = 0, history_bytes = 0;
  for (const auto& e : fs::directory_iterator(data_dir / "snapshots"))
    if (e.path().extension() == ".bin") snapshot_bytes = std::max(snapshot_bytes, fs::file_size(e.path()));
  for (const auto& e : fs::recursive_directory_iterator(data_dir / "history"))
    if (e.is_regular_file()) history_bytes += e.file_size();
  std::printf(
      "writer ready %.3f s after a kill -9 (%lu transfers decided after the snapshot); resident "
      "memory %.1f MiB; newest snapshot %.2f MiB; history index %.1f MiB on disk\n",
      ready_s, static_cast<unsigned long>(crash_after), rss_mib,
      static_cast<double>(snapshot_bytes) / (1 << 20), static_cast<double>(history_bytes) / (1 << 20));
  std::printf("RESULT ready_s=%.3f rss_mib=%.1f snapshot_mib=%.2f history_mib=%.1f\n", ready_s, rss_mib,
              static_cast<double>(snapshot_bytes) / (1 << 20),
              static_cast<double>(history_bytes) / (1 << 20));
  return 0;
}

// The text id of a business or wallet keyed by the 16 bytes of its UUID (view_keys::id16).
std::string text_id(std::string_view prefix, std::string_view bytes) {
  UuidBytes b{};
  KOBO_ASSERT(bytes.size() == b.size(), "an id16 is 16 bytes");
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(b.data()));
  return std::string(prefix) + format_uuid(b);
}

// GET /v1/transactions' read of the views (what the route renders into its answer) for every
// combination of the list's filters, page 1 and a deep page, in the scope with most records: the
// filters are entry, status, amount (one of the scope's newest records' amount), live and a
// createdAt range (the middle half of the list's days).
int lists(const fs::path& data_dir, std::uint64_t deep_page) {
  auto log = open_log(data_dir);
  auto views = Views::open((data_dir / "views").string(), log->partitions());
  KOBO_ASSERT(views.ok(), "open the views");
  Scope biggest;
  rows::ListRow most;
  {
    const std::string prefix = std::string("C") + view_keys::list::kTransactions;
    std::unique_ptr<rocksdb::Iterator> it(views.value()->db().NewIterator(rocksdb::ReadOptions()));
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      const auto row = rows::decode_list(std::string_view(it->value().data(), it->value().size()));
      KOBO_ASSERT(row.ok(), "a list row");
      if (row.value().count <= most.count) continue;
      most = row.value();
      const std::string key = it->key().ToString();
      biggest = Scope{text_id("biz-", std::string_view(key).substr(2, 16)), key[18] == '\1'};
    }
  }
  KOBO_ASSERT(most.count > 0, "no transactions in the views");
  // The newest record's amount and time, and the list's oldest time: the filters' values.
  const json newest =
      json::parse(views.value()->transactions(biggest, {}, PageRequest{1, 1}).value().items.at(0));
  const std::uint64_t records = most.count;
  const json oldest =
      json::parse(views.value()->transactions(biggest, {}, PageRequest{records, 1}).value().items.at(0));
  const UnixMs first_day = *parse_iso8601(oldest.at("createdAt").get<std::string>()) / kMsPerDay * kMsPerDay;
  const UnixMs last_day = *parse_iso8601(newest.at("createdAt").get<std::string>()) / kMsPerDay * kMsPerDay;
  const UnixMs span = last_day - first_day + kMsPerDay;
  struct Combination {
    std::string name;
    TransactionFilter filter;
  };
  std::vector<Combination> combinations;
  for (const char* entry : {"", "debit", "credit"})
    for (const char* status : {"", "success", "pending"})
      for (const bool amount : {false, true})
        for (const bool live : {false, true})
          for (const bool dated : {false, true}) {
            Combination c;
            if (*entry != 0) c.filter.entry = entry, c.name += std::string(" entry=") + entry;
            if (*status != 0) c.filter.status = status, c.name += std::string(" status=") + status;
            if (amount) c.filter.amount = newest.at("amount").get<std::int64_t>(), c.name += " amount";
            if (live) c.filter.live = biggest.live, c.name += " live";
            if (dated) {
              // Whole days, as the route gives them: the middle half of the list's days (a day at least).
              c.filter.created_from = first_day + span / 4 / kMsPerDay * kMsPerDay;
              c.filter.created_until = std::max(*c.filter.created_from + kMsPerDay,
                                                first_day + 3 * span / 4 / kMsPerDay * kMsPerDay);
              c.name += " createdAt";
            }
            if (c.name.empty()) c.name = " (none)";
            combinations.push_back(std::move(c));
          }
  std::vector<double> all;
  double worst = 0;
  std::string worst_name;
  for (const Combination& c : combinations)
    for (const std::uint64_t page : {std::uint64_t{1}, deep_page}) {
      for (int run = 0; run < 3; ++run) {
        const auto t = Clock::now();
        const Page p = views.value()->transactions(biggest, c.filter, PageRequest{page, 10}).value();
        const double ms = seconds_since(t) * 1e3;
        all.push_back(ms);
        if (ms > worst) {
          worst = ms;
          worst_name =
              c.name + " page " + std::to_string(page) + " (" + std::to_string(p.total_count) + " match)";
        }
      }
    }
  std::sort(all.begin(), all.end());
  const double p50 = all[all.size() / 2], p99 = all[all.size() * 99 / 100];
  std::printf(
      "GET /v1/transactions of %s (%lu records): %zu combinations of the filters, page 1 and page %lu, "
      "3 runs each: p50 %.2f ms, p99 %.2f ms, worst %.2f ms (%s)\n",
      biggest.business.c_str(), static_cast<unsigned long>(records), combinations.size(),
      static_cast<unsigned long>(deep_page), p50, p99, worst, worst_name.c_str());
  std::printf(
      "RESULT list_records=%lu list_combinations=%zu list_p50_ms=%.2f list_p99_ms=%.2f list_worst_ms=%.2f\n",
      static_cast<unsigned long>(records), combinations.size(), p50, p99, worst);
  return 0;
}

int statements(const fs::path& data_dir) {
  auto log = open_log(data_dir);
  auto views = Views::open((data_dir / "views").string(), log->partitions());
  KOBO_ASSERT(views.ok(), "open the views");
  // The wallet with most movements: its row counts them.
  std::string wallet;
  rows::WalletRow most;
  {
    std::unique_ptr<rocksdb::Iterator> it(views.value()->db().NewIterator(rocksdb::ReadOptions()));
    for (it->Seek("b"); it->Valid() && it->key().starts_with("b"); it->Next()) {
      const auto row = rows::decode_wallet(std::string_view(it->value().data(), it->value().size()));
      KOBO_ASSERT(row.ok(), "a wallet row");
      if (row.value().movements <= most.movements) continue;
      most = row.value();
      wallet = text_id("vba-", it->key().ToStringView().substr(1));
    }
  }
  KOBO_ASSERT(most.movements > 0, "no wallet has moved money");
  const auto opening = views.value()->read(view_keys::wallet(wallet));
  KOBO_ASSERT(opening.ok() && opening.value().has_value(), "the wallet's fact");
  const Event opened = decode_fact(*opening.value()).value();
  const Scope scope{opened.business, opened.live};
  const Statements s(*views.value());
  const auto first = s.lines(wallet, 1, 1).value().front().row.time;
  const auto last = s.lines(wallet, most.movements, 1).value().front().row.time;
  std::mt19937_64 rng(20261125);
  const auto median = [](std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  std::vector<double> page_ms, last_page_ms, balance_ms;
  for (int i = 0; i < 101; ++i) {
    // A window from a random time to the end; a random page of 100 of it.
    const UnixMs from = first + static_cast<UnixMs>(rng() % static_cast<std::uint64_t>(last - first + 1));
    auto t = Clock::now();
    const auto w = s.window(scope, wallet, from, last + 1).value().value();
    const std::uint64_t pages = std::max<std::uint64_t>(1, (w.count + 99) / 100);
    const std::uint64_t skip = (rng() % pages) * 100;
    const auto lines =
        s.lines(wallet, w.first + skip, std::min<std::uint64_t>(100, w.count - std::min(w.count, skip)));
    KOBO_ASSERT(lines.ok(), "a statement page");
    page_ms.push_back(seconds_since(t) * 1e3);
    // The window of the whole history, its last page: the deepest.
    t = Clock::now();
    const auto all = s.window(scope, wallet, first, last + 1).value().value();
    const auto deepest = s.lines(wallet, all.first + all.count - 100, 100);
    KOBO_ASSERT(deepest.ok() && all.count == most.movements, "the last page");
    last_page_ms.push_back(seconds_since(t) * 1e3);
    t = Clock::now();
    const auto balance = s.balance_at(scope, wallet, from).value();
    KOBO_ASSERT(balance.has_value(), "a balance");
    balance_ms.push_back(seconds_since(t) * 1e3);
  }
  // The whole history read and rendered as the CSV route reads it, pieces of 512 (no CSV text).
  const auto whole = Clock::now();
  for (std::uint64_t next = 1; next <= most.movements; next += 512) {
    const auto piece = s.lines(wallet, next, std::min<std::uint64_t>(512, most.movements - next + 1));
    KOBO_ASSERT(piece.ok(), "a piece of the statement");
  }
  const double lines_per_s = static_cast<double>(most.movements) / seconds_since(whole);
  std::printf("the whole statement read and rendered in pieces of 512: %.0f lines/s\n", lines_per_s);
  std::printf(
      "statement of %s (%lu movements), median of 101: a page of 100 of a random window %.3f ms, the last "
      "page of the whole history %.3f ms, balance at a random time %.3f ms\n",
      wallet.c_str(), static_cast<unsigned long>(most.movements), median(page_ms), median(last_page_ms),
      median(balance_ms));
  std::printf(
      "RESULT statement_business=%s statement_wallet=%s statement_movements=%lu statement_page_ms=%.3f "
      "statement_last_page_ms=%.3f "
      "balance_at_ms=%.3f statement_read_lines_per_s=%.0f\n",
      scope.business.c_str(), wallet.c_str(), static_cast<unsigned long>(most.movements), median(page_ms),
      median(last_page_ms), median(balance_ms), lines_per_s);
  return 0;
}

std::uint64_t bytes_under(const fs::path& dir) {
  std::uint64_t n = 0;
  for (const auto& f : fs::recursive_directory_iterator(dir))
    if (f.is_regular_file()) n += f.file_size();
  return n;
}

// The keys of the views by tag (view_keys.h), and their bytes on disk, per wallet transfer they
// hold (`transfers`, or every WalletTransferSettled of their transaction lists when 0): read
// only, so it may run beside the server that has them open.
int keys(const fs::path& data_dir, std::uint64_t transfers) {
  const fs::path dir = data_dir / "views";
  rocksdb::DB* raw = nullptr;
  rocksdb::Options options;
  KOBO_ASSERT(rocksdb::DB::OpenForReadOnly(options, dir.string(), &raw).ok(), "open the views to read");
  std::unique_ptr<rocksdb::DB> db(raw);
  std::map<char, std::uint64_t> by_tag;
  std::uint64_t all = 0;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  std::uint64_t settled = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++all) {
    ++by_tag[it->key()[0]];
    if (transfers > 0 || it->key()[0] != 'L') continue;
    const auto row = rows::decode_event_row(it->value().ToStringView());
    KOBO_ASSERT(row.ok(), "an event row");
    const auto e = decode_fact(row.value().fact);
    KOBO_ASSERT(e.ok(), "an event's fact");
    if (std::holds_alternative<WalletTransferSettled>(e.value().data)) ++settled;
  }
  KOBO_ASSERT(it->status().ok(), "read the views");
  if (transfers == 0) transfers = settled;
  const double per = static_cast<double>(std::max<std::uint64_t>(transfers, 1));
  std::string tags;
  for (const auto& [tag, n] : by_tag) {
    std::string name = std::string(1, tag);
    for (const view_keys::TagName& t : view_keys::kTagNames)
      if (t.tag == tag) name = t.name;
    std::printf("  %c %-28s %10lu keys, %.2f per transfer\n", tag, name.c_str(),
                static_cast<unsigned long>(n), static_cast<double>(n) / per);
    tags += " keys_" + std::string(1, tag) + "=" + std::to_string(static_cast<double>(n) / per);
  }
  const std::uint64_t bytes = bytes_under(dir);
  std::printf(
      "views: %lu keys (%.2f per transfer), %lu bytes on disk (%.0f per transfer) over %lu transfers\n",
      static_cast<unsigned long>(all), static_cast<double>(all) / per, static_cast<unsigned long>(bytes),
      static_cast<double>(bytes) / per, static_cast<unsigned long>(transfers));
  std::printf("RESULT views_keys_per_transfer=%.2f views_bytes_per_transfer=%.0f%s\n",
              static_cast<double>(all) / per, static_cast<double>(bytes) / per, tags.c_str());
  return 0;
}

int compact(const fs::path& data_dir) {
  const fs::path dir = data_dir / "views";
  const std::uint64_t before = bytes_under(dir);
  {
    auto log = open_log(data_dir);
    auto views = Views::open(dir.string(), log->partitions());
    KOBO_ASSERT(views.ok(), "open the views");
    const auto t = Clock::now();
    rocksdb::CompactRangeOptions o;
    o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    const rocksdb::Status compacted = views.value()->db().CompactRange(o, nullptr, nullptr);
    KOBO_ASSERT(compacted.ok(), "compact the views");
    const rocksdb::Status flushed = views.value()->db().Flush(rocksdb::FlushOptions());
    KOBO_ASSERT(flushed.ok(), "flush the views");
    std::printf("views compacted to rest in %.1f s\n", seconds_since(t));
  }
  const std::uint64_t after = bytes_under(dir);
  std::printf("views on disk: %lu bytes as replayed, %lu bytes at rest\n", static_cast<unsigned long>(before),
              static_cast<unsigned long>(after));
  std::printf("RESULT views_bytes_replayed=%lu views_bytes_at_rest=%lu\n", static_cast<unsigned long>(before),
              static_cast<unsigned long>(after));
  return 0;
}

}  // namespace
}  // namespace kobo::bench

int main(int argc, char** argv) {
  CLI::App app{"The writer's restart, and deep transaction lists, on a large data dir"};
  app.require_subcommand(1);
  std::string data_dir;
  auto* r = app.add_subcommand("restart", "The writer's start from the whole log, then from a snapshot");
  r->add_option("--data-dir", data_dir, "A data dir kobo_make_log wrote")->required();
  auto* l = app.add_subcommand("lists", "Transaction list pages of the biggest business, from the views");
  l->add_option("--data-dir", data_dir, "A data dir kobo_make_log wrote and kobo replay gave views")
      ->required();
  std::uint64_t deep_page = 10'000;
  l->add_option("--deep-page", deep_page, "The deep page (of 10) timed besides page 1")
      ->capture_default_str();
  std::uint64_t crash_after = 20'000;
  auto* y = app.add_subcommand("ready", "A kill -9 of a writer past the snapshot, then its start and memory");
  y->add_option("--data-dir", data_dir, "A data dir `restart` left a snapshot in")->required();
  y->add_option("--crash-after", crash_after, "Transfers decided after the snapshot before the kill")
      ->capture_default_str();
  auto* c = app.add_subcommand("compact", "The views' bytes on disk as replayed, and compacted to rest");
  c->add_option("--data-dir", data_dir, "A data dir kobo_make_log wrote and kobo replay gave views")
      ->required();
  std::uint64_t transfers = 0;
  auto* k = app.add_subcommand("keys", "The views' keys by tag and bytes on disk, per transfer (read only)");
  k->add_option("--data-dir", data_dir, "A data dir")->required();
  k->add_option("--transfers", transfers,
                "The transfers the keys and bytes are divided by; 0: the wallet transfers they hold")
      ->capture_default_str();
  auto* st = app.add_subcommand("statements", "Statement pages and balances at a time of the busiest wallet");
  st->add_option("--data-dir", data_dir, "A data dir kobo_make_log wrote and kobo replay gave views")
      ->required();
  CLI11_PARSE(app, argc, argv);
  kobo::log::set_min_level(kobo::log::Level::warn);
  if (r->parsed()) return kobo::bench::restart(data_dir);
  if (y->parsed()) return kobo::bench::ready(data_dir, crash_after);
  if (c->parsed()) return kobo::bench::compact(data_dir);
  if (st->parsed()) return kobo::bench::statements(data_dir);
  if (k->parsed()) return kobo::bench::keys(data_dir, transfers);
  return kobo::bench::lists(data_dir, deep_page);
}
