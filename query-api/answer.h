#pragma once
// The answer protocol: what the steps of every route share (route.h runs them), kept apart from
// the routes themselves (query-api/routes/, one file per resource): who the caller is, the read
// barrier, answers rendered once the views have a command's events, and 503 for a views read
// that fails. Envelopes are envelope.h's; domain rejections are mapped to HTTP by
// rejection_response() (rejections.h), the one table, and a read of the views that fails is
// answered by unavailable(), never by aborting.
//
// Internal to query-api. Thread safety: as Api's (api.h). A Protocol holds no mutable state;
// answers that had to wait for the views, and reads that do real work, run on Api's thread pool,
// never on the writer's thread nor the projector's. It lives as long as the routes that hold it.

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
#include "query-api/message.h"
#include "query-api/name_enquiry.h"
#include "query-api/options.h"
#include "query-api/validation.h"

namespace kobo::api {

// The longest x-service-key header read as a key (ours are 48 characters).
inline constexpr std::size_t kApiKeyLengthMax = 128;

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

  // Where a continuation runs: on the calling thread, or on Api's pool (off the HTTP I/O threads).
  enum class Where { here, pool };
  // Runs `then` with `respond`, where asked.
  void run(Where where, http::Responder respond, Continuation then);

  // Resolves the caller, or answers and returns nullopt: 401 for a missing, unknown, revoked or
  // expired key (one longer than kApiKeyLengthMax is no key); 403 for a live key of an account not in live
  // mode, and for any key of a suspended business; 503 when the views cannot be read.
  std::optional<Context> authenticate(const http::Request& req, const http::Responder& respond) const;

  // Read barrier: `then` runs once the views have applied everything durable in the caller's
  // partition: at once when they have (on this thread, or on Api's pool with Where::pool), else
  // on Api's pool; 503 after the read barrier's timeout. While the views cannot be written (a
  // full disk) reads are served from them as they are rather than refused (guarantee 8,
  // docs/architecture.md section 2): they hold everything applied before the fault, but not the
  // writes answered since.
  void barrier(const Context& c, http::Responder respond, Continuation then, Where where = Where::here);

  // Runs `then` on Api's pool once the views have applied the command's events (503 if they
  // do not within the read barrier's timeout).
  void after_projection(const Outcome& o, http::Responder respond, Continuation then);

  // Answers a command that created a record with that record, rendered by the views' renderer
  // (projection/render.h) from the command's events and the wallet facts the writer decided with
  // (Outcome::wallets), without waiting for the projector: the command is durable, and a GET
  // after the answer waits at the read barrier until the views show it, so it finds what the
  // answer showed. Rendered by the connection's thread as it writes the answer (http::Response's
  // `render`). `shown`: the status a created transaction shows in the answer alone (a transfer
  // answers `pending`, docs/architecture.md section 7).
  void answer_created(Outcome o, int status, std::string message, http::Responder respond,
                      std::optional<TransactionStatus> shown = std::nullopt);

  // Answers a command with what `make` makes of its events and the wallet facts the writer
  // decided with, as answer_created() does for one record, without waiting for the projector:
  // rendered on Api's pool, as a bulk's answer can be large enough to hold a connection's
  // thread (and its other connections) for milliseconds.
  using Render = std::function<http::Response(const Outcome&, const render::RecordSource&)>;
  void answer_rendered(Outcome o, http::Responder respond, Render make);

  // Runs `first` here and `second` on Api's pool at once, and returns when both have: two halves
  // of one answer (a large bulk transfer's). Never waits for a pool thread: when none has taken
  // `second` by the time `first` is done, this thread runs it too.
  void in_parallel(const std::function<void()>& first, const std::function<void()>& second) const;

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
// A wallet's `kycTier` in a request body (docs/architecture.md, KYC tiers): 1, 2, 3 or null (none). The
// creating routes declare it optional; `PATCH /v1/virtual-accounts/{id}` requires the member.
void check_kyc_tier(http::Validator& v, const nlohmann::json& body, bool required);
std::optional<std::uint64_t> kyc_tier_of(const nlohmann::json& body);
kobo::PageRequest to_page(const http::PageRequest& p);
// A page of the views as a list answer, its records' texts spliced into it; unavailable() when it
// could not be read.
http::Response list(const Result<Page>& page, const http::PageRequest& request);

}  // namespace kobo::api
