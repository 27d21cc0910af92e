// webhook_signature and SigningKeyStore (webhooks.h).
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

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

}  // namespace kobo
