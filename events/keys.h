#pragma once
// Secret keys as the log names them (docs/security.md). The log holds a key's SHA-256 (what
// authentication compares) and, for signing webhooks, the key wrapped under the deployment's
// master key (common/master_key.h); never the key. Pure; thread-safe.

#include <cstdint>
#include <string>
#include <string_view>

namespace kobo {

// The longest a rolled key stays accepted beside its successor.
inline constexpr std::int64_t kKeyOverlapSecondsMax = std::int64_t{72} * 3600;

// A secret key's id: "key-" and the first 16 hex digits of its SHA-256, the digest the log holds.
// Derived, so it is stored nowhere twice; it names a key in answers, events (`actor`) and logs
// without revealing it.
std::string key_id_of_hash(std::string_view secret_key_hash);
// The id of a key given in full (sha256 first).
std::string key_id_of_key(std::string_view secret_key);

// The associated data an account's signing key of one mode is wrapped with: its account, mode
// and key id, so a wrapped key opens only as the key it was made for (moved to another account,
// mode or key, it fails to open).
std::string signing_key_context(std::string_view account, bool live, std::string_view key_id);

}  // namespace kobo
