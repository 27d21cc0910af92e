#include "query-api/owner_wait.h"

#include <boost/asio/steady_timer.hpp>

#include "common/crypto.h"
#include "common/metrics.h"
#include "common/thread.h"
#include "query-api/envelope.h"

namespace kobo {
namespace {

namespace bh = boost::beast::http;

metrics::Histogram& waited_seconds() {
  static metrics::Histogram& h = metrics::registry().histogram(
      "kobo_cluster_owner_wait_seconds", "How long commands waited for their partition's writer");
  return h;
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
          std::chrono::steady_clock::time_point until)
      : inner(std::move(h)),
        req(std::move(r)),
        respond(std::move(rs)),
        partition(p),
        since(std::chrono::steady_clock::now()),
        deadline(until),
        timer(io) {}
  http::Handler inner;
  http::Request req;
  http::Responder respond;
  Partition partition;
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
    if (!is_command(req)) return inner(std::move(req), std::move(respond));
    // The caller's partition, from its key; anything the route itself refuses (an unknown key, a
    // views read that failed) goes on to be refused there.
    const auto owner = views_.key_owner(sha256_hex(req.header("x-service-key")));
    if (!owner || !owner.value()) return inner(std::move(req), std::move(respond));
    const Partition p = ledger_.partition_of(owner.value()->business);
    if (ledger_.owns(p)) return inner(std::move(req), std::move(respond));
    auto w = std::make_shared<Waiting>(io_, inner, std::move(req), std::move(respond), p,
                                       std::chrono::steady_clock::now() + options_.wait);
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
  // Another node writes it (unless this one is taking it over), or nobody did in time.
  const bool elsewhere = ledger_.ownership(w->partition) == Ownership::standby && options_.owned_elsewhere &&
                         options_.owned_elsewhere(w->partition);
  const bool leaving = options_.leaving && options_.leaving();
  if (elsewhere || leaving || now >= w->deadline) {
    waited();
    return w->respond(no_writer());
  }
  w->timer.expires_after(options_.poll);
  w->timer.async_wait([this, w](const boost::system::error_code& ec) {
    if (ec) return w->respond(no_writer());  // stopping
    check(w);
  });
}

}  // namespace kobo
