// The request target parser (http::parse_target: bracket encoding, Boost.URL's origin-form parse
// and percent-decoding) and the query-string validators of the list endpoints over what it
// yields. Pure functions: no service, so this target runs fast.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "query-api/http_server.h"
#include "query-api/validation.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view target(reinterpret_cast<const char*>(data), size);
  kobo::http::Request req;
  if (!kobo::http::parse_target(target, req)) return 0;
  (void)req.query_param("page");
  kobo::http::QueryValidator q(req.query);
  (void)q.text("name");
  (void)q.boolean("live");
  (void)q.boolean("isDefault");
  (void)q.one_of("category", {"primary", "secondary"});
  (void)q.one_of("status", {"pending", "succeeded", "failed"});
  (void)q.integer("amount", 0, 1'000'000);
  (void)q.integer("n");
  const auto page = q.pagination();
  (void)page.offset();
  (void)q.errors();
  return 0;
}
