// Holds (two-phase transfers, extensions section 2): POST /v1/holds, POST /v1/holds/{id}/capture,
// POST /v1/holds/{id}/void, GET /v1/holds/{id}, GET /v1/holds.

#include "common/json_dump.h"
#include "query-api/answer.h"
#include "query-api/envelope.h"

namespace kobo::api {
namespace {

using http::PathParams;
using http::Request;
using http::Responder;
using nlohmann::json;

constexpr std::int64_t kExpiresInMin = 1;
constexpr std::int64_t kExpiresInMax = 2'592'000;       // 30 days
constexpr std::int64_t kExpiresInDefault = 604'800;     // 7 days
constexpr std::int64_t kHoldAmountMax = 1'000'000'000;  // as a transfer's
constexpr std::size_t kReferenceLengthMax = 100;
constexpr std::size_t kMetadataBytesMax = std::size_t{8} * 1024;

// The hold as the views have it once they have applied the command's events (or, for a repeat,
// the original's), on Api's pool: a capture's and a void's answer show the captures before them,
// which only the views hold.
void answer_hold(Protocol& p, const Context& ctx, const Outcome& o, int status, std::string message,
                 Responder respond) {
  p.after_projection(
      o, std::move(respond),
      [&p, ctx, id = o.id, status, message = std::move(message), replay = o.replayed](Responder later) {
        auto text = p.views().hold_text(ctx.scope, id);
        if (replay) return later(replayed(text, message));
        if (!text) return later(unavailable(text.status()));
        KOBO_ASSERT(text.value().has_value(), "a hold the writer decided on is in the views");
        later(http::ok_text(status, *text.value(), message));
      });
}

void place(Protocol& p, Request&& req, const PathParams&, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  auto body = http::parse_json_object(req.body);
  if (!body) return respond(http::bad_request());
  http::Validator v(*body);
  v.field("source").is_not_empty().is_string().max_length(kTextLengthMax);
  v.field("amount").is_int().min(1).max(kHoldAmountMax);
  v.field("reference").is_not_empty().is_string().max_length(kReferenceLengthMax);
  v.optional("narration").is_string().max_length(kTextLengthMax);
  v.optional("metadata").is_object();
  v.optional("expiresIn").is_int().min(kExpiresInMin).max(kExpiresInMax);
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));
  if (body->contains("metadata") && body->at("metadata").is_object() &&
      body->at("metadata").dump().size() > kMetadataBytesMax)
    return respond(http::validation_error(
        {{"metadata",
          {{"maxSize", "metadata must be at most " + std::to_string(kMetadataBytesMax) + " bytes"}}}}));

  PlaceHold cmd;
  cmd.caller = c->caller;
  cmd.source = body->at("source");
  cmd.amount = Kobo(*http::as_int64(body->at("amount")));
  cmd.reference = body->at("reference");
  cmd.narration = optional_string(*body, "narration");
  if (body->contains("metadata") && body->at("metadata").is_object())
    cmd.metadata = RawJson{dump_json(body->at("metadata"))};
  cmd.expires_in_s = kExpiresInDefault;
  if (body->contains("expiresIn") && !body->at("expiresIn").is_null())
    cmd.expires_in_s = *http::as_int64(body->at("expiresIn"));
  const Context ctx = *c;
  p.ledger().submit(std::move(cmd), [&p, ctx, respond = std::move(respond)](Outcome o) {
    if (o.replayed) return answer_hold(p, ctx, o, 200, "Hold placed successfully", respond);
    if (!o.ok()) return respond(rejection_response(o.rejection));
    p.answer_created(std::move(o), 201, "Hold placed successfully", respond);
  });
}

void capture(Protocol& p, Request&& req, const PathParams& params, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  auto body = http::parse_json_object(req.body);
  if (!body) return respond(http::bad_request());
  http::Validator v(*body);
  v.field("destination").is_not_empty().is_string().max_length(kTextLengthMax);
  v.field("reference").is_not_empty().is_string().max_length(kTextLengthMax);
  v.optional("amount").is_int().min(1).max(kHoldAmountMax);
  v.optional("narration").is_string().max_length(kTextLengthMax);
  v.optional("final").is_boolean();
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));

  CaptureHold cmd;
  cmd.caller = c->caller;
  cmd.hold = params.at("id");
  cmd.destination = body->at("destination");
  cmd.reference = body->at("reference");
  if (body->contains("amount") && !body->at("amount").is_null())
    cmd.amount = Kobo(*http::as_int64(body->at("amount")));
  cmd.narration = optional_string(*body, "narration");
  cmd.final = body->contains("final") && body->at("final").is_boolean() && body->at("final").get<bool>();
  const Context ctx = *c;
  p.ledger().submit(std::move(cmd), [&p, ctx, respond = std::move(respond)](const Outcome& o) {
    if (!o.ok()) return respond(rejection_response(o.rejection));
    answer_hold(p, ctx, o, 201, "Hold captured successfully", respond);
  });
}

void void_hold(Protocol& p, Request&& req, const PathParams& params, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  const Context ctx = *c;
  p.ledger().submit(VoidHold{c->caller, params.at("id")},
                    [&p, ctx, respond = std::move(respond)](const Outcome& o) {
                      if (!o.ok()) return respond(rejection_response(o.rejection));
                      answer_hold(p, ctx, o, 200, "Hold voided successfully", respond);
                    });
}

void get_hold(Protocol& p, Request&& req, const PathParams& params, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  p.barrier(*c, std::move(respond), [&p, scope = c->scope, id = params.at("id")](Responder r) {
    r(one_record(p.views().hold_text(scope, id)));
  });
}

void list_holds(Protocol& p, Request&& req, const PathParams&, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  http::QueryValidator q(req.query);
  HoldFilter filter;
  filter.source = q.text("source");
  filter.status = q.one_of("status", {"pending", "captured", "voided", "expired"});
  const auto page = q.pagination();
  if (auto errors = q.errors()) return respond(http::validation_error(*errors));
  p.barrier(*c, std::move(respond), [&p, scope = c->scope, filter, page](Responder r) {
    r(list(p.views().holds(scope, filter, to_page(page)), page));
  });
}

}  // namespace

void add_hold_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol) {
  router.post("/v1/holds", route(protocol, place));
  router.get("/v1/holds", route(protocol, list_holds));
  router.get("/v1/holds/{id}", route(protocol, get_hold));
  router.post("/v1/holds/{id}/capture", route(protocol, capture));
  router.post("/v1/holds/{id}/void", route(protocol, void_hold));
}

}  // namespace kobo::api
