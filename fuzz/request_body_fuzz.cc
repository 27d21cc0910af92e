// The request bodies of every endpoint that takes one, past HTTP framing: the first byte picks
// the endpoint and the key it is called with, the rest is the body. Each body is also run
// through every constraint of query-api/validation.h on each of its fields, so the validators'
// string, number, URL, e-mail and UTF-16 length rules see arbitrary JSON values.

#include <boost/beast/http/verb.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/service.h"
#include "query-api/validation.h"

namespace {

namespace bhttp = boost::beast::http;

struct Endpoint {
  bhttp::verb method;
  std::string_view path;
};

// Every route of query-api/routes/ that reads a body.
constexpr Endpoint kEndpoints[] = {
    {bhttp::verb::post, "/v1/virtual-accounts"},
    {bhttp::verb::post, "/v1/transactions/transfer"},
    {bhttp::verb::post, "/v1/transactions/bank-transfer"},
    {bhttp::verb::post, "/v1/collection-accounts"},
    {bhttp::verb::post, "/v1/transit-accounts"},
    {bhttp::verb::post, "/v1/sandbox/incoming-transfers"},
    {bhttp::verb::post, "/v1/transactions/validate-account"},
    {bhttp::verb::post, "/v1/bank-accounts"},
    {bhttp::verb::patch, "/v1/accounts/acc-00000000-0000-4000-8000-000000000002"},
    {bhttp::verb::post, "/v1/admin/businesses"},
};
constexpr std::size_t kEndpointCount = sizeof(kEndpoints) / sizeof(kEndpoints[0]);

void every_constraint(kobo::http::Validator& v, const nlohmann::json& object, int depth) {
  for (const auto& [name, value] : object.items()) {
    v.field(name).is_not_empty().is_string().is_int().is_number().is_boolean().is_object().is_array();
    v.optional(name).min(10'000).max(1'000'000'000).is_in({"primary", "secondary"}).is_email().is_url();
    v.optional(name).min_length(3).max_length(100).array_max_size(5).each_is_string().each_is_url();
    (void)kobo::http::as_int64(value);
    if (value.is_object() && depth < 3) {
      auto nested = v.nested(name);
      every_constraint(nested, value, depth + 1);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const Endpoint& endpoint = kEndpoints[data[0] % kEndpointCount];
  const bool live = (data[0] / kEndpointCount) % 2 == 1;
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);

  if (auto object = kobo::http::parse_json_object(body)) {
    kobo::http::Validator v(*object);
    every_constraint(v, *object, 0);
    (void)v.errors();
  }

  kobo::http::Request req;
  req.method = endpoint.method;
  req.path = std::string(endpoint.path);
  req.headers.set("x-service-key", live ? kobo::fuzz::kLiveKey : kobo::fuzz::kTestKey);
  req.headers.set("x-admin-key", kobo::fuzz::kAdminKey);
  req.headers.set(boost::beast::http::field::content_type, "application/json");
  req.body = body;
  (void)kobo::fuzz::call(std::move(req));
  return 0;
}
