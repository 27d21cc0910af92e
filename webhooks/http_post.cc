#include "webhooks/http_post.h"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/url/parse.hpp>

#include "webhooks/policy.h"

namespace kobo::webhooks_detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

asio::ssl::context make_tls_context() {
  asio::ssl::context tls(asio::ssl::context::tls_client);
  tls.set_default_verify_paths();
  tls.set_verify_mode(asio::ssl::verify_peer);
  return tls;
}

namespace {

struct Target {
  bool https = false;
  std::string host;  // without brackets
  std::string port;
  std::string path;  // origin-form
  std::string host_header;
};

std::optional<Target> parse_target(const std::string& url, std::string& error) {
  auto u = boost::urls::parse_absolute_uri(url);
  if (!u) {
    error = "invalid URL";
    return std::nullopt;
  }
  Target t;
  const std::string scheme = u->scheme();
  if (scheme != "http" && scheme != "https") {
    error = "URL scheme must be http or https";
    return std::nullopt;
  }
  t.https = scheme == "https";
  t.host = u->host_type() == boost::urls::host_type::ipv6 ? std::string(u->encoded_host_address())
                                                          : std::string(u->host_address());
  if (t.host.empty()) {
    error = "URL has no host";
    return std::nullopt;
  }
  t.port = u->has_port() ? std::string(u->port()) : (t.https ? "443" : "80");
  t.path = u->encoded_path().empty() ? "/" : std::string(u->encoded_path());
  if (u->has_query()) t.path += "?" + std::string(u->encoded_query());
  t.host_header = std::string(u->encoded_host_and_port());
  return t;
}

template <typename Stream>
asio::awaitable<unsigned> exchange(Stream& stream, const Target& t, const PostRequest& r,
                                   const PostOptions& o) {
  bhttp::request<bhttp::string_body> req(bhttp::verb::post, t.path, 11);
  req.set(bhttp::field::host, t.host_header);
  req.set(bhttp::field::connection, "close");
  for (const auto& [name, value] : r.headers) req.set(name, value);
  req.body() = r.body;
  req.prepare_payload();
  co_await bhttp::async_write(stream, req, asio::use_awaitable);
  beast::flat_buffer buffer(o.response_header_bytes_max);
  bhttp::response_parser<bhttp::empty_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(o.response_header_bytes_max));
  co_await bhttp::async_read_header(stream, buffer, parser, asio::use_awaitable);
  co_return parser.get().result_int();
}

std::string describe(const boost::system::system_error& e, const PostOptions& o) {
  if (e.code() == beast::error::timeout || e.code() == asio::error::operation_aborted)
    return "timed out after " + std::to_string(o.timeout.count()) + " ms";
  if (e.code() == bhttp::error::header_limit || e.code() == bhttp::error::buffer_overflow)
    return "response headers over " + std::to_string(o.response_header_bytes_max) + " bytes";
  return e.code().message();
}

}  // namespace

asio::awaitable<PostResult> post(asio::ssl::context& tls, PostRequest request, PostOptions options) {
  using namespace asio::experimental::awaitable_operators;
  const auto started = Clock::now();
  const auto deadline = started + options.timeout;
  PostResult result;
  auto finish = [&] {
    result.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
    return result;
  };
  const auto target = parse_target(request.url, result.error);
  if (!target) co_return finish();
  const auto ex = co_await asio::this_coro::executor;
  try {
    tcp::resolver resolver(ex);
    asio::steady_timer timer(ex, deadline);
    auto resolved = co_await (resolver.async_resolve(target->host, target->port, asio::use_awaitable) ||
                              timer.async_wait(asio::use_awaitable));
    if (resolved.index() == 1) {
      result.error =
          "timed out after " + std::to_string(options.timeout.count()) + " ms resolving " + target->host;
      co_return finish();
    }
    std::vector<tcp::endpoint> endpoints;
    for (const auto& entry : std::get<0>(resolved)) {
      const auto address = entry.endpoint().address();
      if (!options.allow_private) {
        if (auto why = forbidden_address_reason(address.to_string())) {
          // The tenant reads `error` (its delivery's attempts): it learns that the address is
          // refused, never what the name resolves to inside the service's network.
          result.error = "refused: the URL's host is not a public address";
          result.detail = target->host + " resolves to " + address.to_string() + ", a " + *why +
                          " address (server-side request forgery guard; --webhook-allow-private allows it)";
          co_return finish();
        }
      }
      endpoints.push_back(entry.endpoint());
    }
    if (endpoints.empty()) {
      result.error = "no address for " + target->host;
      co_return finish();
    }
    if (!target->https) {
      beast::tcp_stream stream(ex);
      stream.expires_at(deadline);
      co_await stream.async_connect(endpoints, asio::use_awaitable);
      result.status_code = co_await exchange(stream, *target, request, options);
    } else {
      beast::ssl_stream<beast::tcp_stream> stream(ex, tls);
      if (!SSL_set_tlsext_host_name(stream.native_handle(), target->host.c_str())) {
        result.error = "TLS: cannot set the server name";
        co_return finish();
      }
      stream.set_verify_callback(asio::ssl::host_name_verification(target->host));
      beast::get_lowest_layer(stream).expires_at(deadline);
      co_await beast::get_lowest_layer(stream).async_connect(endpoints, asio::use_awaitable);
      co_await stream.async_handshake(asio::ssl::stream_base::client, asio::use_awaitable);
      result.status_code = co_await exchange(stream, *target, request, options);
    }
  } catch (const boost::system::system_error& e) {
    result.error = describe(e, options);
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  co_return finish();
}

}  // namespace kobo::webhooks_detail
