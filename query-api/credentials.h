#pragma once
// A business's keys: generated once, shown once (credentials.json on first start, or the
// admin API's answer), stored only as SHA-256 digests in the log.

#include <nlohmann/json.hpp>
#include <string>

#include "command/commands.h"
#include "common/json_writer.h"

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
// {"businessId","accountId","testSecretKey","liveSecretKey","testPublicKey","livePublicKey"}: what
// credentials.json holds (a file the operator reads: written pretty by app/).
nlohmann::json to_json(const Credentials& c);
// The same object, members in key order, as the admin API answers it.
void write_credentials(JsonWriter& w, const Credentials& c);
// The command that creates the business `name` with its default account and these keys.
CreateBusiness create_business_command(const Credentials& c, std::string name);

}  // namespace kobo
