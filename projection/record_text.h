#pragma once
// Writing a record's text without a JSON tree. Internal to projection/ (render.cc).
//
// Every record shows its members in key order, compact (the form nlohmann's dump() writes of the
// decoded record). An Object collects members in any order, each value already as its JSON text
// (written by the one JSON writer, common/json_writer.h), and writes them out in key order with
// that writer. Rendering this way instead of building nlohmann trees and dumping them is several
// times cheaper, and records are rendered on every read (render.h).
//
// Setting a member again replaces its value, as json[key] = value would. Not thread-safe; cheap
// to build.

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/json_writer.h"

namespace kobo::record_text {

class Object {
 public:
  // Room for `members` members of `bytes` bytes of values in all (a transaction record has 41
  // and about 2 KiB): it grows past them as needed.
  explicit Object(std::size_t members = 12, std::size_t bytes = 256) {
    members_.reserve(members);
    values_.reserve(bytes);
  }

  // A value given as its JSON text (another record's member, a nested Object's text()).
  Object& raw(std::string_view key, std::string_view text) {
    KOBO_ASSERT(!text.empty(), "a member's value is JSON text");
    const std::size_t begin = values_.size();
    values_ += text;
    return set(key, begin);
  }
  Object& string(std::string_view key, std::string_view value) {
    const std::size_t begin = values_.size();
    append_json_string(values_, value);
    KOBO_ASSERT(values_.size() >= begin + 2 + value.size() && values_.back() == '"',
                "a string member is its value quoted, escaped where it must be");
    return set(key, begin);
  }
  template <std::integral T>
  requires(!std::same_as<T, bool>) Object& number(std::string_view key, T value) {
    const std::size_t begin = values_.size();
    if constexpr (std::is_signed_v<T>)
      append_json_number(values_, static_cast<std::int64_t>(value));
    else
      append_json_number(values_, static_cast<std::uint64_t>(value));
    KOBO_ASSERT(values_.size() > begin && values_.size() - begin <= 20,
                "a number member is 1 to 20 characters");
    return set(key, begin);
  }
  Object& boolean(std::string_view key, bool value) { return raw(key, value ? "true" : "false"); }
  Object& null(std::string_view key) { return raw(key, "null"); }
  Object& object(std::string_view key, const Object& value) {
    const std::size_t begin = values_.size();
    value.append_to(values_);
    KOBO_ASSERT(values_.size() >= begin + 2 && values_[begin] == '{' && values_.back() == '}',
                "an object member is an object's text");
    return set(key, begin);
  }

  // The JSON text of member `key`'s value, while this Object lives and is not changed.
  std::optional<std::string_view> get(std::string_view key) const {
    for (auto m = members_.rbegin(); m != members_.rend(); ++m) {  // the last value set is the value
      if (m->key != key) continue;
      KOBO_ASSERT(m->begin < m->end && m->end <= values_.size(), "a member's value lies in the values' text");
      return std::string_view(values_).substr(m->begin, m->end - m->begin);
    }
    return std::nullopt;
  }

  // The object's text: its members in key order. Members are kept in the order they were set
  // (most renderers set them nearly in key order), so a stable insertion sort orders them in
  // about one pass, and of a key set more than once the last value is written.
  std::string text() const {
    std::string out;
    append_to(out);
    KOBO_ASSERT(out.size() >= 2 && out.front() == '{' && out.back() == '}', "a record's text is an object");
    return out;
  }
  // Appends text() to `out`.
  void append_to(std::string& out) const {
    std::array<const Member*, kInlineMembers> inline_order;
    std::vector<const Member*> heap_order;
    const std::size_t n = members_.size();
    if (n > kInlineMembers) heap_order.resize(n);
    const Member** order = n > kInlineMembers ? heap_order.data() : inline_order.data();
    std::size_t size = 2;
    for (std::size_t i = 0; i < n; ++i) {
      const Member& m = members_[i];
      std::size_t at = i;
      for (; at > 0 && key_less(m.key, order[at - 1]->key); --at) order[at] = order[at - 1];
      order[at] = &m;
      size += m.key.size() + 4 + (m.end - m.begin);
    }
    // The canonical form's key order: a member written out of it would break every equal-bytes
    // comparison of records (answers equal GETs, rebuilt views equal live ones).
    KOBO_ASSERT(std::is_sorted(order, order + n,
                               [](const Member* a, const Member* b) { return key_less(a->key, b->key); }),
                "a record's members are written in key order");
    out.reserve(out.size() + size);
    JsonWriter w(out);
    w.begin_object();
    for (std::size_t i = 0; i < n; ++i) {
      const Member* m = order[i];
      if (i + 1 < n && order[i + 1]->key == m->key) continue;  // replaced later
      w.raw_member(m->key, std::string_view(values_).substr(m->begin, m->end - m->begin));
    }
    w.end_object();
    KOBO_ASSERT(w.done() && size >= 2, "a record is one whole object");
  }

 private:
  struct Member {
    std::string_view key;
    std::size_t begin = 0, end = 0;  // the value's text in values_
  };
  // The value just appended to values_ from `begin` is member `key`'s. A key set again is
  // appended again: get() and text() take its last value (the old text stays in values_,
  // unreferenced).
  Object& set(std::string_view key, std::size_t begin) {
    KOBO_ASSERT(!key.empty() && begin < values_.size(),
                "a member is named, and its value takes a byte at least");
    members_.push_back(Member{key, begin, values_.size()});
    return *this;
  }
  // std::string_view's order (bytes compared as unsigned char), inline: keys are short.
  static bool key_less(std::string_view a, std::string_view b) {
    const std::size_t n = std::min(a.size(), b.size());
    for (std::size_t i = 0; i < n; ++i)
      if (a[i] != b[i]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[i]);
    return a.size() < b.size();
  }

  static constexpr std::size_t kInlineMembers = 64;  // text() orders this many without allocating

  std::vector<Member> members_;
  std::string values_;
};

}  // namespace kobo::record_text
