#include "common/crypto.h"

#include <algorithm>
#include <array>
#include <cstring>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "common/assert.h"
#include "common/sha256_stream.h"

namespace kobo {

namespace {

// OpenSSL 3 looks EVP_sha256() up in its provider tables on every EVP_DigestInit_ex; fetched once
// and kept, the digest costs only itself (the writer seals, and every reader verifies, each event).
const EVP_MD* sha256_md() {
  static EVP_MD* const md = [] {
    EVP_MD* m = EVP_MD_fetch(nullptr, "SHA2-256", nullptr);
    KOBO_ASSERT(m != nullptr, "EVP_MD_fetch(SHA2-256)");
    return m;
  }();
  return md;
}

// One digest context per thread, reset by each EVP_DigestInit_ex2.
EVP_MD_CTX* thread_digest_context() {
  struct Context {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    ~Context() { EVP_MD_CTX_free(ctx); }
  };
  thread_local Context c;
  KOBO_ASSERT(c.ctx != nullptr, "EVP_MD_CTX_new");
  return c.ctx;
}

}  // namespace

Sha256 sha256(std::string_view data) { return sha256({data}); }

Sha256 sha256(std::string_view a, std::string_view b) { return sha256({a, b}); }

Sha256 sha256(std::initializer_list<std::string_view> parts) {
  Sha256 out{};
  EVP_MD_CTX* ctx = thread_digest_context();
  bool ok = EVP_DigestInit_ex2(ctx, sha256_md(), nullptr) == 1;
  for (std::string_view part : parts) ok = ok && EVP_DigestUpdate(ctx, part.data(), part.size()) == 1;
  unsigned int len = 0;
  ok = ok && EVP_DigestFinal_ex(ctx, out.data(), &len) == 1;
  KOBO_ASSERT(ok && len == out.size(), "SHA-256 failed");
  return out;
}

std::string sha256_hex(std::string_view data) { return to_hex(sha256(data)); }

Sha256Stream::Sha256Stream() : ctx_(EVP_MD_CTX_new()) {
  KOBO_ASSERT(ctx_ != nullptr, "EVP_MD_CTX_new");
  const bool ok = EVP_DigestInit_ex2(static_cast<EVP_MD_CTX*>(ctx_), sha256_md(), nullptr) == 1;
  KOBO_ASSERT(ok, "SHA-256 init");
}

Sha256Stream::~Sha256Stream() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256Stream::update(std::string_view piece) {
  KOBO_ASSERT(!finished_, "a finished digest takes no more bytes");
  const bool ok = EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), piece.data(), piece.size()) == 1;
  KOBO_ASSERT(ok, "SHA-256 update");
}

Sha256 Sha256Stream::finish() {
  KOBO_ASSERT(!finished_, "a digest is finished once");
  finished_ = true;
  Sha256 out{};
  unsigned int len = 0;
  const bool ok = EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), out.data(), &len) == 1;
  KOBO_ASSERT(ok && len == out.size(), "SHA-256 final");
  return out;
}

std::string hmac_sha512_hex(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const unsigned char* r = HMAC(EVP_sha512(), key.data(), static_cast<int>(key.size()),
                                reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  KOBO_ASSERT(r != nullptr && len == 64, "HMAC-SHA512 failed");
  return to_hex(out, len);
}

Sha256 hmac_sha256(std::string_view key, std::string_view data) {
  Sha256 out{};
  unsigned int len = 0;
  const unsigned char* r =
      HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(), &len);
  KOBO_ASSERT(r != nullptr && len == out.size(), "HMAC-SHA256 failed");
  return out;
}

namespace {

struct CipherContext {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  ~CipherContext() { EVP_CIPHER_CTX_free(ctx); }
  CipherContext() { KOBO_ASSERT(ctx != nullptr, "EVP_CIPHER_CTX_new"); }
  CipherContext(const CipherContext&) = delete;
  CipherContext& operator=(const CipherContext&) = delete;
};

constexpr int kGcmNonceBytes = 12;
constexpr int kGcmTagBytes = 16;

const unsigned char* bytes_of(std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); }

}  // namespace

std::string aes256gcm_seal(std::string_view key, std::string_view plaintext, std::string_view aad) {
  KOBO_ASSERT(key.size() == kAes256GcmKeyBytes, "AES-256-GCM takes a 32-byte key");
  std::string out(kGcmNonceBytes + plaintext.size() + kGcmTagBytes, '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  random_bytes(o, kGcmNonceBytes);
  CipherContext c;
  int len = 0;
  bool ok = EVP_EncryptInit_ex2(c.ctx, EVP_aes_256_gcm(), bytes_of(key), o, nullptr) == 1;
  ok = ok && EVP_EncryptUpdate(c.ctx, nullptr, &len, bytes_of(aad), static_cast<int>(aad.size())) == 1;
  ok = ok && EVP_EncryptUpdate(c.ctx, o + kGcmNonceBytes, &len, bytes_of(plaintext),
                               static_cast<int>(plaintext.size())) == 1;
  ok = ok && static_cast<std::size_t>(len) == plaintext.size();
  ok = ok && EVP_EncryptFinal_ex(c.ctx, o + kGcmNonceBytes + len, &len) == 1 && len == 0;
  ok = ok && EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_GET_TAG, kGcmTagBytes,
                                 o + kGcmNonceBytes + plaintext.size()) == 1;
  KOBO_ASSERT(ok, "AES-256-GCM encryption failed");
  return out;
}

std::optional<std::string> aes256gcm_open(std::string_view key, std::string_view sealed,
                                          std::string_view aad) {
  KOBO_ASSERT(key.size() == kAes256GcmKeyBytes, "AES-256-GCM takes a 32-byte key");
  if (sealed.size() < kAes256GcmOverheadBytes) return std::nullopt;
  const std::size_t size = sealed.size() - kAes256GcmOverheadBytes;
  const auto* in = bytes_of(sealed);
  std::string out(size, '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  // The tag is only read, but OpenSSL's control call takes it as a mutable pointer.
  std::array<unsigned char, kGcmTagBytes> tag{};
  std::memcpy(tag.data(), in + kGcmNonceBytes + size, tag.size());
  CipherContext c;
  int len = 0;
  bool ok = EVP_DecryptInit_ex2(c.ctx, EVP_aes_256_gcm(), bytes_of(key), in, nullptr) == 1;
  ok = ok && EVP_DecryptUpdate(c.ctx, nullptr, &len, bytes_of(aad), static_cast<int>(aad.size())) == 1;
  ok = ok && EVP_DecryptUpdate(c.ctx, o, &len, in + kGcmNonceBytes, static_cast<int>(size)) == 1;
  ok = ok && EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_TAG, kGcmTagBytes, tag.data()) == 1;
  // The tag is checked here: a changed byte, another key or other associated data fail.
  ok = ok && EVP_DecryptFinal_ex(c.ctx, o + len, &len) == 1;
  if (!ok) {
    OPENSSL_cleanse(out.data(), out.size());
    return std::nullopt;
  }
  return out;
}

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  KOBO_ASSERT(n >= 0, "base64 encoding failed");
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  for (char c : text)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
          c == '/' || c == '='))
      return std::nullopt;
  std::string out(3 * (text.size() / 4), '\0');
  const int n =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts the padding's bytes as data: take them off.
  std::size_t size = static_cast<std::size_t>(n);
  if (text.ends_with("=="))
    size -= 2;
  else if (text.ends_with("="))
    size -= 1;
  out.resize(size);
  return out;
}

std::string to_hex(const std::uint8_t* data, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(size * 2, '0');
  for (std::size_t i = 0; i < size; ++i) {
    s[2 * i] = kDigits[data[i] >> 4];
    s[2 * i + 1] = kDigits[data[i] & 0xf];
  }
  return s;
}

// Drawn from RAND_bytes a page at a time: one DRBG call per id costs more than the id. Bytes
// are handed out once and the page is wiped as it is used up.
void random_bytes(std::uint8_t* out, std::size_t n) {
  struct Pool {
    std::array<unsigned char, 4096> bytes{};
    std::size_t used = 4096;
    ~Pool() { OPENSSL_cleanse(bytes.data(), bytes.size()); }
  };
  thread_local Pool pool;
  while (n > 0) {
    if (pool.used == pool.bytes.size()) {
      const int filled = RAND_bytes(pool.bytes.data(), static_cast<int>(pool.bytes.size()));
      KOBO_ASSERT(filled == 1, "RAND_bytes failed");
      pool.used = 0;
    }
    const std::size_t take = std::min(n, pool.bytes.size() - pool.used);
    std::memcpy(out, pool.bytes.data() + pool.used, take);
    OPENSSL_cleanse(pool.bytes.data() + pool.used, take);
    pool.used += take;
    out += take;
    n -= take;
  }
}

std::string random_hex(std::size_t bytes) {
  std::string raw(bytes, '\0');
  random_bytes(reinterpret_cast<std::uint8_t*>(raw.data()), bytes);
  return to_hex(reinterpret_cast<const std::uint8_t*>(raw.data()), raw.size());
}

std::string uuid_v4() {
  UuidBytes b;
  random_bytes(b.data(), b.size());
  b[6] = static_cast<std::uint8_t>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<std::uint8_t>((b[8] & 0x3f) | 0x80);
  return format_uuid(b);
}

std::string format_uuid(const UuidBytes& b) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(36, '-');
  std::size_t at = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) ++at;  // the dashes of 8-4-4-4-12
    s[at++] = kDigits[b[i] >> 4];
    s[at++] = kDigits[b[i] & 0xf];
  }
  return s;
}

namespace {
// Each character's value as a lowercase hex digit; -1 for every other character.
constexpr std::array<std::int8_t, 256> kHexDigit = [] {
  std::array<std::int8_t, 256> t{};
  t.fill(-1);
  for (int c = '0'; c <= '9'; ++c) t[static_cast<std::size_t>(c)] = static_cast<std::int8_t>(c - '0');
  for (int c = 'a'; c <= 'f'; ++c) t[static_cast<std::size_t>(c)] = static_cast<std::int8_t>(c - 'a' + 10);
  return t;
}();
}  // namespace

std::optional<UuidBytes> parse_uuid(std::string_view text) {
  if (text.size() != 36 || text[8] != '-' || text[13] != '-' || text[18] != '-' || text[23] != '-')
    return std::nullopt;
  UuidBytes b{};
  // Where each byte's two digits start: 8-4-4-4-12 digits with a dash between the groups.
  static constexpr std::array<std::uint8_t, 16> kAt = {0,  2,  4,  6,  9,  11, 14, 16,
                                                       19, 21, 24, 26, 28, 30, 32, 34};
  int bad = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    const int high = kHexDigit[static_cast<unsigned char>(text[kAt[i]])];
    const int low = kHexDigit[static_cast<unsigned char>(text[kAt[i] + 1u])];
    bad |= high | low;  // negative once any digit is not one
    b[i] = static_cast<std::uint8_t>((high << 4) | (low & 0xf));
  }
  if (bad < 0) return std::nullopt;
  return b;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace kobo
