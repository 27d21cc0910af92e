#pragma once
// Webhooks: signed, retried, durable delivery of account events (docs/architecture.md section 7,
// "Webhooks").
//
// Webhooks is one more reader of the event log. Its consumer thread follows the log with a
// LogFollower from positions kept in its own RocksDB (<data-dir>/webhooks), and for every
// transaction that reaches a final state it records one Delivery per URL of the owning account,
// in the same WriteBatch as the positions that cover the event: a crash neither repeats nor
// skips the recording. The body (`{"event","data"}`, data = the Transaction as GET
// /v1/transactions/{id} shows it, read from the views once the projector has applied the event)
// is frozen when the delivery is recorded, so every attempt sends the same bytes.
//
// A sender (one io_context thread) attempts due deliveries with bounded concurrency overall and
// per endpoint, a deadline per attempt, no redirects and a capped response, and records each
// attempt; failures are retried on the RetrySchedule. Delivery is at least once: an attempt cut
// short by a crash is made again after the restart.
//
// Signing keys: x-kobo-signature is keyed with the account's secret key itself (the contract
// with receivers), yet no secret key rests in plaintext anywhere. The events that create or roll
// a key carry it wrapped under the deployment's master key (common/master_key.h, events/keys.h);
// the views keep the current one per account and mode (rows::AccountKeysRow), and an attempt
// unwraps it, signs, and forgets it. So every node that has the master key signs for every
// business, and a node's disk or the log alone opens nothing.
//
// Thread safety: Webhooks' public methods may be called from any thread. Lifecycle: open()
// (reads only the delivery database, so a node starts in a broker outage), start() (a new
// delivery database first skips to the log's end; a start that failed may be called again),
// stop() (or the destructor). It must not outlive the EventLog, Views, Projector, MasterKey and
// WebhookSecrets it was opened over.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/master_key.h"
#include "common/result.h"
#include "events/event_log.h"
#include "projection/projector.h"
#include "projection/rows.h"
#include "projection/views.h"
#include "webhooks/policy.h"

namespace kobo {

// ---- signing ----------------------------------------------------------------------------------

// The x-kobo-signature of `body`: hex HMAC-SHA512 of the exact bytes, keyed with `secret_key`.
std::string webhook_signature(std::string_view secret_key, std::string_view body);

// The secret key `secret_key` wrapped for signing the webhooks of `account` in mode `live`
// (events/keys.h signing_key_context): what the events that create or roll a key carry.
[[nodiscard]] Result<std::string> wrap_signing_key(const MasterKey& master, std::string_view account,
                                                   bool live, std::string_view secret_key);
// The account's current secret key of mode `live`, unwrapped from the views' row: an error when
// the account has none sealed yet or it does not open under `master` (another deployment's key).
[[nodiscard]] Result<std::string> signing_key(const MasterKey& master, const Views& views,
                                              std::string_view account, bool live);

// Standard Webhooks (docs/webhooks.md): every delivery also carries webhook-id, webhook-timestamp
// and webhook-signature, `v1,` + base64 of HMAC-SHA256 over `{id}.{timestamp}.{body}` keyed with
// the bytes of the base64 after `whsec_` of the account's webhook secret of the event's mode.
//
// Where the secrets live: nowhere. The log records that a secret was issued or rotated
// (WebhookSecretRotated: account, mode, time, and its hash names the rotation); the secret is
// derived from that rotation with the deployment's master key (MasterKey::mac), which only the
// service's nodes hold, so the log never holds a key, every node that delivers signs alike after
// a restart or a replay, and an attempt uses the secret current when it is made. An account that
// was never issued a secret gets no webhook-signature (nobody could check one).

// How long after a rotation deliveries are signed with the previous secret too.
inline constexpr std::chrono::hours kWebhookSecretOverlap{24};

// `v1,` + base64(HMAC-SHA256(key, `{id}.{timestamp}.{body}`)), key the bytes of the base64 after
// `whsec_` in `secret`.
std::string standard_webhook_signature(std::string_view secret, std::string_view id, std::int64_t timestamp,
                                       std::string_view body);

// The account's secret of one mode in one rotation: which secret is current, and since when, is
// in the views (rows::WebhookRow). Thread-safe (immutable).
class WebhookSecrets {
 public:
  explicit WebhookSecrets(const MasterKey& master) : master_(master) {}
  // `whsec_` + base64 of HMAC-SHA256(master, `kobo webhook secret|account|mode|rotation`): the
  // secret issued by the WebhookSecretRotated event whose hash is `rotation`. An error only when
  // the master key cannot be used (a key management service that does not answer).
  [[nodiscard]] Result<std::string> secret(std::string_view account, bool live,
                                           std::string_view rotation) const;
  // The webhook-signature header of an attempt made at `now` (its timestamp): the current
  // secret's signature, then the previous one's within kWebhookSecretOverlap of the rotation,
  // space-separated; empty when the account has no secret in that mode yet.
  [[nodiscard]] Result<std::string> signatures(const rows::WebhookRow& row, std::string_view account,
                                               bool live, std::string_view id, UnixMs now,
                                               std::string_view body) const;

 private:
  const MasterKey& master_;
};

// ---- deliveries -------------------------------------------------------------------------------

struct WebhookOptions {
  RetrySchedule schedule;
  std::chrono::milliseconds timeout{10'000};   // one attempt: resolve, connect, TLS, send, answer
  bool allow_private = false;                  // --webhook-allow-private (tests, private networks)
  std::uint32_t concurrency_max = 64;          // attempts in flight overall
  std::uint32_t endpoint_concurrency_max = 4;  // attempts in flight per host:port
  std::size_t poll_records_max = 4096;         // log records per consumer step
  // A cluster node (docs/webhooks.md, "In a cluster"): whether this node sends the deliveries of
  // partition p's events, which it does while it writes p; null: every partition's (one node).
  std::function<bool(Partition)> sends;
  // Where deliveries that ended here (succeeded, or failed for good) are reported, at most every
  // scheduling pass, for the log (command EndWebhookDeliveries), so that the partition's next
  // writer does not send them again; null: not reported (one node).
  std::function<void(Partition, std::vector<WebhookDeliveryEnded>)> ended;
};

struct DeliveryFilter {
  std::optional<DeliveryStatus> status;
};

class Webhooks {
 public:
  // Opens (creating) the delivery database at `path`. A new database starts at the log's end:
  // turning webhooks on for an existing log does not send its history.
  [[nodiscard]] static Result<std::unique_ptr<Webhooks>> open(const std::string& path, EventLog& log,
                                                              Views& views, Projector& projector,
                                                              const MasterKey& master,
                                                              const WebhookSecrets& secrets,
                                                              WebhookOptions options = {});
  ~Webhooks();
  Webhooks(const Webhooks&) = delete;
  Webhooks& operator=(const Webhooks&) = delete;

  [[nodiscard]] Status start();
  void stop();
  // False once the consumer stopped on a log it cannot accept or a database it cannot write, and
  // while it starts again after a read that failed (the log's, the views' or its own database's):
  // every second, from the positions its database holds, until it goes on.
  bool healthy() const;
  // Why deliveries are paused by a read that failed ("webhooks paused: …"), or "" while none
  // is: for /readyz. It clears itself once the read succeeds again.
  std::string fault() const;

  // A business's deliveries in one mode, newest first, as the API shows them (the README lists
  // the fields); an error when the delivery database cannot be read.
  [[nodiscard]] Result<Page> deliveries(const Scope& scope, const DeliveryFilter& filter,
                                        const PageRequest& page) const;

  // Why `url` can never be delivered to, judged without DNS: its host is a literal address that
  // is not public and private addresses are not allowed. For rejecting such a URL when it is
  // set; the check after resolving is the one that guards.
  std::optional<std::string> refused_url(std::string_view url) const;

  enum class RetryOutcome {
    queued,
    not_found,
    in_progress,
    unavailable
  };  // unavailable: the delivery cannot be read or recorded (an I/O error, a full disk)
  // Makes the delivery due now (one more attempt, whatever its status). `record` is the
  // delivery as it is after the change, as the API shows it (its JSON text).
  RetryOutcome retry(const Scope& scope, std::string_view id, std::string* record);

 private:
  class Impl;
  explicit Webhooks(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kobo
