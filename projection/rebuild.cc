#include "projection/rebuild.h"

#include <fcntl.h>
#include <rocksdb/db.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>

#include "common/file.h"
#include "projection/rows.h"
#include "projection/view_keys.h"

namespace kobo {

namespace fs = std::filesystem;

Result<std::unique_ptr<Views>> rebuild_views(EventLog& log, const fs::path& path,
                                             const std::vector<Offset>& until,
                                             const RebuildProgress& progress, const RebuildOptions& shape) {
  std::error_code ec;
  if (fs::exists(path, ec))
    return Status::error("cannot rebuild the views into " + path.string() + ": it exists");
  // Unlogged: a rebuild that does not finish is thrown away whole, so its writes need no
  // write-ahead log; they are flushed to disk before the views are handed over.
  auto views = Views::open(path.string(), log.partitions(), nullptr, ViewWrites::unlogged);
  if (!views) return views.status();
  KOBO_ASSERT(views.value()->partitions() == log.partitions(), "views rebuilt of the log's partitions");
  std::vector<Offset> target = until;
  if (target.empty()) {
    auto ends = log.end_offsets();
    if (!ends) return ends.status();
    target = ends.value();
  }
  {
    // Each lane writes its rows as sorted files that RocksDB ingests, so a rebuild costs the apply
    // and the sort, not the memtable.
    KOBO_ASSERT(shape.file_bytes > 0 && shape.run_file_bytes > 0 && shape.poll_records_max > 0 &&
                    shape.lane_events_max > 0,
                "a rebuild writes files of what it reads");
    ProjectorOptions options;
    options.ingest_bytes = shape.file_bytes;
    options.ingest_run_bytes = shape.run_file_bytes;
    options.poll_records_max = shape.poll_records_max;
    options.lane_events_max = shape.lane_events_max;
    options.lanes = shape.lanes;
    // The lanes share the partitions by what each holds up to the target (its records).
    for (const Offset& end : target) options.partition_events.push_back(end.value);
    Projector projector(log, *views.value(), options);
    // The projector applies on a worker so that this thread can report progress.
    auto done = std::async(std::launch::async, [&] { return projector.catch_up_to(target); });
    auto applied = [&] {
      std::uint64_t n = 0;
      for (std::uint32_t p = 0; p < log.partitions(); ++p) n += projector.applied_seq(Partition(p)).value;
      return n;
    };
    while (done.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready)
      if (progress) progress(applied());
    try {
      if (auto s = done.get(); !s) return s;
    } catch (const std::exception& e) {
      return Status::error(std::string("the log cannot be applied to the views: ") + e.what());
    }
    if (progress) progress(applied());
  }
  if (auto s = views.value()->flush(); !s) return s;
  return views;
}

std::string describe_view_key(std::string_view key) { return view_keys::describe(key); }

namespace {

// A projector's position is where its chain stands (seq, hash, epoch) plus the log offset it
// reads next. The offset can legitimately differ by the records that hold no event (Kafka's
// transaction markers), depending on whether the reader saw the end of the partition before it
// stopped, so positions are equal when everything but the offset is.
bool same_value(std::string_view key, const rocksdb::Slice& e, const rocksdb::Slice& a) {
  if (e == a) return true;
  if (!view_keys::is_position(key)) return false;
  auto pe = rows::decode_position(e.ToStringView());
  auto pa = rows::decode_position(a.ToStringView());
  if (!pe || !pa) return false;
  pe.value().next_offset = pa.value().next_offset = 0;
  return pe.value() == pa.value();
}

}  // namespace

ViewsDiff compare_views(const Views& expected, const Views& actual, std::size_t listed_max) {
  ViewsDiff diff;
  std::unique_ptr<rocksdb::Iterator> e(expected.db().NewIterator(rocksdb::ReadOptions()));
  std::unique_ptr<rocksdb::Iterator> a(actual.db().NewIterator(rocksdb::ReadOptions()));
  e->SeekToFirst();
  a->SeekToFirst();
  auto note = [&](std::string_view key, std::optional<std::string> ev, std::optional<std::string> av) {
    ++diff.differences;
    if (diff.listed.size() < listed_max)
      diff.listed.push_back(ViewDifference{describe_view_key(key), std::move(ev), std::move(av)});
  };
  while (e->Valid() || a->Valid()) {
    ++diff.keys_compared;
    const int order = !e->Valid() ? 1 : !a->Valid() ? -1 : e->key().compare(a->key());
    if (order < 0) {
      note(e->key().ToStringView(), e->value().ToString(), std::nullopt);
      e->Next();
    } else if (order > 0) {
      note(a->key().ToStringView(), std::nullopt, a->value().ToString());
      a->Next();
    } else {
      if (!same_value(e->key().ToStringView(), e->value(), a->value()))
        note(e->key().ToStringView(), e->value().ToString(), a->value().ToString());
      e->Next();
      a->Next();
    }
  }
  KOBO_ASSERT(e->status().ok() && a->status().ok(), "views scan failed");
  KOBO_ASSERT(diff.listed.size() <= listed_max && diff.listed.size() <= diff.differences,
              "a diff lists no more differences than it found, nor than asked");
  return diff;
}

Status swap_in_views(const fs::path& live, const fs::path& rebuilt) {
  std::error_code ec;
  const fs::path parent = live.parent_path().empty() ? fs::path(".") : live.parent_path();
  if (!fs::exists(live, ec)) {
    fs::rename(rebuilt, live, ec);
    if (ec) return Status::error("rename " + rebuilt.string() + " to " + live.string() + ": " + ec.message());
    return sync_directory(parent);
  }
  fs::path old = rebuilt;  // after an exchange, the old views are where the rebuilt ones were
  if (::renameat2(AT_FDCWD, rebuilt.c_str(), AT_FDCWD, live.c_str(), RENAME_EXCHANGE) != 0) {
    if (errno != EINVAL && errno != ENOSYS)
      return Status::error("swap " + rebuilt.string() + " with " + live.string() + ": " + error_text(errno));
    // No atomic exchange on this filesystem: two renames. A crash in between leaves no views,
    // which the next start rebuilds from the log.
    old = live.string() + ".old-" + std::to_string(::getpid());
    fs::rename(live, old, ec);
    if (ec) return Status::error("rename " + live.string() + ": " + ec.message());
    fs::rename(rebuilt, live, ec);
    if (ec) return Status::error("rename " + rebuilt.string() + " to " + live.string() + ": " + ec.message());
  }
  if (auto s = sync_directory(parent); !s) return s;
  fs::remove_all(old, ec);
  if (ec) return Status::error("remove the old views at " + old.string() + ": " + ec.message());
  return {};
}

}  // namespace kobo
