#pragma once
// Rebuilding the views from the log (docs/architecture.md section 5: views are always rebuildable
// from the log), comparing two copies of the views key by key, and swapping a rebuilt copy in.
// `kobo replay` and `kobo audit` use these; the rebuild is an ordinary Projector (the same code
// that maintains the views incrementally, projection/apply.h) that writes files instead of
// batches, so the result can be compared byte for byte.
//
// Thread safety: each function uses its own Views and reader; none may run on views that a
// running Projector writes.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "events/event_log.h"
#include "projection/projector.h"
#include "projection/views.h"

namespace kobo {

// Called about ten times a second during a rebuild with the events applied so far.
using RebuildProgress = std::function<void(std::uint64_t events_applied)>;

// How a rebuild applies the log; the defaults are kobo replay's, and tests shrink them to make
// many files of a small log.
struct RebuildOptions {
  // Threads applying partitions in parallel (ProjectorOptions::lanes; 0: one per core).
  std::uint32_t lanes = 0;
  // The rows the lanes gather, all together, before each writes its share as a sorted file
  // (ProjectorOptions::ingest_bytes): about that much memory. The files of different lanes and
  // batches overlap, so RocksDB merges them all again; fewer, larger files merge less and leave
  // fewer files for a lane's reads to look through: on a log of a million transfers, 256 MiB
  // took a third less CPU than 64, and 512 MiB a tenth less than 256, once the reader fed the
  // other lanes while one wrote its file (docs/architecture.md, "Rebuilds write files").
  std::size_t file_bytes = std::size_t{512} << 20;
  // A run of keys in a lane's file of at least this many bytes is a file of its own
  // (ProjectorOptions::ingest_run_bytes, Views::ingest): a scope's events, which then rest at the
  // last level as they are ingested.
  std::size_t run_file_bytes = ProjectorOptions{}.ingest_run_bytes;
  // Log records read per poll (ProjectorOptions::poll_records_max); a lane writes a file only
  // between two commands, and sees where one ends once per poll.
  std::size_t poll_records_max = ProjectorOptions{}.poll_records_max;
  // Events a lane holds handed to it and not applied yet (ProjectorOptions::lane_events_max).
  std::size_t lane_events_max = ProjectorOptions{}.lane_events_max;
};

// Builds fresh views in `path` (which must not exist yet) from the start of the log up to
// until[p] in each partition p, or to the log's end as of the call when `until` is empty. The
// rows are written as sorted files the views ingest (Views::ingest).
[[nodiscard]] Result<std::unique_ptr<Views>> rebuild_views(EventLog& log, const std::filesystem::path& path,
                                                           const std::vector<Offset>& until = {},
                                                           const RebuildProgress& progress = {},
                                                           const RebuildOptions& shape = {});

struct ViewDifference {
  std::string key;                      // printable: see describe_view_key()
  std::optional<std::string> expected;  // nullopt: the key is missing there
  std::optional<std::string> actual;
};

struct ViewsDiff {
  std::uint64_t keys_compared = 0;     // keys in either copy
  std::uint64_t differences = 0;       // all of them
  std::vector<ViewDifference> listed;  // the first `listed_max`, in key order
};

// Every key whose value differs between the two copies, or that only one of them has.
ViewsDiff compare_views(const Views& expected, const Views& actual, std::size_t listed_max = 100);

// "positions/\x00\x00\x00\x03": which view a raw key belongs to, with its binary parts escaped
// (view_keys::describe).
std::string describe_view_key(std::string_view key);

// Puts `rebuilt` where `live` is, atomically where the filesystem allows it (renameat2
// RENAME_EXCHANGE), and removes the old copy. Neither directory may be open.
[[nodiscard]] Status swap_in_views(const std::filesystem::path& live, const std::filesystem::path& rebuilt);

}  // namespace kobo
