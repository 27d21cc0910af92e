// webhook_signature, the signing keys, the Standard Webhooks signature and WebhookSecrets (webhooks.h).
#include "common/crypto.h"
#include "events/keys.h"
#include "webhooks/webhooks.h"

namespace kobo {

std::string webhook_signature(std::string_view secret_key, std::string_view body) {
  return hmac_sha512_hex(secret_key, body);
}

Result<std::string> wrap_signing_key(const MasterKey& master, std::string_view account, bool live,
                                     std::string_view secret_key) {
  return master.wrap(secret_key, signing_key_context(account, live, key_id_of_key(secret_key)));
}

Result<std::string> signing_key(const MasterKey& master, const Views& views, std::string_view account,
                                bool live) {
  const auto row = views.account_keys(account, live);
  if (!row) return row.status();
  if (!row.value() || row.value()->keys.empty() || row.value()->signing_key.empty())
    return Status::error("the account has no signing key sealed under the master key yet");
  const rows::AccountKeysRow& k = *row.value();
  return master.unwrap(k.signing_key,
                       signing_key_context(account, live, key_id_of_hash(k.keys.front().hash)));
}

namespace {
constexpr std::string_view kSecretPrefix = "whsec_";
}  // namespace

std::string standard_webhook_signature(std::string_view secret, std::string_view id, std::int64_t timestamp,
                                       std::string_view body) {
  KOBO_ASSERT(secret.starts_with(kSecretPrefix), "a webhook secret is whsec_…");
  const auto key = base64_decode(secret.substr(kSecretPrefix.size()));
  KOBO_ASSERT(key.has_value(), "a webhook secret is whsec_ + base64");
  std::string signed_content;
  signed_content.reserve(id.size() + 24 + body.size());
  signed_content.append(id).append(".").append(std::to_string(timestamp)).append(".").append(body);
  const Sha256 mac = hmac_sha256(*key, signed_content);
  return "v1," + base64_encode(std::string_view(reinterpret_cast<const char*>(mac.data()), mac.size()));
}

Result<std::string> WebhookSecrets::secret(std::string_view account, bool live,
                                           std::string_view rotation) const {
  std::string seed("kobo webhook secret|");
  seed.append(account).append(live ? "|live|" : "|test|").append(rotation);
  const auto key = master_.mac(seed);
  if (!key) return key.status();
  return std::string(kSecretPrefix) +
         base64_encode(
             std::string_view(reinterpret_cast<const char*>(key.value().data()), key.value().size()));
}

Result<std::string> WebhookSecrets::signatures(const rows::WebhookRow& row, std::string_view account,
                                               bool live, std::string_view id, UnixMs now,
                                               std::string_view body) const {
  if (row.secret.empty()) return std::string();
  const std::int64_t timestamp = now / 1000;
  const auto current = secret(account, live, row.secret);
  if (!current) return current.status();
  std::string out = standard_webhook_signature(current.value(), id, timestamp, body);
  const auto overlap = std::chrono::duration_cast<std::chrono::milliseconds>(kWebhookSecretOverlap).count();
  if (!row.previous.empty() && now < row.secret_at + overlap) {
    const auto previous = secret(account, live, row.previous);
    if (!previous) return previous.status();
    out.append(" ").append(standard_webhook_signature(previous.value(), id, timestamp, body));
  }
  return out;
}

}  // namespace kobo
