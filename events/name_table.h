#pragma once
// A table of an enum's names as the log and the API spell them, read both ways: the one lookup
// behind every to_string / *_from_string pair of events/. Internal to events/.

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

#include "common/assert.h"

namespace kobo {

template <typename E, std::size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

// The name of `value`: every value of the enum has one.
template <typename E, std::size_t N>
std::string_view name_in(const NameTable<E, N>& table, E value) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  KOBO_ASSERT(false, "a value without a name");
  return {};
}

// The value named `name`, or nullopt for a name the table does not hold.
template <typename E, std::size_t N>
std::optional<E> value_in(const NameTable<E, N>& table, std::string_view name) {
  for (const auto& [v, n] : table)
    if (n == name) {
      // The table reads both ways: no name of it names two values, no value has two names.
      KOBO_ASSERT(name_in(table, v) == name, "a name reads back as the value it names");
      return v;
    }
  return std::nullopt;
}

}  // namespace kobo
