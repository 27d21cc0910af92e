#include "query-api/credentials.h"

#include "common/crypto.h"

namespace kobo {

Credentials new_credentials() {
  return Credentials{"biz-" + uuid_v4(),          "acc-" + uuid_v4(),          "sk_test_" + random_hex(20),
                     "sk_live_" + random_hex(20), "pk_test_" + random_hex(20), "pk_live_" + random_hex(20)};
}

nlohmann::json to_json(const Credentials& c) {
  return nlohmann::json{{"businessId", c.business_id},        {"accountId", c.account_id},
                        {"testSecretKey", c.test_secret_key}, {"liveSecretKey", c.live_secret_key},
                        {"testPublicKey", c.test_public_key}, {"livePublicKey", c.live_public_key}};
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

CreateBusiness create_business_command(const Credentials& c, std::string name) {
  return CreateBusiness{c.business_id,
                        std::move(name),
                        c.account_id,
                        "Default",
                        sha256_hex(c.test_secret_key),
                        sha256_hex(c.live_secret_key),
                        c.test_public_key,
                        c.live_public_key};
}

}  // namespace kobo
