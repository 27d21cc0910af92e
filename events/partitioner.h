#pragma once
// Which partition a business lives in: Kafka's murmur2 of the key (the business id), masked
// positive, modulo the partition count, so Java producers and consumers agree with us.

#include <cstdint>
#include <string_view>

#include "events/types.h"

namespace kobo {

std::uint32_t murmur2(std::string_view key);
inline Partition partition_for(std::string_view business_id, std::uint32_t partitions) {
  return Partition((murmur2(business_id) & 0x7fffffffu) % partitions);
}

}  // namespace kobo
