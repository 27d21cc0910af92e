// An account's secret keys in the caller's mode (docs/security.md, "Containing a leaked key"):
// GET /v1/accounts/{id}/keys, POST /v1/accounts/{id}/keys/roll, POST /v1/accounts/{id}/keys/revoke;
// and the admin's roll for a tenant that lost its keys, POST /v1/admin/accounts/{id}/keys/roll.
// A key acts in its own mode only: a test key lists, rolls and revokes test keys.

#include "events/keys.h"
#include "common/crypto.h"
#include "common/json_writer.h"
#include "query-api/envelope.h"
#include "query-api/rejections.h"
#include "query-api/route.h"
#include "webhooks/webhooks.h"

namespace kobo::api {
namespace {

using http::Response;
using nlohmann::json;

std::string_view mode_name(bool live) { return live ? "live" : "test"; }

// A key as GET …/keys shows it: never the key, its id and state. Members in key order.
std::string key_record(const rows::AccountKey& k, bool current, bool live) {
  std::string out;
  JsonWriter w(out);
  w.begin_object().member("createdAt", format_iso8601(k.created));
  if (current)
    w.null_member("expiresAt");
  else
    w.member("expiresAt", format_iso8601(k.expires_at));
  w.member("keyId", key_id_of_hash(k.hash))
      .member("live", live)
      .member("status", current ? "current" : "expiring");
  w.end_object();
  return out;
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

// Whether the caller's business has the account the path names: nullopt if so, else the answer.
std::optional<Response> unknown_account(const Exchange& x) {
  const auto a = x.views().account_text(x.caller.caller.business, x.param("id"), x.caller.caller.live);
  if (!a) return unavailable(a.status());
  if (!a.value()) return http::error(404, "Data not found");
  return std::nullopt;
}

Response list_keys(const Exchange& x, const NoQuery&) {
  if (auto unknown = unknown_account(x)) return std::move(*unknown);
  const bool live = x.caller.caller.live;
  const auto row = x.views().account_keys(x.param("id"), live);
  if (!row) return unavailable(row.status());
  std::vector<std::string> items;
  if (row.value())
    for (const auto& [key, current] : accepted_keys(*row.value(), now_ms()))
      items.push_back(key_record(*key, current, live));
  const auto n = static_cast<std::int64_t>(items.size());
  return http::ok_list(items, http::Pagination{n, std::max<std::int64_t>(n, 1), 1});
}

// Rolls `account`'s key of `caller`'s mode: a new key, answered once (201, after the views have
// it, so it works as soon as it is shown), the current one accepted `overlap_s` more seconds. For
// the tenant's route and the admin's; `account` is of the caller's business.
Made roll_submission(const Exchange& x, Caller caller, const std::string& account, std::int64_t overlap_s) {
  if (x.options().master_key == nullptr) return rejection_response(Rejection::unavailable);
  const auto row = x.views().account_keys(account, caller.live);
  if (!row) return unavailable(row.status());
  // The key current now, which this roll retires (a roll decided meanwhile may retire it first).
  std::optional<std::string> previous;
  if (row.value() && !row.value()->keys.empty()) previous = key_id_of_hash(row.value()->keys.front().hash);
  const bool live = caller.live;
  const std::string key = std::string(live ? "sk_live_" : "sk_test_") + random_hex(20);
  auto wrapped = wrap_signing_key(*x.options().master_key, account, live, key);
  if (!wrapped) return unavailable(wrapped.status());
  Answer answer;
  answer.accepted = [account, key, live, previous](const Exchange& done, const Outcome& o,
                                                   http::Responder respond) {
    // The key works as soon as it is handed out: the views have applied the roll.
    done.protocol.after_projection(
        o, std::move(respond), [o, account, key, live, previous](http::Responder r) {
          KOBO_ASSERT(o.events.size() == 1, "a roll is one event");
          const Event& e = o.events.front();
          const auto& rolled = std::get<SecretKeyRolled>(e.data);
          std::string data;
          JsonWriter w(data);
          w.begin_object()
              .member("account", account)
              .member("createdAt", format_iso8601(e.time))
              .member("keyId", key_id_of_hash(rolled.secret_key_hash))
              .member("live", live)
              .member("previousKeyExpiresAt", format_iso8601(rolled.previous_key_expires_at.ms));
          if (previous)
            w.member("previousKeyId", *previous);
          else
            w.null_member("previousKeyId");
          w.member("secretKey", key).end_object();
          Response answered = http::ok_text(201, data, "Key rolled successfully");
          // Shown once: nothing on the way may keep it.
          answered.headers.emplace_back("Cache-Control", "no-store");
          r(std::move(answered));
        });
  };
  return Submission(
      RollSecretKey{std::move(caller), account, sha256_hex(key), std::move(wrapped).value(), overlap_s},
      std::move(answer));
}

void roll_rules(const Exchange&, http::Validator& v) {
  v.optional("mode").is_string().is_in({"test", "live"});
  v.field("overlapSeconds").is_int().min(0).max(kKeyOverlapSecondsMax);
}

Made roll(const Exchange& x) {
  if (auto refused = other_mode(x.body, x.caller.caller.live)) return std::move(*refused);
  if (auto unknown = unknown_account(x)) return std::move(*unknown);
  return roll_submission(x, x.caller.caller, x.param("id"), *http::as_int64(x.body.at("overlapSeconds")));
}

void revoke_rules(const Exchange&, http::Validator& v) {
  v.optional("mode").is_string().is_in({"test", "live"});
  v.field("keyId").is_not_empty().is_string().max_length(64);
}

Made revoke(const Exchange& x) {
  if (auto refused = other_mode(x.body, x.caller.caller.live)) return std::move(*refused);
  if (auto unknown = unknown_account(x)) return std::move(*unknown);
  const std::string& account = x.param("id");
  const bool live = x.caller.caller.live;
  const std::string key_id = x.body.at("keyId");
  const auto row = x.views().account_keys(account, live);
  if (!row) return unavailable(row.status());
  std::optional<bool> current;
  if (row.value())
    for (const auto& [key, is_current] : accepted_keys(*row.value(), now_ms()))
      if (key_id_of_hash(key->hash) == key_id) current = is_current;
  if (!current) return http::error(404, "Key not found");
  if (*current) return http::error(409, "The current key cannot be revoked: roll it first");
  Answer answer;
  answer.accepted = [account, key_id, live](const Exchange& done, const Outcome& o, http::Responder respond) {
    // Refused from the answer on: the views have applied the revocation.
    done.protocol.after_projection(o, std::move(respond), [o, account, key_id, live](http::Responder r) {
      std::string data;
      JsonWriter(data)
          .begin_object()
          .member("account", account)
          .member("keyId", key_id)
          .member("live", live)
          .member("revokedAt", format_iso8601(o.events.front().time))
          .end_object();
      r(http::ok_text(200, data, "Key revoked successfully"));
    });
  };
  return Submission(RevokeSecretKey{x.caller.caller, account, key_id}, std::move(answer));
}

// New keys for an account whose tenant lost its own (or after an upgrade removed credentials.json).
void admin_roll_rules(const Exchange&, http::Validator& v) {
  v.field("mode").is_string().is_in({"test", "live"});
  v.field("overlapSeconds").is_int().min(0).max(kKeyOverlapSecondsMax);
}

Made admin_roll(const Exchange& x) {
  const std::string& id = x.param("id");
  const auto business = x.views().account_business(id);
  if (!business) return unavailable(business.status());
  if (!business.value()) return http::error(404, "Data not found");
  const bool live = x.body.at("mode") == "live";
  return roll_submission(x, Caller{*business.value(), id, live, std::string(kAdminActor)}, id,
                         *http::as_int64(x.body.at("overlapSeconds")));
}

}  // namespace

void add_key_routes(Routes& routes) {
  routes.read(ReadRoute<>{.path = "/v1/accounts/{id}/keys", .read = list_keys});
  routes.command({.path = "/v1/accounts/{id}/keys/roll",
                  .rules = roll_rules,
                  .make_reads_views = true,
                  .make = roll,
                  .rejected = account_rejected});
  routes.command({.path = "/v1/accounts/{id}/keys/revoke",
                  .rules = revoke_rules,
                  .make_reads_views = true,
                  .make = revoke,
                  .rejected = account_rejected});
  routes.command({.path = "/v1/admin/accounts/{id}/keys/roll",
                  .traits = {.kind = RouteKind::admin, .partition = PartitionOf::none},
                  .rules = admin_roll_rules,
                  .make = admin_roll,
                  .rejected = account_rejected});
}

}  // namespace kobo::api
