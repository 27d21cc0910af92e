#include "query-api/envelope.h"

#include <utility>

#include "common/assert.h"
#include "common/json_writer.h"

namespace kobo::http {
namespace {

constexpr std::size_t kMetaBytes = 96;  // a success envelope's bytes besides its data

// Opens a success envelope: `{"meta":{…}` with the message or the pagination, up to `"data":`.
JsonWriter& open_success(JsonWriter& w, unsigned status, const std::optional<std::string>& message,
                         const Pagination* pagination) {
  KOBO_ASSERT(status >= 200 && status < 300, "a success envelope with a non-2xx status");
  w.begin_object().key("meta").begin_object().member("statusCode", status).member("success", true);
  if (message) w.member("message", *message);
  if (pagination != nullptr)
    w.key("pagination")
        .begin_object()
        .member("totalCount", pagination->total_count)
        .member("perPage", pagination->per_page)
        .member("current", pagination->current)
        .end_object();
  return w.end_object().key("data");
}

Response success(unsigned status, const std::optional<std::string>& message, const Pagination* pagination,
                 std::string_view data) {
  Response r;
  r.status = status;
  r.body.reserve(kMetaBytes + (message ? message->size() : 0) + data.size());
  JsonWriter w(r.body);
  open_success(w, status, message, pagination).raw(data).end_object();
  return r;
}

// {"meta":{"statusCode":S,"error":{"statusCode":S,"message":M, then what `rest` writes}}}.
template <typename Rest>
Response error_envelope(unsigned status, std::string_view message, Rest&& rest) {
  KOBO_ASSERT(status >= 400 && status < 600, "error() with a non-error status");
  Response r;
  r.status = status;
  JsonWriter w(r.body);
  w.begin_object()
      .key("meta")
      .begin_object()
      .member("statusCode", status)
      .key("error")
      .begin_object()
      .member("statusCode", status)
      .member("message", message);
  rest(w);
  w.end_object().end_object().end_object();
  return r;
}

}  // namespace

Response ok_text(unsigned status, std::string_view data, const std::optional<std::string>& message) {
  return success(status, message, nullptr, data);
}

Response ok_list(std::span<const std::string> items, Pagination p, unsigned status) {
  std::size_t size = kMetaBytes + 64;
  for (const std::string& item : items) size += item.size() + 1;
  Response r;
  r.status = status;
  r.body.reserve(size);
  JsonWriter w(r.body);
  open_success(w, status, std::nullopt, &p).begin_array();
  for (const std::string& item : items) w.raw(item);
  w.end_array().end_object();
  return r;
}

Response ok_list_text(std::string_view data, Pagination p, unsigned status) {
  KOBO_ASSERT(!data.empty() && (data.front() == '[' || data.front() == '{'),
              "a list's data must be a list, or an object holding one");
  return success(status, std::nullopt, &p, data);
}

Response error(unsigned status, std::string_view message) {
  return error_envelope(status, message, [](JsonWriter&) {});
}

Response error_with_items(unsigned status, std::string_view message, std::span<const ErrorItem> items) {
  return error_envelope(status, message, [&](JsonWriter& w) {
    w.key("items").begin_array();
    for (const ErrorItem& item : items)
      w.begin_object()
          .member("index", item.index)
          .member("message", item.message)
          .member("statusCode", item.status)
          .end_object();
    w.end_array();
  });
}

Response validation_error(const nlohmann::json& messages) {
  KOBO_ASSERT(messages.is_object(), "validation messages must be an object");
  return error_envelope(400, "Validation error", [&](JsonWriter& w) { w.key("messages").value(messages); });
}

}  // namespace kobo::http
