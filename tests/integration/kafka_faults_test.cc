// Faults of the Kafka backend through the real server (docs/architecture.md section 8), in the Kafka run only
// (ctest label `kafka`):
//  - the broker killed under load: writes answer 503 promptly (no hang, never a 2xx while the
//    broker is dead), /readyz says so, the writer comes back by itself when the broker does, and
//    nothing acknowledged is lost or applied twice;
//  - a second writer on the same topic fences the first for good, and nothing the fenced one
//    tried after that reaches the log;
//  - a fresh data dir on an existing topic rebuilds views identical to the original's;
//  - a node restarted while the broker is dead serves its views at once, answers writes 503
//    within the append timeout, and takes writes in the same process once the broker is back;
//  - on a secured broker (label kafka_secured): a wrong password, a topic it may not create and a
//    topic outside its ACLs are each a clear error at start, never a hang.
// The broker-kill test starts a broker of its own (tools/kafka/broker.sh): the shared one serves
// other tests in parallel. Random choices come from a seed printed at the start (KOBO_TEST_SEED).

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "events/checkpoint.h"
#include "events/kafka_log.h"
#include "tests/audit/run_kobo.h"
#include "tests/integration/harness.h"
#include "tests/support/test_kafka.h"

namespace kobo::it {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

fs::path kobo_binary() { return kobo_options().binary; }

// A directory of its own under TMPDIR, removed at the end unless the test failed.
struct TempDir : kobo::testing::ScratchDir {
  explicit TempDir(std::string_view name) : ScratchDir(name, Keep::on_failure) {}
};

// A Kafka broker of this test's own (tools/kafka/broker.sh), which every KoboProcess created
// while it lives serves on (KOBO_TEST_KAFKA_DIR points at it; the old value comes back after).
// Stopped by the destructor, also when the test fails.
class OwnBroker {
 public:
  // mode: "" (one broker) or "--cluster" (three, broker.sh start DIR --cluster).
  explicit OwnBroker(const std::string& mode = "") : root_("it-broker"), dir_(root_.path() / "broker") {
    if (const char* old = std::getenv("KOBO_TEST_KAFKA_DIR")) old_env_ = old;
    run("start", true, mode);
    ::setenv("KOBO_TEST_KAFKA_DIR", dir_.c_str(), 1);
  }
  ~OwnBroker() {
    run("stop", /*must=*/false);
    if (old_env_)
      ::setenv("KOBO_TEST_KAFKA_DIR", old_env_->c_str(), 1);
    else
      ::unsetenv("KOBO_TEST_KAFKA_DIR");
  }
  OwnBroker(const OwnBroker&) = delete;
  OwnBroker& operator=(const OwnBroker&) = delete;

  void kill() { run("kill"); }
  void restart() { run("restart"); }
  // A cluster's node (node.id = broker id `node`, 1 to 3) alone.
  void kill_node(int node) { run("kill", true, "", "n" + std::to_string(node)); }
  void restart_node(int node) { run("restart", true, "", "n" + std::to_string(node)); }
  std::string bootstrap() const {
    std::ifstream in(dir_ / "bootstrap");
    std::string b;
    in >> b;
    return b;
  }

 private:
  void run(const std::string& command, bool must = true, const std::string& mode = "",
           const std::string& node = "") {
    const std::string script = std::string(KOBO_SOURCE_DIR) + "/tools/kafka/broker.sh";
    const fs::path out = root_.path() / "broker.sh.out";
    const fs::path dir = node.empty() ? dir_ : dir_ / node;
    const std::string line =
        "'" + script + "' " + command + " '" + dir.string() + "' " + mode + " >>'" + out.string() + "' 2>&1";
    const int status = std::system(line.c_str());
    if (must && (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
      std::ifstream in(out);
      throw std::runtime_error("broker.sh " + command + " failed (" + std::to_string(status) +
                               "): " + std::string(std::istreambuf_iterator<char>(in), {}));
    }
  }

  TempDir root_;
  fs::path dir_;
  std::optional<std::string> old_env_;
};

// `kobo audit` on the topic (and the views of `data_dir`, when given, of a stopped server).
kobo::testing::RunResult audit(const std::string& topic, const fs::path& data_dir = {}) {
  std::vector<std::string> args{"audit", "--kafka-brokers", kobo::testing::test_kafka_brokers(),
                                "--kafka-topic", topic};
  if (!data_dir.empty()) args.insert(args.end(), {"--data-dir", data_dir.string()});
  return kobo::testing::run_kobo(kobo_binary(), args);
}

// A second server on the same topic with a fresh data dir (no views) and the first's keys.
KoboOptions same_topic_options(const KoboProcess& first, const fs::path& data_dir,
                               std::vector<std::string> extra_args = {}) {
  KoboOptions options = kobo_options(std::move(extra_args));
  options.data_dir = data_dir;
  options.kafka_topic = first.kafka_topic();
  options.credentials = first.credentials();
  return options;
}

std::int64_t pending_count(HttpClient& http, const std::string& key) {
  return total_count(http, key, "/v1/transactions", "status=pending");
}

struct Attempt {
  std::string reference;
  json body;
  Clock::time_point issued, answered;
  unsigned status = 0;  // 0: no answer
  std::string detail;
};

// Sends one transfer on `client` and records the answer and its timing.
void send(HttpClient& client, const std::string& key, Attempt& at) {
  at.issued = Clock::now();
  try {
    const HttpResult res = client.post("/v1/transactions/transfer", at.body, key);
    at.status = res.status;
    at.detail = res.body.substr(0, 300);
  } catch (const std::exception& e) {
    at.detail = e.what();
  }
  at.answered = Clock::now();
}

// Issues one transfer from a thread of its own (its own client) and records the answer.
void issue(KoboProcess& server, const std::string& key, Attempt& at) {
  auto client = server.new_client(milliseconds(30'000));
  send(*client, key, at);
}

// Transfers between `ids` (funded so that none can be refused for funds) from `threads` threads,
// each with its own client, until stop(); every attempt is recorded with its answer. After a
// request without an answer (the server killed) a thread connects anew; after any failure it
// waits 50 ms: the point is requests over time, not their number.
class TransferLoad {
 public:
  TransferLoad(std::uint16_t port, std::string key, std::vector<std::string> ids, std::uint64_t seed,
               int threads = 4)
      : key_(std::move(key)), ids_(std::move(ids)) {
    for (int t = 0; t < threads; ++t) pool_.emplace_back([this, port, seed, t] { run(port, seed, t); });
  }
  ~TransferLoad() { stop(); }
  TransferLoad(const TransferLoad&) = delete;
  TransferLoad& operator=(const TransferLoad&) = delete;

  void stop() {
    stop_ = true;
    for (auto& th : pool_)
      if (th.joinable()) th.join();
  }
  int answered() const { return answered_.load(); }
  // The attempts so far (all of them after stop()).
  std::vector<Attempt> attempts() const {
    std::lock_guard lock(mu_);
    return attempts_;
  }
  // When the first transfer issued after `t` was acknowledged, if one was.
  std::optional<Clock::time_point> first_ack_issued_after(Clock::time_point t) const {
    std::lock_guard lock(mu_);
    std::optional<Clock::time_point> first;
    for (const Attempt& at : attempts_)
      if (at.status == 200 && at.issued > t && (!first || at.answered < *first)) first = at.answered;
    return first;
  }

 private:
  void run(std::uint16_t port, std::uint64_t seed, int t) {
    std::mt19937_64 trng(seed ^ (static_cast<std::uint64_t>(t) << 32));
    const std::size_t n = ids_.size();
    // Longer than any answer may take, so a hang is measured rather than cut off.
    auto client = std::make_unique<HttpClient>("127.0.0.1", port, milliseconds(30'000));
    for (int i = 0; !stop_.load(); ++i) {
      const std::size_t a = trng() % n;
      const std::size_t b = (a + 1 + trng() % (n - 1)) % n;
      Attempt at;
      at.reference = "kfault-" + std::to_string(seed) + "-t" + std::to_string(t) + "-" + std::to_string(i);
      at.body = transfer_body(ids_[a], ids_[b], 10'000 + static_cast<std::int64_t>(trng() % 1'000),
                              at.reference, "kafka fault test");
      send(*client, key_, at);
      ++answered_;
      const unsigned status = at.status;
      {
        std::lock_guard lock(mu_);
        attempts_.push_back(std::move(at));
      }
      if (status == 0) client = std::make_unique<HttpClient>("127.0.0.1", port, milliseconds(30'000));
      if (status != 200) std::this_thread::sleep_for(milliseconds(50));
    }
  }

  const std::string key_;
  const std::vector<std::string> ids_;
  std::atomic<bool> stop_{false};
  std::atomic<int> answered_{0};
  mutable std::mutex mu_;
  std::vector<Attempt> attempts_;  // guarded by mu_
  std::vector<std::thread> pool_;
};

// Creates `n` wallets on `server`, each funded with `funding`.
std::vector<std::string> funded_wallets(KoboProcess& server, int n, std::int64_t funding) {
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) {
    const json w = create_wallet(server.client(), server.test_key());
    ids.push_back(w["publicId"]);
    fund(server.client(), server.test_key(), w, funding);
  }
  return ids;
}

// Holds placed before a run (extensions section 2), so the bank invariants cover them: each
// wallet holds 100'000 kobo, 40'000 of it captured to the next wallet, and holds 50'000 more in
// a hold that is voided. What each wallet should hold afterwards, and the captures (a transfer
// each: reference -> {source, destination, amount}).
struct HoldsBefore {
  std::map<std::string, std::int64_t> held;
  std::map<std::string, json> captures;
};

HoldsBefore place_holds(KoboProcess& server, const std::vector<std::string>& ids) {
  HttpClient& http = server.client();
  const std::string key = server.test_key();
  HoldsBefore out;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::string& next = ids[(i + 1) % ids.size()];
    const json h = data_or_throw(
        http.post("/v1/holds",
                  json{{"source", ids[i]}, {"amount", 100'000}, {"reference", unique_name("khold")}}, key),
        201, "place a hold");
    const std::string reference = unique_name("kcap");
    data_or_throw(http.post("/v1/holds/" + h["publicId"].get<std::string>() + "/capture",
                            json{{"destination", next}, {"reference", reference}, {"amount", 40'000}}, key),
                  201, "capture a hold");
    out.captures[reference] = json{{"source", ids[i]}, {"destination", next}, {"amount", 40'000}};
    out.held[ids[i]] = 60'000;
    const json v = data_or_throw(
        http.post("/v1/holds",
                  json{{"source", ids[i]}, {"amount", 50'000}, {"reference", unique_name("khold")}}, key),
        201, "place a hold");
    data_or_throw(http.post("/v1/holds/" + v["publicId"].get<std::string>() + "/void", json::object(), key),
                  200, "void a hold");
  }
  return out;
}

// The bank invariants after a run of `attempts` between `ids` (each funded with `funding`):
// every acknowledged transfer is in the log as it was sent; money is conserved; every transfer
// without a verdict, retried as it was, answers 200 (a replay of one the log kept, or its first
// and only application); then each balance is what the successful transfers make it (none
// negative), with exactly one debit and one credit leg per transfer that succeeded and no other
// debit but the captures of `holds`; each wallet holds what its pending holds have left, its
// availableBalance is never below zero, and no hold is captured above its amount; and the
// stopped server's views and the topic pass `kobo audit` (which checks the holds' rules in the log).
void check_bank_invariants(KoboProcess& server, const std::vector<std::string>& ids, std::int64_t funding,
                           std::vector<Attempt> attempts, const HoldsBefore& holds = {}) {
  HttpClient& http = server.client();
  const std::string key = server.test_key();
  const auto total = static_cast<std::int64_t>(ids.size()) * funding;
  std::map<std::string, std::int64_t> model;
  for (const auto& id : ids) model[id] = funding;
  std::set<std::string> succeeded;
  for (const Attempt& at : attempts) {
    if (at.status != 200) continue;
    const HttpResult res = http.get("/v1/transactions/" + at.reference, key);
    ASSERT_EQ(res.status, 200u) << "acknowledged transfer " << at.reference << " lost: " << res.body
                                << "\nlog:\n"
                                << server.log_tail();
    const json& t = res.json["data"];
    EXPECT_EQ(t["entry"], "debit");
    EXPECT_EQ(t["amount"], at.body["amount"]);
    EXPECT_EQ(t["source"], at.body["source"]);
    EXPECT_EQ(t["destination"], at.body["destination"]);
    succeeded.insert(at.reference);
  }
  {
    std::int64_t sum = 0;
    for (const auto& id : ids) sum += balance_of(http, key, id);
    EXPECT_EQ(sum, total) << "before the retries";
  }
  int retried = 0, replayed = 0;
  for (const Attempt& at : attempts) {
    if (at.status == 200) continue;
    const HttpResult res = http.post("/v1/transactions/transfer", at.body, key);
    ASSERT_EQ(res.status, 200u) << "retry of " << at.reference << ": " << res.body;
    EXPECT_EQ(res.json["data"]["reference"], at.reference);
    ++retried;
    replayed += res.header("idempotent-replayed") == "true";
    succeeded.insert(at.reference);
  }
  std::cout << retried << " retried, " << replayed << " of them replays (kept by the log without an answer)"
            << std::endl;

  for (const Attempt& at : attempts) {
    if (!succeeded.count(at.reference)) continue;
    const std::int64_t amount = at.body["amount"];
    model[at.body["source"]] -= amount;
    model[at.body["destination"]] += amount;
  }
  for (const auto& [reference, c] : holds.captures) {
    const std::int64_t amount = c["amount"];
    model[c["source"]] -= amount;
    model[c["destination"]] += amount;
  }
  ASSERT_TRUE(wait_until([&] { return pending_count(http, key) == 0; }, milliseconds(20'000)))
      << "transfers still pending";
  std::int64_t sum = 0;
  for (const auto& id : ids) {
    const std::int64_t balance = balance_of(http, key, id);
    EXPECT_EQ(balance, model[id]) << "wallet " << id;
    EXPECT_GE(balance, 0) << "wallet " << id;
    sum += balance;
  }
  EXPECT_EQ(sum, total);

  // Exactly one debit (and one credit leg) per transfer that succeeded; no other debit.
  std::map<std::string, int> debits_by_ref, credits_by_debit_ref;
  for (const json& t : list_all(http, key, "/v1/transactions")) {
    if (t["entry"] == "debit")
      debits_by_ref[t["reference"]]++;
    else if (t["debitReference"].is_string())
      credits_by_debit_ref[t["debitReference"]]++;
  }
  EXPECT_EQ(debits_by_ref.size(), succeeded.size() + holds.captures.size());
  for (const auto& ref : succeeded) {
    EXPECT_EQ(debits_by_ref[ref], 1) << "debits with reference " << ref;
    EXPECT_EQ(credits_by_debit_ref[ref], 1) << "credit legs of " << ref;
  }
  for (const auto& [ref, c] : holds.captures) {
    EXPECT_EQ(debits_by_ref[ref], 1) << "debits of capture " << ref;
    EXPECT_EQ(credits_by_debit_ref[ref], 1) << "credit legs of capture " << ref;
  }

  // Holds: what each wallet holds is what its pending holds have left; available never below
  // zero; no hold captured above its amount.
  for (const auto& id : ids) {
    const json w = get_wallet(http, key, id);
    const auto it = holds.held.find(id);
    const std::int64_t held = it == holds.held.end() ? 0 : it->second;
    EXPECT_EQ(w["heldBalance"], held) << "wallet " << id;
    EXPECT_EQ(w["availableBalance"], w["balance"].get<std::int64_t>() - held) << "wallet " << id;
    EXPECT_GE(w["availableBalance"].get<std::int64_t>(), 0) << "wallet " << id;
    std::int64_t remaining = 0;
    for (const json& h : list_all(http, key, "/v1/holds", "source=" + id)) {
      std::int64_t captured = 0;
      for (const json& c : h["captures"]) captured += c["amount"].get<std::int64_t>();
      EXPECT_EQ(h["capturedAmount"], captured);
      EXPECT_LE(captured, h["amount"].get<std::int64_t>());
      if (h["status"] == "pending") remaining += h["remaining"].get<std::int64_t>();
    }
    EXPECT_EQ(remaining, held) << "wallet " << id;
  }

  // The log and the views of the stopped server pass the audit.
  EXPECT_EQ(server.terminate(), 0) << server.log_tail();
  const auto report = audit(server.kafka_topic(), server.data_dir());
  EXPECT_EQ(report.exit_code, 0) << report.output;
}

// The broker-kill test keeps its server and broker here so that TearDown sees a failure.
class KafkaFaults : public ::testing::Test {
 protected:
  void TearDown() override {
    server_.reset();  // before the broker goes
    broker_.reset();
  }
  std::unique_ptr<OwnBroker> broker_;
  std::unique_ptr<KoboProcess> server_;
};

TEST_F(KafkaFaults, BrokerKilledUnderLoadAnswers503PromptlyAndLosesNothingAcknowledged) {
  const std::uint64_t seed =
      test_seed("KafkaFaults.BrokerKilledUnderLoadAnswers503PromptlyAndLosesNothingAcknowledged");
  std::mt19937_64 rng(seed);
  broker_ = std::make_unique<OwnBroker>();
  OwnBroker& broker = *broker_;
  server_ = std::make_unique<KoboProcess>(kobo_options({"--kafka-append-timeout-ms", "2000"}));
  KoboProcess& server = *server_;
  HttpClient& http = server.client();
  const std::string key = server.test_key();

  // Rich wallets: no transfer of the run can be refused for funds, so every unanswered one can
  // be retried to a 200.
  constexpr int kWallets = 10;
  constexpr std::int64_t kFunding = 1'000'000'000;
  const std::vector<std::string> ids = funded_wallets(server, kWallets, kFunding);
  const HoldsBefore holds = place_holds(server, ids);
  TransferLoad load(server.port(), key, ids, seed);
  const auto answered = [&] { return load.answered(); };

  ASSERT_TRUE(wait_until([&] { return answered() >= 20; }, milliseconds(20'000)))
      << "no load reached the server";
  std::this_thread::sleep_for(milliseconds(1'500 + rng() % 1'000));
  const int answered_before_kill = answered();
  broker.kill();
  const auto killed = Clock::now();

  // /readyz says the writer cannot write, soon, and keeps saying it. (Under load it may answer
  // 503 for a moment anyway, while the views catch up: only a 503 that lasts a second counts.)
  auto probe = server.new_client(milliseconds(5'000));
  auto readyz = [&] {
    try {
      return probe->get("/readyz").status;
    } catch (const std::exception&) {
      return 0u;
    }
  };
  std::optional<Clock::duration> not_ready_after;
  std::optional<Clock::time_point> not_ready_since;
  while (Clock::now() - killed < std::chrono::seconds(15)) {
    const auto now = Clock::now();
    if (readyz() != 503) {
      not_ready_since.reset();
    } else if (!not_ready_since) {
      not_ready_since = now;
    } else if (now - *not_ready_since >= std::chrono::seconds(1)) {
      not_ready_after = *not_ready_since - killed;
      break;
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_TRUE(not_ready_after.has_value()) << "/readyz did not stay 503 within 15 s of the broker's death";
  const auto not_ready_ms = std::chrono::duration_cast<milliseconds>(*not_ready_after).count();
  EXPECT_LE(not_ready_ms, 10'000) << "/readyz answered 503 only " << not_ready_ms << " ms after the kill";

  // Requests issued well after the kill, each from a thread of its own, so that a load thread
  // stuck on an earlier request cannot keep them from being sent.
  std::vector<Attempt> late;
  for (int i = 0; killed + milliseconds(1'000 + 500 * i) < killed + std::chrono::seconds(7); ++i) {
    Attempt at;
    at.reference = "kfault-" + std::to_string(seed) + "-late-" + std::to_string(i);
    at.body = transfer_body(ids[static_cast<std::size_t>(i) % kWallets],
                            ids[(static_cast<std::size_t>(i) + 1) % kWallets], 10'000 + i, at.reference,
                            "kafka fault test");
    late.push_back(std::move(at));
  }
  std::vector<std::thread> late_pool;
  for (std::size_t i = 0; i < late.size(); ++i) {
    std::this_thread::sleep_until(killed + milliseconds(1'000 + 500 * static_cast<int>(i)));
    late_pool.emplace_back([&, i] { issue(server, key, late[i]); });
  }
  // Keep the load on the dead broker a while longer, then let every thread finish its request.
  while (Clock::now() - killed < std::chrono::seconds(8)) std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(readyz(), 503u) << "/readyz 8 s after the broker's death";
  load.stop();
  for (auto& th : late_pool) th.join();

  std::vector<Attempt> attempts = late;
  for (const Attempt& at : load.attempts()) attempts.push_back(at);
  int acked = 0, unknown = 0, after_kill = 0;
  std::int64_t slowest_ms = 0;
  for (const Attempt& at : attempts) {
    if (at.status == 200)
      ++acked;
    else if (at.status == 0 || at.status == 503)
      ++unknown;
    else
      ADD_FAILURE() << at.reference << " answered " << at.status << " " << at.detail;
    if (at.issued < killed + std::chrono::seconds(1)) {
      // In flight at the kill: its append fails within the append timeout (2 s), then it is
      // answered; it must not hang either.
      if (at.answered > killed) {
        EXPECT_NE(at.status, 0u) << at.reference << " in flight at the kill got no answer in "
                                 << std::chrono::duration_cast<milliseconds>(at.answered - at.issued).count()
                                 << " ms: " << at.detail;
        EXPECT_LE(std::chrono::duration_cast<milliseconds>(at.answered - killed).count(), 12'000)
            << at.reference << " in flight at the kill was answered (" << at.status << ") only "
            << std::chrono::duration_cast<milliseconds>(at.answered - killed).count() << " ms after it";
      }
      continue;
    }
    ++after_kill;
    const auto took = std::chrono::duration_cast<milliseconds>(at.answered - at.issued).count();
    slowest_ms = std::max<std::int64_t>(slowest_ms, took);
    EXPECT_NE(at.status, 0u) << at.reference << " (issued "
                             << std::chrono::duration_cast<milliseconds>(at.issued - killed).count()
                             << " ms after the kill) got no answer: " << at.detail;
    EXPECT_LE(took, 10'000) << at.reference << " issued "
                            << std::chrono::duration_cast<milliseconds>(at.issued - killed).count()
                            << " ms after the kill took " << took << " ms to answer";
    if (at.status != 0) {
      EXPECT_EQ(at.status, 503u) << at.reference << " answered while the broker was dead: " << at.detail;
    }
  }
  std::cout << attempts.size() << " transfers sent (" << answered_before_kill
            << " answered before the kill), " << acked << " acknowledged, " << unknown
            << " without a verdict; " << after_kill
            << " issued more than 1 s after the kill, the slowest answered in " << slowest_ms
            << " ms; /readyz answered 503 " << not_ready_ms << " ms after the kill" << std::endl;
  EXPECT_GE(after_kill, static_cast<int>(late.size()))
      << "too little load reached the server while the broker was dead";

  // The broker comes back on the same ports and log; the writer recovers by itself.
  const auto restarting = Clock::now();
  broker.restart();
  ASSERT_TRUE(wait_until(
      [&] {
        try {
          return probe->get("/readyz").status == 200;
        } catch (const std::exception&) {
          return false;
        }
      },
      milliseconds(60'000)))
      << "/readyz not 200 within 60 s of the broker's restart; log:\n"
      << server.log_tail();
  std::cout << "ready again " << std::chrono::duration_cast<milliseconds>(Clock::now() - restarting).count()
            << " ms after broker.sh restart was called" << std::endl;
  const std::string after_ref = "kfault-" + std::to_string(seed) + "-after";
  const json after_body = transfer_body(ids[0], ids[1], 12'345, after_ref, "after the restart");
  {
    const HttpResult res = http.post("/v1/transactions/transfer", after_body, key);
    ASSERT_EQ(res.status, 200u) << "a transfer after the recovery: " << res.body << "\nlog:\n"
                                << server.log_tail();
  }
  attempts.push_back(Attempt{after_ref, after_body, {}, {}, 200, {}});
  check_bank_invariants(server, ids, kFunding, std::move(attempts), holds);
}

TEST_F(KafkaFaults, ANodeStartedInABrokerOutageServesReadsAndTakesWritesOnceTheBrokerIsBack) {
  constexpr int kAppendTimeoutMs = 1'500;
  const std::vector<std::string> flags{"--kafka-append-timeout-ms", std::to_string(kAppendTimeoutMs)};
  broker_ = std::make_unique<OwnBroker>();
  OwnBroker& broker = *broker_;
  server_ = std::make_unique<KoboProcess>(kobo_options(flags));
  KoboProcess& first = *server_;
  const std::string key = first.test_key();
  const json w1 = create_wallet(first.client(), key), w2 = create_wallet(first.client(), key);
  const std::string id1 = w1["publicId"], id2 = w2["publicId"];
  fund(first.client(), key, w1, 1'000'000);
  const std::string before_ref = unique_name("outage-before");
  data_or_throw(
      first.client().post("/v1/transactions/transfer", transfer_body(id1, id2, 10'000, before_ref), key), 200,
      "transfer before the outage");
  ASSERT_TRUE(wait_until([&] { return pending_count(first.client(), key) == 0; })) << "still pending";
  ASSERT_EQ(first.terminate(), 0) << first.log_tail();

  // The node restarts while the broker is dead.
  broker.kill();
  KoboOptions options = kobo_options(flags);
  options.data_dir = first.data_dir();
  options.kafka_topic = first.kafka_topic();
  options.credentials = first.credentials();
  options.wait_ready = false;
  const auto spawned = Clock::now();
  KoboProcess node(options);
  const auto healthy_ms = std::chrono::duration_cast<milliseconds>(Clock::now() - spawned).count();
  EXPECT_LE(healthy_ms, 5'000) << "/healthz answered 200 only " << healthy_ms << " ms after the start";
  HttpClient& http = node.client();

  // Not ready; the node's log names the broker it cannot reach, the public answer does not.
  const HttpResult readyz = http.get("/readyz");
  EXPECT_EQ(readyz.status, 503u) << readyz.body;
  EXPECT_EQ(readyz.body.find(broker.bootstrap()), std::string::npos)
      << "/readyz names the broker: " << readyz.body;
  EXPECT_NE(node.log_tail(400).find(broker.bootstrap()), std::string::npos)
      << "the log does not name the broker " << broker.bootstrap() << ":\n"
      << node.log_tail();
  // Reads are answered from the data dir's views.
  EXPECT_EQ(balance_of(http, key, id1), 990'000);
  EXPECT_EQ(balance_of(http, key, id2), 10'000);
  EXPECT_EQ(http.get("/v1/transactions/" + before_ref, key).status, 200u);
  // Writes are refused within the append timeout, and move nothing.
  const std::string refused_ref = unique_name("outage-refused");
  const auto issued = Clock::now();
  const HttpResult refused =
      http.post("/v1/transactions/transfer", transfer_body(id1, id2, 20'000, refused_ref), key);
  const auto refused_ms = std::chrono::duration_cast<milliseconds>(Clock::now() - issued).count();
  EXPECT_EQ(refused.status, 503u) << refused.body;
  EXPECT_LE(refused_ms, kAppendTimeoutMs)
      << "a write in the outage was answered after " << refused_ms << " ms";
  EXPECT_EQ(node.client().get("/healthz").status, 200u);

  // The broker returns: the same process connects, reads the topic and takes writes.
  const auto restarting = Clock::now();
  broker.restart();
  ASSERT_TRUE(wait_until([&] { return node.client().get("/readyz").status == 200; }, milliseconds(60'000)))
      << "/readyz not 200 within 60 s of the broker's return; log:\n"
      << node.log_tail();
  std::cout << "healthy " << healthy_ms << " ms after the start in the outage; a write refused in "
            << refused_ms << " ms; ready "
            << std::chrono::duration_cast<milliseconds>(Clock::now() - restarting).count()
            << " ms after broker.sh restart was called" << std::endl;
  const std::string after_ref = unique_name("outage-after");
  data_or_throw(http.post("/v1/transactions/transfer", transfer_body(id1, id2, 30'000, after_ref), key), 200,
                "transfer once the broker is back");
  EXPECT_EQ(http.get("/v1/transactions/" + refused_ref, key).status, 404u)
      << "the refused write reached the log";
  ASSERT_TRUE(wait_until([&] { return pending_count(http, key) == 0; })) << "still pending";
  EXPECT_EQ(balance_of(http, key, id1), 1'000'000 - 10'000 - 30'000);
  EXPECT_EQ(balance_of(http, key, id2), 10'000 + 30'000);

  EXPECT_EQ(node.terminate(), 0) << node.log_tail();
  const auto report = audit(node.kafka_topic(), node.data_dir());
  EXPECT_EQ(report.exit_code, 0) << report.output;
}

// ---- a three-broker cluster (broker.sh start DIR --cluster: replication factor 3, min ISR 2) -------
// Not in the ctest runs (make test and CI): `make kafka-cluster-test` runs it (about 3 minutes).

class KafkaCluster : public KafkaFaults {};

// The partition the load writes to (the one with the most records) and its leader.
std::pair<int, int> busiest_partition(const std::string& brokers, const std::string& topic) {
  const auto parts = kobo::testing::describe_test_topic(brokers, topic);
  int best = -1;
  for (std::size_t p = 0; p < parts.size(); ++p)
    if (best < 0 || parts[p].end_offset > parts[static_cast<std::size_t>(best)].end_offset)
      best = static_cast<int>(p);
  return {best, best < 0 ? -1 : parts[static_cast<std::size_t>(best)].leader};
}

// Whether every partition of the topic has a leader and all three replicas in sync.
bool fully_replicated(const std::string& brokers, const std::string& topic) {
  const auto parts = kobo::testing::describe_test_topic(brokers, topic);
  return !parts.empty() && std::all_of(parts.begin(), parts.end(), [](const kobo::testing::TestPartition& p) {
    return p.leader >= 0 && p.replicas == 3 && p.in_sync == 3;
  });
}

TEST_F(KafkaCluster, BankInvariantsHoldWhenTheLeaderIsLostUnderLoadAndANodeRestartsInAnOutage) {
  const std::uint64_t seed =
      test_seed("KafkaCluster.BankInvariantsHoldWhenTheLeaderIsLostUnderLoadAndANodeRestartsInAnOutage");
  broker_ = std::make_unique<OwnBroker>("--cluster");
  OwnBroker& cluster = *broker_;
  const std::string brokers = cluster.bootstrap();
  KoboOptions options = kobo_options({"--kafka-append-timeout-ms", "5000"});
  options.wait_ready = false;  // the restart in the outage below is not ready until the brokers return
  server_ = std::make_unique<KoboProcess>(options);
  KoboProcess& server = *server_;
  auto probe = server.new_client(milliseconds(5'000));
  const auto ready = [&] {
    try {
      return probe->get("/readyz").status == 200;
    } catch (const std::exception&) {
      return false;
    }
  };
  ASSERT_TRUE(wait_until(ready, milliseconds(60'000))) << server.log_tail();
  const std::string topic = server.kafka_topic();
  ASSERT_TRUE(wait_until([&] { return fully_replicated(brokers, topic); }, milliseconds(30'000)))
      << "topic " << topic << " is not replicated three times";

  constexpr int kWallets = 10;
  constexpr std::int64_t kFunding = 1'000'000'000;
  const std::vector<std::string> ids = funded_wallets(server, kWallets, kFunding);
  const HoldsBefore holds = place_holds(server, ids);
  TransferLoad load(server.port(), server.test_key(), ids, seed);
  ASSERT_TRUE(wait_until([&] { return load.answered() >= 20; }, milliseconds(20'000)))
      << "no load reached the server";
  std::this_thread::sleep_for(milliseconds(2'000));

  // (a) The broker leading the partition written to is killed under load, twice (each time
  // after the cluster is whole again); writes resume on the two left.
  int broker_kills = 0;
  std::vector<std::int64_t> resume_ms;
  const auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration_cast<milliseconds>(Clock::now() - t).count();
  };
  for (int round = 0; round < 2; ++round) {
    const auto [partition, leader] = busiest_partition(brokers, topic);
    ASSERT_GE(leader, 1) << "no leader for the topic's partitions";
    cluster.kill_node(leader);
    ++broker_kills;
    const auto killed = Clock::now();
    std::cout << "round " << round + 1 << ": killed broker " << leader << ", the leader of partition "
              << partition << std::endl;
    ASSERT_TRUE(
        wait_until([&] { return load.first_ack_issued_after(killed).has_value(); }, milliseconds(60'000)))
        << "no write acknowledged within 60 s of killing the leader; log:\n"
        << server.log_tail();
    resume_ms.push_back(
        std::chrono::duration_cast<milliseconds>(*load.first_ack_issued_after(killed) - killed).count());
    std::cout << "  writes resumed " << resume_ms.back() << " ms after the kill" << std::endl;
    std::this_thread::sleep_for(milliseconds(3'000));
    cluster.restart_node(leader);
    ASSERT_TRUE(wait_until([&] { return fully_replicated(brokers, topic); }, milliseconds(60'000)))
        << "broker " << leader << " did not rejoin the in-sync replicas within 60 s";
    std::this_thread::sleep_for(milliseconds(2'000));
  }

  // (b) An outage: two of the three brokers are killed (no quorum, fewer in-sync replicas than
  // min.insync.replicas); under the load the node is killed -9 and restarted in the outage. It
  // serves reads from its views at once, refuses writes, and takes them when the brokers return.
  const auto [partition, leader] = busiest_partition(brokers, topic);
  ASSERT_GE(leader, 1);
  const int other = leader % 3 + 1;
  cluster.kill_node(leader);
  cluster.kill_node(other);
  broker_kills += 2;
  const auto outage = Clock::now();
  std::this_thread::sleep_for(milliseconds(3'000));
  server.kill9();
  const auto node_killed = Clock::now();
  std::this_thread::sleep_for(milliseconds(1'000));
  server.start();
  probe = server.new_client(milliseconds(5'000));
  std::cout << "outage: brokers " << leader << " and " << other << " killed; the node killed -9 "
            << ms_since(outage) - ms_since(node_killed) << " ms into it and healthy again "
            << ms_since(node_killed) << " ms after its kill" << std::endl;
  EXPECT_FALSE(ready()) << "ready in the outage";
  EXPECT_GE(balance_of(server.client(), server.test_key(), ids[0]), 0);  // reads are answered
  std::this_thread::sleep_for(milliseconds(3'000));
  const auto returning = Clock::now();
  cluster.restart_node(leader);
  cluster.restart_node(other);
  std::cout << "outage: both brokers restarted " << ms_since(returning) << " ms after broker.sh was called"
            << std::endl;
  ASSERT_TRUE(
      wait_until([&] { return load.first_ack_issued_after(returning).has_value(); }, milliseconds(90'000)))
      << "no write acknowledged within 90 s of the brokers' return; log:\n"
      << server.log_tail();
  const auto outage_resume_ms =
      std::chrono::duration_cast<milliseconds>(*load.first_ack_issued_after(returning) - returning).count();
  std::this_thread::sleep_for(milliseconds(3'000));
  load.stop();
  ASSERT_TRUE(wait_until(ready, milliseconds(60'000))) << server.log_tail();

  const std::vector<Attempt> attempts = load.attempts();
  const auto acked =
      std::count_if(attempts.begin(), attempts.end(), [](const Attempt& a) { return a.status == 200; });
  const auto other_status = std::count_if(attempts.begin(), attempts.end(), [](const Attempt& a) {
    return a.status != 200 && a.status != 503 && a.status != 0;
  });
  EXPECT_EQ(other_status, 0) << "answers other than 200 and 503";
  std::cout << "cluster run: " << attempts.size() << " transfers sent, " << acked << " acknowledged; "
            << broker_kills << " broker kills (2 leaders under load, 2 for the outage), 1 node kill -9; "
            << "writes resumed " << resume_ms[0] << " and " << resume_ms[1]
            << " ms after the leader kills, and " << outage_resume_ms
            << " ms after broker.sh was called to end the outage" << std::endl;
  check_bank_invariants(server, ids, kFunding, attempts, holds);
}

TEST_F(KafkaFaults, ASecondWriterFencesTheFirst) {
  ASSERT_FALSE(kobo::testing::test_kafka_brokers().empty())
      << "a Kafka-only test: KOBO_TEST_KAFKA_DIR is not set";
  KoboProcess a(kobo_options());
  const std::string key = a.test_key();
  HttpClient& http_a = a.client();
  const json w1 = create_wallet(http_a, key), w2 = create_wallet(http_a, key);
  const std::string id1 = w1["publicId"], id2 = w2["publicId"];
  fund(http_a, key, w1, 1'000'000);
  const std::string before_ref = unique_name("fence-a-before");
  data_or_throw(http_a.post("/v1/transactions/transfer", transfer_body(id1, id2, 10'000, before_ref), key),
                200, "transfer on A before B");
  ASSERT_TRUE(wait_until([&] { return pending_count(http_a, key) == 0; })) << "A's transfers still pending";

  TempDir b_dir("it-fence-b");
  KoboProcess b(same_topic_options(a, b_dir.path()));
  HttpClient& http_b = b.client();
  EXPECT_EQ(balance_of(http_b, key, id1), 990'000);
  EXPECT_EQ(balance_of(http_b, key, id2), 10'000);

  // A is fenced: every write fails, and keeps failing, and it says it is not ready.
  std::vector<std::string> refused;
  for (int i = 0; i < 5; ++i) {
    const std::string ref = unique_name("fence-a-after");
    const HttpResult res =
        http_a.post("/v1/transactions/transfer", transfer_body(id1, id2, 20'000, ref), key);
    EXPECT_EQ(res.status, 503u) << "write " << i << " on the fenced writer: " << res.body;
    refused.push_back(ref);
  }
  EXPECT_TRUE(wait_until([&] { return a.client().get("/readyz").status == 503; }))
      << "the fenced server still says it is ready; log:\n"
      << a.log_tail();

  // B writes; what A tried after the fence is nowhere.
  const std::string b_ref = unique_name("fence-b");
  data_or_throw(http_b.post("/v1/transactions/transfer", transfer_body(id1, id2, 30'000, b_ref), key), 200,
                "transfer on B");
  EXPECT_EQ(http_a.post("/v1/transactions/transfer", transfer_body(id1, id2, 20'000, refused[0]), key).status,
            503u)
      << "A writes again after B wrote";
  EXPECT_EQ(a.client().get("/readyz").status, 503u);
  // B is ready (once its views have applied its own follow-ups, such as the settlement).
  EXPECT_TRUE(wait_until([&] { return b.client().get("/readyz").status == 200; })) << b.log_tail();
  ASSERT_TRUE(wait_until([&] { return pending_count(http_b, key) == 0; })) << "B's transfers still pending";
  EXPECT_EQ(balance_of(http_b, key, id1), 1'000'000 - 10'000 - 30'000);
  EXPECT_EQ(balance_of(http_b, key, id2), 10'000 + 30'000);
  for (const auto& ref : refused) {
    EXPECT_EQ(http_b.get("/v1/transactions/" + ref, key).status, 404u) << ref << " reached the log";
  }
  std::set<std::string> debit_refs;
  for (const json& t : list_all(http_b, key, "/v1/transactions", "entry=debit"))
    debit_refs.insert(t["reference"]);
  EXPECT_EQ(debit_refs, (std::set<std::string>{before_ref, b_ref}));

  const auto report = audit(b.kafka_topic());
  EXPECT_EQ(report.exit_code, 0) << report.output;
  if (::testing::Test::HasFailure()) {
    a.keep_data_dir(true);
    b.keep_data_dir(true);
  }
}

// `kobo audit --verify-key` on a topic (docs/security.md, "Signed log"): what a signing writer
// served verifies; an event that another producer (a transactional id of its own, no writer key)
// appends, chained to a partition's head so that the unkeyed audit accepts it, is named with its
// partition and seq once it is older than the unsigned tail allowed. In the Kafka run, plain and
// secured (the forger is a client the ACLs let write, as a leaked producer credential would).
TEST(KafkaSignedLog, AnEventAnotherProducerAppendedIsFlaggedWithItsPosition) {
  const std::string brokers = kobo::testing::test_kafka_brokers();
  ASSERT_FALSE(brokers.empty()) << "a Kafka-only test: KOBO_TEST_KAFKA_DIR is not set";
  TempDir keys("it-kafka-signed");
  const std::string pem = new_ed25519_private_key_pem();
  std::ofstream(keys / "writer.pem") << pem;
  std::ofstream(keys / "writer.pub") << public_key_of_pem(pem).value() << "\n";
  std::string topic;
  {
    KoboProcess server(
        kobo_options({"--writer-key-file", keys.str("writer.pem"), "--checkpoint-events", "5"}));
    const std::string key = server.test_key();
    const json a = create_wallet(server.client(), key), b = create_wallet(server.client(), key);
    fund(server.client(), key, a, 1'000'000);
    for (int i = 0; i < 8; ++i)
      data_or_throw(
          server.client().post(
              "/v1/transactions/transfer",
              transfer_body(a["publicId"], b["publicId"], 10'000 + i, unique_name("signed-kafka")), key),
          200, "transfer");
    topic = server.kafka_topic();
    ASSERT_EQ(server.terminate(), 0) << server.log_tail();
  }
  const auto audit_signed = [&](std::vector<std::string> more) {
    std::vector<std::string> args{"audit",        "--kafka-brokers",     brokers, "--kafka-topic", topic,
                                  "--verify-key", keys.str("writer.pub")};
    args.insert(args.end(), more.begin(), more.end());
    return kobo::testing::run_kobo(kobo_binary(), args);
  };
  const auto clean = audit_signed({});
  ASSERT_EQ(clean.exit_code, 0) << clean.output;
  EXPECT_NE(clean.output.find("checkpoints verified with the writer key"), std::string::npos) << clean.output;

  // The forger reads the topic, takes the head of its busiest partition and appends after it.
  KafkaLogOptions o;
  o.brokers = brokers;
  o.topic = topic;
  o.create_topic = false;
  o.transactional_id_prefix = "kobo.forger";  // not the writer's, within what the ACLs let write
  o.config = kobo::testing::test_kafka_config();
  auto log = open_kafka_log(o);
  ASSERT_TRUE(log.ok()) << log.status().message();
  const auto ends = log.value()->end_offsets();
  ASSERT_TRUE(ends.ok()) << ends.status().message();
  auto reader = log.value()->open_reader(std::vector<Offset>(log.value()->partitions(), Offset(0)));
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  std::map<std::uint32_t, std::vector<std::string>> records;
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  const auto read_all = [&] {
    for (std::uint32_t p = 0; p < log.value()->partitions(); ++p)
      if (reader.value()->position(Partition(p)) < ends.value()[p]) return false;
    return true;
  };
  while (!read_all() && Clock::now() < deadline) {
    std::vector<LogRecord> batch;
    ASSERT_TRUE(reader.value()->poll(1'000, milliseconds(200), batch).ok());
    for (LogRecord& r : batch) records[r.partition.value].push_back(std::move(r.bytes));
  }
  ASSERT_TRUE(read_all()) << "the topic was not read to its end";
  std::uint32_t partition = 0;
  for (const auto& [p, rs] : records)
    if (rs.size() > records[partition].size()) partition = p;
  auto head = decode_event(records[partition].back());
  ASSERT_TRUE(head.ok()) << head.status().message();
  Event e;
  e.partition = head->partition;
  e.seq = Seq(head->seq.value + 1);
  e.command_seq = e.seq;
  e.epoch = head->epoch;
  e.time = head->time + 1;
  e.data = WebhookDeliveriesEnded{{WebhookDeliveryEnded{"whd-forged", true}}};
  e.prev_hash = head->hash;
  const std::string bytes = seal(e);
  // Then a forged epoch after it: a WriterStarted no checkpoint of the key follows.
  Event w = e;
  w.seq = Seq(e.seq.value + 1);
  w.command_seq = w.seq;
  w.epoch = Epoch(e.epoch.value + 1);
  w.time = e.time + 1;
  w.data = WriterStarted{w.epoch, std::nullopt};
  w.prev_hash = e.hash;
  const std::string epoch_bytes = seal(w);
  const std::vector<EncodedEvent> forged{{e.partition, e.seq, e.type(), "", e.time, bytes},
                                         {w.partition, w.seq, w.type(), "", w.time, epoch_bytes}};
  ASSERT_TRUE(log.value()->append(forged).ok());
  log.value().reset();

  const auto unkeyed = audit(topic);
  EXPECT_EQ(unkeyed.exit_code, 0) << "the unkeyed chain cannot tell\n" << unkeyed.output;
  const fs::path report = keys / "forged.json";
  const auto r = audit_signed({"--unsigned-max-age-s", "0", "--json", report.string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  std::ifstream in(report);
  const json j = json::parse(in, nullptr, false);
  const auto named = [&](const char* check, std::uint64_t seq) {
    for (const json& v : j["violations"])
      if (v["check"] == check && v["partition"] == partition && v["seq"] == seq) return true;
    return false;
  };
  EXPECT_TRUE(named("signature", e.seq.value)) << "partition " << partition << " seq " << e.seq.value << "\n"
                                               << r.output;
  EXPECT_TRUE(named("epoch", w.seq.value)) << "partition " << partition << " seq " << w.seq.value << "\n"
                                           << r.output;
}

// What a client sees of every wallet and every transaction: publicId → record.
struct Views {
  std::map<std::string, json> wallets, transactions;
};

Views read_views(HttpClient& http, const std::string& key, const std::vector<std::string>& wallet_ids) {
  Views v;
  for (const auto& id : wallet_ids) v.wallets[id] = get_wallet(http, key, id);
  for (const json& w : list_all(http, key, "/v1/virtual-accounts"))
    v.wallets["list:" + w["publicId"].get<std::string>()] = w;
  for (const json& t : list_all(http, key, "/v1/transactions")) v.transactions[t["publicId"]] = t;
  return v;
}

TEST_F(KafkaFaults, AFreshDataDirRebuildsIdenticalViews) {
  ASSERT_FALSE(kobo::testing::test_kafka_brokers().empty())
      << "a Kafka-only test: KOBO_TEST_KAFKA_DIR is not set";
  const std::vector<std::string> flags{"--rail-delay-ms", "200"};
  KoboProcess a(kobo_options(flags));
  const std::string key = a.test_key();
  HttpClient& http = a.client();
  std::vector<json> wallets;
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    wallets.push_back(create_wallet(http, key));
    ids.push_back(wallets.back()["publicId"]);
    fund(http, key, wallets.back(), 5'000'000 + 1'000 * i);
  }
  for (int i = 0; i < 6; ++i) {
    data_or_throw(
        http.post("/v1/transactions/transfer",
                  transfer_body(ids[i % 3], ids[(i + 1) % 3], 10'000 + 111 * i, unique_name("rebuild")), key),
        200, "transfer");
  }
  const std::string payout_ref = unique_name("rebuild-payout");
  const json payout{
      {"source", ids[0]},  {"accountNumber", "0123456784"}, {"bankCode", "044"},      {"amount", 50'000},
      {"currency", "NGN"}, {"narration", "rebuild payout"}, {"reference", payout_ref}};
  data_or_throw(http.post("/v1/transactions/bank-transfer", payout, key), 200, "bank transfer");
  wait_settled(http, key, payout_ref);
  ASSERT_TRUE(wait_until([&] { return pending_count(http, key) == 0; })) << "still pending";
  const Views before = read_views(http, key, ids);
  ASSERT_GE(before.transactions.size(), 3u + 6u * 2u + 1u);
  EXPECT_EQ(a.terminate(), 0) << a.log_tail();

  TempDir b_dir("it-rebuild-b");
  KoboProcess b(same_topic_options(a, b_dir.path(), flags));
  const Views after = read_views(b.client(), key, ids);
  EXPECT_EQ(after.wallets.size(), before.wallets.size());
  for (const auto& [id, w] : before.wallets) {
    const auto it = after.wallets.find(id);
    if (it == after.wallets.end()) {
      ADD_FAILURE() << "wallet " << id << " missing after the rebuild";
      continue;
    }
    EXPECT_EQ(it->second, w) << "wallet " << id << "\nbefore: " << w.dump()
                             << "\nafter:  " << it->second.dump();
  }
  EXPECT_EQ(after.transactions.size(), before.transactions.size());
  for (const auto& [id, t] : before.transactions) {
    const auto it = after.transactions.find(id);
    if (it == after.transactions.end()) {
      ADD_FAILURE() << "transaction " << id << " missing after the rebuild";
      continue;
    }
    EXPECT_EQ(it->second, t) << "transaction " << id << "\nbefore: " << t.dump()
                             << "\nafter:  " << it->second.dump();
  }

  EXPECT_EQ(b.terminate(), 0) << b.log_tail();
  const auto report = audit(b.kafka_topic(), b.data_dir());
  EXPECT_EQ(report.exit_code, 0) << report.output;
  if (::testing::Test::HasFailure()) a.keep_data_dir(true);
}

// ---- a secured cluster (broker.sh start DIR --secured: SASL_SSL, SCRAM, ACLs) -----------------

// `kobo serve` on a fresh data dir that cannot start: it must exit, at once and saying why,
// never hang. `timeout 60` turns a hang into exit code 124.
// (test_kafka_brokers() exports the user's credentials: call it before changing them.)
kobo::testing::RunResult serve_expecting_failure(const std::string& brokers, const std::string& topic,
                                                 const fs::path& data_dir) {
  return kobo::testing::run_kobo(
      "/usr/bin/timeout", {"60", kobo_binary().string(), "serve", "--listen", "127.0.0.1:0", "--data-dir",
                           data_dir.string(), "--kafka-brokers", brokers, "--kafka-topic", topic});
}

class KafkaSecured : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kobo::testing::test_kafka_secured()) GTEST_SKIP() << "for the secured broker (label kafka_secured)";
    kobo::testing::export_test_kafka_credentials();
  }
};

TEST_F(KafkaSecured, AWrongPasswordIsAClearErrorAtStart) {
  const std::string topic = unique_name("it.secured-password");
  kobo::testing::ensure_test_topic(topic, 2);
  TempDir dir("it-secured");
  const std::string brokers = kobo::testing::test_kafka_brokers();
  const std::string password = std::getenv("KOBO_KAFKA_SASL_PASSWORD");
  ::setenv("KOBO_KAFKA_SASL_PASSWORD", "not-the-password", 1);
  const auto started = Clock::now();
  const auto run = serve_expecting_failure(brokers, topic, dir.path());
  ::setenv("KOBO_KAFKA_SASL_PASSWORD", password.c_str(), 1);
  const auto took_ms = std::chrono::duration_cast<milliseconds>(Clock::now() - started).count();
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_LE(took_ms, 20'000) << run.output;
  EXPECT_NE(run.output.find("invalid credentials"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("--kafka-sasl-password"), std::string::npos) << run.output;
}

TEST_F(KafkaSecured, ATopicItMayNotCreateIsAClearErrorNamingTheAcl) {
  const std::string topic = unique_name("it.secured-missing");  // allowed, but missing
  TempDir dir("it-secured");
  const auto run = serve_expecting_failure(kobo::testing::test_kafka_brokers(), topic, dir.path());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("CREATE on Topic " + topic), std::string::npos) << run.output;
}

TEST_F(KafkaSecured, ATopicOutsideItsAclsIsAClearErrorNamingTheAcl) {
  const std::string topic = unique_name("forbidden.secured");
  kobo::testing::ensure_test_topic(topic, 2);
  TempDir dir("it-secured");
  const auto run = serve_expecting_failure(kobo::testing::test_kafka_brokers(), topic, dir.path());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("DESCRIBE, READ and WRITE on Topic " + topic), std::string::npos) << run.output;
  const auto audit_run = audit(topic);
  EXPECT_EQ(audit_run.exit_code, 2) << audit_run.output;
  EXPECT_NE(audit_run.output.find("on Topic " + topic), std::string::npos) << audit_run.output;
}

}  // namespace
}  // namespace kobo::it
