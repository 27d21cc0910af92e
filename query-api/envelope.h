#pragma once
// The response envelopes of the API (schemas/openapi.yaml), built in one place so every
// endpoint answers the same shape. Bodies are compact JSON with `meta` first; inside `meta` the keys come in
// the spec's order (statusCode, success, message or pagination / error).
//
// Success:   {"meta":{"statusCode":S,"success":true[,"message":M]},"data":D}
// List:      {"meta":{"statusCode":S,"success":true,"pagination":{...}},"data":[...]}
// Error:     {"meta":{"statusCode":S,"error":{"statusCode":S,"message":M}}}
// Validation {"meta":{"statusCode":400,"error":{"statusCode":400,"message":"Validation error",
//              "messages":{"field":{"constraint":"text"}}}}}
//
// `data` is given as its JSON text (a rendered record, a page of them, a shape render.h wrote)
// and spliced into the envelope as it is: nothing is parsed or written twice. Everything else is
// written by the one JSON writer (common/json_writer.h). Pure functions; thread-safe. Never
// throws: invalid UTF-8 in a string is replaced with U+FFFD rather than failing a response.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "query-api/message.h"

namespace kobo::http {

struct Pagination {
  std::int64_t total_count = 0;
  std::int64_t per_page = 10;
  std::int64_t current = 1;  // page number, from 1
};

// `message` is present on create/update/transfer/list-banks answers, absent on get-one/verify.
Response ok_text(unsigned status, std::string_view data,
                 const std::optional<std::string>& message = std::nullopt);

// Lists: meta has statusCode, success and pagination, no message. `items` are the page's records'
// texts, spliced into `data` as its array.
Response ok_list(std::span<const std::string> items, Pagination pagination, unsigned status = 200);
// The same where `data` is an object that holds the page beside what the page is of (a statement
// and its lines), given as its text.
Response ok_list_text(std::string_view data, Pagination pagination, unsigned status = 200);

// No success and no data field.
Response error(unsigned status, std::string_view message);

// An error about items of a request (a bulk transfer's): meta.error has `items` after `message`,
// [{index, message, statusCode}].
struct ErrorItem {
  std::uint64_t index = 0;
  unsigned status = 0;
  std::string_view message;
};
Response error_with_items(unsigned status, std::string_view message, std::span<const ErrorItem> items);

// 400 `Validation error`; `messages` is {"field":{"constraint":"text"}} (see validation.h).
Response validation_error(const nlohmann::json& messages);

// The fixed answers the HTTP layer itself gives.
inline Response bad_request() { return error(400, "Bad request"); }
inline Response route_not_found() { return error(404, "Route not found"); }
inline Response method_not_allowed() { return error(405, "Method not allowed"); }
inline Response payload_too_large() { return error(413, "Payload too large"); }
inline Response internal_error() { return error(500, "Internal server error"); }

}  // namespace kobo::http
