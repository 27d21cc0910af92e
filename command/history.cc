#include "command/history.h"

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_buffer_manager.h>

#include <charconv>
#include <map>
#include <type_traits>
#include <variant>

#include "common/crypto.h"
#include "common/log.h"
#include "events/ledger.h"
#include "events/rocksdb_logger.h"

namespace kobo {

namespace {

// The index's key layout; an index of another layout is emptied and rebuilt from the log.
constexpr std::string_view kFormatKey = "#format";
constexpr std::string_view kHistoryFormat = "1";

// Keys: a tag byte, then what the fact is found by. Values are as small as the fact allows.
constexpr char kReferenceTag = 'r';            // scope_key(account, mode) + reference -> fingerprint, trx
constexpr char kCollectionReferenceTag = 'c';  // scope_key(account, mode) + reference -> ""
constexpr char kBulkReferenceTag = 'k';        // scope_key(account, mode) + reference -> fingerprint, blk
constexpr char kBankAccountTag = 'b';          // bka-… -> integer id (decimal)
constexpr char kCollectionTag = 'n';           // account number -> mode byte + business
constexpr char kHoldReferenceTag = 'o';        // scope_key(account, mode) + reference -> fingerprint, hld
constexpr char kHoldTag = 'H';                 // hld-… -> mode byte + business

constexpr std::size_t kFingerprintBytes = 32;

std::string tagged(char tag, std::string_view a, std::string_view b = {}) {
  // The index's own keys (#format, #position/…) start with '#': no fact's key does.
  KOBO_ASSERT(tag != '#' && tag != '\0', "a fact's key starts with its tag");
  std::string key;
  key.reserve(1 + a.size() + b.size());
  key.push_back(tag);
  key.append(a);
  key.append(b);
  return key;
}

std::string reference_key(std::string_view account, bool live, std::string_view reference) {
  return tagged(kReferenceTag, scope_key(account, live), reference);
}

std::string collection_reference_key(std::string_view account, bool live, std::string_view reference) {
  return tagged(kCollectionReferenceTag, scope_key(account, live), reference);
}

std::string position_key(std::uint32_t partition) {
  std::string key = "#position/" + std::to_string(partition);
  KOBO_ASSERT(key.front() == kFormatKey.front(),
              "the index's own keys share the '#' no fact's key starts with");
  return key;
}

std::string encode_position(const IndexPosition& p) {
  KOBO_ASSERT(p.seq.value >= 1 && p.hash.size() == kGenesisHash.size(), "an index position is an event's");
  return std::to_string(p.seq.value) + " " + p.hash;
}

std::optional<IndexPosition> decode_position(std::string_view text) {
  const auto space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::uint64_t seq = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + space, seq);
  if (ec != std::errc() || end != text.data() + space) return std::nullopt;
  // encode_position() writes an event's position: seq from 1, the event's hash.
  if (seq == 0 || text.size() - space - 1 != kGenesisHash.size()) return std::nullopt;
  KOBO_ASSERT(seq >= 1 && text.size() == space + 1 + kGenesisHash.size(), "a position read is an event's");
  return IndexPosition{Seq(seq), std::string(text.substr(space + 1))};
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// A fingerprint is 64 hex digits; the index keeps its 32 bytes.
std::string encode_reference(const ReferenceState& r) {
  KOBO_ASSERT(r.fingerprint.size() == 2 * kFingerprintBytes, "a fingerprint is a hex SHA-256");
  KOBO_ASSERT(!r.transaction.empty(),
              "a reference names its record (the decoder refuses one that names none)");
  std::string out;
  out.reserve(kFingerprintBytes + r.transaction.size());
  for (std::size_t i = 0; i < kFingerprintBytes; ++i) {
    const int hi = hex_digit(r.fingerprint[2 * i]);
    const int lo = hex_digit(r.fingerprint[2 * i + 1]);
    KOBO_ASSERT(hi >= 0 && lo >= 0, "a fingerprint is lower-case hex");
    out.push_back(static_cast<char>(hi << 4 | lo));
  }
  out.append(r.transaction);
  KOBO_ASSERT(out.size() == kFingerprintBytes + r.transaction.size(),
              "a reference is 32 bytes, then its record");
  return out;
}

Result<ReferenceState> decode_reference(std::string_view v) {
  if (v.size() <= kFingerprintBytes) return Status::error("history index: a reference entry is truncated");
  ReferenceState r{to_hex(reinterpret_cast<const std::uint8_t*>(v.data()), kFingerprintBytes),
                   std::string(v.substr(kFingerprintBytes))};
  KOBO_ASSERT(r.fingerprint.size() == 2 * kFingerprintBytes && !r.transaction.empty(),
              "a reference names its fingerprint and its record");
  return r;
}

Status store_error(std::string_view what, const rocksdb::Status& s) {
  KOBO_ASSERT(!s.ok(), "an error of a store operation that failed");
  return Status::error("history index: " + std::string(what) + ": " + s.ToString(),
                       s.IsNoSpace() ? ErrorKind::no_space : ErrorKind::other);
}

}  // namespace

// ---- stores ------------------------------------------------------------------------------------

class History::Store {
 public:
  virtual ~Store() = default;
  [[nodiscard]] virtual Result<std::optional<std::string>> get(const std::string& key) const = 0;
  // All of `entries` or none of them.
  [[nodiscard]] virtual Status write(const std::unordered_map<std::string, std::string>& entries) = 0;
  [[nodiscard]] virtual Status clear() = 0;
  [[nodiscard]] virtual Status sync() = 0;
  [[nodiscard]] virtual Status reopen() = 0;
  [[nodiscard]] virtual Status checkpoint(const std::filesystem::path& dir) = 0;
};

namespace {

// The unit tests' and tools' index: a map, as exact as the disk and as volatile as the process.
class MemoryStore final : public History::Store {
 public:
  Result<std::optional<std::string>> get(const std::string& key) const override {
    const auto it = map_.find(key);
    if (it == map_.end()) return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  }
  Status write(const std::unordered_map<std::string, std::string>& entries) override {
    KOBO_ASSERT(!entries.empty(), "a write of the tail writes something");
    for (const auto& [k, v] : entries) map_[k] = v;
    return {};
  }
  Status clear() override {
    map_.clear();
    return {};
  }
  Status sync() override { return {}; }
  Status reopen() override { return {}; }
  Status checkpoint(const std::filesystem::path&) override {
    return Status::error("the history index is kept in memory: it has no files to copy");
  }

 private:
  std::map<std::string, std::string, std::less<>> map_;
};

// The service's index: RocksDB in the data dir. Its memory is bounded by `cache_bytes`: the block
// cache holds the data blocks, the index and Bloom filter blocks (charged to it, not held per
// file), and the memtables are charged to it through a WriteBufferManager.
class RocksStore final : public History::Store {
 public:
  RocksStore(std::filesystem::path dir, std::size_t cache_bytes) : dir_(std::move(dir)) {
    // 16 shards: each holds a fair share of a small cache (the default, 64 shards of 1 MiB at
    // 64 MiB, could hold no filter block of a large file, and reread it on every lookup).
    cache_ = rocksdb::NewLRUCache(cache_bytes, /*num_shard_bits=*/4);
    options_.create_if_missing = true;
    options_.info_log = rocksdb_logger("history");
    options_.max_bgerror_resume_count = 0;  // a write error is cleared by reopen(), as the log's is
    options_.compression = rocksdb::kLZ4Compression;
    options_.bottommost_compression = rocksdb::kZSTD;
    options_.max_open_files = 512;
    options_.write_buffer_size = std::max<std::size_t>(cache_bytes / 8, std::size_t{1} << 20);
    options_.max_write_buffer_number = 2;
    options_.write_buffer_manager = std::make_shared<rocksdb::WriteBufferManager>(cache_bytes / 4, cache_);
    // Most lookups are of references never used: a Bloom filter on the memtable and on every file
    // answers them without reading a block.
    options_.memtable_prefix_bloom_size_ratio = 0.05;
    options_.memtable_whole_key_filtering = true;
    // Filters and indexes partitioned into 4 KiB blocks under a small top-level index that stays
    // pinned: a lookup reads the one partition it needs through the cache, so the cache bounds
    // memory whatever the index's size, and a larger history costs cache misses, not memory.
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
  }

  Status open() {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) return Status::error("history index: create " + dir_.string() + ": " + ec.message());
    rocksdb::DB* raw = nullptr;
    const auto s = rocksdb::DB::Open(options_, dir_.string(), &raw);
    if (!s.ok()) return store_error("open " + dir_.string(), s);
    db_.reset(raw);
    KOBO_ASSERT(db_ != nullptr, "an open index has its database");
    return {};
  }

  Result<std::optional<std::string>> get(const std::string& key) const override {
    if (!db_) return closed();
    std::string value;
    const auto s = db_->Get(rocksdb::ReadOptions(), key, &value);
    if (s.IsNotFound()) return std::optional<std::string>();
    if (!s.ok()) return store_error("read", s);
    return std::optional<std::string>(std::move(value));
  }

  Status write(const std::unordered_map<std::string, std::string>& entries) override {
    KOBO_ASSERT(!entries.empty(), "a write of the tail writes something");
    if (!db_) return closed();
    rocksdb::WriteBatch batch;
    for (const auto& [k, v] : entries)
      if (auto s = batch.Put(k, v); !s.ok()) return store_error("batch", s);
    // No write-ahead log: the log is this index's. A crash loses the memtables, positions and
    // facts together (a flush writes a consistent prefix), and the next start notes the log after
    // the position the files hold again. sync() flushes before a snapshot relies on the index.
    rocksdb::WriteOptions wo;
    wo.disableWAL = true;
    const auto s = db_->Write(wo, &batch);
    return s.ok() ? Status() : store_error("write", s);
  }

  Status clear() override {
    db_.reset();
    const auto s = rocksdb::DestroyDB(dir_.string(), options_);
    if (!s.ok()) return store_error("remove " + dir_.string(), s);
    return open();
  }

  Status sync() override {
    if (!db_) return closed();
    const auto s = db_->Flush(rocksdb::FlushOptions());
    return s.ok() ? Status() : store_error("flush", s);
  }

  Status reopen() override {
    db_.reset();
    return open();
  }

  Status checkpoint(const std::filesystem::path& dir) override {
    if (!db_) return closed();
    rocksdb::Checkpoint* raw = nullptr;
    if (const auto s = rocksdb::Checkpoint::Create(db_.get(), &raw); !s.ok())
      return store_error("checkpoint", s);
    const std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
    // 0: the memtables are flushed first, so the copy holds every fact written (the index writes
    // no write-ahead log that could carry them instead).
    const auto s = checkpoint->CreateCheckpoint(dir.string(), /*log_size_for_flush=*/0);
    return s.ok() ? Status() : store_error("checkpoint into " + dir.string(), s);
  }

 private:
  // After a reopen that failed: every call answers this until one succeeds.
  Status closed() const { return Status::error("history index: " + dir_.string() + " is not open"); }

  std::filesystem::path dir_;
  std::shared_ptr<rocksdb::Cache> cache_;
  rocksdb::Options options_;
  std::unique_ptr<rocksdb::DB> db_;
};

}  // namespace

// ---- History -----------------------------------------------------------------------------------

History::History(std::unique_ptr<Store> store, std::uint32_t partitions)
    : store_(std::move(store)),
      position_(partitions),
      tail_position_(partitions),
      indexed_seq_(std::make_unique<std::atomic<std::uint64_t>[]>(partitions)) {
  KOBO_ASSERT(store_ != nullptr && partitions > 0, "an index of one partition at least");
}

History::~History() = default;

Result<std::unique_ptr<History>> History::open(const HistoryOptions& options) {
  std::unique_ptr<Store> store;
  if (options.dir.empty()) {
    store = std::make_unique<MemoryStore>();
  } else {
    auto rocks = std::make_unique<RocksStore>(options.dir, options.cache_bytes);
    if (auto s = rocks->open(); !s) return s;
    store = std::move(rocks);
  }
  std::unique_ptr<History> h(new History(std::move(store), options.partitions));
  auto format = h->store_->get(std::string(kFormatKey));
  if (!format) return format.status();
  if (format.value() && *format.value() != kHistoryFormat) {
    log::warn("the history index has another layout; it is rebuilt from the log",
              {{"format", *format.value()}, {"expected", std::string(kHistoryFormat)}});
    if (auto s = h->clear(); !s) return s;
    return h;
  }
  for (std::uint32_t p = 0; p < options.partitions; ++p) {
    auto stored = h->store_->get(position_key(p));
    if (!stored) return stored.status();
    if (!stored.value()) continue;
    const auto position = decode_position(*stored.value());
    if (!position) {
      // Derived data that does not decode is rebuilt, never trusted nor fatal.
      log::warn("the history index's position does not decode; it is rebuilt from the log",
                {{"partition", p}});
      if (auto s = h->clear(); !s) return s;
      return h;
    }
    h->position_[p] = *position;
  }
  h->tail_position_ = h->position_;
  h->publish_position();
  KOBO_ASSERT(h->tail_.empty() && h->position_.size() == options.partitions, "an index opens with no tail");
  return h;
}

Result<std::optional<std::string>> History::find(const std::string& key) const {
  KOBO_ASSERT(key.size() >= 2, "a fact is found by its tag and a name");
  if (const auto it = tail_.find(key); it != tail_.end()) return std::optional<std::string>(it->second);
  return store_->get(key);
}

Result<std::optional<ReferenceState>> History::transfer_reference(std::string_view account, bool live,
                                                                  std::string_view reference) const {
  auto v = find(reference_key(account, live, reference));
  if (!v) return v.status();
  if (!v.value()) return std::optional<ReferenceState>();
  auto r = decode_reference(*v.value());
  if (!r) return r.status();
  return std::optional<ReferenceState>(std::move(r).value());
}

Result<std::optional<ReferenceState>> History::bulk_reference(std::string_view account, bool live,
                                                              std::string_view reference) const {
  auto v = find(tagged(kBulkReferenceTag, scope_key(account, live), reference));
  if (!v) return v.status();
  if (!v.value()) return std::optional<ReferenceState>();
  auto r = decode_reference(*v.value());
  if (!r) return r.status();
  return std::optional<ReferenceState>(std::move(r).value());
}

Result<bool> History::collection_reference_taken(std::string_view account, bool live,
                                                 std::string_view reference) const {
  auto v = find(collection_reference_key(account, live, reference));
  if (!v) return v.status();
  return v.value().has_value();
}

Result<std::optional<std::uint64_t>> History::bank_account(std::string_view id) const {
  auto v = find(tagged(kBankAccountTag, id));
  if (!v) return v.status();
  if (!v.value()) return std::optional<std::uint64_t>();
  std::uint64_t n = 0;
  const std::string& text = *v.value();
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n == 0)
    return Status::error("history index: a bank account entry does not decode");
  KOBO_ASSERT(n >= 1, "a bank account's integer id counts from 1");
  return std::optional<std::uint64_t>(n);
}

Result<std::optional<ReferenceState>> History::hold_reference(std::string_view account, bool live,
                                                              std::string_view reference) const {
  auto v = find(tagged(kHoldReferenceTag, scope_key(account, live), reference));
  if (!v) return v.status();
  if (!v.value()) return std::optional<ReferenceState>();
  auto r = decode_reference(*v.value());
  if (!r) return r.status();
  return std::optional<ReferenceState>(std::move(r).value());
}

Result<std::optional<CollectionOwner>> History::hold(std::string_view id) const {
  return owner(tagged(kHoldTag, id));
}

Result<std::optional<CollectionOwner>> History::collection(std::string_view account_number) const {
  return owner(tagged(kCollectionTag, account_number));
}

Result<std::optional<CollectionOwner>> History::owner(const std::string& key) const {
  auto v = find(key);
  if (!v) return v.status();
  if (!v.value()) return std::optional<CollectionOwner>();
  const std::string& text = *v.value();
  // note() writes a mode byte and the business: anything else is not an owner entry.
  if (text.size() < 2 || (text[0] != 'l' && text[0] != 't'))
    return Status::error("history index: an owner entry does not decode");
  KOBO_ASSERT(text.size() >= 2, "an owner entry read is a mode byte and a business");
  return std::optional<CollectionOwner>(CollectionOwner{text.substr(1), text[0] == 'l'});
}

void History::note(const Event& e) {
  auto remember_reference = [&](const AccountId& account, const std::string& reference,
                                std::string fingerprint, const TransactionId& transaction) {
    set(reference_key(account.value, e.live, reference),
        encode_reference(ReferenceState{std::move(fingerprint), transaction.value}));
  };
  // owner() reads a mode byte and the business: an event that notes an owner is a business's.
  const auto owner_entry = [&] {
    KOBO_ASSERT(!e.business.empty(), "an owner entry names its business (owner() refuses one that does not)");
    return (e.live ? "l" : "t") + e.business;
  };
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, WalletTransferSettled> || std::is_same_v<T, BankTransferInitiated> ||
                      std::is_same_v<T, HoldCaptured>) {
          remember_reference(x.account, x.reference, request_fingerprint(request_of(x)), x.transaction);
        } else if constexpr (std::is_same_v<T, BeneficiarySaved>) {
          KOBO_ASSERT(x.id != 0, "a bank account's integer id counts from 1 (bank_account() refuses 0)");
          set(tagged(kBankAccountTag, x.bank_account.value), std::to_string(x.id));
        } else if constexpr (std::is_same_v<T, CollectionWalletOpened>) {
          set(tagged(kCollectionTag, x.account_number), owner_entry());
          if (x.reference) set(collection_reference_key(x.account.value, e.live, *x.reference), "");
        } else if constexpr (std::is_same_v<T, HoldPlaced>) {
          set(tagged(kHoldTag, x.hold.value), owner_entry());
          set(tagged(kHoldReferenceTag, scope_key(x.account.value, e.live), x.reference),
              encode_reference(ReferenceState{request_fingerprint(request_of(x, e.time)), x.hold.value}));
        } else if constexpr (std::is_same_v<T, BulkTransferAccepted>) {
          set(tagged(kBulkReferenceTag, scope_key(x.account.value, e.live), x.reference),
              encode_reference(ReferenceState{x.fingerprint, x.batch.value}));
        }
      },
      e.data);
  KOBO_ASSERT(e.partition.value < tail_position_.size(), "an event of one of the index's partitions");
  IndexPosition& at = tail_position_[e.partition.value];
  KOBO_ASSERT(e.seq.value == at.seq.value + 1, "history notes each partition's events in order");
  at = IndexPosition{e.seq, e.hash};
}

Status History::write_tail() {
  KOBO_ASSERT(!in_trial_, "a trial is undone before the tail is written");
  std::vector<std::uint32_t> moved;
  for (std::uint32_t p = 0; p < position_.size(); ++p)
    if (tail_position_[p].seq != position_[p].seq) moved.push_back(p);
  // The tail starts where the index is (drop_tail(), undo_trial()) and note() only moves it on.
  for (const std::uint32_t p : moved)
    KOBO_ASSERT(tail_position_[p].seq > position_[p].seq, "the index's position only moves forward");
  if (tail_.empty() && moved.empty()) return {};
  for (const std::uint32_t p : moved) tail_[position_key(p)] = encode_position(tail_position_[p]);
  tail_[std::string(kFormatKey)] = std::string(kHistoryFormat);
  if (auto s = store_->write(tail_); !s) {
    // Nothing of it reached the index: the entries stay in the tail, less the positions, which
    // the next write adds again.
    for (const std::uint32_t p : moved) tail_.erase(position_key(p));
    tail_.erase(std::string(kFormatKey));
    return s;
  }
  tail_.clear();
  position_ = tail_position_;
  publish_position();
  KOBO_ASSERT(tail_.empty() && position_.size() == tail_position_.size(), "a tail written is empty");
  return {};
}

void History::set(std::string key, std::string value) {
  KOBO_ASSERT(key.size() >= 2, "a fact's key is its tag and what it is found by");
  if (!in_trial_) {
    tail_[std::move(key)] = std::move(value);
    return;
  }
  const auto [it, added] = tail_.try_emplace(std::move(key));
  trial_undo_.emplace_back(it->first, added ? std::nullopt : std::optional<std::string>(it->second));
  it->second = std::move(value);
}

void History::begin_trial() {
  KOBO_ASSERT(!in_trial_, "history trials do not nest");
  in_trial_ = true;
  trial_undo_.clear();
  trial_position_ = tail_position_;
  KOBO_ASSERT(trial_position_.size() == position_.size(), "a trial keeps a position per partition");
}

void History::undo_trial() {
  KOBO_ASSERT(in_trial_, "undo of a history trial that did not begin");
  for (auto it = trial_undo_.rbegin(); it != trial_undo_.rend(); ++it) {
    if (it->second)
      tail_[it->first] = std::move(*it->second);
    else
      tail_.erase(it->first);
  }
  trial_undo_.clear();
  tail_position_ = trial_position_;
  in_trial_ = false;
  KOBO_ASSERT(tail_position_.size() == position_.size(), "a trial undone keeps a position per partition");
}

void History::drop_tail() {
  KOBO_ASSERT(!in_trial_, "a trial is undone before the tail is dropped");
  tail_.clear();
  tail_position_ = position_;
  KOBO_ASSERT(tail_position_.size() == position_.size(), "a tail position per partition");
}

Status History::clear() {
  KOBO_ASSERT(!in_trial_, "the index is not cleared in a trial");
  {
    std::lock_guard lock(store_mu_);
    if (auto s = store_->clear(); !s) return s;
  }
  tail_.clear();
  position_.assign(position_.size(), IndexPosition{});
  tail_position_ = position_;
  publish_position();
  KOBO_ASSERT(tail_.empty() && !position_.empty(),
              "a cleared index has no tail, and a position per partition");
  return {};
}

Status History::reopen() {
  std::lock_guard lock(store_mu_);
  return store_->reopen();
}

Status History::sync() {
  std::lock_guard lock(store_mu_);
  return store_->sync();
}

Status History::checkpoint(const std::filesystem::path& dir) {
  std::lock_guard lock(store_mu_);
  return store_->checkpoint(dir);
}

void History::publish_position() {
  KOBO_ASSERT(position_.size() == tail_position_.size(), "a position and a tail position per partition");
  for (std::size_t p = 0; p < position_.size(); ++p)
    indexed_seq_[p].store(position_[p].seq.value, std::memory_order_release);
}

}  // namespace kobo
