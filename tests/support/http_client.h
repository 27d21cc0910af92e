#pragma once
// A small synchronous HTTP/1.1 client for tests: one keep-alive connection to one server,
// reopened when the server has closed it. Every exchange has a timeout, so a broken server
// fails a test instead of hanging it.
//
// Not thread-safe: one client per thread.
//
// Its connection (Asio's io_context, Beast's stream and buffer) is behind a pointer: this header is
// in every integration test's code, which need not compile Asio and Beast for it.

#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kobo::testing {

struct HttpResult {
  unsigned status = 0;
  nlohmann::json json;  // null when the body is not JSON
  std::string body;
  std::map<std::string, std::string> headers;  // names in lower case

  // "" when absent; `name` in lower case.
  std::string header(const std::string& name) const;
};

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

class HttpClient {
 public:
  HttpClient(std::string host, std::uint16_t port,
             std::chrono::milliseconds timeout = std::chrono::milliseconds(10'000));
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;
  ~HttpClient();

  // `body`, when given, is sent as is with content-type application/json unless `headers` set
  // one. Throws std::runtime_error when no response arrives (connect failure, timeout).
  HttpResult request(boost::beast::http::verb method, std::string_view target,
                     std::optional<std::string> body = std::nullopt, const HttpHeaders& headers = {});

  // `service_key`, when not empty, goes in x-service-key.
  HttpResult get(std::string_view target, std::string_view service_key = {});
  HttpResult post(std::string_view target, const nlohmann::json& body, std::string_view service_key = {});
  HttpResult patch(std::string_view target, const nlohmann::json& body, std::string_view service_key = {});

  // Sends raw bytes on a fresh connection and reads one response (for malformed requests).
  HttpResult send_raw(std::string_view bytes);

  // True when the connection the client holds has been closed by the server: waits up to
  // `wait` for the close (for idle-timeout tests). False if the client holds no connection.
  bool server_closed_connection(std::chrono::milliseconds wait);

  // Connections opened so far (1 + reconnects): lets tests check keep-alive.
  int connections_opened() const { return connections_opened_; }

 private:
  void connect();
  void close();
  HttpResult exchange(const std::string& wire_request);
  // Runs the io_context until the pending operation finishes or the timeout passes.
  void run_until_done();

  struct Connection;  // the io_context, the stream when open, the read buffer

  std::string host_;
  std::uint16_t port_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<Connection> conn_;
  int connections_opened_ = 0;
};

// A port that was free on 127.0.0.1 a moment ago (bind to port 0, read it, close).
std::uint16_t free_loopback_port();

}  // namespace kobo::testing
