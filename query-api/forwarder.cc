#include "query-api/forwarder.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "common/log.h"
#include "common/thread.h"

namespace kobo {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bh = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

bool unreserved(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

void percent_encode(std::string_view text, std::string_view keep, std::string& out) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (const char c : text) {
    if (unreserved(c) || keep.find(c) != std::string_view::npos) {
      out += c;
    } else {
      const auto b = static_cast<unsigned char>(c);
      out += '%';
      out += kHex[b >> 4];
      out += kHex[b & 15];
    }
  }
}

// Hop-by-hop fields (RFC 9110 section 7.6.1) and what the message's own framing sets: never
// passed on in either direction.
bool hop_by_hop(bh::field f) {
  switch (f) {
    case bh::field::connection:
    case bh::field::keep_alive:
    case bh::field::transfer_encoding:
    case bh::field::te:
    case bh::field::trailer:
    case bh::field::upgrade:
    case bh::field::proxy_authorization:
    case bh::field::proxy_authenticate:
    case bh::field::content_length:
    case bh::field::host:
      return true;
    default:
      return false;
  }
}

// http://HOST:PORT (Cluster's check_advertise has refused anything else).
std::optional<std::pair<std::string, std::string>> host_port(std::string_view url) {
  constexpr std::string_view scheme = "http://";
  if (!url.starts_with(scheme)) return std::nullopt;
  url.remove_prefix(scheme.size());
  if (!url.empty() && url.back() == '/') url.remove_suffix(1);
  const auto colon = url.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == url.size()) return std::nullopt;
  std::string host(url.substr(0, colon));
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return std::pair{host, std::string(url.substr(colon + 1))};
}

}  // namespace

std::string request_target(const http::Request& request) {
  std::string target;
  percent_encode(request.path, "/:@!$&'()*+,;=", target);
  for (std::size_t i = 0; i < request.query.size(); ++i) {
    target += i == 0 ? '?' : '&';
    percent_encode(request.query[i].first, "", target);
    target += '=';
    percent_encode(request.query[i].second, "", target);
  }
  return target;
}

struct Forwarder::Impl {
  explicit Impl(ForwarderOptions o) : options(std::move(o)), work(io.get_executor()) {
    for (int i = 0; i < std::max(1, options.threads); ++i)
      threads.emplace_back([this] {
        name_this_thread("kobo-forward");
        io.run();
      });
  }
  ~Impl() {
    work.reset();
    io.stop();
    for (auto& t : threads) t.join();
  }

  struct Connection {
    explicit Connection(asio::io_context& io) : stream(io) {}
    beast::tcp_stream stream;
    beast::flat_buffer buffer;
    bool fresh = true;  // not yet connected
  };

  struct Exchange {
    bh::request<bh::string_body> request;
    std::function<void(Forwarded)> done;
    std::unique_ptr<Connection> connection;
    bh::response_parser<bh::string_body> parser;
    bool sent = false;
  };

  struct Peer {
    std::string host, port;
    std::vector<std::unique_ptr<Connection>> idle;
    std::size_t busy = 0;  // connections lent to exchanges
    std::deque<std::shared_ptr<Exchange>> waiting;
  };

  // Whether an idle connection is still open: the peer has not closed it (nothing to read, not
  // even the end of the stream).
  static bool still_open(Connection& c) {
    auto& socket = c.stream.socket();
    boost::system::error_code ec;
    char byte = 0;
    socket.non_blocking(true, ec);
    if (ec) return false;
    const std::size_t n = socket.receive(asio::buffer(&byte, 1), tcp::socket::message_peek, ec);
    socket.non_blocking(false, ec);
    (void)n;
    return ec == asio::error::would_block;
  }

  void forward(const std::string& url, const http::Request& in, std::function<void(Forwarded)> done) {
    const auto hp = host_port(url);
    if (!hp) return done(Forwarded{std::nullopt, false, "not an http://HOST:PORT URL: " + url});
    auto x = std::make_shared<Exchange>();
    x->done = std::move(done);
    x->parser.body_limit(options.answer_limit);
    x->parser.header_limit(64 * 1024);
    auto& r = x->request;
    r.version(11);
    r.method(in.method);
    r.target(request_target(in));
    for (const auto& f : in.headers)
      if (!hop_by_hop(f.name()) && !beast::iequals(f.name_string(), kForwardedHeader) &&
          !beast::iequals(f.name_string(), kClusterSecretHeader))
        r.insert(f.name_string(), f.value());
    r.set(bh::field::host, hp->first + ":" + hp->second);
    r.set(kForwardedHeader, options.node_id);
    r.set(kClusterSecretHeader, options.secret);
    r.keep_alive(true);
    r.body() = in.body;
    if (!in.body.empty() || in.method == bh::verb::post || in.method == bh::verb::put ||
        in.method == bh::verb::patch)
      r.prepare_payload();

    std::unique_ptr<Connection> c;
    {
      std::lock_guard lock(mu);
      Peer& peer = peers[url];
      if (peer.host.empty()) std::tie(peer.host, peer.port) = *hp;
      while (!peer.idle.empty()) {
        auto candidate = std::move(peer.idle.back());
        peer.idle.pop_back();
        if (still_open(*candidate)) {
          c = std::move(candidate);
          break;
        }
      }
      if (!c && peer.busy >= options.connections_per_peer) {
        peer.waiting.push_back(std::move(x));
        return;
      }
      ++peer.busy;
    }
    if (!c) c = std::make_unique<Connection>(io);
    x->connection = std::move(c);
    asio::post(io, [this, url, x] { start(url, x); });
  }

  void start(const std::string& url, const std::shared_ptr<Exchange>& x) {
    Connection& c = *x->connection;
    c.stream.expires_after(options.timeout);
    if (!c.fresh) return write(url, x);
    std::string host, port;
    {
      std::lock_guard lock(mu);
      host = peers[url].host;
      port = peers[url].port;
    }
    boost::system::error_code ec;
    tcp::resolver resolver(io);
    const auto endpoints = resolver.resolve(host, port, tcp::resolver::numeric_service, ec);
    if (ec) return finish(url, x, "resolve " + host + ": " + ec.message());
    c.stream.async_connect(endpoints,
                           [this, url, x](const boost::system::error_code& e, const tcp::endpoint&) {
                             if (e) return finish(url, x, "connect: " + e.message());
                             x->connection->fresh = false;
                             boost::system::error_code ignored;
                             x->connection->stream.socket().set_option(tcp::no_delay(true), ignored);
                             write(url, x);
                           });
  }

  void write(const std::string& url, const std::shared_ptr<Exchange>& x) {
    x->sent = true;
    bh::async_write(x->connection->stream, x->request,
                    [this, url, x](const boost::system::error_code& e, std::size_t) {
                      if (e) return finish(url, x, "write: " + e.message());
                      bh::async_read(x->connection->stream, x->connection->buffer, x->parser,
                                     [this, url, x](const boost::system::error_code& re, std::size_t) {
                                       if (re) return finish(url, x, "read: " + re.message());
                                       finish(url, x, {});
                                     });
                    });
  }

  // Ends an exchange: its answer, or the error; the connection goes back to the pool when it
  // can carry another request, and the next waiting exchange takes a connection.
  void finish(const std::string& url, const std::shared_ptr<Exchange>& x, const std::string& error) {
    Forwarded f;
    f.sent = x->sent;
    bool reuse = false;
    if (error.empty()) {
      auto& msg = x->parser.get();
      http::Response res;
      res.status = msg.result_int();
      res.content_type = std::string(msg[bh::field::content_type]);
      for (const auto& field : msg)
        if (!hop_by_hop(field.name()) && field.name() != bh::field::content_type)
          res.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
      res.body = std::move(msg.body());
      reuse = msg.keep_alive();
      f.answer = std::move(res);
    } else {
      f.error = error;
    }
    std::unique_ptr<Connection> c = std::move(x->connection);
    std::unique_ptr<Connection> closing;  // a connection kept by no one: closed once the lock is let go
    std::shared_ptr<Exchange> next;
    {
      std::lock_guard lock(mu);
      Peer& peer = peers[url];
      if (!peer.waiting.empty()) {
        next = std::move(peer.waiting.front());
        peer.waiting.pop_front();
        if (reuse) {
          next->connection = std::move(c);
        } else {
          next->connection = std::make_unique<Connection>(io);
          closing = std::move(c);
        }
        next->connection->buffer.clear();
      } else {
        --peer.busy;
        if (reuse) {
          c->buffer.clear();
          peer.idle.push_back(std::move(c));
        } else {
          closing = std::move(c);
        }
      }
    }
    if (closing) {
      boost::system::error_code ec;
      closing->stream.socket().close(ec);
    }
    if (next) start(url, next);
    x->done(std::move(f));
  }

  const ForwarderOptions options;
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work;
  std::vector<std::thread> threads;
  std::mutex mu;
  std::map<std::string, Peer> peers;  // by URL; guarded by mu
};

Forwarder::Forwarder(ForwarderOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Forwarder::~Forwarder() = default;

void Forwarder::forward(const std::string& url, const http::Request& request,
                        std::function<void(Forwarded)> done) {
  impl_->forward(url, request, std::move(done));
}

}  // namespace kobo
