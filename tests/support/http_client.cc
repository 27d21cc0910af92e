#include "tests/support/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <cctype>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace kobo::testing {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The server closed a kept-alive connection under us: worth one reconnect.
bool is_stale_connection(const beast::error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == net::error::eof || ec == net::error::connection_reset ||
         ec == net::error::broken_pipe || ec == net::error::connection_aborted ||
         ec == bhttp::error::partial_message;
}

struct ExchangeError : std::runtime_error {
  ExchangeError(const std::string& what, beast::error_code code) : std::runtime_error(what), ec(code) {}
  beast::error_code ec;
};

}  // namespace

std::string HttpResult::header(const std::string& name) const {
  const auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

struct HttpClient::Connection {
  net::io_context ioc;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
};

HttpClient::HttpClient(std::string host, std::uint16_t port, std::chrono::milliseconds timeout)
    : host_(std::move(host)), port_(port), timeout_(timeout), conn_(std::make_unique<Connection>()) {}

HttpClient::~HttpClient() = default;

void HttpClient::run_until_done() {
  conn_->ioc.restart();
  conn_->ioc.run();
}

void HttpClient::connect() {
  close();
  conn_->stream.emplace(conn_->ioc);
  conn_->buffer.clear();
  tcp::resolver resolver(conn_->ioc);
  beast::error_code ec;
  const auto endpoints = resolver.resolve(host_, std::to_string(port_), ec);
  if (ec) throw ExchangeError("resolve " + host_ + ": " + ec.message(), ec);
  conn_->stream->expires_after(timeout_);
  conn_->stream->async_connect(endpoints, [&ec](beast::error_code e, const tcp::endpoint&) { ec = e; });
  run_until_done();
  if (ec) {
    close();
    throw ExchangeError("connect " + host_ + ":" + std::to_string(port_) + ": " + ec.message(), ec);
  }
  ++connections_opened_;
}

void HttpClient::close() {
  if (!conn_->stream) return;
  beast::error_code ignored;
  conn_->stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
  conn_->stream->close();
  conn_->stream.reset();
  conn_->buffer.clear();
}

HttpResult HttpClient::exchange(const std::string& wire_request) {
  beast::error_code ec;
  conn_->stream->expires_after(timeout_);
  net::async_write(*conn_->stream, net::buffer(wire_request),
                   [&ec](beast::error_code e, std::size_t) { ec = e; });
  run_until_done();
  if (ec) throw ExchangeError("write: " + ec.message(), ec);

  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  conn_->stream->expires_after(timeout_);
  bhttp::async_read(*conn_->stream, conn_->buffer, parser,
                    [&ec](beast::error_code e, std::size_t) { ec = e; });
  run_until_done();
  if (ec) throw ExchangeError("read: " + ec.message(), ec);

  auto res = parser.release();
  HttpResult result;
  result.status = res.result_int();
  for (const auto& field : res) result.headers[lower(field.name_string())] = std::string(field.value());
  result.body = std::move(res.body());
  result.json = nlohmann::json::parse(result.body, nullptr, /*allow_exceptions=*/false);
  if (result.json.is_discarded()) result.json = nullptr;
  if (!res.keep_alive()) close();
  return result;
}

HttpResult HttpClient::request(bhttp::verb method, std::string_view target, std::optional<std::string> body,
                               const HttpHeaders& headers) {
  bhttp::request<bhttp::string_body> req{method, target, 11};
  req.set(bhttp::field::host, host_ + ":" + std::to_string(port_));
  for (const auto& [name, value] : headers) req.set(name, value);
  if (body) {
    if (req.find(bhttp::field::content_type) == req.end())
      req.set(bhttp::field::content_type, "application/json");
    req.body() = std::move(*body);
  }
  req.prepare_payload();
  std::ostringstream wire;
  wire << req;
  const std::string bytes = wire.str();

  const bool reused = conn_->stream.has_value();
  if (!reused) connect();
  try {
    return exchange(bytes);
  } catch (const ExchangeError& e) {
    close();
    if (!reused || !is_stale_connection(e.ec)) throw;
  }
  connect();
  try {
    return exchange(bytes);
  } catch (const ExchangeError&) {
    close();
    throw;
  }
}

HttpResult HttpClient::get(std::string_view target, std::string_view service_key) {
  HttpHeaders headers;
  if (!service_key.empty()) headers.emplace_back("x-service-key", service_key);
  return request(bhttp::verb::get, target, std::nullopt, headers);
}

HttpResult HttpClient::post(std::string_view target, const nlohmann::json& body,
                            std::string_view service_key) {
  HttpHeaders headers;
  if (!service_key.empty()) headers.emplace_back("x-service-key", service_key);
  return request(bhttp::verb::post, target, body.dump(), headers);
}

HttpResult HttpClient::patch(std::string_view target, const nlohmann::json& body,
                             std::string_view service_key) {
  HttpHeaders headers;
  if (!service_key.empty()) headers.emplace_back("x-service-key", service_key);
  return request(bhttp::verb::patch, target, body.dump(), headers);
}

HttpResult HttpClient::send_raw(std::string_view bytes) {
  connect();
  try {
    return exchange(std::string(bytes));
  } catch (const ExchangeError&) {
    close();
    throw;
  }
}

bool HttpClient::server_closed_connection(std::chrono::milliseconds wait) {
  if (!conn_->stream) return false;
  beast::error_code ec;
  std::size_t n = 0;
  conn_->stream->expires_after(wait);
  conn_->stream->async_read_some(conn_->buffer.prepare(1), [&](beast::error_code e, std::size_t got) {
    ec = e;
    n = got;
  });
  run_until_done();
  conn_->buffer.commit(n);
  const bool closed = ec && is_stale_connection(ec);
  if (ec) close();  // closed by the server, or by the timeout: unusable either way
  return closed;
}

std::uint16_t free_loopback_port() {
  net::io_context ioc;
  tcp::acceptor acceptor(ioc, tcp::endpoint(net::ip::address_v4::loopback(), 0));
  return acceptor.local_endpoint().port();
}

}  // namespace kobo::testing
