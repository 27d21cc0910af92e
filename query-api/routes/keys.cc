// An account's secret keys in the caller's mode (docs/security.md, "Containing a leaked key"):
// GET /v1/accounts/{id}/keys, POST /v1/accounts/{id}/keys/roll, POST /v1/accounts/{id}/keys/revoke.
// A key acts in its own mode only: a test key lists, rolls and revokes test keys.

#include "events/keys.h"
#include "common/crypto.h"
#include "query-api/answer.h"
#include "query-api/envelope.h"
#include "webhooks/webhooks.h"

namespace kobo::api {

using http::PathParams;
using http::Request;
using http::Responder;
using http::Response;
using nlohmann::json;

namespace {

std::string_view mode_name(bool live) { return live ? "live" : "test"; }

// A key as GET …/keys shows it: never the key, its id and state.
json key_record(const rows::AccountKey& k, bool current, bool live) {
  return json{{"keyId", key_id_of_hash(k.hash)},
              {"live", live},
              {"status", current ? "current" : "expiring"},
              {"createdAt", format_iso8601(k.created)},
              {"expiresAt", current ? json(nullptr) : json(format_iso8601(k.expires_at))}};
}

// The account's keys that are accepted at `now`: the current one first.
std::vector<std::pair<const rows::AccountKey*, bool>> accepted_keys(const rows::AccountKeysRow& row,
                                                                    UnixMs now) {
  std::vector<std::pair<const rows::AccountKey*, bool>> out;
  for (std::size_t i = 0; i < row.keys.size(); ++i)
    if (i == 0 || row.keys[i].expires_at > now) out.emplace_back(&row.keys[i], i == 0);
  return out;
}

// `mode` in a body names the caller's own mode or nothing: a key acts in its own mode only.
std::optional<Response> other_mode(const json& body, bool live) {
  const auto it = body.find("mode");
  if (it == body.end() || it->is_null() || *it == mode_name(live)) return std::nullopt;
  return http::error(403, "A key acts in its own mode only");
}

void list_keys(Protocol& p, Request&& req, const PathParams& params, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  p.barrier(*c, std::move(respond), [&p, caller = c->caller, account = params.at("id")](Responder r) {
    const auto a = p.views().account(caller.business, account);
    if (!a) return r(unavailable(a.status()));
    if (!a.value()) return r(http::error(404, "Data not found"));
    const auto row = p.views().account_keys(account, caller.live);
    if (!row) return r(unavailable(row.status()));
    json items = json::array();
    if (row.value())
      for (const auto& [key, current] : accepted_keys(*row.value(), now_ms()))
        items.push_back(key_record(*key, current, caller.live));
    const auto n = static_cast<std::int64_t>(items.size());
    r(http::ok_list(items, http::Pagination{n, std::max<std::int64_t>(n, 1), 1}));
  });
}

void roll(Protocol& p, Request&& req, const PathParams& params, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  auto body = http::parse_json_object(req.body);
  if (!body) return respond(http::bad_request());
  http::Validator v(*body);
  v.optional("mode").is_string().is_in({"test", "live"});
  v.field("overlapSeconds").is_int().min(0).max(kKeyOverlapSecondsMax);
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));
  if (auto refused = other_mode(*body, c->caller.live)) return respond(std::move(*refused));
  const std::int64_t overlap_s = *http::as_int64(body->at("overlapSeconds"));
  p.barrier(*c, std::move(respond),
            [&p, caller = c->caller, account = params.at("id"), overlap_s](Responder r) mutable {
              const auto a = p.views().account(caller.business, account);
              if (!a) return r(unavailable(a.status()));
              if (!a.value()) return r(http::error(404, "Data not found"));
              roll_secret_key(p, std::move(caller), std::move(account), overlap_s, std::move(r));
            });
}

void revoke(Protocol& p, Request&& req, const PathParams& params, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  auto body = http::parse_json_object(req.body);
  if (!body) return respond(http::bad_request());
  http::Validator v(*body);
  v.optional("mode").is_string().is_in({"test", "live"});
  v.field("keyId").is_not_empty().is_string().max_length(64);
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));
  if (auto refused = other_mode(*body, c->caller.live)) return respond(std::move(*refused));
  std::string key_id = body->at("keyId");
  p.barrier(
      *c, std::move(respond),
      [&p, caller = c->caller, account = params.at("id"), key_id = std::move(key_id)](Responder r) mutable {
        const auto a = p.views().account(caller.business, account);
        if (!a) return r(unavailable(a.status()));
        if (!a.value()) return r(http::error(404, "Data not found"));
        const auto row = p.views().account_keys(account, caller.live);
        if (!row) return r(unavailable(row.status()));
        std::optional<bool> current;
        if (row.value())
          for (const auto& [key, is_current] : accepted_keys(*row.value(), now_ms()))
            if (key_id_of_hash(key->hash) == key_id) current = is_current;
        if (!current) return r(http::error(404, "Key not found"));
        if (*current) return r(http::error(409, "The current key cannot be revoked: roll it first"));
        const bool live = caller.live;
        RevokeSecretKey cmd{std::move(caller), account, key_id};
        p.ledger().submit(
            std::move(cmd), [&p, account, key_id, live, r = std::move(r)](const Outcome& o) mutable {
              if (!o.ok())
                return r(o.rejection == Rejection::account_not_found ? http::error(404, "Data not found")
                                                                     : rejection_response(o.rejection));
              // Refused from the answer on: the views have applied the revocation.
              p.after_projection(o, std::move(r), [o, account, key_id, live](Responder done) {
                done(http::ok(200,
                              json{{"account", account},
                                   {"live", live},
                                   {"keyId", key_id},
                                   {"revokedAt", format_iso8601(o.events.front().time)}},
                              "Key revoked successfully"));
              });
            });
      });
}

}  // namespace

void roll_secret_key(Protocol& p, Caller caller, std::string account, std::int64_t overlap_s,
                     Responder respond) {
  if (p.options().master_key == nullptr) return respond(rejection_response(Rejection::unavailable));
  const auto row = p.views().account_keys(account, caller.live);
  if (!row) return respond(unavailable(row.status()));
  // The key current now, which this roll retires (a roll decided meanwhile may retire it first).
  std::optional<std::string> previous;
  if (row.value() && !row.value()->keys.empty()) previous = key_id_of_hash(row.value()->keys.front().hash);
  const bool live = caller.live;
  const std::string key = std::string(live ? "sk_live_" : "sk_test_") + random_hex(20);
  auto wrapped = wrap_signing_key(*p.options().master_key, account, live, key);
  if (!wrapped) return respond(unavailable(wrapped.status()));
  RollSecretKey cmd{std::move(caller), account, sha256_hex(key), std::move(wrapped).value(), overlap_s};
  p.ledger().submit(std::move(cmd), [&p, account, key, live, previous,
                                     respond = std::move(respond)](const Outcome& o) mutable {
    if (!o.ok())
      return respond(o.rejection == Rejection::account_not_found ? http::error(404, "Data not found")
                                                                 : rejection_response(o.rejection));
    // The key works as soon as it is handed out: the views have applied the roll.
    p.after_projection(o, std::move(respond), [o, account, key, live, previous](Responder r) {
      const Event& e = o.events.front();
      const auto& x = std::get<SecretKeyRolled>(e.data);
      Response answer = http::ok(201,
                                 json{{"account", account},
                                      {"live", live},
                                      {"keyId", key_id_of_hash(x.secret_key_hash)},
                                      {"secretKey", key},
                                      {"createdAt", format_iso8601(e.time)},
                                      {"previousKeyId", previous ? json(*previous) : json(nullptr)},
                                      {"previousKeyExpiresAt", format_iso8601(x.previous_key_expires_at.ms)}},
                                 "Key rolled successfully");
      // Shown once: nothing on the way may keep it.
      answer.headers.emplace_back("Cache-Control", "no-store");
      r(std::move(answer));
    });
  });
}

void add_key_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol) {
  router.get("/v1/accounts/{id}/keys", route(protocol, list_keys));
  router.post("/v1/accounts/{id}/keys/roll", route(protocol, roll));
  router.post("/v1/accounts/{id}/keys/revoke", route(protocol, revoke));
}

}  // namespace kobo::api
