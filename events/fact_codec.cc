#include "events/fact_codec.h"

#include <cstdint>
#include <variant>

#include "common/varint.h"
#include "events/described.h"

namespace kobo {
namespace {

using described::Described;
using described::IsId;
using described::IsOptional;

constexpr unsigned char kFormat = 2;  // 2: transfers name their bulk (`batch`)

// The largest value of each enum the data may hold, for decoding checks; -1 for any other type.
template <typename E>
constexpr int last_enum() {
  if constexpr (std::is_same_v<E, TransactionStatus>)
    return static_cast<int>(TransactionStatus::failed);
  else if constexpr (std::is_same_v<E, CollectionStatus>)
    return static_cast<int>(CollectionStatus::expired);
  else if constexpr (std::is_same_v<E, WalletCategory>)
    return static_cast<int>(WalletCategory::secondary);
  else if constexpr (std::is_same_v<E, BeneficiaryType>)
    return static_cast<int>(BeneficiaryType::personal);
  else
    return -1;
}

template <typename T>
void put(std::string& out, const T& v) {
  [[maybe_unused]] const std::size_t before = out.size();
  // A struct of no members (BusinessResumed) takes no byte: its event's type says all of it.
  [[maybe_unused]] std::size_t members = 1;
  if constexpr (std::is_same_v<T, std::string>)
    put_length_prefixed(out, v);
  else if constexpr (std::is_same_v<T, bool>)
    out.push_back(v ? '\1' : '\0');
  else if constexpr (std::is_same_v<T, std::uint64_t>)
    put_varint(out, v);
  else if constexpr (std::is_same_v<T, Kobo>)
    put_signed_varint(out, v.value);
  else if constexpr (std::is_same_v<T, Epoch>)
    put_varint(out, v.value);
  else if constexpr (std::is_same_v<T, Timestamp>)
    put_signed_varint(out, v.ms);
  else if constexpr (std::is_same_v<T, RawJson>)
    put_length_prefixed(out, v.text);
  else if constexpr (std::is_enum_v<T>) {
    static_assert(last_enum<T>() >= 0, "an enum the fact form does not know");
    out.push_back(static_cast<char>(v));
  } else if constexpr (IsOptional<T>::value) {
    out.push_back(v ? '\1' : '\0');
    if (v) put(out, *v);
  } else if constexpr (IsId<T>::value)
    put_length_prefixed(out, v.value);
  else if constexpr (Described<T>) {
    members = 0;
    T::fields(v, [&](const char*, const auto& member) {
      ++members;
      put(out, member);
    });
  } else {
    put_varint(out, v.size());
    for (const auto& item : v) put(out, item);
  }
  // The reader's length checks count on it: every value takes a byte at least (no list holds a
  // struct of no members).
  KOBO_ASSERT(out.size() > before || members == 0, "every value of a fact but an empty struct takes a byte");
}

// Reads a fact's members in the order put() writes them.
class Reader : public VarintReader {
 public:
  using VarintReader::VarintReader;
  bool flag() {
    const unsigned char b = byte();
    if (b > 1) fail();
    KOBO_ASSERT(b <= 1 || !ok(), "a flag read is 0 or 1, or the read failed");
    return b == 1;
  }

  template <typename T>
  void get(T& v) {
    if (!ok()) return;
    if constexpr (std::is_same_v<T, std::string>) {
      const std::size_t had = left();
      v.assign(length_prefixed());
      // A length read is checked against what is left: a string never runs past the fact's end.
      KOBO_ASSERT(!ok() || had - left() > v.size(),
                  "a string read is its length and its bytes, inside the fact");
    } else if constexpr (std::is_same_v<T, bool>)
      v = flag();
    else if constexpr (std::is_same_v<T, std::uint64_t>)
      v = varint();
    else if constexpr (std::is_same_v<T, Kobo>)
      v.value = signed_varint();
    else if constexpr (std::is_same_v<T, Epoch>)
      v.value = varint();
    else if constexpr (std::is_same_v<T, Timestamp>)
      v.ms = signed_varint();
    else if constexpr (std::is_same_v<T, RawJson>) {
      const std::size_t had = left();
      v.text.assign(length_prefixed());
      KOBO_ASSERT(!ok() || had - left() > v.text.size(),
                  "raw JSON read is its length and its bytes, inside the fact");
    } else if constexpr (std::is_enum_v<T>) {
      const unsigned char b = byte();
      if (b > last_enum<T>()) {
        fail();
        return;
      }
      KOBO_ASSERT(b <= last_enum<T>(), "an enum is read in its range only");
      v = static_cast<T>(b);
    } else if constexpr (IsOptional<T>::value) {
      if (flag()) get(v.emplace());
    } else if constexpr (IsId<T>::value) {
      const std::size_t had = left();
      v.value.assign(length_prefixed());
      KOBO_ASSERT(!ok() || had - left() > v.value.size(),
                  "an id read is its length and its bytes, inside the fact");
    } else if constexpr (Described<T>)
      T::fields(v, [&](const char*, auto& member) { get(member); });
    else {
      const std::uint64_t n = varint();
      if (n > left()) fail();  // every item takes a byte at least
      for (std::uint64_t i = 0; ok() && i < n; ++i) get(v.emplace_back());
      KOBO_ASSERT(!ok() || v.size() >= n, "a list read whole holds every item it counts");
    }
  }
};

}  // namespace

void append_fact(std::string& out, const Event& e) {
  KOBO_ASSERT(e.data.index() < std::variant_size_v<EventData>, "a fact holds an event of a known type");
  KOBO_ASSERT(e.data.index() <= 0xff, "an event's type fits the fact's type byte");
  const std::size_t head = out.size();
  out.push_back(static_cast<char>(kFormat));
  out.push_back(static_cast<char>(e.data.index()));
  out.push_back(e.live ? '\1' : '\0');
  put_signed_varint(out, e.time);
  put_length_prefixed(out, e.business);
  std::visit([&](const auto& d) { put(out, d); }, e.data);
  // fact_time() reads the head alone: the form, the type and live, then the time.
  KOBO_ASSERT(out.size() > head + 4 && static_cast<unsigned char>(out[head + 1]) == e.data.index(),
              "a fact opens with its form, its type and its mode, then its time");
  // Reading the head back is O(1): a byte each, then one varint.
  const auto time = fact_time(std::string_view(out).substr(head));
  KOBO_ASSERT(time.ok() && time.value() == e.time, "fact_time() reads back the time a fact was written with");
}

std::string encode_fact(const Event& e) {
  std::string out;
  out.reserve(256);
  append_fact(out, e);
  KOBO_ASSERT(out.size() >= 5 && out[0] == static_cast<char>(kFormat), "a fact opens with its form and type");
  return out;
}

Result<Event> decode_fact(std::string_view bytes) {
  Reader r(bytes);
  if (r.byte() != kFormat) return Status::error("a views row is not a fact of this kobo's form");
  const unsigned char type = r.byte();
  if (type >= std::variant_size_v<EventData>) return Status::error("a views row holds an unknown event type");
  Event e;
  e.live = r.flag();
  e.time = r.signed_varint();
  e.business.assign(r.length_prefixed());
  KOBO_ASSERT(!r.ok() || bytes.size() - r.left() >= 4 + e.business.size(),
              "a fact's head is read from its bytes: form, type, mode, time, then its business");
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((type == I ? r.get(e.data.emplace<I>()) : void()), ...);
  }
  (std::make_index_sequence<std::variant_size_v<EventData>>{});
  if (!r.ok() || !r.done()) return Status::error("a views row holds a malformed fact");
  KOBO_ASSERT(e.data.index() == type, "the data read is of the type the fact names");
  if (is_partition_level(e.type()) != e.business.empty())
    return Status::error("a views row holds a fact whose business is not its type's");
  // The views hold facts of validated events only; one that is not valid is a corrupt row, and
  // no reader may meet it (a money event's legs() asserts their shape).
  if (auto s = validate(e); !s)
    return Status::error("a views row holds a fact that is not valid: " + s.message());
  KOBO_ASSERT(r.done() && is_partition_level(e.type()) == e.business.empty(),
              "a fact read whole is of a business, unless it is the partition's");
  const auto time = fact_time(bytes);
  KOBO_ASSERT(time.ok() && time.value() == e.time, "fact_time() reads the time decode_fact() reads");
  return e;
}

Result<UnixMs> fact_time(std::string_view bytes) {
  Reader r(bytes);
  if (r.byte() != kFormat) return Status::error("a views row is not a fact of this kobo's form");
  r.byte();  // the type
  r.flag();  // live
  const UnixMs time = r.signed_varint();
  if (!r.ok()) return Status::error("a views row holds a malformed fact");
  KOBO_ASSERT(r.ok() && r.left() < bytes.size(), "a fact's time is read from its head");
  KOBO_ASSERT(bytes.size() - r.left() >= 4,
              "a fact's head is a byte each of form, type and mode, then the time");
  return time;
}

}  // namespace kobo
