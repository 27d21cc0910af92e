#pragma once
// ScratchIndex: what the audit checks the past against, on disk (docs/architecture.md section 5a,
// "The audit"). Internal to audit/; the auditor's model (model.h) keeps in memory what is per
// wallet and account or still in flight, and asks this index whatever grows with history: was
// this transaction id, integer id, reference, account number or name used before (and at which
// seq), and the records that have ended (paid collection wallets, settled payouts, ended holds).
//
// A RocksDB database in a fresh directory of its own, which open() makes under a parent (the
// audit's `--scratch-dir`, or the system's temporary directory) and the destructor removes. It is
// the audit's own, independent of the writer's history index (command/history.h): the audit
// shares with the writer only the event contract. Writes gather in an in-memory tail of at most
// kTailEntriesMax entries that lookups read first, and go to the database in one batch without a
// write-ahead log (a scratch index outlives no audit); the block cache and the memtables are
// bounded together by `cache_bytes`. So the audit's memory follows wallets, not history.
//
// An I/O error is kept (status()) and every lookup after it finds nothing: the auditor stops at
// the next event with that error, and the audit cannot run rather than reporting on half a past.
//
// Not thread-safe: the follower's thread alone uses it.

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "events/types.h"

namespace kobo::audit {

// A key of the index: a tag byte naming the kind of fact, the partition it is of (two bytes,
// big-endian), then what it is found by: an integer (eight bytes, big-endian) or the first 16
// bytes of a SHA-256 of a longer name (128 bits: no collision in any log that fits on a disk).
class ScratchKey {
 public:
  static constexpr std::size_t kPrefixSize = 1 + 2;  // tag and partition
  static constexpr std::size_t kNumberSize = kPrefixSize + 8;
  static constexpr std::size_t kSizeMax = kPrefixSize + 16;
  static constexpr std::uint32_t kPartitionsMax = 65'536;

  // `tag`'s fact of partition p found by a number.
  static ScratchKey number(char tag, Partition p, std::uint64_t n);
  // `tag`'s fact of partition p found by the names a and b (a digest of both).
  static ScratchKey digest(char tag, Partition p, std::string_view a, std::string_view b = {});

  std::string_view bytes() const { return {bytes_.data(), size_}; }
  // The number a number's key is found by; nullopt for a digest's.
  std::optional<std::uint64_t> number_value() const;
  // The tag and partition, as one integer.
  std::uint32_t prefix() const;
  // Mixes the bytes after the prefix (a digest's, or a number's) with it.
  std::uint64_t hash() const;
  bool operator==(const ScratchKey& other) const { return bytes() == other.bytes(); }

 private:
  ScratchKey(char tag, Partition p);
  std::array<char, kSizeMax> bytes_{};
  std::uint8_t size_ = 0;
};

class ScratchIndex {
 public:
  // Entries the tail holds before they are written to the database in one batch.
  static constexpr std::size_t kTailEntriesMax = 65'536;
  // Makes a fresh directory under `parent` (which must exist) and opens the index there, its
  // block cache and memtables within `cache_bytes` (AuditOptions::scratch_cache_bytes).
  [[nodiscard]] static Result<std::unique_ptr<ScratchIndex>> open(const std::filesystem::path& parent,
                                                                  std::size_t cache_bytes);
  // Closes the index and removes its directory.
  ~ScratchIndex();
  ScratchIndex(const ScratchIndex&) = delete;
  ScratchIndex& operator=(const ScratchIndex&) = delete;

  // The value stored at `key`, or nullopt.
  std::optional<std::string> find(const ScratchKey& key);
  // Stores `value` at `key` unless the key is there; returns the value that was there (nullopt:
  // the key is new, and now holds `value`).
  std::optional<std::string> insert(const ScratchKey& key, std::string_view value = {});
  // Stores `value` at `key`, replacing what was there.
  void put(const ScratchKey& key, std::string value);

  // The first I/O error met; ok while there was none.
  [[nodiscard]] const Status& status() const { return error_; }
  // Entries written but not yet in the database (at most kTailEntriesMax).
  std::size_t tail_size() const { return tail_.size(); }
  const std::filesystem::path& dir() const { return dir_; }

  class Store;  // the RocksDB database (scratch_index.cc)

 private:
  struct TailEntry {
    ScratchKey key;
    std::string value;
  };
  // Slots of the tail's open-addressing table: twice its entries, a power of two.
  static constexpr int kTailSlotBits = 17;
  static constexpr std::size_t kTailSlots = std::size_t{1} << kTailSlotBits;
  static_assert(kTailSlots >= 2 * kTailEntriesMax, "the tail's table is at most half full");

  ScratchIndex(std::filesystem::path dir, std::unique_ptr<Store> store);
  // The tail's slot that holds `key`, or the empty slot where it would go.
  std::uint32_t& slot(const ScratchKey& key);
  void write_tail();

  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
  // The tail: entries in the order written, found through slots_ (each an index into tail_ plus
  // one; 0 is empty). Both keep their memory from one write to the next.
  std::vector<TailEntry> tail_;
  std::vector<std::uint32_t> slots_;
  // Per tag and partition of number keys, the highest number inserted (a few entries).
  std::unordered_map<std::uint32_t, std::uint64_t> highest_;
  Status error_;
};

}  // namespace kobo::audit
