#pragma once
// The answer protocol: what every route of the API shares, kept in one place apart from the
// routes themselves (query-api/routes/, one file per resource). A route handler authenticates
// the caller, validates the request, then either submits a command to the Ledger and answers
// from its Outcome, or reads the Views after the read barrier. Envelopes are envelope.h's;
// domain rejections are mapped to HTTP by rejection_response() (api.h), the one table, and a
// read of the views that fails is answered by unavailable(), never by aborting.
//
// Adding a resource (holds, statements, bulk transfers, events, …): write
// routes/<resource>.cc with its handlers as functions `(Protocol&, Request&&, const PathParams&,
// Responder)` and an add_<resource>_routes() that registers them with route(); declare that
// function at the end of this header, call it from Api::add_routes (api.cc) and list the file
// in query-api/CMakeLists.txt.
//
// Internal to query-api. Thread safety: as Api's (api.h). A Protocol holds no mutable state;
// answers that had to wait for the views are rendered on Api's thread pool, never on the
// writer's thread nor the projector's. It lives as long as the routes that hold it.

#include <boost/asio/thread_pool.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "command/ledger.h"
#include "projection/projector.h"
#include "projection/render.h"
#include "projection/views.h"
#include "query-api/api.h"
#include "query-api/name_enquiry.h"
#include "query-api/router.h"
#include "query-api/validation.h"

namespace kobo::api {

// Request limits more than one resource checks.
inline constexpr std::int64_t kAmountMax = 1'000'000'000'000;
inline constexpr std::size_t kNameLengthMax = 100;
inline constexpr std::size_t kTextLengthMax = 255;

// Who is calling, resolved from x-service-key. `caller.actor` is the key's id (events/keys.h).
struct Context {
  Caller caller;
  Scope scope;
  Partition partition{0};
};

using Continuation = std::function<void(http::Responder)>;

class Protocol {
 public:
  Protocol(Ledger& ledger, Views& views, Projector& projector, const ApiOptions& options,
           boost::asio::thread_pool& answers)
      : ledger_(ledger), views_(views), projector_(projector), options_(options), answers_(answers) {}

  Ledger& ledger() const { return ledger_; }
  Views& views() const { return views_; }
  const ApiOptions& options() const { return options_; }

  // Resolves the caller, or answers and returns nullopt: 401 for a missing, unknown, revoked or
  // expired key; 403 for a live key of an account not in live mode, and for any key of a
  // suspended business; 503 when the views cannot be read.
  std::optional<Context> authenticate(const http::Request& req, const http::Responder& respond) const;

  // Read barrier: `then` runs once the views have applied everything durable in the caller's
  // partition: at once on this thread when they have, else on Api's pool; 503 after the read
  // barrier's timeout. While the views cannot be written (a full disk) reads are served from them
  // as they are rather than refused (guarantee 8, docs/architecture.md section 2): they hold
  // everything applied before the fault, but not the writes answered since.
  void barrier(const Context& c, http::Responder respond, Continuation then);

  // Runs `then` on Api's pool once the views have applied the command's events (503 if they
  // do not within the read barrier's timeout).
  void after_projection(const Outcome& o, http::Responder respond, Continuation then);

  // Answers a command that created a record with that record, rendered by the views' renderer
  // (projection/render.h) from the command's events and the wallet facts the writer decided with
  // (Outcome::wallets), without waiting for the projector: the command is durable, and a GET
  // after the answer waits at the read barrier until the views show it, so it finds what the
  // answer showed. Rendered on Api's pool. `shown`: the status a created transaction shows in
  // the answer alone (a transfer answers `pending`, docs/architecture.md section 7).
  void answer_created(Outcome o, int status, std::string message, http::Responder respond,
                      std::optional<TransactionStatus> shown = std::nullopt);

  // Answers a command with what `make` makes of its events and the wallet facts the writer
  // decided with, as answer_created() does for one record: rendered on Api's pool, without
  // waiting for the projector.
  using Render = std::function<http::Response(const Outcome&, const render::RecordSource&)>;
  void answer_rendered(Outcome o, http::Responder respond, Render make);

  // The account a request's bankCode and accountNumber name, or nullopt once `respond` has the
  // 4xx (name_enquiry.h), or the 503 of a views read that failed. Reads the views (a wallet of ours): call it
  // after the read barrier.
  std::optional<ResolvedAccount> resolve(bool live, const std::string& bank_code,
                                         const std::string& account_number,
                                         const http::Responder& respond) const;

 private:
  // Calls `then(applied)` on Api's pool once the views have applied `seq` of partition p, or
  // with false after the read barrier's timeout. No thread is held while it waits: the
  // projector calls back (Projector::when_applied).
  void on_applied(Partition p, Seq seq, std::function<void(bool)> then);

  Ledger& ledger_;
  Views& views_;
  Projector& projector_;
  const ApiOptions& options_;
  boost::asio::thread_pool& answers_;
};

// ---- helpers the routes share ------------------------------------------------------------------

// The answer to a request that met an operating error it cannot get past (the views cannot be
// read): 503 `Service unavailable`, the answer of Rejection::unavailable. The error is logged,
// never shown to the client.
http::Response unavailable(const Status& error);

// The answer to a GET of one record the views hold as text: 200 with it, 404 `Data not found`
// when there is none in the caller's scope, unavailable() when it could not be read.
http::Response one_record(const Result<std::optional<std::string>>& text);

// The answer to an idempotent repeat, read once the views have the original command's events:
// the original record, 200 with `message` and `Idempotent-Replayed: true`; unavailable() when
// it could not be read.
http::Response replayed(const Result<std::optional<std::string>>& original, std::string_view message);

// A string member of a request body, or nullopt when it is absent or not a string.
std::optional<std::string> optional_string(const nlohmann::json& body, const char* name);
// A wallet's `kycTier` in a request body (extensions.md section 3): 1, 2, 3 or null (none). The
// creating routes declare it optional; `PATCH /v1/virtual-accounts/{id}` requires the member.
void check_kyc_tier(http::Validator& v, const nlohmann::json& body, bool required);
std::optional<std::uint64_t> kyc_tier_of(const nlohmann::json& body);
kobo::PageRequest to_page(const http::PageRequest& p);
// A page of the views as a list answer; unavailable() when it could not be read.
http::Response list(Result<Page> page, const http::PageRequest& request);

// A route's handler: a function of the protocol and the request.
using RouteFn = void (*)(Protocol&, http::Request&&, const http::PathParams&, http::Responder);
http::RouteHandler route(std::shared_ptr<Protocol> protocol, RouteFn fn);

// ---- the routes, one file per resource (routes/<resource>.cc) ----------------------------------

void add_account_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol);
void add_admin_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol);
void add_bank_account_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol);
void add_bulk_transfer_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol);
void add_collection_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol);
void add_hold_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol);
void add_event_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol);
void add_sandbox_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol);
void add_statement_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol);
void add_transaction_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol);
void add_transfer_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol);
void add_wallet_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol);
void add_webhook_delivery_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol);
void add_key_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol);

// Rolls `account`'s key of `caller`'s mode (routes/keys.cc): a new key, answered once (201, after
// the views have it, so it works as soon as it is shown), the current one accepted `overlap_s`
// more seconds. For the tenant's route and the admin's; `account` is of the caller's business.
void roll_secret_key(Protocol& p, Caller caller, std::string account, std::int64_t overlap_s,
                     http::Responder respond);
// Submits an account update and answers the account as the caller's mode shows it, once the
// views have it (routes/accounts.cc; the admin's live switch too).
void submit_update_account(Protocol& p, UpdateAccount cmd, http::Responder respond);

}  // namespace kobo::api
