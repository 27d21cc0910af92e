#pragma once
// A route is a declaration. One wrapper (Routes) takes every request through the same steps, so a
// route file (routes/<resource>.cc) says only what is particular to its resource: its path, the
// rules of its body or query, how the body becomes a command, and what it answers with.
//
//   command      admit → authenticate → [test keys only] → forward? → parse → validate →
//                [read barrier →] make → submit → answer, or reject (the one table, rejections.h)
//   read         admit → authenticate → [parse → validate] → validate the query → positions →
//                [read barrier →] read (on Api's pool when heavy) → answer
//   admin        admit → x-admin-key → parse → validate → make → submit → answer, or reject
//   operational  the route's own answer (/healthz, /readyz, /metrics): nothing else
//
// Each step answers for itself when the request ends there: 401/403 (authenticate), 400 `Bad
// request` (parse), 400 `Validation error` (validate), 503 (a views read that failed, a barrier
// that timed out), the rejection table's answer (submit). The order is the API's precedence: a
// request with a bad key and a bad body is 401, not 400.
//
// Hook points: EdgeHooks, below. Features that concern every route land there, once, not in the
// routes: per-key rate limits (admit), forwarding a command to the node that owns its partition
// (forward), position tokens (command_answered, before_read, read_answered). Each has a no-op
// default, which is what a single node runs. Every body is parsed in one place too
// (Routes::parse, http::parse_json_object): where a limit on a body's depth belongs.
//
// Thread safety: routes are registered before the server starts; a registered route is
// immutable and runs on many threads at once. An Exchange is shared by the steps of its one
// request, one step at a time (the I/O thread, then the writer's callback or Api's pool).

#include <boost/beast/http/verb.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "query-api/answer.h"
#include "query-api/envelope.h"
#include "query-api/router.h"
#include "query-api/validation.h"

namespace kobo::api {

// ---- traits -------------------------------------------------------------------------------------

// What a route does, which picks its steps (above).
enum class RouteKind {
  command,      // changes the ledger (or a store beside it): submitted, answered or rejected
  read,         // reads the views (or a store beside them) after the read barrier
  admin,        // the operator's (x-admin-key): no tenant, no partition of a caller
  operational,  // the process's own state: no key at all
};

// How the caller's partition is known before any of the request's work is done: what a cluster
// forwards a command by (EdgeHooks::forward).
enum class PartitionOf {
  caller,  // the business of the secret key (x-service-key): every tenant route
  none,    // no business of a caller: admin (the business is being made) and operational routes
};

// What a read (or a command's make()) costs the thread that runs it.
enum class ReadCost {
  light,  // one record by its key: on the thread that read the request
  heavy,  // a page, a statement, an events list, a bulk's name enquiries: on Api's pool, off the
          // HTTP I/O threads
};

struct RouteTraits {
  RouteKind kind = RouteKind::command;
  PartitionOf partition = PartitionOf::caller;
  std::size_t body_limit = 0;  // bytes; 0: the server's (ServerOptions::body_limit)
  ReadCost cost = ReadCost::light;
  bool test_mode_only = false;  // a live key is answered 403 before the body is read (the sandbox)
};

// ---- one request --------------------------------------------------------------------------------

// One request, from the wrapper's first step to its answer: what a route's own code reads. The
// steps fill it in order (caller after authenticate, body after parse) and a route's code sees it
// whole; nothing in it changes after that.
struct Exchange {
  Exchange(Protocol& p, http::Request&& req, const http::PathParams& path)
      : protocol(p), request(std::move(req)), params(path) {}

  Protocol& protocol;
  http::Request request;
  http::PathParams params;
  Context caller;                                  // admin and operational routes: empty
  nlohmann::json body = nlohmann::json::object();  // the parsed body; {} for a route without one

  Ledger& ledger() const { return protocol.ledger(); }
  Views& views() const { return protocol.views(); }
  const ApiOptions& options() const { return protocol.options(); }
  const std::string& param(std::string_view name) const { return params.at(name); }
};

// ---- hook points --------------------------------------------------------------------------------

// Where a command's answer stands in the log: its partition, and the seq of the last event the
// writer had appended there when it decided (the command's own last event when it had events).
struct LogPosition {
  Partition partition{0};
  Seq seq{0};
};

// The wrapper's hook points, each called at one step of every route of the kinds it names. A
// feature that concerns every route overrides one here, instead of editing routes. Called on the
// HTTP I/O threads (admit, forward, before_read, read_answered when light) and on the writer's
// thread or Api's pool (command_answered, read_answered when heavy); must not block. An Exchange
// lives as long as its request's Responder: a hook that answers later keeps the Responder (and
// copies what else it needs).
class EdgeHooks {
 public:
  virtual ~EdgeHooks() = default;

  // (c) Per-key rate limits: every route but operational ones, before any work (the key is not
  // yet checked: read it from the request). An answer (429 with Retry-After and the RateLimit
  // headers) ends the request there. Default: admitted.
  virtual std::optional<http::Response> admit(const RouteTraits& route, const http::Request& request) {
    (void)route;
    (void)request;
    return std::nullopt;
  }

  // (a) Forwarding: a command whose caller's partition is known (PartitionOf::caller), after
  // authentication and before the body is read. Return true to take the request over: the hook
  // then answers `respond` itself, with the owner node's whole answer as it came (status,
  // headers, body: http::Response carries all three). Default: every partition is this node's.
  virtual bool forward(const Exchange& x, http::Responder& respond) {
    (void)x;
    (void)respond;
    return false;
  }

  // (b) Position tokens, on a command's answer: where the writer stood in the log when it
  // answered (`at`) and the answer about to be sent (add the Kobo-Position header). Called for
  // every answer that follows a submit: accepted, repeated and rejected.
  virtual void command_answered(const Exchange& x, LogPosition at, http::Response& answer) {
    (void)x;
    (void)at;
    (void)answer;
  }

  // (b) Position tokens, on a read: runs `then` once the views include the positions the request
  // names (Kobo-Position request header), before the read barrier; or answers `respond` (503
  // with Retry-After) when they do not in time. Default: at once.
  // `then` by value: an override keeps it until the views catch up; this one calls it at once.
  virtual void before_read(
      const Exchange& x, http::Responder respond,
      std::function<void(http::Responder)> then) {  // NOLINT(performance-unnecessary-value-param)
    (void)x;
    then(std::move(respond));
  }

  // (b) The read's answer about to be sent: the token of the views it was read from.
  virtual void read_answered(const Exchange& x, http::Response& answer) {
    (void)x;
    (void)answer;
  }
};

// ---- command routes -----------------------------------------------------------------------------

// How a command route answers once the writer has its command.
struct Answer {
  using Fn = std::function<void(const Exchange&, Outcome, http::Responder)>;
  Fn accepted{};  // the command's events are durable
  Fn replayed{};  // an idempotent repeat (Outcome::replayed: no events; `id` is the original's); null: none
                  // can be
};

// The answers most command routes give:
// - the record the command created, rendered from its events without waiting for the views
//   (Protocol::answer_created); `shown` as there;
Answer created(unsigned status, std::string message, std::optional<TransactionStatus> shown = std::nullopt);
// - the record as the views show it once they have applied the command, read by `record`:
//   `record` reads it by the id the writer answered (Outcome::id) or by what the request names;
using ReadRecord = Result<std::optional<std::string>> (*)(const Exchange& x, std::string_view id);
Answer projected(unsigned status, std::string message, ReadRecord record);
// - either, with an idempotent repeat answered by the original record as the views have it: 200,
//   `message`, Idempotent-Replayed: true (answer.h replayed()).
Answer or_replayed(Answer answer, std::string message, ReadRecord original);

// What a command route makes of a request that passed its rules: the command to submit, with
// the answer it gets when it knows what make() read (else the route's).
struct Submission {
  // The constraint keeps a Submission itself out (no Command is made from one), so copies and
  // moves are the implicit ones; clang-tidy 14 does not read requires-clauses.
  template <typename C>
  // NOLINTNEXTLINE(bugprone-forwarding-reference-overload)
  requires std::is_constructible_v<Command, C&&> Submission(C&& c) : command(std::forward<C>(c)) {}
  template <typename C>
  requires std::is_constructible_v<Command, C&&> Submission(C&& c, Answer own)
      : command(std::forward<C>(c)), answer(std::move(own)) {}
  Command command;
  Answer answer{};
};
// ... or the answer that ends the request without a command: a refusal the body's rules cannot
// say (a bank the list lacks), or the whole answer of a route whose work is not the writer's.
using Made = std::variant<Submission, http::Response>;

struct CommandRoute {
  boost::beast::http::verb method = boost::beast::http::verb::post;
  std::string_view path{};
  RouteTraits traits{};
  // The body's rules (validation.h); null: the route reads no body.
  void (*rules)(const Exchange&, http::Validator&) = nullptr;
  // Whether make() reads the views (a name enquiry, a record that must exist): it then runs after
  // the read barrier, on whichever thread that leaves it.
  bool make_reads_views = false;
  std::function<Made(const Exchange&)> make{};
  Answer answer{};
  // The rejections this route answers otherwise than the table; nullopt: the table's.
  std::optional<http::Response> (*rejected)(const Outcome&) = nullptr;
};

// ---- read routes --------------------------------------------------------------------------------

// A read whose query the route parses into a `Query` (a filter and a page) before the barrier.
struct NoQuery {};

template <typename Query = NoQuery>
struct ReadRoute {
  boost::beast::http::verb method = boost::beast::http::verb::get;
  std::string_view path{};
  RouteTraits traits{.kind = RouteKind::read};
  // A body's rules, for a read that takes one (POST validate-account); null: no body.
  void (*rules)(const Exchange&, http::Validator&) = nullptr;
  // The query's rules and what they give; null: the route reads no query.
  std::function<Query(const Exchange&, http::QueryValidator&)> query{};
  // Whether the read sees the views: it then waits for the read barrier. False for what reads no
  // views (the bank list, the webhook deliveries' own store).
  bool reads_views = true;
  std::function<http::Response(const Exchange&, const Query&)> read{};
};

// A list: a read of one page of records, filtered as its query says (each list route's filter),
// answered as a page (answer.h list()), on Api's pool.
template <typename Filter>
struct ListRoute {
  std::string_view path{};
  // The filter the query names, by the query's rules; the page (page, perPage) is read after it.
  Filter (*filter)(http::QueryValidator&) = nullptr;
  bool reads_views = true;  // as ReadRoute's
  // The page: its records' texts and the list's totalCount (views.h Page).
  Result<Page> (*page)(const Exchange&, const Filter&, const kobo::PageRequest&) = nullptr;
};

// ---- the wrapper --------------------------------------------------------------------------------

// Turns declarations into the router's handlers. Lives while the routes are being added
// (Api::add_routes); the handlers it makes hold what they need (the protocol, the hooks, the
// declaration).
class Routes {
 public:
  Routes(http::Router& router, std::shared_ptr<Protocol> protocol, EdgeHooks& hooks)
      : router_(router), protocol_(std::move(protocol)), hooks_(hooks) {}

  void command(CommandRoute route);
  template <typename Query>
  void read(ReadRoute<Query> route);
  template <typename Filter>
  void list(ListRoute<Filter> route);
  // An operational route (RouteKind::operational): GET `path`, answered by `answer` and nothing
  // else: no key, no admission. It needs no protocol (a projector-only node serves these alone).
  static void operational(http::Router& router, std::string_view path,
                          std::function<http::Response()> answer);

  // What routes are enabled by (ApiOptions: an admin key, webhooks).
  const ApiOptions& options() const { return protocol_->options(); }

 private:
  // The steps every route but an operational one starts with: admit, then authenticate (the
  // secret key, or the admin key for admin routes). The exchange, or nullptr once `respond` has
  // the answer.
  static std::shared_ptr<Exchange> begin(Protocol& p, EdgeHooks& hooks, const RouteTraits& traits,
                                         http::Request&& request, const http::PathParams& params,
                                         http::Responder& respond);
  // Parses the body and checks it against `rules`; false once `respond` has the answer.
  static bool parse(Exchange& x, void (*rules)(const Exchange&, http::Validator&),
                    const http::Responder& respond);
  // Runs `then` once the barrier lets a read through: the hooks' positions, then the read barrier
  // (when `reads_views`), then on Api's pool when `heavy`.
  static void when_readable(const std::shared_ptr<Exchange>& x, EdgeHooks& hooks, bool reads_views,
                            bool heavy, http::Responder respond, std::function<void(http::Responder)> then);
  void add(boost::beast::http::verb method, std::string_view path, const RouteTraits& traits,
           http::RouteHandler handler);

  http::Router& router_;
  std::shared_ptr<Protocol> protocol_;
  EdgeHooks& hooks_;
};

template <typename Query>
void Routes::read(ReadRoute<Query> declared) {
  KOBO_ASSERT(declared.read != nullptr, "a read route without its read");
  KOBO_ASSERT(declared.traits.kind == RouteKind::read, "a read route of another kind");
  const auto route = std::make_shared<const ReadRoute<Query>>(std::move(declared));
  add(route->method, route->path, route->traits,
      [protocol = protocol_, &hooks = hooks_, route](http::Request&& request, const http::PathParams& params,
                                                     http::Responder respond) {
        auto x = begin(*protocol, hooks, route->traits, std::move(request), params, respond);
        if (!x) return;
        if (route->rules != nullptr && !parse(*x, route->rules, respond)) return;
        Query query{};
        if (route->query != nullptr) {
          http::QueryValidator q(x->request.query);
          query = route->query(*x, q);
          if (auto errors = q.errors()) return respond(http::validation_error(*errors));
        }
        when_readable(x, hooks, route->reads_views, route->traits.cost == ReadCost::heavy, std::move(respond),
                      [x, &hooks, route, query = std::move(query)](http::Responder r) {
                        http::Response answer = route->read(*x, query);
                        hooks.read_answered(*x, answer);
                        r(std::move(answer));
                      });
      });
}

template <typename Filter>
void Routes::list(ListRoute<Filter> declared) {
  KOBO_ASSERT(declared.filter != nullptr && declared.page != nullptr,
              "a list route without its filter or page");
  struct Query {
    Filter filter;
    http::PageRequest page;
  };
  read(ReadRoute<Query>{.path = declared.path,
                        .traits = {.kind = RouteKind::read, .cost = ReadCost::heavy},
                        .query =
                            [filter = declared.filter](const Exchange&, http::QueryValidator& q) {
                              Query query{filter(q), {}};
                              query.page = q.pagination();
                              return query;
                            },
                        .reads_views = declared.reads_views,
                        .read =
                            [page = declared.page](const Exchange& x, const Query& q) {
                              return api::list(page(x, q.filter, to_page(q.page)), q.page);
                            }});
}

// ---- the routes, one file per resource (routes/<resource>.cc) -----------------------------------

void add_account_routes(Routes& routes);
void add_admin_routes(Routes& routes);
void add_bank_account_routes(Routes& routes);
void add_bulk_transfer_routes(Routes& routes);
void add_collection_routes(Routes& routes);
void add_hold_routes(Routes& routes);
void add_key_routes(Routes& routes);
void add_event_routes(Routes& routes);
void add_sandbox_routes(Routes& routes);
void add_statement_routes(Routes& routes);
void add_transaction_routes(Routes& routes);
void add_transfer_routes(Routes& routes);
void add_wallet_routes(Routes& routes);
void add_webhook_delivery_routes(Routes& routes);

}  // namespace kobo::api
