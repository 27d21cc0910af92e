#pragma once
// Which partition a business lives in: Kafka's murmur2 of the key (the business id), masked
// positive, modulo the partition count, so Java producers and consumers agree with us.

#include <cstdint>
#include <string_view>

#include "common/assert.h"
#include "events/types.h"

namespace kobo {

std::uint32_t murmur2(std::string_view key);
inline Partition partition_for(std::string_view business_id, std::uint32_t partitions) {
  KOBO_ASSERT(partitions > 0, "a business lives in one of the log's partitions: it has one at least");
  return Partition((murmur2(business_id) & 0x7fffffffu) % partitions);
}

}  // namespace kobo
