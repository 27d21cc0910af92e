#include "audit/scratch_index.h"

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
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
#include <vector>

#include "common/assert.h"
#include "common/crypto.h"
#include "events/rocksdb_logger.h"

namespace kobo::audit {

namespace fs = std::filesystem;

// ---- keys --------------------------------------------------------------------------------------

ScratchKey::ScratchKey(char tag, Partition p) {
  KOBO_ASSERT(tag != '\0', "a scratch key starts with its tag");
  KOBO_ASSERT(p.value < kPartitionsMax, "a partition fits the key's two bytes");
  bytes_[0] = tag;
  bytes_[1] = static_cast<char>(p.value >> 8);
  bytes_[2] = static_cast<char>(p.value & 0xff);
  size_ = kPrefixSize;
}

ScratchKey ScratchKey::number(char tag, Partition p, std::uint64_t n) {
  ScratchKey k(tag, p);
  for (int shift = 56; shift >= 0; shift -= 8) k.bytes_[k.size_++] = static_cast<char>((n >> shift) & 0xff);
  KOBO_ASSERT(k.size_ == kNumberSize, "a number's key is its tag, partition and eight bytes");
  return k;
}

ScratchKey ScratchKey::digest(char tag, Partition p, std::string_view a, std::string_view b) {
  ScratchKey k(tag, p);
  const Sha256 d = sha256(a, b);
  static_assert(sizeof(Sha256) >= 16, "a digest has 16 bytes to take");
  std::memcpy(k.bytes_.data() + k.size_, d.data(), 16);
  k.size_ += 16;
  KOBO_ASSERT(k.size_ == kSizeMax, "a digest's key is its tag, partition and 16 bytes");
  return k;
}

std::optional<std::uint64_t> ScratchKey::number_value() const {
  if (size_ != kNumberSize) return std::nullopt;
  std::uint64_t n = 0;
  for (std::size_t i = kPrefixSize; i < kNumberSize; ++i) n = n << 8 | static_cast<unsigned char>(bytes_[i]);
  return n;
}

std::uint32_t ScratchKey::prefix() const {
  KOBO_ASSERT(size_ > kPrefixSize, "a key past its prefix");
  return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes_[0])) << 16 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(bytes_[1])) << 8 |
         static_cast<unsigned char>(bytes_[2]);
}

std::uint64_t ScratchKey::hash() const {
  KOBO_ASSERT(size_ >= kNumberSize, "a key has eight bytes past its prefix");
  std::uint64_t body = 0;
  std::memcpy(&body, bytes_.data() + kPrefixSize, sizeof body);
  return (body ^ (std::uint64_t{prefix()} << 40)) * 0x9e3779b97f4a7c15ULL;
}

// ---- the database ------------------------------------------------------------------------------

namespace {

Status store_error(std::string_view what, const rocksdb::Status& s) {
  KOBO_ASSERT(!s.ok(), "an error of a store operation that failed");
  return Status::error("audit scratch index: " + std::string(what) + ": " + s.ToString(),
                       s.IsNoSpace() ? ErrorKind::no_space : ErrorKind::other);
}

}  // namespace

// RocksDB in the scratch directory. Its memory is bounded by `cache_bytes`: the block cache holds
// the data blocks and the (partitioned) index and filter blocks, and the memtables are charged to
// it through a WriteBufferManager, as the writer's history index does (command/history.cc), so a
// larger past costs cache misses, not memory.
class ScratchIndex::Store {
 public:
  Store(const fs::path& dir, std::size_t cache_bytes) {
    KOBO_ASSERT(cache_bytes >= (std::size_t{4} << 20), "a scratch cache of 4 MiB at least");
    cache_ = rocksdb::NewLRUCache(cache_bytes, /*num_shard_bits=*/4);
    options_.create_if_missing = true;
    options_.error_if_exists = true;
    options_.info_log = rocksdb_logger("audit-scratch");
    // Digests and empty values: nothing to compress.
    options_.compression = rocksdb::kNoCompression;
    options_.max_open_files = 256;
    options_.write_buffer_size = std::max<std::size_t>(cache_bytes / 4, std::size_t{1} << 20);
    options_.max_write_buffer_number = 2;
    options_.write_buffer_manager = std::make_shared<rocksdb::WriteBufferManager>(cache_bytes / 2, cache_);
    options_.level_compaction_dynamic_level_bytes = true;
    options_.level0_file_num_compaction_trigger = 2;
    // Almost every lookup is of a key never stored (a new reference, a new id): a Bloom filter
    // on the memtable and on every file answers it without reading a block.
    options_.memtable_prefix_bloom_size_ratio = 0.05;
    options_.memtable_whole_key_filtering = true;
    rocksdb::BlockBasedTableOptions table;
    table.block_cache = cache_;
    table.block_size = std::size_t{16} * 1024;
    table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    table.index_type = rocksdb::BlockBasedTableOptions::kTwoLevelIndexSearch;
    table.partition_filters = true;
    table.metadata_block_size = 4096;
    table.cache_index_and_filter_blocks = true;
    table.cache_index_and_filter_blocks_with_high_priority = true;
    table.pin_top_level_index_and_filter = true;
    table.pin_l0_filter_and_index_blocks_in_cache = true;
    options_.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));

    rocksdb::DB* raw = nullptr;
    const auto s = rocksdb::DB::Open(options_, dir.string(), &raw);
    if (!s.ok()) {
      open_error_ = store_error("open " + dir.string(), s);
      return;
    }
    db_.reset(raw);
    write_options_.disableWAL = true;  // the index outlives no audit: nothing to recover
  }

  [[nodiscard]] const Status& open_error() const { return open_error_; }

  [[nodiscard]] Result<std::optional<std::string>> get(std::string_view key) const {
    KOBO_ASSERT(db_ != nullptr, "an index that opened");
    std::string value;
    const auto s = db_->Get(rocksdb::ReadOptions(), rocksdb::Slice(key.data(), key.size()), &value);
    if (s.IsNotFound()) return std::optional<std::string>();
    if (!s.ok()) return store_error("read", s);
    return std::optional<std::string>(std::move(value));
  }

  // Writes the entries in key order: a memtable takes keys in order at a fraction of the cost of
  // keys at random (its skip list inserts next to the last one).
  template <typename Entry>
  [[nodiscard]] Status write(const std::vector<Entry>& entries) {
    KOBO_ASSERT(db_ != nullptr && !entries.empty(), "a write of a tail to an index that opened");
    std::vector<const Entry*> sorted;
    sorted.reserve(entries.size());
    for (const Entry& entry : entries) sorted.push_back(&entry);
    std::sort(sorted.begin(), sorted.end(),
              [](const Entry* a, const Entry* b) { return a->key.bytes() < b->key.bytes(); });
    rocksdb::WriteBatch batch;
    for (const Entry* entry : sorted) {
      const std::string_view key = entry->key.bytes();
      if (auto s = batch.Put(rocksdb::Slice(key.data(), key.size()), entry->value); !s.ok())
        return store_error("batch", s);
    }
    const auto s = db_->Write(write_options_, &batch);
    return s.ok() ? Status() : store_error("write", s);
  }

 private:
  std::shared_ptr<rocksdb::Cache> cache_;
  rocksdb::Options options_;
  rocksdb::WriteOptions write_options_;
  std::unique_ptr<rocksdb::DB> db_;
  Status open_error_;
};

// ---- the index ---------------------------------------------------------------------------------

ScratchIndex::ScratchIndex(fs::path dir, std::unique_ptr<Store> store)
    : dir_(std::move(dir)), store_(std::move(store)), slots_(kTailSlots, 0) {
  KOBO_ASSERT(store_ != nullptr && store_->open_error().ok(), "an index over a database that opened");
  tail_.reserve(kTailEntriesMax);
}

std::uint32_t& ScratchIndex::slot(const ScratchKey& key) {
  // Linear probing in a table at most half full: a free slot is always near.
  for (std::size_t i = key.hash() >> (64 - kTailSlotBits);; ++i) {
    std::uint32_t& s = slots_[i & (kTailSlots - 1)];
    if (s == 0 || tail_[s - 1].key == key) return s;
  }
}

ScratchIndex::~ScratchIndex() {
  store_.reset();  // closed before its files go
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

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

Result<std::unique_ptr<ScratchIndex>> ScratchIndex::open(const fs::path& parent, std::size_t cache_bytes) {
  std::error_code ec;
  if (!fs::is_directory(parent, ec))
    return Status::error("audit scratch index: " + parent.string() + " is not a directory");
  remove_left_behind(parent);
  std::string tmpl = (parent / (std::string(kDirPrefix) + std::to_string(::getpid()) + "-XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr)
    return Status::error("audit scratch index: cannot make a directory under " + parent.string() + ": " +
                         std::strerror(errno));
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

std::optional<std::string> ScratchIndex::find(const ScratchKey& key) {
  if (!error_.ok()) return std::nullopt;
  if (const std::uint32_t s = slot(key); s != 0) return tail_[s - 1].value;
  auto stored = store_->get(key.bytes());
  if (!stored) {
    error_ = stored.status();
    return std::nullopt;
  }
  return std::move(stored).value();
}

std::optional<std::string> ScratchIndex::insert(const ScratchKey& key, std::string_view value) {
  // Integer ids come in increasing order (the writer counts them per partition): one above every
  // id of its kind and partition inserted so far is new without a lookup.
  if (const auto n = key.number_value()) {
    auto [highest, first] = highest_.try_emplace(key.prefix(), *n);
    if (first || *n > highest->second) {
      highest->second = *n;
      put(key, std::string(value));
      return std::nullopt;
    }
  }
  auto was = find(key);
  if (!was && error_.ok()) put(key, std::string(value));
  return was;
}

void ScratchIndex::put(const ScratchKey& key, std::string value) {
  if (!error_.ok()) return;
  std::uint32_t& s = slot(key);
  if (s != 0) {
    tail_[s - 1].value = std::move(value);
    return;
  }
  tail_.push_back(TailEntry{key, std::move(value)});
  s = static_cast<std::uint32_t>(tail_.size());
  if (tail_.size() >= kTailEntriesMax) write_tail();
  KOBO_ASSERT(tail_.size() < kTailEntriesMax, "the tail is written once it is full");
}

void ScratchIndex::write_tail() {
  KOBO_ASSERT(!tail_.empty(), "a tail to write");
  error_ = store_->write(tail_);
  tail_.clear();
  std::fill(slots_.begin(), slots_.end(), 0);
}

}  // namespace kobo::audit
