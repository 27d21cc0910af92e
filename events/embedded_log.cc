#include "events/embedded_log.h"

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <thread>
#include <vector>

#include "events/append_signal.h"
#include "events/rocksdb_logger.h"

namespace kobo {
namespace {

constexpr char kEventPrefix = 'e';
constexpr std::string_view kPartitionsKey = "m:partitions";

void put_be(std::string& out, std::uint64_t v, int bytes) {
  KOBO_ASSERT(bytes >= 1 && bytes <= 8 && (bytes == 8 || v >> (8 * bytes) == 0), "the value fits its bytes");
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint64_t get_be(const char* p, int bytes) {
  KOBO_ASSERT(p != nullptr && bytes >= 1 && bytes <= 8, "a big-endian integer of 1 to 8 bytes");
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  KOBO_ASSERT(bytes == 8 || v >> (8 * bytes) == 0, "a value read fits the bytes it was read from");
  return v;
}

std::string event_key(Partition p, Offset o) {
  std::string k(1, kEventPrefix);
  put_be(k, p.value, 4);
  put_be(k, o.value, 8);
  KOBO_ASSERT(k.size() == 13, "an event key is its prefix, partition and offset");  // readers check the size
  KOBO_ASSERT(get_be(k.data() + 1, 4) == p.value && get_be(k.data() + 5, 8) == o.value,
              "an event key reads back as its partition and offset");
  return k;
}

// Free space a log that ran out of it waits for before it writes again.
constexpr std::uintmax_t kFreeBytesToResume = 4 << 20;

// The events this process appended last, as the writer sealed them, by partition and offset
// (embedded_log.h): a ring per partition of embedded_recent_events() slots, each holding the
// offset it was given for. A ring this small is still warm in the cache when a slot is reused,
// so the writer's thread, which frees what it overwrites, pays little for it. Thread-safe.
constexpr std::size_t kRecentEventsMax = 1024;
constexpr std::size_t kRecentSlotsMin = 128;

class RecentEvents {
 public:
  explicit RecentEvents(std::uint32_t partitions)
      : slots_(embedded_recent_events(partitions)), rings_(partitions) {
    KOBO_ASSERT(partitions > 0, "a ring per partition of a log of one partition at least");
  }

  // After a durable append: `batch[i]` is at offsets[i]. Events the writer did not give are
  // left out (their slots keep nothing older under a newer offset: see find()).
  void remember(std::span<const EncodedEvent> batch, const std::vector<std::uint64_t>& offsets) {
    KOBO_ASSERT(batch.size() == offsets.size(), "an offset per event appended");
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      KOBO_ASSERT(batch[i].event == nullptr || (batch[i].event->partition == batch[i].partition &&
                                                batch[i].event->seq == batch[i].seq),
                  "a record's event is the one its bytes were sealed from");
      Slot& slot = slot_of(batch[i].partition.value, offsets[i]);
      slot.offset = offsets[i];
      slot.event = batch[i].event;
    }
  }

  // The event at `offset` of partition p, when the ring still holds it; null otherwise.
  std::shared_ptr<const Event> find(std::uint32_t p, std::uint64_t offset) {
    std::lock_guard lock(mu_);
    Slot& slot = slot_of(p, offset);
    return slot.offset == offset ? slot.event : nullptr;
  }

 private:
  struct Slot {
    std::uint64_t offset = UINT64_MAX;
    std::shared_ptr<const Event> event;
  };
  Slot& slot_of(std::uint32_t p, std::uint64_t offset) {
    KOBO_ASSERT(p < rings_.size(), "a ring per partition of the log");
    auto& ring = rings_[p];
    if (ring.empty()) ring.resize(slots_);
    return ring[offset % slots_];
  }

  const std::size_t slots_;
  std::mutex mu_;
  std::vector<std::vector<Slot>> rings_;  // guarded by mu_; a ring is sized at its first use
};

class EmbeddedLogImpl final : public EventLog {
 public:
  EmbeddedLogImpl(std::unique_ptr<rocksdb::DB> db, rocksdb::Options options, std::string path,
                  std::uint32_t partitions, bool sync, std::string secondary_dir)
      : db_(std::move(db)),
        options_(std::move(options)),
        path_(std::move(path)),
        secondary_dir_(std::move(secondary_dir)),
        partitions_(partitions),
        sync_(sync),
        ends_(partitions),
        recent_(partitions) {
    KOBO_ASSERT(partitions_ > 0 && db_ != nullptr, "an open log of one partition at least");
  }

  ~EmbeddedLogImpl() override {
    db_.reset();
    if (!secondary_dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(secondary_dir_, ec);
    }
  }

  // Where each partition ends, from the database: at open, and for a read-only log each time
  // it catches up with the writer.
  Status scan_ends() {
    std::shared_lock lock(db_mu_);
    if (!secondary_dir_.empty()) {
      const auto s = db_->TryCatchUpWithPrimary();
      if (!s.ok()) return Status::error("log catch-up: " + s.ToString());
    }
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    for (std::uint32_t p = 0; p < partitions_; ++p) {
      it->SeekForPrev(event_key(Partition(p), Offset(UINT64_MAX)));
      if (it->Valid() && it->key().size() == 13 && it->key()[0] == kEventPrefix &&
          get_be(it->key().data() + 1, 4) == p)
        ends_[p].store(get_be(it->key().data() + 5, 8) + 1);
    }
    KOBO_ASSERT(ends_.size() == partitions_, "an end per partition");
    if (!it->status().ok()) return Status::error("log scan: " + it->status().ToString());
    return {};
  }
  bool read_only() const { return !secondary_dir_.empty(); }

  bool shares_appended_events() const override { return !read_only(); }

  std::uint32_t partitions() const override {
    KOBO_ASSERT(partitions_ > 0 && ends_.size() == partitions_,
                "a log has its partitions and an end for each");
    return partitions_;
  }

  Status append(std::span<const EncodedEvent> batch) override {
    if (read_only()) return Status::error("log append: this log was opened read-only");
    std::lock_guard lock(append_mu_);
    std::vector<std::uint64_t> next(partitions_);
    for (std::uint32_t p = 0; p < partitions_; ++p) next[p] = ends_[p].load();
    rocksdb::WriteBatch wb;
    std::vector<std::uint64_t> offsets;
    offsets.reserve(batch.size());
    for (const EncodedEvent& e : batch) {
      KOBO_ASSERT(e.partition.value < partitions_, "append to a partition the log does not have");
      KOBO_ASSERT(!e.bytes.empty(), "the writer appends sealed events");
      offsets.push_back(next[e.partition.value]++);
      const auto s = wb.Put(event_key(e.partition, Offset(offsets.back())), e.bytes);
      if (!s.ok()) return Status::error("log batch: " + s.ToString());
    }
    KOBO_ASSERT(wb.Count() == batch.size(), "the write holds every event of the batch, once");
    // After a failed write RocksDB holds a background error, and writing again before
    // Resume() would trip its own assertion: the log refuses until reset_writer() clears it.
    if (write_failed_)
      return Status::error("log append: the log is not writable since an earlier failure", failed_kind_);
    rocksdb::WriteOptions wo;
    wo.sync = sync_;
    std::shared_lock db_lock(db_mu_);
    const auto s = db_->Write(wo, &wb);
    if (!s.ok()) {
      write_failed_ = true;
      failed_kind_ = s.IsNoSpace() ? ErrorKind::no_space : ErrorKind::other;
      return Status::error("log append: " + s.ToString(), failed_kind_);
    }
    std::uint64_t appended = 0;
    for (std::uint32_t p = 0; p < partitions_; ++p) {
      KOBO_ASSERT(next[p] >= ends_[p].load(), "a partition's end only moves forward");
      appended += next[p] - ends_[p].load();
      ends_[p].store(next[p]);
    }
    KOBO_ASSERT(appended == batch.size(), "every event of the batch took one offset");
    recent_.remember(batch, offsets);  // before readers are woken: they find it with the bytes
    signal_.notify();
    return {};
  }

  // Clears a failed write (a full disk that has room again, an I/O error that passed) by
  // reopening the database: RocksDB's own Resume() after a failed WAL write trips an assertion
  // in the WAL writer (a SIGABRT the simulation found), while a reopen starts a new WAL and recovers
  // from the old one exactly what was durable. Readers wait out the swap; while the database
  // cannot be opened they read nothing.
  Status reset_writer() override {
    std::lock_guard lock(append_mu_);
    if (!write_failed_) return {};
    // After a full disk, wait for room rather than reopen into the next failure: the writer
    // stays unavailable (507) and not ready until then, instead of flapping.
    if (failed_kind_ == ErrorKind::no_space) {
      std::error_code ec;
      const auto space = std::filesystem::space(path_, ec);
      if (!ec && space.available < kFreeBytesToResume)
        return Status::error("log: the disk has " + std::to_string(space.available) +
                                 " bytes free; writes resume at " + std::to_string(kFreeBytesToResume),
                             ErrorKind::no_space);
    }
    std::unique_lock db_lock(db_mu_);
    db_.reset();
    rocksdb::DB* raw = nullptr;
    const auto s = rocksdb::DB::Open(options_, path_, &raw);
    if (!s.ok())
      return Status::error("log reopen: " + s.ToString(), s.IsNoSpace() ? ErrorKind::no_space : failed_kind_);
    db_.reset(raw);
    write_failed_ = false;
    KOBO_ASSERT(db_ != nullptr, "a reopened log has its database");
    return {};
  }

  Result<std::unique_ptr<LogReader>> open_reader(std::vector<Offset> start) override;

  Result<std::vector<Offset>> end_offsets() override {
    if (read_only()) {
      if (auto s = scan_ends(); !s) return s;
    }
    std::vector<Offset> out;
    for (std::uint32_t p = 0; p < partitions_; ++p) out.emplace_back(ends_[p].load());
    KOBO_ASSERT(out.size() == partitions_, "an end offset per partition");
    return out;
  }

  // Runs f(db) under the lock a reopen takes; false when the database is closed (a reopen
  // that has not succeeded yet).
  template <typename F>
  bool with_db(F&& f) {
    std::shared_lock lock(db_mu_);
    if (!db_) return false;
    f(*db_);
    return true;
  }
  std::uint64_t end(std::uint32_t p) const {
    KOBO_ASSERT(p < partitions_, "the end of one of the log's partitions");
    return ends_[p].load();
  }
  const AppendSignal& signal() const { return signal_; }
  std::shared_ptr<const Event> recent(std::uint32_t p, std::uint64_t offset) {
    return recent_.find(p, offset);
  }

 private:
  std::shared_mutex db_mu_;  // exclusive only while reset_writer() reopens the database
  std::unique_ptr<rocksdb::DB> db_;
  const rocksdb::Options options_;
  const std::string path_;
  const std::string secondary_dir_;  // non-empty: a read-only secondary instance
  const std::uint32_t partitions_;
  const bool sync_;
  std::mutex append_mu_;
  bool write_failed_ = false;  // guarded by append_mu_
  ErrorKind failed_kind_ = ErrorKind::other;
  std::vector<std::atomic<std::uint64_t>> ends_;
  RecentEvents recent_;
  AppendSignal signal_;
};

class EmbeddedReader final : public LogReader {
 public:
  EmbeddedReader(EmbeddedLogImpl& log, std::vector<Offset> start) : log_(log), pos_(std::move(start)) {
    KOBO_ASSERT(pos_.size() == log_.partitions(), "a reader has a position per partition");
  }

  Status poll(std::size_t max_records, std::chrono::milliseconds timeout,
              std::vector<LogRecord>& out) override {
    const std::size_t before = out.size();
    KOBO_ASSERT(max_records > 0, "a poll asks for a record at least");
    if (log_.read_only()) {
      // Another process appends: catch up with it, and wait by polling.
      const auto until = std::chrono::steady_clock::now() + timeout;
      for (;;) {
        if (auto s = log_.scan_ends(); !s) return s;
        read_available(max_records, out);
        KOBO_ASSERT(out.size() - before <= max_records, "a poll returns no more records than asked");
        if (out.size() != before || std::chrono::steady_clock::now() >= until) return {};
        std::this_thread::sleep_for(
            std::min<std::chrono::milliseconds>(timeout, std::chrono::milliseconds(50)));
      }
    }
    const std::uint64_t generation = log_.signal().generation();
    read_available(max_records, out);
    if (out.size() == before && timeout.count() > 0) {
      log_.signal().wait_past(generation, timeout);
      read_available(max_records, out);
    }
    KOBO_ASSERT(out.size() - before <= max_records, "a poll returns no more records than asked");
    return {};
  }

  Offset position(Partition p) const override {
    KOBO_ASSERT(p.value < pos_.size(), "the position of one of the reader's partitions");
    return pos_[p.value];
  }

 private:
  void read_available(std::size_t max_records, std::vector<LogRecord>& out) {
    const std::size_t before = out.size();
    std::size_t budget = max_records;
    for (std::uint32_t p = 0; p < pos_.size() && budget > 0; ++p) {
      const std::uint64_t end = log_.end(p);
      if (pos_[p].value >= end || held_back(p)) continue;
      log_.with_db([&](rocksdb::DB& db) {
        std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(rocksdb::ReadOptions()));
        for (it->Seek(event_key(Partition(p), pos_[p])); it->Valid() && budget > 0 && pos_[p].value < end;
             it->Next()) {
          const auto key = it->key();
          if (key.size() != 13 || key[0] != kEventPrefix || get_be(key.data() + 1, 4) != p) break;
          const std::uint64_t offset = get_be(key.data() + 5, 8);
          KOBO_ASSERT(offset == pos_[p].value, "embedded log offsets are dense");
          out.push_back(
              LogRecord{Partition(p), Offset(offset), it->value().ToString(), log_.recent(p, offset)});
          pos_[p] = Offset(offset + 1);
          --budget;
          KOBO_ASSERT(pos_[p].value <= end, "a reader reads no further than its partition's end");
        }
      });
    }
    KOBO_ASSERT(out.size() - before == max_records - budget,
                "every record read is counted against the poll's");
  }

  EmbeddedLogImpl& log_;
  std::vector<Offset> pos_;
};

Result<std::unique_ptr<LogReader>> EmbeddedLogImpl::open_reader(std::vector<Offset> start) {
  if (start.size() != partitions_) return Status::error("reader needs one start offset per partition");
  return std::unique_ptr<LogReader>(std::make_unique<EmbeddedReader>(*this, std::move(start)));
}

}  // namespace

std::size_t embedded_recent_events(std::uint32_t partitions) {
  KOBO_ASSERT(partitions > 0, "a log of one partition at least");
  return std::max(kRecentSlotsMin, kRecentEventsMax / partitions);
}

Result<std::unique_ptr<EventLog>> open_embedded_log(const EmbeddedLogOptions& options) {
  std::error_code ec;
  if (!options.create_if_missing &&
      !std::filesystem::exists(std::filesystem::path(options.path) / "CURRENT", ec))
    return Status::error("no event log at " + options.path);
  std::filesystem::create_directories(options.path, ec);
  if (ec) return Status::error("create " + options.path + ": " + ec.message());
  rocksdb::Options o;
  o.create_if_missing = options.create_if_missing;
  // Events are JSON that repeats its member names, ids and hashes' prefixes: blocks compress
  // well. LZ4 where data is still being compacted, zstd where it comes to rest.
  o.compression = rocksdb::kLZ4Compression;
  o.bottommost_compression = rocksdb::kZSTD;
  // A write error is cleared by reset_writer() (the writer retries it every second), not by
  // RocksDB's own recovery thread, which would answer Resume() "busy" while it tries.
  o.max_bgerror_resume_count = 0;
  o.info_log = rocksdb_logger("log");
  if (options.env != nullptr) o.env = options.env;
  rocksdb::BlockBasedTableOptions table;
  table.block_size = std::size_t{16} * 1024;
  // The files' index blocks live in the block cache (32 MiB), partitioned under a pinned top
  // level, rather than in memory beside every open file: a log of 10M events would otherwise hold
  // megabytes of index for every file it ever wrote (guarantee 9, docs/architecture.md).
  table.block_cache = rocksdb::NewLRUCache(std::size_t{32} << 20, /*num_shard_bits=*/4);
  table.index_type = rocksdb::BlockBasedTableOptions::kTwoLevelIndexSearch;
  table.metadata_block_size = 4096;
  table.cache_index_and_filter_blocks = true;
  table.pin_top_level_index_and_filter = true;
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  rocksdb::DB* raw = nullptr;
  std::string secondary_dir;
  if (options.read_only) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kobo-log-reader-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr)
      return Status::error("log reader: cannot make a temporary directory");
    secondary_dir = tmpl;
    o.max_open_files = -1;  // a secondary instance must keep every file open
    const auto s = rocksdb::DB::OpenAsSecondary(o, options.path, secondary_dir, &raw);
    if (!s.ok()) {
      std::filesystem::remove_all(secondary_dir, ec);
      return Status::error("open log " + options.path + " to read: " + s.ToString());
    }
  } else {
    const auto s = rocksdb::DB::Open(o, options.path, &raw);
    if (!s.ok()) return Status::error("open log " + options.path + ": " + s.ToString());
  }
  std::unique_ptr<rocksdb::DB> db(raw);

  std::string stored;
  std::uint32_t partitions = options.partitions;
  const auto g = db->Get(rocksdb::ReadOptions(), kPartitionsKey, &stored);
  if (g.ok()) {
    if (partitions == 0) partitions = static_cast<std::uint32_t>(std::strtoul(stored.c_str(), nullptr, 10));
    if (partitions == 0 || std::to_string(partitions) != stored)
      return Status::error("log " + options.path + " has " + stored + " partitions, not " +
                           std::to_string(partitions));
  } else if (g.IsNotFound()) {
    if (partitions == 0 || options.read_only)
      return Status::error("log " + options.path + " does not say how many partitions it has");
    rocksdb::WriteOptions wo;
    wo.sync = true;
    const auto w = db->Put(wo, kPartitionsKey, std::to_string(partitions));
    if (!w.ok()) return Status::error("log meta: " + w.ToString());
  } else {
    return Status::error("log meta: " + g.ToString());
  }

  KOBO_ASSERT(partitions > 0, "a log of one partition at least");
  auto log = std::make_unique<EmbeddedLogImpl>(std::move(db), o, options.path, partitions, options.sync,
                                               std::move(secondary_dir));
  if (auto s = log->scan_ends(); !s) return s;
  KOBO_ASSERT(log->partitions() == partitions, "the log opened has the partitions it says");
  return std::unique_ptr<EventLog>(std::move(log));
}

}  // namespace kobo
