#include "app/data_dir.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <vector>

#include "common/log.h"
#include "events/embedded_log.h"
#include "events/kafka_log.h"

namespace kobo {

namespace fs = std::filesystem;

// Where this process builds a copy of the views beside the live ones: <data-dir>/views.<what>-<pid>.
// Copies that processes no longer running left there (killed mid-rebuild) are removed first, as
// they are as large as the views; a copy of a running process is left alone.
fs::path scratch_views(const fs::path& data_dir, std::string_view what) {
  std::error_code ec;
  std::vector<fs::path> left;
  for (const auto& entry : fs::directory_iterator(data_dir, ec)) {
    const std::string name = entry.path().filename().string();
    for (const std::string_view kind :
         {"views.rebuild-", "views.audit-", "views.join-", "views.checkpoint-"}) {
      if (!name.starts_with(kind)) continue;
      const std::string_view digits = std::string_view(name).substr(kind.size());
      pid_t pid = 0;
      const auto [end, parse] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
      if (parse == std::errc() && end == digits.data() + digits.size() && pid > 0 && ::kill(pid, 0) != 0 &&
          errno == ESRCH)
        left.push_back(entry.path());
    }
  }
  for (const fs::path& p : left) fs::remove_all(p, ec);
  fs::path path = data_dir / ("views." + std::string(what) + "-" + std::to_string(::getpid()));
  fs::remove_all(path, ec);
  return path;
}

Result<RebuiltViews> rebuild_views_beside(const fs::path& data_dir, EventLog& log,
                                          const std::vector<Offset>& until, const RebuildProgress& progress) {
  RebuiltViews out{scratch_views(data_dir, "rebuild")};
  auto views = rebuild_views(log, out.path, until, progress);
  if (!views) {
    std::error_code ec;
    fs::remove_all(out.path, ec);
    return views.status();
  }
  const auto positions = views.value()->positions();
  if (!positions) return positions.status();
  for (const ViewPosition& p : positions.value()) out.events += p.last_seq.value;
  return out;  // the views close here, before a swap
}

Result<std::unique_ptr<Views>> open_views(const fs::path& data_dir, EventLog& log) {
  const fs::path live = data_dir / "views";
  auto views = Views::open(live.string(), log.partitions());
  if (views || views.status().kind() != ErrorKind::other_format) return views;
  log::warn("rebuilding the views from the log before serving", {{"reason", views.status().message()}});
  auto rebuilt = rebuild_views_beside(data_dir, log);
  if (!rebuilt)
    return Status::error("rebuilding the views of another key layout: " + rebuilt.status().message());
  if (auto s = swap_in_views(live, rebuilt->path); !s) return s;
  log::info("the views are rebuilt", {{"events", rebuilt->events}});
  return Views::open(live.string(), log.partitions());
}

// RocksDB says "lock … Resource temporarily unavailable" when another process has the database.
std::string explain_lock(const std::string& message) {
  std::string lower = message;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower.find("lock") == std::string::npos) return message;
  return message + "\n(another process holds this data dir: stop `kobo serve` on it first)";
}

Result<std::unique_ptr<EventLog>> open_existing_log(const std::filesystem::path& data_dir,
                                                    bool beside_a_writer) {
  EmbeddedLogOptions o;
  o.path = (data_dir / "log").string();
  o.partitions = 0;  // as the log was created
  o.create_if_missing = false;
  o.read_only = beside_a_writer;
  auto log = open_embedded_log(o);
  if (!log) return Status::error(explain_lock(log.status().message()));
  return log;
}

Result<std::unique_ptr<EventLog>> open_log_to_read(const std::filesystem::path& data_dir,
                                                   const KafkaFlags& kafka, bool beside_a_writer) {
  if (!kafka.brokers.empty()) {
    auto k = kafka.log_options();
    if (!k) return k.status();
    k->writer = false;
    return open_kafka_log(k.value());
  }
  return open_existing_log(data_dir, beside_a_writer);
}

}  // namespace kobo
