#include "query-api/route.h"

#include "common/crypto.h"
#include "query-api/envelope.h"
#include "query-api/rejections.h"

namespace kobo::api {

using http::Responder;
using http::Response;

namespace {

// The original record of an idempotent repeat, once the views have it: 200 with `message` and
// Idempotent-Replayed (answer.h replayed()).
void answer_original(const Exchange& x, const Outcome& o, std::string message, ReadRecord original,
                     Responder respond) {
  x.protocol.after_projection(o, std::move(respond),
                              [&x, id = o.id, message = std::move(message), original](Responder later) {
                                later(replayed(original(x, id), message));
                              });
}

}  // namespace

Answer created(unsigned status, std::string message, std::optional<TransactionStatus> shown) {
  Answer a;
  a.accepted = [status, message = std::move(message), shown](const Exchange& x, Outcome o,
                                                             Responder respond) {
    x.protocol.answer_created(std::move(o), static_cast<int>(status), message, std::move(respond), shown);
  };
  return a;
}

Answer projected(unsigned status, std::string message, ReadRecord record) {
  KOBO_ASSERT(record != nullptr, "a projected answer without the record it reads");
  Answer a;
  a.accepted = [status, message = std::move(message), record](const Exchange& x, const Outcome& o,
                                                              Responder respond) {
    x.protocol.after_projection(
        o, std::move(respond), [&x, id = o.id, status, message, record](Responder later) {
          const auto text = record(x, id);
          if (!text) return later(unavailable(text.status()));
          KOBO_ASSERT(text.value().has_value(), "a record the writer changed is missing from the views");
          later(http::ok_text(status, *text.value(), message));
        });
  };
  return a;
}

Answer or_replayed(Answer answer, std::string message, ReadRecord original) {
  KOBO_ASSERT(original != nullptr, "an idempotent repeat's answer without the record it reads");
  answer.replayed = [message = std::move(message), original](const Exchange& x, const Outcome& o,
                                                             Responder respond) {
    answer_original(x, o, message, original, std::move(respond));
  };
  return answer;
}

std::shared_ptr<Exchange> Routes::begin(Protocol& p, EdgeHooks& hooks, const RouteTraits& traits,
                                        http::Request&& request, const http::PathParams& params,
                                        Responder& respond) {
  KOBO_ASSERT(traits.kind != RouteKind::operational, "an operational route has no steps");
  if (auto refused = hooks.admit(traits, request)) {
    respond(std::move(*refused));
    return nullptr;
  }
  if (traits.kind == RouteKind::admin) {
    // The admin API exists only with an admin key; the key is compared by digest, in constant time.
    const std::string& admin_key = p.options().admin_key;
    if (admin_key.empty()) {
      respond(http::route_not_found());
      return nullptr;
    }
    if (!constant_time_equal(sha256_hex(request.header("x-admin-key")), sha256_hex(admin_key))) {
      respond(http::error(401, "Unauthorized"));
      return nullptr;
    }
    return std::make_shared<Exchange>(p, std::move(request), params);
  }
  auto caller = p.authenticate(request, respond);
  if (!caller) return nullptr;
  if (traits.test_mode_only && caller->caller.live) {
    respond(http::error(403, "Sandbox transfers are only available in test mode"));
    return nullptr;
  }
  auto x = std::make_shared<Exchange>(p, std::move(request), params);
  x->caller = std::move(*caller);
  return x;
}

bool Routes::parse(Exchange& x, void (*rules)(const Exchange&, http::Validator&), const Responder& respond) {
  auto body = http::parse_json_object(x.request.body);
  if (!body) {
    respond(http::bad_request());
    return false;
  }
  x.body = std::move(*body);
  http::Validator v(x.body);
  rules(x, v);
  if (auto errors = v.errors()) {
    respond(http::validation_error(*errors));
    return false;
  }
  return true;
}

void Routes::when_readable(const std::shared_ptr<Exchange>& x, EdgeHooks& hooks, bool reads_views, bool heavy,
                           Responder respond, std::function<void(Responder)> then) {
  hooks.before_read(*x, std::move(respond),
                    [x, reads_views, heavy, then = std::move(then)](Responder r) mutable {
                      const Protocol::Where where = heavy ? Protocol::Where::pool : Protocol::Where::here;
                      if (reads_views)
                        return x->protocol.barrier(x->caller, std::move(r), std::move(then), where);
                      x->protocol.run(where, std::move(r), std::move(then));
                    });
}

void Routes::add(boost::beast::http::verb method, std::string_view path, const RouteTraits& traits,
                 http::RouteHandler handler) {
  router_.add(method, path, std::move(handler));
  if (traits.body_limit != 0) router_.limit_body(path, traits.body_limit);
}

namespace {

// Submits what make() made and answers the outcome: the route's (or the submission's own) answer
// for an accepted command or an idempotent repeat, the rejection table's (or the route's own)
// for a rejected one. Every answer after the submit passes EdgeHooks::command_answered.
void submit(const std::shared_ptr<Exchange>& x, EdgeHooks& hooks,
            const std::shared_ptr<const CommandRoute>& route, Responder respond) {
  Made made = route->make(*x);
  if (auto* refused = std::get_if<Response>(&made)) return respond(std::move(*refused));
  Submission& s = std::get<Submission>(made);
  x->ledger().submit(std::move(s.command), [x, &hooks, route, own = std::move(s.answer),
                                            respond = std::move(respond)](Outcome o) mutable {
    const Answer& answer = own.accepted ? own : route->answer;
    Responder answered = [x, &hooks, at = LogPosition{o.partition, o.seq},
                          respond = std::move(respond)](Response r) {
      hooks.command_answered(*x, at, r);
      respond(std::move(r));
    };
    if (o.replayed) {
      KOBO_ASSERT(answer.replayed != nullptr, "an idempotent repeat of a command that has none");
      return answer.replayed(*x, std::move(o), std::move(answered));
    }
    if (!o.ok()) {
      if (route->rejected != nullptr)
        if (auto own_answer = route->rejected(o)) return answered(std::move(*own_answer));
      return answered(rejection_response(o.rejection));
    }
    KOBO_ASSERT(answer.accepted != nullptr, "a command route without its answer");
    answer.accepted(*x, std::move(o), std::move(answered));
  });
}

}  // namespace

void Routes::command(CommandRoute declared) {
  KOBO_ASSERT(declared.make != nullptr, "a command route without its make()");
  KOBO_ASSERT(declared.traits.kind == RouteKind::command || declared.traits.kind == RouteKind::admin,
              "a command route of another kind");
  KOBO_ASSERT(declared.traits.kind != RouteKind::admin || declared.traits.partition == PartitionOf::none,
              "an admin route has no caller's partition");
  const auto route = std::make_shared<const CommandRoute>(std::move(declared));
  add(route->method, route->path, route->traits,
      [protocol = protocol_, &hooks = hooks_, route](http::Request&& request, const http::PathParams& params,
                                                     Responder respond) {
        auto x = begin(*protocol, hooks, route->traits, std::move(request), params, respond);
        if (!x) return;
        if (route->traits.partition == PartitionOf::caller && hooks.forward(*x, respond)) return;
        if (route->rules != nullptr && !parse(*x, route->rules, respond)) return;
        const auto where =
            route->traits.cost == ReadCost::heavy ? Protocol::Where::pool : Protocol::Where::here;
        auto then = [x, &hooks, route](Responder r) { submit(x, hooks, route, std::move(r)); };
        // make() reads the views: after the read barrier (on Api's pool when it had to wait).
        if (route->make_reads_views)
          return x->protocol.barrier(x->caller, std::move(respond), std::move(then), where);
        x->protocol.run(where, std::move(respond), std::move(then));
      });
}

void Routes::operational(http::Router& router, std::string_view path, std::function<Response()> answer) {
  KOBO_ASSERT(answer != nullptr, "an operational route without its answer");
  router.get(path, [answer = std::move(answer)](http::Request&&, const http::PathParams&, Responder respond) {
    respond(answer());
  });
}

}  // namespace kobo::api
