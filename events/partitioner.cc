#include "events/partitioner.h"

namespace kobo {

// Kafka's org.apache.kafka.common.utils.Utils.murmur2 (seed 0x9747b28c).
std::uint32_t murmur2(std::string_view key) {
  const std::uint32_t seed = 0x9747b28c;
  const std::uint32_t m = 0x5bd1e995;
  const int r = 24;
  const auto* data = reinterpret_cast<const unsigned char*>(key.data());
  const std::size_t length = key.size();
  std::uint32_t h = seed ^ static_cast<std::uint32_t>(length);
  const std::size_t length4 = length / 4;
  for (std::size_t i = 0; i < length4; ++i) {
    const std::size_t i4 = i * 4;
    std::uint32_t k = static_cast<std::uint32_t>(data[i4]) | (static_cast<std::uint32_t>(data[i4 + 1]) << 8) |
                      (static_cast<std::uint32_t>(data[i4 + 2]) << 16) |
                      (static_cast<std::uint32_t>(data[i4 + 3]) << 24);
    k *= m;
    k ^= k >> r;
    k *= m;
    h *= m;
    h ^= k;
  }
  switch (length % 4) {
    case 3:
      h ^= static_cast<std::uint32_t>(data[(length & ~3u) + 2]) << 16;
      [[fallthrough]];
    case 2:
      h ^= static_cast<std::uint32_t>(data[(length & ~3u) + 1]) << 8;
      [[fallthrough]];
    case 1:
      h ^= static_cast<std::uint32_t>(data[length & ~3u]);
      h *= m;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return h;
}

}  // namespace kobo
