// Holds (two-phase transfers, extensions section 2): POST /v1/holds, POST /v1/holds/{id}/capture,
// POST /v1/holds/{id}/void, GET /v1/holds/{id}, GET /v1/holds.

#include "common/json_writer.h"
#include "query-api/envelope.h"
#include "query-api/route.h"

namespace kobo::api {
namespace {

using nlohmann::json;

constexpr std::int64_t kExpiresInMin = 1;
constexpr std::int64_t kExpiresInMax = 2'592'000;       // 30 days
constexpr std::int64_t kExpiresInDefault = 604'800;     // 7 days
constexpr std::int64_t kHoldAmountMax = 1'000'000'000;  // as a transfer's
constexpr std::size_t kReferenceLengthMax = 100;
constexpr std::size_t kMetadataBytesMax = std::size_t{8} * 1024;

// The hold as the views have it once they have applied the command (or, for a repeat, the
// original's): a capture's and a void's answer show the captures before them, which only the
// views hold.
Result<std::optional<std::string>> hold_of(const Exchange& x, std::string_view id) {
  return x.views().hold_text(x.caller.scope, id);
}
Answer hold_answer(unsigned status, const std::string& message) {
  return or_replayed(projected(status, message, hold_of), message, hold_of);
}

void place_rules(const Exchange&, http::Validator& v) {
  v.field("source").is_not_empty().is_string().max_length(kTextLengthMax);
  v.field("amount").is_int().min(1).max(kHoldAmountMax);
  v.field("reference").is_not_empty().is_string().max_length(kReferenceLengthMax);
  v.optional("narration").is_string().max_length(kTextLengthMax);
  v.optional("metadata").is_object();
  v.optional("expiresIn").is_int().min(kExpiresInMin).max(kExpiresInMax);
}

Made place(const Exchange& x) {
  const json& body = x.body;
  std::optional<std::string> metadata;
  if (body.contains("metadata") && body.at("metadata").is_object()) {
    metadata = json_text(body.at("metadata"));
    if (metadata->size() > kMetadataBytesMax)
      return http::validation_error(
          {{"metadata",
            {{"maxSize", "metadata must be at most " + std::to_string(kMetadataBytesMax) + " bytes"}}}});
  }
  PlaceHold cmd;
  cmd.caller = x.caller.caller;
  cmd.source = body.at("source");
  cmd.amount = Kobo(*http::as_int64(body.at("amount")));
  cmd.reference = body.at("reference");
  cmd.narration = optional_string(body, "narration");
  if (metadata) cmd.metadata = RawJson{std::move(*metadata)};
  cmd.expires_in_s = kExpiresInDefault;
  if (body.contains("expiresIn") && !body.at("expiresIn").is_null())
    cmd.expires_in_s = *http::as_int64(body.at("expiresIn"));
  return cmd;
}

void capture_rules(const Exchange&, http::Validator& v) {
  v.field("destination").is_not_empty().is_string().max_length(kTextLengthMax);
  v.field("reference").is_not_empty().is_string().max_length(kTextLengthMax);
  v.optional("amount").is_int().min(1).max(kHoldAmountMax);
  v.optional("narration").is_string().max_length(kTextLengthMax);
  v.optional("final").is_boolean();
}

Made capture(const Exchange& x) {
  const json& body = x.body;
  CaptureHold cmd;
  cmd.caller = x.caller.caller;
  cmd.hold = x.param("id");
  cmd.destination = body.at("destination");
  cmd.reference = body.at("reference");
  if (body.contains("amount") && !body.at("amount").is_null())
    cmd.amount = Kobo(*http::as_int64(body.at("amount")));
  cmd.narration = optional_string(body, "narration");
  cmd.final = body.contains("final") && body.at("final").is_boolean() && body.at("final").get<bool>();
  return cmd;
}

HoldFilter hold_filter(http::QueryValidator& q) {
  HoldFilter f;
  f.source = q.text("source");
  f.status = q.one_of("status", {"pending", "captured", "voided", "expired"});
  return f;
}

}  // namespace

void add_hold_routes(Routes& routes) {
  routes.command(
      {.path = "/v1/holds",
       .rules = place_rules,
       .make = place,
       .answer = or_replayed(created(201, "Hold placed successfully"), "Hold placed successfully", hold_of)});
  routes.list(ListRoute<HoldFilter>{.path = "/v1/holds",
                                    .filter = hold_filter,
                                    .page = [](const Exchange& x, const HoldFilter& f, const PageRequest& p) {
                                      return x.views().holds(x.caller.scope, f, p);
                                    }});
  routes.read(ReadRoute<>{.path = "/v1/holds/{id}", .read = [](const Exchange& x, const NoQuery&) {
                            return one_record(x.views().hold_text(x.caller.scope, x.param("id")));
                          }});
  routes.command({.path = "/v1/holds/{id}/capture",
                  .rules = capture_rules,
                  .make = capture,
                  .answer = hold_answer(201, "Hold captured successfully")});
  routes.command({.path = "/v1/holds/{id}/void",
                  .make = [](const Exchange& x) -> Made {
                    return VoidHold{x.caller.caller, x.param("id")};
                  },
                  .answer = hold_answer(200, "Hold voided successfully")});
}

}  // namespace kobo::api
