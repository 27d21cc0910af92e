#pragma once
// The deployment's master key (docs/security.md, "Keys at rest"): the one secret every node of a
// deployment holds. What a node needs to sign webhooks is encrypted under it before it reaches the
// log (envelope encryption: each account's signing key is wrapped, the wrapped form travels in the
// events that create or roll keys), and the accounts' webhook secrets derive from it. Nothing a
// tenant could use rests in plaintext anywhere.
//
// MasterKey is the hook for a key management service: wrap, unwrap and mac are the three calls a
// KMS offers (Encrypt, Decrypt, GenerateMac), and nothing else of the service touches the key.
// LocalMasterKey implements them with a key given as a file or in the environment. Implementations
// are thread-safe and immutable once made.

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/crypto.h"
#include "common/result.h"

namespace kobo {

class MasterKey {
 public:
  virtual ~MasterKey() = default;
  // `plaintext` encrypted and bound to `context`: associated data, authenticated but neither
  // secret nor stored, so unwrap() must be given the same context. Printable ASCII.
  [[nodiscard]] virtual Result<std::string> wrap(std::string_view plaintext,
                                                 std::string_view context) const = 0;
  // The plaintext; an error (naming the key it was wrapped under when that is another) when
  // `wrapped` was not made by this key for this context, or was changed.
  [[nodiscard]] virtual Result<std::string> unwrap(std::string_view wrapped,
                                                   std::string_view context) const = 0;
  // HMAC-SHA256 of `data` under the master key: the secrets the deployment derives (webhook secrets).
  [[nodiscard]] virtual Result<Sha256> mac(std::string_view data) const = 0;
  // The key's name, not secret: "mk-" and 8 hex digits. A wrapped form carries it, so a node
  // given another key says which one it would need.
  virtual const std::string& id() const = 0;
};

// At least this many characters of key material (the generated key has 64 hex digits: 256 bits).
inline constexpr std::size_t kMasterKeyLengthMin = 32;

// The master key as a local secret: AES-256-GCM under a key-encryption key derived from the
// material (HMAC-SHA256(material, "kobo key wrap v1")), and mac() is HMAC-SHA256 with the material
// itself, so the webhook secrets a data dir derived from its webhook master secret stay the same
// once that secret is adopted as the master key. Wrapped form: `kw1.<id>.<base64 of nonce,
// ciphertext and tag>`.
class LocalMasterKey final : public MasterKey {
 public:
  // Refuses material shorter than kMasterKeyLengthMin.
  [[nodiscard]] static Result<std::unique_ptr<LocalMasterKey>> make(std::string material);
  ~LocalMasterKey() override;
  LocalMasterKey(const LocalMasterKey&) = delete;
  LocalMasterKey& operator=(const LocalMasterKey&) = delete;

  Result<std::string> wrap(std::string_view plaintext, std::string_view context) const override;
  Result<std::string> unwrap(std::string_view wrapped, std::string_view context) const override;
  Result<Sha256> mac(std::string_view data) const override;
  const std::string& id() const override { return id_; }

 private:
  explicit LocalMasterKey(std::string material);
  std::string material_;
  std::string kek_;  // 32 bytes
  std::string id_;
};

// Where a node's master key comes from (kobo serve --help, docs/security.md).
struct MasterKeySources {
  std::filesystem::path file;  // --master-key-file / KOBO_MASTER_KEY_FILE
  std::string env;             // KOBO_MASTER_KEY: the key itself
  std::string legacy;          // --webhook-master-secret / KOBO_WEBHOOK_MASTER_SECRET (deprecated alias)
  std::filesystem::path data_dir;
};

struct ResolvedMasterKey {
  std::unique_ptr<MasterKey> key;
  std::string source;                 // where it came from, for the log (never the key)
  std::vector<std::string> warnings;  // for the log: a generated or adopted key, a deprecated flag
};

// The data dir's own key file (made when no key is configured) and the webhook master secret an
// older kobo made there, which becomes the master key on the first start of this one.
inline constexpr std::string_view kMasterKeyFileName = "master-key";
inline constexpr std::string_view kLegacyWebhookSecretFileName = "webhook-master-secret";

// The master key, in this order: the file or the environment variable (never both), the
// deprecated --webhook-master-secret, else <data-dir>/master-key: an older data dir's
// webhook-master-secret renamed to it, or a new one (32 random bytes, hex, mode 0600) with a
// warning that production sets the key explicitly. A configured key that differs from a key file
// the data dir already holds is refused (what that data dir sealed would not open), as is one
// shorter than kMasterKeyLengthMin.
[[nodiscard]] Result<ResolvedMasterKey> resolve_master_key(const MasterKeySources& sources);

}  // namespace kobo
