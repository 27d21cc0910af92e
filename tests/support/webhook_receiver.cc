#include "tests/support/webhook_receiver.h"

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <cctype>

namespace kobo::testing {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using asio::ip::tcp;

std::string ReceivedRequest::header(const std::string& name) const {
  const auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

WebhookReceiver::WebhookReceiver(Mode mode)
    : mode_(mode), acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
  port_ = acceptor_.local_endpoint().port();
  accept();
  thread_ = std::thread([this] { io_.run(); });
}

WebhookReceiver::~WebhookReceiver() {
  io_.stop();
  thread_.join();
}

void WebhookReceiver::answer_with(std::vector<unsigned> statuses) {
  std::lock_guard lock(mu_);
  statuses_.assign(statuses.begin(), statuses.end());
}

std::string WebhookReceiver::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

std::vector<ReceivedRequest> WebhookReceiver::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

std::size_t WebhookReceiver::count() const {
  std::lock_guard lock(mu_);
  return requests_.size();
}

void WebhookReceiver::accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    if (ec) return;
    serve(std::make_shared<tcp::socket>(std::move(socket)));
    accept();
  });
}

// One request per connection (the service sends `Connection: close`).
void WebhookReceiver::serve(std::shared_ptr<tcp::socket> socket) {
  auto buffer = std::make_shared<boost::beast::flat_buffer>();
  auto req = std::make_shared<bhttp::request<bhttp::string_body>>();
  bhttp::async_read(
      *socket, *buffer, *req, [this, socket, buffer, req](boost::system::error_code ec, std::size_t) {
        if (ec) return;
        ReceivedRequest r;
        r.method = std::string(req->method_string());
        r.target = std::string(req->target());
        for (const auto& f : *req) {
          std::string name(f.name_string());
          std::transform(name.begin(), name.end(), name.begin(),
                         [](unsigned char c) { return std::tolower(c); });
          r.headers[name] = std::string(f.value());
        }
        r.body = req->body();
        r.at = std::chrono::steady_clock::now();
        unsigned status = 200;
        {
          std::lock_guard lock(mu_);
          requests_.push_back(std::move(r));
          if (!statuses_.empty()) {
            status = statuses_.front();
            statuses_.pop_front();
          }
        }
        // A hung receiver keeps the socket (the lambda's copy lives in the pending read) and
        // never answers.
        if (mode_ == Mode::hang) {
          auto sink = std::make_shared<char>();
          socket->async_read_some(asio::buffer(sink.get(), 1),
                                  [socket, sink](boost::system::error_code, std::size_t) {});
          return;
        }
        auto res =
            std::make_shared<bhttp::response<bhttp::string_body>>(static_cast<bhttp::status>(status), 11);
        res->set(bhttp::field::content_type, "text/plain");
        if (status / 100 == 3) res->set(bhttp::field::location, "http://127.0.0.1:1/elsewhere");
        res->body() = "ok";
        res->keep_alive(false);
        res->prepare_payload();
        bhttp::async_write(*socket, *res, [socket, res](boost::system::error_code, std::size_t) {
          boost::system::error_code ignored;
          socket->shutdown(tcp::socket::shutdown_both, ignored);
        });
      });
}

}  // namespace kobo::testing
