#include "projection/bitmap.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

#include "common/varint.h"

namespace kobo::bitmap {

void Chunk::set(std::uint32_t bit) {
  KOBO_ASSERT(bit < kChunkBits, "a bit past its chunk");
  words_[bit / 64] |= std::uint64_t{1} << (bit % 64);
}

void Chunk::clear(std::uint32_t bit) {
  KOBO_ASSERT(bit < kChunkBits, "a bit past its chunk");
  words_[bit / 64] &= ~(std::uint64_t{1} << (bit % 64));
}

bool Chunk::test(std::uint32_t bit) const {
  KOBO_ASSERT(bit < kChunkBits, "a bit past its chunk");
  return (words_[bit / 64] >> (bit % 64)) & 1;
}

std::uint32_t Chunk::count() const {
  std::uint32_t n = 0;
  for (const std::uint64_t w : words_) n += static_cast<std::uint32_t>(__builtin_popcountll(w));
  KOBO_ASSERT(n <= kChunkBits, "a chunk counts more bits than it has");
  return n;
}

std::uint32_t Chunk::count_below(std::uint32_t bit) const {
  KOBO_ASSERT(bit <= kChunkBits, "a rank past its chunk");
  std::uint32_t n = 0;
  for (std::uint32_t w = 0; w < bit / 64; ++w)
    n += static_cast<std::uint32_t>(__builtin_popcountll(words_[w]));
  if (bit % 64 != 0)
    n += static_cast<std::uint32_t>(
        __builtin_popcountll(words_[bit / 64] & ((std::uint64_t{1} << (bit % 64)) - 1)));
  KOBO_ASSERT(n <= bit, "no more bits below `bit` than there are bits below it");
  return n;
}

std::uint32_t Chunk::select(std::uint32_t rank) const {
  for (std::uint32_t w = 0; w < kWords; ++w) {
    std::uint64_t bits = words_[w];
    const auto here = static_cast<std::uint32_t>(__builtin_popcountll(bits));
    if (rank >= here) {
      rank -= here;
      continue;
    }
    for (; rank > 0; --rank) bits &= bits - 1;
    KOBO_ASSERT(bits != 0, "the word that holds the rank-th set bit still holds it");
    return w * 64 + static_cast<std::uint32_t>(__builtin_ctzll(bits));
  }
  KOBO_ASSERT(false, "a select past a chunk's count");
  return kChunkBits;
}

bool Chunk::empty() const {
  for (const std::uint64_t w : words_)
    if (w != 0) return false;
  return true;
}

void Chunk::and_with(const Chunk& other) {
  for (std::uint32_t w = 0; w < kWords; ++w) words_[w] &= other.words_[w];
  KOBO_ASSERT(count() <= other.count(), "an AND holds more than one side");
}

void Chunk::and_not(const Chunk& other) {
  for (std::uint32_t w = 0; w < kWords; ++w) words_[w] &= ~other.words_[w];
  KOBO_ASSERT(disjoint(other), "an AND NOT kept a bit of the other side");
}

void Chunk::keep(std::uint32_t from, std::uint32_t to) {
  KOBO_ASSERT(from <= to && to <= kChunkBits, "a range past its chunk");
  and_with(range(from, to));
}

Chunk Chunk::range(std::uint32_t from, std::uint32_t to) {
  Chunk c;
  c.set_range(from, to);
  KOBO_ASSERT(c.count() == to - from, "a range sets every bit in it and no other");
  return c;
}

void Chunk::set_range(std::uint32_t from, std::uint32_t to) {
  KOBO_ASSERT(from <= to && to <= kChunkBits, "a range past its chunk");
  for (std::uint32_t w = from / 64; w < kWords && w * 64 < to; ++w) {
    const std::uint32_t lo = std::max(from, w * 64) - w * 64;
    const std::uint32_t hi = std::min(to, w * 64 + 64) - w * 64;  // 1..64
    const std::uint64_t upto = hi == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << hi) - 1;
    words_[w] |= upto & ~((std::uint64_t{1} << lo) - 1);
  }
  KOBO_ASSERT(from == to || (test(from) && test(to - 1)), "a range set holds its ends");
}

bool Chunk::disjoint(const Chunk& other) const {
  for (std::uint32_t w = 0; w < kWords; ++w)
    if ((words_[w] & other.words_[w]) != 0) return false;
  return true;
}

namespace {

enum Encoding : unsigned char { kDeltas = 0, kRuns = 1, kBitset = 2 };

std::size_t varint_size(std::uint64_t v) {
  std::size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  KOBO_ASSERT(n <= 10, "a 64-bit varint takes 10 bytes at most");
  return n;
}

}  // namespace

std::uint32_t Chunk::find_from(std::uint32_t from, bool set) const {
  KOBO_ASSERT(from <= kChunkBits, "a search from past its chunk");
  for (std::uint32_t w = from / 64; w < kWords; ++w) {
    std::uint64_t bits = set ? words_[w] : ~words_[w];
    if (w == from / 64) bits &= ~std::uint64_t{0} << (from % 64);
    if (bits != 0) return w * 64 + static_cast<std::uint32_t>(__builtin_ctzll(bits));
  }
  return kChunkBits;
}

std::string encode(const Chunk& c) {
  // How many bits are set and how many runs they make, a word at a time: a run starts at a set
  // bit whose lower neighbour is clear.
  std::size_t bits = 0, runs = 0;
  std::uint64_t below = 0;  // the top bit of the word before
  for (const std::uint64_t w : c.words_) {
    if (w == 0) {  // most words of a sparse chunk (popcount is a call where the build targets no POPCNT)
      below = 0;
      continue;
    }
    bits += static_cast<std::size_t>(__builtin_popcountll(w));
    runs += static_cast<std::size_t>(__builtin_popcountll(w & ~((w << 1) | below)));
    below = w >> 63;
  }
  const auto each_run = [&](auto&& fn) {  // fn(start, stop) of each run [start, stop), lowest first
    for (std::uint32_t start = c.find_from(0, true); start < kChunkBits;) {
      const std::uint32_t stop = c.find_from(start, false);
      fn(start, stop);
      start = stop < kChunkBits ? c.find_from(stop, true) : kChunkBits;
    }
  };
  // What each encoding takes. One that cannot be the smallest is not sized (kUnsized): a run takes
  // two bytes at least, and a bit's delta one.
  constexpr std::size_t kUnsized = SIZE_MAX;
  const std::size_t bitset = 1 + kChunkBits / 8;
  std::size_t run_bytes = kUnsized;
  if (1 + 2 * runs <= bitset) {
    run_bytes = 1;
    std::uint32_t end = 0;
    each_run([&](std::uint32_t start, std::uint32_t stop) {
      run_bytes += varint_size(start - end) + varint_size(stop - start - 1);
      end = stop;
    });
  }
  std::size_t deltas = kUnsized;
  if (1 + bits <= std::min(bitset, run_bytes)) {
    deltas = 1;
    std::int64_t previous = -1;
    c.each([&](std::uint32_t bit) {
      deltas += varint_size(static_cast<std::uint64_t>(static_cast<std::int64_t>(bit) - previous));
      previous = bit;
    });
  }
  KOBO_ASSERT(runs <= bits && (deltas == kUnsized || deltas <= 1 + 3 * bits),
              "each run holds a bit at least, and a bit's delta takes 3 bytes at most");
  std::string out;
  if (deltas <= run_bytes && deltas <= bitset) {
    out.reserve(deltas);
    out.push_back(static_cast<char>(kDeltas));
    std::int64_t previous = -1;
    c.each([&](std::uint32_t bit) {
      put_varint(out, static_cast<std::uint64_t>(static_cast<std::int64_t>(bit) - previous));
      previous = bit;
    });
  } else if (run_bytes <= bitset) {
    out.reserve(run_bytes);
    out.push_back(static_cast<char>(kRuns));
    std::uint32_t end = 0;
    each_run([&](std::uint32_t start, std::uint32_t stop) {
      put_varint(out, start - end);
      put_varint(out, stop - start - 1);
      end = stop;
    });
  } else {
    // The words little-endian, as this machine holds them.
    static_assert(std::endian::native == std::endian::little, "a bitset chunk is the words' bytes as held");
    out.resize(bitset);
    out[0] = static_cast<char>(kBitset);
    std::memcpy(out.data() + 1, c.words_.data(), kChunkBits / 8);
  }
  KOBO_ASSERT(static_cast<unsigned char>(out[0]) <= kBitset, "a chunk opens with its encoding");
  KOBO_ASSERT(out.size() == std::min({deltas, run_bytes, bitset}), "a chunk encoded in the fewest bytes");
  return out;
}

Result<Chunk> decode(std::string_view bytes) {
  const auto malformed = [] { return Status::error("a bitmap chunk of the views is malformed"); };
  if (bytes.empty()) return malformed();
  Chunk c;
  const auto kind = static_cast<unsigned char>(bytes[0]);
  VarintReader r(bytes.substr(1));
  if (kind == kDeltas) {
    std::int64_t bit = -1;
    while (r.ok() && !r.done()) {
      const std::uint64_t delta = r.varint();
      if (delta == 0 || delta > kChunkBits || bit + static_cast<std::int64_t>(delta) >= kChunkBits)
        return malformed();
      bit += static_cast<std::int64_t>(delta);
      c.set(static_cast<std::uint32_t>(bit));
    }
  } else if (kind == kRuns) {
    std::uint64_t end = 0;
    bool first = true;
    while (r.ok() && !r.done()) {
      const std::uint64_t gap = r.varint();
      const std::uint64_t length = r.varint() + 1;
      // Runs are maximal: two runs never touch (a gap of 0 is only allowed before the first).
      if (!r.ok() || (gap == 0 && !first) || gap > kChunkBits || length > kChunkBits ||
          end + gap + length > kChunkBits)
        return malformed();
      const std::uint64_t start = end + gap;
      end = start + length;
      KOBO_ASSERT(start < end && end <= kChunkBits, "a run read lies inside its chunk");
      c.set_range(static_cast<std::uint32_t>(start), static_cast<std::uint32_t>(end));
      first = false;
    }
  } else if (kind == kBitset) {
    if (bytes.size() != 1 + kChunkBits / 8) return malformed();
    std::memcpy(c.words_.data(), bytes.data() + 1, kChunkBits / 8);  // little-endian words (encode)
  } else {
    return malformed();
  }
  if (!r.ok()) return malformed();
  KOBO_ASSERT(r.done() || kind == kBitset, "a chunk's varints are read whole");
  // Whether the bytes are canonical (what encode() writes of them) is not checked here, on every
  // read of a list; the tests and the rebuild's comparison of views hold encode() to it.
  return c;
}

}  // namespace kobo::bitmap
