#include "query-api/router.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <exception>
#include <map>

#include "common/assert.h"
#include "common/log.h"
#include "common/metrics.h"
#include "query-api/envelope.h"

namespace kobo::http {

namespace bhttp = boost::beast::http;

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kRequestsName = "kobo_http_requests_total";
constexpr std::string_view kRequestsHelp = "HTTP requests by route, method and status";
constexpr std::string_view kDurationName = "kobo_http_request_duration_seconds";
constexpr std::string_view kDurationHelp = "HTTP request latency until the answer, by route";
constexpr std::string_view kUnmatchedRoute = "unmatched";

constexpr std::size_t kVerbCount = static_cast<std::size_t>(bhttp::verb::unlink) + 1;
constexpr unsigned kStatusFirst = 100;
constexpr unsigned kStatusLast = 599;

std::string counter_labels(std::string_view route, bhttp::verb method, unsigned status) {
  return "route=\"" + metrics::escape_label(route) + "\",method=\"" +
         metrics::escape_label(bhttp::to_string(method)) + "\",status=\"" + std::to_string(status) + "\"";
}

// Splits "/v1/a/b/" into {"v1","a","b"}; one trailing slash is ignored.
std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> segments;
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  if (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path.empty()) return segments;
  for (;;) {
    const auto slash = path.find('/');
    segments.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return segments;
}

}  // namespace

std::optional<std::string_view> PathParams::find(std::string_view name) const {
  for (const auto& [key, value] : items_)
    if (key == name) return value;
  return std::nullopt;
}

const std::string& PathParams::at(std::string_view name) const {
  auto it = items_.begin();
  while (it != items_.end() && it->first != name) ++it;
  KOBO_ASSERT(it != items_.end(), "PathParams::at() of a name the route pattern does not declare");
  return it->second;
}

// The metrics of one route (or of the unmatched requests). Counters are registered on first use
// of a status and then read from a lock-free table, so the registry mutex is taken once per
// (route, status), not per request. Shared with in-flight exchanges, so a late answer never
// touches a destroyed router.
struct Router::Metrics {
  Metrics(std::string route_label, bhttp::verb route_method)
      : route(std::move(route_label)),
        method(route_method),
        duration(metrics::registry().histogram(kDurationName, kDurationHelp,
                                               "route=\"" + metrics::escape_label(route) + "\"")) {}

  metrics::Counter& requests(bhttp::verb m, unsigned status) {
    // A route has one method; unmatched requests are always our own 404, cached per method.
    std::atomic<metrics::Counter*>* slot = nullptr;
    if (route != kUnmatchedRoute && m == method && status >= kStatusFirst && status <= kStatusLast)
      slot = &by_status[status - kStatusFirst];
    else if (route == kUnmatchedRoute && status == 404 && static_cast<std::size_t>(m) < kVerbCount)
      slot = &by_verb[static_cast<std::size_t>(m)];
    if (slot == nullptr)
      return metrics::registry().counter(kRequestsName, kRequestsHelp, counter_labels(route, m, status));
    metrics::Counter* c = slot->load(std::memory_order_acquire);
    if (c == nullptr) {
      // Two threads may race here; the registry hands both the same counter.
      c = &metrics::registry().counter(kRequestsName, kRequestsHelp, counter_labels(route, m, status));
      slot->store(c, std::memory_order_release);
    }
    return *c;
  }

  const std::string route;
  const bhttp::verb method;
  metrics::Histogram& duration;
  std::array<std::atomic<metrics::Counter*>, kStatusLast - kStatusFirst + 1> by_status{};
  std::array<std::atomic<metrics::Counter*>, kVerbCount> by_verb{};
};

struct Router::Route {
  bhttp::verb method;
  std::string pattern;
  std::vector<std::string> param_names;  // in pattern order
  RouteHandler handler;
  std::shared_ptr<Metrics> metrics;
};

struct Router::Node {
  std::map<std::string, std::unique_ptr<Node>, std::less<>> literals;
  std::unique_ptr<Node> param;
  std::vector<const Route*> routes;  // routes ending here, one per method

  const Route* route_for(bhttp::verb method) const {
    for (const Route* r : routes)
      if (r->method == method) return r;
    return nullptr;
  }

  // The node of the pattern the path matches, whatever the method: depth-first, literal before
  // parameter, the first node where the path ends and some route does. As OpenAPI matches
  // paths, a concrete path wins over a templated one (`/v1/transactions/transfer` is never
  // `/v1/transactions/{id}`), and only then is the method looked up in it. `values` collects
  // the parameter segments.
  const Node* match(const std::vector<std::string_view>& segments, std::size_t i,
                    std::vector<std::string_view>& values) const {
    if (i == segments.size()) return routes.empty() ? nullptr : this;
    if (auto it = literals.find(segments[i]); it != literals.end())
      if (const Node* n = it->second->match(segments, i + 1, values)) return n;
    if (param && !segments[i].empty()) {
      values.push_back(segments[i]);
      if (const Node* n = param->match(segments, i + 1, values)) return n;
      values.pop_back();
    }
    return nullptr;
  }
};

Router::Router()
    : root_(std::make_unique<Node>()),
      unmatched_(std::make_unique<Metrics>(std::string(kUnmatchedRoute), bhttp::verb::unknown)) {}

Router::~Router() = default;

void Router::add(bhttp::verb method, std::string_view pattern, RouteHandler handler) {
  KOBO_ASSERT(!pattern.empty() && pattern.front() == '/', "route pattern must start with '/'");
  KOBO_ASSERT(handler != nullptr, "route without a handler");
  auto route = std::make_unique<Route>();
  route->method = method;
  route->pattern = std::string(pattern);
  route->handler = std::move(handler);
  route->metrics = std::make_shared<Metrics>(route->pattern, method);

  Node* node = root_.get();
  for (std::string_view segment : split_path(pattern)) {
    KOBO_ASSERT(!segment.empty(), "route pattern with an empty segment");
    if (segment.front() == '{') {
      KOBO_ASSERT(segment.size() > 2 && segment.back() == '}', "malformed route parameter");
      route->param_names.emplace_back(segment.substr(1, segment.size() - 2));
      if (!node->param) node->param = std::make_unique<Node>();
      node = node->param.get();
    } else {
      KOBO_ASSERT(segment.find_first_of("{}") == std::string_view::npos, "braces inside a literal segment");
      auto& child = node->literals[std::string(segment)];
      if (!child) child = std::make_unique<Node>();
      node = child.get();
    }
  }
  KOBO_ASSERT(node->route_for(method) == nullptr, "route registered twice");
  node->routes.push_back(route.get());
  routes_.push_back(std::move(route));
}

namespace {}  // namespace

// One request's answer path: times it, counts it, and turns a handler's exception into a 500.
struct Router::Exchange {
  static constexpr int kPending = 0;
  static constexpr int kAnswered = 1;
  static constexpr int kAbandoned = 2;  // the handler threw and the router answered 500

  Exchange(Responder responder, std::shared_ptr<Metrics> route_metrics, bhttp::verb m, Clock::time_point t)
      : inner(std::move(responder)), metrics(std::move(route_metrics)), method(m), start(t) {}
  // Dropped unanswered: destroying `inner` makes the server answer 500, so count that.
  ~Exchange() {
    if (phase.load() == kPending) record(500);
  }
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  void record(unsigned status) const {
    metrics->duration.observe(std::chrono::duration<double>(Clock::now() - start).count());
    metrics->requests(method, status).inc();
  }

  Responder inner;
  const std::shared_ptr<Metrics> metrics;
  const bhttp::verb method;
  const Clock::time_point start;
  std::atomic<int> phase{kPending};
};

void Router::dispatch(Request&& request, Responder responder) const {
  const auto start = Clock::now();
  const auto segments = split_path(request.path);
  std::vector<std::string_view> values;
  const Node* node = root_->match(segments, 0, values);
  const Route* route = node == nullptr ? nullptr : node->route_for(request.method);
  if (route == nullptr) {
    // A known path asked with another method is 405 with the methods it has (RFC 9110 15.5.6);
    // only an unknown path is 404 `Route not found`.
    Response answer = route_not_found();
    if (node != nullptr) {
      std::vector<bhttp::verb> allowed;
      for (const Route* r : node->routes) allowed.push_back(r->method);
      std::sort(allowed.begin(), allowed.end());
      std::string allow;
      for (const bhttp::verb m : allowed) {
        if (!allow.empty()) allow += ", ";
        allow += bhttp::to_string(m);
      }
      answer = method_not_allowed();
      answer.headers.emplace_back("Allow", std::move(allow));
    }
    unmatched_->requests(request.method, answer.status).inc();
    unmatched_->duration.observe(std::chrono::duration<double>(Clock::now() - start).count());
    responder(std::move(answer));
    return;
  }

  PathParams params;
  KOBO_ASSERT(values.size() == route->param_names.size(), "parameter count differs from the pattern");
  for (std::size_t i = 0; i < values.size(); ++i) params.add(route->param_names[i], std::string(values[i]));

  auto exchange = std::make_shared<Exchange>(std::move(responder), route->metrics, route->method, start);
  Responder measured = [exchange](Response response) {
    int expected = Exchange::kPending;
    if (!exchange->phase.compare_exchange_strong(expected, Exchange::kAnswered)) {
      if (expected == Exchange::kAbandoned) return;  // we answered 500 already
      KOBO_ASSERT(false, "Responder called twice");
    }
    exchange->record(response.status);
    exchange->inner(std::move(response));
  };

  try {
    route->handler(std::move(request), params, std::move(measured));
    return;
  } catch (const std::exception& e) {
    log::error("http route handler threw", {{"route", route->pattern},
                                            {"method", std::string(bhttp::to_string(route->method))},
                                            {"error", e.what()}});
  } catch (...) {
    log::error("http route handler threw", {{"route", route->pattern},
                                            {"method", std::string(bhttp::to_string(route->method))},
                                            {"error", "non-standard exception"}});
  }
  int expected = Exchange::kPending;
  if (exchange->phase.compare_exchange_strong(expected, Exchange::kAbandoned)) {
    exchange->record(500);
    exchange->inner(internal_error());
  }
}

std::vector<Router::RouteInfo> Router::routes() const {
  std::vector<RouteInfo> out;
  out.reserve(routes_.size());
  for (const auto& r : routes_) out.push_back({r->method, r->pattern});
  return out;
}

Handler Router::handler() const {
  return
      [this](Request&& request, Responder responder) { dispatch(std::move(request), std::move(responder)); };
}

}  // namespace kobo::http
