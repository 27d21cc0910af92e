#include "query-api/http_server.h"

#include <array>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/url/parse.hpp>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <unordered_map>

#include "common/assert.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/thread.h"
#include "query-api/envelope.h"

namespace kobo::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

namespace {

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
// Bytes asked for when waiting for the start of a request.
constexpr std::size_t kReadChunk = std::size_t{16} * 1024;

// The largest body any request may have: what a connection's buffer must hold.
std::size_t body_limit_max(const ServerOptions& o) {
  std::size_t most = o.body_limit;
  for (const auto& [path, bytes] : o.path_body_limits) most = std::max(most, bytes);
  return most;
}
// After an error answer the connection half-closes and reads what the client still sends, so
// the client sees the answer rather than a reset caused by unread data; bounded in both ways.
constexpr std::size_t kDrainBytesMax = std::size_t{1024} * 1024;
constexpr std::chrono::milliseconds kDrainTimeout{1000};
// Accept errors such as EMFILE would otherwise spin the acceptor.
constexpr std::chrono::milliseconds kAcceptRetryDelay{50};

// Connections of every Server in the process; the gauge mirrors it.
std::atomic<std::int64_t> g_open_connections{0};

metrics::Gauge& open_connections_gauge() {
  static metrics::Gauge& gauge =
      metrics::registry().gauge("kobo_http_connections_open", "Open HTTP connections");
  return gauge;
}

const beast::error_category& http_error_category() {
  static const auto& category = bhttp::make_error_code(bhttp::error::bad_method).category();
  return category;
}

}  // namespace

std::string_view Request::header(std::string_view name) const {
  const auto it = headers.find(name);
  return it == headers.end() ? std::string_view() : std::string_view(it->value());
}

std::optional<std::string_view> Request::query_param(std::string_view name) const {
  for (const auto& [key, value] : query)
    if (key == name) return value;
  return std::nullopt;
}

bool parse_target(std::string_view target, Request& req) {
  // Clients send `createdAt[startDate]=…` with the brackets unencoded; RFC 3986 reserves
  // them, so they are encoded before the strict parse rather than refused.
  // One pass into a new string: replacing in place moves the rest of the target per bracket,
  // quadratic in a target of many brackets.
  std::string raw_target;
  raw_target.reserve(target.size());
  for (const char c : target) {
    if (c == '[')
      raw_target += "%5B";
    else if (c == ']')
      raw_target += "%5D";
    else
      raw_target += c;
  }
  auto parsed = boost::urls::parse_origin_form(raw_target);
  if (!parsed) return false;
  req.path = parsed->path();
  for (const auto& param : parsed->params()) req.query.emplace_back(param.key, param.value);
  return true;
}

struct Server::Core {
  Core(ServerOptions o, Handler h)
      : iocs(make_iocs(o.threads)),
        options(std::move(o)),
        handler(std::move(h)),
        acceptor(iocs.front()->get_executor()),
        accept_retry(acceptor.get_executor()) {
    for (const auto& ioc : iocs) work.emplace_back(ioc->get_executor());
  }

  // An io_context per thread, each run by that thread alone: a connection's handlers never wait
  // for another thread, nor wake one (one shared io_context handed every completion to whichever
  // thread the scheduler woke, through a futex, and needed a strand per connection).
  static std::vector<std::unique_ptr<net::io_context>> make_iocs(int threads) {
    KOBO_ASSERT(threads > 0, "server needs at least one thread");
    std::vector<std::unique_ptr<net::io_context>> out;
    out.reserve(static_cast<std::size_t>(threads));
    for (int i = 0; i < threads; ++i) out.push_back(std::make_unique<net::io_context>(1));
    return out;
  }
  // The io_context of the next connection accepted: each in turn.
  net::io_context& next_ioc() { return *iocs[next_connection++ % iocs.size()]; }

  // First member: destroyed last. Every Connection holds the Core, so the io_contexts outlive
  // every socket and timer that uses them, even a connection kept alive by a late Responder.
  std::vector<std::unique_ptr<net::io_context>> iocs;
  const ServerOptions options;
  const Handler handler;
  std::vector<net::executor_work_guard<net::io_context::executor_type>> work;
  tcp::acceptor acceptor;           // on the first io_context
  net::steady_timer accept_retry;   // same
  std::size_t next_connection = 0;  // the acceptor's handlers only
  std::atomic<std::size_t> open{0};
  std::atomic<bool> stopping{false};

  std::mutex mu;  // guards the fields below
  std::condition_variable drained;
  bool posts_open = true;  // false once stop() joined the threads: late responses are dropped
  std::unordered_map<Connection*, std::weak_ptr<Connection>> connections;
};

// One TCP connection. Owned by shared_ptrs held by its pending operation or by the Responder of
// its in-flight request; everything but post_response() runs on its io_context's one thread.
// States: reading -> handling -> writing -> reading ... ; any state -> closing (drain) -> closed.
class Server::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(std::shared_ptr<Core> core, tcp::socket socket)
      : core_(std::move(core)),
        stream_(std::move(socket)),
        buffer_(core_->options.header_limit + body_limit_max(core_->options) + 2 * kReadChunk) {
    core_->open.fetch_add(1);
    open_connections_gauge().set(static_cast<double>(g_open_connections.fetch_add(1) + 1));
  }

  ~Connection() {
    core_->open.fetch_sub(1);
    open_connections_gauge().set(static_cast<double>(g_open_connections.fetch_sub(1) - 1));
    std::lock_guard lock(core_->mu);
    core_->connections.erase(this);
    if (core_->connections.empty()) core_->drained.notify_all();
  }

  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void start() {
    {
      std::lock_guard lock(core_->mu);
      core_->connections.emplace(this, weak_from_this());
    }
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->wait_for_request(); });
  }

  net::any_io_executor executor() { return stream_.get_executor(); }

  // From any thread: hands a response to the connection's thread, unless the server has stopped.
  // Posted even from that thread (a handler that answers at once): the thread reads the other
  // connections' requests first, and their answers then go out together, a third more GETs a
  // second than writing each at once (bench/RESULTS.md).
  void post_response(Response response) {
    std::lock_guard lock(core_->mu);
    if (!core_->posts_open) return;
    net::post(stream_.get_executor(), [self = shared_from_this(), r = std::move(response)]() mutable {
      self->respond(std::move(r));
    });
  }

  // On its thread, from stop(): close now if idle, else after the in-flight answer is written.
  void shutdown() {
    shutting_down_ = true;
    if (state_ == State::reading || state_ == State::closing) close();
  }

  // Only when no thread runs the io_contexts (end of stop()).
  void abort_now() { close(); }

 private:
  enum class State { reading, handling, writing, closing, closed };

  struct ResponderState {
    static constexpr int kPending = 0;
    static constexpr int kAnswered = 1;
    static constexpr int kAbandoned = 2;  // the handler threw; the server answered 500

    explicit ResponderState(std::shared_ptr<Connection> c) : conn(std::move(c)) {}
    ~ResponderState() {
      if (phase.load() != kPending) return;
      log::error("http responder dropped without a response");
      conn->post_response(internal_error());
    }
    ResponderState(const ResponderState&) = delete;
    ResponderState& operator=(const ResponderState&) = delete;

    std::shared_ptr<Connection> conn;
    std::atomic<int> phase{kPending};
  };

  void wait_for_request() {
    state_ = State::reading;
    if (shutting_down_ || core_->stopping.load()) return close();
    parser_.emplace();
    parser_->body_limit(body_limit_max(core_->options));
    parser_->header_limit(static_cast<std::uint32_t>(core_->options.header_limit));
    if (buffer_.size() > 0) return read_request();  // the client pipelined it already
    // Idle time is the wait for the first byte; the read timeout starts with that byte.
    stream_.expires_after(fresh_ ? core_->options.read_timeout : core_->options.idle_timeout);
    stream_.async_read_some(buffer_.prepare(kReadChunk),
                            beast::bind_front_handler(&Connection::on_first_bytes, shared_from_this()));
  }

  void on_first_bytes(beast::error_code ec, std::size_t n) {
    if (ec) return close();  // idle timeout, client went away, or shutdown
    buffer_.commit(n);
    read_request();
  }

  // The header first, so a client waiting on `Expect: 100-continue` gets its go-ahead (curl
  // sends it with larger bodies and would otherwise stall a second). One read deadline covers
  // header, interim answer and body.
  void read_request() {
    stream_.expires_after(core_->options.read_timeout);
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             beast::bind_front_handler(&Connection::on_header, shared_from_this()));
  }

  void on_header(beast::error_code ec, std::size_t n) {
    if (ec) return on_read(ec, n);
    const auto& header = parser_->get();
    if (!core_->options.path_body_limits.empty()) {
      // The parser was given the largest limit any path has (it checks Content-Length as it
      // reads the header); this path's own limit holds from here on.
      std::string_view path(header.target().data(), header.target().size());
      path = path.substr(0, path.find('?'));
      std::size_t limit = core_->options.body_limit;
      for (const auto& [limited, bytes] : core_->options.path_body_limits)
        if (limited == path) limit = bytes;
      const auto length = parser_->content_length();
      if (length && *length > limit) return fail(payload_too_large());
      parser_->body_limit(limit);
    }
    if (parser_->is_done()) return on_read(ec, n);  // no body: a GET, mostly
    if (header.version() < 11 || !beast::iequals(header[bhttp::field::expect], "100-continue"))
      return read_body();
    net::async_write(stream_, net::buffer(kContinue),
                     [self = shared_from_this()](beast::error_code write_ec, std::size_t) {
                       if (write_ec) return self->close();
                       self->read_body();
                     });
  }

  void read_body() {
    bhttp::async_read(stream_, buffer_, *parser_,
                      beast::bind_front_handler(&Connection::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, std::size_t) {
    if (!ec) {
      fresh_ = false;
      return dispatch();
    }
    if (ec == bhttp::error::body_limit) return fail(payload_too_large());
    if (ec == bhttp::error::header_limit) return fail(error(431, "Request header fields too large"));
    if (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message) return close();
    if (&ec.category() == &http_error_category()) return fail(bad_request());
    close();  // timeout, reset, shutdown: nobody to answer
  }

  void dispatch() {
    if (core_->stopping.load()) return close();
    auto message = parser_->release();
    parser_.reset();
    version_ = message.version();
    keep_alive_ = message.keep_alive();
    head_request_ = message.method() == bhttp::verb::head;

    Request req;
    req.method = message.method();
    if (!parse_target(message.target(), req)) return fail(bad_request());
    req.headers = std::move(static_cast<bhttp::fields&>(message));
    req.body = std::move(message.body());

    state_ = State::handling;
    stream_.expires_never();            // the handler's own limits bound how long it takes
    const std::string path = req.path;  // for the log line if the handler throws
    const auto method = req.method;
    auto state = std::make_shared<ResponderState>(shared_from_this());
    Responder responder = [state](Response response) {
      int expected = ResponderState::kPending;
      if (!state->phase.compare_exchange_strong(expected, ResponderState::kAnswered)) {
        // After a throw the server answered already; a late answer is dropped, not a crash.
        if (expected == ResponderState::kAbandoned) return;
        KOBO_ASSERT(false, "Responder called twice");
      }
      state->conn->post_response(std::move(response));
    };
    try {
      core_->handler(std::move(req), std::move(responder));
      return;
    } catch (const std::exception& e) {
      log::error("http handler threw",
                 {{"method", std::string(bhttp::to_string(method))}, {"path", path}, {"error", e.what()}});
    } catch (...) {
      log::error("http handler threw", {{"method", std::string(bhttp::to_string(method))},
                                        {"path", path},
                                        {"error", "non-standard exception"}});
    }
    int expected = ResponderState::kPending;
    if (state->phase.compare_exchange_strong(expected, ResponderState::kAbandoned))
      post_response(internal_error());
  }

  void respond(Response response) {
    if (state_ == State::closed) return;  // closed by stop() while the handler ran
    KOBO_ASSERT(state_ == State::handling, "response without a request in flight");
    if (response.render) {
      try {
        response = rendered(std::move(response));
      } catch (const std::exception& e) {
        log::error("http response could not be rendered", {{"error", e.what()}});
        response = internal_error();
      }
    }
    write(std::move(response), /*close_after=*/false);
  }

  // Answers a request that could not be read; the connection then closes.
  void fail(Response response) {
    version_ = 11;
    keep_alive_ = false;
    head_request_ = false;
    write(std::move(response), /*close_after=*/true);
  }

  void write(Response response, bool close_after) {
    state_ = State::writing;
    const bool streamed = static_cast<bool>(response.stream);
    // An HTTP/1.0 client learns where a streamed body ends from the connection's close.
    const bool keep = keep_alive_ && !close_after && !shutting_down_ && !(streamed && version_ == 10);
    head_ = response_head(response, version_, keep);
    // A HEAD answer carries the length of the body it would have had, but no body.
    if (!head_request_) {
      body_ = std::move(response.body);
      stream_body_ = std::move(response.stream);
    }
    stream_.expires_after(core_->options.write_timeout);
    net::async_write(stream_, std::array<net::const_buffer, 2>{net::buffer(head_), net::buffer(body_)},
                     beast::bind_front_handler(&Connection::on_write, shared_from_this(), !keep));
  }

  void on_write(bool close_after, beast::error_code ec, std::size_t) {
    body_ = {};  // release the body now, not at the next response
    if (ec) {
      stream_body_ = nullptr;
      return close();
    }
    if (stream_body_) return write_piece(close_after);
    if (close_after) return drain_and_close();
    wait_for_request();
  }

  // The next piece of a streamed body, as a chunk on HTTP/1.1; the last chunk after the last
  // piece. A stream that fails closes the connection with the body unfinished.
  void write_piece(bool close_after) {
    std::string piece;
    Result<bool> more = false;
    try {
      more = stream_body_(piece);
    } catch (const std::exception& e) {
      more = Status::error(e.what());
    }
    if (!more) {
      log::error("http streamed body failed", {{"error", more.status().message()}});
      stream_body_ = nullptr;
      return close();
    }
    if (!more.value()) stream_body_ = nullptr;
    if (version_ == 11) {
      if (!piece.empty()) {
        char size[20];
        const int n = std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
        body_.assign(size, static_cast<std::size_t>(n));
        body_ += piece;
        body_ += "\r\n";
      }
      if (!more.value()) body_ += "0\r\n\r\n";
    } else {
      body_ = std::move(piece);
    }
    stream_.expires_after(core_->options.write_timeout);
    net::async_write(stream_, net::buffer(body_),
                     beast::bind_front_handler(&Connection::on_write, shared_from_this(), close_after));
  }

  void drain_and_close() {
    state_ = State::closing;
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return close();
    drained_ = 0;
    stream_.expires_after(kDrainTimeout);
    drain();
  }

  void drain() {
    buffer_.clear();
    stream_.async_read_some(buffer_.prepare(kReadChunk),
                            beast::bind_front_handler(&Connection::on_drain, shared_from_this()));
  }

  void on_drain(beast::error_code ec, std::size_t n) {
    drained_ += n;
    // A client told "too large" may still be sending a body of up to the largest limit any path has.
    const std::size_t drain_max = kDrainBytesMax + body_limit_max(core_->options);
    if (ec || drained_ > drain_max || state_ != State::closing) return close();
    drain();
  }

  void close() {
    if (state_ == State::closed) return;
    state_ = State::closed;
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();  // also cancels the timer and pending operations
  }

  std::shared_ptr<Core> core_;  // first member: see Core::iocs
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::string head_;  // the response being written: status line and header, then body
  std::string body_;
  BodyStream stream_body_;  // the rest of a streamed body being written
  State state_ = State::reading;
  unsigned version_ = 11;
  bool keep_alive_ = false;
  bool head_request_ = false;
  bool fresh_ = true;  // no request read yet: the first wait uses the read timeout
  bool shutting_down_ = false;
  std::size_t drained_ = 0;
};

namespace {

void accept_next(const std::shared_ptr<Server::Core>& core);

void on_accept(const std::shared_ptr<Server::Core>& core, beast::error_code ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted || !core->acceptor.is_open()) return;
  if (ec) {
    log::warn("http accept failed", {{"error", ec.message()}});
    core->accept_retry.expires_after(kAcceptRetryDelay);
    core->accept_retry.async_wait([core](beast::error_code wait_ec) {
      if (!wait_ec) accept_next(core);
    });
    return;
  }
  if (core->open.load() >= core->options.connections_max) {
    // Over the limit: close at once; a client retries later, and we never queue unbounded work.
    beast::error_code ignored;
    socket.close(ignored);
  } else {
    std::make_shared<Server::Connection>(core, std::move(socket))->start();
  }
  accept_next(core);
}

void accept_next(const std::shared_ptr<Server::Core>& core) {
  core->acceptor.async_accept(core->next_ioc(), [core](beast::error_code ec, tcp::socket socket) {
    on_accept(core, ec, std::move(socket));
  });
}

}  // namespace

std::string response_head(const Response& response, unsigned version, bool keep_alive) {
  KOBO_ASSERT(response.status >= 100 && response.status <= 999, "invalid HTTP status");
  KOBO_ASSERT(version == 10 || version == 11, "HTTP/1.0 or 1.1 only");
  const auto field = [](std::string& out, std::string_view name, std::string_view value) {
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  };
  std::string out;
  out.reserve(128);
  out += version == 11 ? "HTTP/1.1 " : "HTTP/1.0 ";
  out += std::to_string(response.status);
  out += ' ';
  out += bhttp::obsolete_reason(bhttp::int_to_status(response.status));
  out += "\r\n";
  if (!response.content_type.empty()) field(out, "Content-Type", response.content_type);
  for (const auto& [name, value] : response.headers) {
    KOBO_ASSERT(!beast::iequals(name, "connection") && !beast::iequals(name, "content-length") &&
                    !beast::iequals(name, "transfer-encoding"),
                "the server writes the framing headers itself");
    field(out, name, value);
  }
  // Connection is said when it is not the version's default.
  if (!keep_alive) field(out, "Connection", "close");
  if (keep_alive && version == 10) field(out, "Connection", "keep-alive");
  const bool bodiless = response.status < 200 || response.status == 204 || response.status == 304;
  KOBO_ASSERT(!bodiless || response.body.empty(), "a body on a status that has none");
  if (response.stream) {
    KOBO_ASSERT(response.body.empty() && !bodiless,
                "a streamed body beside a body, or on a status that has none");
    if (version == 11) field(out, "Transfer-Encoding", "chunked");  // HTTP/1.0: until the close
  } else {
    field(out, "Content-Length", std::to_string(response.body.size()));
  }
  out += "\r\n";
  return out;
}

Server::Server(ServerOptions options, Handler handler)
    : core_(std::make_shared<Core>(std::move(options), std::move(handler))) {
  KOBO_ASSERT(core_->iocs.size() == static_cast<std::size_t>(core_->options.threads),
              "an io_context per thread");
  KOBO_ASSERT(core_->handler != nullptr, "server needs a handler");
}

Server::~Server() { stop(); }

Status Server::start() {
  KOBO_ASSERT(!started_, "Server::start() called twice");
  const auto& opts = core_->options;
  beast::error_code ec;
  const auto address = net::ip::make_address(opts.address, ec);
  if (ec) return Status::error("invalid listen address '" + opts.address + "': " + ec.message());
  const tcp::endpoint endpoint(address, opts.port);
  auto& acceptor = core_->acceptor;
  const auto failed = [&](std::string_view what) {
    beast::error_code ignored;
    acceptor.close(ignored);
    return Status::error(std::string(what) + " " + endpoint.address().to_string() + ":" +
                         std::to_string(endpoint.port()) + ": " + ec.message());
  };
  if (acceptor.open(endpoint.protocol(), ec); ec) return failed("cannot open socket for");
  if (acceptor.set_option(net::socket_base::reuse_address(true), ec); ec)
    return failed("cannot set options on");
  if (acceptor.bind(endpoint, ec); ec) return failed("cannot bind");
  if (acceptor.listen(net::socket_base::max_listen_connections, ec); ec) return failed("cannot listen on");
  port_ = acceptor.local_endpoint(ec).port();
  if (ec) return failed("cannot read the bound port of");

  started_ = true;
  accept_next(core_);  // no thread runs yet, so touching the acceptor here is safe
  threads_.reserve(static_cast<std::size_t>(opts.threads));
  for (int i = 0; i < opts.threads; ++i) {
    threads_.emplace_back([core = core_, &ioc = *core_->iocs[static_cast<std::size_t>(i)]] {
      name_this_thread("kobo-http");
      for (;;) {
        try {
          ioc.run();
          return;
        } catch (const std::exception& e) {
          // A handler of ours threw (bad_alloc, say); keep serving the other connections.
          log::error("http io thread caught an exception", {{"error", e.what()}});
        }
      }
    });
  }
  log::info("http server listening", {{"address", opts.address}, {"port", port_}});
  return {};
}

void Server::stop() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  core_->stopping.store(true);

  net::post(core_->acceptor.get_executor(), [core = core_] {
    beast::error_code ignored;
    core->acceptor.close(ignored);
    core->accept_retry.cancel();
  });

  const auto live_connections = [this] {
    std::vector<std::shared_ptr<Connection>> live;
    std::lock_guard lock(core_->mu);
    for (auto& [ptr, weak] : core_->connections)
      if (auto c = weak.lock()) live.push_back(std::move(c));
    return live;
  };
  for (auto& c : live_connections()) net::post(c->executor(), [c] { c->shutdown(); });

  {
    std::unique_lock lock(core_->mu);
    core_->drained.wait_for(lock, core_->options.shutdown_grace,
                            [this] { return core_->connections.empty(); });
    core_->posts_open = false;
  }
  core_->work.clear();
  for (const auto& ioc : core_->iocs) ioc->stop();
  for (auto& t : threads_) t.join();
  threads_.clear();

  // No thread runs the io_contexts now. Close what outlived the grace period and run the
  // completions that releases, so no pending operation keeps a Connection (and the Core) alive.
  for (auto& c : live_connections()) c->abort_now();
  for (const auto& ioc : core_->iocs) {
    ioc->restart();
    ioc->poll();
  }
  log::info("http server stopped", {{"port", port_}});
}

}  // namespace kobo::http
