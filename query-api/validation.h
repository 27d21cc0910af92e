#pragma once
// Request validation in the style of class-validator, so 400 answers carry its constraint names
// and its English messages: {"field": {"constraint": "message"}}.
//
//   auto body = parse_json_object(req.body);
//   if (!body) return respond(bad_request());
//   Validator v(*body);
//   v.field("amount").is_int().min(10'000).max(1'000'000'000);
//   v.field("narration").is_not_empty().is_string();
//   v.optional("reference").is_string();
//   v.field("mobile").is_object();
//   auto mobile = v.nested("mobile");          // reported as "mobile.phoneNumber"
//   mobile.field("phoneNumber").is_string();
//   if (auto errors = v.errors()) return respond(validation_error(*errors));
//
// Semantics, as class-validator's: a required field that is absent or null fails every
// constraint declared on it; an optional() one that is absent or null is skipped. Each
// constraint checks the JSON type itself: min/max/minLength fail on a value of the wrong type
// rather than being skipped, and nothing is coerced ("10000" is not an integer). Our one
// deliberate difference: isInt means a JSON integer in the int64 range, so 10000.0, 10000.5 and
// 1e20 all fail it (the API's amounts are JSON integers), and a value is never wrapped.
//
// Not thread-safe; one Validator per request. A Validator and the FieldRules/nested validators
// it hands out borrow the body and must not outlive it.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/time.h"
#include "query-api/message.h"

namespace kobo::http {

// The request body as a JSON object. An empty body counts as {} (so missing fields are reported
// as validation errors); nullopt for malformed JSON, a non-object, or arrays and objects nested
// deeper than kJsonDepthMax, which is 400 `Bad request`.
std::optional<nlohmann::json> parse_json_object(std::string_view body);

// How deep a request body's arrays and objects may nest (docs/security.md): checked by a linear
// scan before the document is parsed, since parsing it recurses. No request of the API nests
// beyond a few levels.
inline constexpr std::size_t kJsonDepthMax = 400;
// Whether `text`'s arrays and objects nest at most max_depth deep, brackets inside strings aside.
// One pass, no recursion; says nothing else about whether `text` is JSON.
bool json_nesting_within(std::string_view text, std::size_t max_depth);

// An integer JSON value in the int64 range; nullopt for anything else (floats included).
std::optional<std::int64_t> as_int64(const nlohmann::json& value);

class Validator;

// The constraints of one field; each call records its failure, if any, and returns *this.
class FieldRules {
 public:
  FieldRules& is_not_empty();  // not absent, null or ""
  FieldRules& is_string();
  FieldRules& is_int();
  FieldRules& is_number();
  FieldRules& is_boolean();
  FieldRules& is_object();
  FieldRules& is_array();
  FieldRules& min(std::int64_t bound);
  FieldRules& max(std::int64_t bound);
  FieldRules& is_in(std::initializer_list<std::string_view> allowed);
  FieldRules& is_in(const std::vector<std::string>& allowed);
  FieldRules& is_email();
  FieldRules& is_url();                        // absolute http or https URL with a host
  FieldRules& min_length(std::size_t length);  // in characters (code points), as JSON Schema counts
  FieldRules& max_length(std::size_t length);
  // A rule the caller decides: fails `constraint` with "<field> <what>" unless `ok`.
  FieldRules& holds(bool ok, std::string_view constraint, std::string_view what);
  FieldRules& array_min_size(std::size_t size);
  FieldRules& array_max_size(std::size_t size);
  // The value's compact JSON is at most `bytes` long ("maxSize").
  FieldRules& max_json_size(std::size_t bytes);
  // class-validator's {each: true}: every element of an array (or the value, if not an array).
  FieldRules& each_is_string();
  FieldRules& each_is_url();

  // The value, or nullptr when absent.
  const nlohmann::json* value() const { return value_; }

 private:
  friend class Validator;
  FieldRules(Validator* owner, std::string path, const nlohmann::json* value, bool skip)
      : owner_(owner), path_(std::move(path)), value_(value), skip_(skip) {}

  // True when the constraints should not run at all (optional and absent, or inert scope).
  bool skipped() const { return skip_; }
  void fail(std::string_view constraint, std::string message);

  Validator* owner_;
  std::string path_;
  const nlohmann::json* value_;
  bool skip_;
};

class Validator {
 public:
  // `body` should be an object; anything else makes every required field absent.
  explicit Validator(const nlohmann::json& body);
  Validator(const Validator&) = delete;
  Validator& operator=(const Validator&) = delete;

  FieldRules field(std::string_view name);     // required
  FieldRules optional(std::string_view name);  // absent or null: no constraint runs
  // The object at `name`, its fields reported as "name.field" into this validator's errors.
  // When `name` is absent or not an object the nested validator checks nothing: declare
  // field(name).is_object() on this validator to report that.
  Validator nested(std::string_view name);
  // Element `index` of the array at `name`, which must be an object (isObject, reported as
  // "name.index"); its fields are reported as "name.index.field". Inert when it is not one.
  Validator element(std::string_view name, std::size_t index);

  bool ok() const { return sink_->empty(); }
  // {"field": {"constraint": "message"}}, or nullopt when everything passed.
  std::optional<nlohmann::json> errors() const;

 private:
  friend class FieldRules;
  Validator(const nlohmann::json* object, std::string prefix, nlohmann::json* sink);
  const nlohmann::json* find(std::string_view name) const;

  const nlohmann::json* object_;  // nullptr: an inert nested validator
  std::string prefix_;            // "" or "mobile."
  nlohmann::json own_errors_ = nlohmann::json::object();
  nlohmann::json* sink_;  // own_errors_, or the root validator's
};

// Query-string parameters of list endpoints, reported in the same {"name": {...}} form.
struct PageRequest {
  static constexpr std::int64_t kDefaultPerPage = 10;
  static constexpr std::int64_t kPerPageMax = 100;

  std::int64_t page = 1;
  std::int64_t per_page = kDefaultPerPage;
  // Records to skip; saturates instead of overflowing on absurd pages.
  std::int64_t offset() const;
};

class QueryValidator {
 public:
  // Borrows `query`. With a repeated name, the first value counts.
  explicit QueryValidator(const QueryParams& query) : query_(query) {}
  QueryValidator(const QueryValidator&) = delete;
  QueryValidator& operator=(const QueryValidator&) = delete;

  // `page` (integer >= 1, default 1) and `perPage` (integer 1..100, default 10).
  PageRequest pagination();
  // "true" or "false"; anything else is isBoolean. nullopt when absent or invalid.
  std::optional<bool> boolean(std::string_view name);
  // A decimal integer; out-of-int64 values saturate so min/max judge them.
  std::optional<std::int64_t> integer(std::string_view name, std::optional<std::int64_t> min = std::nullopt,
                                      std::optional<std::int64_t> max = std::nullopt);
  std::optional<std::string> one_of(std::string_view name, std::initializer_list<std::string_view> allowed);
  // The raw value, nullopt when absent.
  std::optional<std::string> text(std::string_view name) const;
  // A date (YYYY-MM-DD: its first millisecond, UTC); a malformed one is isDateString, reported
  // under `reported` (a bracketed name's dotted form: createdAt[startDate] is createdAt.startDate).
  std::optional<UnixMs> date(std::string_view name, std::string_view reported);
  // A date or an RFC 3339 date-time (common/time.h parse_time()); a malformed one is isDateString.
  std::optional<UnixMs> time(std::string_view name);
  // A rule the caller decides: records `constraint` with `message` under `name`.
  void refuse(std::string_view name, std::string_view constraint, std::string message) {
    fail(name, constraint, std::move(message));
  }

  bool ok() const { return errors_.empty(); }
  std::optional<nlohmann::json> errors() const;

 private:
  const std::string* find(std::string_view name) const;
  void fail(std::string_view name, std::string_view constraint, std::string message);

  const QueryParams& query_;
  nlohmann::json errors_ = nlohmann::json::object();
};

}  // namespace kobo::http
