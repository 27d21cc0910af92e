// kobo: the Kobo Ledger executable. `kobo serve` runs the writer, the projector and the HTTP
// API in one process, on the embedded log or on Kafka (README.md; docs/architecture.md section 2).

#include <signal.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>

#include "app/audit_cli.h"
#include "app/data_dir.h"
#include "app/events_cli.h"
#include "app/exit_codes.h"
#include "app/kafka_flags.h"
#include "app/legacy_keys.h"
#include "cluster/cluster.h"
#include "command/ledger.h"
#include "common/crypto.h"
#include "common/file.h"
#include "common/log.h"
#include "common/master_key.h"
#include "common/thread.h"
#include "common/token_bucket.h"
#include "events/embedded_log.h"
#include "events/kafka_log.h"
#include "projection/projector.h"
#include "projection/views.h"
#include "query-api/api.h"
#include "query-api/checkpoint_route.h"
#include "query-api/cluster_status.h"
#include "query-api/credentials.h"
#include "query-api/http_server.h"
#include "query-api/join.h"
#include "query-api/owner_wait.h"
#include "query-api/router.h"
#include "webhooks/webhooks.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kobo {
namespace {

struct ServeOptions {
  std::string listen = "127.0.0.1:8080";
  std::string data_dir = "./data";
  std::uint32_t partitions = 6;
  int http_threads = 0;  // 0: one per core available
  std::string bank_name = "Kobo Sandbox MFB";
  std::string bank_code = "099999";
  std::string nuban_code = "999999";
  bool no_fsync = false;
  std::string admin_key;
  std::string admin_key_file;
  int name_enquiries_per_minute = 30;  // own-bank name enquiries per key; 0: no limit
  int rail_delay_ms = 500;
  std::uint64_t snapshot_every_events = 100'000;  // 0: no snapshots of the writer's state
  std::size_t writer_cache_mb = 64;               // the history index's block cache and memtables
  std::string writer_key_file;                    // Ed25519 PEM: signed checkpoints (events/checkpoint.h)
  std::string previous_writer_key_file;           // the key writer_key_file replaces (a rotation)
  std::uint64_t checkpoint_events = 1'000;
  double checkpoint_seconds = 10;
  double rate_limit_reads = 0;  // per API key per second; 0: none (query-api/rate_limit.h)
  double rate_limit_writes = 0;
  int projector_nice = -10;                // the projector thread's nice value
  int projector_flush_spacing_us = 3'000;  // ProjectorOptions::flush_spacing
  std::uint32_t projector_lanes = 0;       // ProjectorOptions::lanes (0: one per core)
  std::int64_t expire_in_min_s = 600;
  std::string fee_tiers = "500000:1075,5000000:2688,max:5375";
  std::string limits_file;  // KYC tier limits (events/limits.h); empty: the CBN's
  std::string log_level = "info";
  KafkaFlags kafka;  // brokers empty: the embedded log
  int kafka_append_timeout_ms = 5'000;
  std::vector<std::string> roles{"command", "projector", "query"};
  // A cluster on Kafka (docs/architecture.md, "Cluster"): empty name, a single node.
  std::string cluster;
  std::string node_id;
  std::string advertise;  // empty: http://<--listen>
  int failover_wait_ms = 10'000;
  std::string cluster_secret_file;  // empty: commands are not forwarded, /v1/cluster is absent
  int read_wait_ms = 2'000;
  std::uint64_t ready_max_lag = 10'000;
  // A new node (an empty data dir): "auto" takes a checkpoint of a peer the group lists, a URL
  // that peer's, "replay" none (docs/architecture.md, "A new node").
  std::string join_from = "auto";
  // Webhooks (docs/webhooks.md).
  bool webhook_allow_private = false;
  int webhook_timeout_ms = 10'000;
  std::string webhook_retry_schedule = "10s,1m,5m,30m,1h";
  std::string webhook_retry_window = "24h";
  std::uint32_t webhook_concurrency = 64;
  std::uint32_t webhook_endpoint_concurrency = 4;
  std::string webhook_master_secret;  // deprecated alias of the master key
  std::string master_key_file;        // empty: KOBO_MASTER_KEY, else <data-dir>/master-key
};

// The roles a process can take (docs/architecture.md section 1). A node that takes commands also projects and
// answers queries, so that its clients read their own writes; a projector node follows the log
// into its own views and serves only /healthz, /readyz and /metrics.
struct Roles {
  bool command = false;
  bool projector = false;
};

Result<Roles> parse_roles(const std::vector<std::string>& names) {
  std::set<std::string> set(names.begin(), names.end());
  if (set == std::set<std::string>{"command", "projector", "query"}) return Roles{true, true};
  if (set == std::set<std::string>{"projector"}) return Roles{false, true};
  return Status::error(
      "--roles: run either command,projector,query (a writer that also serves its views) or "
      "projector (a node that only follows the log into its views)");
}

// The data dir remembers which log its views were built from: views of one log applied on top
// of another would be silently wrong.
Status check_log_source(const fs::path& data_dir, const std::string& source) {
  const fs::path path = data_dir / "log-source";
  if (fs::exists(path)) {
    std::ifstream in(path);
    std::string recorded;
    std::getline(in, recorded);
    if (recorded != source)
      return Status::error("the data dir " + data_dir.string() + " holds views of " + recorded + ", not of " +
                           source + "; use another --data-dir");
    return {};
  }
  std::ofstream out(path, std::ios::trunc);
  out << source << "\n";
  out.close();
  if (!out) return Status::error("cannot write " + path.string());
  return {};
}

// The partition count of the topic, as the data dir's second line of log-source records it once
// a start reached the topic ("partitions N"); nullopt before that.
std::optional<std::uint32_t> recorded_partitions(const fs::path& data_dir) {
  std::ifstream in(data_dir / "log-source");
  std::string source, line;
  std::getline(in, source);
  std::getline(in, line);
  std::uint32_t n = 0;
  if (std::sscanf(line.c_str(), "partitions %u", &n) == 1 && n > 0) return n;
  return std::nullopt;
}

Status record_partitions(const fs::path& data_dir, const std::string& source, std::uint32_t partitions) {
  if (recorded_partitions(data_dir) == partitions) return {};
  return write_file_atomically(data_dir / "log-source",
                               source + "\npartitions " + std::to_string(partitions) + "\n", 0644);
}

std::string log_source(const ServeOptions& o) {
  return o.kafka.brokers.empty() ? "embedded" : "kafka topic " + o.kafka.topic;
}

// On Kafka, a data dir that knows its topic's partition count opens the log at once, whatever
// the brokers' state, and the log connects in the background: the node serves its views in a
// broker outage and takes writes once the brokers answer. One that has never reached its topic
// connects before it goes on, within the connect timeout.
Result<std::unique_ptr<EventLog>> open_serve_log(const ServeOptions& o, const fs::path& data_dir,
                                                 bool writer) {
  if (auto s = check_log_source(data_dir, log_source(o)); !s) return s;
  if (o.kafka.brokers.empty())
    return open_embedded_log({(data_dir / "log").string(), o.partitions, !o.no_fsync});
  const auto known = recorded_partitions(data_dir);
  auto kafka = o.kafka.log_options();
  if (!kafka) return kafka.status();
  KafkaLogOptions& ko = kafka.value();
  ko.partitions = known.value_or(o.partitions);
  ko.connect_in_background = known.has_value();
  ko.writer = writer;
  ko.acquire_partitions = !o.cluster.empty();  // a cluster node writes what it is assigned
  ko.append_timeout = std::chrono::milliseconds(o.kafka_append_timeout_ms);
  return open_kafka_log(ko);
}

// A step of the start that needs the log.
struct StartStep {
  std::string_view name;
  std::function<Status()> run;
};

enum class Started { all, failed, signalled };

// Runs the steps in order, each until it succeeds. A step that fails because the log cannot be
// reached (ErrorKind::unavailable: a broker outage) is tried again every 250 ms, while HTTP
// already serves (/readyz saying why); any other failure ends the start. A SIGINT or SIGTERM
// meanwhile stops it (`sig`).
Started run_start_steps(const std::vector<StartStep>& steps, sigset_t& signals, int& sig) {
  for (const StartStep& step : steps) {
    for (int attempt = 1;; ++attempt) {
      const Status s = step.run();
      if (s) break;
      if (s.kind() != ErrorKind::unavailable) {
        log::error(std::string(step.name) + ": " + s.message());
        return Started::failed;
      }
      if (attempt == 1) log::warn("waiting for the log", {{"step", step.name}, {"error", s.message()}});
      const timespec wait{0, 250'000'000};
      if (const int got = sigtimedwait(&signals, nullptr, &wait); got > 0) {
        sig = got;
        return Started::signalled;
      }
    }
  }
  return Started::all;
}

// The admin key: --admin-key-file's content, else --admin-key / KOBO_ADMIN_KEY; empty when none
// (no admin API). A key too weak to stand guessing is refused here, at start.
Result<std::string> admin_key(const ServeOptions& o) {
  std::string key = o.admin_key;
  if (!o.admin_key_file.empty()) {
    if (!key.empty())
      return Status::error("the admin key is given twice (--admin-key-file and --admin-key): give it once");
    std::ifstream in(o.admin_key_file, std::ios::binary);
    if (!in) return Status::error("--admin-key-file " + o.admin_key_file + " cannot be read");
    std::stringstream text;
    text << in.rdbuf();
    key = text.str();
    while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' ')) key.pop_back();
    struct stat st {};
    if (::stat(o.admin_key_file.c_str(), &st) == 0 && (st.st_mode & 0077) != 0)
      log::warn("the admin key file can be read by other users than its owner; make it mode 0600",
                {{"file", o.admin_key_file}});
  }
  if (key.empty()) return key;
  if (auto weak = weak_admin_key(key)) return Status::error("the admin key is too weak: " + *weak);
  return key;
}

// "UP_TO:FEE,...,max:FEE" in kobo, ascending, the last tier open-ended.
Result<std::vector<FeeTier>> parse_fee_tiers(const std::string& text) {
  std::vector<FeeTier> tiers;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto colon = item.find(':');
    try {
      if (colon == std::string::npos) throw std::invalid_argument("no colon");
      const std::string up_to = item.substr(0, colon);
      const std::int64_t limit = up_to == "max" ? INT64_MAX : std::stoll(up_to);
      const std::int64_t fee = std::stoll(item.substr(colon + 1));
      if (fee < 0 || (!tiers.empty() && limit <= tiers.back().up_to_kobo))
        throw std::invalid_argument("order");
      tiers.push_back({limit, fee});
    } catch (const std::exception&) {
      return Status::error("--fee-tiers wants ascending UP_TO:FEE pairs ending in max:FEE, got " + text);
    }
  }
  if (tiers.empty() || tiers.back().up_to_kobo != INT64_MAX)
    return Status::error("--fee-tiers must end with max:FEE, got " + text);
  return tiers;
}

Result<std::pair<std::string, std::uint16_t>> parse_listen(const std::string& listen) {
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos) return Status::error("--listen wants HOST:PORT, got " + listen);
  try {
    const int port = std::stoi(listen.substr(colon + 1));
    if (port < 0 || port > 65535) throw std::out_of_range("port");
    return std::pair{listen.substr(0, colon), static_cast<std::uint16_t>(port)};
  } catch (const std::exception&) {
    return Status::error("--listen wants HOST:PORT, got " + listen);
  }
}

ProjectorOptions projector_options(const ServeOptions& o) {
  ProjectorOptions po;
  po.flush_spacing = std::chrono::microseconds(o.projector_flush_spacing_us);
  po.lanes = o.projector_lanes;
  if (o.projector_nice != 0) po.nice = o.projector_nice;
  return po;
}

// The cluster's secret, from a file only its owner may read (0600): a secret any user of the
// machine can read is refused, as ssh refuses such a key.
Result<std::string> read_cluster_secret(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return Status::error("--cluster-secret-file " + path + ": cannot be read");
  if ((st.st_mode & 077) != 0)
    return Status::error("--cluster-secret-file " + path +
                         ": group or others may access it; make it readable by its owner only (chmod 600)");
  std::ifstream in(path);
  std::string secret((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) return Status::error("--cluster-secret-file " + path + ": cannot be read");
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r' || secret.back() == ' '))
    secret.pop_back();
  if (secret.size() < 16)
    return Status::error("--cluster-secret-file " + path + ": the secret must be at least 16 characters");
  return secret;
}

// The node's membership options (--cluster, --node-id, --advertise and the Kafka flags).
Result<ClusterOptions> cluster_options(const ServeOptions& o) {
  ClusterOptions co;
  co.name = o.cluster;
  co.node_id = o.node_id;
  co.advertise = o.advertise.empty() ? "http://" + o.listen : o.advertise;
  auto kafka = o.kafka.log_options();
  if (!kafka) return kafka.status();
  co.kafka = std::move(kafka).value();
  return co;
}

// --join-from: auto, replay, or a peer's URL.
Status check_join_from(const ServeOptions& o) {
  if (o.join_from == "auto" || o.join_from == "replay") return {};
  if (o.cluster.empty()) return Status::error("--join-from is for a node of a --cluster");
  if (!check_advertise(o.join_from).ok() || !o.join_from.starts_with("http://"))
    return Status::error("--join-from wants auto, replay or a peer's URL http://HOST:PORT, got " +
                         o.join_from);
  return {};
}

// A new node of a cluster (an empty data dir) starts from a checkpoint of a peer's views and
// writer state when it can (docs/architecture.md, "A new node"), and otherwise, as it always
// could, from the log's offset 0. Whatever it says is logged; nothing here stops the start.
void join_cluster(const ServeOptions& o, const fs::path& data_dir, const std::string& secret, EventLog& log) {
  const std::string rebuilds = "; it rebuilds its views and writer state from the log";
  if (o.join_from == "replay") {
    log::info("cluster: a new node (--join-from replay)" + rebuilds);
    return;
  }
  if (secret.empty()) {
    log::warn("cluster: a new node without --cluster-secret-file cannot take a peer's checkpoint" + rebuilds);
    return;
  }
  std::vector<std::string> peers;
  if (o.join_from == "auto") {
    auto co = cluster_options(o);
    auto group = co ? read_group(co.value(), log.partitions()) : Result<OwnerMap>(co.status());
    if (!group) {
      log::warn("cluster: a new node could not read its cluster's group to find a peer" + rebuilds,
                {{"error", group.status().message()}});
      return;
    }
    for (const OwnerMap::Member& m : group->members)
      if (m.node_id != o.node_id) peers.push_back(m.url);
    if (peers.empty()) {
      log::info("cluster: a new node, and no peer in its cluster's group yet" + rebuilds);
      return;
    }
  } else {
    peers.push_back(o.join_from);
  }
  JoinOptions jo;
  jo.data_dir = data_dir;
  jo.scratch = scratch_views(data_dir, "join");
  jo.peers = std::move(peers);
  jo.secret = secret;
  jo.topic = o.kafka.topic;
  jo.node_id = o.node_id;
  const auto joined = join_through_checkpoint(jo, log);
  if (!joined) {
    log::warn("cluster: a peer's checkpoint is refused" + rebuilds, {{"why", joined.status().message()}});
    return;
  }
  log::info("cluster: joined through a peer's checkpoint; the node reads the log from its positions on",
            {{"peer", joined->peer},
             {"peerNode", joined->peer_node_id},
             {"files", joined->files},
             {"bytes", joined->bytes},
             {"events", joined->events},
             {"seconds", joined->seconds},
             {"receivedSeconds", joined->received_seconds}});
}

// A projector node: the views follow the log; HTTP serves only health and metrics.
int serve_projector(const ServeOptions& o, EventLog& log, Views& views,
                    const std::pair<std::string, std::uint16_t>& listen, const std::string& backend,
                    sigset_t& signals) {
  Projector projector(log, views, projector_options(o));
  http::Router router;
  add_operational_routes(router, [&projector] { return projector.fault(); });
  http::ServerOptions so;
  so.address = listen.first;
  so.port = listen.second;
  so.threads = 1;
  http::Server server(so, router.handler());
  if (auto s = server.start(); !s) {
    log::error("listen " + o.listen + ": " + s.message());
    return 1;
  }
  log::info("projecting",
            {{"address", so.address}, {"port", server.port()}, {"dataDir", o.data_dir}, {"log", backend}});
  int sig = 0;
  const Started started = run_start_steps(
      {{"projector", [&] { return projector.start(); }},
       {"data dir",
        [&] { return record_partitions(fs::path(o.data_dir), log_source(o), log.partitions()); }}},
      signals, sig);
  if (started == Started::failed) {
    server.stop();
    return 1;
  }
  if (started == Started::all) sigwait(&signals, &sig);
  log::info("stopping", {{"signal", sig}});
  server.stop();
  projector.stop();
  return 0;
}

int serve(const ServeOptions& o) {
  if (o.log_level == "debug")
    log::set_min_level(log::Level::debug);
  else if (o.log_level == "warn")
    log::set_min_level(log::Level::warn);
  else if (o.log_level == "error")
    log::set_min_level(log::Level::error);

  // Signals are taken by sigwait below, so block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto fail = [](const std::string& msg) {
    log::error(msg);
    return 1;
  };
  const auto listen = parse_listen(o.listen);
  if (!listen) return fail(listen.status().message());
  const fs::path data_dir(o.data_dir);
  std::error_code ec;
  fs::create_directories(data_dir, ec);
  if (ec) return fail("cannot create data dir " + data_dir.string() + ": " + ec.message());

  const auto roles = parse_roles(o.roles);
  if (!roles) return fail(roles.status().message());
  if (!o.cluster.empty() && o.kafka.brokers.empty())
    return fail("--cluster runs on Kafka: give --kafka-brokers (the embedded log is a single node's)");
  if (!o.cluster.empty() && !roles->command)
    return fail("--cluster is for nodes that take commands; a projector node follows the log without it");
  if (auto s = check_join_from(o); !s) return fail(s.message());
  // The cluster's secret, which forwarded requests and /v1/cluster carry.
  std::string cluster_secret;
  if (!o.cluster_secret_file.empty()) {
    if (o.cluster.empty()) return fail("--cluster-secret-file is for a node of a --cluster");
    auto secret = read_cluster_secret(o.cluster_secret_file);
    if (!secret) return fail(secret.status().message());
    cluster_secret = std::move(secret).value();
  }

  // The deployment's master key (docs/security.md): what every node signs webhooks with is
  // wrapped under it. A projector node signs nothing and needs none.
  std::unique_ptr<MasterKey> master_key_holder;
  if (roles->command) {
    // Read once, before the node starts a thread (getenv is unsafe only beside a setenv).
    const char* env_key = std::getenv("KOBO_MASTER_KEY");  // NOLINT(concurrency-mt-unsafe)
    // What one node wraps, every node must open: a cluster's nodes are given one key, never each
    // a key of its own data dir.
    if (!o.cluster.empty() && o.master_key_file.empty() && (env_key == nullptr || *env_key == '\0') &&
        o.webhook_master_secret.empty())
      return fail(
          "--cluster needs the deployment's master key, the same on every node: give --master-key-file or "
          "KOBO_MASTER_KEY (docs/security.md)");
    auto resolved = resolve_master_key(
        {o.master_key_file, env_key != nullptr ? env_key : "", o.webhook_master_secret, data_dir});
    if (!resolved) return fail("master key: " + resolved.status().message());
    for (const std::string& w : resolved->warnings) log::warn(w);
    log::info("master key", {{"id", resolved->key->id()}, {"source", resolved->source}});
    master_key_holder = std::move(resolved->key);
  }
  auto log = open_serve_log(o, data_dir, roles->command);
  if (!log) return fail(log.status().message());
  const std::uint32_t partitions = log.value()->partitions();  // an existing topic decides
  if (!o.cluster.empty() && data_dir_is_new(data_dir))
    join_cluster(o, data_dir, cluster_secret, *log.value());
  auto views = open_views(data_dir, *log.value());
  if (!views) return fail(views.status().message());
  const std::string backend = o.kafka.brokers.empty() ? "embedded" : "kafka";
  if (!roles->command)
    return serve_projector(o, *log.value(), *views.value(), listen.value(), backend, signals);

  const MasterKey& master_key = *master_key_holder;
  const auto fee_tiers = parse_fee_tiers(o.fee_tiers);
  if (!fee_tiers) return fail(fee_tiers.status().message());
  LedgerOptions lo;
  if (!o.limits_file.empty()) {
    std::ifstream in(o.limits_file);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in && !in.eof()) return fail("--limits " + o.limits_file + ": cannot be read");
    auto limits = parse_tier_limits(text);
    if (!limits) return fail("--limits " + o.limits_file + ": " + limits.status().message());
    lo.config.tier_limits = std::move(limits).value();
  }
  lo.config.fee_tiers = fee_tiers.value();
  lo.config.rail_delay = std::chrono::milliseconds(o.rail_delay_ms);
  lo.config.partitions = partitions;
  lo.config.bank_name = o.bank_name;
  lo.config.bank_code = o.bank_code;
  lo.config.nuban_code = o.nuban_code;
  if (o.snapshot_every_events > 0) lo.snapshot_dir = data_dir / "snapshots";
  lo.snapshot_every_events = o.snapshot_every_events;
  lo.history_dir = data_dir / "history";
  lo.history_cache_bytes = o.writer_cache_mb << 20;
  lo.cluster = !o.cluster.empty();
  if (!o.writer_key_file.empty()) {
    auto signer = open_key_file_signer(o.writer_key_file);
    if (!signer) return fail("--writer-key-file: " + signer.status().message());
    lo.signer = std::move(signer).value();
    lo.log_name = o.kafka.brokers.empty() ? "embedded" : o.kafka.topic;
    lo.checkpoint_events = o.checkpoint_events;
    lo.checkpoint_interval =
        std::chrono::milliseconds(static_cast<std::int64_t>(o.checkpoint_seconds * 1000));
    log::info("the writer signs checkpoints", {{"key", lo.signer->public_key()}});
    if (!o.previous_writer_key_file.empty()) {
      auto previous = open_key_file_signer(o.previous_writer_key_file);
      if (!previous) return fail("--previous-writer-key-file: " + previous.status().message());
      if (previous.value()->public_key() == lo.signer->public_key())
        return fail("--previous-writer-key-file is the key of --writer-key-file: nothing to rotate from");
      lo.previous_signer = std::move(previous).value();
      log::info("the writer rotates from its previous key where that one still signs",
                {{"previousKey", lo.previous_signer->public_key()}});
    }
  } else if (!o.previous_writer_key_file.empty()) {
    return fail("--previous-writer-key-file needs --writer-key-file (the key it rotates to)");
  }
  Ledger ledger(*log.value(), lo);
  Projector projector(*log.value(), *views.value(), projector_options(o));
  WebhookOptions wo;
  auto schedule = RetrySchedule::parse(o.webhook_retry_schedule, o.webhook_retry_window);
  if (!schedule) return fail(schedule.status().message());
  wo.schedule = schedule.value();
  wo.timeout = std::chrono::milliseconds(o.webhook_timeout_ms);
  wo.allow_private = o.webhook_allow_private;
  wo.concurrency_max = o.webhook_concurrency;
  wo.endpoint_concurrency_max = o.webhook_endpoint_concurrency;
  if (!o.cluster.empty()) {
    // A cluster node sends the deliveries of the partitions it writes, and records in the log
    // the ones that ended, so that a partition's next writer sends only what was not delivered
    // (docs/webhooks.md, "In a cluster").
    wo.sends = [&ledger](Partition p) { return ledger.owns(p); };
    wo.ended = [&ledger](Partition p, std::vector<WebhookDeliveryEnded> deliveries) {
      const std::size_t n = deliveries.size();
      ledger.submit(EndWebhookDeliveries{p, std::move(deliveries)}, [p, n](const Outcome& done) {
        if (!done.ok())
          log::info(
              "webhook deliveries that ended were not recorded; the partition's next writer may send them "
              "again",
              {{"partition", p.value}, {"deliveries", n}, {"why", to_string(done.rejection)}});
      });
    };
  }
  const WebhookSecrets webhook_secrets(master_key);
  auto webhooks = Webhooks::open((data_dir / "webhooks").string(), *log.value(), *views.value(), projector,
                                 master_key, webhook_secrets, wo);
  if (!webhooks) return fail("webhooks: " + webhooks.status().message());

  ApiOptions ao;
  const auto admin = admin_key(o);
  if (!admin) return fail(admin.status().message());
  ao.admin_key = admin.value();
  if (o.name_enquiries_per_minute > 0)
    ao.name_enquiry_limiter = std::make_shared<KeyedTokenBuckets>(
        TokenBucketLimit{o.name_enquiries_per_minute / 60.0,
                         static_cast<double>(o.name_enquiries_per_minute)},
        std::size_t{100'000});
  ao.expire_in_min_s = o.expire_in_min_s;
  ao.webhooks = webhooks.value().get();
  ao.master_key = &master_key;
  ao.webhook_secrets = &webhook_secrets;
  ao.rate_limit_reads = o.rate_limit_reads;
  ao.rate_limit_writes = o.rate_limit_writes;
  std::atomic<bool> started_all{false};
  ao.starting = [&started_all] { return started_all.load() ? std::string() : "the node is starting"; };
  Api api(ledger, *views.value(), projector, ao);
  api.set_read_wait(std::chrono::milliseconds(o.read_wait_ms));
  api.set_ready_max_lag(o.ready_max_lag);
  http::Router router;
  api.add_routes(router);
  // A cluster node: its membership, and commands of partitions it does not write wait for one.
  std::unique_ptr<Cluster> cluster;
  std::unique_ptr<OwnerWait> owner_wait;
  std::unique_ptr<Forwarder> forwarder;
  std::unique_ptr<api::CheckpointServer> checkpoints;
  http::Handler handler = router.handler();
  if (!o.cluster.empty()) {
    auto co = cluster_options(o);
    if (!co) return fail(co.status().message());
    auto opened = Cluster::open(std::move(co).value(), ledger, *log.value());
    if (!opened) return fail(opened.status().message());
    cluster = std::move(opened).value();
    cluster->set_views_position([&projector](Partition p) { return projector.applied_seq(p); });
    OwnerWaitOptions wait;
    wait.wait = std::chrono::milliseconds(o.failover_wait_ms);
    wait.owner_elsewhere = [c = cluster.get()](Partition p) -> std::optional<std::string> {
      const PartitionOwner owner = c->owner(p);
      if (owner.node_id.empty() || owner.node_id == c->node_id()) return std::nullopt;
      return owner.url;
    };
    wait.leaving = [c = cluster.get()] { return c->leaving(); };
    wait.projector = &projector;
    wait.read_wait = std::chrono::milliseconds(o.read_wait_ms);
    if (!cluster_secret.empty()) {
      // Commands of another node's partitions go there (docs/architecture.md, "Forwarding").
      forwarder =
          std::make_unique<Forwarder>(ForwarderOptions{.node_id = o.node_id, .secret = cluster_secret});
      wait.forwarder = forwarder.get();
      wait.secret = cluster_secret;
      api::add_cluster_route(router, *cluster, ledger, projector, *forwarder, cluster_secret);
      // A new node's checkpoint (docs/architecture.md, "A new node"), once this one has started.
      checkpoints = std::make_unique<api::CheckpointServer>(
          api::CheckpointServerOptions{scratch_views(data_dir, "checkpoint"), cluster_secret, o.kafka.topic,
                                       o.node_id, [&started_all] { return started_all.load(); }},
          *views.value(), ledger);
      checkpoints->add_route(router);
      handler = router.handler();
    } else {
      log::warn(
          "no --cluster-secret-file: commands of partitions another node writes are answered 503, not "
          "forwarded");
    }
    owner_wait = std::make_unique<OwnerWait>(ledger, *views.value(), std::move(wait));
    handler = owner_wait->wrap(std::move(handler));
  }
  http::ServerOptions so;
  so.address = listen->first;
  so.port = listen->second;
  so.threads = o.http_threads > 0 ? o.http_threads : static_cast<int>(cores_available());
  so.path_body_limits = router.body_limits();
  http::Server server(so, std::move(handler));
  if (auto s = server.start(); !s) return fail("listen " + o.listen + ": " + s.message());
  log::info("serving", {{"address", so.address},
                        {"port", server.port()},
                        {"dataDir", data_dir.string()},
                        {"partitions", partitions},
                        {"log", backend},
                        {"fsync", !o.no_fsync}});

  // HTTP serves from here: reads from the views, writes answered 503 until the writer started.
  // What needs the log follows, in this order: the webhooks' new delivery database skips to the
  // log's end before the writer can take a command, and plaintext keys an older kobo left in the
  // data dir are sealed into the log once the writer has read it (and a cluster node has joined
  // its cluster). Businesses are the admin API's to make (docs/security.md): no key is made,
  // written or printed at start.
  std::vector<StartStep> steps{{"projector", [&] { return projector.start(); }},
                               {"webhooks", [&] { return webhooks.value()->start(); }},
                               {"writer", [&] { return ledger.start(); }}};
  if (cluster) steps.push_back({"cluster", [&] { return cluster->start(); }});
  steps.push_back({"signing keys", [&] {
                     return seal_legacy_signing_keys(data_dir, ledger, *views.value(), projector, master_key);
                   }});
  steps.push_back({"data dir", [&] { return record_partitions(data_dir, log_source(o), partitions); }});
  int sig = 0;
  const Started started = run_start_steps(steps, signals, sig);
  if (started == Started::failed) {
    if (cluster) cluster->stop();
    server.stop();
    webhooks.value()->stop();
    ledger.stop();
    projector.stop();
    return 1;
  }
  if (started == Started::all) {
    started_all.store(true);
    log::info("started", {{"log", backend}});
    sigwait(&signals, &sig);
  }
  log::info("stopping", {{"signal", sig}});
  // A cluster node hands its partitions over first (the others take them within moments), while
  // HTTP still answers: a command of a partition it let go is answered 503 with Retry-After.
  if (cluster) cluster->stop();
  server.stop();
  webhooks.value()->stop();
  ledger.stop();
  projector.stop();
  return 0;
}

}  // namespace
}  // namespace kobo

int main(int argc, char** argv) {
  CLI::App app{"Kobo Ledger: an event-sourced wallet, transfer and collection service for naira"};
  app.require_subcommand(1);
  kobo::ServeOptions serve;
  CLI::App* s =
      app.add_subcommand("serve", "Run the service (writer, projector and HTTP API in one process)");
  s->add_option("--listen", serve.listen, "Address to serve HTTP on, HOST:PORT")
      ->envname("KOBO_LISTEN")
      ->capture_default_str();
  s->add_option("--data-dir", serve.data_dir,
                "Directory of the embedded log, the views and the webhooks' state")
      ->envname("KOBO_DATA_DIR")
      ->capture_default_str();
  s->add_option("--partitions,--kafka-partitions", serve.partitions,
                "Log partitions when the log or topic is created (an existing one keeps its own)")
      ->envname("KOBO_PARTITIONS")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  s->add_option("--http-threads", serve.http_threads, "HTTP I/O threads; 0: one per core available")
      ->envname("KOBO_HTTP_THREADS")
      ->check(CLI::Range(0, 256))
      ->capture_default_str();
  s->add_option("--bank-name", serve.bank_name, "Name of the service's own bank, shown on wallets")
      ->envname("KOBO_BANK_NAME")
      ->capture_default_str();
  s->add_option("--bank-code", serve.bank_code, "NIBSS code of the service's own bank")
      ->envname("KOBO_BANK_CODE")
      ->capture_default_str();
  s->add_option("--nuban-code", serve.nuban_code, "6-digit NUBAN institution code for wallet account numbers")
      ->envname("KOBO_NUBAN_CODE")
      ->check([](const std::string& v) {
        return v.size() == 6 && v.find_first_not_of("0123456789") == std::string::npos ? ""
                                                                                       : "must be 6 digits";
      })
      ->capture_default_str();
  s->add_flag("--no-fsync", serve.no_fsync,
              "Do not fsync appends (benchmarks of the CPU path only: acknowledged writes can be lost)")
      ->envname("KOBO_NO_FSYNC");
  s->add_option("--admin-key-file", serve.admin_key_file,
                "Enables the admin API (businesses, their suspension, live mode; header x-admin-key) with "
                "the key in this file (mode 0600; at least 32 characters, 8 of them distinct)")
      ->envname("KOBO_ADMIN_KEY_FILE")
      ->check(CLI::ExistingFile);
  s->add_option("--admin-key", serve.admin_key,
                "The admin key itself (prefer --admin-key-file or KOBO_ADMIN_KEY: a flag shows in ps)")
      ->envname("KOBO_ADMIN_KEY");
  s->add_option("--name-enquiries-per-minute", serve.name_enquiries_per_minute,
                "Own-bank name enquiries (POST /v1/transactions/validate-account) one key may make a "
                "minute, as a burst and refilled evenly; more are answered 429 with Retry-After. 0: no limit")
      ->envname("KOBO_NAME_ENQUIRIES_PER_MINUTE")
      ->check(CLI::Range(0, 1'000'000))
      ->capture_default_str();
  s->add_option("--snapshot-every-events", serve.snapshot_every_events,
                "Write a snapshot of the writer's state to <data-dir>/snapshots every N events, so a restart "
                "replays only the log after the newest one; 0: none")
      ->envname("KOBO_SNAPSHOT_EVERY_EVENTS")
      ->capture_default_str();
  s->add_option("--writer-cache-mb", serve.writer_cache_mb,
                "Memory for the writer's history index in <data-dir>/history (what references, bank "
                "accounts and collection wallets were used before): its block cache and memtables")
      ->envname("KOBO_WRITER_CACHE_MB")
      ->check(CLI::Range(8, 65'536))
      ->capture_default_str();
  s->add_option(
       "--writer-key-file", serve.writer_key_file,
       "The writer's Ed25519 private key (PEM, `openssl genpkey -algorithm ed25519`): the writer signs "
       "checkpoints of each partition's chain with it, which `kobo audit --verify-key` checks "
       "(docs/security.md); every node of a cluster is given the same key. Unset: nothing is signed")
      ->envname("KOBO_WRITER_KEY_FILE");
  s->add_option("--previous-writer-key-file", serve.previous_writer_key_file,
                "With --writer-key-file: the key it replaces (PEM). Each partition still signed by this key "
                "gets a checkpoint signed by it that names the new key (a rotation `kobo audit --verify-key` "
                "follows); keep it until every partition has rotated (docs/security.md)")
      ->envname("KOBO_PREVIOUS_WRITER_KEY_FILE");
  s->add_option("--rate-limit-reads", serve.rate_limit_reads,
                "Reads per second per API key; more are answered 429 with Retry-After (docs/security.md). "
                "0: no limit")
      ->envname("KOBO_RATE_LIMIT_READS")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  s->add_option("--rate-limit-writes", serve.rate_limit_writes,
                "Commands per second per API key; more are answered 429 with Retry-After (docs/security.md). "
                "0: no limit")
      ->envname("KOBO_RATE_LIMIT_WRITES")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  s->add_option("--checkpoint-events", serve.checkpoint_events,
                "With --writer-key-file: sign a partition once this many of its events are unsigned")
      ->envname("KOBO_CHECKPOINT_EVENTS")
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
  s->add_option("--checkpoint-seconds", serve.checkpoint_seconds,
                "With --writer-key-file: sign a partition once its oldest unsigned event is this old")
      ->envname("KOBO_CHECKPOINT_SECONDS")
      ->check(CLI::Range(0.01, 3600.0))
      ->capture_default_str();
  s->add_option("--projector-nice", serve.projector_nice,
                "Nice value of the thread that keeps the views up to date, so that they follow the log "
                "closely under load (below 0 needs CAP_SYS_NICE; without it, a warning and the default); "
                "0: as started")
      ->envname("KOBO_PROJECTOR_NICE")
      ->check(CLI::Range(-20, 19))
      ->capture_default_str();
  s->add_option("--projector-flush-spacing-us", serve.projector_flush_spacing_us,
                "While no request waits for the views, the least time between two of their writes, so "
                "that each covers many commands; 0: write as soon as the log has more")
      ->envname("KOBO_PROJECTOR_FLUSH_SPACING_US")
      ->check(CLI::Range(0, 100'000))
      ->capture_default_str();
  s->add_option("--projector-lanes", serve.projector_lanes,
                "Threads that apply the log's partitions to the views in parallel (a partition's events "
                "in one of them); 0: one per core available, at most one per partition")
      ->envname("KOBO_PROJECTOR_LANES")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  s->add_option("--rail-delay-ms", serve.rail_delay_ms, "Sandbox payout rail: processing to final, in ms")
      ->envname("KOBO_RAIL_DELAY_MS")
      ->check(CLI::Range(0, 3'600'000))
      ->capture_default_str();
  s->add_option("--collection-expire-min-s", serve.expire_in_min_s,
                "Shortest expireIn accepted for collection wallets (the API's rule is 600; tests lower it)")
      ->envname("KOBO_COLLECTION_EXPIRE_MIN_S")
      ->check(CLI::Range(1, 1800))
      ->capture_default_str();
  s->add_option("--fee-tiers", serve.fee_tiers, "Bank transfer fees in kobo: UP_TO:FEE,...,max:FEE")
      ->envname("KOBO_FEE_TIERS")
      ->capture_default_str();
  s->add_option("--limits", serve.limits_file,
                "KYC tier limits, a JSON file: {\"1\": {\"dailyDebit\": KOBO, \"maxBalance\": KOBO|null}, "
                "\"2\": ..., \"3\": ...} (default: the CBN's tiers, docs/architecture.md)")
      ->envname("KOBO_LIMITS")
      ->check(CLI::ExistingFile);
  kobo::add_kafka_flags(
      s, serve.kafka,
      "Run on Kafka at HOST:PORT[,...] instead of the embedded log; the topic is created if missing "
      "(docs/architecture.md section 8)");
  s->add_option("--kafka-append-timeout-ms", serve.kafka_append_timeout_ms,
                "Kafka: an append not committed within this is answered 503")
      ->envname("KOBO_KAFKA_APPEND_TIMEOUT_MS")
      ->check(CLI::Range(100, 120'000))
      ->capture_default_str();
  s->add_option("--cluster", serve.cluster,
                "Run as a node of the cluster NAME on Kafka: nodes with the same name on one topic share its "
                "partitions, each written by one node; a node that dies has its partitions taken over "
                "within seconds (docs/architecture.md, \"Cluster\")")
      ->envname("KOBO_CLUSTER");
  s->add_option("--node-id", serve.node_id, "This node's id in its cluster (letters, digits, '.', '_', '-')")
      ->envname("KOBO_NODE_ID");
  s->add_option(
       "--advertise", serve.advertise,
       "The URL other nodes of the cluster reach this one at, http://HOST:PORT (default: http:// and "
       "--listen)")
      ->envname("KOBO_ADVERTISE");
  s->add_option("--failover-wait-ms", serve.failover_wait_ms,
                "In a cluster, how long a command whose partition no node writes (a takeover) waits for one "
                "before it is answered 503 with Retry-After")
      ->envname("KOBO_FAILOVER_WAIT_MS")
      ->check(CLI::Range(0, 120'000))
      ->capture_default_str();
  s->add_option("--cluster-secret-file", serve.cluster_secret_file,
                "In a cluster, a file (mode 0600: readable by its owner only) holding the secret the nodes "
                "share: with it, a command sent to a node that does not write its partition is forwarded to "
                "the one that does, and GET /v1/cluster answers (header x-cluster-secret)")
      ->envname("KOBO_CLUSTER_SECRET_FILE");
  s->add_option("--read-wait-ms", serve.read_wait_ms,
                "How long a read with a Kobo-Position token waits for the views to include it before it is "
                "answered 503 with Retry-After")
      ->envname("KOBO_READ_WAIT_MS")
      ->check(CLI::Range(0, 60'000))
      ->capture_default_str();
  s->add_option("--join-from", serve.join_from,
                "In a cluster, where a new node (an empty data dir) takes its views and writer state from: "
                "auto (a checkpoint of a peer its cluster's group lists, checked against the log), a peer's "
                "URL http://HOST:PORT, or replay (none: rebuilt from the log's start). A checkpoint that "
                "cannot be had or fails a check is refused, and the node rebuilds from the log")
      ->envname("KOBO_JOIN_FROM")
      ->capture_default_str();
  s->add_option("--ready-max-lag", serve.ready_max_lag,
                "/readyz: once the views have caught up with the log, the node stays ready while they are at "
                "most this many events behind it")
      ->envname("KOBO_READY_MAX_LAG")
      ->capture_default_str();
  s->add_option("--roles", serve.roles, "command,projector,query (default: all in one process) or projector")
      ->envname("KOBO_ROLES")
      ->delimiter(',')
      ->capture_default_str();
  s->add_option("--log-level", serve.log_level, "debug, info, warn or error")
      ->envname("KOBO_LOG_LEVEL")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}))
      ->capture_default_str();
  s->add_flag(
       "--webhook-allow-private", serve.webhook_allow_private,
       "Allow webhook delivery to loopback and private addresses (off: server-side request forgery guard)")
      ->envname("KOBO_WEBHOOK_ALLOW_PRIVATE");
  s->add_option("--webhook-timeout-ms", serve.webhook_timeout_ms,
                "One webhook attempt must get its 2xx within this")
      ->envname("KOBO_WEBHOOK_TIMEOUT_MS")
      ->check(CLI::Range(1, 600'000))
      ->capture_default_str();
  s->add_option("--webhook-retry-schedule", serve.webhook_retry_schedule,
                "Waits after each failed webhook attempt (ms, s, m or h); the last repeats")
      ->envname("KOBO_WEBHOOK_RETRY_SCHEDULE")
      ->capture_default_str();
  s->add_option("--webhook-retry-window", serve.webhook_retry_window,
                "How long a webhook delivery is retried before it is marked failed")
      ->envname("KOBO_WEBHOOK_RETRY_WINDOW")
      ->capture_default_str();
  s->add_option("--webhook-concurrency", serve.webhook_concurrency, "Webhook attempts in flight, overall")
      ->envname("KOBO_WEBHOOK_CONCURRENCY")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  s->add_option("--webhook-endpoint-concurrency", serve.webhook_endpoint_concurrency,
                "Webhook attempts in flight per receiving host:port")
      ->envname("KOBO_WEBHOOK_ENDPOINT_CONCURRENCY")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  s->add_option("--master-key-file", serve.master_key_file,
                "The deployment's master key (at least 32 characters; the same on every node): what "
                "nodes sign webhooks with is encrypted under it, and webhook secrets derive from it. Or "
                "the key itself in KOBO_MASTER_KEY. Neither: made at the first start in "
                "<data-dir>/master-key, with a warning (docs/security.md)")
      ->envname("KOBO_MASTER_KEY_FILE");
  s->add_option("--webhook-master-secret", serve.webhook_master_secret,
                "Deprecated: the master key (--master-key-file), as kobo before envelope encryption took it")
      ->envname("KOBO_WEBHOOK_MASTER_SECRET");
  kobo::AuditCommands audit_commands(app);  // `kobo audit` and `kobo replay`
  kobo::EventsCommand events_command(app);  // `kobo events`
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kobo::kExitDone : kobo::kExitCannotRun;  // --help is not an error
  }
  if (s->parsed()) return kobo::serve(serve);
  if (const auto code = audit_commands.run()) return *code;
  if (const auto code = events_command.run()) return *code;
  return kobo::kExitCannotRun;
}
