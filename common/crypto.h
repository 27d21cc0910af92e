#pragma once
// Thin, safe wrappers over OpenSSL's libcrypto: digests, MACs, secure random identifiers.
// All functions are thread-safe.

#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace kobo {

using Sha256 = std::array<std::uint8_t, 32>;

Sha256 sha256(std::string_view data);
// SHA-256 of `a` followed by `b`, without concatenating them first.
Sha256 sha256(std::string_view a, std::string_view b);
// SHA-256 of the parts in order, as if concatenated.
Sha256 sha256(std::initializer_list<std::string_view> parts);
std::string sha256_hex(std::string_view data);
std::string hmac_sha512_hex(std::string_view key, std::string_view data);
Sha256 hmac_sha256(std::string_view key, std::string_view data);

// AES-256-GCM (NIST SP 800-38D) through OpenSSL's EVP: `key` is 32 bytes; the sealed form is a
// random 12-byte nonce, the ciphertext and the 16-byte tag, concatenated. `aad` is authenticated,
// not encrypted: opening with other associated data fails, as does any changed byte. A random
// nonce per message keeps one key safe for 2^32 messages (SP 800-38D 8.3), far beyond what a
// deployment wraps.
inline constexpr std::size_t kAes256GcmKeyBytes = 32;
inline constexpr std::size_t kAes256GcmOverheadBytes = 12 + 16;
std::string aes256gcm_seal(std::string_view key, std::string_view plaintext, std::string_view aad);
// The plaintext, or nullopt when `sealed` was not sealed with this key and these associated data.
std::optional<std::string> aes256gcm_open(std::string_view key, std::string_view sealed,
                                          std::string_view aad);

// Standard base64 (RFC 4648, with padding), as Standard Webhooks secrets and signatures use it.
std::string base64_encode(std::string_view bytes);
// nullopt for text that is not base64 with padding.
std::optional<std::string> base64_decode(std::string_view text);

std::string to_hex(const std::uint8_t* data, std::size_t size);
inline std::string to_hex(const Sha256& d) { return to_hex(d.data(), d.size()); }

// `n` cryptographically secure random bytes. Thread-safe.
void random_bytes(std::uint8_t* out, std::size_t n);
// Cryptographically secure random bytes, hex encoded (2 * bytes characters).
std::string random_hex(std::size_t bytes);
// A random UUID v4 in its canonical 8-4-4-4-12 lowercase form.
std::string uuid_v4();
// Any 128 bits in that form.
using UuidBytes = std::array<std::uint8_t, 16>;
std::string format_uuid(const UuidBytes& b);
// The 128 bits of a uuid in exactly that form (lower-case hex, dashes at 8, 13, 18 and 23);
// nullopt for any other text, so that format_uuid(*parse_uuid(s)) == s whenever it parses.
std::optional<UuidBytes> parse_uuid(std::string_view text);

// Constant-time equality of two equally long strings (false when lengths differ).
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace kobo
