#include "query-api/credentials.h"

#include <array>

#include "common/crypto.h"
#include "webhooks/webhooks.h"

namespace kobo {

Credentials new_credentials() {
  return Credentials{"biz-" + uuid_v4(),          "acc-" + uuid_v4(),          "sk_test_" + random_hex(20),
                     "sk_live_" + random_hex(20), "pk_test_" + random_hex(20), "pk_live_" + random_hex(20)};
}

void write_credentials(JsonWriter& w, const Credentials& c) {
  w.begin_object()
      .member("accountId", c.account_id)
      .member("businessId", c.business_id)
      .member("livePublicKey", c.live_public_key)
      .member("liveSecretKey", c.live_secret_key)
      .member("testPublicKey", c.test_public_key)
      .member("testSecretKey", c.test_secret_key)
      .end_object();
}

std::optional<std::string> weak_admin_key(std::string_view key) {
  constexpr std::size_t kLengthMin = 32, kDistinctMin = 8;
  if (key.size() < kLengthMin)
    return "it has " + std::to_string(key.size()) + " characters, fewer than " + std::to_string(kLengthMin) +
           " (make one with: head -c 32 /dev/urandom | xxd -p -c 64)";
  std::array<bool, 256> seen{};
  std::size_t distinct = 0;
  for (const char ch : key)
    if (!seen[static_cast<unsigned char>(ch)]) {
      seen[static_cast<unsigned char>(ch)] = true;
      ++distinct;
    }
  if (distinct < kDistinctMin)
    return "it has " + std::to_string(distinct) + " distinct characters, fewer than " +
           std::to_string(kDistinctMin);
  return std::nullopt;
}

Result<CreateBusiness> create_business_command(const Credentials& c, std::string name,
                                               const MasterKey* master) {
  CreateBusiness cmd{c.business_id,
                     std::move(name),
                     c.account_id,
                     "Default",
                     sha256_hex(c.test_secret_key),
                     sha256_hex(c.live_secret_key),
                     c.test_public_key,
                     c.live_public_key};
  if (master != nullptr) {
    auto test = wrap_signing_key(*master, c.account_id, false, c.test_secret_key);
    if (!test) return test.status();
    auto live = wrap_signing_key(*master, c.account_id, true, c.live_secret_key);
    if (!live) return live.status();
    cmd.test_signing_key = std::move(test).value();
    cmd.live_signing_key = std::move(live).value();
  }
  return cmd;
}

}  // namespace kobo
