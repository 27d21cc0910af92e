#include "query-api/checkpoint_route.h"

#include <chrono>

#include "common/crypto.h"
#include "common/log.h"
#include "common/metrics.h"
#include "query-api/checkpoint_stream.h"
#include "query-api/envelope.h"
#include "query-api/forwarder.h"
#include "query-api/join.h"

namespace kobo::api {

namespace fs = std::filesystem;

namespace {

struct CheckpointMetrics {
  metrics::Counter& served =
      metrics::registry().counter("kobo_cluster_checkpoints_served_total",
                                  "Checkpoints made for a joining node (GET /v1/cluster/checkpoint)");
  metrics::Counter& bytes = metrics::registry().counter("kobo_cluster_checkpoint_bytes_total",
                                                        "Bytes of the files of the checkpoints made");
};

CheckpointMetrics& checkpoint_metrics() {
  static CheckpointMetrics m;
  return m;
}

http::Response busy(std::string_view retry_after) {
  http::Response res = http::error(503, "Service unavailable");
  res.headers.emplace_back("Retry-After", std::string(retry_after));
  return res;
}

// A copy being streamed: removed, and the server free again, once its stream is done with (ended,
// or dropped with its connection).
struct Streamed {
  Streamed(fs::path dir, std::shared_ptr<std::atomic<bool>> flag, CheckpointManifest manifest)
      : scratch(std::move(dir)), busy(std::move(flag)), source(scratch, std::move(manifest)) {}
  ~Streamed() {
    std::error_code ec;
    fs::remove_all(scratch, ec);
    busy->store(false);
  }
  Streamed(const Streamed&) = delete;
  Streamed& operator=(const Streamed&) = delete;
  const fs::path scratch;
  const std::shared_ptr<std::atomic<bool>> busy;
  CheckpointSource source;
};

}  // namespace

CheckpointServer::CheckpointServer(CheckpointServerOptions options, const Views& views, Ledger& ledger)
    : options_(std::move(options)), views_(views), ledger_(ledger) {
  KOBO_ASSERT(!options_.scratch.empty() && !options_.secret.empty() && options_.started,
              "a checkpoint server has a scratch dir, the cluster's secret and a way to know it started");
}

CheckpointServer::~CheckpointServer() {
  std::lock_guard lock(maker_mu_);
  if (maker_.joinable()) maker_.join();
}

void CheckpointServer::add_route(http::Router& router) {
  router.get("/v1/cluster/checkpoint", [this](http::Request&& req, const http::PathParams&,
                                              http::Responder respond) {
    if (!constant_time_equal(sha256_hex(req.header(kClusterSecretHeader)), sha256_hex(options_.secret)))
      return respond(http::error(401, "Unauthorized"));
    serve(std::string(req.header(kJoiningNodeHeader)), std::move(respond));
  });
}

void CheckpointServer::serve(std::string joiner, http::Responder respond) {
  if (!options_.started()) return respond(busy("1"));
  if (busy_->exchange(true)) return respond(busy("5"));  // one copy at a time
  std::lock_guard lock(maker_mu_);
  if (maker_.joinable()) maker_.join();  // the last copy's maker, done once it answered
  maker_ = std::thread(
      [this, joiner = std::move(joiner), respond = std::move(respond)] { make(joiner, respond); });
}

void CheckpointServer::make(const std::string& joiner, const http::Responder& respond) {
  const auto began = std::chrono::steady_clock::now();
  std::error_code ec;
  fs::remove_all(options_.scratch, ec);
  fs::create_directories(options_.scratch, ec);
  Status made = ec ? Status::error("create " + options_.scratch.string() + ": " + ec.message()) : Status{};
  // The views first: a joining node reads the log after their positions anyway, and the writer's
  // copy may then only be newer, never older, than the views it starts beside.
  if (made) made = views_.checkpoint((options_.scratch / "views").string());
  if (made) made = ledger_.checkpoint(options_.scratch);
  Result<CheckpointManifest> manifest =
      made ? list_checkpoint(options_.scratch, options_.topic, views_.partitions(), options_.node_id)
           : Result<CheckpointManifest>(made);
  if (!manifest) {
    log::error("cluster: no checkpoint for a joining node",
               {{"node", joiner}, {"error", manifest.status().message()}});
    fs::remove_all(options_.scratch, ec);
    busy_->store(false);
    return respond(busy("5"));
  }
  const std::uint64_t bytes = manifest->bytes();
  const std::size_t files = manifest->files.size();
  checkpoint_metrics().served.inc();
  checkpoint_metrics().bytes.inc(bytes);
  log::info("cluster: a checkpoint for a joining node",
            {{"node", joiner},
             {"files", files},
             {"bytes", bytes},
             {"madeMs",
              std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began)
                  .count()}});
  auto streamed = std::make_shared<Streamed>(options_.scratch, busy_, std::move(manifest).value());
  http::Response res;
  res.status = 200;
  res.content_type = "application/octet-stream";
  res.headers.emplace_back("Cache-Control", "no-store");
  res.stream = [streamed](std::string& out) { return streamed->source.next(out); };
  respond(std::move(res));
}

}  // namespace kobo::api
