#pragma once
// The HTTP/1.1 server of the query API: Boost.Beast over threads that each run an io_context.
//
// Ownership and threads: a `Server` owns its io_contexts and threads, one io_context per thread.
// Each connection belongs to one of them (the next in turn when it is accepted), so everything
// about one connection runs on one thread, serialized; the `Handler` is called there. A handler
// answers through its `Responder`, exactly once, from any thread (the command writer answers
// writes later from its own thread); the response is posted back to the connection's thread
// before it is written.
//
// Bounded pipelining: a connection reads its next request only after the response to the current
// one has been written, so at most one request per connection is in flight and a client cannot
// queue unbounded work. Bytes a client pipelines early wait in the connection's read buffer.
//
// Limits (ServerOptions): body size (413 `Payload too large`), header size (431), read timeout
// (from the first byte of a request to its end), idle timeout (keep-alive wait for the next
// request), write timeout, connection count. A malformed request is 400 `Bad request`, closing
// the connection. A handler that throws is 500 `Internal server error` (logged, nothing leaked);
// that connection stays usable because its request was read completely.
//
// The messages it reads and writes are message.h's (Request, Response, Responder).
//
// Lifecycle: construct, start() once, stop() once (the destructor stops too). stop() closes the
// listener, lets in-flight requests finish for up to `shutdown_grace`, then closes what is left
// and joins the threads. A Responder called after stop() drops its response. Server's own
// member functions are not thread-safe with each other; call them from one owning thread.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "common/result.h"
#include "query-api/message.h"

namespace kobo::http {

// Splits a request target (origin form, as the request line has it) into `req.path` and
// `req.query`, percent-decoded as described there; false when it is malformed (400). The
// server's own parse, a separate function so that it can be fuzzed (fuzz/).
[[nodiscard]] bool parse_target(std::string_view target, Request& req);

struct ServerOptions {
  std::string address = "127.0.0.1";
  std::uint16_t port = 0;  // 0: an ephemeral port, see Server::port()
  int threads = 2;
  std::size_t body_limit = std::size_t{64} * 1024;  // bytes; larger is 413
  // Other body limits for exact request paths (Router::body_limits(): the bulk transfer's 1 MiB).
  std::vector<std::pair<std::string, std::size_t>> path_body_limits;
  std::size_t header_limit = std::size_t{16} * 1024;  // bytes of request line and headers; larger is 431
  std::size_t connections_max = 10'000;               // further connections are closed on accept
  std::chrono::milliseconds read_timeout{10'000};     // first byte of a request to its last
  std::chrono::milliseconds idle_timeout{60'000};     // keep-alive wait for the next request
  std::chrono::milliseconds write_timeout{10'000};    // writing one response
  std::chrono::milliseconds shutdown_grace{5'000};    // stop() waits this long for in-flight work
};

// The status line and header fields of `response` (the body follows them), as the server
// writes them: the bytes Beast's serializer makes of the same message (tests hold it to that),
// without building a Beast message for every answer. Content-Length is the body's size; a
// HEAD answer gets the header of the answer it would have had.
std::string response_head(const Response& response, unsigned version, bool keep_alive);

class Server {
 public:
  Server(ServerOptions options, Handler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds, listens and starts the threads. An error (address in use, bad address) is returned,
  // not thrown. Call once.
  Status start();
  // The bound port (useful with port 0); 0 before start().
  std::uint16_t port() const { return port_; }
  // Graceful: see the lifecycle note above. Idempotent.
  void stop();

  // Implementation details, defined in http_server.cc.
  struct Core;
  class Connection;

 private:
  std::shared_ptr<Core> core_;
  std::vector<std::thread> threads_;
  std::uint16_t port_ = 0;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace kobo::http
