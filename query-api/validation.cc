#include "query-api/validation.h"

#include <algorithm>
#include <boost/url/parse.hpp>
#include <boost/url/scheme.hpp>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

#include "common/assert.h"
#include "common/json_writer.h"

namespace kobo::http {

namespace {

using nlohmann::json;

constexpr std::size_t kUrlLengthMax = 2083;  // validator.js (behind class-validator) rejects longer
constexpr std::size_t kEmailLengthMax = 254;
constexpr std::size_t kEmailLocalLengthMax = 64;
constexpr std::size_t kDomainLabelLengthMax = 63;

bool present(const json* v) { return v != nullptr && !v->is_null(); }

// Three-way comparison of a JSON number with an int64 bound, exact for every integer.
int compare_number(const json& v, std::int64_t bound) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (bound < 0) return 1;
    const auto b = static_cast<std::uint64_t>(bound);
    return u < b ? -1 : (u > b ? 1 : 0);
  }
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    return i < bound ? -1 : (i > bound ? 1 : 0);
  }
  const double d = v.get<double>();
  const auto b = static_cast<double>(bound);
  return d < b ? -1 : (d > b ? 1 : 0);
}

// Length in characters (Unicode code points), as JSON Schema's minLength and maxLength count
// it, so that the OpenAPI document's limits are the server's (schemas/openapi.yaml).
std::size_t code_points(std::string_view s) {
  std::size_t n = 0;
  for (const unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;  // every byte but a continuation byte starts a character
  return n;
}

bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// A pragmatic address check: local@domain.tld, ASCII, one '@', no spaces, dot-separated
// labels of letters, digits and inner hyphens, and a top-level domain of two or more letters.
bool is_email_address(std::string_view s) {
  if (s.size() > kEmailLengthMax) return false;
  const auto at = s.find('@');
  if (at == std::string_view::npos || s.find('@', at + 1) != std::string_view::npos) return false;
  const auto local = s.substr(0, at);
  const auto domain = s.substr(at + 1);
  if (local.empty() || local.size() > kEmailLocalLengthMax) return false;
  if (local.front() == '.' || local.back() == '.' || local.find("..") != std::string_view::npos) return false;
  constexpr std::string_view kLocalSpecials = "!#$%&'*+-/=?^_`{|}~.";
  for (const char c : local)
    if (!is_alnum(c) && kLocalSpecials.find(c) == std::string_view::npos) return false;

  std::size_t labels = 0;
  std::string_view last;
  std::string_view rest = domain;
  for (;;) {
    const auto dot = rest.find('.');
    const auto label = rest.substr(0, dot);
    if (label.empty() || label.size() > kDomainLabelLengthMax) return false;
    if (label.front() == '-' || label.back() == '-') return false;
    for (const char c : label)
      if (!is_alnum(c) && c != '-') return false;
    ++labels;
    last = label;
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
  }
  if (labels < 2 || last.size() < 2) return false;
  return std::all_of(last.begin(), last.end(), [](char c) { return is_alnum(c) && !(c >= '0' && c <= '9'); });
}

bool is_http_url(std::string_view s) {
  if (s.empty() || s.size() > kUrlLengthMax) return false;
  const auto url = boost::urls::parse_absolute_uri(s);
  if (!url) return false;
  const auto scheme = url->scheme_id();
  if (scheme != boost::urls::scheme::http && scheme != boost::urls::scheme::https) return false;
  return url->has_authority() && !url->encoded_host().empty();
}

std::string join(std::initializer_list<std::string_view> values) {
  std::string out;
  for (const auto v : values) {
    if (!out.empty()) out += ", ";
    out += v;
  }
  return out;
}

std::string join(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& v : values) {
    if (!out.empty()) out += ", ";
    out += v;
  }
  return out;
}

// Strict decimal integer: optional '-', digits, nothing else. Out-of-range values saturate.
std::optional<std::int64_t> parse_query_int(std::string_view s) {
  const std::string_view digits = (!s.empty() && s.front() == '-') ? s.substr(1) : s;
  if (digits.empty() ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  std::int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec == std::errc::result_out_of_range)
    return s.front() == '-' ? std::numeric_limits<std::int64_t>::min()
                            : std::numeric_limits<std::int64_t>::max();
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

}  // namespace

bool json_nesting_within(std::string_view text, std::size_t max_depth) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character, whatever it is, is not the string's end
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

std::optional<json> parse_json_object(std::string_view body) {
  if (std::all_of(body.begin(), body.end(),
                  [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }))
    return json::object();
  // Before anything walks the document: the parser, and the destructor of what it builds, recurse.
  if (!json_nesting_within(body, kJsonDepthMax)) return std::nullopt;
  json parsed = json::parse(body, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) return std::nullopt;
  return parsed;
}

std::optional<std::int64_t> as_int64(const json& value) {
  if (value.is_number_unsigned()) {
    const auto u = value.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (value.is_number_integer()) return value.get<std::int64_t>();
  // JSON does not tell 10000 from 10000.0, nor does class-validator's isInt (JavaScript has one
  // number type) or JSON Schema's `integer`: a number with no fraction is an integer.
  if (value.is_number_float()) {
    const double d = value.get<double>();
    constexpr double kLimit = 9'007'199'254'740'992.0;  // 2^53: every integer up to it is exact
    if (std::isfinite(d) && d == std::trunc(d) && d >= -kLimit && d <= kLimit)
      return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}

// ---- FieldRules ----

void FieldRules::fail(std::string_view constraint, std::string message) {
  (*owner_->sink_)[path_][std::string(constraint)] = std::move(message);
}

FieldRules& FieldRules::is_not_empty() {
  if (skipped()) return *this;
  if (!present(value_) || (value_->is_string() && value_->get_ref<const std::string&>().empty()))
    fail("isNotEmpty", path_ + " should not be empty");
  return *this;
}

FieldRules& FieldRules::is_string() {
  if (skipped()) return *this;
  if (!present(value_) || !value_->is_string()) fail("isString", path_ + " must be a string");
  return *this;
}

FieldRules& FieldRules::is_int() {
  if (skipped()) return *this;
  if (!present(value_) || !as_int64(*value_)) fail("isInt", path_ + " must be an integer number");
  return *this;
}

FieldRules& FieldRules::is_number() {
  if (skipped()) return *this;
  // JSON has no NaN or Infinity, so every JSON number conforms.
  if (!present(value_) || !value_->is_number())
    fail("isNumber", path_ + " must be a number conforming to the specified constraints");
  return *this;
}

FieldRules& FieldRules::is_boolean() {
  if (skipped()) return *this;
  if (!present(value_) || !value_->is_boolean()) fail("isBoolean", path_ + " must be a boolean value");
  return *this;
}

FieldRules& FieldRules::is_object() {
  if (skipped()) return *this;
  if (!present(value_) || !value_->is_object()) fail("isObject", path_ + " must be an object");
  return *this;
}

FieldRules& FieldRules::is_array() {
  if (skipped()) return *this;
  if (!present(value_) || !value_->is_array()) fail("isArray", path_ + " must be an array");
  return *this;
}

FieldRules& FieldRules::min(std::int64_t bound) {
  if (skipped()) return *this;
  if (!present(value_) || !value_->is_number() || compare_number(*value_, bound) < 0)
    fail("min", path_ + " must not be less than " + std::to_string(bound));
  return *this;
}

FieldRules& FieldRules::max(std::int64_t bound) {
  if (skipped()) return *this;
  if (!present(value_) || !value_->is_number() || compare_number(*value_, bound) > 0)
    fail("max", path_ + " must not be greater than " + std::to_string(bound));
  return *this;
}

FieldRules& FieldRules::is_in(std::initializer_list<std::string_view> allowed) {
  if (skipped()) return *this;
  const bool found =
      present(value_) && value_->is_string() &&
      std::find(allowed.begin(), allowed.end(), value_->get_ref<const std::string&>()) != allowed.end();
  if (!found) fail("isIn", path_ + " must be one of the following values: " + join(allowed));
  return *this;
}

FieldRules& FieldRules::is_in(const std::vector<std::string>& allowed) {
  if (skipped()) return *this;
  const bool found =
      present(value_) && value_->is_string() &&
      std::find(allowed.begin(), allowed.end(), value_->get_ref<const std::string&>()) != allowed.end();
  if (!found) fail("isIn", path_ + " must be one of the following values: " + join(allowed));
  return *this;
}

FieldRules& FieldRules::is_email() {
  if (skipped()) return *this;
  if (!present(value_) || !value_->is_string() || !is_email_address(value_->get_ref<const std::string&>()))
    fail("isEmail", path_ + " must be an email");
  return *this;
}

FieldRules& FieldRules::is_url() {
  if (skipped()) return *this;
  if (!present(value_) || !value_->is_string() || !is_http_url(value_->get_ref<const std::string&>()))
    fail("isUrl", path_ + " must be a URL address");
  return *this;
}

FieldRules& FieldRules::min_length(std::size_t length) {
  if (skipped()) return *this;
  if (!present(value_) || !value_->is_string() || code_points(value_->get_ref<const std::string&>()) < length)
    fail("minLength", path_ + " must be longer than or equal to " + std::to_string(length) + " characters");
  return *this;
}

FieldRules& FieldRules::max_length(std::size_t length) {
  if (skipped()) return *this;
  if (!present(value_) || !value_->is_string() || code_points(value_->get_ref<const std::string&>()) > length)
    fail("maxLength", path_ + " must be shorter than or equal to " + std::to_string(length) + " characters");
  return *this;
}

FieldRules& FieldRules::holds(bool ok, std::string_view constraint, std::string_view what) {
  if (skipped()) return *this;
  if (!ok) fail(constraint, path_ + " " + std::string(what));
  return *this;
}

FieldRules& FieldRules::array_min_size(std::size_t size) {
  if (skipped()) return *this;
  if (!present(value_) || !value_->is_array() || value_->size() < size)
    fail("arrayMinSize", path_ + " must contain at least " + std::to_string(size) + " elements");
  return *this;
}

FieldRules& FieldRules::max_json_size(std::size_t bytes) {
  if (skipped()) return *this;
  if (!present(value_) || json_text(*value_).size() > bytes)
    fail("maxSize", path_ + " must be at most " + std::to_string(bytes) + " bytes");
  return *this;
}

FieldRules& FieldRules::array_max_size(std::size_t size) {
  if (skipped()) return *this;
  if (!present(value_) || !value_->is_array() || value_->size() > size)
    fail("arrayMaxSize", path_ + " must contain no more than " + std::to_string(size) + " elements");
  return *this;
}

FieldRules& FieldRules::each_is_string() {
  if (skipped()) return *this;
  const auto ok = [](const json& v) { return v.is_string(); };
  const bool all =
      present(value_) && (value_->is_array() ? std::all_of(value_->begin(), value_->end(), ok) : ok(*value_));
  if (!all) fail("isString", "each value in " + path_ + " must be a string");
  return *this;
}

FieldRules& FieldRules::each_is_url() {
  if (skipped()) return *this;
  const auto ok = [](const json& v) { return v.is_string() && is_http_url(v.get_ref<const std::string&>()); };
  const bool all =
      present(value_) && (value_->is_array() ? std::all_of(value_->begin(), value_->end(), ok) : ok(*value_));
  if (!all) fail("isUrl", "each value in " + path_ + " must be a URL address");
  return *this;
}

// ---- Validator ----

Validator::Validator(const json& body) : Validator(&body, std::string(), nullptr) {}

Validator::Validator(const json* object, std::string prefix, json* sink)
    : object_(object), prefix_(std::move(prefix)), sink_(sink != nullptr ? sink : &own_errors_) {}

const json* Validator::find(std::string_view name) const {
  if (object_ == nullptr || !object_->is_object()) return nullptr;
  const auto it = object_->find(name);
  return it == object_->end() ? nullptr : &*it;
}

FieldRules Validator::field(std::string_view name) {
  return FieldRules(this, prefix_ + std::string(name), find(name), /*skip=*/object_ == nullptr);
}

FieldRules Validator::optional(std::string_view name) {
  const json* value = find(name);
  return FieldRules(this, prefix_ + std::string(name), value, object_ == nullptr || !present(value));
}

Validator Validator::nested(std::string_view name) {
  const json* value = find(name);
  const json* object = (value != nullptr && value->is_object()) ? value : nullptr;
  return Validator(object, prefix_ + std::string(name) + ".", sink_);
}

Validator Validator::element(std::string_view name, std::size_t index) {
  const json* array = find(name);
  const json* value =
      (array != nullptr && array->is_array() && index < array->size()) ? &(*array)[index] : nullptr;
  const std::string path = prefix_ + std::string(name) + "." + std::to_string(index);
  FieldRules(this, path, value, /*skip=*/object_ == nullptr).is_object();
  const json* object = (value != nullptr && value->is_object()) ? value : nullptr;
  return Validator(object, path + ".", sink_);
}

std::optional<json> Validator::errors() const {
  if (sink_->empty()) return std::nullopt;
  return *sink_;
}

// ---- Query parameters ----

std::int64_t PageRequest::offset() const {
  KOBO_ASSERT(page >= 1 && per_page >= 1, "page request out of range");
  if (page - 1 > std::numeric_limits<std::int64_t>::max() / per_page)
    return std::numeric_limits<std::int64_t>::max();
  return (page - 1) * per_page;
}

const std::string* QueryValidator::find(std::string_view name) const {
  for (const auto& [key, value] : query_)
    if (key == name) return &value;
  return nullptr;
}

void QueryValidator::fail(std::string_view name, std::string_view constraint, std::string message) {
  errors_[std::string(name)][std::string(constraint)] = std::move(message);
}

PageRequest QueryValidator::pagination() {
  PageRequest p;
  p.page = integer("page", 1).value_or(p.page);
  p.per_page = integer("perPage", 1, PageRequest::kPerPageMax).value_or(p.per_page);
  return p;
}

std::optional<bool> QueryValidator::boolean(std::string_view name) {
  const std::string* raw = find(name);
  if (raw == nullptr) return std::nullopt;
  if (*raw == "true") return true;
  if (*raw == "false") return false;
  fail(name, "isBoolean", std::string(name) + " must be a boolean value");
  return std::nullopt;
}

std::optional<std::int64_t> QueryValidator::integer(std::string_view name, std::optional<std::int64_t> min,
                                                    std::optional<std::int64_t> max) {
  const std::string* raw = find(name);
  if (raw == nullptr) return std::nullopt;
  const auto value = parse_query_int(*raw);
  bool valid = value.has_value();
  // As in a body, a non-integer fails the bounds too (class-validator's min/max on NaN).
  if (!valid) fail(name, "isInt", std::string(name) + " must be an integer number");
  if (min && (!value || *value < *min)) {
    fail(name, "min", std::string(name) + " must not be less than " + std::to_string(*min));
    valid = false;
  }
  if (max && (!value || *value > *max)) {
    fail(name, "max", std::string(name) + " must not be greater than " + std::to_string(*max));
    valid = false;
  }
  return valid ? value : std::nullopt;
}

std::optional<std::string> QueryValidator::one_of(std::string_view name,
                                                  std::initializer_list<std::string_view> allowed) {
  const std::string* raw = find(name);
  if (raw == nullptr) return std::nullopt;
  if (std::find(allowed.begin(), allowed.end(), *raw) != allowed.end()) return *raw;
  fail(name, "isIn", std::string(name) + " must be one of the following values: " + join(allowed));
  return std::nullopt;
}

std::optional<std::string> QueryValidator::text(std::string_view name) const {
  const std::string* raw = find(name);
  if (raw == nullptr) return std::nullopt;
  return *raw;
}

std::optional<UnixMs> QueryValidator::date(std::string_view name, std::string_view reported) {
  const std::string* raw = find(name);
  if (raw == nullptr) return std::nullopt;
  const auto day = parse_date(*raw);
  if (!day) fail(reported, "isDateString", std::string(reported) + " must be a valid ISO 8601 date string");
  return day;
}

std::optional<UnixMs> QueryValidator::time(std::string_view name) {
  const std::string* raw = find(name);
  if (raw == nullptr) return std::nullopt;
  const auto t = parse_time(*raw);
  if (!t) fail(name, "isDateString", std::string(name) + " must be a valid ISO 8601 date string");
  return t;
}

std::optional<json> QueryValidator::errors() const {
  if (errors_.empty()) return std::nullopt;
  return errors_;
}

}  // namespace kobo::http
