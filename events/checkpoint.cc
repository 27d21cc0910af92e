#include "events/checkpoint.h"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <array>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "common/crypto.h"

namespace kobo {
namespace {

constexpr std::size_t kKeyBytes = 32;
constexpr std::size_t kSignatureBytes = 64;

struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};

std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out(hex.size() / 2, '\0');
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int hi = digit(hex[2 * i]), lo = digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<char>(hi * 16 + lo);
  }
  KOBO_ASSERT(2 * out.size() == hex.size(), "two hex digits make a byte");
  return out;
}

std::string raw_public_key_hex(EVP_PKEY* key) {
  std::array<std::uint8_t, kKeyBytes> raw{};
  std::size_t size = raw.size();
  if (EVP_PKEY_get_raw_public_key(key, raw.data(), &size) != 1 || size != kKeyBytes) return {};
  std::string hex = to_hex(raw.data(), raw.size());
  KOBO_ASSERT(hex.size() == 2 * kKeyBytes, "a public key is named by the hex of its 32 bytes");
  return hex;
}

Pkey read_pem_private(std::string_view pem) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return nullptr;
  return Pkey(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

class KeyFileSigner final : public CheckpointSigner {
 public:
  KeyFileSigner(Pkey key, std::string public_key) : key_(std::move(key)), public_key_(std::move(public_key)) {
    KOBO_ASSERT(key_ != nullptr && EVP_PKEY_id(key_.get()) == EVP_PKEY_ED25519,
                "a signer holds an Ed25519 private key");
    KOBO_ASSERT(public_key_.size() == 2 * kKeyBytes, "a signer knows its public key as 64 hex digits");
  }
  const std::string& public_key() const override {
    KOBO_ASSERT(public_key_.size() == 2 * kKeyBytes, "a checkpoint names its key by 64 hex digits");
    return public_key_;
  }
  Result<std::string> sign(std::string_view message) override {
    std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
    std::array<std::uint8_t, kSignatureBytes> sig{};
    std::size_t size = sig.size();
    if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) != 1 ||
        EVP_DigestSign(ctx.get(), sig.data(), &size, reinterpret_cast<const unsigned char*>(message.data()),
                       message.size()) != 1 ||
        size != kSignatureBytes)
      return Status::error("the writer key could not sign a checkpoint");
    std::string hex = to_hex(sig.data(), sig.size());
    // validate() refuses a checkpoint whose signature is not 128 hex digits.
    KOBO_ASSERT(hex.size() == 2 * kSignatureBytes, "a signature is the hex of its 64 bytes");
    return hex;
  }

 private:
  Pkey key_;
  std::string public_key_;
};

Result<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool is_key_hex(std::string_view s) { return s.size() == 2 * kKeyBytes && from_hex(s).has_value(); }

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  KOBO_ASSERT(s.empty() || (std::isspace(static_cast<unsigned char>(s.front())) == 0 &&
                            std::isspace(static_cast<unsigned char>(s.back())) == 0),
              "what is trimmed neither starts nor ends with white space");
  return s;
}

}  // namespace

Result<std::shared_ptr<CheckpointSigner>> open_key_file_signer(const std::filesystem::path& pem) {
  auto text = read_file(pem);
  if (!text) return text.status();
  Pkey key = read_pem_private(text.value());
  if (!key || EVP_PKEY_id(key.get()) != EVP_PKEY_ED25519)
    return Status::error(pem.string() + " holds no Ed25519 private key in PEM");
  std::string pub = raw_public_key_hex(key.get());
  if (pub.empty()) return Status::error(pem.string() + ": the key's public half cannot be read");
  KOBO_ASSERT(is_key_hex(pub), "a key's public half is read as 64 hex digits");
  return std::shared_ptr<CheckpointSigner>(std::make_shared<KeyFileSigner>(std::move(key), std::move(pub)));
}

std::string new_ed25519_private_key_pem() {
  EVP_PKEY* raw = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  KOBO_ASSERT(raw != nullptr, "OpenSSL generates an Ed25519 key");
  Pkey key(raw);
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  KOBO_ASSERT(
      bio && PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) == 1,
      "a key in memory is written as PEM");
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  KOBO_ASSERT(data != nullptr && size > 0, "a key written as PEM is some text");
  return std::string(data, static_cast<std::size_t>(size));
}

Result<std::string> public_key_of_pem(std::string_view private_key_pem) {
  Pkey key = read_pem_private(private_key_pem);
  if (!key || EVP_PKEY_id(key.get()) != EVP_PKEY_ED25519) return Status::error("not an Ed25519 private key");
  std::string pub = raw_public_key_hex(key.get());
  KOBO_ASSERT(pub.empty() || is_key_hex(pub), "a key's public half is 64 hex digits, or unreadable");
  return pub;
}

Result<std::string> read_public_key(std::string_view file_or_text) {
  std::string text(trimmed(file_or_text));
  if (!is_key_hex(text) && text.find("-----BEGIN") == std::string::npos) {
    auto content = read_file(std::filesystem::path(text));
    if (!content)
      return Status::error("the key is neither 64 hex digits, a PEM public key nor a readable file");
    text = std::string(trimmed(content.value()));
  }
  if (is_key_hex(text)) return text;
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  Pkey key(bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key || EVP_PKEY_id(key.get()) != EVP_PKEY_ED25519)
    return Status::error("no Ed25519 public key (64 hex digits or PEM) in what was given");
  std::string pub = raw_public_key_hex(key.get());
  KOBO_ASSERT(pub.empty() || is_key_hex(pub), "a public key is read as 64 hex digits, or unreadable");
  return pub;
}

std::string checkpoint_message(const Event& e, const ChainCheckpointed& c) {
  KOBO_ASSERT(e.seq.value >= 1, "a checkpoint has a place in the chain");
  std::string m = "kobo-ledger checkpoint v1\n";
  m += "log " + c.log + "\n";
  m += "partition " + std::to_string(e.partition.value) + "\n";
  m += "epoch " + std::to_string(e.epoch.value) + "\n";
  m += "seq " + std::to_string(e.seq.value - 1) + "\n";
  m += "hash " + e.prev_hash + "\n";
  m += "time " + std::to_string(e.time) + "\n";
  m += "key " + c.key + "\n";
  m += "next " + c.next_key.value_or("") + "\n";
  KOBO_ASSERT(m.size() > e.prev_hash.size() + c.log.size() + c.key.size() && m.back() == '\n',
              "what a checkpoint signs is its lines, each ended");
  return m;
}

Status sign_checkpoint(CheckpointSigner& signer, Event& e) {
  auto* c = std::get_if<ChainCheckpointed>(&e.data);
  KOBO_ASSERT(c != nullptr, "only a checkpoint is signed");
  KOBO_ASSERT(e.command_seq == e.seq && e.command_size == 1, "a checkpoint is a command of its own");
  c->key = signer.public_key();
  auto sig = signer.sign(checkpoint_message(e, *c));
  if (!sig) return sig.status();
  c->signature = std::move(sig).value();
  KOBO_ASSERT(c->key == signer.public_key() && !c->signature.empty(),
              "a signed checkpoint names its signer's key");
  return {};
}

bool checkpoint_verifies(const Event& e, const ChainCheckpointed& c, std::string_view public_key) {
  const auto key_bytes = from_hex(public_key);
  const auto sig_bytes = from_hex(c.signature);
  if (!key_bytes || key_bytes->size() != kKeyBytes || !sig_bytes || sig_bytes->size() != kSignatureBytes)
    return false;
  KOBO_ASSERT(key_bytes->size() == kKeyBytes && sig_bytes->size() == kSignatureBytes,
              "a key and a signature are checked at their sizes");
  if (c.key != public_key) return false;
  Pkey key(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                       reinterpret_cast<const unsigned char*>(key_bytes->data()), kKeyBytes));
  if (!key) return false;
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  const std::string message = checkpoint_message(e, c);
  return ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) == 1 &&
         EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig_bytes->data()),
                          sig_bytes->size(), reinterpret_cast<const unsigned char*>(message.data()),
                          message.size()) == 1;
}

}  // namespace kobo
