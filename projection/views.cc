#include "projection/views.h"

#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/checkpoint.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <filesystem>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <string_view>
#include <vector>

#include "common/thread.h"
#include "events/fact_codec.h"
#include "events/partitioner.h"
#include "events/rocksdb_logger.h"
#include "projection/bitmap.h"
#include "projection/list_index.h"
#include "projection/rows.h"
#include "projection/view_keys.h"

namespace kobo {

using nlohmann::json;
namespace l = view_keys::list;

Views::DbLock::DbLock() {
  pthread_rwlockattr_t attr;
  pthread_rwlockattr_init(&attr);
  pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_READER_NP);
  const int r = pthread_rwlock_init(&lock_, &attr);
  pthread_rwlockattr_destroy(&attr);
  KOBO_ASSERT(r == 0, "the views' lock is made");
}
Views::DbLock::~DbLock() {
  const int r = pthread_rwlock_destroy(&lock_);
  KOBO_ASSERT(r == 0, "the views' lock is not held when the views go");
}

namespace {
// Every epoch of every views in the process (Views::stripes_), so that a row a thread kept can
// never pass for one of other views, or of views opened since at the same address.
std::atomic<std::uint64_t> next_epoch{1};

// A row as this thread read it (Views::read), in the slot of its key's hash: a thread keeps at
// most kKeptRows rows of at most kKeptBytesMax bytes each, and a read of another key of the same
// slot replaces one.
struct KeptRow {
  std::uint64_t epoch = 0;  // 0: none (epochs start at 1)
  std::string key;
  std::optional<std::string> value;
};
constexpr std::size_t kKeptRows = 2048;
constexpr std::size_t kKeptBytesMax = 1024;
thread_local std::vector<KeptRow> kept_rows;
}  // namespace

Views::Views(std::unique_ptr<rocksdb::DB> db, std::string path, std::uint32_t partitions, rocksdb::Env* env,
             ViewWrites writes)
    : path_(std::move(path)),
      env_(env),
      writes_(writes),
      db_(std::move(db)),
      partitions_(partitions),
      stripes_(std::make_unique<std::atomic<std::uint64_t>[]>(kStripes)) {
  KOBO_ASSERT(partitions_ > 0, "views of a log with no partition");
  all_changed();
}

void Views::all_changed() const {
  const std::uint64_t epoch = next_epoch.fetch_add(1);
  for (std::size_t i = 0; i < kStripes; ++i) stripes_[i].store(epoch);
}
Views::~Views() = default;

namespace {

// The memtable insert hint's key: the run a key extends (view_keys::insert_run).
class InsertRuns final : public rocksdb::SliceTransform {
 public:
  const char* Name() const override { return "kobo.InsertRuns"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
    const auto run = view_keys::insert_run(std::string_view(key.data(), key.size()));
    KOBO_ASSERT(run.has_value() && *run <= key.size(), "a hint's run is a prefix of a key in its domain");
    return rocksdb::Slice(key.data(), *run);
  }
  bool InDomain(const rocksdb::Slice& key) const override {
    return view_keys::insert_run(std::string_view(key.data(), key.size())).has_value();
  }
};

rocksdb::Options views_options(rocksdb::Env* env) {
  rocksdb::Options o;
  if (env != nullptr) o.env = env;
  o.create_if_missing = true;
  // Rows repeat ids and names: zstd at level 1 in every level (on the views of 205k transfers,
  // 35% less CPU than zstd's default level for 1.3% more bytes; compaction shares the two cores
  // with everything), and where they come to rest with a dictionary trained on each file's rows
  // in blocks of 16 KiB. The upper levels were LZ4 once: after a 60 s full-speed run the views
  // then held 223 to 373 B per transfer, by how much had reached the last level, against 192 to
  // 204 B with zstd there too, for a transfer rate 0 to 5 % lower (three runs each; bench/RESULTS.md).
  o.compression = rocksdb::kZSTD;
  o.compression_opts.level = 1;
  o.bottommost_compression = rocksdb::kZSTD;
  o.bottommost_compression_opts.enabled = true;
  o.bottommost_compression_opts.level = 1;
  o.bottommost_compression_opts.max_dict_bytes = 16 << 10;
  o.bottommost_compression_opts.zstd_max_train_bytes = 100 * (16 << 10);
  // Most rows in the last level, where zstd is: with the level sizes fixed from L1 down, a
  // compaction leaves most of them in upper levels, in LZ4, for a long time.
  o.level_compaction_dynamic_level_bytes = true;
  rocksdb::BlockBasedTableOptions t;
  t.block_size = 16 << 10;
  t.block_cache = rocksdb::NewLRUCache(64 << 20);
  // A Bloom filter per file: the projector asks for keys that do not exist yet (a list's first
  // bitmap chunk of a value, a wallet's webhook row) and, without one, reads and decompresses a
  // block of every level to learn it.
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  // The projector writes a flush's keys in key order. With a hint kept per run of keys
  // (view_keys::insert_run: a wallet's statement, a scope's events, else a key's tag), a memtable
  // insert starts its search where the previous key of its run went instead of at the top of the
  // skip list, or, for a statement line, after another wallet's. RocksDB uses the hints only in
  // a write group of one batch: the batches of lanes that write at once go in concurrently, with
  // no hint. (Writing every group unconcurrently, so that all use them, measured no better under
  // HTTP transfers: projector CPU per transfer within the machine's noise, three pairs.)
  o.memtable_insert_with_hint_prefix_extractor = std::make_shared<InsertRuns>();
  // A memtable of 32 MiB, half RocksDB's default: most of a flush's keys land at random places
  // of its skip list (transactions, references, statements, wallets), and a shallower list costs
  // each insert fewer cache misses. Under HTTP transfer load the projector's CPU per transfer
  // fell 11 % (36.4 to 32.5 us, three runs each), while flushing twice as often cost RocksDB's
  // threads about as much (bench/RESULTS.md); 16 MiB moved more of the same work to them.
  o.write_buffer_size = std::size_t{32} << 20;
  // Nor is disk reserved ahead for the write-ahead log (RocksDB would take 1.1 memtables): the
  // views never sync it, so a reservation saves no metadata write, and on a small disk it takes
  // the room the event log needs (guarantee 8's test fills a 48 MiB disk).
  o.allow_fallocate = false;
  // Compaction keeps pace with the projector on any number of cores. RocksDB's two background jobs
  // (a flush and a compaction) suit two cores; on twelve the projector writes three times as fast,
  // one compaction thread falls behind through a full-speed run, and reads right after it search
  // more files while it catches up: GETs ran at 0.47 to 0.60 of their rate at rest in the first
  // 5 s after a 30 s run, and at 0.72 and 0.81 with a job per two cores and a level-0 compaction
  // split over a quarter of them (for 5 % fewer transfers during the run; bench/cores_bench.sh,
  // bench/RESULTS.md); at 0.90 and 0.99 since a transfer writes 5 keys, not 7. Two cores keep
  // RocksDB's defaults.
  const int cores = static_cast<int>(cores_available());
  o.max_background_jobs = std::max(2, cores / 2);
  o.max_subcompactions = static_cast<std::uint32_t>(std::max(1, cores / 4));
  // A Bloom filter of the memtable's keys too (2 % of its size): the projector asks it for keys
  // that do not exist yet (a new amount's bitmap chunk), which a skip list answers only after a
  // search as long as an insert's.
  o.memtable_whole_key_filtering = true;
  o.memtable_prefix_bloom_size_ratio = 0.02;
  // RocksDB's file logger would write beside the views and abort once a full disk failed it.
  o.info_log = rocksdb_logger("views");
  o.max_bgerror_resume_count = 0;  // reopen() clears a write error
  return o;
}

// New views get the key layout's version (view_keys.h); views of another layout are refused, as
// their keys mean something else. Views without a version are of the first layout.
Status check_format(rocksdb::DB& db, const std::string& path, ViewWrites writes) {
  std::string stored;
  const auto s = db.Get(rocksdb::ReadOptions(), view_keys::kFormatKey, &stored);
  if (!s.ok() && !s.IsNotFound()) return Status::error("views read: " + s.ToString());
  if (s.IsNotFound()) {
    std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(rocksdb::ReadOptions()));
    it->SeekToFirst();
    if (!it->status().ok()) return Status::error("views read: " + it->status().ToString());
    if (!it->Valid()) {  // new views
      rocksdb::WriteOptions options;
      options.disableWAL = writes == ViewWrites::unlogged;  // as every write of these views (write())
      const auto w = db.Put(options, view_keys::kFormatKey, view_keys::kFormat);
      if (!w.ok())
        return Status::error("views write: " + w.ToString(),
                             w.IsNoSpace() ? ErrorKind::no_space : ErrorKind::other);
      return {};
    }
    stored = view_keys::kFirstFormat;
  }
  if (stored == view_keys::kFormat) return {};
  return Status::error("the views in " + path + " have key layout " + stored + ", this kobo reads layout " +
                           std::string(view_keys::kFormat) + ": rebuild them from the log (kobo replay)",
                       ErrorKind::other_format);
}

Status write_error(const rocksdb::Status& s, const char* what) {
  KOBO_ASSERT(!s.ok() && what != nullptr, "an error of a write that failed, named");
  return Status::error(std::string(what) + ": " + s.ToString(),
                       s.IsNoSpace() ? ErrorKind::no_space : ErrorKind::other);
}

}  // namespace

Result<std::unique_ptr<Views>> Views::open(const std::string& path, std::uint32_t partitions,
                                           rocksdb::Env* env, ViewWrites writes) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Status::error("create " + path + ": " + ec.message());
  rocksdb::DB* raw = nullptr;
  const auto s = rocksdb::DB::Open(views_options(env), path, &raw);
  if (!s.ok()) return Status::error("open views " + path + ": " + s.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  KOBO_ASSERT(db != nullptr, "RocksDB opened no database");
  if (auto f = check_format(*db, path, writes); !f) return f;
  return std::unique_ptr<Views>(new Views(std::move(db), path, partitions, env, writes));
}

Status Views::write(std::span<const ViewChange> changes) {
  rocksdb::WriteBatch batch;
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const ViewChange& c = changes[i];
    KOBO_ASSERT(i == 0 || changes[i - 1].key < c.key, "a batch's changes in strict key order");
    const auto s =
        batch.Put(rocksdb::Slice(c.key.data(), c.key.size()), rocksdb::Slice(c.value.data(), c.value.size()));
    KOBO_ASSERT(s.ok(), "WriteBatch put");
  }
  std::shared_lock lock(db_lock_);
  rocksdb::WriteOptions options;
  // A rebuild's write-ahead log would hold everything the memtables do, only to be thrown away.
  options.disableWAL = writes_ == ViewWrites::unlogged;
  const auto s = db_->Write(options, &batch);
  // After the write, failed or not: a row kept from before it is not used once it may be visible.
  const std::uint64_t epoch = next_epoch.fetch_add(1);
  for (const ViewChange& c : changes) stripes_[view_keys::KeyHash()(c.key) % kStripes].store(epoch);
  if (!s.ok()) return write_error(s, "views write");
  return {};
}

namespace {

// A file of a rebuild's batch.
struct IngestFile {
  std::span<const ViewChange> changes;
  bool run = false;  // a run of its own, at rest as ingested
};

// A rebuild's batch is cut where its runs (view_keys::insert_run) begin and end: a run of at
// least `run_file_bytes` is a file of its own, the keys between such runs one file each. A run
// that only grows at its end (a scope's events, most of a rebuild's bytes) then lies past every
// file of the batches before, and RocksDB ingests it straight to the last level, where no
// compaction rewrites it; the rest overlaps earlier batches and is merged by compaction.
std::vector<IngestFile> ingest_files(std::span<const ViewChange> changes, std::size_t run_file_bytes) {
  KOBO_ASSERT(!changes.empty(), "a batch cut into files has a change at least");
  const auto run_of = [](std::string_view key) {
    return key.substr(0, view_keys::insert_run(key).value_or(1));
  };
  std::vector<IngestFile> files;
  std::size_t file_begin = 0;  // where the keys between the runs of files of their own began
  std::size_t run_begin = 0;
  std::string_view run = run_of(changes.front().key);  // the run that began there
  std::size_t run_bytes = 0;
  for (std::size_t i = 0; i <= changes.size(); ++i) {
    const bool run_ends = i == changes.size() || run_of(changes[i].key) != run;
    // A tag's keys (a run of one byte) land all over its range: never a file of their own.
    if (run_ends && run_bytes >= run_file_bytes && run.size() > 1) {
      if (file_begin < run_begin) files.push_back({changes.subspan(file_begin, run_begin - file_begin)});
      files.push_back({changes.subspan(run_begin, i - run_begin), true});
      file_begin = i;
    }
    if (i == changes.size()) break;
    if (run_ends) {
      run_begin = i;
      run = run_of(changes[i].key);
      run_bytes = 0;
    }
    run_bytes += changes[i].key.size() + changes[i].value.size();
  }
  if (file_begin < changes.size()) files.push_back({changes.subspan(file_begin)});
  KOBO_ASSERT(
      !files.empty() && files.front().changes.data() == changes.data() &&
          files.back().changes.data() + files.back().changes.size() == changes.data() + changes.size(),
      "a batch's files hold its changes from the first to the last");
  return files;
}

}  // namespace

Status Views::ingest(std::span<const ViewChange> changes, std::size_t run_file_bytes) {
  if (changes.empty()) return {};
  KOBO_ASSERT(writes_ == ViewWrites::unlogged, "only views being rebuilt ingest files");
  // The keys are in strict order (ViewBatch::changes): SstFileWriter::Put refuses any other with
  // an error, not a file, so they are compared there and not once more here, in a pass that took
  // a cache miss a key (a rebuild ran 10 to 15 % faster without it, bench/RESULTS.md).
  static std::atomic<std::uint64_t> counter{0};
  std::vector<std::string> files;
  // The views' options, once for the batch's files, with no dictionary: the bottommost level's
  // dictionary options would otherwise apply to every file, a zstd dictionary trained on its
  // blocks, a seventh of a rebuild's CPU.
  rocksdb::Options file_options = views_options(env_);
  file_options.bottommost_compression_opts = rocksdb::CompressionOptions();
  file_options.compression_opts = rocksdb::CompressionOptions();
  file_options.compression_opts.level = 1;
  const auto write_file = [&](const IngestFile& file) -> Status {
    files.push_back(path_ + "/ingest-" + std::to_string(::getpid()) + "-" +
                    std::to_string(counter.fetch_add(1)) + ".sst");
    // A run of its own is written as it rests (zstd at level 1, as the views' levels are), as no
    // compaction rewrites it. The rest is LZ4, the cheapest to write: compaction moves it to rest
    // in zstd with its dictionary later, off the rebuild's critical path.
    file_options.compression = file.run ? rocksdb::kZSTD : rocksdb::kLZ4Compression;
    file_options.bottommost_compression = file_options.compression;
    rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), file_options);
    if (const auto s = writer.Open(files.back()); !s.ok()) return write_error(s, "views ingest: open a file");
    // The changes are in key order, their bytes scattered over the batch's memory: each key and
    // value is asked of the cache a few changes ahead, so that Put() seldom waits for one.
    constexpr std::size_t kAhead = 8;
    const std::span<const ViewChange> part = file.changes;
    for (std::size_t i = 0; i < part.size(); ++i) {
      if (i + kAhead < part.size()) {
        __builtin_prefetch(part[i + kAhead].key.data());
        __builtin_prefetch(part[i + kAhead].value.data());
      }
      const ViewChange& c = part[i];
      if (const auto s = writer.Put(rocksdb::Slice(c.key.data(), c.key.size()),
                                    rocksdb::Slice(c.value.data(), c.value.size()));
          !s.ok())
        return write_error(s, "views ingest: write a file");
    }
    if (const auto s = writer.Finish(); !s.ok()) return write_error(s, "views ingest: finish a file");
    return {};
  };
  // Files that could not be written whole (a full disk, keys out of order) or ingested are
  // removed, once their writers have closed them: nothing else would, as their names are none of
  // RocksDB's.
  const auto remove_files = [&] {
    std::error_code ec;
    for (const std::string& file : files) std::filesystem::remove(file, ec);
  };
  for (const IngestFile& file : ingest_files(changes, run_file_bytes)) {
    if (auto written = write_file(file); !written) {
      remove_files();
      return written;
    }
  }
  std::shared_lock lock(db_lock_);
  rocksdb::IngestExternalFileOptions options;
  options.move_files = true;
  // The files hold disjoint ranges in key order, ingested at once: all of the batch or none of it.
  const auto s = db_->IngestExternalFile(files, options);
  all_changed();
  if (!s.ok()) {
    remove_files();
    return write_error(s, "views ingest");
  }
  return {};
}

Status Views::flush() {
  std::shared_lock lock(db_lock_);
  KOBO_ASSERT(db_ != nullptr, "views without a database");
  const auto s = db_->Flush(rocksdb::FlushOptions());  // waits
  if (!s.ok()) return write_error(s, "views flush");
  return {};
}

Status Views::checkpoint(const std::string& dir) const {
  std::shared_lock lock(db_lock_);
  // reopen() never leaves the views without a database (it keeps the failed one instead).
  KOBO_ASSERT(db_ != nullptr && !dir.empty(), "a checkpoint of open views, somewhere");
  rocksdb::Checkpoint* raw = nullptr;
  if (const auto s = rocksdb::Checkpoint::Create(db_.get(), &raw); !s.ok())
    return Status::error("views checkpoint: " + s.ToString());
  const std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  const auto s = checkpoint->CreateCheckpoint(dir, /*log_size_for_flush=*/0);
  if (!s.ok()) return write_error(s, "views checkpoint");
  return {};
}

Result<std::optional<std::string>> Views::read(const std::string& key) const {
  KOBO_ASSERT(!key.empty(), "a view key has a tag");
  const std::size_t hash = view_keys::KeyHash()(key);
  // Taken before the read: a write that lands after it, of this row or not, moves the epoch on,
  // and what is kept here is not used again.
  const std::uint64_t epoch = stripes_[hash % kStripes].load();
  if (kept_rows.empty()) kept_rows.resize(kKeptRows);
  KeptRow& kept = kept_rows[hash % kKeptRows];
  if (kept.epoch == epoch && kept.key == key) return kept.value;
  auto found = read_to_change(key);
  if (!found) return found;
  if (key.size() + (found.value() ? found.value()->size() : 0) <= kKeptBytesMax) {
    kept.epoch = epoch;
    kept.key = key;
    kept.value = found.value();
  }
  return found;
}

Result<std::optional<std::string>> Views::read_to_change(const std::string& key) const {
  KOBO_ASSERT(!key.empty(), "a view key has a tag");
  std::shared_lock lock(db_lock_);
  std::string value;
  const auto s = db_->Get(rocksdb::ReadOptions(), key, &value);
  if (!s.ok() && !s.IsNotFound()) return Status::error("views read: " + s.ToString());
  std::optional<std::string> found;
  if (s.ok()) found = std::move(value);
  return found;
}

Status Views::reopen() {
  std::unique_lock lock(db_lock_);
  // Reads go on meanwhile against what is on disk: a read-only instance, opened before the
  // failed one is closed. When even that cannot open, the failed instance stays (RocksDB serves
  // reads in its error state) and the reopen is tried again later: db_ is never left empty.
  rocksdb::DB* ro = nullptr;
  if (const auto r = rocksdb::DB::OpenForReadOnly(views_options(env_), path_, &ro); !r.ok())
    return Status::error("reopen views: cannot open them to read meanwhile: " + r.ToString());
  std::unique_ptr<rocksdb::DB> reader(ro);
  db_.reset();
  rocksdb::DB* raw = nullptr;
  const auto s = rocksdb::DB::Open(views_options(env_), path_, &raw);
  if (!s.ok()) {
    db_ = std::move(reader);
    all_changed();
    return write_error(s, "reopen views");
  }
  db_.reset(raw);
  all_changed();
  KOBO_ASSERT(db_ != nullptr, "a reopen left no database");
  return {};
}

namespace {

// A record belongs to the scope's business and mode: those of the event that created it.
bool in_scope(const Event& e, const Scope& scope) {
  return e.business == scope.business && e.live == scope.live;
}

// The index of a page's first item; past the end of every list when it does not fit in 64 bits
// (a page number far beyond the end, which the API allows up to 2^63 - 1).
std::uint64_t first_index(const PageRequest& page) {
  KOBO_ASSERT(page.page >= 1 && page.per_page >= 1, "pages and their sizes count from 1");
  std::uint64_t first = 0;
  if (__builtin_mul_overflow(page.page - 1, page.per_page, &first)) return UINT64_MAX;
  return first;
}

template <typename T>
Result<std::optional<T>> decoded_row(const Result<std::optional<std::string>>& bytes,
                                     Result<T> (*decode)(std::string_view)) {
  if (!bytes) return bytes.status();
  if (!bytes.value()) return std::optional<T>();
  auto row = decode(*bytes.value());
  if (!row) return row.status();
  return std::optional<T>(std::move(row).value());
}

Result<std::optional<json>> parsed(Result<std::optional<std::string>> text) {
  if (!text) return text.status();
  if (!text.value()) return std::optional<json>();
  return std::optional<json>(json::parse(*text.value()));
}

}  // namespace

namespace {

// The integer ids of the transactions an event creates (events/ledger.h: its `ids`, one per record).
std::vector<std::uint64_t> transaction_numbers(const EventData& d) {
  return std::visit(
      [](const auto& x) -> std::vector<std::uint64_t> {
        if constexpr (requires { x.ids; }) {
          // validate() (decode_event, decode_fact) allows an id per wallet posting: 3 at most.
          KOBO_ASSERT(x.ids.size() <= 3, "an event numbers at most 3 records");
          return x.ids;
        } else {
          return {};
        }
      },
      d);
}

// An EventRow, decoded: where its records start, and what it holds.
struct EventRead {
  std::uint64_t first = 0;
  std::string hash;  // raw
  UnixMs delay = 0;
  std::uint64_t webhooks = 0;
  Event event;
};

Result<EventRead> event_read(std::string_view key, std::string_view bytes, std::uint64_t first) {
  auto row = rows::decode_event_row(bytes);
  if (!row) return row.status();
  auto e = decode_fact(row.value().fact);
  if (!e) return Status::error("views read " + view_keys::describe(key) + ": " + e.status().message());
  KOBO_ASSERT(row.value().hash.size() == rows::kHashSize, "an event row read holds its raw hash");
  return EventRead{first, std::string(row.value().hash), row.value().delay, row.value().webhooks,
                   std::move(e).value()};
}

// The event whose records start at `first` in the transaction list of `scope`.
Result<std::optional<EventRead>> read_event(const Views& views, const std::string& scope,
                                            std::uint64_t first) {
  const std::string key = view_keys::event(scope, first);
  const auto bytes = views.read(key);
  if (!bytes) return bytes.status();
  if (!bytes.value()) return std::optional<EventRead>();
  auto read = event_read(key, *bytes.value(), first);
  if (!read) return read.status();
  KOBO_ASSERT(read.value().first == first, "the event read is the one whose records start at `first`");
  return std::optional<EventRead>(std::move(read).value());
}

// The event of record `number` of the transaction list of `scope`: the last one at or before it.
Result<EventRead> event_of(rocksdb::DB& db, const std::string& scope, std::uint64_t number) {
  std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(rocksdb::ReadOptions()));
  const std::string prefix = view_keys::event_prefix(scope);
  it->SeekForPrev(view_keys::event(scope, number));
  if (!it->status().ok()) return Status::error("views scan: " + it->status().ToString());
  if (!it->Valid() || !it->key().starts_with(prefix))
    return Status::error("views: a transaction list misses record " + std::to_string(number));
  const std::string_view key(it->key().data(), it->key().size());
  auto read = event_read(key, std::string_view(it->value().data(), it->value().size()),
                         view_keys::get_be(key, prefix.size()));
  if (!read) return read.status();
  if (number - read.value().first >= transactions_created_count(read.value().event.data))
    return Status::error("views: a transaction list misses record " + std::to_string(number));
  KOBO_ASSERT(read.value().first <= number, "a record's event is at or before it");
  return read;
}

}  // namespace

// ---- keys and accounts -------------------------------------------------------------------------

Result<std::optional<KeyOwner>> Views::key_owner(std::string_view secret_key_hash) const {
  auto row = decoded_row(read(view_keys::key_owner(secret_key_hash)), &rows::decode_key);
  if (!row) return row.status();
  // A revoked key is no key any more: refused as an unknown one is.
  if (!row.value() || row.value()->revoked) return std::optional<KeyOwner>();
  KeyOwner k{std::move(row.value()->business), std::move(row.value()->account), row.value()->live, false,
             row.value()->expires_at};
  KOBO_ASSERT(!k.business.empty() && !k.account.empty(), "a key row names its business and account");
  // Only a live key needs the account's live flag; test keys, most requests, skip that read.
  if (!k.live) return std::optional<KeyOwner>(std::move(k));
  auto account = decoded_row(read(view_keys::account(k.account)), &rows::decode_account);
  if (!account) return account.status();
  if (account.value()) k.account_live = account.value()->live;
  return std::optional<KeyOwner>(std::move(k));
}

Result<std::optional<std::string>> Views::suspension(std::string_view business) const {
  auto row = read(view_keys::suspended(business));
  if (!row) return row.status();
  // `\1` and the reason while suspended, empty once resumed (apply.cc).
  if (!row.value() || row.value()->empty()) return std::optional<std::string>();
  if (row.value()->front() != '\1') return Status::error("a suspension row of the views is malformed");
  return std::optional<std::string>(row.value()->substr(1));
}

Result<std::optional<BusinessRateLimitsSet>> Views::rate_limits(std::string_view business) const {
  auto row = read(view_keys::rate_limits(business));
  if (!row) return row.status();
  if (!row.value()) return std::optional<BusinessRateLimitsSet>();
  auto fact = decode_fact(*row.value());
  if (!fact) return fact.status();
  const auto* limits = std::get_if<BusinessRateLimitsSet>(&fact->data);
  if (limits == nullptr || fact->business != business)
    return Status::error("a rate limits row of the views is not its business's BusinessRateLimitsSet");
  return std::optional<BusinessRateLimitsSet>(*limits);
}

Result<bool> Views::has_business(std::string_view id) const {
  const auto b = read(view_keys::business(id));
  if (!b) return b.status();
  return b.value().has_value();
}

Result<std::optional<std::string>> Views::account_business(std::string_view public_id) const {
  auto row = decoded_row(read(view_keys::account(public_id)), &rows::decode_account);
  if (!row) return row.status();
  if (!row.value()) return std::optional<std::string>();
  return std::optional<std::string>(std::move(row.value()->business));
}

Result<std::optional<rows::AccountKeysRow>> Views::account_keys(std::string_view account, bool live) const {
  return decoded_row(read(view_keys::account_keys(account, live)), &rows::decode_account_keys);
}

Result<std::optional<std::string>> Views::account_text(std::string_view business, std::string_view public_id,
                                                       bool live) const {
  auto row = decoded_row(read(view_keys::account(public_id)), &rows::decode_account);
  if (!row) return row.status();
  if (!row.value() || row.value()->business != business) return std::optional<std::string>();
  const auto registered = fact(view_keys::business(business), nullptr);
  if (!registered) return registered.status();
  if (!registered.value())
    return Status::error("views: account " + std::string(public_id) + " has no business");
  const auto* x = std::get_if<BusinessRegistered>(&registered.value()->data);
  if (x == nullptr || x->account.value != public_id) return std::optional<std::string>();
  KOBO_ASSERT(registered.value()->business == business, "an account's fact is of its business");
  return std::optional<std::string>(render::account(*registered.value(), *row.value(), live));
}

Result<std::optional<WebhookSettings>> Views::webhook_settings_at(std::string_view business,
                                                                  std::string_view public_id, bool live,
                                                                  Seq seq) const {
  std::shared_lock lock(db_lock_);
  // Both reads see one state: a change applied between them would be missing from one and in
  // the other (its `H` row and the account row are written in one batch).
  rocksdb::ManagedSnapshot snapshot(db_.get());
  rocksdb::ReadOptions options;
  options.snapshot = snapshot.snapshot();
  std::string bytes;
  if (const auto s = db_->Get(options, view_keys::account(public_id), &bytes); !s.ok())
    return s.IsNotFound() ? Result<std::optional<WebhookSettings>>(std::nullopt)
                          : Status::error("views read: " + s.ToString());
  const std::string prefix = view_keys::account_history_prefix(public_id);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(options));
  it->Seek(view_keys::account_history(public_id, seq.value + 1));
  if (it->Valid() && it->key().starts_with(prefix)) bytes.assign(it->value().data(), it->value().size());
  if (!it->status().ok()) return Status::error("views read: " + it->status().ToString());
  auto row = rows::decode_account(bytes);
  if (!row) return row.status();
  if (row.value().business != business) return std::optional<WebhookSettings>();
  const auto [urls, events] = rows::mode_webhooks(row.value(), live);
  return std::optional<WebhookSettings>(WebhookSettings{urls, events});
}

// A business's accounts are few (a business has one today): a list reads them all, filtering
// their rows, never rendered JSON.
Result<Page> Views::accounts(std::string_view business, bool live, const AccountFilter& filter,
                             const PageRequest& page) const {
  Page out;
  std::vector<std::string> ids;
  {
    const std::string prefix = view_keys::account_list_prefix(business);
    std::shared_lock lock(db_lock_);
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    for (it->SeekForPrev(prefix + std::string(9, '\xff')); it->Valid() && it->key().starts_with(prefix);
         it->Prev())
      ids.emplace_back(it->value().data(), it->value().size());
    if (!it->status().ok()) return Status::error("views scan: " + it->status().ToString());
  }
  const std::uint64_t first = first_index(page);
  KOBO_ASSERT(std::adjacent_find(ids.begin(), ids.end()) == ids.end(), "a business lists an account once");
  for (const std::string& id : ids) {
    auto row = decoded_row(read(view_keys::account(id)), &rows::decode_account);
    if (!row) return row.status();
    const auto registered = fact(view_keys::business(business), nullptr);
    if (!registered) return registered.status();
    if (!row.value() || !registered.value())
      return Status::error("views: account list names a missing account");
    const auto* x = std::get_if<BusinessRegistered>(&registered.value()->data);
    if (x == nullptr || x->account.value != id) return Status::error("views: an account of another business");
    if (filter.name && x->account_name != *filter.name) continue;
    if (filter.is_default && !*filter.is_default) continue;  // a business's one account is its default
    if (filter.live && row.value()->live != *filter.live) continue;
    if (out.total_count >= first && out.total_count - first < page.per_page)
      out.items.push_back(render::account(*registered.value(), *row.value(), live));
    ++out.total_count;
  }
  KOBO_ASSERT(out.items.size() <= page.per_page, "a page longer than asked");
  return out;
}

Result<std::optional<Event>> Views::fact(const std::string& key, const Scope* scope) const {
  const auto bytes = read(key);
  if (!bytes) return bytes.status();
  if (!bytes.value()) return std::optional<Event>();
  auto e = decode_fact(*bytes.value());
  if (!e) return Status::error("views read " + view_keys::describe(key) + ": " + e.status().message());
  if (scope != nullptr && !in_scope(e.value(), *scope)) return std::optional<Event>();
  KOBO_ASSERT(!e.value().business.empty(), "a fact names its business");
  return std::optional<Event>(std::move(e).value());
}

// ---- wallets -----------------------------------------------------------------------------------

Result<std::optional<std::string>> Views::render_wallet(std::string_view public_id,
                                                        const Scope* scope) const {
  const auto opening = fact(view_keys::wallet(public_id), scope);
  if (!opening) return opening.status();
  if (!opening.value()) return std::optional<std::string>();
  const auto facts = render::wallet_facts(*opening.value());
  if (!facts || facts->public_id != public_id) return std::optional<std::string>();  // another id's 16 bytes
  KOBO_ASSERT(facts->public_id == public_id, "the fact at a wallet's key is that wallet's opening");
  auto row = decoded_row(read(view_keys::wallet_row(public_id)), &rows::decode_wallet);
  if (!row) return row.status();
  if (!row.value()) return Status::error("views: wallet " + std::string(public_id) + " has no balance row");
  const ViewRecords records(*this);
  if (!render::can_render({&*opening.value(), 1}, records)) {
    if (!records.status()) return records.status();
    return Status::error("views: wallet " + std::string(public_id) + " names a wallet they do not have");
  }
  const auto limits = tier_limits(partition_for(opening.value()->business, partitions_));
  if (!limits) return limits.status();
  return std::optional<std::string>(
      render::wallet(*opening.value(), *row.value(), records, render::TierShown{&limits.value(), now_ms()}));
}

Result<TierLimits> Views::tier_limits(Partition p) const {
  const auto bytes = read(view_keys::tier_limits(p.value));
  if (!bytes) return bytes.status();
  // Views of a log written before tiers: its wallets have none, and the writer decides with the CBN's.
  if (!bytes.value()) return cbn_tier_limits();
  KOBO_ASSERT(p.value < partitions_, "tier limits of a partition the views lack");
  return rows::decode_tier_limits(*bytes.value());
}

Result<std::optional<json>> Views::wallet_by_account_number(std::string_view number) const {
  const auto id = read(view_keys::account_number(number));
  if (!id) return id.status();
  if (!id.value()) return std::optional<json>();
  return parsed(render_wallet(*id.value(), nullptr));
}

Result<std::optional<std::string>> Views::wallet_text(const Scope& scope, std::string_view public_id) const {
  // An empty business would be the partition's: its facts are no business's records.
  KOBO_ASSERT(!scope.business.empty(), "a record is read in the scope of a business");
  return render_wallet(public_id, &scope);
}

Result<Page> Views::wallets(const Scope& scope, const WalletFilter& filter, const PageRequest& page) const {
  if (filter.live && *filter.live != scope.live) return Page{};
  std::vector<std::pair<char, std::string>> filters;
  if (filter.category) filters.emplace_back(l::kCategory, *filter.category);
  if (filter.is_favourite) filters.emplace_back(l::kFavourite, *filter.is_favourite ? "true" : "false");
  KOBO_ASSERT(filters.size() <= 2, "a wallet list has two filters besides live");
  return listed_records(l::kWallets, scope, filters, page);
}

// ---- beneficiaries and holds -------------------------------------------------------------------

Result<std::optional<std::string>> Views::render_bank_account(std::string_view public_id,
                                                              const Scope* scope) const {
  const auto e = fact(view_keys::bank_account(public_id), scope);
  if (!e) return e.status();
  if (!e.value()) return std::optional<std::string>();
  const auto* x = std::get_if<BeneficiarySaved>(&e.value()->data);
  if (x == nullptr)
    return Status::error("views: bank account " + std::string(public_id) + " is not a beneficiary");
  if (x->bank_account.value != public_id) return std::optional<std::string>();
  KOBO_ASSERT(scope == nullptr || in_scope(*e.value(), *scope), "a record of another scope");
  return std::optional<std::string>(render::bank_account(*e.value(), *x));
}

Result<std::optional<std::string>> Views::bank_account_text(const Scope& scope,
                                                            std::string_view public_id) const {
  KOBO_ASSERT(!scope.business.empty(), "a record is read in the scope of a business");
  return render_bank_account(public_id, &scope);
}

Result<Page> Views::bank_accounts(const Scope& scope, const BankAccountFilter& filter,
                                  const PageRequest& page) const {
  if (filter.live && *filter.live != scope.live) return Page{};
  std::vector<std::pair<char, std::string>> filters;
  if (filter.account_name) filters.emplace_back(l::kAccountName, *filter.account_name);
  if (filter.beneficiary_type) filters.emplace_back(l::kBeneficiaryType, *filter.beneficiary_type);
  KOBO_ASSERT(filters.size() <= 2, "a beneficiary list has two filters besides live");
  return listed_records(l::kBeneficiaries, scope, filters, page);
}

Result<std::optional<std::string>> Views::render_hold(std::string_view public_id, const Scope* scope) const {
  const auto placement = fact(view_keys::hold(public_id), scope);
  if (!placement) return placement.status();
  if (!placement.value()) return std::optional<std::string>();
  const auto* x = std::get_if<HoldPlaced>(&placement.value()->data);
  if (x == nullptr)
    return Status::error("views: hold " + std::string(public_id) + " is not a hold's placement");
  if (x->hold.value != public_id) return std::optional<std::string>();
  auto row = decoded_row(read(view_keys::hold_row(public_id)), &rows::decode_hold);
  if (!row) return row.status();
  if (!row.value()) return Status::error("views: hold " + std::string(public_id) + " has no row");
  const std::string scope17 = view_keys::scope17(placement.value()->business, placement.value()->live);
  std::vector<Event> captures;
  captures.reserve(row.value()->captures.size());
  for (const std::uint64_t first : row.value()->captures) {
    auto event = read_event(*this, scope17, first);
    if (!event) return event.status();
    if (!event.value())
      return Status::error("views: hold " + std::string(public_id) + " names a capture they do not have");
    if (!std::holds_alternative<HoldCaptured>(event.value()->event.data))
      return Status::error("views: hold " + std::string(public_id) + " names a capture that is not one");
    captures.push_back(std::move(event.value()->event));
  }
  KOBO_ASSERT(captures.size() == row.value()->captures.size(), "a hold rendered with every capture");
  return std::optional<std::string>(render::hold(*placement.value(), *row.value(), captures));
}

Result<std::optional<std::string>> Views::hold_text(const Scope& scope, std::string_view public_id) const {
  KOBO_ASSERT(!scope.business.empty(), "a record is read in the scope of a business");
  return render_hold(public_id, &scope);
}

Result<Page> Views::holds(const Scope& scope, const HoldFilter& filter, const PageRequest& page) const {
  std::vector<std::pair<char, std::string>> filters;
  if (filter.source) filters.emplace_back(l::kSource, view_keys::id16(*filter.source));
  if (filter.status) filters.emplace_back(l::kHoldStatus, *filter.status);
  KOBO_ASSERT(filters.size() <= 2, "a hold list has two filters");
  return listed_records(l::kHolds, scope, filters, page);
}

// The times of a wallet, beneficiary or hold list: in its ListedRows.
class Views::ListedTimes final : public list_index::Times {
 public:
  ListedTimes(const Views& views, char kind, std::string scope)
      : views_(views), kind_(kind), scope_(std::move(scope)) {
    KOBO_ASSERT(scope_.size() == view_keys::kScopeSize, "a list's times are of one scope");
  }
  Result<UnixMs> time(std::uint64_t number) const override {
    auto row = listed(number);
    if (!row) return row.status();
    KOBO_ASSERT(!row.value().public_id.empty(), "a listed record read names its record");
    return row.value().time;
  }
  Result<UnixMs> latest(std::uint64_t number) const override {
    auto row = listed(number);
    if (!row) return row.status();
    KOBO_ASSERT(row.value().delay >= 0, "a record's latest time is not before its own");
    return row.value().time + row.value().delay;
  }

 private:
  Result<rows::ListedRow> listed(std::uint64_t number) const {
    auto row = decoded_row(views_.read(view_keys::listed(kind_, scope_, number)), &rows::decode_listed);
    if (!row) return row.status();
    if (!row.value()) return Status::error("views: a list misses its record " + std::to_string(number));
    return std::move(*row.value());
  }
  const Views& views_;
  const char kind_;
  const std::string scope_;
};

Result<Page> Views::listed_records(char kind, const Scope& scope,
                                   const std::vector<std::pair<char, std::string>>& filters,
                                   const PageRequest& page) const {
  Page out;
  const std::string scope17 = view_keys::scope17(scope.business, scope.live);
  auto list = decoded_row(read(view_keys::list_row(kind, scope17)), &rows::decode_list);
  if (!list) return list.status();
  if (!list.value()) return out;
  list_index::Query q;
  q.kind = kind;
  q.scope = scope17;
  for (const auto& [field, value] : filters)
    q.bitmaps.push_back(view_keys::bitmap(kind, scope17, field, l::value(value)));
  q.offset = first_index(page);
  q.limit = page.per_page;
  const ListedTimes times(*this, kind, scope17);
  KOBO_ASSERT(kind == l::kWallets || kind == l::kBeneficiaries || kind == l::kHolds,
              "a list of records of another kind");
  Result<list_index::Found> found = [&] {
    std::shared_lock lock(db_lock_);
    return list_index::find(*db_, q, *list.value(), &times);
  }();
  if (!found) return found.status();
  out.total_count = found.value().total;
  for (const std::uint64_t number : found.value().numbers) {
    auto row = decoded_row(read(view_keys::listed(kind, scope17, number)), &rows::decode_listed);
    if (!row) return row.status();
    if (!row.value()) return Status::error("views: a list misses its record " + std::to_string(number));
    const std::string& id = row.value()->public_id;
    auto text = kind == l::kWallets ? render_wallet(id, nullptr)
                : kind == l::kHolds ? render_hold(id, nullptr)
                                    : render_bank_account(id, nullptr);
    if (!text) return text.status();
    if (!text.value()) return Status::error("views: a list names a record they do not have: " + id);
    out.items.push_back(std::move(*text.value()));
  }
  KOBO_ASSERT(out.items.size() <= page.per_page, "a page longer than asked");
  KOBO_ASSERT(out.items.size() <= out.total_count, "a page holds some of the records the list counts");
  return out;
}

// ---- transactions ------------------------------------------------------------------------------

// The times of a transaction list: its records' events' (EventRow and fact).
class Views::EventTimes final : public list_index::Times {
 public:
  EventTimes(const Views& views, std::string scope) : views_(views), scope_(std::move(scope)) {
    KOBO_ASSERT(scope_.size() == view_keys::kScopeSize, "a transaction list's times are of one scope");
  }
  Result<UnixMs> time(std::uint64_t number) const override {
    auto e = at(number);
    if (!e) return e.status();
    return e.value().first;
  }
  Result<UnixMs> latest(std::uint64_t number) const override {
    auto e = at(number);
    if (!e) return e.status();
    KOBO_ASSERT(e.value().second >= 0, "an event's latest time is not before its own");
    return e.value().first + e.value().second;
  }

 private:
  // The time of record `number`'s event, and its delay.
  Result<std::pair<UnixMs, UnixMs>> at(std::uint64_t number) const {
    std::shared_lock lock(views_.db_lock_);
    std::unique_ptr<rocksdb::Iterator> it(views_.db_->NewIterator(rocksdb::ReadOptions()));
    const std::string prefix = view_keys::event_prefix(scope_);
    it->SeekForPrev(view_keys::event(scope_, number));
    if (!it->status().ok()) return Status::error("views scan: " + it->status().ToString());
    if (!it->Valid() || !it->key().starts_with(prefix))
      return Status::error("views: a transaction list misses record " + std::to_string(number));
    auto row = rows::decode_event_row(std::string_view(it->value().data(), it->value().size()));
    if (!row) return row.status();
    KOBO_ASSERT(row.value().delay >= 0 && !row.value().fact.empty(),
                "an event row read holds a fact, on time or late");
    // Only the time is needed: the fact's head, not the whole fact.
    const auto t = fact_time(row.value().fact);
    if (!t) return t.status();
    return std::pair{t.value(), row.value().delay};
  }
  const Views& views_;
  const std::string scope_;
};

Result<std::optional<std::string>> Views::render_record(const std::string& scope, const rows::RecordAt& at,
                                                        const ViewRecords& records) const {
  auto read = read_event(*this, scope, at.first);
  if (!read) return read.status();
  if (!read.value()) return std::optional<std::string>();
  return render_record(scope, read.value()->event, at.index, records);
}

Result<std::optional<std::string>> Views::render_record(const std::string& scope, const Event& e,
                                                        std::uint32_t index,
                                                        const ViewRecords& records) const {
  if (index >= transactions_created_count(e.data))
    return Status::error("views: a transaction names a record its event does not create");
  // A payout's record shows the status steps since (its TransactionRow); no other record changes.
  std::vector<rows::StatusStep> steps;
  if (const auto* payout = std::get_if<BankTransferInitiated>(&e.data)) {
    auto t =
        decoded_row(this->read(view_keys::transaction(payout->transaction.value)), &rows::decode_transaction);
    if (!t) return t.status();
    if (!t.value()) return Status::error("views: a payout without its row");
    steps = std::move(t.value()->steps);
  }
  if (!render::can_render({&e, 1}, records)) {
    if (!records.status()) return records.status();
    return Status::error("views: a transaction names a record they do not have");
  }
  KOBO_ASSERT(view_keys::scope17(e.business, e.live) == scope, "an event in another scope's list");
  return std::optional<std::string>(render::transaction(e, index, steps, records));
}

Result<std::optional<rows::TransactionRow>> Views::transaction_row(std::string_view public_id) const {
  using Found = std::optional<rows::TransactionRow>;
  auto row = decoded_row(read(view_keys::transaction(public_id)), &rows::decode_transaction);
  if (!row || row.value()) return row;
  const TransactionId id{std::string(public_id)};
  for (std::size_t k = 1; k < rows::kRecordsPerEventMax; ++k) {
    const auto first = first_of_nth(id, k);
    if (!first) return Found();  // not time-ordered: every record of it has its row
    auto first_row = decoded_row(read(view_keys::transaction(first->value)), &rows::decode_transaction);
    if (!first_row) return first_row.status();
    if (!first_row.value() || first_row.value()->at.index != 0) continue;
    const rows::TransactionRow& of_first = *first_row.value();
    auto event = read_event(*this, of_first.scope, of_first.at.first);
    if (!event) return event.status();
    if (!event.value())
      return Status::error("views: transaction " + first->value + " of an event they do not have");
    const auto created = transactions_created(event.value()->event.data);
    if (k < created.size() && created[k].id == id)
      return Found(rows::TransactionRow{
          of_first.scope, rows::RecordAt{of_first.at.first, static_cast<std::uint32_t>(k)}, {}, 0});
  }
  return Found();
}

Result<std::optional<std::string>> Views::render_transaction(std::string_view public_id,
                                                             const Scope* scope) const {
  auto row = transaction_row(public_id);
  if (!row) return row.status();
  if (!row.value()) return std::optional<std::string>();
  if (scope != nullptr && row.value()->scope != view_keys::scope17(scope->business, scope->live))
    return std::optional<std::string>();
  const ViewRecords records(*this);
  KOBO_ASSERT(row.value()->scope.size() == view_keys::kScopeSize, "a transaction row's scope");
  return render_record(row.value()->scope, row.value()->at, records);
}

Result<std::optional<rows::RecordAt>> Views::find_integer_id(const std::string& scope,
                                                             std::uint64_t id) const {
  using Found = std::optional<rows::RecordAt>;
  auto list = decoded_row(read(view_keys::list_row(l::kTransactions, scope)), &rows::decode_list);
  if (!list) return list.status();
  if (!list.value() || list.value()->count == 0) return Found();
  // Integer ids grow with the log within a partition, so with the list's numbers.
  std::uint64_t lo = 0, hi = list.value()->count;  // the record, if any, is in [lo, hi)
  std::shared_lock lock(db_lock_);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  const std::string prefix = view_keys::event_prefix(scope);
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    it->SeekForPrev(view_keys::event(scope, mid));
    if (!it->status().ok()) return Status::error("views scan: " + it->status().ToString());
    if (!it->Valid() || !it->key().starts_with(prefix))
      return Status::error("views: a transaction list misses a record");
    const std::uint64_t first =
        view_keys::get_be(std::string_view(it->key().data(), it->key().size()), prefix.size());
    auto row = rows::decode_event_row(std::string_view(it->value().data(), it->value().size()));
    if (!row) return row.status();
    auto e = decode_fact(row.value().fact);
    if (!e) return e.status();
    const auto created = transaction_numbers(e.value().data);
    if (created.size() != transactions_created_count(e.value().data) || first + created.size() <= mid)
      return Status::error("views: a transaction list misses a record");
    KOBO_ASSERT(first <= mid && mid - first < created.size(),
                "the record asked for is one its event creates");
    const std::uint64_t here = created[mid - first];
    KOBO_ASSERT(first <= mid, "a record before its event");
    if (here == id) return Found(rows::RecordAt{first, static_cast<std::uint32_t>(mid - first)});
    if (here < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return Found();
}

Result<std::optional<std::string>> Views::transaction_by_reference_text(const Scope& scope,
                                                                        std::string_view account,
                                                                        std::string_view reference) const {
  auto at = decoded_row(read(view_keys::transaction_reference(account, scope.live, reference)),
                        &rows::decode_record_at);
  if (!at) return at.status();
  const ViewRecords records(*this);
  if (!at.value()) {
    // A reference derived from its record's id has no row of its own (apply.cc put_transactions):
    // the record it names, if that is of this scope and account and shows this reference.
    const auto id = record_of_derived_reference(reference);
    if (!id) return std::optional<std::string>();
    const auto row = transaction_row(id->value);
    if (!row) return row.status();
    const std::string scope17 = view_keys::scope17(scope.business, scope.live);
    if (!row.value() || row.value()->scope != scope17) return std::optional<std::string>();
    auto event = read_event(*this, scope17, row.value()->at.first);
    if (!event) return event.status();
    if (!event.value())
      return Status::error("views: transaction " + id->value + " of an event they do not have");
    const auto listed = render::listed(event.value()->event, records);
    const std::uint32_t k = row.value()->at.index;
    if (k >= listed.size() || listed[k].reference != reference || listed[k].account.value != account)
      return std::optional<std::string>();
    return render_record(scope17, event.value()->event, k, records);
  }
  KOBO_ASSERT(at.value()->index < rows::kRecordsPerEventMax, "a reference names a record past its event's");
  return render_record(view_keys::scope17(scope.business, scope.live), *at.value(), records);
}

Result<std::optional<json>> Views::transaction(const Scope& scope, std::string_view account,
                                               std::string_view id_or_reference) const {
  return parsed(transaction_text(scope, account, id_or_reference));
}

Result<std::optional<std::vector<Event>>> Views::bulk_events(const Scope& scope, std::string_view id) const {
  using Found = std::optional<std::vector<Event>>;
  auto row = decoded_row(read(view_keys::bulk(id)), &rows::decode_bulk);
  if (!row) return row.status();
  if (!row.value()) return Found();
  auto accepted = decode_fact(row.value()->accepted);
  if (!accepted) return accepted.status();
  const auto* x = std::get_if<BulkTransferAccepted>(&accepted.value().data);
  if (x == nullptr)
    return Status::error("views: bulk transfer " + std::string(id) + " names an event of another kind");
  if (!in_scope(accepted.value(), scope) || x->batch.value != id) return Found();
  std::vector<Event> events{std::move(accepted).value()};
  // Its items' events follow it in the scope's transaction list, each naming it.
  const std::string scope17 = view_keys::scope17(scope.business, scope.live);
  const std::string prefix = view_keys::event_prefix(scope17);
  std::shared_lock lock(db_lock_);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(view_keys::event(scope17, row.value()->first)); it->Valid() && it->key().starts_with(prefix);
       it->Next()) {
    auto event = rows::decode_event_row(std::string_view(it->value().data(), it->value().size()));
    if (!event) return event.status();
    auto e = decode_fact(event.value().fact);
    if (!e) return e.status();
    const BatchId* batch = batch_of(e.value().data);
    if (batch == nullptr || batch->value != id) break;
    events.push_back(std::move(e).value());
  }
  if (!it->status().ok()) return Status::error("views scan: " + it->status().ToString());
  KOBO_ASSERT(std::holds_alternative<BulkTransferAccepted>(events.front().data),
              "a bulk's events start with its acceptance");
  return Found(std::move(events));
}

Result<std::optional<std::string>> Views::transaction_text(const Scope& scope, std::string_view account,
                                                           std::string_view id_or_reference) const {
  KOBO_ASSERT(!scope.business.empty(), "a record is read in the scope of a business");
  if (id_or_reference.starts_with("trx-")) {
    auto t = render_transaction(id_or_reference, &scope);
    if (!t || t.value()) return t;
  }
  std::uint64_t numeric = 0;
  const auto* end = id_or_reference.data() + id_or_reference.size();
  if (auto [p, ec] = std::from_chars(id_or_reference.data(), end, numeric); ec == std::errc() && p == end) {
    const std::string scope17 = view_keys::scope17(scope.business, scope.live);
    const auto at = find_integer_id(scope17, numeric);
    if (!at) return at.status();
    if (at.value()) {
      const ViewRecords records(*this);
      auto t = render_record(scope17, *at.value(), records);
      if (!t || t.value()) return t;
    }
  }
  return transaction_by_reference_text(scope, account, id_or_reference);
}

Result<Page> Views::transactions(const Scope& scope, const TransactionFilter& filter,
                                 const PageRequest& page) const {
  Page out;
  if (filter.live && *filter.live != scope.live) return out;
  const std::string scope17 = view_keys::scope17(scope.business, scope.live);
  auto list = decoded_row(read(view_keys::list_row(l::kTransactions, scope17)), &rows::decode_list);
  if (!list) return list.status();
  if (!list.value()) return out;
  list_index::Query q;
  q.kind = l::kTransactions;
  q.scope = scope17;
  if (filter.entry)
    q.bitmaps.push_back(view_keys::bitmap(l::kTransactions, scope17, l::kEntry, l::value(*filter.entry)));
  if (filter.status)
    q.bitmaps.push_back(view_keys::bitmap(l::kTransactions, scope17, l::kStatus, l::value(*filter.status)));
  if (filter.amount)
    q.bitmaps.push_back(view_keys::bitmap(l::kTransactions, scope17, l::kAmount, l::value(*filter.amount)));
  q.from = filter.created_from;
  q.until = filter.created_until;
  q.offset = first_index(page);
  q.limit = page.per_page;
  const EventTimes times(*this, scope17);
  KOBO_ASSERT(q.bitmaps.size() <= 3, "a transaction list has three filters by value");
  Result<list_index::Found> found = [&] {
    std::shared_lock lock(db_lock_);
    return list_index::find(*db_, q, *list.value(), &times);
  }();
  if (!found) return found.status();
  out.total_count = found.value().total;
  // The page's records, from their events: one iterator, as numbers near each other share
  // events and blocks; one RecordSource, as they name the same few wallets.
  const ViewRecords records(*this);
  std::optional<EventRead> current;
  for (const std::uint64_t number : found.value().numbers) {
    if (!current || number < current->first ||
        number - current->first >= transactions_created_count(current->event.data)) {
      std::shared_lock lock(db_lock_);
      auto read = event_of(*db_, scope17, number);
      if (!read) return read.status();
      current = std::move(read).value();
    }
    const auto index = static_cast<std::size_t>(number - current->first);
    KOBO_ASSERT(index < transactions_created_count(current->event.data), "a record of the event read for it");
    std::vector<rows::StatusStep> steps;
    if (const auto* payout = std::get_if<BankTransferInitiated>(&current->event.data)) {
      auto t =
          decoded_row(read(view_keys::transaction(payout->transaction.value)), &rows::decode_transaction);
      if (!t) return t.status();
      if (!t.value()) return Status::error("views: a payout without its row");
      steps = std::move(t.value()->steps);
    }
    if (!render::can_render({&current->event, 1}, records)) {
      if (!records.status()) return records.status();
      return Status::error("views: a transaction names a record they do not have");
    }
    out.items.push_back(render::transaction(current->event, index, steps, records));
  }
  KOBO_ASSERT(out.items.size() <= page.per_page, "a page longer than asked");
  KOBO_ASSERT(out.items.size() <= out.total_count, "a page holds some of the records the list counts");
  return out;
}

// ---- webhook events ----------------------------------------------------------------------------

Result<WebhookEvent> Views::webhook_event(std::string_view account, std::uint64_t sequence,
                                          WebhookEventType type, UnixMs time, std::string_view hash,
                                          std::string_view transaction) const {
  auto text = render_transaction(transaction, nullptr);
  if (!text) return text.status();
  if (!text.value())
    return Status::error("views: webhook event " + std::to_string(sequence) + " names transaction " +
                         std::string(transaction) + ", which they do not have");
  KOBO_ASSERT(sequence > 0, "webhook events are numbered from 1");
  return WebhookEvent{sequence, render::webhook_event_id(hash, transaction),
                      type,     std::string(account),
                      time,     render::webhook_body(type, sequence, *text.value())};
}

Result<std::string> Views::owner_account(const Event& e) const {
  const ViewRecords records(*this);
  auto owner = render::transactions_owner(e, records);
  if (!records.status()) return records.status();
  if (!owner) return Status::error("views: transactions of an event with no account, nor a payout they have");
  return std::move(*owner);
}

// Record `at` of `scope` as its own event announced it: its sequence is the event's count of
// its account's webhook events before it, plus its place among what the event announced.
Result<std::optional<WebhookEvent>> Views::announced_event(const std::string& scope,
                                                           const rows::RecordAt& at) const {
  using Found = std::optional<WebhookEvent>;
  auto read = read_event(*this, scope, at.first);
  if (!read) return read.status();
  if (!read.value()) return Status::error("views: a record of an event they do not have");
  const Event& e = read.value()->event;
  const auto finalized = transactions_finalized(e.data);
  const auto created = transactions_created(e.data);
  if (at.index >= created.size()) return Status::error("views: a record its event does not create");
  std::uint64_t sequence = read.value()->webhooks;
  std::optional<WebhookEventType> type;
  for (const FinalizedTransaction& f : finalized) {
    const auto t = kobo::webhook_event_of(f);
    if (!t) continue;
    ++sequence;
    if (f.id == created[at.index].id) {
      type = t;
      break;
    }
  }
  if (!type) return Found();  // created pending (a payout): announced later, if at all
  KOBO_ASSERT(sequence > read.value()->webhooks, "a record announced counts after its event's earlier ones");
  const auto account = owner_account(e);
  if (!account) return account.status();
  auto event = webhook_event(account.value(), sequence, *type, e.time, rows::hash_hex(read.value()->hash),
                             created[at.index].id.value);
  if (!event) return event.status();
  return Found(std::move(event).value());
}

Result<WebhookEvent> Views::irregular_event(std::string_view account, bool live,
                                            std::uint64_t sequence) const {
  auto row =
      decoded_row(read(view_keys::webhook_event(account, live, sequence)), &rows::decode_webhook_event);
  if (!row) return row.status();
  if (!row.value()) return Status::error("views: webhook event " + std::to_string(sequence) + " is missing");
  KOBO_ASSERT(row.value()->ordinal < sequence,
              "a webhook event counts fewer events before it than its sequence");
  return webhook_event(account, sequence, row.value()->type, row.value()->time, row.value()->hash,
                       row.value()->transaction);
}

Result<std::optional<WebhookEvent>> Views::webhook_event_of(const Scope& scope,
                                                            std::string_view transaction) const {
  using Found = std::optional<WebhookEvent>;
  auto row = transaction_row(transaction);
  if (!row) return row.status();
  if (!row.value() || row.value()->scope != view_keys::scope17(scope.business, scope.live)) return Found();
  KOBO_ASSERT(row.value()->scope.size() == view_keys::kScopeSize, "a transaction of the scope asked for");
  if (row.value()->webhook == 0) return announced_event(row.value()->scope, row.value()->at);
  // Announced by a later event (a payout's end): its own row, under the payout's account.
  auto read = read_event(*this, row.value()->scope, row.value()->at.first);
  if (!read) return read.status();
  if (!read.value()) return Status::error("views: a payout of an event they do not have");
  const auto account = owner_account(read.value()->event);
  if (!account) return account.status();
  auto found = irregular_event(account.value(), scope.live, row.value()->webhook);
  if (!found) return found.status();
  return Found(std::move(found).value());
}

// GET /v1/events: the account's webhook events after `after`, in order. Those its transactions'
// own events announced are its `announced` bitmap's records, in order; the others (a payout's
// end) are rows numbered by sequence, each saying how many came before it (rows.h).
Result<std::vector<WebhookEvent>> Views::webhook_events(std::string_view account, bool live,
                                                        std::uint64_t after, std::uint64_t limit) const {
  std::vector<WebhookEvent> out;
  const auto w = webhook(account, live);
  if (!w) return w.status();
  const std::uint64_t total = w.value().sequence;
  if (after >= total || limit == 0) return out;
  auto account_row = decoded_row(read(view_keys::account(account)), &rows::decode_account);
  if (!account_row) return account_row.status();
  if (!account_row.value()) return Status::error("views: webhook events of an account they do not have");
  const std::string scope = view_keys::scope17(account_row.value()->business, live);
  // The webhook events of the account's later announcements, from the one after `after` on, and
  // how many there were before it.
  std::vector<rows::WebhookEventRow> later;
  std::vector<std::uint64_t> later_sequence;
  std::uint64_t later_before = 0;
  {
    const std::string prefix = view_keys::webhook_events_prefix(account, live);
    std::shared_lock lock(db_lock_);
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    it->SeekForPrev(view_keys::webhook_event(account, live, after));
    if (it->Valid() && it->key().starts_with(prefix)) {
      auto row = rows::decode_webhook_event(std::string_view(it->value().data(), it->value().size()));
      if (!row) return row.status();
      later_before = row.value().ordinal + 1;
    }
    const std::uint64_t last = std::min(total, after + limit);
    for (it->Seek(view_keys::webhook_event(account, live, after + 1));
         it->Valid() && it->key().starts_with(prefix); it->Next()) {
      const std::uint64_t sequence =
          view_keys::get_be(std::string_view(it->key().data(), it->key().size()), prefix.size());
      if (sequence > last) break;
      auto row = rows::decode_webhook_event(std::string_view(it->value().data(), it->value().size()));
      if (!row) return row.status();
      later.push_back(std::move(row).value());
      later_sequence.push_back(sequence);
    }
    if (!it->status().ok()) return Status::error("views scan: " + it->status().ToString());
  }
  // The announced records from the (after - later_before)-th on (0-based), in order.
  std::uint64_t skip = after - later_before;
  const std::string bitmap =
      view_keys::bitmap(l::kTransactions, scope, l::kAnnounced, l::value(view_keys::id16(account)));
  std::vector<std::uint64_t> announced;
  const std::uint64_t wanted = std::min(limit, total - after);
  {
    std::shared_lock lock(db_lock_);
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    for (it->Seek(bitmap); it->Valid() && it->key().starts_with(bitmap) && announced.size() < wanted;
         it->Next()) {
      const std::string_view key(it->key().data(), it->key().size());
      if (key.size() != bitmap.size() + 4) return Status::error("views: a list bitmap's key is malformed");
      auto chunk = bitmap::decode(std::string_view(it->value().data(), it->value().size()));
      if (!chunk) return chunk.status();
      const std::uint32_t here = chunk.value().count();
      if (skip >= here) {
        skip -= here;
        continue;
      }
      const std::uint64_t base =
          bitmap::first_of(static_cast<std::uint32_t>(view_keys::get_be(key, bitmap.size(), 4)));
      chunk.value().each([&](std::uint32_t bit) {
        if (skip > 0) {
          --skip;
          return;
        }
        if (announced.size() < wanted) announced.push_back(base + bit);
      });
    }
    if (!it->status().ok()) return Status::error("views scan: " + it->status().ToString());
  }
  // Merged in sequence order: a later announcement placed at `position` comes before the
  // announced records numbered `position` and above.
  KOBO_ASSERT(
      std::is_sorted(later_sequence.begin(), later_sequence.end()) &&
          std::adjacent_find(announced.begin(), announced.end(), std::greater_equal<>()) == announced.end(),
      "the two sides of the merge are in order: rows by key, a bitmap's records by number");
  std::size_t a = 0, k = 0;
  for (std::uint64_t sequence = after + 1; sequence <= total && out.size() < limit; ++sequence) {
    if (k < later.size() && later_sequence[k] == sequence) {
      if (a < announced.size() && announced[a] < later[k].position)
        return Status::error("views: webhook events out of order");
      auto event =
          webhook_event(account, sequence, later[k].type, later[k].time, later[k].hash, later[k].transaction);
      if (!event) return event.status();
      out.push_back(std::move(event).value());
      ++k;
      continue;
    }
    if (a == announced.size()) return Status::error("views: an account's webhook events are missing");
    const std::uint64_t number = announced[a++];
    std::uint64_t first = 0;
    {
      std::shared_lock lock(db_lock_);
      auto read = event_of(*db_, scope, number);
      if (!read) return read.status();
      first = read.value().first;
    }
    auto event = announced_event(scope, rows::RecordAt{first, static_cast<std::uint32_t>(number - first)});
    if (!event) return event.status();
    if (!event.value() || event.value()->sequence != sequence)
      return Status::error("views: an account's webhook events disagree on their sequence");
    out.push_back(std::move(*event.value()));
  }
  KOBO_ASSERT(out.size() <= limit && k <= later.size(), "a page of webhook events holds its limit at most");
  KOBO_ASSERT(out.empty() || (out.front().sequence == after + 1 && out.back().sequence == after + out.size()),
              "webhook events are read in sequence, from the one after `after`, none missed");
  return out;
}

Result<rows::WebhookRow> Views::webhook(std::string_view account, bool live) const {
  const auto bytes = read(view_keys::webhook(account, live));
  if (!bytes) return bytes.status();
  if (!bytes.value()) return rows::WebhookRow{};
  KOBO_ASSERT(!account.empty(), "the webhook row of no account");
  return rows::decode_webhook(*bytes.value());
}

// ---- positions ---------------------------------------------------------------------------------

Result<std::vector<ViewPosition>> Views::positions() const {
  std::vector<ViewPosition> out(partitions_);
  KOBO_ASSERT(!out.empty(), "views of a log with no partition");
  for (std::uint32_t p = 0; p < partitions_; ++p) {
    out[p].last_hash = std::string(64, '0');
    auto row = decoded_row(read(view_keys::position(p)), &rows::decode_position);
    if (!row) return row.status();
    if (const auto& r = row.value()) {
      out[p].next_offset = Offset(r->next_offset);
      out[p].last_seq = Seq(r->seq);
      out[p].last_hash = r->hash;
      out[p].epoch = Epoch(r->epoch);
    }
    KOBO_ASSERT(out[p].last_hash.size() == 64, "a position names its chain's head in 64 hex digits");
  }
  return out;
}

// ---- the records rendering reads ---------------------------------------------------------------

std::optional<std::string> ViewRecords::read(const std::string& key) const {
  KOBO_ASSERT(!key.empty(), "a view key has a tag");
  if (const auto it = read_.find(key); it != read_.end()) return it->second;
  auto value = views_.read(key);
  if (!value) {
    if (status_.ok()) status_ = value.status();
    return std::nullopt;  // not kept: a later read may succeed, and status() has said it failed
  }
  return read_.emplace(key, std::move(value).value()).first->second;
}

std::optional<WalletFacts> ViewRecords::wallet(std::string_view public_id) const {
  const auto bytes = read(view_keys::wallet(public_id));
  if (!bytes) return std::nullopt;
  return decoded(decode_fact(*bytes), [](const Event& e) { return render::wallet_facts(e); });
}

std::optional<Event> ViewRecords::payout(std::string_view public_id) const {
  const auto row_bytes = read(view_keys::transaction(public_id));
  if (!row_bytes) return std::nullopt;
  return decoded(
      rows::decode_transaction(*row_bytes), [&](const rows::TransactionRow& row) -> std::optional<Event> {
        const auto bytes = read(view_keys::event(row.scope, row.at.first));
        if (!bytes) return std::nullopt;
        return decoded(rows::decode_event_row(*bytes), [&](const rows::EventRow& event) {
          return decoded(decode_fact(event.fact), [](const Event& e) { return std::optional<Event>(e); });
        });
      });
}

}  // namespace kobo
