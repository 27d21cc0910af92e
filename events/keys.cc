#include "events/keys.h"

#include "common/assert.h"
#include "common/crypto.h"

namespace kobo {

namespace {
constexpr std::size_t kKeyIdDigits = 16;
}  // namespace

std::string key_id_of_hash(std::string_view secret_key_hash) {
  return "key-" + std::string(secret_key_hash.substr(0, kKeyIdDigits));
}

std::string key_id_of_key(std::string_view secret_key) {
  std::string id = key_id_of_hash(sha256_hex(secret_key));
  KOBO_ASSERT(id.size() == 4 + kKeyIdDigits, "a key's id is key- and the first 16 hex digits of its digest");
  return id;
}

std::string signing_key_context(std::string_view account, bool live, std::string_view key_id) {
  std::string context("kobo signing key v1|");
  context.append(account).append(live ? "|live|" : "|test|").append(key_id);
  // The mode is a field of its own: no account's context is another mode's.
  KOBO_ASSERT(context.size() == 20 + account.size() + 6 + key_id.size(),
              "a signing key's context is its version, account, mode and key id");
  return context;
}

}  // namespace kobo
