#pragma once
// JsonWriter: the one way the service writes JSON. Records, envelopes, list pages, events
// lists, bulk answers and the log's canonical events are all written by it, appending to a
// std::string, compact (no whitespace), each string escaped once as it is appended.
//
// The bytes are what nlohmann::json's dump() writes of the same value (compact, UTF-8 kept as
// is, `replace` for invalid UTF-8), so a text it writes and a text dump() wrote of the same value
// are interchangeable: strings escape `"`, `\` and the control characters (\b \f \n \r \t, the
// others as \u00xx), every other byte of valid UTF-8 is copied, and each maximal invalid
// sequence becomes U+FFFD; integers are decimal; a double is written by nlohmann's own shortest
// round-trip formatter (its grisu2, so a metadata number reads back as it was written), and a
// NaN or an infinity as null. tests/json_writer_test.cc holds it to dump() byte for byte.
//
// The writer puts the commas and the colons; the caller says what comes, in order, and members
// come out in the order they are written (a record that must show its members in key order
// collects them first: projection/record_text.h). nlohmann stays for *parsing* (request bodies,
// config files); a parsed value is written back with value().
//
// Not thread-safe; one JsonWriter per text being written. It borrows the string it appends to.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <type_traits>

#include "common/assert.h"

namespace kobo {

// Appends `s` as a JSON string (quoted, escaped).
void append_json_string(std::string& out, std::string_view s);
// Appends a number as JSON writes it.
void append_json_number(std::string& out, std::int64_t n);
void append_json_number(std::string& out, std::uint64_t n);
void append_json_number(std::string& out, double n);

// A parsed value's text, as dump() writes it (JsonWriter::value()).
std::string json_text(const nlohmann::json& v);

class JsonWriter {
 public:
  // Containers open inside one another, at most this deep (the service's own documents are a
  // handful deep; a parsed value of any depth goes through value()..
  static constexpr unsigned kDepthMax = 64;

  explicit JsonWriter(std::string& out) : out_(out) {}
  // A writer of a run of array elements only, for elements written apart (a large answer's half,
  // on another thread) and spliced into their array later with elements(): it puts the commas
  // between them, and no brackets.
  struct Run {};
  JsonWriter(std::string& out, Run) : out_(out), depth_(1), firsts_(1), run_(true) {}
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;
  // A finished document has closed every container it opened.
  ~JsonWriter() = default;

  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }

  // The name of the next member of the object being written; its value is the next thing written.
  JsonWriter& key(std::string_view name) {
    KOBO_ASSERT(depth_ > 0 && in_object(), "a member name outside an object");
    KOBO_ASSERT(!after_key_, "two member names in a row");
    separate();
    append_json_string(out_, name);
    out_ += ':';
    after_key_ = true;
    return *this;
  }

  JsonWriter& string(std::string_view s) {
    begin_value();
    append_json_string(out_, s);
    return *this;
  }
  template <typename T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) JsonWriter& number(T n) {
    begin_value();
    if constexpr (std::is_signed_v<T>)
      append_json_number(out_, static_cast<std::int64_t>(n));
    else
      append_json_number(out_, static_cast<std::uint64_t>(n));
    return *this;
  }
  JsonWriter& number(double n) {
    begin_value();
    append_json_number(out_, n);
    return *this;
  }
  JsonWriter& boolean(bool b) {
    begin_value();
    out_ += b ? "true" : "false";
    return *this;
  }
  JsonWriter& null() {
    begin_value();
    out_ += "null";
    return *this;
  }
  // A value given as its JSON text, written as it is: a rendered record, a stored document.
  JsonWriter& raw(std::string_view json_text) {
    KOBO_ASSERT(!json_text.empty(), "an empty JSON text is no value");
    begin_value();
    out_ += json_text;
    return *this;
  }
  // A parsed value (nlohmann: a request's metadata), of any depth, as dump() writes it.
  JsonWriter& value(const nlohmann::json& v);

  // Shorthands for a member and its value.
  JsonWriter& member(std::string_view name, std::string_view s) { return key(name).string(s); }
  JsonWriter& member(std::string_view name, const char* s) { return key(name).string(s); }
  JsonWriter& member(std::string_view name, const std::string& s) { return key(name).string(s); }
  template <typename T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) JsonWriter& member(std::string_view name, T n) {
    return key(name).number(n);
  }
  JsonWriter& member(std::string_view name, bool b) { return key(name).boolean(b); }
  JsonWriter& raw_member(std::string_view name, std::string_view json_text) {
    return key(name).raw(json_text);
  }
  JsonWriter& null_member(std::string_view name) { return key(name).null(); }

  // A run of elements written by a Run writer, inside the array being written here.
  JsonWriter& elements(std::string_view run) {
    KOBO_ASSERT(depth_ > 0 && !in_object(), "array elements outside an array");
    if (run.empty()) return *this;
    separate();
    out_ += run;
    return *this;
  }

  // Whether every container opened has been closed (the text is one whole value, or a whole run
  // of elements).
  bool done() const { return depth_ == (run_ ? 1U : 0U) && !after_key_; }
  std::string& out() { return out_; }

 private:
  bool in_object() const { return (objects_ >> (depth_ - 1)) & 1U; }
  bool first() const { return (firsts_ >> (depth_ - 1)) & 1U; }
  // A comma before anything but the first member or element of a container.
  void separate() {
    if (depth_ == 0) return;
    const std::uint64_t bit = std::uint64_t{1} << (depth_ - 1);
    if ((firsts_ & bit) == 0) out_ += ',';
    firsts_ &= ~bit;
  }
  void begin_value() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    KOBO_ASSERT(depth_ == 0 || !in_object(), "a value in an object without its member name");
    separate();
  }
  JsonWriter& open(char bracket) {
    begin_value();
    KOBO_ASSERT(depth_ < kDepthMax, "JSON nested deeper than JsonWriter::kDepthMax");
    out_ += bracket;
    const std::uint64_t bit = std::uint64_t{1} << depth_;
    firsts_ |= bit;
    if (bracket == '{')
      objects_ |= bit;
    else
      objects_ &= ~bit;
    ++depth_;
    return *this;
  }
  JsonWriter& close(char bracket) {
    KOBO_ASSERT(depth_ > (run_ ? 1U : 0U) && in_object() == (bracket == '}'),
                "a container closed that is not open");
    KOBO_ASSERT(!after_key_, "an object closed after a member name without its value");
    --depth_;
    out_ += bracket;
    return *this;
  }

  std::string& out_;
  unsigned depth_ = 0;
  std::uint64_t firsts_ = 0;   // bit d: nothing written yet in the container at depth d
  std::uint64_t objects_ = 0;  // bit d: the container at depth d is an object
  bool after_key_ = false;     // a member name was written; its value comes next
  bool run_ = false;           // depth 1 is the array of a run of elements (Run), never closed here
};

}  // namespace kobo
