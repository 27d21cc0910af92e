#pragma once
// Writing a record's text without a JSON tree. Internal to projection/ (render.cc).
//
// Every record is rendered as dump_json() writes it (common/json_dump.h): compact, members in
// key order. An Object collects members in any order, each value already as its JSON text, and
// writes them out in that order, so its text is exactly what dump_json() gives for the decoded
// record. Rendering this way instead of building nlohmann trees and dumping them is several
// times cheaper, and records are rendered on every read (render.h).
//
// Setting a member again replaces its value, as json[key] = value would. Keys are plain names
// (letters, digits, '_'): they are written unescaped. Not thread-safe; cheap to build.

#include <algorithm>
#include <charconv>
#include <concepts>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_dump.h"

namespace kobo::record_text {

class Object {
 public:
  // Room for `members` members of `bytes` bytes of values in all (a transaction record has 36
  // and about 2 KiB): it grows past them as needed.
  explicit Object(std::size_t members = 12, std::size_t bytes = 256) {
    members_.reserve(members);
    values_.reserve(bytes);
  }

  // A value given as its JSON text (another record's member, a nested Object's text()).
  Object& raw(std::string_view key, std::string_view text) {
    const std::size_t begin = values_.size();
    values_ += text;
    return set(key, begin);
  }
  Object& string(std::string_view key, std::string_view value) {
    const std::size_t begin = values_.size();
    append_json_string(values_, value);
    return set(key, begin);
  }
  template <std::integral T>
  requires(!std::same_as<T, bool>) Object& number(std::string_view key, T value) {
    char buf[24];
    const auto end = std::to_chars(buf, buf + sizeof buf, value).ptr;
    return raw(key, std::string_view(buf, static_cast<std::size_t>(end - buf)));
  }
  Object& boolean(std::string_view key, bool value) { return raw(key, value ? "true" : "false"); }
  Object& null(std::string_view key) { return raw(key, "null"); }
  Object& object(std::string_view key, const Object& value) { return raw(key, value.text()); }

  // The JSON text of member `key`'s value, while this Object lives and is not changed.
  std::optional<std::string_view> get(std::string_view key) const {
    for (const Member& m : members_)
      if (m.key == key) return std::string_view(values_).substr(m.begin, m.end - m.begin);
    return std::nullopt;
  }

  // The object's text: its members in key order, as dump_json() writes them.
  std::string text() const {
    std::vector<const Member*> order;
    order.reserve(members_.size());
    std::size_t size = 2;
    for (const Member& m : members_) {
      order.push_back(&m);
      size += m.key.size() + 4 + (m.end - m.begin);
    }
    std::sort(order.begin(), order.end(), [](const Member* a, const Member* b) { return a->key < b->key; });
    std::string out;
    out.reserve(size);
    out += '{';
    for (const Member* m : order) {
      if (out.size() > 1) out += ',';
      out += '"';
      out += m->key;
      out += "\":";
      out.append(values_, m->begin, m->end - m->begin);
    }
    out += '}';
    return out;
  }

 private:
  struct Member {
    std::string_view key;
    std::size_t begin = 0, end = 0;  // the value's text in values_
  };
  // The value just appended to values_ from `begin` is member `key`'s (a replaced value's old
  // text stays in values_, unreferenced).
  Object& set(std::string_view key, std::size_t begin) {
    for (Member& m : members_)
      if (m.key == key) {
        m.begin = begin;
        m.end = values_.size();
        return *this;
      }
    members_.push_back(Member{key, begin, values_.size()});
    return *this;
  }

  std::vector<Member> members_;
  std::string values_;
};

}  // namespace kobo::record_text
