#pragma once
// Routes requests by (method, path pattern) and measures every one of them.
//
// Patterns are '/'-separated segments; a segment `{name}` matches one non-empty segment of the
// (percent-decoded) path and binds it. At each segment a literal beats a parameter, so
// "/v1/transactions/banks" wins over "/v1/transactions/{id}"; matching backtracks, so a literal
// with no route for the request's method falls back to the parameter. One trailing slash in the
// request is ignored. No match, including a known path with another method, answers 404
// `Route not found`.
//
// Metrics, per request: counter kobo_http_requests_total{route,method,status} and histogram
// kobo_http_request_duration_seconds{route}, timed until the responder is called; requests that
// match nothing use route="unmatched". A route handler that throws answers 500
// `Internal server error` (logged, counted), never the exception's text.
//
// Thread safety: add routes before the server starts; dispatch() is const and safe on many
// threads at once. The router must outlive the Server it is given to.

#include <boost/beast/http/verb.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "query-api/message.h"

namespace kobo::http {

// The values bound by a pattern's `{name}` segments, in pattern order. Small: a linear scan
// beats a map at two or three entries.
class PathParams {
 public:
  void add(std::string name, std::string value) { items_.emplace_back(std::move(name), std::move(value)); }
  std::optional<std::string_view> find(std::string_view name) const;
  // The pattern of the route must declare `name`: asking for another is a programmer error.
  const std::string& at(std::string_view name) const;
  std::size_t size() const { return items_.size(); }

 private:
  std::vector<std::pair<std::string, std::string>> items_;
};

// `params` lives only for the call; copy what an asynchronous answer needs.
using RouteHandler = std::function<void(Request&&, const PathParams& params, Responder)>;

class Router {
 public:
  Router();
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Registering the same method and pattern twice, or a malformed pattern, asserts.
  void add(boost::beast::http::verb method, std::string_view pattern, RouteHandler handler);
  void get(std::string_view pattern, RouteHandler h) {
    add(boost::beast::http::verb::get, pattern, std::move(h));
  }
  void post(std::string_view pattern, RouteHandler h) {
    add(boost::beast::http::verb::post, pattern, std::move(h));
  }
  void patch(std::string_view pattern, RouteHandler h) {
    add(boost::beast::http::verb::patch, pattern, std::move(h));
  }
  void put(std::string_view pattern, RouteHandler h) {
    add(boost::beast::http::verb::put, pattern, std::move(h));
  }
  void del(std::string_view pattern, RouteHandler h) {
    add(boost::beast::http::verb::delete_, pattern, std::move(h));
  }

  void dispatch(Request&& request, Responder responder) const;

  // The registered routes, in the order they were added (tests check schemas/openapi.yaml
  // against them).
  struct RouteInfo {
    boost::beast::http::verb method;
    std::string pattern;
  };
  std::vector<RouteInfo> routes() const;

  // A Server handler that dispatches here.
  Handler handler() const;

  // A body limit other than the server's for the requests of one exact path (a route with no
  // parameters), for ServerOptions::path_body_limits. Set it before the server starts.
  void limit_body(std::string_view path, std::size_t bytes) { body_limits_.emplace_back(path, bytes); }
  const std::vector<std::pair<std::string, std::size_t>>& body_limits() const { return body_limits_; }

 private:
  struct Node;
  struct Route;
  struct Metrics;
  struct Exchange;

  std::unique_ptr<Node> root_;
  std::vector<std::unique_ptr<Route>> routes_;  // nodes point into these
  std::unique_ptr<Metrics> unmatched_;
  std::vector<std::pair<std::string, std::size_t>> body_limits_;
};

}  // namespace kobo::http
