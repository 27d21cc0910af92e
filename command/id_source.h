#pragma once
// Where decide() gets the ids it assigns (the uuids of new wallets and transactions): an input,
// like the time, so that a decision is a pure function of (state, command, time, ids) and a
// seeded source replays a run exactly (STYLE "Pure cores, injected edges"). Every other id a
// record shows derives from these (events/ledger.h), so nothing else is drawn.
//
// Not thread-safe: a source belongs to one writer thread.

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/time.h"

namespace kobo {

class IdSource {
 public:
  virtual ~IdSource() = default;
  // `n` fresh bytes.
  virtual void fill(std::uint8_t* out, std::size_t n) = 0;

  std::string uuid();  // a UUID v4 in its 8-4-4-4-12 lowercase form
  // A UUID v7 (RFC 9562): `at` in milliseconds in its first 48 bits, then 74 fresh bits. Ids made
  // one after another sort together, so the views' index of them grows at its end
  // (docs/events.md, "Time-ordered transaction ids").
  std::string uuid_v7(UnixMs at);
};

// Cryptographically secure random bytes (common/crypto.h): what the service runs with.
class RandomIds final : public IdSource {
 public:
  void fill(std::uint8_t* out, std::size_t n) override;
};

// Bytes of SHA-256 in counter mode over a seed: the same seed, the same ids, for tests and
// simulation.
class SeededIds final : public IdSource {
 public:
  explicit SeededIds(std::uint64_t seed) : seed_(seed) {}
  void fill(std::uint8_t* out, std::size_t n) override;

 private:
  std::uint64_t seed_;
  std::uint64_t counter_ = 0;
};

}  // namespace kobo
