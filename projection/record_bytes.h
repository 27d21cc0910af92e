#pragma once
// Reading and changing the top-level members of a view record in its stored bytes, without
// decoding it. For projection/ and the readers of its views (webhooks/ reads a record's account).
//
// Every view record is stored as dump_json() writes it: compact, members in key order. In that
// form a member's value can be found by scanning the bytes (strings and nested values are
// skipped, not decoded), and replacing the value of an existing member gives exactly the bytes
// dump_json() would give for the decoded record with that member set. The projector uses this
// for the changes every transfer makes (a wallet's balance, a transaction's status), which is
// several times cheaper than parsing the record into a json tree and dumping it again.
//
// Anything the scan does not recognise (not an object, whitespace, a member that is not there)
// is reported as "not found" and the caller decodes the record instead. Pure; thread-safe.
// The query side reads single records with the same scan (views.cc: scope checks, key owners).

#include <cstddef>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/assert.h"

namespace kobo::record_bytes {

namespace detail {

constexpr std::size_t npos = std::string_view::npos;

// Bytes the scan stops at: inside a string the quote and the backslash, between values also
// the brackets. Everything else is stepped over by a table lookup per byte.
struct Stops {
  bool in_string[256] = {};
  bool in_value[256] = {};
  constexpr Stops() {
    for (const unsigned char c : {'"', '\\'}) in_string[c] = true;
    for (const unsigned char c : {'"', '{', '}', '[', ']'}) in_value[c] = true;
  }
};
inline constexpr Stops kStops;

// One past the string that starts with the quote at `i`; npos when it does not end.
inline std::size_t skip_string(std::string_view s, std::size_t i) {
  for (++i; i < s.size(); i += 2) {  // += 2: past a backslash and the byte it escapes
    while (i < s.size() && !kStops.in_string[static_cast<unsigned char>(s[i])]) ++i;
    if (i >= s.size()) break;
    if (s[i] == '"') return i + 1;
  }
  return npos;
}

// One past the value that starts at `i`; npos when it does not end.
inline std::size_t skip_value(std::string_view s, std::size_t i) {
  if (i >= s.size()) return npos;
  if (s[i] == '"') return skip_string(s, i);
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    while (i < s.size()) {
      while (i < s.size() && !kStops.in_value[static_cast<unsigned char>(s[i])]) ++i;
      if (i >= s.size()) break;
      if (s[i] == '"') {
        i = skip_string(s, i);
        if (i == npos) return npos;
        continue;
      }
      if (s[i] == '{' || s[i] == '[')
        ++depth;
      else if (--depth == 0)
        return i + 1;
      ++i;
    }
    return npos;
  }
  // A number, true, false or null; anything else (whitespace, say) is not dump_json's form.
  if (std::string_view("-0123456789tfn").find(s[i]) == npos) return npos;
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']') ++i;
  return i;
}

}  // namespace detail

// Calls fn(key, value_begin, value_end) for each top-level member, in order, until it returns
// false. The key is as written (still escaped). False when `record` is not a compact object.
template <typename Fn>
bool for_each_member(std::string_view record, Fn&& fn) {
  using detail::npos;
  if (record.size() < 2 || record.front() != '{' || record.back() != '}') return false;
  if (record == "{}") return true;
  for (std::size_t i = 1;;) {
    if (i >= record.size() || record[i] != '"') return false;
    const std::size_t key_end = detail::skip_string(record, i);
    if (key_end == npos || key_end >= record.size() || record[key_end] != ':') return false;
    const std::size_t value_end = detail::skip_value(record, key_end + 1);
    if (value_end == npos || value_end >= record.size()) return false;
    if (!fn(record.substr(i + 1, key_end - i - 2), key_end + 1, value_end)) return true;
    if (record[value_end] == '}') return value_end + 1 == record.size();
    if (record[value_end] != ',') return false;
    i = value_end + 1;
  }
}

// The value of top-level member `name` as written (a string keeps its quotes).
inline std::optional<std::string_view> member(std::string_view record, std::string_view name) {
  std::optional<std::string_view> out;
  for_each_member(record, [&](std::string_view key, std::size_t begin, std::size_t end) {
    if (key != name) return true;
    out = record.substr(begin, end - begin);
    return false;
  });
  return out;
}

// member(), of a record that must have it: a view record without it is a broken view, and asserts.
inline std::string_view required_member(std::string_view record, std::string_view name) {
  const auto v = member(record, name);
  KOBO_ASSERT(v.has_value(), "a view record lacks a member its reader needs");
  return *v;
}

// The string a member's JSON string value (`text`, quotes included) stands for. Text without
// an escape is the string itself; one with an escape is decoded by parsing, which throws if
// `text` is not a JSON string.
inline std::string string_value(std::string_view text) {
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"' && text.find('\\') == detail::npos)
    return std::string(text.substr(1, text.size() - 2));
  return nlohmann::json::parse(text).get<std::string>();
}

// Replaces the values of existing top-level members with the given JSON texts (at most 4, each
// named once). False, with `record` unchanged, when one of them is not there.
inline bool replace_members(std::string& record,
                            std::initializer_list<std::pair<std::string_view, std::string_view>> values) {
  struct Span {
    std::size_t begin = 0, end = 0;
    std::string_view text;
  };
  Span found[4];
  std::size_t n = 0;
  if (values.size() > 4) return false;
  const bool ok = for_each_member(record, [&](std::string_view key, std::size_t begin, std::size_t end) {
    for (const auto& [name, text] : values)
      if (key == name) found[n++] = Span{begin, end, text};
    return n < values.size();  // dump_json writes each key once
  });
  if (!ok || n != values.size()) return false;
  // Found in record order: replace from the last so the earlier offsets stay valid.
  for (std::size_t k = n; k-- > 0;)
    record.replace(found[k].begin, found[k].end - found[k].begin, found[k].text);
  return true;
}

}  // namespace kobo::record_bytes
