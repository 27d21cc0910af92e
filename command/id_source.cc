#include "command/id_source.h"

#include <array>

#include "common/assert.h"
#include "common/crypto.h"

namespace kobo {

std::string IdSource::uuid() {
  UuidBytes b;
  fill(b.data(), b.size());
  b[6] = static_cast<std::uint8_t>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<std::uint8_t>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  std::string text = format_uuid(b);
  // The wallets' index packs a uuid v4 into 128 bits (command/state.h WalletKey).
  KOBO_ASSERT(text.size() == 36 && text[14] == '4', "a drawn id is a uuid v4");
  return text;
}

std::string IdSource::uuid_v7(UnixMs at) {
  KOBO_ASSERT(at >= 0 && static_cast<std::uint64_t>(at) >> 48 == 0, "a uuid v7's time fits 48 bits");
  UuidBytes b;
  fill(b.data() + 6, b.size() - 6);
  for (int i = 0; i < 6; ++i) b[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(at >> (8 * (5 - i)));
  b[6] = static_cast<std::uint8_t>((b[6] & 0x0f) | 0x70);  // version 7
  b[8] = static_cast<std::uint8_t>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  std::string text = format_uuid(b);
  KOBO_ASSERT(text.size() == 36 && text[14] == '7', "a drawn time-ordered id is a uuid v7");
  return text;
}

void RandomIds::fill(std::uint8_t* out, std::size_t n) {
  KOBO_ASSERT(out != nullptr || n == 0, "bytes are drawn into a buffer");
  random_bytes(out, n);
}

void SeededIds::fill(std::uint8_t* out, std::size_t n) {
  KOBO_ASSERT(out != nullptr || n == 0, "bytes are drawn into a buffer");
  for (std::size_t done = 0; done < n;) {
    const Sha256 block = sha256(std::to_string(seed_) + "|" + std::to_string(counter_++));
    for (std::size_t i = 0; i < block.size() && done < n; ++i) out[done++] = block[i];
  }
}

}  // namespace kobo
