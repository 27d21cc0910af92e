#include "query-api/envelope.h"

#include <charconv>
#include <utility>

#include "common/assert.h"
#include "common/json_dump.h"

namespace kobo::http {
namespace {

template <typename Json>
std::string dump(const Json& j) {
  return dump_json(j, Json::error_handler_t::replace);
}

// The envelope is written as text rather than built as one json value: nlohmann::json sorts
// keys, and copying `data` into a wrapper would cost a deep copy of every record on every
// answer. `meta_rest` follows `"success":true` inside meta: empty, or `,"message":…` or
// `,"pagination":…`.
Response success(unsigned status, std::string_view meta_rest, std::string_view data) {
  KOBO_ASSERT(status >= 200 && status < 300, "a success envelope with a non-2xx status");
  char code[16];
  const auto code_end = std::to_chars(code, code + sizeof code, status).ptr;
  Response r;
  r.status = status;
  r.body.reserve(48 + meta_rest.size() + data.size());
  r.body += "{\"meta\":{\"statusCode\":";
  r.body.append(code, code_end);
  r.body += ",\"success\":true";
  r.body += meta_rest;
  r.body += "},\"data\":";
  r.body += data;
  r.body += '}';
  return r;
}

std::string message_member(const std::optional<std::string>& message) {
  if (!message) return {};
  return ",\"message\":" + dump(nlohmann::json(*message));
}

Response error_impl(unsigned status, std::string_view message, const nlohmann::json* messages,
                    const nlohmann::json* items = nullptr) {
  KOBO_ASSERT(status >= 400 && status < 600, "error() with a non-error status");
  nlohmann::ordered_json err;
  err["statusCode"] = status;
  err["message"] = message;
  if (messages != nullptr) err["messages"] = *messages;
  if (items != nullptr) err["items"] = *items;
  nlohmann::ordered_json body;
  body["meta"]["statusCode"] = status;
  body["meta"]["error"] = std::move(err);
  Response r;
  r.status = status;
  r.body = dump(body);
  return r;
}

}  // namespace

Response ok(unsigned status, const nlohmann::json& data, const std::optional<std::string>& message) {
  return success(status, message_member(message), dump(data));
}

Response ok_text(unsigned status, std::string_view data, const std::optional<std::string>& message) {
  return success(status, message_member(message), data);
}

Response ok_list(const nlohmann::json& data, Pagination p, unsigned status) {
  KOBO_ASSERT(data.is_array() || data.is_object(), "ok_list() data must be a list, or an object holding one");
  nlohmann::ordered_json pagination{
      {"totalCount", p.total_count}, {"perPage", p.per_page}, {"current", p.current}};
  return success(status, ",\"pagination\":" + dump(pagination), dump(data));
}

Response error(unsigned status, std::string_view message) { return error_impl(status, message, nullptr); }

Response error_with_items(unsigned status, std::string_view message, const nlohmann::json& items) {
  KOBO_ASSERT(items.is_array(), "error items must be a list");
  return error_impl(status, message, nullptr, &items);
}

Response validation_error(const nlohmann::json& messages) {
  KOBO_ASSERT(messages.is_object(), "validation messages must be an object");
  return error_impl(400, "Validation error", &messages);
}

}  // namespace kobo::http
