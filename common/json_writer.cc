#include "common/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

namespace kobo {
namespace {

// Bytes copied as they are inside a string: printable ASCII (and DEL) but the quote and the
// backslash. Everything else is escaped or, from 0x80 up, checked as UTF-8.
struct PlainBytes {
  bool plain[256] = {};
  constexpr PlainBytes() {
    for (int c = 0x20; c < 0x80; ++c) plain[c] = c != '"' && c != '\\';
  }
};
constexpr PlainBytes kPlain;

constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
constexpr std::uint64_t kHighs = 0x8080808080808080ULL;

// Whether any of the 8 bytes of `w` is not plain: below 0x20, a quote, a backslash, or 0x80 and
// up (SWAR: a byte is zero in x exactly where the subtraction borrows into its high bit).
bool any_special(std::uint64_t w) {
  const auto zero_in = [](std::uint64_t x) { return (x - kOnes) & ~x & kHighs; };
  const std::uint64_t below_space = (w - kOnes * 0x20) & ~w & kHighs;
  return ((below_space | zero_in(w ^ (kOnes * '"')) | zero_in(w ^ (kOnes * '\\')) | w) & kHighs) != 0;
}

// The length of the run of plain bytes at the start of `s`.
std::size_t plain_run(const char* s, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s + i, 8);
    if (any_special(w)) break;
  }
  while (i < n && kPlain.plain[static_cast<unsigned char>(s[i])]) ++i;
  return i;
}

void append_control(std::string& out, unsigned char c) {
  switch (c) {
    case '\b':
      out += "\\b";
      return;
    case '\t':
      out += "\\t";
      return;
    case '\n':
      out += "\\n";
      return;
    case '\f':
      out += "\\f";
      return;
    case '\r':
      out += "\\r";
      return;
    case '"':
      out += "\\\"";
      return;
    case '\\':
      out += "\\\\";
      return;
    default:
      break;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  const char escaped[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
  out.append(escaped, sizeof escaped);
}

// The well-formed UTF-8 sequences (Unicode 15, table 3-7), as nlohmann's decoder (Hoehrmann's)
// accepts them: the bytes a lead byte needs after it, and the range of the first of them.
struct Lead {
  int continuation = -1;  // -1: not a lead byte
  unsigned char low = 0x80, high = 0xBF;
};
constexpr Lead lead_of(unsigned char c) {
  if (c >= 0xC2 && c <= 0xDF) return {1, 0x80, 0xBF};
  if (c == 0xE0) return {2, 0xA0, 0xBF};
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return {2, 0x80, 0xBF};
  if (c == 0xED) return {2, 0x80, 0x9F};
  if (c == 0xF0) return {3, 0x90, 0xBF};
  if (c >= 0xF1 && c <= 0xF3) return {3, 0x80, 0xBF};
  if (c == 0xF4) return {3, 0x80, 0x8F};
  return {};
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// At s[0], a byte of 0x80 or more: appends the UTF-8 sequence it starts and returns its length,
// or, where the bytes are not well-formed, appends U+FFFD for the longest start of a sequence
// that was (at least one byte) and returns its length: the byte that broke it is read again.
std::size_t append_multibyte(std::string& out, const char* s, std::size_t n) {
  const Lead lead = lead_of(static_cast<unsigned char>(s[0]));
  if (lead.continuation < 0) {
    out += kReplacement;
    return 1;
  }
  for (int k = 1; k <= lead.continuation; ++k) {
    const auto b = static_cast<std::size_t>(k) < n ? static_cast<unsigned char>(s[k]) : 0;
    const unsigned char low = k == 1 ? lead.low : 0x80;
    const unsigned char high = k == 1 ? lead.high : 0xBF;
    if (static_cast<std::size_t>(k) >= n || b < low || b > high) {
      out += kReplacement;
      return static_cast<std::size_t>(k);
    }
  }
  const auto length = static_cast<std::size_t>(lead.continuation) + 1;
  out.append(s, length);
  return length;
}

void append_parsed(std::string& out, const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [name, member] : v.get_ref<const nlohmann::json::object_t&>()) {
        if (!first) out += ',';
        first = false;
        append_json_string(out, name);
        out += ':';
        append_parsed(out, member);
      }
      out += '}';
      return;
    }
    case nlohmann::json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& element : v.get_ref<const nlohmann::json::array_t&>()) {
        if (!first) out += ',';
        first = false;
        append_parsed(out, element);
      }
      out += ']';
      return;
    }
    case nlohmann::json::value_t::string:
      return append_json_string(out, v.get_ref<const std::string&>());
    case nlohmann::json::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      return;
    case nlohmann::json::value_t::number_integer:
      return append_json_number(out, v.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return append_json_number(out, v.get<std::uint64_t>());
    case nlohmann::json::value_t::number_float:
      return append_json_number(out, v.get<double>());
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      out += "null";
      return;
    case nlohmann::json::value_t::binary:
      break;
  }
  KOBO_ASSERT(false, "a binary value in a parsed JSON document");
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  out.reserve(out.size() + s.size() + 2);
  out += '"';
  const char* p = s.data();
  std::size_t n = s.size();
  while (n > 0) {
    const std::size_t run = plain_run(p, n);
    out.append(p, run);
    p += run;
    n -= run;
    if (n == 0) break;
    const auto c = static_cast<unsigned char>(*p);
    std::size_t used = 1;
    if (c < 0x80)
      append_control(out, c);
    else
      used = append_multibyte(out, p, n);
    p += used;
    n -= used;
  }
  out += '"';
}

void append_json_number(std::string& out, std::int64_t n) {
  char digits[24];
  out.append(digits, std::to_chars(digits, digits + sizeof digits, n).ptr);
}

void append_json_number(std::string& out, std::uint64_t n) {
  char digits[24];
  out.append(digits, std::to_chars(digits, digits + sizeof digits, n).ptr);
}

void append_json_number(std::string& out, double n) {
  if (!std::isfinite(n)) {
    out += "null";  // as dump() writes it
    return;
  }
  // nlohmann's formatter (grisu2 and its layout: "1.0", "1e+20"), so that a number a request
  // carried reads back as dump() wrote it into the log.
  char digits[64];
  out.append(digits, nlohmann::detail::to_chars(digits, digits + sizeof digits, n));
}

std::string json_text(const nlohmann::json& v) {
  std::string out;
  JsonWriter(out).value(v);
  return out;
}

JsonWriter& JsonWriter::value(const nlohmann::json& v) {
  begin_value();
  append_parsed(out_, v);
  return *this;
}

}  // namespace kobo
