#include "query-api/envelope.h"

#include <utility>

#include "common/assert.h"
#include "common/json_dump.h"

namespace kobo::http {
namespace {

template <typename Json>
std::string dump(const Json& j) {
  return dump_json(j, Json::error_handler_t::replace);
}

// The envelope is concatenated rather than built as one json value: nlohmann::json sorts keys,
// and copying `data` into a wrapper would cost a deep copy of every record on every answer.
template <typename Json>
Response success(unsigned status, const Json& data, const nlohmann::ordered_json& meta) {
  Response r;
  r.status = status;
  r.body.reserve(64);
  r.body += "{\"meta\":";
  r.body += dump(meta);
  r.body += ",\"data\":";
  r.body += dump(data);
  r.body += '}';
  return r;
}

nlohmann::ordered_json success_meta(unsigned status) {
  nlohmann::ordered_json meta;
  meta["statusCode"] = status;
  meta["success"] = true;
  return meta;
}

template <typename Json>
Response ok_impl(unsigned status, const Json& data, std::optional<std::string> message) {
  KOBO_ASSERT(status >= 200 && status < 300, "ok() with a non-2xx status");
  auto meta = success_meta(status);
  if (message) meta["message"] = std::move(*message);
  return success(status, data, meta);
}

template <typename Json>
Response ok_list_impl(const Json& data, Pagination p, unsigned status) {
  KOBO_ASSERT(data.is_array(), "ok_list() data must be an array");
  KOBO_ASSERT(status >= 200 && status < 300, "ok_list() with a non-2xx status");
  auto meta = success_meta(status);
  meta["pagination"] = {{"totalCount", p.total_count}, {"perPage", p.per_page}, {"current", p.current}};
  return success(status, data, meta);
}

Response error_impl(unsigned status, std::string_view message, const nlohmann::json* messages) {
  KOBO_ASSERT(status >= 400 && status < 600, "error() with a non-error status");
  nlohmann::ordered_json err;
  err["statusCode"] = status;
  err["message"] = message;
  if (messages != nullptr) err["messages"] = *messages;
  nlohmann::ordered_json body;
  body["meta"]["statusCode"] = status;
  body["meta"]["error"] = std::move(err);
  Response r;
  r.status = status;
  r.body = dump(body);
  return r;
}

}  // namespace

Response ok(unsigned status, const nlohmann::json& data, std::optional<std::string> message) {
  return ok_impl(status, data, std::move(message));
}
Response ok_list(const nlohmann::json& data, Pagination pagination, unsigned status) {
  return ok_list_impl(data, pagination, status);
}

Response error(unsigned status, std::string_view message) { return error_impl(status, message, nullptr); }

Response validation_error(const nlohmann::json& messages) {
  KOBO_ASSERT(messages.is_object(), "validation messages must be an object");
  return error_impl(400, "Validation error", &messages);
}

}  // namespace kobo::http
