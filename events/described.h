#pragma once
// What the event codecs (events/event.cc's canonical JSON, events/fact_codec.cc's binary form)
// need to walk an event's data generically: every data struct lists its members through a static
// `fields(x, fn)`, calling fn(name, member) in the order the canonical form writes them.

#include <optional>
#include <type_traits>

#include "events/types.h"

namespace kobo::described {

template <typename T>
concept Described = requires(T& x) {
  T::fields(x, [](const char*, auto&) {});
};

template <typename T>
struct IsId : std::false_type {};
template <typename Tag>
struct IsId<Id<Tag>> : std::true_type {};

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};

}  // namespace kobo::described
