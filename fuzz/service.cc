#include "fuzz/service.h"

#include <stdlib.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "command/ledger.h"
#include "common/log.h"
#include "events/embedded_log.h"
#include "projection/projector.h"
#include "projection/views.h"
#include "query-api/api.h"
#include "query-api/credentials.h"
#include "query-api/router.h"
#include "webhooks/webhooks.h"

namespace kobo::fuzz {
namespace {

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "fuzz service: %s\n", message.c_str());
  std::abort();
}

template <typename T>
T take(Result<T> r, const char* what) {
  if (!r) die(std::string(what) + ": " + r.status().message());
  return std::move(r).value();
}

void check(const Status& s, const char* what) {
  if (!s) die(std::string(what) + ": " + s.message());
}

struct Service {
  Service() {
    log::set_min_level(log::Level::error);
    std::string pattern = (std::filesystem::temp_directory_path() / "kobo-fuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) die("mkdtemp " + pattern);
    const std::filesystem::path dir(pattern);
    log = take(open_embedded_log({(dir / "log").string(), 2, /*sync=*/false}), "log");
    views = take(Views::open((dir / "views").string(), 2), "views");
    LedgerOptions lo;
    lo.config.partitions = 2;
    lo.config.rail_delay = std::chrono::milliseconds(1);
    ledger = std::make_unique<Ledger>(*log, lo);
    check(ledger->start(), "writer");
    projector = std::make_unique<Projector>(*log, *views);
    check(projector->start(), "projector");
    master_key = take(LocalMasterKey::make(std::string(64, 'f')), "master key");

    const Credentials creds{"biz-00000000-0000-4000-8000-000000000001",
                            std::string(kAccountId),
                            std::string(kTestKey),
                            std::string(kLiveKey),
                            "pk_test_3333333333333333333333333333333333333333",
                            "pk_live_4444444444444444444444444444444444444444"};
    const Outcome o =
        ledger->execute(take(create_business_command(creds, "Default", master_key.get()), "business"));
    if (!o.ok()) die("bootstrap: " + o.detail);

    ApiOptions ao;
    ao.admin_key = std::string(kAdminKey);
    ao.expire_in_min_s = 1;
    ao.master_key = master_key.get();
    api = std::make_unique<Api>(*ledger, *views, *projector, ao);
    api->add_routes(router);
  }

  std::unique_ptr<EventLog> log;
  std::unique_ptr<Views> views;
  std::unique_ptr<Ledger> ledger;
  std::unique_ptr<Projector> projector;
  std::unique_ptr<LocalMasterKey> master_key;
  std::unique_ptr<Api> api;
  http::Router router;
};

// The answer of one request; its destructor notices a responder dropped unanswered.
struct Answer {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<http::Response> response;
  bool dropped = false;
};

struct Responder {
  explicit Responder(std::shared_ptr<Answer> a) : answer(std::move(a)) {}
  ~Responder() {
    std::lock_guard lock(answer->mu);
    if (!answer->response) answer->dropped = true;
    answer->cv.notify_all();
  }
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;
  std::shared_ptr<Answer> answer;
};

}  // namespace

http::Response call(http::Request&& request) {
  static Service* const service = new Service();  // never destroyed, see service.h
  const std::string what = std::string(boost::beast::http::to_string(request.method)) + " " + request.path;
  auto answer = std::make_shared<Answer>();
  auto owner = std::make_shared<Responder>(answer);
  service->router.dispatch(std::move(request), [owner](http::Response r) {
    std::lock_guard lock(owner->answer->mu);
    if (owner->answer->response) die("answered twice");
    owner->answer->response = std::move(r);
    owner->answer->cv.notify_all();
  });
  owner.reset();
  std::unique_lock lock(answer->mu);
  if (!answer->cv.wait_for(lock, std::chrono::seconds(30),
                           [&] { return answer->response || answer->dropped; }))
    die(what + ": no answer within 30 s");
  if (!answer->response) die(what + ": responder dropped without an answer");
  if (answer->response->status == 500) die(what + ": 500 " + answer->response->body);
  static const bool print = std::getenv("KOBO_FUZZ_PRINT") != nullptr;  // to see what an input does
  if (print)
    std::fprintf(stderr, "%s -> %u %.300s\n", what.c_str(), answer->response->status,
                 answer->response->body.c_str());
  return std::move(*answer->response);
}

}  // namespace kobo::fuzz
