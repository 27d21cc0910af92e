#pragma once
// dump_json(): the bytes nlohmann::basic_json::dump() makes (compact, keys in the object's
// order, UTF-8 kept as is), made several times faster. Events are sealed, verified, projected and
// answered as JSON, and dump() was the largest single cost of a transfer: it writes one character
// at a time through a virtual output adapter and runs a UTF-8 decoder over every byte.
//
// Fast paths cover what our documents are made of: objects, arrays, integers, booleans, null and
// strings of printable ASCII. Anything else (a string with an escape or a non-ASCII byte, a
// floating-point number, binary) is written by nlohmann's own serializer, so the output is
// identical to dump() in every case, errors included (invalid UTF-8 throws with the strict
// handler, and is replaced with U+FFFD with `replace`). tests/json_dump_test.cc holds it to that.
//
// Pure functions; thread-safe.

#include <charconv>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kobo {

namespace json_dump_detail {

// Bytes dump() copies as they are inside a string: printable ASCII but the quote and backslash.
struct PlainBytes {
  bool plain[256] = {};
  constexpr PlainBytes() {
    for (int c = 0x20; c < 0x80; ++c) plain[c] = c != '"' && c != '\\';
  }
};
inline constexpr PlainBytes kPlain;

inline bool plain(std::string_view s) {
  for (const char c : s)
    if (!kPlain.plain[static_cast<unsigned char>(c)]) return false;
  return true;
}

template <typename Json>
void append(std::string& out, const Json& j, typename Json::error_handler_t handler);

template <typename Json>
void append_object(std::string& out, const typename Json::object_t& object,
                   typename Json::error_handler_t handler) {
  out += '{';
  bool first = true;
  for (const auto& [key, value] : object) {
    if (!first) out += ',';
    first = false;
    if (plain(key)) {
      out += '"';
      out += key;
      out += "\":";
    } else {
      out += Json(key).dump(-1, ' ', false, handler);
      out += ':';
    }
    append(out, value, handler);
  }
  out += '}';
}

template <typename Json>
void append(std::string& out, const Json& j, typename Json::error_handler_t handler) {
  char buf[24];
  switch (j.type()) {
    case nlohmann::json::value_t::object:
      return append_object<Json>(out, j.template get_ref<const typename Json::object_t&>(), handler);
    case nlohmann::json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& v : j.template get_ref<const typename Json::array_t&>()) {
        if (!first) out += ',';
        first = false;
        append(out, v, handler);
      }
      out += ']';
      return;
    }
    case nlohmann::json::value_t::string: {
      const auto& s = j.template get_ref<const typename Json::string_t&>();
      if (!plain(s)) break;
      out += '"';
      out += s;
      out += '"';
      return;
    }
    case nlohmann::json::value_t::boolean:
      out += *j.template get_ptr<const typename Json::boolean_t*>() ? "true" : "false";
      return;
    case nlohmann::json::value_t::null:
      out += "null";
      return;
    case nlohmann::json::value_t::number_integer:
      out.append(buf, std::to_chars(buf, buf + sizeof buf,
                                    *j.template get_ptr<const typename Json::number_integer_t*>())
                          .ptr);
      return;
    case nlohmann::json::value_t::number_unsigned:
      out.append(buf, std::to_chars(buf, buf + sizeof buf,
                                    *j.template get_ptr<const typename Json::number_unsigned_t*>())
                          .ptr);
      return;
    case nlohmann::json::value_t::number_float:
    case nlohmann::json::value_t::binary:
    case nlohmann::json::value_t::discarded:
      break;
  }
  out += j.dump(-1, ' ', false, handler);  // everything without a fast path
}

}  // namespace json_dump_detail

// Appends what j.dump(-1, ' ', false, handler) returns.
template <typename Json>
void append_json(std::string& out, const Json& j,
                 typename Json::error_handler_t handler = Json::error_handler_t::strict) {
  json_dump_detail::append(out, j, handler);
}

// Appends what nlohmann::json(s).dump() returns: `s` as a JSON string.
inline void append_json_string(std::string& out, std::string_view s) {
  if (!json_dump_detail::plain(s)) {
    out += nlohmann::json(s).dump();
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

// The same as j.dump(-1, ' ', false, handler).
template <typename Json>
std::string dump_json(const Json& j, typename Json::error_handler_t handler = Json::error_handler_t::strict) {
  std::string out;
  out.reserve(1024);
  append_json(out, j, handler);
  return out;
}

}  // namespace kobo
