// The admin API: POST /v1/admin/businesses, enabled by --admin-key (header x-admin-key).

#include "common/json_writer.h"
#include "common/log.h"
#include "projection/render.h"
#include "query-api/credentials.h"
#include "query-api/envelope.h"
#include "query-api/route.h"

namespace kobo::api {
namespace {

// The new business's keys: the only time its secret keys are shown. Once the views have the
// business, so that the keys work as soon as they are handed out.
Answer business_answer(Credentials creds) {
  Answer a;
  a.accepted = [creds = std::move(creds)](const Exchange& x, Outcome o, http::Responder respond) {
    x.protocol.after_projection(o, std::move(respond), [creds, o](http::Responder r) {
      const Event& e = o.events.front();
      const auto records = render::business_records(e, std::get<BusinessRegistered>(e.data));
      std::string data;
      JsonWriter w(data);
      w.begin_object().raw_member("account", records.account).raw_member("business", records.business);
      w.key("credentials");
      write_credentials(w, creds);
      w.end_object();
      r(http::ok_text(201, data, "Business created successfully"));
    });
  };
  return a;
}

Made create_business(const Exchange& x) {
  const Credentials creds = new_credentials();
  // Webhooks are signed with the secret keys, which the log holds only as digests.
  if (x.options().signing_keys != nullptr) {
    if (auto s =
            x.options().signing_keys->put(creds.account_id, creds.test_secret_key, creds.live_secret_key);
        !s) {
      log::error("cannot store signing keys", {{"error", s.message()}});
      return http::internal_error();
    }
  }
  return Submission(create_business_command(creds, x.body.at("name")), business_answer(creds));
}

}  // namespace

void add_admin_routes(Routes& routes) {
  routes.command({.path = "/v1/admin/businesses",
                  .traits = {.kind = RouteKind::admin, .partition = PartitionOf::none},
                  .rules =
                      [](const Exchange&, http::Validator& v) {
                        v.field("name").is_not_empty().is_string().max_length(kNameLengthMax);
                      },
                  .make = create_business});
}

}  // namespace kobo::api
