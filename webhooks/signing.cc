// webhook_signature, SigningKeyStore, the Standard Webhooks signature and WebhookSecrets (webhooks.h).
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/crypto.h"
#include "common/file.h"
#include "webhooks/webhooks.h"

namespace kobo {

namespace fs = std::filesystem;
using nlohmann::json;

std::string webhook_signature(std::string_view secret_key, std::string_view body) {
  return hmac_sha512_hex(secret_key, body);
}

namespace {

// Account ids are "acc-" + a UUID; anything else must never become a path.
bool safe_file_name(std::string_view account) {
  if (account.empty() || account.size() > 64) return false;
  for (char c : account)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return true;
}

}  // namespace

Result<std::unique_ptr<SigningKeyStore>> SigningKeyStore::open(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::error("create " + dir + ": " + ec.message());
  if (::chmod(dir.c_str(), 0700) != 0) return Status::error("chmod 0700 " + dir);
  return std::unique_ptr<SigningKeyStore>(new SigningKeyStore(dir));
}

Status SigningKeyStore::put(std::string_view account, std::string_view test_secret_key,
                            std::string_view live_secret_key) {
  KOBO_ASSERT(safe_file_name(account), "signing keys are stored for account ids only");
  const std::string text = json{{"test", test_secret_key}, {"live", live_secret_key}}.dump() + "\n";
  return write_file_atomically(fs::path(dir_) / (std::string(account) + ".json"), text, 0600);
}

std::optional<std::string> SigningKeyStore::get(std::string_view account, bool live) const {
  if (!safe_file_name(account)) return std::nullopt;
  std::ifstream in(fs::path(dir_) / (std::string(account) + ".json"));
  if (!in) return std::nullopt;
  const json j = json::parse(in, nullptr, false);
  const char* mode = live ? "live" : "test";
  if (!j.is_object() || !j.contains(mode) || !j.at(mode).is_string()) return std::nullopt;
  return j.at(mode).get<std::string>();
}

namespace {
constexpr std::string_view kSecretPrefix = "whsec_";
constexpr std::size_t kMasterSecretLengthMin = 32;
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

Result<std::unique_ptr<WebhookSecrets>> WebhookSecrets::open(const std::string& path,
                                                             const std::optional<std::string>& configured) {
  if (configured) {
    if (configured->size() < kMasterSecretLengthMin)
      return Status::error("--webhook-master-secret must have at least 32 characters");
    return std::unique_ptr<WebhookSecrets>(new WebhookSecrets(*configured));
  }
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    if (auto s = write_file_atomically(path, random_hex(32) + "\n", 0600); !s) return s;
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string master = text.str();
  while (!master.empty() && (master.back() == '\n' || master.back() == '\r')) master.pop_back();
  if (!in || master.size() < kMasterSecretLengthMin)
    return Status::error("the webhook master secret " + path +
                         " cannot be read or is shorter than 32 characters");
  return std::unique_ptr<WebhookSecrets>(new WebhookSecrets(std::move(master)));
}

std::string WebhookSecrets::secret(std::string_view account, bool live, std::string_view rotation) const {
  std::string seed("kobo webhook secret|");
  seed.append(account).append(live ? "|live|" : "|test|").append(rotation);
  const Sha256 key = hmac_sha256(master_, seed);
  return std::string(kSecretPrefix) +
         base64_encode(std::string_view(reinterpret_cast<const char*>(key.data()), key.size()));
}

std::string WebhookSecrets::signatures(const rows::WebhookRow& row, std::string_view account, bool live,
                                       std::string_view id, UnixMs now, std::string_view body) const {
  if (row.secret.empty()) return {};
  const std::int64_t timestamp = now / 1000;
  std::string out = standard_webhook_signature(secret(account, live, row.secret), id, timestamp, body);
  const auto overlap = std::chrono::duration_cast<std::chrono::milliseconds>(kWebhookSecretOverlap).count();
  if (!row.previous.empty() && now < row.secret_at + overlap)
    out.append(" ").append(
        standard_webhook_signature(secret(account, live, row.previous), id, timestamp, body));
  return out;
}

}  // namespace kobo
