#include "audit/scratch_index.h"

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/memtablerep.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>
#include <rocksdb/write_buffer_manager.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "common/assert.h"
#include "common/crypto.h"
#include "common/file.h"
#include "events/rocksdb_logger.h"

namespace kobo::audit {

namespace fs = std::filesystem;

namespace {

void put_be(char* out, std::uint64_t v, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) out[i] = static_cast<char>((v >> (8 * (bytes - 1 - i))) & 0xff);
}

std::uint64_t get_be(const char* in, std::size_t bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < bytes; ++i) v = v << 8 | static_cast<unsigned char>(in[i]);
  return v;
}

}  // namespace

// ---- names -------------------------------------------------------------------------------------

ScratchKey::ScratchKey(char tag, Partition p) {
  KOBO_ASSERT(tag != '\0', "a scratch key starts with its tag");
  KOBO_ASSERT(p.value < kPartitionsMax, "a partition fits the key's two bytes");
  bytes_[0] = tag;
  put_be(bytes_.data() + 1, p.value, 2);
}

ScratchKey ScratchKey::number(char tag, Partition p, std::uint64_t n) {
  ScratchKey k(tag, p);
  put_be(k.bytes_.data() + 3, n, 8);
  KOBO_ASSERT(get_be(k.bytes_.data() + 3, 8) == n, "a number's name is its eight bytes");
  return k;
}

ScratchKey ScratchKey::digest(char tag, Partition p, std::string_view a, std::string_view b) {
  ScratchKey k(tag, p);
  const Sha256 d = sha256(a, b);
  static_assert(sizeof(Sha256) >= kSize - 3, "a digest has 16 bytes to take");
  std::memcpy(k.bytes_.data() + 3, d.data(), kSize - 3);
  return k;
}

Partition ScratchKey::partition() const {
  return Partition(static_cast<std::uint32_t>(get_be(bytes_.data() + 1, 2)));
}

// ---- the database ------------------------------------------------------------------------------

namespace {

Status store_error(std::string_view what, const rocksdb::Status& s) {
  KOBO_ASSERT(!s.ok(), "an error of a store operation that failed");
  return Status::error("audit scratch index: " + std::string(what) + ": " + s.ToString(),
                       s.IsNoSpace() ? ErrorKind::no_space : ErrorKind::other);
}

constexpr const char* kClaimsFamily = "claims";
constexpr const char* kRecordsFamily = "records";

}  // namespace

// RocksDB in the scratch directory, a column family for the claims and one for the records. Its
// memory is bounded by `cache_bytes`: the block cache holds data, index and filter blocks, and
// the memtables of both families are charged to it through a WriteBufferManager, as the writer's
// history index does (command/history.cc).
class ScratchIndex::Store {
 public:
  Store(const fs::path& dir, std::size_t cache_bytes) {
    KOBO_ASSERT(cache_bytes >= (std::size_t{4} << 20), "a scratch cache of 4 MiB at least");
    cache_ = rocksdb::NewLRUCache(cache_bytes, /*num_shard_bits=*/4);
    rocksdb::DBOptions db;
    db.create_if_missing = true;
    db.create_missing_column_families = true;
    db.error_if_exists = true;
    db.info_log = rocksdb_logger("audit-scratch");
    db.max_open_files = 256;
    db.write_buffer_manager = std::make_shared<rocksdb::WriteBufferManager>(cache_bytes / 4, cache_);
    db.allow_concurrent_memtable_write = false;  // the claims' memtable is a vector (below)

    // Claims are written, then read once in order: their memtable is a vector sorted as it is
    // flushed, and their files have no filter (nothing is looked up). Universal compaction merges
    // them 16 sorted runs at a time, and merges all only when the newer runs hold ten times the
    // oldest: each claim is rewritten a couple of times, and the final pass merges a few dozen
    // runs at most. (With RocksDB's defaults, 4 runs and 200%, the audit of 5M transfers took
    // 1.5 times the CPU of these.)
    rocksdb::ColumnFamilyOptions claims;
    claims.memtable_factory = std::make_shared<rocksdb::VectorRepFactory>();
    claims.write_buffer_size = std::max<std::size_t>(cache_bytes / 8, std::size_t{1} << 20);
    claims.max_write_buffer_number = 2;
    claims.compaction_style = rocksdb::kCompactionStyleUniversal;
    claims.level0_file_num_compaction_trigger = 16;
    claims.level0_slowdown_writes_trigger = 48;
    claims.level0_stop_writes_trigger = 64;
    claims.compaction_options_universal.max_size_amplification_percent = 1000;
    claims.compression = rocksdb::kNoCompression;  // digests: nothing to compress
    rocksdb::BlockBasedTableOptions claim_table;
    claim_table.block_cache = cache_;
    claim_table.block_size = std::size_t{64} * 1024;
    claim_table.cache_index_and_filter_blocks = true;
    claims.table_factory.reset(rocksdb::NewBlockBasedTableFactory(claim_table));

    // Records are looked up by id, mostly ids never stored (a new hold's, a new payout's): Bloom
    // filters on the memtable and on every file, partitioned under a pinned top level so that
    // the cache bounds them at any size.
    rocksdb::ColumnFamilyOptions records;
    records.write_buffer_size = std::max<std::size_t>(cache_bytes / 16, std::size_t{1} << 20);
    records.max_write_buffer_number = 2;
    records.level_compaction_dynamic_level_bytes = true;
    records.memtable_prefix_bloom_size_ratio = 0.05;
    records.memtable_whole_key_filtering = true;
    rocksdb::BlockBasedTableOptions record_table;
    record_table.block_cache = cache_;
    record_table.block_size = std::size_t{16} * 1024;
    record_table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    record_table.index_type = rocksdb::BlockBasedTableOptions::kTwoLevelIndexSearch;
    record_table.partition_filters = true;
    record_table.metadata_block_size = 4096;
    record_table.cache_index_and_filter_blocks = true;
    record_table.cache_index_and_filter_blocks_with_high_priority = true;
    record_table.pin_top_level_index_and_filter = true;
    records.table_factory.reset(rocksdb::NewBlockBasedTableFactory(record_table));

    const std::vector<rocksdb::ColumnFamilyDescriptor> families{
        {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
        {kClaimsFamily, claims},
        {kRecordsFamily, records}};
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    const auto s = rocksdb::DB::Open(db, dir.string(), families, &handles, &raw);
    if (!s.ok()) {
      open_error_ = store_error("open " + dir.string(), s);
      return;
    }
    db_.reset(raw);
    KOBO_ASSERT(handles.size() == families.size(), "a handle per column family");
    for (rocksdb::ColumnFamilyHandle* h : handles) handles_.emplace_back(h);
    write_options_.disableWAL = true;  // the index outlives no audit: nothing to recover
  }

  ~Store() {
    handles_.clear();  // before the database they belong to
    db_.reset();
  }

  [[nodiscard]] const Status& open_error() const { return open_error_; }

  rocksdb::ColumnFamilyHandle* claims() const { return handles_.at(1).get(); }
  rocksdb::ColumnFamilyHandle* records() const { return handles_.at(2).get(); }

  [[nodiscard]] Result<std::optional<std::string>> get(std::string_view key) const {
    KOBO_ASSERT(db_ != nullptr, "an index that opened");
    std::string value;
    const auto s =
        db_->Get(rocksdb::ReadOptions(), records(), rocksdb::Slice(key.data(), key.size()), &value);
    if (s.IsNotFound()) return std::optional<std::string>();
    if (!s.ok()) return store_error("read", s);
    return std::optional<std::string>(std::move(value));
  }

  [[nodiscard]] Status put(std::string_view key, std::string_view value) {
    KOBO_ASSERT(db_ != nullptr, "an index that opened");
    const auto s = db_->Put(write_options_, records(), rocksdb::Slice(key.data(), key.size()),
                            rocksdb::Slice(value.data(), value.size()));
    return s.ok() ? Status() : store_error("write", s);
  }

  template <typename Claims>
  [[nodiscard]] Status write_claims(const Claims& claims) {
    KOBO_ASSERT(db_ != nullptr && !claims.empty(), "a write of claims to an index that opened");
    rocksdb::WriteBatch batch;
    for (const auto& c : claims)
      if (auto s = batch.Put(this->claims(), rocksdb::Slice(c.data(), c.size()), rocksdb::Slice()); !s.ok())
        return store_error("batch", s);
    const auto s = db_->Write(write_options_, &batch);
    return s.ok() ? Status() : store_error("write", s);
  }

  std::unique_ptr<rocksdb::Iterator> claims_in_order() const {
    KOBO_ASSERT(db_ != nullptr, "an index that opened");
    rocksdb::ReadOptions read;
    read.fill_cache = false;                       // each block is read once
    read.readahead_size = std::size_t{256} << 10;  // per sorted run: a few MiB in all
    return std::unique_ptr<rocksdb::Iterator>(db_->NewIterator(read, claims()));
  }

 private:
  struct HandleCloser {
    void operator()(rocksdb::ColumnFamilyHandle* h) const { delete h; }
  };
  std::shared_ptr<rocksdb::Cache> cache_;
  rocksdb::WriteOptions write_options_;
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<std::unique_ptr<rocksdb::ColumnFamilyHandle, HandleCloser>> handles_;
  Status open_error_;
};

// ---- the index ---------------------------------------------------------------------------------

namespace {

constexpr std::string_view kDirPrefix = "kobo-audit-";

// The scratch directories under `parent` that audits left behind when they were killed (their
// process is gone): kobo-audit-<pid>-XXXXXX. The next audit there removes them.
void remove_left_behind(const fs::path& parent) {
  std::error_code ec;
  std::vector<fs::path> left;
  for (const auto& entry : fs::directory_iterator(parent, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(kDirPrefix)) continue;
    const std::string_view rest = std::string_view(name).substr(kDirPrefix.size());
    pid_t pid = 0;
    const auto [end, parsed] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
    if (parsed == std::errc() && end != rest.data() + rest.size() && *end == '-' && pid > 0 &&
        ::kill(pid, 0) != 0 && errno == ESRCH)
      left.push_back(entry.path());
  }
  for (const fs::path& p : left) fs::remove_all(p, ec);
}

}  // namespace

ScratchIndex::ScratchIndex(fs::path dir, std::unique_ptr<Store> store)
    : dir_(std::move(dir)), store_(std::move(store)) {
  KOBO_ASSERT(store_ != nullptr && store_->open_error().ok(), "an index over a database that opened");
  claims_.reserve(kClaimsBatchMax);
}

ScratchIndex::~ScratchIndex() {
  store_.reset();  // closed before its files go
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

Result<std::unique_ptr<ScratchIndex>> ScratchIndex::open(const fs::path& parent, std::size_t cache_bytes) {
  std::error_code ec;
  if (!fs::is_directory(parent, ec))
    return Status::error("audit scratch index: " + parent.string() + " is not a directory");
  remove_left_behind(parent);
  std::string tmpl = (parent / (std::string(kDirPrefix) + std::to_string(::getpid()) + "-XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr)
    return Status::error("audit scratch index: cannot make a directory under " + parent.string() + ": " +
                         error_text(errno));
  const fs::path dir(tmpl);
  auto store = std::make_unique<Store>(dir / "index", cache_bytes);
  if (!store->open_error().ok()) {
    Status s = store->open_error();
    store.reset();
    fs::remove_all(dir, ec);
    return s;
  }
  return std::unique_ptr<ScratchIndex>(new ScratchIndex(dir, std::move(store)));
}

void ScratchIndex::claim(const ScratchKey& name, Seq seq, std::uint16_t ordinal) {
  if (!error_.ok()) return;
  ClaimBytes& c = claims_.emplace_back();
  std::memcpy(c.data(), name.bytes().data(), ScratchKey::kSize);
  put_be(c.data() + ScratchKey::kSize, seq.value, 8);
  put_be(c.data() + ScratchKey::kSize + 8, ordinal, 2);
  if (claims_.size() >= kClaimsBatchMax) write_claims();
  KOBO_ASSERT(claims_.size() < kClaimsBatchMax, "claims are written once the batch is full");
}

void ScratchIndex::write_claims() {
  if (claims_.empty() || !error_.ok()) return;
  error_ = store_->write_claims(claims_);
  claims_.clear();
}

Status ScratchIndex::reuses(const std::function<void(const Reuse&)>& visit) {
  write_claims();
  if (!error_.ok()) return error_;
  const auto it = store_->claims_in_order();
  std::string last;  // the claim before
  Seq first{0};
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const rocksdb::Slice k = it->key();
    KOBO_ASSERT(k.size() == kClaimSize, "the claims' family holds what claim() wrote");
    const std::string_view claimed(k.data(), ScratchKey::kSize);
    const Seq seq(get_be(k.data() + ScratchKey::kSize, 8));
    if (!last.empty() && claimed == std::string_view(last).substr(0, ScratchKey::kSize)) {
      KOBO_ASSERT(seq >= first, "a name's claims come in the order of their seqs");
      visit(Reuse{claimed[0], Partition(static_cast<std::uint32_t>(get_be(k.data() + 1, 2))), seq,
                  static_cast<std::uint16_t>(get_be(k.data() + ScratchKey::kSize + 8, 2)), first});
    } else {
      first = seq;
    }
    last.assign(k.data(), k.size());
  }
  if (!it->status().ok()) error_ = store_error("read the claims", it->status());
  return error_;
}

std::optional<std::string> ScratchIndex::find(const ScratchKey& key) {
  if (!error_.ok()) return std::nullopt;
  auto stored = store_->get(key.bytes());
  if (!stored) {
    error_ = stored.status();
    return std::nullopt;
  }
  return std::move(stored).value();
}

void ScratchIndex::put(const ScratchKey& key, std::string_view value) {
  if (!error_.ok()) return;
  error_ = store_->put(key.bytes(), value);
}

}  // namespace kobo::audit
