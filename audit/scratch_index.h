#pragma once
// ScratchIndex: what the audit checks the past against, on disk (docs/architecture.md section 5a,
// "The audit"). Internal to audit/; the auditor's model (model.h) keeps in memory what is per
// wallet and account or still in flight, and gives this index whatever grows with history:
//   - claims: every id, integer id, account number, name and reference an event uses, which no
//     later event may use again. Claims are only written, never looked up one by one: they gather
//     in a batch of at most kClaimsBatchMax, sorted, and go to the database in one write; at the
//     end of the log reuses() reads them once in key order, and a claim of a name after its first
//     is a reuse. RocksDB's compactions are the external sort, so a claim costs the same at any
//     log size, where a lookup of a name never used would miss a bounded cache more and more
//     often as the history grows.
//   - records that have ended (a paid collection wallet, a settled payout, an ended hold), found
//     by their id when a later event names them (put() and find(), with Bloom filters).
//
// A RocksDB database (a column family each) in a fresh directory of its own, kobo-audit-<pid>-XXXXXX,
// which open() makes under a parent (the audit's `--scratch-dir`, or the system's temporary
// directory) and the destructor removes; one that a killed audit left is removed by the next
// audit under the same parent. It is the audit's own, independent of the writer's history index
// (command/history.h): the audit shares with the writer only the event contract. Nothing is
// written ahead (a scratch index outlives no audit), and the block cache and the memtables are
// bounded together by `cache_bytes`: the audit's memory follows wallets, not history.
//
// An I/O error is kept (status()), and every call after it does nothing (find() finds nothing):
// the auditor stops at the next event with that error, and the audit cannot run rather than
// reporting on half a past.
//
// Not thread-safe: the follower's thread alone uses it.

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "events/types.h"

namespace kobo::audit {

// A name in the index: a tag byte naming its kind, the partition it is of (two bytes,
// big-endian), then 16 bytes: an integer (big-endian, then zeros) or the first 16 bytes of a
// SHA-256 of a longer name (128 bits: no collision in any log that fits on a disk).
class ScratchKey {
 public:
  static constexpr std::size_t kSize = 1 + 2 + 16;
  static constexpr std::uint32_t kPartitionsMax = 65'536;
  using Bytes = std::array<char, kSize>;

  // `tag`'s name of partition p that is a number.
  static ScratchKey number(char tag, Partition p, std::uint64_t n);
  // `tag`'s name of partition p that is a and b (a digest of both).
  static ScratchKey digest(char tag, Partition p, std::string_view a, std::string_view b = {});

  std::string_view bytes() const { return {bytes_.data(), bytes_.size()}; }
  char tag() const { return bytes_[0]; }
  Partition partition() const;
  bool operator==(const ScratchKey& other) const = default;

 private:
  ScratchKey(char tag, Partition p);
  Bytes bytes_{};
};

// A claim of a name after its first claim: where it is, and where the name was first claimed.
struct Reuse {
  char tag = 0;
  Partition partition{0};
  Seq seq{0};                 // the event of the reuse
  std::uint16_t ordinal = 0;  // which of that event's claims
  Seq first{0};               // the event of the first claim
};

class ScratchIndex {
 public:
  // Claims gathered before one sorted write to the database.
  static constexpr std::size_t kClaimsBatchMax = 65'536;

  // Makes a fresh directory under `parent` (which must exist) and opens the index there, its
  // block cache and memtables within `cache_bytes` (AuditOptions::scratch_cache_bytes).
  [[nodiscard]] static Result<std::unique_ptr<ScratchIndex>> open(const std::filesystem::path& parent,
                                                                  std::size_t cache_bytes);
  // Closes the index and removes its directory.
  ~ScratchIndex();
  ScratchIndex(const ScratchIndex&) = delete;
  ScratchIndex& operator=(const ScratchIndex&) = delete;

  // ---- claims
  // Notes that the event at `seq` (of key's partition) uses `name`, as its `ordinal`-th claim.
  void claim(const ScratchKey& name, Seq seq, std::uint16_t ordinal);
  // Reads every claim once, in the order of their names, and hands each claim of a name after
  // its first (by seq, then ordinal) to `visit`. At the end of the log, once.
  [[nodiscard]] Status reuses(const std::function<void(const Reuse&)>& visit);
  // Claims not yet written to the database (at most kClaimsBatchMax).
  std::size_t claims_pending() const { return claims_.size(); }

  // ---- records that have ended
  // The record stored at `key`, or nullopt.
  std::optional<std::string> find(const ScratchKey& key);
  // Stores `value` at `key`, replacing what was there.
  void put(const ScratchKey& key, std::string_view value);

  // The first I/O error met; ok while there was none.
  [[nodiscard]] const Status& status() const { return error_; }
  const std::filesystem::path& dir() const { return dir_; }

  class Store;  // the RocksDB database (scratch_index.cc)

 private:
  // A claim as the database keeps it: the name, the seq (big-endian) and the ordinal.
  static constexpr std::size_t kClaimSize = ScratchKey::kSize + 8 + 2;
  using ClaimBytes = std::array<char, kClaimSize>;

  ScratchIndex(std::filesystem::path dir, std::unique_ptr<Store> store);
  void write_claims();

  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
  std::vector<ClaimBytes> claims_;  // keeps its memory from one write to the next
  Status error_;
};

}  // namespace kobo::audit
