#pragma once
// Bitmaps of list numbers (view_keys.h `X`, list_index.h), kept as chunks of kChunkBits
// consecutive numbers: chunk c holds numbers [c * kChunkBits, (c + 1) * kChunkBits). In memory a
// chunk is a plain bitset (2 KiB); on disk it is the smallest of three encodings, chosen by its
// bits alone, so equal chunks are equal bytes whatever built them (a rebuild's views equal the
// live ones):
//
//   0x00 then delta varints          the numbers, each as its distance from the one before
//                                    (the first from -1): sparse chunks (an amount's)
//   0x01 then varint pairs           runs: (distance from the end of the run before, length - 1):
//                                    chunks in long stretches (a status most records have)
//   0x02 then kChunkBits / 8 bytes   the bitset, little-endian words: dense, mixed chunks
//
// Why chunks of 2^14 and not a library's 2^16 containers (CRoaring): the projector rewrites the
// newest chunk of each value it touches at every flush, and a dense 2^16 container is 8 KiB; a
// 2^14 chunk is at most 2 KiB, which keeps the rewrites a small part of what a flush writes,
// while a list of a million records is still only 62 chunks per filter. AND, count, rank and
// select over 256 words are a few lines each. Pure; thread-compatible.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace kobo::bitmap {

inline constexpr std::uint32_t kChunkShift = 14;
inline constexpr std::uint32_t kChunkBits = 1u << kChunkShift;
inline constexpr std::uint32_t kWords = kChunkBits / 64;

inline std::uint32_t chunk_of(std::uint64_t number) {
  return static_cast<std::uint32_t>(number >> kChunkShift);
}
inline std::uint32_t bit_of(std::uint64_t number) {
  return static_cast<std::uint32_t>(number & (kChunkBits - 1));
}
inline std::uint64_t first_of(std::uint32_t chunk) {
  return static_cast<std::uint64_t>(chunk) << kChunkShift;
}

class Chunk {
 public:
  void set(std::uint32_t bit);
  void clear(std::uint32_t bit);
  bool test(std::uint32_t bit) const;
  // How many bits are set, and how many of them are below `bit`.
  std::uint32_t count() const;
  std::uint32_t count_below(std::uint32_t bit) const;
  // The bit of the `rank`-th set bit from the lowest (0 for the lowest); rank < count().
  std::uint32_t select(std::uint32_t rank) const;
  bool empty() const;
  // Keeps the bits set in both; keeps those not set in `other`; keeps [from, to) only.
  void and_with(const Chunk& other);
  void and_not(const Chunk& other);
  void keep(std::uint32_t from, std::uint32_t to);
  // Every bit in [from, to) set.
  static Chunk range(std::uint32_t from, std::uint32_t to);
  // The set bits, lowest first, to fn(bit).
  template <typename Fn>
  void each(Fn&& fn) const {
    for (std::uint32_t w = 0; w < kWords; ++w)
      for (std::uint64_t bits = words_[w]; bits != 0; bits &= bits - 1)
        fn(w * 64 + static_cast<std::uint32_t>(__builtin_ctzll(bits)));
  }
  bool operator==(const Chunk&) const = default;

 private:
  friend std::string encode(const Chunk& c);
  friend Result<Chunk> decode(std::string_view bytes);
  bool disjoint(const Chunk& other) const;
  // The first bit at or after `from` that is set (`set`) or clear; kChunkBits when there is none.
  std::uint32_t find_from(std::uint32_t from, bool set) const;
  void set_range(std::uint32_t from, std::uint32_t to);
  std::array<std::uint64_t, kWords> words_{};
};

// The canonical bytes of a chunk (above), and back; bytes that are not a chunk's are an error.
std::string encode(const Chunk& c);
[[nodiscard]] Result<Chunk> decode(std::string_view bytes);

}  // namespace kobo::bitmap
