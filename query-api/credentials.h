#pragma once
// A business's keys: generated once, shown once (the admin API's answer), in the log only as
// SHA-256 digests and, for signing webhooks, wrapped under the master key (events/keys.h).

#include <optional>
#include <string>
#include <string_view>

#include "command/commands.h"
#include "common/json_writer.h"
#include "common/master_key.h"

namespace kobo {

struct Credentials {
  std::string business_id;
  std::string account_id;
  std::string test_secret_key;  // sk_test_ + 40 hex
  std::string live_secret_key;  // sk_live_ + 40 hex
  std::string test_public_key;  // pk_test_ + 40 hex
  std::string live_public_key;  // pk_live_ + 40 hex
};

Credentials new_credentials();
// {"accountId","businessId","livePublicKey","liveSecretKey","testPublicKey","testSecretKey"}, members
// in key order, as the admin API answers it (the only time the secret keys are shown).
void write_credentials(JsonWriter& w, const Credentials& c);
// Why `key` is too weak to be the admin key, or nullopt: it must have at least 32 characters, at
// least 8 of them distinct (what a random hex or base64 key of 128 bits or more has; "password"
// repeated does not).
std::optional<std::string> weak_admin_key(std::string_view key);

// The command that creates the business `name` with its default account and these keys, their
// signing copies wrapped under `master` (none when it is null). An error when the master key
// cannot be used.
[[nodiscard]] Result<CreateBusiness> create_business_command(const Credentials& c, std::string name,
                                                             const MasterKey* master);

}  // namespace kobo
