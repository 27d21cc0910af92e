#pragma once
// LEB128 varints for compact binary forms (events/fact_codec.h, projection/rows.h): unsigned
// integers seven bits a byte, signed ones zigzag-encoded first so small magnitudes stay short.
// VarintReader reads from the front of a byte string and fails for good at the first thing it
// cannot read (never reading past the end). Header-only; pure.

#include <cstdint>
#include <string>
#include <string_view>

namespace kobo {

inline void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
inline void put_signed_varint(std::string& out, std::int64_t v) {
  put_varint(out, (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
}
inline void put_length_prefixed(std::string& out, std::string_view s) {
  put_varint(out, s.size());
  out.append(s);
}

class VarintReader {
 public:
  explicit VarintReader(std::string_view bytes) : rest_(bytes) {}
  bool ok() const { return ok_; }
  bool done() const { return rest_.empty(); }
  std::size_t left() const { return rest_.size(); }

  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64 && !rest_.empty(); shift += 7) {
      const auto b = static_cast<unsigned char>(rest_.front());
      rest_.remove_prefix(1);
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    fail();
    return 0;
  }
  std::int64_t signed_varint() {
    const std::uint64_t z = varint();
    return static_cast<std::int64_t>((z >> 1) ^ (~(z & 1) + 1));
  }
  unsigned char byte() {
    if (rest_.empty()) {
      fail();
      return 0;
    }
    const auto b = static_cast<unsigned char>(rest_.front());
    rest_.remove_prefix(1);
    return b;
  }
  std::string_view length_prefixed() {
    const std::uint64_t n = varint();
    if (!ok_ || n > rest_.size()) {
      fail();
      return {};
    }
    const std::string_view s = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return s;
  }
  void fail() {
    ok_ = false;
    rest_ = {};
  }

 private:
  std::string_view rest_;
  bool ok_ = true;
};

}  // namespace kobo
