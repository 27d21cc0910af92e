#pragma once
// The messages of the HTTP edge: a request as the server read it, the response a handler gives,
// and the Responder that carries it back. The server (http_server.h) reads and writes them, the
// envelopes (envelope.h) fill responses in the API's shapes, the router and routes pass them on;
// this header needs none of them.
//
// Plain values; a Responder is thread-safe to call once from any thread (see below).

#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/verb.hpp>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/assert.h"
#include "common/result.h"

namespace kobo::http {

using QueryParams = std::vector<std::pair<std::string, std::string>>;

struct Request {
  boost::beast::http::verb method = boost::beast::http::verb::get;
  std::string path;   // percent-decoded, without the query
  QueryParams query;  // percent-decoded ('+' is a space), in order, repeated keys kept
  boost::beast::http::fields headers;
  std::string body;

  // Case-insensitive; "" when absent.
  std::string_view header(std::string_view name) const;
  // The first value of `name` in the query, if any.
  std::optional<std::string_view> query_param(std::string_view name) const;
};

// A body made piece by piece as it is written, so that its size never has to be in memory: each
// call appends the next piece (a bounded amount) to `out` and returns whether more follow, or an
// error, on which the connection closes without ending the body, so the client sees it cut short. Called on
// the connection's thread, one call at a time.
using BodyStream = std::function<Result<bool>(std::string& out)>;

struct Response {
  unsigned status = 200;
  std::string body;
  std::string content_type = "application/json";  // empty: no content-type header
  std::vector<std::pair<std::string, std::string>> headers;
  // When set, the body is this (chunked on HTTP/1.1; on HTTP/1.0, until the connection closes)
  // and `body` must be empty.
  BodyStream stream = nullptr;
  // When set, the body is what this returns, made on the connection's thread just before the
  // write (`body` must be empty; the status and headers are known already): an answer given
  // from another thread (the writer's, handing an outcome over) leaves its rendering to the
  // thread that writes it instead of doing it there or handing it to a third thread.
  std::function<std::string()> render = nullptr;
};

// `r` with its body made: Response::render called (and cleared), else `r` as it is. The server
// does this before it writes; an in-process caller of a handler does it before it reads `body`.
inline Response rendered(Response r) {
  if (r.render) {
    KOBO_ASSERT(r.body.empty() && !r.stream, "a response's body is made one way");
    r.body = r.render();
    r.render = nullptr;
  }
  return r;
}

// Call exactly once, from any thread. Calling it twice is a programmer error (asserts). Dropping
// every copy without calling it answers 500 and logs, so a lost responder never hangs a client.
using Responder = std::function<void(Response)>;
using Handler = std::function<void(Request&&, Responder)>;

}  // namespace kobo::http
