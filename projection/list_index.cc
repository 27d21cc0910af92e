#include "projection/list_index.h"

#include <rocksdb/db.h>

#include <algorithm>
#include <functional>
#include <memory>

#include "projection/bitmap.h"
#include "projection/view_keys.h"

namespace kobo::list_index {

namespace {

using bitmap::Chunk;

struct Part {
  std::uint32_t chunk = 0;
  Chunk bits;
};
using Parts = std::vector<Part>;  // ascending by chunk

// The chunks of bitmap `prefix` from chunk `first` to `last`, those that exist.
Result<Parts> read_parts(const rocksdb::DB& db, const std::string& prefix, std::uint32_t first,
                         std::uint32_t last) {
  KOBO_ASSERT(first <= last, "a chunk range that ends before it starts");
  Parts out;
  const std::string upper = view_keys::bitmap_chunk(prefix, last) + '\0';
  rocksdb::Slice bound(upper);
  rocksdb::ReadOptions read;
  read.iterate_upper_bound = &bound;
  std::unique_ptr<rocksdb::Iterator> it(const_cast<rocksdb::DB&>(db).NewIterator(read));
  for (it->Seek(view_keys::bitmap_chunk(prefix, first)); it->Valid(); it->Next()) {
    const std::string_view key(it->key().data(), it->key().size());
    if (!key.starts_with(prefix)) break;
    if (key.size() != prefix.size() + 4) return Status::error("views: a list bitmap's key is malformed");
    const auto chunk = static_cast<std::uint32_t>(view_keys::get_be(key, prefix.size(), 4));
    if (chunk > last) break;
    auto bits = bitmap::decode(std::string_view(it->value().data(), it->value().size()));
    if (!bits)
      return Status::error("views read " + view_keys::describe(key) + ": " + bits.status().message());
    KOBO_ASSERT(chunk >= first && (out.empty() || out.back().chunk < chunk),
                "a bitmap's chunks are read from the first asked for, in ascending order");
    out.push_back(Part{chunk, std::move(bits).value()});
  }
  if (!it->status().ok()) return Status::error("views scan: " + it->status().ToString());
  return out;
}

bool ascending(const Parts& parts) {
  return std::adjacent_find(parts.begin(), parts.end(),
                            [](const Part& a, const Part& b) { return a.chunk >= b.chunk; }) == parts.end();
}

// `into` AND `other`, both ascending by chunk.
void intersect(Parts& into, const Parts& other) {
  // The merge below walks both sides once, forward.
  KOBO_ASSERT(ascending(into) && ascending(other), "an intersection of parts in ascending chunk order");
  std::size_t kept = 0, j = 0;
  for (std::size_t i = 0; i < into.size(); ++i) {
    while (j < other.size() && other[j].chunk < into[i].chunk) ++j;
    if (j == other.size()) break;
    if (other[j].chunk != into[i].chunk) continue;
    into[i].bits.and_with(other[j].bits);
    if (kept != i) into[kept] = into[i];
    ++kept;
  }
  into.resize(kept);
  KOBO_ASSERT(into.size() <= other.size(), "an intersection with more chunks than one side");
}

// Keeps numbers [from, to) of `parts`.
void keep_range(Parts& parts, std::uint64_t from, std::uint64_t to) {
  KOBO_ASSERT(from <= to, "a range of numbers that ends before it starts");
  std::size_t kept = 0;
  for (Part& p : parts) {
    const std::uint64_t base = bitmap::first_of(p.chunk);
    const std::uint64_t lo = std::clamp(from, base, base + bitmap::kChunkBits) - base;
    const std::uint64_t hi = std::clamp(to, base, base + bitmap::kChunkBits) - base;
    if (lo >= hi) continue;
    p.bits.keep(static_cast<std::uint32_t>(lo), static_cast<std::uint32_t>(hi));
    if (p.bits.empty()) continue;
    parts[kept++] = p;
  }
  parts.resize(kept);
  KOBO_ASSERT(ascending(parts) && std::ranges::none_of(parts, [](const Part& p) { return p.bits.empty(); }),
              "the parts kept are in ascending chunk order, none of them empty");
}

// Every number in [from, to), as parts.
Parts every(std::uint64_t from, std::uint64_t to) {
  Parts out;
  if (from >= to) return out;
  for (std::uint32_t c = bitmap::chunk_of(from); c <= bitmap::chunk_of(to - 1); ++c)
    out.push_back(Part{c, {}});
  for (Part& p : out) p.bits = Chunk::range(0, bitmap::kChunkBits);
  keep_range(out, from, to);
  KOBO_ASSERT(!out.empty(), "a non-empty range has a chunk");
  return out;
}

std::uint64_t count(const Parts& parts) {
  std::uint64_t n = 0;
  for (const Part& p : parts) n += p.bits.count();
  KOBO_ASSERT(n <= parts.size() * std::uint64_t{bitmap::kChunkBits}, "more numbers than the chunks hold");
  return n;
}

// Walks `parts` from the highest number down, from the `skip`-th highest on.
class Downward {
 public:
  Downward(const Parts& parts, std::uint64_t skip) : parts_(parts), chunk_(parts.size()) {
    while (chunk_ > 0) {
      const std::uint32_t here = parts_[chunk_ - 1].bits.count();
      if (skip < here) {
        left_ = here - static_cast<std::uint32_t>(skip);
        break;
      }
      skip -= here;
      --chunk_;
    }
    KOBO_ASSERT(chunk_ == 0 || left_ > 0, "a walk not done has a number left in its chunk");
  }
  bool done() const { return chunk_ == 0; }
  std::uint64_t next() {
    KOBO_ASSERT(!done() && left_ > 0, "walked past the lowest number");
    const Part& p = parts_[chunk_ - 1];
    const std::uint64_t n = bitmap::first_of(p.chunk) + p.bits.select(--left_);
    KOBO_ASSERT(bitmap::chunk_of(n) == p.chunk, "a number walked lies in its chunk");
    if (left_ == 0) {
      --chunk_;
      while (chunk_ > 0 && (left_ = parts_[chunk_ - 1].bits.count()) == 0) --chunk_;
    }
    return n;
  }

 private:
  const Parts& parts_;
  std::size_t chunk_;       // one past the chunk being walked
  std::uint32_t left_ = 0;  // its bits not walked yet (those below)
};

// How many numbers of `parts` are >= n.
std::uint64_t at_or_above(const Parts& parts, std::uint64_t n) {
  std::uint64_t out = 0;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    const std::uint64_t base = bitmap::first_of(it->chunk);
    if (base >= n) {
      out += it->bits.count();
      continue;
    }
    if (base + bitmap::kChunkBits > n) out += it->bits.count() - it->bits.count_below(bitmap::bit_of(n));
    break;
  }
  KOBO_ASSERT(out <= count(parts), "more numbers at or above n than in all");
  return out;
}

}  // namespace

Result<std::uint64_t> first_at_or_after(const Times& times, std::uint64_t count, UnixMs t) {
  std::uint64_t lo = 0, hi = count;  // the answer is in [lo, hi]
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    const auto m = times.latest(mid);
    if (!m) return m.status();
    if (m.value() >= t)
      hi = mid;
    else
      lo = mid + 1;
  }
  KOBO_ASSERT(lo <= count, "a time's first record past the list");
  return lo;
}

Result<Found> find(const rocksdb::DB& db, const Query& q, const rows::ListRow& list, const Times* times) {
  KOBO_ASSERT(times != nullptr || (!q.from && !q.until && list.displaced == 0),
              "a list query by time, or of a list with displaced records, reads the records' times");
  Found out;
  const std::uint64_t n = list.count;
  if (n == 0 || (q.from && q.until && *q.from >= *q.until)) return out;
  // The records that are not displaced and match the time range are those in [lo, hi).
  std::uint64_t lo = 0, hi = n;
  if (q.from) {
    auto first = first_at_or_after(*times, n, *q.from);
    if (!first) return first.status();
    lo = first.value();
  }
  if (q.until) {
    auto first = first_at_or_after(*times, n, *q.until);
    if (!first) return first.status();
    hi = first.value();
  }
  KOBO_ASSERT(lo <= hi && hi <= n, "a time range's records lie in the list, in order");
  const bool displaced = list.displaced > 0;
  // A displaced record in the range may lie anywhere from lo on: its latest time is past its own.
  const std::uint64_t end = displaced ? n : hi;
  if (lo >= end) return out;
  const std::uint32_t first_chunk = bitmap::chunk_of(lo), last_chunk = bitmap::chunk_of(end - 1);

  Parts matched;
  if (q.bitmaps.empty()) {
    matched = every(lo, end);
  } else {
    for (std::size_t i = 0; i < q.bitmaps.size(); ++i) {
      auto parts = read_parts(db, q.bitmaps[i], first_chunk, last_chunk);
      if (!parts) return parts.status();
      if (i == 0)
        matched = std::move(parts).value();
      else
        intersect(matched, parts.value());
      if (matched.empty()) return out;
    }
    keep_range(matched, lo, end);
  }

  // The displaced records that match, with their times, and the others in [lo, hi).
  struct Late {
    UnixMs time;
    std::uint64_t number;
  };
  std::vector<Late> late;
  if (displaced) {
    auto parts = read_parts(
        db, view_keys::bitmap(q.kind, q.scope, view_keys::list::kDisplaced, view_keys::list::value("")),
        first_chunk, last_chunk);
    if (!parts) return parts.status();
    Parts late_parts = matched;
    intersect(late_parts, parts.value());
    for (const Part& p : late_parts) {
      Status failed;
      p.bits.each([&](std::uint32_t bit) {
        if (!failed.ok()) return;
        const std::uint64_t number = bitmap::first_of(p.chunk) + bit;
        const auto t = times->time(number);
        if (!t) {
          failed = t.status();
          return;
        }
        if ((q.from && t.value() < *q.from) || (q.until && t.value() >= *q.until)) return;
        late.push_back(Late{t.value(), number});
      });
      if (!failed) return failed;
    }
    // The others: not displaced, and within [lo, hi). A merge of two sides ascending by chunk.
    KOBO_ASSERT(ascending(matched) && ascending(parts.value()), "the displaced are taken out in chunk order");
    std::size_t kept = 0, j = 0;
    for (std::size_t i = 0; i < matched.size(); ++i) {
      while (j < parts.value().size() && parts.value()[j].chunk < matched[i].chunk) ++j;
      if (j < parts.value().size() && parts.value()[j].chunk == matched[i].chunk)
        matched[i].bits.and_not(parts.value()[j].bits);
      matched[kept++] = matched[i];
    }
    matched.resize(kept);
    keep_range(matched, lo, hi);
  }

  const std::uint64_t in_place = count(matched);
  out.total = in_place + late.size();
  if (q.offset >= out.total || q.limit == 0) return out;
  const std::uint64_t page_end = q.offset + std::min(q.limit, out.total - q.offset);
  if (late.empty()) {
    Downward walk(matched, q.offset);
    for (std::uint64_t p = q.offset; p < page_end; ++p) out.numbers.push_back(walk.next());
    KOBO_ASSERT(out.numbers.size() <= q.limit && out.total >= page_end, "a page holds its limit at most");
    KOBO_ASSERT(
        std::adjacent_find(out.numbers.begin(), out.numbers.end(), std::less_equal<>()) == out.numbers.end(),
        "a page of records in place is newest first, each once");
    return out;
  }

  // Newest first: the displaced by (time, number) descending; each goes after the records that
  // are not displaced and are newer than it, those whose latest time is past its time.
  std::sort(late.begin(), late.end(), [](const Late& a, const Late& b) {
    return std::pair{a.time, a.number} > std::pair{b.time, b.number};
  });
  std::vector<std::uint64_t> position(late.size());
  for (std::size_t i = 0; i < late.size(); ++i) {
    const auto newer_from = first_at_or_after(*times, n, late[i].time + 1);
    if (!newer_from) return newer_from.status();
    position[i] = at_or_above(matched, newer_from.value()) + i;
    KOBO_ASSERT(i == 0 || position[i] > position[i - 1], "displaced records out of order");
  }
  std::size_t d = 0;
  while (d < late.size() && position[d] < q.offset) ++d;
  Downward walk(matched, q.offset - d);  // the not-displaced records before the page: offset - d
  for (std::uint64_t p = q.offset; p < page_end; ++p) {
    if (d < late.size() && position[d] == p)
      out.numbers.push_back(late[d++].number);
    else
      out.numbers.push_back(walk.next());
  }
  KOBO_ASSERT(d <= late.size() && out.numbers.size() == page_end - q.offset,
              "a page holds the records of its positions, displaced or not");
  return out;
}

}  // namespace kobo::list_index
