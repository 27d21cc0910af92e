#pragma once
// The data dir's log and views as the commands open them: the offline commands (`kobo audit`,
// `kobo replay`, `kobo events`) must never create a log and must say why a locked dir cannot be
// read; `kobo serve` opens views of another key layout by rebuilding them first.

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "app/kafka_flags.h"
#include "common/result.h"
#include "events/event_log.h"
#include "projection/rebuild.h"
#include "projection/views.h"

namespace kobo {

// The embedded log under data_dir/log, with as many partitions as it was created with; an
// error when there is none or another process holds it.
[[nodiscard]] Result<std::unique_ptr<EventLog>> open_existing_log(const std::filesystem::path& data_dir,
                                                                  bool beside_a_writer = false);

// The log an offline command reads: the Kafka topic when `kafka.brokers` is given (read only,
// with the flags' TLS and SASL settings), else data_dir/log. `beside_a_writer`: the embedded log
// is opened read-only beside a server that may be running on it (a RocksDB secondary instance),
// following its appends.
[[nodiscard]] Result<std::unique_ptr<EventLog>> open_log_to_read(const std::filesystem::path& data_dir,
                                                                 const KafkaFlags& kafka,
                                                                 bool beside_a_writer = false);

// Where this process builds a copy of the views beside the live ones: <data-dir>/views.<what>-<pid>
// (`kobo replay`'s rebuild, `kobo audit`'s, a checkpoint a new node receives (join) or one a
// peer makes for it (checkpoint)). Copies that processes no longer running left there (killed
// mid-rebuild) are removed first, as they are as large as the views; a copy of a running process
// is left alone.
std::filesystem::path scratch_views(const std::filesystem::path& data_dir, std::string_view what);

// A complete copy of the views rebuilt from `log` beside data_dir/views (in scratch_views(data_dir,
// "rebuild")), closed and ready for swap_in_views; `until` and `progress` as rebuild_views'. A
// rebuild that fails leaves no copy behind.
struct RebuiltViews {
  std::filesystem::path path;
  std::uint64_t events = 0;  // applied, over every partition
};
[[nodiscard]] Result<RebuiltViews> rebuild_views_beside(const std::filesystem::path& data_dir, EventLog& log,
                                                        const std::vector<Offset>& until = {},
                                                        const RebuildProgress& progress = {});

// data_dir/views, created when missing. Views in another key layout than this build's (written
// by an older kobo) are rebuilt from `log` first, in a scratch copy swapped in when complete, as
// `kobo replay` does: they are derived from the log, so an upgrade needs no step of its own.
[[nodiscard]] Result<std::unique_ptr<Views>> open_views(const std::filesystem::path& data_dir, EventLog& log);

// `message` with a hint when RocksDB refused the database because another process holds it.
std::string explain_lock(const std::string& message);

}  // namespace kobo
