#include "common/crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "common/assert.h"

namespace kobo {

Sha256 sha256(std::string_view data) { return sha256(data, {}); }

Sha256 sha256(std::string_view a, std::string_view b) {
  Sha256 out{};
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  KOBO_ASSERT(ctx != nullptr, "EVP_MD_CTX_new");
  unsigned int len = 0;
  const bool ok = EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1 &&
                  EVP_DigestUpdate(ctx, a.data(), a.size()) == 1 &&
                  EVP_DigestUpdate(ctx, b.data(), b.size()) == 1 &&
                  EVP_DigestFinal_ex(ctx, out.data(), &len) == 1;
  EVP_MD_CTX_free(ctx);
  KOBO_ASSERT(ok && len == out.size(), "SHA-256 failed");
  return out;
}

std::string sha256_hex(std::string_view data) { return to_hex(sha256(data)); }

std::string hmac_sha512_hex(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const unsigned char* r =
      HMAC(EVP_sha512(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  KOBO_ASSERT(r != nullptr && len == 64, "HMAC-SHA512 failed");
  return to_hex(out, len);
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

std::string random_hex(std::size_t bytes) {
  std::string raw(bytes, '\0');
  KOBO_ASSERT(RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) == 1,
              "RAND_bytes failed");
  return to_hex(reinterpret_cast<const std::uint8_t*>(raw.data()), raw.size());
}

std::string uuid_v4() {
  unsigned char b[16];
  KOBO_ASSERT(RAND_bytes(b, sizeof b) == 1, "RAND_bytes failed");
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  const std::string h = to_hex(b, sizeof b);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" +
         h.substr(20, 12);
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace kobo
