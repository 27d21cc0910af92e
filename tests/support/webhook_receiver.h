#pragma once
// A webhook receiver for tests: an HTTP/1.1 server on 127.0.0.1 (a free port) in the test
// process that records every request it gets and answers with scripted statuses, or never
// answers at all (Mode::hang: it reads the request and holds the connection open until it is
// destroyed), to stand for a hung endpoint.
//
// Thread safety: all methods may be called from any thread; requests arrive on the receiver's
// own I/O thread. Lifecycle: constructed = listening; the destructor stops it.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kobo::testing {

struct ReceivedRequest {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  std::chrono::steady_clock::time_point at;
  std::string header(const std::string& name) const;
};

class WebhookReceiver {
 public:
  enum class Mode { answer, hang };
  explicit WebhookReceiver(Mode mode = Mode::answer);
  ~WebhookReceiver();
  WebhookReceiver(const WebhookReceiver&) = delete;
  WebhookReceiver& operator=(const WebhookReceiver&) = delete;

  // The next requests get these statuses, in order; after that, 200.
  void answer_with(std::vector<unsigned> statuses);
  // http://127.0.0.1:<port><path>
  std::string url(const std::string& path = "/hook") const;
  std::uint16_t port() const { return port_; }
  std::vector<ReceivedRequest> requests() const;
  std::size_t count() const;

 private:
  void accept();
  void serve(std::shared_ptr<boost::asio::ip::tcp::socket> socket);

  const Mode mode_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  mutable std::mutex mu_;
  std::deque<unsigned> statuses_;
  std::vector<ReceivedRequest> requests_;
  std::thread thread_;
};

}  // namespace kobo::testing
