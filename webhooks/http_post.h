#pragma once
// One webhook POST over HTTP/1.1 (Boost.Beast), http or https. Internal to webhooks/.
//
// The attempt resolves the host, refuses it when any address it resolves to is loopback,
// private, link-local, ... (unless allow_private), connects only to the addresses it checked
// (no second lookup a rebinding DNS could answer differently), sends the body with
// `Connection: close`, reads the status line and headers (capped) and closes: the body of the
// answer is never read, and a redirect is just a non-2xx status. Everything, the DNS lookup
// included, shares one deadline. https verifies the certificate against the system store and
// the host name (SNI set).

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kobo::webhooks_detail {

struct PostRequest {
  std::string url;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

struct PostOptions {
  std::chrono::milliseconds timeout{10'000};
  bool allow_private = false;
  std::size_t response_header_bytes_max = std::size_t{8} * 1024;
};

struct PostResult {
  std::optional<unsigned> status_code;  // when an answer's status line arrived
  std::string error;                    // why there was no answer, or why it was refused: the tenant sees it
  std::string detail;                   // what only the node's log may say (an address it resolved to)
  std::chrono::milliseconds duration{0};
  bool ok() const { return status_code && *status_code / 100 == 2; }
};

// Never throws; every failure is a PostResult with an error.
boost::asio::awaitable<PostResult> post(boost::asio::ssl::context& tls, PostRequest request,
                                        PostOptions options);

// A client TLS context that verifies peers against the system's certificate store.
boost::asio::ssl::context make_tls_context();

}  // namespace kobo::webhooks_detail
