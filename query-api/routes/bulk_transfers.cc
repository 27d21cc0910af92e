// Bulk transfers (extensions section 5): POST /v1/transactions/bulk-transfer, many wallet and
// bank transfers in one request, decided in one writer step (command/bulk.h).
//
// The answer's data is the same for an atomic and a non-atomic bulk that was accepted:
// {publicId (blk-…), reference, atomic, items: [{index, reference, statusCode, message,
// transaction}]}, one entry per item in request order; an atomic bulk's items all show 200.
// A rejected atomic bulk answers the first failing item's status and message, with
// meta.error.items [{index, statusCode, message}]. A repeat with the same reference and body
// answers 200 with the original bulk (its records as they are now) and Idempotent-Replayed.

#include <charconv>
#include <future>

#include "command/bulk.h"
#include "common/json_dump.h"
#include "events/ledger.h"
#include "query-api/answer.h"
#include "query-api/banks.h"
#include "query-api/envelope.h"
#include "query-api/transfer_requests.h"

namespace kobo::api {
namespace {

using http::PathParams;
using http::Request;
using http::Responder;
using nlohmann::json;

constexpr std::string_view kPath = "/v1/transactions/bulk-transfer";
constexpr std::size_t kBulkBodyBytesMax = std::size_t{1} << 20;
constexpr std::string_view kItemAccepted = "Transfer initiated successfully";
constexpr std::string_view kBulkAccepted = "Bulk transfer initiated successfully";
constexpr std::size_t kHalvesMin = 200;    // fewer records are rendered by one thread
constexpr std::size_t kItemBytes = 2'560;  // an accepted item: its record (about 2.3 KiB) and members

void append_number(std::string& out, std::uint64_t n) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, n).ptr;
  out.append(digits, end);
}

void append_item(std::string& out, std::uint64_t index, const std::optional<std::string>& reference,
                 unsigned status, std::string_view message, const std::string* transaction) {
  out += "{\"index\":";
  append_number(out, index);
  out += ",\"reference\":";
  if (reference)
    append_json_string(out, *reference);
  else
    out += "null";
  out += ",\"statusCode\":";
  append_number(out, status);
  out += ",\"message\":";
  append_json_string(out, message);
  out += ",\"transaction\":";
  out += transaction != nullptr ? *transaction : "null";
  out += '}';
}

// The answer's data from a bulk's events (its BulkTransferAccepted first, then its accepted
// items' events in order; other events are skipped) and each accepted item's transaction record,
// rendered by `transaction` (nullopt: it could not be read). With `halves`, the items are
// written by two threads, this one and another, each into its own text (a bulk's answer is its
// longest step after the append; `transaction` must then be thread-safe).
template <typename Render>
std::optional<std::string> bulk_text(const std::vector<Event>& events, Render&& transaction, bool halves) {
  KOBO_ASSERT(!events.empty(), "a bulk's events open with its BulkTransferAccepted");
  const auto& bulk = std::get<BulkTransferAccepted>(events.front().data);
  // Each item, in request order: its event, or null for a refused item (`refused[i]`).
  std::vector<const Event*> item_event(bulk.items, nullptr);
  std::vector<const BulkItemRejected*> refused(bulk.items, nullptr);
  for (const BulkItemRejected& r : bulk.rejected) {
    KOBO_ASSERT(r.index < bulk.items, "a bulk's refused item is one of its items");
    refused[r.index] = &r;
  }
  std::size_t next = 0;
  for (const Event& e : events) {
    if (batch_of(e.data) == nullptr) continue;
    while (next < bulk.items && refused[next] != nullptr) ++next;
    KOBO_ASSERT(next < bulk.items, "a bulk's items are accepted or refused");
    item_event[next++] = &e;
  }

  // Items [from, to) as the answer lists them, comma-separated; false if a record could not be read.
  const auto write_items = [&](std::size_t from, std::size_t to, std::string& out) {
    out.reserve((to - from) * kItemBytes);
    for (std::size_t i = from; i < to; ++i) {
      if (i > from) out += ',';
      if (const BulkItemRejected* r = refused[i]) {
        const auto why = rejection_from_string(r->reason);
        KOBO_ASSERT(why.has_value(), "a bulk's refused item names a rejection this kobo knows");
        const RejectionAnswer a = rejection_answer(*why);
        append_item(out, i, r->reference, a.status, a.message, nullptr);
        continue;
      }
      KOBO_ASSERT(item_event[i] != nullptr, "a bulk's items are accepted or refused");
      const Event& e = *item_event[i];
      auto record = transaction(e);
      if (!record) return false;
      std::optional<std::string> reference;
      if (const auto* w = std::get_if<WalletTransferSettled>(&e.data)) reference = w->reference;
      if (const auto* b = std::get_if<BankTransferInitiated>(&e.data)) reference = b->reference;
      append_item(out, i, reference, 200, kItemAccepted, &*record);
    }
    return true;
  };
  const std::size_t half = halves && bulk.items >= kHalvesMin ? bulk.items / 2 : bulk.items;
  std::string first, second;
  std::future<bool> second_done;
  if (half < bulk.items)
    second_done = std::async(std::launch::async, [&] { return write_items(half, bulk.items, second); });
  const bool first_ok = write_items(0, half, first);
  const bool second_ok = !second_done.valid() || second_done.get();
  if (!first_ok || !second_ok) return std::nullopt;

  std::string out;
  out.reserve(first.size() + second.size() + 192);
  out += "{\"publicId\":";
  append_json_string(out, bulk.batch.value);
  out += ",\"reference\":";
  append_json_string(out, bulk.reference);
  out += bulk.atomic ? ",\"atomic\":true" : ",\"atomic\":false";
  out += ",\"items\":[";
  out += first;
  if (!second.empty()) {
    out += ',';
    out += second;
  }
  out += "]}";
  return out;
}

// The original bulk of an idempotent repeat, from the views once they have it, on Api's pool.
void answer_replay(Protocol& p, const Context& ctx, const Outcome& o, Responder respond) {
  p.after_projection(o, std::move(respond), [&p, ctx, id = o.id](Responder later) {
    const auto events = p.views().bulk_events(ctx.scope, id);
    if (!events) return later(unavailable(events.status()));
    KOBO_ASSERT(events.value().has_value(), "an idempotent repeat's original bulk is in the views");
    Status failed;
    const auto text = bulk_text(
        *events.value(),
        [&](const Event& e) -> std::optional<std::string> {
          const auto created = transactions_created(e.data);
          auto t = p.views().transaction_text(ctx.scope, ctx.caller.account, created.at(0).id.value);
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

void submit(Protocol& p, const Context& ctx, BulkTransfer cmd, Responder respond) {
  p.ledger().submit(std::move(cmd), [&p, ctx, respond = std::move(respond)](Outcome o) {
    if (o.replayed) return answer_replay(p, ctx, o, respond);
    if (!o.ok() && o.item) {
      const RejectionAnswer a = rejection_answer(o.rejection);
      return respond(http::error_with_items(
          a.status, a.message,
          json::array({{{"index", *o.item}, {"statusCode", a.status}, {"message", a.message}}})));
    }
    if (!o.ok()) return respond(rejection_response(o.rejection));
    p.answer_rendered(std::move(o), respond, [](const Outcome& done, const render::RecordSource& facts) {
      const auto text = bulk_text(
          done.events,
          [&](const Event& e) -> std::optional<std::string> {
            return render::transaction(e, 0, {}, facts, TransactionStatus::pending);
          },
          /*halves=*/true);
      return http::ok_text(201, *text, std::string(kBulkAccepted));
    });
  });
}

// The bank items' accounts, by name enquiry (it reads the views: after the read barrier). An
// item whose enquiry fails goes to the writer refused, so that it is answered in its place.
void resolve_and_submit(Protocol& p, const Context& ctx, const json& body, BulkTransfer cmd,
                        Responder respond) {
  const json& items = body.at("items");
  for (std::size_t i = 0; i < cmd.items.size(); ++i) {
    if (items[i].at("type") != "bank") continue;
    const json& item = items[i];
    auto found =
        look_up_account(p.views(), p.ledger().config(), ctx.caller.live,
                        item.at("bankCode").get<std::string>(), item.at("accountNumber").get<std::string>());
    if (const auto* refused = std::get_if<Rejection>(&found)) {
      if (*refused == Rejection::unavailable) return respond(rejection_response(*refused));
      cmd.items[i] = BulkItem{bank_transfer_of(ctx.caller, item, nullptr), *refused};
    } else {
      cmd.items[i] = BulkItem{bank_transfer_of(ctx.caller, item, &std::get<ResolvedAccount>(found))};
    }
  }
  submit(p, ctx, std::move(cmd), std::move(respond));
}

// A bank item names a bank of the list and a 10-digit number, or the request is invalid (as the
// schema says): only what JSON Schema cannot say (a check digit, a number of our own bank that no
// wallet has) refuses the item alone.
void check_bank_item(const Protocol& p, http::Validator& v, const json& item) {
  const auto code = item.find("bankCode");
  if (code != item.end() && code->is_string())
    v.field("bankCode")
        .holds(*code == p.ledger().config().bank_code || find_bank(code->get<std::string>()) != nullptr,
               "isIn", "must be a bank of GET /v1/transactions/banks");
  const auto number = item.find("accountNumber");
  if (number != item.end() && number->is_string()) {
    const auto& n = number->get_ref<const std::string&>();
    v.field("accountNumber")
        .holds(n.size() == 10 && n.find_first_not_of("0123456789") == std::string::npos, "matches",
               "must match /^[0-9]{10}$/ regular expression");
  }
}

void bulk_transfer(Protocol& p, Request&& req, const PathParams&, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  auto body = http::parse_json_object(req.body);
  if (!body) return respond(http::bad_request());
  http::Validator v(*body);
  v.field("reference").is_not_empty().is_string().max_length(kTextLengthMax);
  v.optional("atomic").is_boolean();
  v.field("items").is_array().array_min_size(1).array_max_size(kBulkItemsMax);
  const json* items = v.field("items").value();
  const bool items_ok =
      items != nullptr && items->is_array() && !items->empty() && items->size() <= kBulkItemsMax;
  bool any_bank = false;
  if (items_ok) {
    for (std::size_t i = 0; i < items->size(); ++i) {
      http::Validator item = v.element("items", i);
      item.field("type").is_not_empty().is_string().is_in({"wallet", "bank"});
      const json& x = (*items)[i];
      if (!x.is_object()) continue;
      const auto type = x.find("type");
      if (type == x.end() || !type->is_string()) continue;
      if (*type == "wallet") check_wallet_transfer(item);
      if (*type == "bank") {
        check_bank_transfer(item);
        check_bank_item(p, item, x);
        any_bank = true;
      }
    }
  }
  if (auto errors = v.errors()) return respond(http::validation_error(*errors));

  BulkTransfer cmd;
  cmd.caller = c->caller;
  cmd.reference = body->at("reference");
  cmd.atomic = body->value("atomic", json(false)).is_boolean() && body->value("atomic", false);
  cmd.items.reserve(items->size());
  for (const json& x : *items) {
    if (x.at("type") == "wallet")
      cmd.items.push_back(BulkItem{wallet_transfer_of(c->caller, x)});
    else
      cmd.items.push_back(BulkItem{BankTransfer{}});  // resolved below
  }
  if (!any_bank) return submit(p, *c, std::move(cmd), std::move(respond));
  p.barrier(*c, std::move(respond),
            [&p, ctx = *c, body = std::move(*body), cmd = std::move(cmd)](Responder r) mutable {
              resolve_and_submit(p, ctx, body, std::move(cmd), std::move(r));
            });
}

}  // namespace

void add_bulk_transfer_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol) {
  router.post(kPath, route(protocol, bulk_transfer));
  router.limit_body(kPath, kBulkBodyBytesMax);
}

}  // namespace kobo::api
