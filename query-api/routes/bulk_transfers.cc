// Bulk transfers (extensions section 5): POST /v1/transactions/bulk-transfer, many wallet and
// bank transfers in one request, decided in one writer step (command/bulk.h).
//
// The answer (render::BulkAnswer) is the same for an atomic and a non-atomic bulk that was
// accepted: one entry per item in request order; an atomic bulk's items all show 200. A rejected
// atomic bulk answers the first failing item's status and message, with meta.error.items
// [{index, message, statusCode}]. A repeat with the same reference and body answers 200 with the
// original bulk (its records as they are now) and Idempotent-Replayed.

#include <array>

#include "command/bulk.h"
#include "events/ledger.h"
#include "projection/render.h"
#include "query-api/banks.h"
#include "query-api/envelope.h"
#include "query-api/rejections.h"
#include "query-api/route.h"
#include "query-api/transfer_requests.h"

namespace kobo::api {
namespace {

using nlohmann::json;

constexpr std::size_t kBulkBodyBytesMax = std::size_t{1} << 20;
constexpr std::string_view kItemAccepted = "Transfer initiated successfully";
constexpr std::string_view kBulkAccepted = "Bulk transfer initiated successfully";
constexpr std::size_t kHalvesMin = 200;  // fewer records are rendered by one thread

// What a refused item shows: the rejection table's answer for its reason.
render::BulkAnswer::ItemShown refused_item(std::string_view reason) {
  const auto why = rejection_from_string(reason);
  KOBO_ASSERT(why.has_value(), "a bulk's refused item names a rejection this kobo knows");
  const RejectionAnswer a = rejection_answer(*why);
  return {a.status, a.message};
}

// The answer's text from the bulk's events, each accepted item's record by `record`; nullopt
// when a record could not be read. With `halves`, a large bulk's items are written in two halves
// at once, one on Api's pool (its answer is its longest step after the append).
std::optional<std::string> bulk_text(Protocol& p, const std::vector<Event>& events,
                                     const render::BulkAnswer::Record& record, bool halves) {
  const render::BulkAnswer answer(events);
  const render::BulkAnswer::ItemShown accepted{200, kItemAccepted};
  const std::size_t n = answer.items();
  const std::size_t half = halves && n >= kHalvesMin ? n / 2 : n;
  std::array<std::string, 2> pieces;
  bool first_ok = true, second_ok = true;
  const auto first = [&] {
    first_ok = answer.write_items(0, half, record, accepted, refused_item, pieces[0]);
  };
  const auto second = [&] {
    second_ok = answer.write_items(half, n, record, accepted, refused_item, pieces[1]);
  };
  if (half < n)
    p.in_parallel(first, second);
  else
    first();
  if (!first_ok || !second_ok) return std::nullopt;
  return answer.text(pieces);
}

// The original bulk of an idempotent repeat, from the views once they have it, on Api's pool.
void answer_original_bulk(const Exchange& x, const Outcome& o, http::Responder respond) {
  x.protocol.after_projection(o, std::move(respond), [&x, id = o.id](http::Responder later) {
    const auto events = x.views().bulk_events(x.caller.scope, id);
    if (!events) return later(unavailable(events.status()));
    KOBO_ASSERT(events.value().has_value(), "an idempotent repeat's original bulk is in the views");
    Status failed;
    const auto text = bulk_text(
        x.protocol, *events.value(),
        [&](const Event& e) -> std::optional<std::string> {
          const auto created = transactions_created(e.data);
          auto t =
              x.views().transaction_text(x.caller.scope, x.caller.caller.account, created.at(0).id.value);
          if (!t) {
            failed = t.status();
            return std::nullopt;
          }
          KOBO_ASSERT(t.value().has_value(), "a bulk's transaction is in the views");
          return std::move(*t.value());
        },
        /*halves=*/false);
    if (!text) return later(unavailable(failed));
    http::Response answer = http::ok_text(200, *text, std::string(kBulkAccepted));
    answer.headers.emplace_back("Idempotent-Replayed", "true");
    later(std::move(answer));
  });
}

// The accepted bulk's records, rendered from its events and the wallet facts the writer decided with.
void answer_accepted(const Exchange& x, Outcome o, http::Responder respond) {
  x.protocol.answer_rendered(std::move(o), std::move(respond),
                             [&x](const Outcome& done, const render::RecordSource& facts) {
                               const auto text = bulk_text(
                                   x.protocol, done.events,
                                   [&](const Event& e) -> std::optional<std::string> {
                                     return render::transaction(e, 0, {}, facts, TransactionStatus::pending);
                                   },
                                   /*halves=*/true);
                               return http::ok_text(201, *text, std::string(kBulkAccepted));
                             });
}

// A rejected atomic bulk names the item whose rejection it is.
std::optional<http::Response> rejected_item(const Outcome& o) {
  if (!o.item) return std::nullopt;
  const RejectionAnswer a = rejection_answer(o.rejection);
  const http::ErrorItem item{*o.item, a.status, a.message};
  return http::error_with_items(a.status, a.message, {&item, 1});
}

// A bank item names a bank of the list and a 10-digit number, or the request is invalid (as the
// schema says): only what JSON Schema cannot say (a check digit, a number of our own bank that no
// wallet has) refuses the item alone.
void check_bank_item(const Exchange& x, http::Validator& v, const json& item) {
  const auto code = item.find("bankCode");
  if (code != item.end() && code->is_string())
    v.field("bankCode")
        .holds(*code == x.ledger().config().bank_code || find_bank(code->get<std::string>()) != nullptr,
               "isIn", "must be a bank of GET /v1/transactions/banks");
  const auto number = item.find("accountNumber");
  if (number != item.end() && number->is_string()) {
    const auto& n = number->get_ref<const std::string&>();
    v.field("accountNumber")
        .holds(n.size() == 10 && n.find_first_not_of("0123456789") == std::string::npos, "matches",
               "must match /^[0-9]{10}$/ regular expression");
  }
}

void bulk_rules(const Exchange& x, http::Validator& v) {
  v.field("reference").is_not_empty().is_string().max_length(kTextLengthMax);
  v.optional("atomic").is_boolean();
  v.field("items").is_array().array_min_size(1).array_max_size(kBulkItemsMax);
  const json* items = v.field("items").value();
  if (items == nullptr || !items->is_array() || items->empty() || items->size() > kBulkItemsMax) return;
  for (std::size_t i = 0; i < items->size(); ++i) {
    http::Validator item = v.element("items", i);
    item.field("type").is_not_empty().is_string().is_in({"wallet", "bank"});
    const json& it = (*items)[i];
    if (!it.is_object()) continue;
    const auto type = it.find("type");
    if (type == it.end() || !type->is_string()) continue;
    if (*type == "wallet") check_wallet_transfer(item);
    if (*type == "bank") {
      check_bank_transfer(item);
      check_bank_item(x, item, it);
    }
  }
}

// The bank items' accounts, by name enquiry (it reads the views: after the read barrier). An
// item whose enquiry fails goes to the writer refused, so that it is answered in its place.
Made bulk(const Exchange& x) {
  const json& body = x.body;
  BulkTransfer cmd;
  cmd.caller = x.caller.caller;
  cmd.reference = body.at("reference");
  cmd.atomic = body.value("atomic", json(false)).is_boolean() && body.value("atomic", false);
  const json& items = body.at("items");
  cmd.items.reserve(items.size());
  for (const json& item : items) {
    if (item.at("type") == "wallet") {
      cmd.items.push_back(BulkItem{wallet_transfer_of(cmd.caller, item)});
      continue;
    }
    auto found =
        look_up_account(x.views(), x.ledger().config(), cmd.caller.live,
                        item.at("bankCode").get<std::string>(), item.at("accountNumber").get<std::string>());
    if (const auto* refused = std::get_if<Rejection>(&found)) {
      if (*refused == Rejection::unavailable) return rejection_response(*refused);
      cmd.items.push_back(BulkItem{bank_transfer_of(cmd.caller, item, nullptr), *refused});
    } else {
      cmd.items.push_back(BulkItem{bank_transfer_of(cmd.caller, item, &std::get<ResolvedAccount>(found))});
    }
  }
  return cmd;
}

}  // namespace

void add_bulk_transfer_routes(Routes& routes) {
  routes.command({.path = "/v1/transactions/bulk-transfer",
                  .traits = {.body_limit = kBulkBodyBytesMax, .cost = ReadCost::heavy},
                  .rules = bulk_rules,
                  .make_reads_views = true,
                  .make = bulk,
                  .answer = {.accepted = answer_accepted, .replayed = answer_original_bulk},
                  .rejected = rejected_item});
}

}  // namespace kobo::api
