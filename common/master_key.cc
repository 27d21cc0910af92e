#include "common/master_key.h"

#include <sys/stat.h>

#include <fstream>
#include <optional>
#include <sstream>

#include <openssl/crypto.h>

#include "common/file.h"

namespace kobo {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kWrapPrefix = "kw1.";

std::string as_text(const Sha256& d) {
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

// A key file's text without its trailing line break; nullopt when it cannot be read.
std::optional<std::string> read_key_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  std::string key = text.str();
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' ')) key.pop_back();
  return key;
}

// A key file others can read is a key others have: said, not refused (a container's secret
// mount may be 0644 inside a private file system).
void warn_if_readable_by_others(const fs::path& path, std::vector<std::string>& warnings) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 0077) != 0)
    warnings.push_back("the master key file " + path.string() +
                       " can be read by other users than its owner; make it mode 0600");
}

}  // namespace

LocalMasterKey::LocalMasterKey(std::string material)
    : material_(std::move(material)),
      kek_(as_text(hmac_sha256(material_, "kobo key wrap v1"))),
      id_("mk-" + to_hex(hmac_sha256(material_, "kobo master key id")).substr(0, 8)) {}

LocalMasterKey::~LocalMasterKey() {
  OPENSSL_cleanse(material_.data(), material_.size());
  OPENSSL_cleanse(kek_.data(), kek_.size());
}

Result<std::unique_ptr<LocalMasterKey>> LocalMasterKey::make(std::string material) {
  if (material.size() < kMasterKeyLengthMin)
    return Status::error("a master key has at least " + std::to_string(kMasterKeyLengthMin) +
                         " characters (make one with: head -c 32 /dev/urandom | xxd -p -c 64)");
  return std::unique_ptr<LocalMasterKey>(new LocalMasterKey(std::move(material)));
}

Result<std::string> LocalMasterKey::wrap(std::string_view plaintext, std::string_view context) const {
  std::string out(kWrapPrefix);
  out.append(id_).append(".").append(base64_encode(aes256gcm_seal(kek_, plaintext, context)));
  return out;
}

Result<std::string> LocalMasterKey::unwrap(std::string_view wrapped, std::string_view context) const {
  if (!wrapped.starts_with(kWrapPrefix)) return Status::error("not a wrapped key");
  wrapped.remove_prefix(kWrapPrefix.size());
  const auto dot = wrapped.find('.');
  if (dot == std::string_view::npos) return Status::error("not a wrapped key");
  const std::string_view under = wrapped.substr(0, dot);
  if (under != id_)
    return Status::error("wrapped under master key " + std::string(under) + ", but this node has " + id_);
  const auto sealed = base64_decode(wrapped.substr(dot + 1));
  if (!sealed) return Status::error("not a wrapped key");
  auto plaintext = aes256gcm_open(kek_, *sealed, context);
  if (!plaintext) return Status::error("a wrapped key does not open under " + id_ + " for its context");
  return std::move(*plaintext);
}

Result<Sha256> LocalMasterKey::mac(std::string_view data) const { return hmac_sha256(material_, data); }

Result<ResolvedMasterKey> resolve_master_key(const MasterKeySources& s) {
  ResolvedMasterKey out;
  const fs::path own = s.data_dir / kMasterKeyFileName;
  const fs::path legacy_file = s.data_dir / kLegacyWebhookSecretFileName;
  std::error_code ec;

  std::optional<std::string> configured;
  if (!s.file.empty() && !s.env.empty())
    return Status::error(
        "the master key is given twice (--master-key-file and KOBO_MASTER_KEY): give it once");
  if (!s.file.empty()) {
    configured = read_key_file(s.file);
    if (!configured) return Status::error("--master-key-file " + s.file.string() + " cannot be read");
    warn_if_readable_by_others(s.file, out.warnings);
    out.source = "file " + s.file.string();
  } else if (!s.env.empty()) {
    configured = s.env;
    out.source = "KOBO_MASTER_KEY";
  }
  if (!s.legacy.empty()) {
    if (configured && *configured != s.legacy)
      return Status::error(
          "--webhook-master-secret (KOBO_WEBHOOK_MASTER_SECRET) differs from the master key: the webhook "
          "secrets derive from the master key now. Drop --webhook-master-secret, or make it the master key "
          "to keep the accounts' webhook secrets");
    if (!configured) {
      configured = s.legacy;
      out.source = "--webhook-master-secret";
      out.warnings.push_back(
          "--webhook-master-secret (KOBO_WEBHOOK_MASTER_SECRET) is deprecated: it is the deployment's master "
          "key now; pass it as --master-key-file or KOBO_MASTER_KEY");
    }
  }

  if (configured) {
    // What this data dir sealed, or derived, under a key of its own must still open.
    for (const fs::path& held : {own, legacy_file}) {
      if (!fs::exists(held, ec)) continue;
      const auto text = read_key_file(held);
      if (text && *text == *configured) continue;
      return Status::error(
          "the data dir holds its own master key " + held.string() +
          ", and the configured one differs: what "
          "it sealed (the accounts' signing keys) and derived (their webhook secrets) would not open. Give "
          "this node that key (move the file out of the data dir and point --master-key-file at it), or use "
          "another data dir");
    }
    auto key = LocalMasterKey::make(std::move(*configured));
    if (!key) return key.status();
    out.key = std::move(key).value();
    return out;
  }

  // Nothing configured: the data dir's own key, made at its first start.
  if (!fs::exists(own, ec)) {
    if (fs::exists(legacy_file, ec)) {
      // An older kobo's webhook master secret becomes the master key: the accounts' webhook
      // secrets stay what they were.
      fs::rename(legacy_file, own, ec);
      if (ec)
        return Status::error("cannot rename " + legacy_file.string() + " to " + own.string() + ": " +
                             ec.message());
      if (auto synced = sync_directory(s.data_dir); !synced) return synced;
      out.warnings.push_back("adopted the webhook master secret of an older kobo as the master key: " +
                             legacy_file.string() + " is now " + own.string());
    } else {
      if (auto made = write_file_atomically(own, random_hex(32) + "\n", 0600); !made) return made;
      out.warnings.push_back("made a master key at " + own.string());
    }
  }
  auto text = read_key_file(own);
  if (!text) return Status::error("the master key " + own.string() + " cannot be read");
  warn_if_readable_by_others(own, out.warnings);
  out.warnings.push_back(
      "the master key is a file in the data dir: fine for one node you run yourself; production gives "
      "every node the same key from outside it (--master-key-file, KOBO_MASTER_KEY, or a key management "
      "service), docs/security.md");
  auto key = LocalMasterKey::make(std::move(*text));
  if (!key) return Status::error(own.string() + ": " + key.status().message());
  out.key = std::move(key).value();
  out.source = "file " + own.string();
  return out;
}

}  // namespace kobo
