#pragma once
// The response envelopes of the API (spec section 1), built in one place so every endpoint
// answers the same shape. Bodies are compact JSON with `meta` first; inside `meta` the keys
// come in the spec's order (statusCode, success, message or pagination / error).
//
// Success:   {"meta":{"statusCode":S,"success":true[,"message":M]},"data":D}
// List:      {"meta":{"statusCode":S,"success":true,"pagination":{...}},"data":[...]}
// Error:     {"meta":{"statusCode":S,"error":{"statusCode":S,"message":M}}}
// Validation {"meta":{"statusCode":400,"error":{"statusCode":400,"message":"Validation error",
//              "messages":{"field":{"constraint":"text"}}}}}
//
// Pure functions; thread-safe. Serialization never throws: invalid UTF-8 in a string is
// replaced with U+FFFD rather than failing a response.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "query-api/http_server.h"

namespace kobo::http {

struct Pagination {
  std::int64_t total_count = 0;
  std::int64_t per_page = 10;
  std::int64_t current = 1;  // page number, from 1
};

// `message` is present on create/update/transfer/list-banks answers, absent on get-one/verify.
Response ok(unsigned status, const nlohmann::json& data,
            const std::optional<std::string>& message = std::nullopt);
// The same with `data` given as its JSON text (a stored record), written into the body as is.
// The bytes equal ok()'s for that record when the text is dump_json() output, as views' are.
Response ok_text(unsigned status, std::string_view data,
                 const std::optional<std::string>& message = std::nullopt);

// Lists: meta has statusCode, success and pagination, no message. `data` is the page's array, or
// an object that holds it beside what the page is of (a statement and its lines).
Response ok_list(const nlohmann::json& data, Pagination pagination, unsigned status = 200);

// No success and no data field.
Response error(unsigned status, std::string_view message);

// An error about items of a request (a bulk transfer's): meta.error has `items` after `message`,
// [{index, statusCode, message}].
Response error_with_items(unsigned status, std::string_view message, const nlohmann::json& items);

// 400 `Validation error`; `messages` is {"field":{"constraint":"text"}} (see validation.h).
Response validation_error(const nlohmann::json& messages);

// The fixed answers the HTTP layer itself gives.
inline Response bad_request() { return error(400, "Bad request"); }
inline Response route_not_found() { return error(404, "Route not found"); }
inline Response method_not_allowed() { return error(405, "Method not allowed"); }
inline Response payload_too_large() { return error(413, "Payload too large"); }
inline Response internal_error() { return error(500, "Internal server error"); }

}  // namespace kobo::http
