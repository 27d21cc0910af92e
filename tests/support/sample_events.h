#pragma once
// Small events for the log's own tests, which care about the envelope and the chain, not about
// what the ledger decided.

#include <cstdint>
#include <string>

#include "events/event.h"

namespace kobo::test {

// Gives `e` the smallest data of `type` that differs for each `n`: a writer's epoch, or, in
// business "biz-test", the wallet a collection wallet expiry names ("vba-<n>").
inline void set_sample_data(Event& e, EventType type, std::uint64_t n) {
  if (type == EventType::writer_started) {
    e.business.clear();
    e.data = WriterStarted{Epoch(n)};
  } else {
    e.business = "biz-test";
    e.data = CollectionWalletExpired{WalletId("vba-" + std::to_string(n))};
  }
}

}  // namespace kobo::test
