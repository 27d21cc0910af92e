#include "query-api/owner_wait.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/crypto.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/thread.h"
#include "query-api/envelope.h"
#include "query-api/positions.h"

namespace kobo {
namespace {

namespace bh = boost::beast::http;

metrics::Histogram& waited_seconds() {
  static metrics::Histogram& h = metrics::registry().histogram(
      "kobo_cluster_owner_wait_seconds", "How long commands waited for their partition's writer");
  return h;
}

metrics::Histogram& forwarded_seconds() {
  static metrics::Histogram& h = metrics::registry().histogram(
      "kobo_cluster_forward_seconds", "How long commands forwarded to their partition's owner took");
  return h;
}

metrics::Counter& forward_failures() {
  static metrics::Counter& c = metrics::registry().counter(
      "kobo_cluster_forward_failures_total",
      "Commands whose owner failed while it had them (answered 503: they may have been decided)");
  return c;
}

// A command, as opposed to a read: what the writer would be asked to decide.
bool is_command(const http::Request& req) {
  if (req.method != bh::verb::post && req.method != bh::verb::patch && req.method != bh::verb::put &&
      req.method != bh::verb::delete_)
    return false;
  if (req.path == "/v1/transactions/validate-account") return false;  // a name enquiry only reads
  return !req.header("x-service-key").empty();
}

http::Response no_writer() {
  http::Response res = http::error(503, "Service unavailable");
  res.headers.emplace_back("Retry-After", "1");
  return res;
}

}  // namespace

struct OwnerWait::Waiting {
  Waiting(boost::asio::io_context& io, http::Handler h, http::Request r, http::Responder rs, Partition p,
          std::chrono::steady_clock::time_point until, bool forwarded)
      : inner(std::move(h)),
        req(std::move(r)),
        respond(std::move(rs)),
        partition(p),
        forwarded_in(forwarded),
        since(std::chrono::steady_clock::now()),
        deadline(until),
        timer(io) {}
  http::Handler inner;
  http::Request req;
  http::Responder respond;
  Partition partition;
  bool forwarded_in;  // it came from another node: never forwarded again
  std::chrono::steady_clock::time_point since;
  std::chrono::steady_clock::time_point deadline;
  boost::asio::steady_timer timer;
};

OwnerWait::OwnerWait(Ledger& ledger, Views& views, OwnerWaitOptions options)
    : ledger_(ledger), views_(views), options_(std::move(options)), work_(io_.get_executor()) {
  thread_ = std::thread([this] {
    name_this_thread("kobo-owner-wait");
    io_.run();
  });
}

OwnerWait::~OwnerWait() {
  work_.reset();
  io_.stop();
  if (thread_.joinable()) thread_.join();
}

http::Handler OwnerWait::wrap(http::Handler inner) {
  return [this, inner = std::move(inner)](http::Request&& req, http::Responder respond) {
    const bool forwarded_in = !req.header(kForwardedHeader).empty();
    if (forwarded_in) {
      // Only a node of the cluster may say a request was forwarded: the secret, by digest, in
      // constant time.
      const std::string_view given = req.header(kClusterSecretHeader);
      if (options_.secret.empty() || !constant_time_equal(sha256_hex(given), sha256_hex(options_.secret)))
        return respond(http::error(401, "Unauthorized"));
    }
    if (!is_command(req)) return inner(std::move(req), std::move(respond));
    // The caller's partition, from its key; anything the route itself refuses (an unknown key, a
    // views read that failed) goes on to be refused there.
    const auto owner = views_.key_owner(sha256_hex(req.header("x-service-key")));
    if (!owner || !owner.value()) return inner(std::move(req), std::move(respond));
    const Partition p = ledger_.partition_of(owner.value()->business);
    if (ledger_.owns(p)) return inner(std::move(req), std::move(respond));
    auto w = std::make_shared<Waiting>(io_, inner, std::move(req), std::move(respond), p,
                                       std::chrono::steady_clock::now() + options_.wait, forwarded_in);
    check(w);
  };
}

void OwnerWait::check(const std::shared_ptr<Waiting>& w) {
  const auto now = std::chrono::steady_clock::now();
  const auto waited = [&] {
    waited_seconds().observe(std::chrono::duration<double>(now - w->since).count());
  };
  if (ledger_.owns(w->partition)) {
    waited();
    return w->inner(std::move(w->req), std::move(w->respond));
  }
  // Another node writes it (unless this one is taking it over): it is sent there, once.
  const std::optional<std::string> elsewhere =
      ledger_.ownership(w->partition) == Ownership::standby && options_.owner_elsewhere
          ? options_.owner_elsewhere(w->partition)
          : std::nullopt;
  if (elsewhere && !w->forwarded_in && options_.forwarder != nullptr) {
    waited();
    return forward(w, *elsewhere);
  }
  const bool leaving = options_.leaving && options_.leaving();
  if (elsewhere || leaving || now >= w->deadline) {
    waited();
    return w->respond(no_writer());
  }
  again(w);
}

void OwnerWait::again(const std::shared_ptr<Waiting>& w) {
  w->timer.expires_after(options_.poll);
  w->timer.async_wait([this, w](const boost::system::error_code& ec) {
    if (ec) return w->respond(no_writer());  // stopping
    check(w);
  });
}

void OwnerWait::forward(const std::shared_ptr<Waiting>& w, const std::string& url) {
  const auto sent = std::chrono::steady_clock::now();
  options_.forwarder->forward(url, w->req, [this, w, url, sent](Forwarded f) {
    if (f.answer) {
      forwarded_seconds().observe(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count());
      return relay(w, std::move(*f.answer));
    }
    if (!f.sent && std::chrono::steady_clock::now() < w->deadline) {
      // Never sent (the owner is gone, or not yet listening): undecided, so it waits for the
      // partition's next writer as a command with no writer does.
      return boost::asio::post(io_, [this, w] { again(w); });
    }
    forward_failures().inc();
    log::warn("a forwarded command's owner failed while it had it; answered 503",
              {{"owner", url}, {"path", w->req.path}, {"why", f.error}});
    w->respond(no_writer());
  });
}

// The owner's answer, once this node's views have applied the positions it names (its
// Kobo-Position): the caller's next read here sees what the owner wrote. A read wait that runs
// out relays it all the same: the command was decided, and the answer says so.
void OwnerWait::relay(const std::shared_ptr<Waiting>& w, http::Response answer) {
  std::optional<api::Positions> positions;
  if (options_.projector != nullptr)
    for (const auto& [name, value] : answer.headers)
      if (boost::beast::iequals(name, api::kPositionHeader))
        positions = api::parse_positions(value, ledger_.config().partitions);
  if (!positions || api::views_have(*options_.projector, *positions)) return w->respond(std::move(answer));
  auto held = std::make_shared<http::Response>(std::move(answer));
  api::wait_for_views(*options_.projector, *positions, options_.read_wait,
                      [w, held](bool) { w->respond(std::move(*held)); });
}

}  // namespace kobo
