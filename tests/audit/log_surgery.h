#pragma once
// LogSurgery: raw access to the records of an embedded log on disk, for tamper tests. It knows
// events/embedded_log.cc's key layout ('e', partition as 4 big-endian bytes, offset as 8) and
// nothing else: what it writes is whatever bytes the test makes, valid or not.
//
// The log must not be open anywhere else. Not thread-safe.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "events/event.h"

namespace rocksdb {
class DB;
}

namespace kobo::testing {

class LogSurgery {
 public:
  explicit LogSurgery(const std::filesystem::path& log_dir);
  ~LogSurgery();
  LogSurgery(const LogSurgery&) = delete;
  LogSurgery& operator=(const LogSurgery&) = delete;

  std::uint32_t partitions() const { return partitions_; }
  // The records of partition p in offset order.
  std::vector<std::string> records(std::uint32_t p) const;
  // Replaces partition p with `records`, at offsets 0, 1, … (the embedded log's offsets are dense).
  void rewrite(std::uint32_t p, const std::vector<std::string>& records);

 private:
  std::unique_ptr<rocksdb::DB> db_;
  std::uint32_t partitions_ = 0;
};

// The wire form of a wallet transfer with its credit posting's amount set to `amount` and
// everything else, the hash included, as it was: what an editor who cannot recompute hashes
// leaves behind.
std::string with_amount_unsealed(const std::string& record, std::int64_t amount);
// The same edit, re-sealed: its own hash is right, the next event's prevHash is not.
std::string with_amount_resealed(const std::string& record, std::int64_t amount);

// Copies a data directory (the log, the views, everything) to `to`, which must not exist.
void copy_data_dir(const std::filesystem::path& from, const std::filesystem::path& to);

// Where a record is.
struct RecordAt {
  std::uint32_t partition = 0;
  std::size_t offset = 0;
  std::uint64_t seq = 0;
};

// The first wallet transfer (one event, both postings) that is neither first nor last in its
// partition. Throws when the log has none.
RecordAt find_wallet_transfer(const LogSurgery& log);

// The tampers of the audit tests, each done to the first wallet transfer (at `at`):
enum class Tamper {
  edit_amount,           // the credit posting's amount + 1, the hash left as it was
  edit_amount_resealed,  // the credit posting's amount + 1 and a fresh hash of its own
  drop,                  // removed; the records after it move up
  swap,                  // exchanged with the next record
  insert,                // a forged transfer crediting 1,000,000 kobo from nowhere, chained to the record
                         // before and put in front of it
};
const char* to_string(Tamper t);
// Does `t` to a copy's log and says where.
RecordAt tamper(LogSurgery& log, Tamper t);

}  // namespace kobo::testing
