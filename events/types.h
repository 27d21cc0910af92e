#pragma once
// Strong types for the quantities that must never be mixed up: money, log positions,
// partitions and the ids of ledger records. Each wraps one value and allows only the
// operations that make sense.

#include <compare>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace kobo {

template <typename T, typename Tag>
struct Named {
  T value{};
  constexpr Named() = default;
  constexpr explicit Named(T v) : value(v) {}
  constexpr auto operator<=>(const Named&) const = default;
};

// Position of an event in its partition's hash chain: gapless from 1.
using Seq = Named<std::uint64_t, struct SeqTag>;
// Position of a record in a log backend (Kafka offset; the embedded log uses seq - 1).
using Offset = Named<std::uint64_t, struct OffsetTag>;
// A log partition; every business lives in exactly one.
using Partition = Named<std::uint32_t, struct PartitionTag>;
// A writer generation: each writer that takes a partition appends WriterStarted with epoch + 1.
using Epoch = Named<std::uint64_t, struct EpochTag>;

// The public id of a ledger record ("vba-…", "trx-…"). A wallet id where a transaction id is
// expected is a bug the compiler catches.
template <typename Tag>
struct Id {
  std::string value;
  Id() = default;
  explicit Id(std::string v) : value(std::move(v)) {}
  bool empty() const { return value.empty(); }
  auto operator<=>(const Id&) const = default;
};
using AccountId = Id<struct AccountIdTag>;          // acc-…
using WalletId = Id<struct WalletIdTag>;            // vba-…: wallets, transit and collection wallets
using TransactionId = Id<struct TransactionIdTag>;  // trx-…
using BankAccountId = Id<struct BankAccountIdTag>;  // bka-…: a saved beneficiary
using HoldId = Id<struct HoldIdTag>;                // hld-…: a hold (extensions section 2)
using BatchId = Id<struct BatchIdTag>;              // blk-…: a bulk transfer

// What the ids the writer makes start with: the id of a wallet (of any kind) and of a transaction
// record, followed by a uuid v4. A posting's account is a wallet exactly when it starts so.
inline constexpr std::string_view kWalletIdPrefix = "vba-";
inline constexpr std::string_view kTransactionIdPrefix = "trx-";

// An amount of naira in kobo. Signed: system accounts go negative by design.
struct Kobo {
  std::int64_t value = 0;
  constexpr Kobo() = default;
  constexpr explicit Kobo(std::int64_t v) : value(v) {}
  constexpr auto operator<=>(const Kobo&) const = default;
  constexpr Kobo operator+(Kobo o) const { return Kobo(value + o.value); }
  constexpr Kobo operator-(Kobo o) const { return Kobo(value - o.value); }
  constexpr Kobo operator-() const { return Kobo(-value); }
  constexpr Kobo& operator+=(Kobo o) {
    value += o.value;
    return *this;
  }
  constexpr Kobo& operator-=(Kobo o) {
    value -= o.value;
    return *this;
  }
};

// a + b, or nullopt where it would overflow: money arithmetic on input goes through these.
constexpr std::optional<Kobo> checked_add(Kobo a, Kobo b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a.value, b.value, &r)) return std::nullopt;
  return Kobo(r);
}
constexpr std::optional<Kobo> checked_sub(Kobo a, Kobo b) {
  std::int64_t r = 0;
  if (__builtin_sub_overflow(a.value, b.value, &r)) return std::nullopt;
  return Kobo(r);
}

}  // namespace kobo

template <typename T, typename Tag>
struct std::hash<kobo::Named<T, Tag>> {
  std::size_t operator()(const kobo::Named<T, Tag>& n) const noexcept { return std::hash<T>{}(n.value); }
};

template <typename Tag>
struct std::hash<kobo::Id<Tag>> {
  std::size_t operator()(const kobo::Id<Tag>& id) const noexcept {
    return std::hash<std::string>{}(id.value);
  }
};
