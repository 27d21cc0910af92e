#include "query-api/api.h"

#include <boost/asio/post.hpp>

#include "common/crypto.h"
#include "common/json_dump.h"
#include "common/log.h"
#include "common/metrics.h"
#include "projection/render.h"
#include "query-api/banks.h"
#include "query-api/credentials.h"
#include "query-api/envelope.h"
#include "query-api/name_enquiry.h"
#include "query-api/validation.h"

namespace kobo {

using http::PathParams;
using http::Request;
using http::Responder;
using http::Response;
using nlohmann::json;

namespace {

constexpr std::int64_t kTransferMin = 10'000;
constexpr std::int64_t kTransferMax = 1'000'000'000;
constexpr std::int64_t kAmountMax = 1'000'000'000'000;
constexpr std::size_t kNameLengthMax = 100;
constexpr std::size_t kTextLengthMax = 255;
constexpr std::size_t kWebhooksMax = 5;
constexpr std::size_t kMetadataBytesMax = std::size_t{8} * 1024;
constexpr std::int64_t kExpireInMax = 1800;  // seconds

}  // namespace

http::Response rejection_response(Rejection r) {
  switch (r) {
    case Rejection::none:
      break;
    case Rejection::duplicate_reference:
      return http::error(409, "Duplicate reference");
    case Rejection::source_not_found:
      return http::error(404, "Source not found");
    case Rejection::destination_not_found:
      return http::error(404, "Destination not found");
    case Rejection::same_source_and_destination:
      return http::error(400, "Source and destination cannot be the same");
    case Rejection::insufficient_funds:
      return http::error(403, "Insufficient fund");
    case Rejection::wallet_name_taken:
      return http::error(400, "Virtual Account name already exist");
    case Rejection::primary_wallet_limit:
      return http::error(400, "Primary wallet limit reached");
    case Rejection::account_not_found:
      return http::error(404, "Account not found");
    case Rejection::business_exists:
      return http::error(409, "Business already exists");
    case Rejection::reference_exists:
      return http::error(400, "Reference already exists");
    case Rejection::settlement_account_not_found:
      return http::error(404, "Settlement account not found");
    case Rejection::amount_mismatch:
      return http::error(400, "Amount mismatch");
    case Rejection::collection_inactive:
      return http::error(400, "Collection account is not active");
    case Rejection::unavailable:
      return http::error(503, "Service unavailable");
    case Rejection::storage_full:
      return http::error(507, "Insufficient storage");
    case Rejection::out_of_range:
      return http::error(400, "Amount out of range");
  }
  KOBO_ASSERT(false, "no HTTP answer for an accepted command");
  return http::internal_error();
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

  using Continuation = std::function<void(Responder)>;

  // Calls `then(applied)` on Api's pool once the views have applied `seq` of partition p, or
  // with false after the read barrier's timeout. No thread is held while it waits: the
  // projector calls back (Projector::when_applied), and the answer is rendered on the pool,
  // never on the writer's thread nor the projector's.
  void on_applied(Partition p, Seq seq, std::function<void(bool)> then) {
    api_.projector_.when_applied(
        p, seq, api_.options_.read_barrier_timeout, [this, then = std::move(then)](bool applied) mutable {
          boost::asio::post(api_.answers_, [then = std::move(then), applied]() mutable { then(applied); });
        });
  }

  // Read barrier: `then` runs once the views have applied everything durable in the caller's
  // partition: at once on this thread when they have, else on Api's pool; 503 after the read
  // barrier's timeout. While the views cannot be written (a full disk) reads are served from
  // them as they are rather than refused (DESIGN guarantee 8): they still show every write that
  // was answered, because a write is answered only once the views have it (after_projection).
  void barrier(const Context& c, Responder respond, Continuation then) {
    const Seq durable = api_.ledger_.durable_seq(c.partition);
    if (api_.projector_.views_unwritable() || api_.projector_.applied_seq(c.partition) >= durable)
      return then(std::move(respond));
    on_applied(c.partition, durable,
               [this, respond = std::move(respond), then = std::move(then)](bool applied) mutable {
                 if (!applied && !api_.projector_.views_unwritable())
                   return respond(http::error(503, "Service unavailable"));
                 then(std::move(respond));
               });
  }

  // Runs `then` on Api's pool once the views have applied the command's events (503 if they
  // do not within the read barrier's timeout).
  void after_projection(const Outcome& o, Responder respond, Continuation then) {
    on_applied(o.partition, o.seq,
               [respond = std::move(respond), then = std::move(then)](bool applied) mutable {
                 if (!applied) return respond(http::error(503, "Service unavailable"));
                 then(std::move(respond));
               });
  }

  // Answers a command that created a record with that record, rendered from the command's
  // events by the projection's code (projection/render.h), once the views have applied them: a
  // GET right after the answer finds what the answer showed. The command is durable by now, so
  // views that are slow or stuck (a full disk) do not turn it into an error: after the wait the
  // record is rendered from what the views hold, and only if they lack what it shows (a wallet
  // they never got) is the answer 503, which a retry with the same reference resolves. `adjust`
  // changes the answer alone (a transfer answers `pending`, DESIGN section 4.1).
  void answer_created(Outcome o, int status, std::string message, Responder respond,
                      std::function<void(std::string&)> adjust = {}) {
    const Partition p = o.partition;
    const Seq seq = o.seq;
    on_applied(p, seq,
               [this, o = std::move(o), status, message = std::move(message), adjust = std::move(adjust),
                respond = std::move(respond)](bool applied) mutable {
                 const ViewRecords records(api_.views_);
                 if (!applied && !render::can_render(o.events, records))
                   return respond(http::error(503, "Service unavailable"));
                 // A settled transaction is read back rather than rendered again: the same bytes.
                 std::optional<std::string> record;
                 if (applied && render::settled_when_created(o.events, o.id))
                   record = records.transaction(o.id);
                 if (!record) record = render::created_record(o.events, o.id, records);
                 KOBO_ASSERT(record.has_value(), "a command's events do not create the record it names");
                 if (adjust) adjust(*record);
                 respond(http::ok_text(status, *record, message));
               });
  }

  // ---- accounts and businesses -----------------------------------------------------------

  void list_accounts(Request&& req, const PathParams&, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c) return;
    http::QueryValidator q(req.query);
    AccountFilter filter;
    filter.name = q.text("name");
    filter.is_default = q.boolean("isDefault");
    filter.live = q.boolean("live");
    const auto page = q.pagination();
    if (auto errors = q.errors()) return respond(http::validation_error(*errors));
    barrier(*c, std::move(respond), [this, business = c->caller.business, filter, page](Responder r) {
      r(list(api_.views_.accounts(business, filter, to_page(page)), page));
    });
  }

  void update_account(Request&& req, const PathParams& params, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c) return;
    auto body = http::parse_json_object(req.body);
    if (!body) return respond(http::bad_request());
    http::Validator v(*body);
    v.optional("webhooks").is_array().array_max_size(kWebhooksMax).each_is_url();
    v.optional("live").is_boolean();
    if (auto errors = v.errors()) return respond(http::validation_error(*errors));
    if (api_.options_.webhooks != nullptr && body->contains("webhooks") && body->at("webhooks").is_array())
      for (const auto& url : body->at("webhooks"))
        if (auto why = api_.options_.webhooks->refused_url(url.get<std::string>()))
          return respond(http::validation_error(
              {{"webhooks", {{"isUrl", "each value in webhooks must be a public URL address: " + *why}}}}));
    UpdateAccount cmd{c->caller, params.at("id"), std::nullopt, std::nullopt};
    if (body->contains("webhooks") && !body->at("webhooks").is_null())
      cmd.webhooks = body->at("webhooks").get<std::vector<std::string>>();
    if (body->contains("live") && !body->at("live").is_null()) cmd.live = body->at("live").get<bool>();
    barrier(*c, std::move(respond), [this, cmd = std::move(cmd)](Responder r) mutable {
      if (!api_.views_.account(cmd.caller.business, cmd.account_id))
        return r(http::error(404, "Data not found"));
      submit_update_account(std::move(cmd), std::move(r));
    });
  }

  void submit_update_account(UpdateAccount cmd, Responder respond) {
    const std::string business = cmd.caller.business;
    const std::string id = cmd.account_id;
    api_.ledger_.submit(
        std::move(cmd), [this, business, id, respond = std::move(respond)](const Outcome& o) mutable {
          if (!o.ok())
            return respond(o.rejection == Rejection::account_not_found ? http::error(404, "Data not found")
                                                                       : rejection_response(o.rejection));
          after_projection(o, std::move(respond), [this, business, id](Responder r) {
            auto a = api_.views_.account(business, id);
            KOBO_ASSERT(a.has_value(), "an updated account is missing from the views");
            r(http::ok(200, *a, "Account updated successfully"));
          });
        });
  }

  void create_business(Request&& req, const PathParams&, Responder respond) {
    if (api_.options_.admin_key.empty()) return respond(http::route_not_found());
    if (!constant_time_equal(sha256_hex(req.header("x-admin-key")), sha256_hex(api_.options_.admin_key)))
      return respond(http::error(401, "Unauthorized"));
    auto body = http::parse_json_object(req.body);
    if (!body) return respond(http::bad_request());
    http::Validator v(*body);
    v.field("name").is_not_empty().is_string().max_length(kNameLengthMax);
    if (auto errors = v.errors()) return respond(http::validation_error(*errors));
    const Credentials creds = new_credentials();
    // Webhooks are signed with the secret keys, which the log holds only as digests.
    if (api_.options_.signing_keys != nullptr) {
      if (auto s =
              api_.options_.signing_keys->put(creds.account_id, creds.test_secret_key, creds.live_secret_key);
          !s) {
        log::error("cannot store signing keys", {{"error", s.message()}});
        return respond(http::internal_error());
      }
    }
    api_.ledger_.submit(create_business_command(creds, body->at("name")),
                        [this, creds, respond = std::move(respond)](const Outcome& o) mutable {
                          if (!o.ok()) return respond(rejection_response(o.rejection));
                          // The keys must work as soon as they are handed out.
                          after_projection(o, std::move(respond), [creds, o](Responder r) {
                            const Event& e = o.events.front();
                            const auto records =
                                render::business_records(e, std::get<BusinessRegistered>(e.data));
                            r(http::ok(201,
                                       json{{"business", json::parse(records.business)},
                                            {"account", json::parse(records.account)},
                                            {"credentials", to_json(creds)}},
                                       "Business created successfully"));
                          });
                        });
  }

  // ---- webhook deliveries ------------------------------------------------------------------

  void list_webhook_deliveries(Request&& req, const PathParams&, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c) return;
    http::QueryValidator q(req.query);
    DeliveryFilter filter;
    if (auto status = q.one_of("status", {"pending", "succeeded", "failed"}))
      filter.status = *status == "pending"     ? DeliveryStatus::pending
                      : *status == "succeeded" ? DeliveryStatus::succeeded
                                               : DeliveryStatus::failed;
    const auto page = q.pagination();
    if (auto errors = q.errors()) return respond(http::validation_error(*errors));
    respond(list(api_.options_.webhooks->deliveries(c->scope, filter, to_page(page)), page));
  }

  void retry_webhook_delivery(Request&& req, const PathParams& params, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c) return;
    json record;
    switch (api_.options_.webhooks->retry(c->scope, params.at("id"), &record)) {
      case Webhooks::RetryOutcome::not_found:
        return respond(http::error(404, "Data not found"));
      case Webhooks::RetryOutcome::in_progress:
        return respond(http::error(409, "Delivery attempt in progress"));
      case Webhooks::RetryOutcome::queued:
        return respond(http::ok(200, record, "Webhook delivery queued"));
      case Webhooks::RetryOutcome::unavailable:
        return respond(http::error(503, "Service unavailable"));
    }
  }

  // ---- banks -----------------------------------------------------------------------------

  void list_banks(Request&& req, const PathParams&, Responder respond) {
    if (!authenticate(req, respond)) return;
    static const std::string body = [] {
      json data = json::array();
      std::int64_t id = 0;
      for (const Bank& b : banks()) {
        const std::string h = sha256_hex("kobo-bank:" + b.slug);
        const std::string uuid = h.substr(0, 8) + "-" + h.substr(8, 4) + "-4" + h.substr(13, 3) + "-a" +
                                 h.substr(17, 3) + "-" + h.substr(20, 12);
        data.push_back(
            {{"id", ++id},
             {"publicId", "bnk-" + uuid},
             {"createdAt", "2026-01-01T00:00:00.000Z"},
             {"updatedAt", "2026-01-01T00:00:00.000Z"},
             {"deletedAt", nullptr},
             {"bankName", b.name},
             {"bankCode", b.bank_code},
             {"nibssBankCode", b.nibss_code},
             {"country", "nigeria"},
             {"slug", b.slug},
             {"type", "nuban"},
             {"currency", "NGN"},
             {"active", true},
             {"processor", "kobo"},
             {"meta", {{"bankCode", b.bank_code}, {"name", b.name}, {"nibssBankCode", b.nibss_code}}}});
      }
      return http::ok(200, data, "Banks retrieved successfully").body;
    }();
    respond(Response{200, body, "application/json", {}});
  }

  // ---- bank accounts and name enquiry ------------------------------------------------------

  void validate_account(Request&& req, const PathParams&, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c) return;
    auto body = http::parse_json_object(req.body);
    if (!body) return respond(http::bad_request());
    http::Validator v(*body);
    v.field("accountNumber").is_not_empty().is_string().max_length(32);
    v.field("bankCode").is_not_empty().is_string().max_length(16);
    if (auto errors = v.errors()) return respond(http::validation_error(*errors));
    barrier(*c, std::move(respond),
            [this, caller = c->caller, bank_code = body->at("bankCode").get<std::string>(),
             account_number = body->at("accountNumber").get<std::string>()](Responder r) {
              answer_validated(caller, bank_code, account_number, r);
            });
  }

  // The account a request's bankCode and accountNumber name, or nullopt once `respond` has the
  // 4xx (name_enquiry.h). Reads the views (a wallet of ours): call it after the read barrier.
  std::optional<ResolvedAccount> resolve(bool live, const std::string& bank_code,
                                         const std::string& account_number, const Responder& respond) const {
    auto resolved = resolve_account(api_.views_, api_.ledger_.config(), live, bank_code, account_number);
    if (auto* error = std::get_if<Response>(&resolved)) {
      respond(std::move(*error));
      return std::nullopt;
    }
    return std::get<ResolvedAccount>(std::move(resolved));
  }

  void answer_validated(const Caller& caller, const std::string& bank_code, const std::string& account_number,
                        const Responder& respond) {
    const auto found = resolve(caller.live, bank_code, account_number, respond);
    if (!found) return;
    const ResolvedAccount& r = *found;
    // The answer has the shape of the beneficiary it would be saved as; validating saves nothing.
    const std::string ts = format_iso8601(now_ms());
    respond(http::ok(
        201,
        json{{"publicId", bank_account_id(caller.business, caller.live, r.bank_code, r.account_number)},
             {"auth", caller.business},
             {"account", caller.account},
             {"accountName", r.account_name},
             {"accountNumber", r.account_number},
             {"bankName", r.bank_name},
             {"bankCode", r.bank_code},
             {"nibssBankCode", r.nibss_code},
             {"live", caller.live},
             {"processor", render::kProcessor},
             {"currency", "NGN"},
             {"beneficiaryType", r.own_bank ? "vba" : "external"},
             {"clientIds", json::object()},
             {"nameEnquiryRef", "ner-" + uuid_v4()},
             {"createdAt", ts},
             {"updatedAt", ts}},
        "Account validated successfully"));
  }

  void add_bank_account(Request&& req, const PathParams&, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c) return;
    auto body = http::parse_json_object(req.body);
    if (!body) return respond(http::bad_request());
    http::Validator v(*body);
    v.field("accountName").is_not_empty().is_string().max_length(kNameLengthMax);
    v.field("accountNumber").is_not_empty().is_string().max_length(32);
    v.field("bankName").is_not_empty().is_string().max_length(kNameLengthMax);
    v.field("bankCode").is_not_empty().is_string().max_length(16);
    v.optional("beneficiaryType").is_string().is_in({"vba", "external", "personal"});
    if (auto errors = v.errors()) return respond(http::validation_error(*errors));
    // Resolving the account reads the views (a wallet of ours): after the read barrier.
    barrier(*c, std::move(respond), [this, ctx = *c, body = std::move(*body)](Responder r) {
      submit_bank_account(ctx, body, std::move(r));
    });
  }

  void submit_bank_account(const Context& ctx, const json& body, Responder respond) {
    const auto found = resolve(ctx.caller.live, body.at("bankCode").get<std::string>(),
                               body.at("accountNumber").get<std::string>(), respond);
    if (!found) return;
    const ResolvedAccount& r = *found;
    AddBankAccount cmd{ctx.caller,
                       bank_account_id(ctx.caller.business, ctx.caller.live, r.bank_code, r.account_number),
                       body.at("accountName"),
                       r.account_number,
                       body.at("bankName"),
                       r.bank_code,
                       optional_string(body, "beneficiaryType").value_or("personal")};
    const Scope scope = ctx.scope;
    api_.ledger_.submit(std::move(cmd), [this, scope, respond = std::move(respond)](Outcome o) mutable {
      if (!o.ok()) return respond(rejection_response(o.rejection));
      if (!o.replayed)
        return answer_created(std::move(o), 201, "Bank account added successfully", std::move(respond));
      // Already saved: answer with the beneficiary as it is.
      after_projection(o, std::move(respond), [this, scope, id = o.id](Responder later) {
        auto b = api_.views_.bank_account_text(scope, id);
        KOBO_ASSERT(b.has_value(), "a saved bank account is missing from the views");
        Response answer = http::ok_text(200, *b, "Bank account already exists");
        answer.headers.emplace_back("Idempotent-Replayed", "true");
        later(std::move(answer));
      });
    });
  }

  void get_bank_account(Request&& req, const PathParams& params, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c) return;
    barrier(*c, std::move(respond), [this, scope = c->scope, id = params.at("id")](Responder r) {
      auto b = api_.views_.bank_account_text(scope, id);
      if (!b) return r(http::error(404, "Data not found"));
      r(http::ok_text(200, *b));
    });
  }

  void list_bank_accounts(Request&& req, const PathParams&, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c) return;
    http::QueryValidator q(req.query);
    BankAccountFilter filter;
    filter.account_name = q.text("accountName");
    filter.beneficiary_type = q.one_of("beneficiaryType", {"vba", "external", "personal"});
    filter.live = q.boolean("live");
    const auto page = q.pagination();
    if (auto errors = q.errors()) return respond(http::validation_error(*errors));
    barrier(*c, std::move(respond), [this, scope = c->scope, filter, page](Responder r) {
      r(list(api_.views_.bank_accounts(scope, filter, to_page(page)), page));
    });
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
    if (body->contains("emailAddress") && !body->at("emailAddress").is_null())
      cmd.email_address = body->at("emailAddress");
    if (body->contains("mobile") && !body->at("mobile").is_null())
      cmd.mobile = Mobile{body->at("mobile").at("isoCode"), body->at("mobile").at("phoneNumber")};
    api_.ledger_.submit(std::move(cmd), [this, respond = std::move(respond)](Outcome o) {
      if (!o.ok()) return respond(rejection_response(o.rejection));
      answer_created(std::move(o), 201, "Virtual account created successfully", respond);
    });
  }

  void get_wallet(Request&& req, const PathParams& params, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c) return;
    barrier(*c, std::move(respond), [this, scope = c->scope, id = params.at("id")](Responder r) {
      auto w = api_.views_.wallet_text(scope, id);
      if (!w) return r(http::error(404, "Data not found"));
      r(http::ok_text(200, *w));
    });
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
    barrier(*c, std::move(respond), [this, scope = c->scope, filter, page](Responder r) {
      r(list(api_.views_.wallets(scope, filter, to_page(page)), page));
    });
  }

  // ---- collection and transit wallets ----------------------------------------------------

  void create_collection(Request&& req, const PathParams&, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c) return;
    auto body = http::parse_json_object(req.body);
    if (!body) return respond(http::bad_request());
    http::Validator v(*body);
    v.field("destination").is_not_empty().is_string().max_length(kTextLengthMax);
    v.field("accountName").is_not_empty().is_string().max_length(kNameLengthMax);
    v.field("amount").is_int().min(1).max(kAmountMax);
    v.field("expireIn").is_int().min(api_.options_.expire_in_min_s).max(kExpireInMax);
    v.optional("reference").is_string().min_length(5).max_length(kTextLengthMax);
    if (auto errors = v.errors()) return respond(http::validation_error(*errors));
    CreateCollection cmd{c->caller,
                         body->at("destination"),
                         body->at("accountName"),
                         Kobo(*http::as_int64(body->at("amount"))),
                         *http::as_int64(body->at("expireIn")),
                         optional_string(*body, "reference")};
    api_.ledger_.submit(std::move(cmd), [this, respond = std::move(respond)](Outcome o) {
      if (!o.ok()) return respond(rejection_response(o.rejection));
      answer_created(std::move(o), 201, "Collection account created successfully", respond);
    });
  }

  void create_transit(Request&& req, const PathParams&, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c) return;
    auto body = http::parse_json_object(req.body);
    if (!body) return respond(http::bad_request());
    http::Validator v(*body);
    v.field("accountName").is_not_empty().is_string().max_length(kNameLengthMax);
    v.field("currency").is_not_empty().is_string().is_in({"NGN"});
    v.field("settlementAccount").is_not_empty().is_string().max_length(kTextLengthMax);
    v.optional("emailAddress").is_string().is_email();
    v.optional("mobile").is_object();
    auto m = v.nested("mobile");
    m.field("phoneNumber").is_not_empty().is_string().max_length(32);
    m.field("isoCode").is_not_empty().is_string().max_length(8);
    if (auto errors = v.errors()) return respond(http::validation_error(*errors));
    CreateTransitWallet cmd{c->caller, body->at("accountName"), body->at("settlementAccount"),
                            optional_string(*body, "emailAddress"), std::nullopt};
    if (body->contains("mobile") && body->at("mobile").is_object())
      cmd.mobile = Mobile{body->at("mobile").at("isoCode"), body->at("mobile").at("phoneNumber")};
    api_.ledger_.submit(std::move(cmd), [this, respond = std::move(respond)](Outcome o) {
      if (!o.ok()) return respond(rejection_response(o.rejection));
      answer_created(std::move(o), 201, "Transit account created successfully", respond);
    });
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
    const Context ctx = *c;
    api_.ledger_.submit(std::move(cmd), [this, ctx, respond = std::move(respond)](Outcome o) {
      if (o.replayed) return answer_replay(ctx, o, respond);
      if (!o.ok()) return respond(rejection_response(o.rejection));
      answer_created(std::move(o), 200, "Transfer initiated successfully", respond, render::answer_pending);
    });
  }

  void bank_transfer(Request&& req, const PathParams&, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c) return;
    auto body = http::parse_json_object(req.body);
    if (!body) return respond(http::bad_request());
    http::Validator v(*body);
    v.field("source").is_not_empty().is_string().max_length(kTextLengthMax);
    v.field("accountNumber").is_not_empty().is_string().max_length(32);
    v.field("bankCode").is_not_empty().is_string().max_length(16);
    v.field("amount").is_int().min(kTransferMin).max(kTransferMax);
    v.field("currency").is_not_empty().is_string().is_in({"NGN"});
    v.field("narration").is_not_empty().is_string().max_length(kTextLengthMax);
    v.optional("reference").is_not_empty().is_string().max_length(kTextLengthMax);
    v.optional("saveBeneficiary").is_boolean();
    v.optional("metadata").is_object();
    if (auto errors = v.errors()) return respond(http::validation_error(*errors));
    if (body->contains("metadata") && body->at("metadata").dump().size() > kMetadataBytesMax)
      return respond(http::validation_error(
          {{"metadata",
            {{"maxSize", "metadata must be at most " + std::to_string(kMetadataBytesMax) + " bytes"}}}}));
    // Resolving the account reads the views (a wallet of ours): after the read barrier.
    barrier(*c, std::move(respond), [this, ctx = *c, body = std::move(*body)](Responder r) {
      submit_bank_transfer(ctx, body, std::move(r));
    });
  }

  void submit_bank_transfer(const Context& ctx, const json& body, Responder respond) {
    const auto found = resolve(ctx.caller.live, body.at("bankCode").get<std::string>(),
                               body.at("accountNumber").get<std::string>(), respond);
    if (!found) return;
    const ResolvedAccount& r = *found;

    BankTransfer cmd;
    cmd.caller = ctx.caller;
    cmd.source = body.at("source");
    cmd.bank_account_id =
        bank_account_id(ctx.caller.business, ctx.caller.live, r.bank_code, r.account_number);
    cmd.account_number = r.account_number;
    cmd.account_name = r.account_name;
    cmd.bank_code = r.bank_code;
    cmd.bank_name = r.bank_name;
    cmd.name_enquiry_ref = "ner-" + uuid_v4();
    cmd.amount = Kobo(*http::as_int64(body.at("amount")));
    cmd.narration = body.at("narration");
    if (auto ref = optional_string(body, "reference")) cmd.reference = *ref;
    cmd.save_beneficiary =
        body.value("saveBeneficiary", json(false)).is_boolean() && body.value("saveBeneficiary", false);
    if (body.contains("metadata") && body.at("metadata").is_object())
      cmd.metadata = RawJson{dump_json(body.at("metadata"))};
    api_.ledger_.submit(std::move(cmd), [this, ctx, respond = std::move(respond)](Outcome o) {
      if (o.replayed) return answer_replay(ctx, o, respond);
      if (!o.ok()) return respond(rejection_response(o.rejection));
      answer_created(std::move(o), 200, "Transfer initiated successfully", respond, render::answer_pending);
    });
  }

  // The original transaction of an idempotent repeat, read once the views have it, on Api's
  // pool: never on the writer thread.
  void answer_replay(const Context& ctx, const Outcome& o, Responder respond) {
    after_projection(o, std::move(respond), [this, ctx, id = o.id](Responder later) {
      auto t = api_.views_.transaction_text(ctx.scope, ctx.caller.account, id);
      KOBO_ASSERT(t.has_value(), "a replayed transfer's transaction is missing from the views");
      Response r = http::ok_text(200, *t, "Transfer initiated successfully");
      r.headers.emplace_back("Idempotent-Replayed", "true");
      later(std::move(r));
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
    api_.ledger_.submit(std::move(cmd), [this, respond = std::move(respond)](Outcome o) {
      if (!o.ok()) return respond(rejection_response(o.rejection));
      answer_created(std::move(o), 201, "Incoming transfer received", respond);
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
    for (const auto& [param, name] :
         {std::pair{"createdAt[startDate]", "startDate"}, {"createdAt[endDate]", "endDate"}}) {
      const auto text = q.text(param);
      if (!text) continue;
      const auto day = parse_date(*text);
      if (!day) {
        date_errors[std::string("createdAt.") + name]["isDateString"] =
            std::string("createdAt.") + name + " must be a valid ISO 8601 date string";
        continue;
      }
      if (std::string_view(name) == "startDate")
        filter.created_from = *day;
      else
        filter.created_until = *day + kMsPerDay;  // the end day is inclusive
    }
    auto errors = q.errors();
    if (errors || !date_errors.empty()) {
      json all = errors.value_or(json::object());
      all.update(date_errors);
      return respond(http::validation_error(all));
    }
    barrier(*c, std::move(respond), [this, scope = c->scope, filter, page](Responder r) {
      r(list(api_.views_.transactions(scope, filter, to_page(page)), page));
    });
  }

  void get_transaction(Request&& req, const PathParams& params, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c) return;
    barrier(*c, std::move(respond), [this, ctx = *c, id = params.at("id")](Responder r) {
      auto t = api_.views_.transaction_text(ctx.scope, ctx.caller.account, id);
      if (!t) return r(http::error(404, "Data not found"));
      r(http::ok_text(200, *t));
    });
  }

  void verify_transaction(Request&& req, const PathParams& params, Responder respond) {
    auto c = authenticate(req, respond);
    if (!c) return;
    barrier(*c, std::move(respond), [this, ctx = *c, reference = params.at("reference")](Responder r) {
      auto t = api_.views_.transaction_by_reference_text(ctx.scope, ctx.caller.account, reference);
      if (!t) return r(http::error(404, "Transaction not found or does not exist"));
      r(http::ok_text(200, *t));
    });
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
    return http::ok_list(
        items, http::Pagination{static_cast<std::int64_t>(page.total_count), request.per_page, request.page});
  }

  Api& api_;
};

Api::Api(Ledger& ledger, Views& views, Projector& projector, ApiOptions options)
    : ledger_(ledger), views_(views), projector_(projector), options_(std::move(options)) {}

Api::~Api() { answers_.join(); }

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
  router.post("/v1/transactions/bank-transfer", bind(&Handlers::bank_transfer));
  router.post("/v1/collection-accounts", bind(&Handlers::create_collection));
  router.post("/v1/transit-accounts", bind(&Handlers::create_transit));
  router.get("/v1/transactions", bind(&Handlers::list_transactions));
  router.get("/v1/transactions/{id}", bind(&Handlers::get_transaction));
  router.get("/v1/transactions/{reference}/verify", bind(&Handlers::verify_transaction));
  router.post("/v1/sandbox/incoming-transfers", bind(&Handlers::incoming_transfer));
  router.get("/v1/transactions/banks", bind(&Handlers::list_banks));
  router.post("/v1/transactions/validate-account", bind(&Handlers::validate_account));
  router.post("/v1/bank-accounts", bind(&Handlers::add_bank_account));
  router.get("/v1/bank-accounts", bind(&Handlers::list_bank_accounts));
  router.get("/v1/bank-accounts/{id}", bind(&Handlers::get_bank_account));
  router.get("/v1/accounts", bind(&Handlers::list_accounts));
  router.patch("/v1/accounts/{id}", bind(&Handlers::update_account));
  router.post("/v1/admin/businesses", bind(&Handlers::create_business));
  if (options_.webhooks != nullptr) {
    router.get("/v1/webhook-deliveries", bind(&Handlers::list_webhook_deliveries));
    router.post("/v1/webhook-deliveries/{id}/retry", bind(&Handlers::retry_webhook_delivery));
  }

  add_operational_routes(router, [this]() -> std::string {
    if (auto fault = ledger_.fault(); !fault.empty()) return fault;
    if (auto fault = projector_.fault(); !fault.empty()) return fault;
    if (!caught_up()) return "the views have not caught up with the log yet";
    return {};
  });
}

void add_operational_routes(http::Router& router, std::function<std::string()> not_ready) {
  router.get("/healthz", [](Request&&, const PathParams&, Responder respond) {
    respond(Response{200, R"({"status":"ok"})", "application/json", {}});
  });
  router.get("/readyz", [not_ready = std::move(not_ready)](Request&&, const PathParams&, Responder respond) {
    const std::string reason = not_ready();
    if (reason.empty()) return respond(Response{200, R"({"status":"ready"})", "application/json", {}});
    respond(Response{503, json{{"status", "not ready"}, {"reason", reason}}.dump(), "application/json", {}});
  });
  router.get("/metrics", [](Request&&, const PathParams&, Responder respond) {
    respond(Response{200, metrics::registry().render(), "text/plain; version=0.0.4", {}});
  });
}

}  // namespace kobo
