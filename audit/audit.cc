#include "audit/audit.h"

#include <chrono>
#include <iomanip>
#include <sstream>

#include "audit/model.h"
#include "audit/scratch_index.h"
#include "audit/signatures.h"
#include "events/log_follower.h"
#include "projection/rebuild.h"

namespace kobo::audit {

namespace fs = std::filesystem;
using nlohmann::json;

Result<AuditReport> audit_log(EventLog& log, const AuditOptions& options, const AuditProgress& progress) {
  const auto started = std::chrono::steady_clock::now();
  AuditReport report;
  report.partitions = log.partitions();
  auto ends = log.end_offsets();
  if (!ends) return ends.status();
  std::uint64_t total = 0;
  for (Offset o : ends.value()) total += o.value;

  std::error_code ec;
  const fs::path scratch_dir =
      options.scratch_dir.empty() ? fs::temp_directory_path(ec) : options.scratch_dir;
  if (ec) return Status::error("no temporary directory for the audit's scratch index: " + ec.message());
  auto scratch = ScratchIndex::open(scratch_dir, options.scratch_cache_bytes);
  if (!scratch) return scratch.status();

  std::optional<SignatureAuditor> signed_checks;
  if (options.signatures) signed_checks.emplace(log.partitions(), *options.signatures, report);
  LogAuditor auditor(log.partitions(), report, *scratch.value(), signed_checks ? &*signed_checks : nullptr);
  LogFollower follower(log, LogFollowerOptions{.require_canonical_form = true});
  if (auto s = follower.open(); !s) return s;
  const auto s = follower.follow_to(auditor, ends.value(), [&] {
    if (progress) progress("log", follower.records_read(), total);
  });
  if (!s) return s;
  if (auto f = auditor.finish(); !f) return f;
  report.records = follower.records_read();
  report.events = follower.events_accepted();

  // Names used again: a second read of the log, as far as the last of them, says what was used.
  if (!auditor.reuses().empty()) {
    ReuseNamer namer(auditor.reuses(), report);
    LogFollower again(log, LogFollowerOptions{.require_canonical_form = true});
    if (auto o = again.open(); !o) return o;
    while (!namer.done() && !again.reached(ends.value())) {
      auto step = again.step(namer, std::chrono::milliseconds(0), &ends.value());
      if (!step) return step.status();
      if (progress) progress("reuses", again.records_read(), total);
    }
    namer.finish();
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

Result<AuditReport> audit_log(EventLog& log, const AuditProgress& progress) {
  return audit_log(log, AuditOptions{}, progress);
}

Result<AuditReport> audit_log(EventLog& log, const SignatureOptions& signatures,
                              const AuditProgress& progress) {
  AuditOptions options;
  options.signatures = signatures;
  return audit_log(log, options, progress);
}

Result<std::vector<VerifiedCheckpoint>> verified_checkpoints(const json& report) {
  std::vector<VerifiedCheckpoint> out;
  const auto bad = [] { return Status::error("the report lists no verified checkpoints (signatures.last)"); };
  if (!report.is_object() || !report.contains("signatures") || !report["signatures"].is_object() ||
      !report["signatures"].contains("last") || !report["signatures"]["last"].is_array())
    return bad();
  for (const json& c : report["signatures"]["last"]) {
    if (!c.is_object() || !c.contains("partition") || !c["partition"].is_number_unsigned() ||
        !c.contains("seq") || !c["seq"].is_number_unsigned() || !c.contains("hash") || !c["hash"].is_string())
      return bad();
    out.push_back(VerifiedCheckpoint{Partition(c["partition"].get<std::uint32_t>()),
                                     Seq(c["seq"].get<std::uint64_t>()), c["hash"].get<std::string>()});
  }
  return out;
}

namespace {

std::string shorten(const std::optional<std::string>& v) {
  constexpr std::size_t kShown = 300;
  if (!v) return "nothing";
  if (v->size() <= kShown) return *v;
  return v->substr(0, kShown) + "…";
}

}  // namespace

Status audit_views(EventLog& log, const Views& actual, const fs::path& scratch, AuditReport& report,
                   const AuditProgress& progress) {
  const auto read = actual.positions();
  if (!read) return read.status();
  const std::vector<ViewPosition>& positions = read.value();
  auto ends = log.end_offsets();
  if (!ends) return ends.status();
  if (positions.size() != ends.value().size())
    return Status::error("the views and the log disagree on partitions");
  std::vector<Offset> until;
  std::uint64_t behind = 0, target_events = 0;
  bool ahead = false;
  for (std::uint32_t p = 0; p < positions.size(); ++p) {
    const Offset at = positions[p].next_offset, end = ends.value()[p];
    until.push_back(at);
    target_events += positions[p].last_seq.value;
    if (at > end) {
      ahead = true;
      report.add(Violation{Check::views,
                           Partition(p),
                           positions[p].last_seq,
                           at,
                           {},
                           "the views are at offset " + std::to_string(at.value) + " of partition " +
                               std::to_string(p) + ", past the log's end at " + std::to_string(end.value)});
    } else {
      behind += end.value - at.value;
    }
  }
  if (ahead) {
    report.views.note = "not compared: the views are ahead of the log";
    return {};
  }
  // Behind in events where the audit read the log: a Kafka partition's end offset counts the
  // marker of its last transaction, which holds no event.
  if (report.last_seqs.size() == positions.size()) {
    behind = 0;
    for (std::uint32_t p = 0; p < positions.size(); ++p)
      if (report.last_seqs[p] > positions[p].last_seq)
        behind += report.last_seqs[p].value - positions[p].last_seq.value;
  }
  report.views.caught_up = behind == 0;

  auto rebuilt = rebuild_views(log, scratch, until, [&](std::uint64_t applied) {
    if (progress) progress("views", applied, target_events);
  });
  if (!rebuilt) {
    std::error_code ec;
    fs::remove_all(scratch, ec);
    return rebuilt.status();
  }
  const ViewsDiff diff = compare_views(*rebuilt.value(), actual);
  rebuilt.value().reset();
  std::error_code ec;
  fs::remove_all(scratch, ec);

  report.views.checked = true;
  report.views.keys_compared = diff.keys_compared;
  if (!report.views.caught_up)
    report.views.note =
        "the views are " + std::to_string(behind) + " events behind the log; compared at their position";
  for (const ViewDifference& d : diff.listed)
    report.add(Violation{Check::views, std::nullopt, std::nullopt, std::nullopt, d.key,
                         "the log gives " + shorten(d.expected) + ", the views have " + shorten(d.actual)});
  report.violation_count += diff.differences - diff.listed.size();
  if (diff.differences > diff.listed.size())
    report.note(std::to_string(diff.differences - diff.listed.size()) + " more view keys differ");
  return {};
}

json to_json(const AuditReport& r) {
  json violations = json::array();
  for (const Violation& v : r.violations) {
    json j{{"check", to_string(v.check)}, {"reason", v.reason}};
    if (v.partition) j["partition"] = v.partition->value;
    if (v.seq) j["seq"] = v.seq->value;
    if (v.offset) j["offset"] = v.offset->value;
    if (!v.key.empty()) j["key"] = v.key;
    violations.push_back(std::move(j));
  }
  json system = json::object();
  for (const auto& [account, balance] : r.system) system[account] = balance.value;
  json checkpoints = json::array();
  for (const VerifiedCheckpoint& c : r.signatures.last)
    checkpoints.push_back(json{{"partition", c.partition.value}, {"seq", c.seq.value}, {"hash", c.hash}});
  return json{
      {"clean", r.clean()},
      {"partitions", r.partitions},
      {"records", r.records},
      {"events", r.events},
      {"commands", r.commands},
      {"duplicatesSkipped", r.duplicates},
      {"zombiesSkipped", r.zombies},
      {"businesses", r.businesses},
      {"accounts", r.accounts},
      {"wallets", r.wallets},
      {"transactions", r.transactions},
      {"balances",
       {{"wallets", {{"test", r.wallets_test.value}, {"live", r.wallets_live.value}}}, {"system", system}}},
      {"views",
       {{"checked", r.views.checked},
        {"caughtUp", r.views.caught_up},
        {"keysCompared", r.views.keys_compared},
        {"note", r.views.note}}},
      {"signatures",
       {{"checked", r.signatures.checked},
        {"key", r.signatures.key},
        {"checkpointsVerified", r.signatures.checkpoints},
        {"unsignedEvents", r.signatures.unsigned_events},
        {"last", std::move(checkpoints)}}},
      {"seconds", r.seconds},
      {"eventsPerSecond", r.seconds > 0 ? static_cast<double>(r.records) / r.seconds : 0.0},
      {"violationCount", r.violation_count},
      {"violations", std::move(violations)},
      {"notes", r.notes},
  };
}

namespace {

std::string grouped(std::int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string grouped(std::uint64_t v) { return grouped(static_cast<std::int64_t>(v)); }

}  // namespace

std::string summary(const AuditReport& r, std::size_t listed_max) {
  std::ostringstream out;
  out << "events:     " << grouped(r.events) << " in " << r.partitions << " partitions ("
      << grouped(r.records) << " records, " << grouped(r.commands) << " commands";
  if (r.duplicates > 0) out << ", " << grouped(r.duplicates) << " duplicates skipped";
  if (r.zombies > 0) out << ", " << grouped(r.zombies) << " fenced-writer events skipped";
  out << "), read in " << std::fixed << std::setprecision(2) << r.seconds << " s";
  if (r.seconds > 0)
    out << " (" << grouped(static_cast<std::uint64_t>(static_cast<double>(r.records) / r.seconds))
        << " events/s)";
  out << "\nrecords:    " << grouped(r.businesses) << " businesses, " << grouped(r.accounts) << " accounts, "
      << grouped(r.wallets) << " wallets, " << grouped(r.transactions) << " transactions\n";
  Kobo sum = r.wallets_test + r.wallets_live;
  out << "balances:   wallets " << grouped(r.wallets_test.value) << " kobo (test), "
      << grouped(r.wallets_live.value) << " kobo (live)";
  for (const auto& [account, balance] : r.system) {
    out << "; " << account << " " << grouped(balance.value);
    sum += balance;
  }
  out << "; sum " << grouped(sum.value) << "\n";
  out << "views:      ";
  if (r.views.checked) {
    out << "compared " << grouped(r.views.keys_compared) << " keys with a rebuild from the log"
        << (r.views.caught_up ? " (the views are at the end of the log)" : "");
    if (!r.views.note.empty()) out << "; " << r.views.note;
  } else {
    out << (r.views.note.empty() ? "not checked" : r.views.note);
  }
  if (r.signatures.checked)
    out << "\nsignatures: " << grouped(r.signatures.checkpoints)
        << " checkpoints verified with the writer key, " << grouped(r.signatures.unsigned_events)
        << " events after the last ones";
  out << "\nviolations: " << (r.clean() ? "none" : grouped(r.violation_count)) << "\n";
  std::size_t shown = 0;
  for (const Violation& v : r.violations) {
    if (shown == listed_max) break;
    ++shown;
    out << "  [" << to_string(v.check) << "]";
    if (v.partition) out << " partition " << v.partition->value;
    if (v.seq) out << " seq " << v.seq->value;
    if (!v.key.empty()) out << " " << v.key;
    out << ": " << v.reason << "\n";
  }
  if (r.violation_count > shown)
    out << "  … and " << grouped(r.violation_count - shown) << " more (see --json)\n";
  return out.str();
}

}  // namespace kobo::audit
