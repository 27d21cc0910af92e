#pragma once
// History: the writer's answers to questions about the past (docs/architecture.md, "Hot state in
// memory, history on disk"). Was this transfer reference used, and for which request? Is this
// collection reference taken? Which integer id has this bank account? Whose collection wallet had
// this account number? The answers grow with every command ever made, so they live on disk, in a
// RocksDB index derived from the log (<data-dir>/history: Bloom filters, a block cache of a
// named size), and the writer's memory (state.h) holds only what it decides with.
//
// The index never holds a fact the log does not. The writer notes each event's facts into an
// in-memory tail as it applies the event, and writes the tail to the index, with the log
// position it reaches, only once the events are durable in the log. A lookup reads the tail
// first, then the index, so its answer is exact at every moment. The index writes no
// write-ahead log of its own (the event log is its log): a crash loses what its memtables held,
// facts and position together, and the writer's start notes the log after the position its
// files hold into the tail again. sync() flushes it, before a snapshot relies on it.
//
// Lifecycle: open(), then the writer thread alone uses it; indexed_seq() and sync() are
// thread-safe (the Snapshotter calls them).

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/assert.h"
#include "common/result.h"
#include "events/event.h"

namespace kobo {

// What a transfer reference was first used for (idempotency: a repeat with the same request is
// answered with `transaction`, another request with the reference is a conflict).
struct ReferenceState {
  std::string fingerprint;  // request_fingerprint() of the request that first used it (hex)
  std::string transaction;  // publicId of the transaction it produced
};

// Whose a collection wallet's account number (or a hold) was: a payment to it once it has closed
// is refused as inactive to its owner, and as an unknown account to anyone else.
struct CollectionOwner {
  std::string business;
  bool live = false;
  bool operator==(const CollectionOwner&) const = default;
};

// The last event of a partition whose facts the index holds; seq 0: none yet.
struct IndexPosition {
  Seq seq{0};
  std::string hash;
};

struct HistoryOptions {
  std::filesystem::path dir;  // empty: kept in memory (unit tests, tools)
  std::uint32_t partitions = 6;
  std::size_t cache_bytes = std::size_t{64} << 20;  // block cache and memtables together (--writer-cache-mb)
};

class History {
 public:
  class Store;  // where the index lives: RocksDB, or memory

  [[nodiscard]] static Result<std::unique_ptr<History>> open(const HistoryOptions& options);
  ~History();
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  // ---- lookups (writer thread): the tail first, then the index; an error is the index's I/O.
  [[nodiscard]] Result<std::optional<ReferenceState>> transfer_reference(std::string_view account, bool live,
                                                                         std::string_view reference) const;
  // What a bulk transfer's reference was first used for (`transaction`: the bulk's blk-… id).
  [[nodiscard]] Result<std::optional<ReferenceState>> bulk_reference(std::string_view account, bool live,
                                                                     std::string_view reference) const;
  [[nodiscard]] Result<bool> collection_reference_taken(std::string_view account, bool live,
                                                        std::string_view reference) const;
  [[nodiscard]] Result<std::optional<std::uint64_t>> bank_account(std::string_view id) const;
  [[nodiscard]] Result<std::optional<CollectionOwner>> collection(std::string_view account_number) const;
  // What a hold reference was first used for (`transaction`: the hold's publicId, hld-…).
  [[nodiscard]] Result<std::optional<ReferenceState>> hold_reference(std::string_view account, bool live,
                                                                     std::string_view reference) const;
  // Whose hold `id` (hld-…) is: a capture or void of one that has ended is refused as not pending
  // to its owner, and as unknown to anyone else.
  [[nodiscard]] Result<std::optional<CollectionOwner>> hold(std::string_view id) const;

  // ---- the writer's side (writer thread)
  // Notes the facts of an accepted event into the tail (every event moves the tail's position).
  void note(const Event& e);
  // Writes the tail and the positions it reaches to the index, then empties it. Call it only
  // when every noted event is durable in the log.
  [[nodiscard]] Status write_tail();
  // Forgets the tail: its events may not be in the log (an append failed).
  void drop_tail();
  // A trial (a bulk transfer's items decided one after the other, command/bulk.h): what note()
  // adds after begin_trial() is taken back by undo_trial(), leaving the tail as it was. Trials do
  // not nest.
  void begin_trial();
  void undo_trial();
  std::size_t tail_size() const { return tail_.size(); }
  // The last event of partition p noted, in the tail or the index.
  Seq noted_seq(Partition p) const {
    KOBO_ASSERT(p.value < tail_position_.size(), "the notes of one of the index's partitions");
    return tail_position_[p.value].seq;
  }
  // Where the index is, per partition (the tail not included).
  const std::vector<IndexPosition>& position() const { return position_; }
  // Empties the index, to rebuild it from the log (it holds facts of another log).
  [[nodiscard]] Status clear();
  // Reopens the index after a write failed (a full disk): RocksDB refuses writes until then.
  [[nodiscard]] Status reopen();

  // ---- thread-safe
  // The seq up to which partition p's facts are written to the index.
  Seq indexed_seq(Partition p) const { return Seq(indexed_seq_[p.value].load(std::memory_order_acquire)); }
  // Makes what was written to the index durable: flushes its memtables (a snapshot is written
  // only after it).
  [[nodiscard]] Status sync();
  // A copy of the index as written so far, in `dir` (which must not exist): a RocksDB checkpoint,
  // its memtables flushed first and its files linked where the disk allows. For a peer that
  // joins the cluster (docs/architecture.md, "A new node"). An index kept in memory has none.
  [[nodiscard]] Status checkpoint(const std::filesystem::path& dir);

 private:
  History(std::unique_ptr<Store> store, std::uint32_t partitions);
  [[nodiscard]] Result<std::optional<std::string>> find(const std::string& key) const;
  [[nodiscard]] Result<std::optional<CollectionOwner>> owner(const std::string& key) const;
  void publish_position();

  std::mutex store_mu_;  // guards store_ against sync() and checkpoint() while reopen() replaces it
  std::unique_ptr<Store> store_;
  void set(std::string key, std::string value);  // into the tail, journalled during a trial

  std::unordered_map<std::string, std::string> tail_;  // key -> value, not yet in the index
  bool in_trial_ = false;
  std::vector<std::pair<std::string, std::optional<std::string>>> trial_undo_;  // key, value before
  std::vector<IndexPosition> trial_position_;
  std::vector<IndexPosition> position_;       // of the index
  std::vector<IndexPosition> tail_position_;  // of the index and the tail
  std::unique_ptr<std::atomic<std::uint64_t>[]> indexed_seq_;
};

}  // namespace kobo
