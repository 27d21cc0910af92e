#pragma once
// The lists of the views (docs/architecture.md section 5): every kind of record of a scope (a
// business and a mode) that a list route shows is numbered from 0 in log order, and every value
// of every filter of the route is a bitmap over those numbers (view_keys.h `X`, in chunks:
// bitmap.h). So any combination of filters is an AND of bitmaps, its exact totalCount a count of
// bits, page N a select from the top (lists are newest first), and a createdAt range a range of
// numbers. Nothing reads a record to filter it: a list reads O(records / 2^14) chunks per filter
// and renders only the page. A record whose filtered member changes (a transaction's status)
// moves from one value's bitmap to another's; the record itself is not rewritten.
//
// Newest first is the order of (time, number), descending. Log order is that order except when
// a writer's clock went back: a record whose time is earlier than the latest time before it in
// its list is *displaced* (it is in a bitmap of its own, and its row says by how much: its
// delay). The list's *latest* time at record n, M(n) = time(n) + delay(n), never decreases, so
// a time range is a range of numbers for the other records, found by binary search; displaced
// records are few, each checked and placed among the others by its time (find() below).
// Thread safety: pure functions over a database the caller holds open.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "projection/rows.h"

namespace rocksdb {
class DB;
}

namespace kobo::list_index {

// The times of a list's records, for the lists ordered by time (transactions, holds).
class Times {
 public:
  virtual ~Times() = default;
  // Record `number`'s own time, and the list's latest time at it, M(number).
  [[nodiscard]] virtual Result<UnixMs> time(std::uint64_t number) const = 0;
  [[nodiscard]] virtual Result<UnixMs> latest(std::uint64_t number) const = 0;
};

struct Query {
  char kind = 0;
  std::string scope;                 // view_keys::scope17
  std::vector<std::string> bitmaps;  // view_keys::bitmap of each filter; none: every record
  std::optional<UnixMs> from;        // records with time >= from (needs times)
  std::optional<UnixMs> until;       // records with time < until (needs times)
  std::uint64_t offset = 0;          // the page: positions [offset, offset + limit), newest first
  std::uint64_t limit = 0;
};

struct Found {
  std::uint64_t total = 0;             // how many records match: the exact totalCount
  std::vector<std::uint64_t> numbers;  // the page's records, newest first
};

// The records of list `list` (its ListRow) that match `q`, and its page. `times` is needed when
// the query has a time range or the list has displaced records (else it may be null).
[[nodiscard]] Result<Found> find(const rocksdb::DB& db, const Query& q, const rows::ListRow& list,
                                 const Times* times);

// The first number in [0, count) whose latest time is >= t (count when none): where a time
// range starts among the records that are not displaced.
[[nodiscard]] Result<std::uint64_t> first_at_or_after(const Times& times, std::uint64_t count, UnixMs t);

}  // namespace kobo::list_index
