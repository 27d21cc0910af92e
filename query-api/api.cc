#include "query-api/api.h"

#include <boost/asio/post.hpp>

#include "common/crypto.h"
#include "common/log.h"
#include "common/metrics.h"
#include "query-api/banks.h"
#include "query-api/envelope.h"
#include "query-api/validation.h"

namespace kobo {

using nlohmann::json;
using http::PathParams;
using http::Request;
using http::Responder;
using http::Response;

namespace {

constexpr std::int64_t kTransferMin = 10'000;
constexpr std::int64_t kTransferMax = 1'000'000'000;
constexpr std::int64_t kAmountMax = 1'000'000'000'000;
constexpr std::size_t kNameLengthMax = 100;
constexpr std::size_t kTextLengthMax = 255;

}  // namespace

http::Response rejection_response(Rejection r) {
  switch (r) {
    case Rejection::none: break;
    case Rejection::duplicate_reference: return http::error(409, "Duplicate reference");
    case Rejection::source_not_found: return http::error(404, "Source not found");
    case Rejection::destination_not_found: return http::error(404, "Destination not found");
    case Rejection::same_source_and_destination:
      return http::error(400, "Source and destination cannot be the same");
    case Rejection::insufficient_funds: return http::error(403, "Insufficient fund");
    case Rejection::wallet_name_taken: return http::error(400, "Virtual Account name already exist");
    case Rejection::primary_wallet_limit: return http::error(400, "Primary wallet limit reached");
    case Rejection::account_not_found: return http::error(404, "Account not found");
    case Rejection::business_exists: return http::error(409, "Business already exists");
    case Rejection::unavailable: return http::error(503, "Service unavailable");
  }
  KOBO_ASSERT(false, "no HTTP answer for an accepted command");
}

// Who is calling, resolved from x-service-key.
struct Api::Context {
  Caller caller;
  Scope scope;
  Partition partition{0};
};

class Api::Handlers {
 public:
  explicit Handlers(Api& api) : api_(api) {}

  // Resolves the caller, or answers 401/403 and returns nullopt.
  std::optional<Context> authenticate(const Request& req, const Responder& respond) const {
    const std::string_view key = req.header("x-service-key");
    if (key.empty() || key.size() > 128) {
      respond(http::error(401, "Unauthorized"));
      return std::nullopt;
    }
    // The stored form is the key's SHA-256: looking it up by digest compares digests, never
    // the key itself, so timing reveals nothing about stored keys.
    const auto owner = api_.views_.key_owner(sha256_hex(key));
    if (!owner) {
      respond(http::error(401, "Unauthorized"));
      return std::nullopt;
    }
    if (owner->live && !owner->account_live) {
      respond(http::error(403, "Live mode is not enabled for this account"));
      return std::nullopt;
    }
    Context c;
    c.caller = Caller{owner->business, owner->account, owner->live};
    c.scope = Scope{owner->business, owner->live};
    c.partition = api_.ledger_.partition_of(owner->business);
    return c;
  }

  // Read barrier: the views have applied everything acknowledged in the caller's partition.
  bool barrier(const Context& c, const Responder& respond) const {
    if (api_.projector_.wait_applied(c.partition, api_.ledger_.durable_seq(c.partition),
                                     api_.options_.read_barrier_timeout))
      return true;
    respond(http::error(503, "Service unavailable"));
    return false;
  }

  // ---- wallets ---------------------------------------------------------------------------

  void create_wallet(Request&& req, const PathParams&, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c) return;
    auto body = http::parse_json_object(req.body);
    if (!body) return respond(http::bad_request());
    http::Validator v(*body);
    v.field("accountName").is_not_empty().is_string().max_length(kNameLengthMax);
    v.field("category").is_not_empty().is_string().is_in({"primary", "secondary"});
    v.field("currency").is_not_empty().is_string().is_in({"NGN"});
    const bool secondary = body->value("category", json()) == "secondary";
    auto email = secondary ? v.field("emailAddress") : v.optional("emailAddress");
    email.is_string().is_email();
    auto mobile = secondary ? v.field("mobile") : v.optional("mobile");
    mobile.is_object();
    auto m = v.nested("mobile");
    m.field("phoneNumber").is_not_empty().is_string().max_length(32);
    m.field("isoCode").is_not_empty().is_string().max_length(8);
    if (auto errors = v.errors()) return respond(http::validation_error(*errors));

    CreateWallet cmd{c->caller, body->at("accountName"), body->at("category"), std::nullopt, std::nullopt};
    if (body->contains("emailAddress") && !body->at("emailAddress").is_null()) cmd.email_address = body->at("emailAddress");
    if (body->contains("mobile") && !body->at("mobile").is_null())
      cmd.mobile = json{{"phoneNumber", body->at("mobile").at("phoneNumber")},
                        {"isoCode", body->at("mobile").at("isoCode")}};
    api_.ledger_.submit(std::move(cmd), [respond](Outcome o) {
      if (!o.ok()) return respond(rejection_response(o.rejection));
      respond(http::ok(201, o.record, "Virtual account created successfully"));
    });
  }

  void get_wallet(Request&& req, const PathParams& params, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c || !barrier(*c, respond)) return;
    auto w = api_.views_.wallet(c->scope, params.at("id"));
    if (!w) return respond(http::error(404, "Data not found"));
    respond(http::ok(200, *w));
  }

  void list_wallets(Request&& req, const PathParams&, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c) return;
    http::QueryValidator q(req.query);
    WalletFilter filter;
    filter.category = q.one_of("category", {"primary", "secondary"});
    filter.is_favourite = q.boolean("isFavourite");
    filter.live = q.boolean("live");
    const auto page = q.pagination();
    if (auto errors = q.errors()) return respond(http::validation_error(*errors));
    if (!barrier(*c, respond)) return;
    respond(list(api_.views_.wallets(c->scope, filter, to_page(page)), page));
  }

  // ---- transfers -------------------------------------------------------------------------

  void transfer(Request&& req, const PathParams&, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c) return;
    auto body = http::parse_json_object(req.body);
    if (!body) return respond(http::bad_request());
    http::Validator v(*body);
    v.field("source").is_not_empty().is_string().max_length(kTextLengthMax);
    v.field("sourceType").is_not_empty().is_string().is_in({"VirtualAccount"});
    v.field("destination").is_not_empty().is_string().max_length(kTextLengthMax);
    v.field("destinationType").is_not_empty().is_string().is_in({"VirtualAccount"});
    v.field("amount").is_int().min(kTransferMin).max(kTransferMax);
    v.field("currency").is_not_empty().is_string().is_in({"NGN"});
    v.field("narration").is_not_empty().is_string().max_length(kTextLengthMax);
    v.optional("reference").is_not_empty().is_string().max_length(kTextLengthMax);
    v.optional("nameEnquiryRef").is_string().max_length(kTextLengthMax);
    if (auto errors = v.errors()) return respond(http::validation_error(*errors));

    WalletTransfer cmd;
    cmd.caller = c->caller;
    cmd.source = body->at("source");
    cmd.destination = body->at("destination");
    cmd.amount = Kobo(*http::as_int64(body->at("amount")));
    cmd.narration = body->at("narration");
    if (auto r = optional_string(*body, "reference")) cmd.reference = *r;
    if (auto r = optional_string(*body, "nameEnquiryRef")) cmd.name_enquiry_ref = *r;
    // What makes two requests "the same body" for idempotency: every field that moves money.
    cmd.fingerprint = sha256_hex(json{{"source", cmd.source},
                                      {"sourceType", body->at("sourceType")},
                                      {"destination", cmd.destination},
                                      {"destinationType", body->at("destinationType")},
                                      {"amount", cmd.amount.value},
                                      {"currency", body->at("currency")},
                                      {"narration", cmd.narration},
                                      {"nameEnquiryRef", body->value("nameEnquiryRef", json())}}
                                     .dump());
    const Context ctx = *c;
    api_.ledger_.submit(std::move(cmd), [this, ctx, respond](Outcome o) {
      if (o.replayed) return answer_replay(ctx, std::move(o), respond);
      if (!o.ok()) return respond(rejection_response(o.rejection));
      respond(http::ok(200, o.record, "Transfer initiated successfully"));
    });
  }

  // The original transaction of an idempotent repeat, read once the views have it. Runs the
  // wait on Api's own pool: never on the writer thread.
  void answer_replay(const Context& ctx, Outcome o, Responder respond) {
    boost::asio::post(api_.waits_, [this, ctx, o = std::move(o), respond] {
      if (!api_.projector_.wait_applied(o.partition, o.seq, api_.options_.read_barrier_timeout))
        return respond(http::error(503, "Service unavailable"));
      auto t = api_.views_.transaction(ctx.scope, ctx.caller.account, o.transaction);
      KOBO_ASSERT(t.has_value(), "a replayed transfer's transaction is missing from the views");
      Response r = http::ok(200, *t, "Transfer initiated successfully");
      r.headers.emplace_back("Idempotent-Replayed", "true");
      respond(std::move(r));
    });
  }

  void incoming_transfer(Request&& req, const PathParams&, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c) return;
    if (c->caller.live) return respond(http::error(403, "Sandbox transfers are only available in test mode"));
    auto body = http::parse_json_object(req.body);
    if (!body) return respond(http::bad_request());
    http::Validator v(*body);
    v.field("accountNumber").is_not_empty().is_string().max_length(32);
    v.field("amount").is_int().min(1).max(kAmountMax);
    v.optional("narration").is_string().max_length(kTextLengthMax);
    v.optional("senderName").is_string().max_length(kNameLengthMax);
    v.optional("senderAccountNumber").is_string().max_length(32);
    v.optional("senderBankCode").is_string().max_length(16);
    if (auto errors = v.errors()) return respond(http::validation_error(*errors));

    IncomingCredit cmd;
    cmd.caller = c->caller;
    cmd.account_number = body->at("accountNumber");
    cmd.amount = Kobo(*http::as_int64(body->at("amount")));
    cmd.narration = optional_string(*body, "narration").value_or("Incoming transfer");
    cmd.sender_name = optional_string(*body, "senderName").value_or("Sandbox Sender");
    cmd.sender_account_number = optional_string(*body, "senderAccountNumber").value_or("0000014579");
    cmd.sender_bank_code = optional_string(*body, "senderBankCode").value_or("058");
    if (const Bank* bank = find_bank(cmd.sender_bank_code)) {
      cmd.sender_bank_name = bank->name;
      cmd.sender_bank_nibss_code = bank->nibss_code;
    } else {
      return respond(http::error(400, "Bank not found"));
    }
    api_.ledger_.submit(std::move(cmd), [respond](Outcome o) {
      if (!o.ok()) return respond(rejection_response(o.rejection));
      respond(http::ok(201, o.record, "Incoming transfer received"));
    });
  }

  // ---- transactions ----------------------------------------------------------------------

  void list_transactions(Request&& req, const PathParams&, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c) return;
    http::QueryValidator q(req.query);
    TransactionFilter filter;
    filter.entry = q.one_of("entry", {"credit", "debit"});
    filter.status = q.one_of("status", {"pending", "processing", "success", "failed"});
    filter.amount = q.integer("amount", 0, kAmountMax);
    filter.live = q.boolean("live");
    const auto page = q.pagination();
    json date_errors = json::object();
    for (const auto& [param, name] : {std::pair{"createdAt[startDate]", "startDate"}, {"createdAt[endDate]", "endDate"}}) {
      const auto text = q.text(param);
      if (!text) continue;
      const auto day = parse_date(*text);
      if (!day) {
        date_errors[std::string("createdAt.") + name]["isDateString"] =
            std::string("createdAt.") + name + " must be a valid ISO 8601 date string";
        continue;
      }
      if (std::string_view(name) == "startDate") filter.created_from = *day;
      else filter.created_until = *day + kMsPerDay;  // the end day is inclusive
    }
    auto errors = q.errors();
    if (errors || !date_errors.empty()) {
      json all = errors.value_or(json::object());
      all.update(date_errors);
      return respond(http::validation_error(all));
    }
    if (!barrier(*c, respond)) return;
    respond(list(api_.views_.transactions(c->scope, filter, to_page(page)), page));
  }

  void get_transaction(Request&& req, const PathParams& params, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c || !barrier(*c, respond)) return;
    auto t = api_.views_.transaction(c->scope, c->caller.account, params.at("id"));
    if (!t) return respond(http::error(404, "Data not found"));
    respond(http::ok(200, *t));
  }

  void verify_transaction(Request&& req, const PathParams& params, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c || !barrier(*c, respond)) return;
    auto t = api_.views_.transaction_by_reference(c->scope, c->caller.account, params.at("reference"));
    if (!t) return respond(http::error(404, "Transaction not found or does not exist"));
    respond(http::ok(200, *t));
  }

 private:
  static std::optional<std::string> optional_string(const json& body, const char* name) {
    const auto it = body.find(name);
    if (it == body.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  }

  static kobo::PageRequest to_page(const http::PageRequest& p) {
    return kobo::PageRequest{static_cast<std::uint64_t>(p.page), static_cast<std::uint64_t>(p.per_page)};
  }

  static Response list(Page page, const http::PageRequest& request) {
    json items = json::array();
    for (auto& item : page.items) items.push_back(std::move(item));
    return http::ok_list(items, http::Pagination{static_cast<std::int64_t>(page.total_count), request.per_page,
                                                 request.page});
  }

  Api& api_;
};

Api::Api(Ledger& ledger, Views& views, Projector& projector, ApiOptions options)
    : ledger_(ledger), views_(views), projector_(projector), options_(options) {}

Api::~Api() { waits_.join(); }

bool Api::caught_up() const {
  for (std::uint32_t p = 0; p < ledger_.config().partitions; ++p)
    if (projector_.applied_seq(Partition(p)) < ledger_.durable_seq(Partition(p))) return false;
  return true;
}

void Api::add_routes(http::Router& router) {
  auto h = std::make_shared<Handlers>(*this);
  auto bind = [h](void (Handlers::*fn)(Request&&, const PathParams&, Responder)) {
    return [h, fn](Request&& req, const PathParams& params, Responder respond) {
      ((*h).*fn)(std::move(req), params, std::move(respond));
    };
  };
  router.post("/v1/virtual-accounts", bind(&Handlers::create_wallet));
  router.get("/v1/virtual-accounts", bind(&Handlers::list_wallets));
  router.get("/v1/virtual-accounts/{id}", bind(&Handlers::get_wallet));
  router.post("/v1/transactions/transfer", bind(&Handlers::transfer));
  router.get("/v1/transactions", bind(&Handlers::list_transactions));
  router.get("/v1/transactions/{id}", bind(&Handlers::get_transaction));
  router.get("/v1/transactions/{reference}/verify", bind(&Handlers::verify_transaction));
  router.post("/v1/sandbox/incoming-transfers", bind(&Handlers::incoming_transfer));

  router.get("/healthz", [](Request&&, const PathParams&, Responder respond) {
    respond(Response{200, R"({"status":"ok"})", "application/json", {}});
  });
  router.get("/readyz", [this](Request&&, const PathParams&, Responder respond) {
    const bool ready = ledger_.healthy() && projector_.healthy() && caught_up();
    respond(ready ? Response{200, R"({"status":"ready"})", "application/json", {}}
                  : Response{503, R"({"status":"not ready"})", "application/json", {}});
  });
  router.get("/metrics", [](Request&&, const PathParams&, Responder respond) {
    respond(Response{200, metrics::registry().render(), "text/plain; version=0.0.4", {}});
  });
}

}  // namespace kobo
