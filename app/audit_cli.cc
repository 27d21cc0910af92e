#include "app/audit_cli.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <vector>

#include "app/data_dir.h"
#include "app/exit_codes.h"
#include "app/progress.h"
#include "audit/audit.h"
#include "common/time.h"
#include "events/checkpoint.h"
#include "events/kafka_log.h"
#include "projection/rebuild.h"
#include "projection/views.h"

namespace kobo {

namespace fs = std::filesystem;

namespace {

int cannot_run(std::string_view command, const std::string& message) {
  std::cerr << "kobo " << command << ": " << message << std::endl;
  return kExitCannotRun;
}

Result<std::unique_ptr<EventLog>> open_log(const fs::path& data_dir, const KafkaFlags& flags) {
  return open_log_to_read(data_dir, flags);
}

bool show_progress(bool flag) { return flag || ::isatty(STDERR_FILENO) == 1; }

std::string per_second(std::uint64_t n, double seconds) {
  return seconds > 0 ? std::to_string(static_cast<std::uint64_t>(static_cast<double>(n) / seconds)) : "-";
}

}  // namespace

AuditCommands::AuditCommands(CLI::App& app) {
  audit_ = app.add_subcommand(
      "audit",
      "Replay the whole event log and check it: hash chain, gapless seq and epochs, double entry, no "
      "negative "
      "balance, unique references, agreeing transfer legs and statuses, and that the views equal the log. "
      "Exit 0 when clean, 1 on any violation, 2 when it cannot run");
  audit_
      ->add_option("--data-dir", audit_flags_.data_dir, "Data directory of the embedded log (and its views)")
      ->envname("KOBO_DATA_DIR");
  add_kafka_flags(audit_, audit_flags_.log,
                  "Audit the Kafka log at HOST:PORT[,…] (with --data-dir: and its views)");
  audit_->add_option("--json", audit_flags_.json_file, "Also write a machine-readable report to FILE")
      ->envname("KOBO_AUDIT_JSON");
  audit_
      ->add_flag("--progress", audit_flags_.progress,
                 "Show the progress bar on stderr even when it is not a terminal")
      ->envname("KOBO_PROGRESS");
  audit_
      ->add_option(
          "--verify-key", audit_flags_.verify_key,
          "Check the writer's signed checkpoints with its Ed25519 public key (64 hex digits, PEM, or a "
          "file holding either): every event must be covered by one (docs/security.md)")
      ->envname("KOBO_AUDIT_VERIFY_KEY");
  audit_->add_option(
      "--verified-before", audit_flags_.verified_before,
      "With --verify-key: an earlier audit's --json report; the checkpoints it verified must still "
      "be in the log as they were (a cut tail shows so)");
  audit_
      ->add_option("--unsigned-max-age-s", audit_flags_.unsigned_max_age_s,
                   "With --verify-key: events after a partition's last checkpoint are a violation once that "
                   "checkpoint is older than this (the writer signs every --checkpoint-seconds)")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  audit_
      ->add_option(
          "--scratch-dir", audit_flags_.scratch_dir,
          "Where the audit keeps what it checks the past against (every id and reference used), in a "
          "directory it makes and removes: its memory then follows the wallets, not the log's length. "
          "Default: the system's temporary directory ($TMPDIR or /tmp)")
      ->envname("KOBO_AUDIT_SCRATCH_DIR")
      ->check(CLI::ExistingDirectory);

  replay_ = app.add_subcommand(
      "replay",
      "Rebuild the views from the log into a fresh directory and swap it in atomically (the server must be "
      "stopped). Exit 0 when done, 1 when the log cannot be applied, 2 when it cannot run");
  replay_
      ->add_option("--data-dir", replay_flags_.data_dir, "Data directory of the embedded log and its views")
      ->envname("KOBO_DATA_DIR")
      ->required();
  add_kafka_flags(replay_, replay_flags_.log, "Rebuild from the Kafka log at HOST:PORT[,…]");
  replay_
      ->add_flag("--progress", replay_flags_.progress,
                 "Show the progress bar on stderr even when it is not a terminal")
      ->envname("KOBO_PROGRESS");
}

namespace {

// The signature checks the flags ask for, or nullopt without --verify-key.
Result<std::optional<audit::SignatureOptions>> signature_options(const std::string& verify_key,
                                                                 const std::string& verified_before,
                                                                 double unsigned_max_age_s) {
  if (verify_key.empty()) {
    if (!verified_before.empty()) return Status::error("--verified-before needs --verify-key");
    return std::optional<audit::SignatureOptions>();
  }
  auto key = read_public_key(verify_key);
  if (!key) return Status::error("--verify-key: " + key.status().message());
  audit::SignatureOptions o;
  o.public_key = std::move(key).value();
  o.now = now_ms();
  o.unsigned_max_age_ms = static_cast<UnixMs>(unsigned_max_age_s * 1000);
  if (!verified_before.empty()) {
    std::ifstream in(verified_before);
    const auto report = nlohmann::json::parse(in, nullptr, false);
    if (!in || report.is_discarded())
      return Status::error("--verified-before: " + verified_before + " is no JSON report");
    auto checkpoints = audit::verified_checkpoints(report);
    if (!checkpoints) return Status::error("--verified-before: " + checkpoints.status().message());
    o.verified_before = std::move(checkpoints).value();
  }
  return std::optional<audit::SignatureOptions>(std::move(o));
}

int run_audit(const std::string& data_dir_flag, const KafkaFlags& log_flags, const std::string& json_file,
              bool progress_flag, const audit::AuditOptions& options) {
  if (data_dir_flag.empty() && log_flags.brokers.empty())
    return cannot_run("audit", "give --data-dir D or --kafka-brokers B");
  const fs::path data_dir(data_dir_flag);

  auto log = open_log(data_dir, log_flags);
  if (!log) return cannot_run("audit", log.status().message());
  const std::string subject =
      log_flags.brokers.empty() ? data_dir.string() : "Kafka topic " + log_flags.topic;
  std::unique_ptr<Views> views;
  std::string views_unread;  // why views that are there are not compared
  const fs::path views_dir = data_dir / "views";
  if (!data_dir_flag.empty() && fs::exists(views_dir)) {
    auto v = Views::open(views_dir.string(), log.value()->partitions());
    if (v)
      views = std::move(v).value();
    else if (v.status().kind() == ErrorKind::other_format)
      views_unread = v.status().message();
    else
      return cannot_run("audit", explain_lock(v.status().message()));
  }

  ProgressBar bar(show_progress(progress_flag));
  auto progress = [&](std::string_view phase, std::uint64_t done, std::uint64_t total) {
    bar.update(phase, done, total);
  };
  auto report = audit::audit_log(*log.value(), options, progress);
  if (!report) {
    bar.finish();
    return cannot_run("audit", "reading the log: " + report.status().message());
  }
  if (!views) {
    report->views.note = data_dir_flag.empty()   ? "not checked: no --data-dir with views given"
                         : !views_unread.empty() ? "not checked: " + views_unread
                                                 : "not checked: " + views_dir.string() + " does not exist";
  } else if (!report->clean()) {
    report->views.note = "not compared: the log itself has violations";
  } else {
    const fs::path scratch = scratch_views(data_dir, "audit");
    if (auto s = audit::audit_views(*log.value(), *views, scratch, report.value(), progress); !s) {
      bar.finish();
      return cannot_run("audit", "rebuilding the views to compare them: " + s.message());
    }
  }
  bar.finish();

  std::cout << "kobo audit of " << subject << "\n" << audit::summary(report.value()) << std::flush;
  if (!json_file.empty()) {
    std::ofstream out(json_file, std::ios::trunc);
    out << audit::to_json(report.value()).dump(2) << "\n";
    out.close();
    if (!out) return cannot_run("audit", "cannot write " + json_file);
  }
  return report->clean() ? kExitDone : kExitViolations;
}

int run_replay(const std::string& data_dir_flag, const KafkaFlags& log_flags, bool progress_flag) {
  const fs::path data_dir(data_dir_flag);
  auto log = open_log(data_dir, log_flags);
  if (!log) return cannot_run("replay", log.status().message());
  const fs::path live = data_dir / "views";
  if (fs::exists(live)) {
    // Opening takes RocksDB's lock: a server on this data dir makes it fail here, not mid-swap.
    // Views of another key layout are what a replay is for: they are replaced.
    auto v = Views::open(live.string(), log.value()->partitions());
    if (!v && v.status().kind() != ErrorKind::other_format)
      return cannot_run("replay", explain_lock(v.status().message()));
  }
  auto ends = log.value()->end_offsets();
  if (!ends) return cannot_run("replay", ends.status().message());
  std::uint64_t records = 0;
  for (Offset o : ends.value()) records += o.value;

  ProgressBar bar(show_progress(progress_flag));
  const auto started = std::chrono::steady_clock::now();
  auto rebuilt = rebuild_views_beside(data_dir, *log.value(), ends.value(),
                                      [&](std::uint64_t applied) { bar.update("replay", applied, records); });
  bar.finish();
  if (!rebuilt) {
    std::cerr << "kobo replay: the log cannot be applied to the views: " << rebuilt.status().message()
              << "\n(`kobo audit` says where the log is wrong)" << std::endl;
    return kExitViolations;
  }
  const std::uint64_t events = rebuilt->events;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (auto s = swap_in_views(live, rebuilt->path); !s) return cannot_run("replay", s.message());
  std::cout << "kobo replay: rebuilt " << live.string() << " from " << events << " events in " << std::fixed
            << std::setprecision(2) << seconds << " s (" << per_second(events, seconds) << " events/s)"
            << std::endl;
  return kExitDone;
}

}  // namespace

std::optional<int> AuditCommands::run() const {
  if (audit_->parsed()) {
    auto signatures = signature_options(audit_flags_.verify_key, audit_flags_.verified_before,
                                        audit_flags_.unsigned_max_age_s);
    if (!signatures) return cannot_run("audit", signatures.status().message());
    audit::AuditOptions options;
    options.signatures = std::move(signatures).value();
    options.scratch_dir = audit_flags_.scratch_dir;
    return run_audit(audit_flags_.data_dir, audit_flags_.log, audit_flags_.json_file, audit_flags_.progress,
                     options);
  }
  if (replay_->parsed()) return run_replay(replay_flags_.data_dir, replay_flags_.log, replay_flags_.progress);
  return std::nullopt;
}

}  // namespace kobo
