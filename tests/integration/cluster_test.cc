// A Kobo cluster of three real `kobo serve` nodes on one topic of the test broker
// (docs/architecture.md, "Cluster"), in the Kafka run only (ctest labels `kafka` and `cluster`):
//  - ownership is exclusive: once the group is stable every partition has exactly one owner;
//  - a command sent to a node that does not write its partition is forwarded to the owner and
//    answered exactly as the owner answers (status, headers, body); a forwarded request is never
//    forwarded again; without an owner it waits (--failover-wait-ms), then 503 with Retry-After;
//  - position tokens: a read with the token of a write, on another node, is never older than
//    the write; read answers carry the views' token; a malformed token is 400;
//  - /readyz does not flap under load; GET /v1/cluster lists the group (x-cluster-secret);
//  - a node killed -9 under load: its partitions' writes are acknowledged again on a survivor
//    within 12 s (its session times out after 6 s; a survivor that waited out the dead owner's
//    open transaction, 10 s, rather than fencing its transactional id would take 16); a node
//    stopped with SIGTERM: within 3 s, well before its session could time out, so it left the
//    group. The targets, 8 s and 1 s, are figures of `make cluster-bank` (docs/capacity.md), not
//    of a test on a shared machine; no acknowledged transfer is lost or applied twice, money is
//    conserved, `kobo audit` passes;
//  - a hold expires once across a takeover;
//  - a webhook delivery in flight on a killed owner is delivered by the next owner with the same
//    webhook-id, and one the old owner delivered is not sent again;
//  - a zombie (an owner paused with SIGSTOP past its session, then resumed) cannot append and
//    acknowledges nothing;
//  - a new node (an empty data dir) starts from a peer's checkpoint, under load, and its views
//    equal the peer's and a rebuild's; a checkpoint that does not match the topic (a tampered
//    position, a changed file), a cut stream or a wrong secret is refused and the node replays;
//    the checkpoint route answers only with the cluster's secret.
// Each test makes a topic and a cluster of its own. Figures (the failover times) are printed.
// Random choices come from a seed printed at the start (KOBO_TEST_SEED).

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <utility>

#include "events/partitioner.h"
#include "projection/rows.h"
#include "projection/view_keys.h"
#include "projection/views.h"
#include "query-api/checkpoint_stream.h"
#include "query-api/http_server.h"
#include "tests/audit/run_kobo.h"
#include "tests/integration/harness.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/webhook_receiver.h"

namespace kobo::it {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::uint32_t kPartitions = 6;
constexpr int kNodes = 3;
const std::string kAdminKey = "cluster-test-admin-key-0123456789abcdef";
const std::string kSecret = "cluster-test-secret-0123456789abcdef";

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct Business {
  std::string id;
  std::string key;  // its test secret key
  std::string live_key;
  std::string account;
  Partition partition{0};
  std::vector<std::string> wallets;
  std::int64_t funded = 0;
};

// Three nodes of one cluster on a topic of their own.
class ClusterSuite : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kobo::testing::test_kafka_brokers().empty())
      GTEST_SKIP() << "the cluster runs on Kafka (ctest -L kafka)";
    seed_ = test_seed(::testing::UnitTest::GetInstance()->current_test_info()->name());
    name_ = unique_name("cluster");
    secret_file_ = secret_dir_ / "cluster-secret";
    std::ofstream(secret_file_) << kSecret << "\n";
    fs::permissions(secret_file_, fs::perms::owner_read | fs::perms::owner_write);
    topic_ = "it." + name_;
    // One master key for every node (docs/security.md): what one wraps, the others open.
    master_key_file_ = fs::temp_directory_path() / ("kobo-" + name_ + "-master-key");
    std::ofstream(master_key_file_) << std::string(64, 'c') << "\n";
    fs::permissions(master_key_file_, fs::perms::owner_read | fs::perms::owner_write);
    for (int i = 0; i < kNodes; ++i) {
      start_node(i);
      // The first makes the topic; the others join it with empty data dirs, each through a
      // checkpoint of a running node's views and writer state (docs/architecture.md, "A new node").
      if (i == 0) continue;
    }
    ASSERT_TRUE(wait_until([&] { return stable(); }, milliseconds(30'000))) << describe_owners();
  }

  void TearDown() override {
    std::error_code ec;
    fs::remove(master_key_file_, ec);
  }

  // Node i (n<i+1>), started or started again; `more`: flags of its own after every node's;
  // `secret_file`: the cluster's secret it is given (empty: the cluster's own).
  void start_node(int i, const std::vector<std::string>& more = {}, const fs::path& secret_file = {}) {
    std::vector<std::string> args{"--partitions",
                                  std::to_string(kPartitions),
                                  "--cluster",
                                  name_,
                                  "--node-id",
                                  "n" + std::to_string(i + 1),
                                  "--admin-key",
                                  kAdminKey,
                                  "--kafka-config",
                                  "session.timeout.ms=6000",
                                  "--rail-delay-ms",
                                  "50",
                                  "--cluster-secret-file",
                                  (secret_file.empty() ? secret_file_ : secret_file).string(),
                                  "--master-key-file",
                                  master_key_file_.string()};
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    args.insert(args.end(), more.begin(), more.end());
    KoboOptions o = kobo_options(args);
    o.kafka_topic = topic_;
    o.bootstrap = false;
    if (static_cast<int>(nodes_.size()) <= i) nodes_.resize(i + 1);
    if (nodes_[i]) {
      nodes_[i]->start();
      return;
    }
    nodes_[i] = std::make_unique<KoboProcess>(o);
  }

  KoboProcess& node(int i) { return *nodes_.at(i); }

  // Which node each partition's writer is on, from the nodes' /metrics (kobo_partition_owned);
  // a partition claimed by two nodes is -2, by none -1. Stopped nodes are left out.
  std::vector<int> owners() {
    std::vector<int> owner(kPartitions, -1);
    for (int i = 0; i < static_cast<int>(nodes_.size()); ++i) {
      if (!nodes_[i] || !nodes_[i]->running()) continue;
      try {
        HttpClient probe("127.0.0.1", nodes_[i]->port(), milliseconds(2'000));
        const HttpResult res = probe.get("/metrics");
        std::istringstream lines(res.body);
        std::string line;
        while (std::getline(lines, line)) {
          const std::string prefix = "kobo_partition_owned{partition=\"";
          if (!line.starts_with(prefix) || !line.ends_with("} 1")) continue;
          const auto p = static_cast<std::uint32_t>(std::stoul(line.substr(prefix.size())));
          owner.at(p) = owner[p] == -1 ? i : -2;
        }
      } catch (const std::exception&) {
        // a node that does not answer owns nothing we can see
      }
    }
    return owner;
  }

  // Every partition has one owner, and every running node owns some (with 6 partitions and 3
  // nodes the group gives each node 2): the group's rebalances are over.
  bool stable() {
    const auto o = owners();
    if (!std::all_of(o.begin(), o.end(), [](int n) { return n >= 0; })) return false;
    for (int i = 0; i < static_cast<int>(nodes_.size()); ++i)
      if (nodes_[i] && nodes_[i]->running() && std::find(o.begin(), o.end(), i) == o.end()) return false;
    return true;
  }

  std::string describe_owners() {
    std::string out = "owners:";
    for (const int n : owners()) out += " " + std::to_string(n);
    return out;
  }

  // Sends a command until a node decides it: first to `preferred`, then to each other node,
  // while the answer is a 503 (another node writes the partition, or none yet) or no answer.
  HttpResult command(const std::string& path, const json& body, const std::string& key, int preferred = 0,
                     milliseconds patience = milliseconds(30'000),
                     boost::beast::http::verb method = boost::beast::http::verb::post, int skip = -1) {
    const auto deadline = Clock::now() + patience;
    HttpResult last;
    preferred = std::max(preferred, 0);
    for (int attempt = 0; Clock::now() < deadline; ++attempt) {
      const int i = (preferred + attempt) % kNodes;
      if (i == skip || !nodes_[i] || !nodes_[i]->running()) continue;
      try {
        HttpClient client("127.0.0.1", nodes_[i]->port(), milliseconds(15'000));
        last = client.request(method, path, body.dump(), {{"x-service-key", key}});
        if (last.status != 503) return last;
      } catch (const std::exception&) {
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
    return last;
  }

  // A business made through whichever node writes its (random) partition.
  Business create_business(const std::string& name) {
    const auto deadline = Clock::now() + milliseconds(30'000);
    while (Clock::now() < deadline) {
      for (int i = 0; i < kNodes; ++i) {
        if (!nodes_[i] || !nodes_[i]->running()) continue;
        HttpClient client("127.0.0.1", nodes_[i]->port(), milliseconds(15'000));
        const HttpResult res = client.request(boost::beast::http::verb::post, "/v1/admin/businesses",
                                              json{{"name", name}}.dump(), {{"x-admin-key", kAdminKey}});
        if (res.status == 201) {
          Business b;
          b.id = res.json["data"]["credentials"]["businessId"];
          b.key = res.json["data"]["credentials"]["testSecretKey"];
          b.live_key = res.json["data"]["credentials"]["liveSecretKey"];
          b.account = res.json["data"]["credentials"]["accountId"];
          b.partition = partition_for(b.id, kPartitions);
          return b;
        }
        if (res.status != 503)
          throw std::runtime_error("admin: " + std::to_string(res.status) + " " + res.body);
      }
    }
    throw std::runtime_error("no node made the business");
  }

  // Wallets of `b`, each funded with `funding` (commands, through the partition's owner).
  void add_wallets(Business& b, int n, std::int64_t funding) {
    for (int i = 0; i < n; ++i) {
      const HttpResult w =
          command("/v1/virtual-accounts", wallet_body(unique_name("w")), b.key, owners()[b.partition.value]);
      const json wallet = data_or_throw(w, 201, "create wallet");
      b.wallets.push_back(wallet["publicId"]);
      const HttpResult f =
          command("/v1/sandbox/incoming-transfers", incoming_body(wallet["accountNumber"], funding), b.key,
                  owners()[b.partition.value]);
      data_or_throw(f, 201, "fund");
      b.funded += funding;
    }
  }

  // One business in each partition, with `wallets` wallets each.
  std::vector<Business> businesses_everywhere(int wallets, std::int64_t funding) {
    std::map<std::uint32_t, Business> by_partition;
    for (int i = 0; by_partition.size() < kPartitions && i < 200; ++i) {
      Business b = create_business(unique_name("biz"));
      by_partition.try_emplace(b.partition.value, std::move(b));
    }
    std::vector<Business> out;
    for (auto& [p, b] : by_partition) {
      add_wallets(b, wallets, funding);
      out.push_back(std::move(b));
    }
    return out;
  }

  std::string brokers() const { return kobo::testing::test_kafka_brokers(); }

  // `kobo events` of the topic, one JSON per event.
  std::vector<json> log_events() {
    const auto r = kobo::testing::run_kobo(kobo_options().binary,
                                           {"events", "--kafka-brokers", brokers(), "--kafka-topic", topic_});
    EXPECT_EQ(r.exit_code, 0) << r.output.substr(0, 2000);
    std::vector<json> out;
    std::istringstream lines(r.output);
    std::string line;
    while (std::getline(lines, line)) {
      json j = json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("seq")) out.push_back(std::move(j));
    }
    return out;
  }

  void expect_audit_clean() {
    const auto r = kobo::testing::run_kobo(kobo_options().binary,
                                           {"audit", "--kafka-brokers", brokers(), "--kafka-topic", topic_});
    EXPECT_EQ(r.exit_code, 0) << r.output.substr(0, 4000);
  }

  std::uint64_t seed_ = 0;
  kobo::testing::ScratchDir secret_dir_{"cluster-secret"};
  fs::path secret_file_;
  std::vector<std::string> extra_args_;  // more flags for every node, set before SetUp()
  std::string name_, topic_;
  fs::path master_key_file_;
  std::vector<std::unique_ptr<KoboProcess>> nodes_;
};

struct Attempt {
  std::size_t business = 0;
  std::size_t node = 0;  // which node it was sent to
  std::string reference;
  std::int64_t amount = 0;
  Clock::time_point issued, answered;
  unsigned status = 0;  // 0: no answer
};

// Transfers between the wallets of every business, from `threads` threads, each sent to the node
// it last saw write the business's partition and, on a 503 or no answer, to the next node with
// the same reference and body: what docs/architecture.md asks of a client, since such a command
// may have been decided (its owner died while it had it). Every try is an Attempt.
class Load {
 public:
  Load(std::vector<std::uint16_t> ports, const std::vector<Business>& businesses, std::uint64_t seed,
       int threads = 4)
      : ports_(std::move(ports)), businesses_(businesses) {
    for (int t = 0; t < threads; ++t) pool_.emplace_back([this, seed, t] { run(seed, t); });
  }
  ~Load() { stop(); }
  void stop() {
    stop_ = true;
    for (auto& th : pool_)
      if (th.joinable()) th.join();
  }
  std::vector<Attempt> attempts() const {
    std::lock_guard lock(mu_);
    return attempts_;
  }
  // The first acknowledgement by a node other than `stopped` of a transfer of a business of
  // partition p issued after t.
  std::optional<Clock::time_point> first_ack_after(Clock::time_point t, Partition p,
                                                   std::size_t stopped) const {
    std::lock_guard lock(mu_);
    std::optional<Clock::time_point> first;
    for (const Attempt& a : attempts_)
      if (a.status == 200 && a.issued > t && businesses_[a.business].partition == p && a.node != stopped &&
          (!first || a.answered < *first))
        first = a.answered;
    return first;
  }
  int acknowledged() const {
    std::lock_guard lock(mu_);
    return static_cast<int>(
        std::count_if(attempts_.begin(), attempts_.end(), [](const Attempt& a) { return a.status == 200; }));
  }

 private:
  void run(std::uint64_t seed, int t) {
    std::mt19937_64 rng(seed ^ (static_cast<std::uint64_t>(t + 1) << 40));
    std::vector<std::unique_ptr<HttpClient>> clients(ports_.size());
    std::vector<std::size_t> guess(businesses_.size(), 0);
    std::optional<std::pair<Attempt, json>> unanswered;  // the try to repeat, if the last had no outcome
    for (int i = 0; !stop_.load(); ++i) {
      Attempt a;
      json body;
      if (unanswered) {
        std::tie(a, body) = std::move(*unanswered);
        unanswered.reset();
      } else {
        const std::size_t bi =
            (static_cast<std::size_t>(t) + static_cast<std::size_t>(i)) % businesses_.size();
        const Business& b = businesses_[bi];
        const std::size_t n = b.wallets.size();
        const std::size_t from = rng() % n, to = (from + 1 + rng() % (n - 1)) % n;
        a.business = bi;
        a.amount = 10'000 + static_cast<std::int64_t>(rng() % 1'000);
        a.reference = "cl-" + std::to_string(seed) + "-" + std::to_string(t) + "-" + std::to_string(i);
        body = transfer_body(b.wallets[from], b.wallets[to], a.amount, a.reference, "cluster test");
      }
      const std::size_t bi = a.business;
      const Business& b = businesses_[bi];
      a.status = 0;
      const std::size_t node = guess[bi];
      a.node = node;
      a.issued = Clock::now();
      try {
        if (!clients[node])
          clients[node] = std::make_unique<HttpClient>("127.0.0.1", ports_[node], milliseconds(20'000));
        a.status = clients[node]->post("/v1/transactions/transfer", body, b.key).status;
      } catch (const std::exception&) {
        clients[node].reset();
      }
      a.answered = Clock::now();
      if (a.status != 200) {
        guess[bi] = (guess[bi] + 1) % ports_.size();
        std::this_thread::sleep_for(milliseconds(10));
      }
      if (a.status == 0 || a.status == 503) unanswered.emplace(a, body);
      std::lock_guard lock(mu_);
      attempts_.push_back(std::move(a));
    }
  }

  const std::vector<std::uint16_t> ports_;
  const std::vector<Business>& businesses_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<Attempt> attempts_;
  std::vector<std::thread> pool_;
};

// Every acknowledged transfer is in the views exactly once, no unacknowledged one twice, money
// is conserved in every business and no balance is negative: read on `reader`.
void expect_bank_invariants(KoboProcess& reader, const std::vector<Business>& businesses,
                            const std::vector<Attempt>& attempts) {
  HttpClient& http = reader.client();
  // The reader's views may not have applied the last writes another node acknowledged yet:
  // first the moment they have every acknowledged one (or 15 s).
  std::set<std::string> acked;
  for (const Attempt& a : attempts)
    if (a.status == 200) acked.insert(a.reference);
  wait_until(
      [&] {
        std::size_t found = 0;
        for (const Business& b : businesses)
          for (const json& t : list_all(http, b.key, "/v1/transactions", "entry=debit"))
            if (t.contains("reference") && t["reference"].is_string() &&
                acked.contains(t["reference"].get<std::string>()))
              ++found;
        return found >= acked.size();
      },
      milliseconds(15'000));
  std::map<std::string, int> seen;
  for (const Business& b : businesses) {
    std::int64_t total = 0;
    for (const std::string& w : b.wallets) {
      const std::int64_t balance = balance_of(http, b.key, w);
      EXPECT_GE(balance, 0) << w;
      total += balance;
    }
    EXPECT_EQ(total, b.funded) << "money is conserved in " << b.id;
    for (const json& t : list_all(http, b.key, "/v1/transactions", "entry=debit"))
      if (t.contains("reference") && t["reference"].is_string()) ++seen[t["reference"].get<std::string>()];
  }
  // A reference's outcome is its last try's answer (a 503 or no answer is tried again, so only
  // the last try of a run may have none): a 200, first or replayed, is there exactly once, a
  // refusal (4xx) moved nothing, no outcome at most once.
  std::map<std::string, unsigned> outcome;
  for (const Attempt& a : attempts) outcome[a.reference] = a.status;
  int acknowledged = 0, retried = 0;
  for (const auto& [reference, status] : outcome) {
    const int n = seen.count(reference) ? seen[reference] : 0;
    if (status == 200) {
      ++acknowledged;
      EXPECT_EQ(n, 1) << "an acknowledged transfer is there exactly once: " << reference;
    } else if (status >= 400 && status < 500) {
      EXPECT_EQ(n, 0) << "a transfer refused with " << status << " moved money: " << reference;
    } else {
      EXPECT_LE(n, 1) << reference;
    }
  }
  for (const Attempt& a : attempts)
    if (a.status == 0 || a.status == 503) ++retried;
  std::cout << "[cluster] " << acknowledged << " acknowledged transfers checked (" << retried
            << " tries with no outcome repeated)" << std::endl;
}

TEST_F(ClusterSuite, EveryPartitionHasExactlyOneOwnerOnceTheGroupIsStable) {
  std::map<int, int> per_node;
  for (int round = 0; round < 10; ++round) {
    const auto o = owners();
    for (std::uint32_t p = 0; p < kPartitions; ++p)
      EXPECT_GE(o[p], 0) << "partition " << p << ": " << describe_owners();
    if (round == 0)
      for (const int n : o) ++per_node[n];
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_EQ(per_node.size(), static_cast<std::size_t>(kNodes))
      << "every node writes some partitions: " << describe_owners();
}

// What a client sees of an answer: status, body and headers (names in lower case).
std::string seen(const HttpResult& r) {
  std::string out = std::to_string(r.status) + "\n";
  for (const auto& [name, value] : r.headers) out += name + ": " + value + "\n";
  return out + r.body;
}

TEST_F(ClusterSuite, ACommandSentToANodeThatDoesNotWriteItsPartitionIsAnsweredExactlyAsTheOwnerAnswers) {
  Business b = create_business("forwarding");
  const int owner = owners()[b.partition.value];
  ASSERT_GE(owner, 0);
  const int other = (owner + 1) % kNodes;
  HttpClient& at_owner = node(owner).client();
  HttpClient& elsewhere = node(other).client();

  // Made through the other node: forwarded, decided by the owner.
  const auto before = log_events().size();
  const HttpResult made = elsewhere.post("/v1/virtual-accounts", wallet_body("via-other"), b.key);
  ASSERT_EQ(made.status, 201u) << made.body;
  EXPECT_FALSE(made.header("kobo-position").empty()) << "the owner's answer, with its headers";
  const json w0 = made.json["data"];
  const json w1 =
      data_or_throw(at_owner.post("/v1/virtual-accounts", wallet_body("at-owner"), b.key), 201, "wallet");
  // A transaction's commit answers before its markers reach the partition, so a reader of
  // committed records may see the last one a moment later.
  wait_until([&] { return log_events().size() >= before + 2; }, milliseconds(5'000));
  EXPECT_EQ(log_events().size(), before + 2) << "each command decided once";
  data_or_throw(
      elsewhere.post("/v1/sandbox/incoming-transfers", incoming_body(w0["accountNumber"], 50'000), b.key),
      201, "fund");

  // The same requests to both nodes are answered the same, byte for byte: an idempotent repeat,
  // a rejection, a validation error, an unknown route's body rules.
  const json transfer = transfer_body(w0["publicId"], w1["publicId"], 10'000, "fwd-1");
  ASSERT_EQ(elsewhere.post("/v1/transactions/transfer", transfer, b.key).status, 200u);
  const json too_much = transfer_body(w0["publicId"], w1["publicId"], 900'000, "fwd-2");
  const json invalid = json{{"source", w0["publicId"]}, {"amount", -5}};
  for (const json& body : {transfer, too_much, invalid}) {
    const HttpResult direct = at_owner.post("/v1/transactions/transfer", body, b.key);
    const HttpResult forwarded = elsewhere.post("/v1/transactions/transfer", body, b.key);
    EXPECT_EQ(seen(forwarded), seen(direct)) << body.dump();
  }
  const HttpResult unknown_key = elsewhere.post("/v1/transactions/transfer", transfer, "sk_test_unknown");
  EXPECT_EQ(unknown_key.status, 401u);

  // A request that says it was forwarded is never forwarded again: the other node does not
  // write the partition, another does, so it is answered 503 at once.
  const HttpResult again = elsewhere.request(
      boost::beast::http::verb::post, "/v1/virtual-accounts", wallet_body("again").dump(),
      {{"x-service-key", b.key}, {"x-kobo-forwarded", "n9"}, {"x-cluster-secret", kSecret}});
  EXPECT_EQ(again.status, 503u) << again.body;
  EXPECT_EQ(again.header("retry-after"), "1");
  // ... and only a node of the cluster may say so.
  const HttpResult forged = elsewhere.request(
      boost::beast::http::verb::post, "/v1/virtual-accounts", wallet_body("forged").dump(),
      {{"x-service-key", b.key}, {"x-kobo-forwarded", "n9"}, {"x-cluster-secret", "wrong"}});
  EXPECT_EQ(forged.status, 401u) << forged.body;

  const auto wallets = list_all(at_owner, b.key, "/v1/virtual-accounts");
  EXPECT_EQ(wallets.size(), 2u);
  EXPECT_EQ(balance_of(at_owner, b.key, w1["publicId"]), 10'000) << "the transfer applied once";
  // Reads are answered on every node.
  for (int i = 0; i < kNodes; ++i)
    EXPECT_TRUE(wait_until([&] {
      return list_all(node(i).client(), b.key, "/v1/virtual-accounts").size() == 2;
    })) << "node "
        << i;
}

// While a partition has no owner (its owner was killed, the group has not noticed yet), a command
// sent to another node waits for the takeover: at most --failover-wait-ms, then 503.
class ClusterFailoverWait : public ClusterSuite {
 protected:
  void SetUp() override {
    extra_args_ = {"--failover-wait-ms", "1500"};
    ClusterSuite::SetUp();
  }
};

TEST_F(ClusterFailoverWait, ACommandWithoutAnOwnerWaitsThen503sAndIsDecidedOnceOneTakesOver) {
  Business b = create_business("waits");
  const int owner = owners()[b.partition.value];
  const int other = (owner + 1) % kNodes;
  node(owner).kill9();
  // The group takes 6 s to notice: the forward is refused, the command waits 1.5 s, then 503.
  const auto sent = Clock::now();
  const HttpResult waited = node(other).client().post("/v1/virtual-accounts", wallet_body("w"), b.key);
  const double took = seconds_between(sent, Clock::now());
  EXPECT_EQ(waited.status, 503u) << waited.body;
  EXPECT_EQ(waited.header("retry-after"), "1");
  EXPECT_GE(took, 1.4);
  EXPECT_LT(took, 4.0);
  // A survivor takes the partition over: the same command to the same node is decided.
  const auto deadline = Clock::now() + milliseconds(20'000);
  HttpResult decided;
  while (Clock::now() < deadline) {
    decided = node(other).client().post("/v1/virtual-accounts", wallet_body("w"), b.key);
    if (decided.status != 503) break;
  }
  EXPECT_EQ(decided.status, 201u) << decided.body;
  std::cout << "[cluster] a command sent to a survivor was decided " << seconds_between(sent, Clock::now())
            << " s after its owner's kill -9" << std::endl;
  // Read with the command's token: the node's views may not have applied it yet otherwise.
  const HttpResult listed = node(other).client().request(
      boost::beast::http::verb::get, "/v1/virtual-accounts", std::nullopt,
      {{"x-service-key", b.key}, {"Kobo-Position", decided.header("kobo-position")}});
  ASSERT_EQ(listed.status, 200u) << listed.body;
  EXPECT_EQ(listed.json["data"].size(), 1u) << "decided once";
}

// A node killed -9 (or stopped with SIGTERM) under load: its partitions are written again on a
// survivor within the target, and the bank's invariants hold.
class ClusterFailover : public ClusterSuite {
 public:
  // `bound_s`: what a loaded 2-core machine keeps to with the mechanism working (a SIGTERM's
  // handover took 1.03 s there once, 0.24 s in the bank run; a kill -9's 6.0-6.7 s on an idle
  // one); the targets are bench figures.
  void run(bool kill9, double bound_s) {
    std::vector<Business> businesses = businesses_everywhere(4, 100'000'000);
    std::vector<std::uint16_t> ports;
    for (int i = 0; i < kNodes; ++i) ports.push_back(node(i).port());
    const auto before = owners();
    const int victim = before[businesses[0].partition.value];
    std::vector<Partition> lost;
    for (std::uint32_t p = 0; p < kPartitions; ++p)
      if (before[p] == victim) lost.emplace_back(p);
    Load load(ports, businesses, seed_);
    ASSERT_TRUE(wait_until([&] { return load.acknowledged() > 50; }, milliseconds(30'000)));
    const auto stopped = Clock::now();
    if (kill9)
      node(victim).kill9();
    else
      EXPECT_EQ(node(victim).terminate(), 0);
    // Each lost partition: the first transfer issued after the stop and acknowledged.
    std::map<std::uint32_t, double> took;
    wait_until(
        [&] {
          for (const Partition p : lost)
            if (const auto at = load.first_ack_after(stopped, p, static_cast<std::size_t>(victim)))
              took[p.value] = seconds_between(stopped, *at);
          return took.size() == lost.size();
        },
        milliseconds(30'000));
    // A while more under load on the survivors.
    const int acked = load.acknowledged();
    wait_until([&] { return load.acknowledged() > acked + 50; }, milliseconds(10'000));
    load.stop();
    for (const Partition p : lost) {
      ASSERT_TRUE(took.contains(p.value)) << "partition " << p.value << " was never written again";
      std::cout << "[cluster] " << (kill9 ? "kill -9" : "SIGTERM") << ": partition " << p.value
                << " acknowledged again after " << took[p.value] << " s (bound " << bound_s << " s)"
                << std::endl;
      EXPECT_LE(took[p.value], bound_s) << "partition " << p.value;
    }
    const auto after = owners();
    for (std::uint32_t p = 0; p < kPartitions; ++p) EXPECT_GE(after[p], 0) << describe_owners();
    const int reader = (victim + 1) % kNodes;
    expect_bank_invariants(node(reader), businesses, load.attempts());
    // The stopped node comes back as a standby: its views and state catch up, and it may be
    // given partitions again.
    node(victim).start();
    EXPECT_TRUE(wait_until([&] { return stable(); }, milliseconds(30'000))) << describe_owners();
    expect_bank_invariants(node(victim), businesses, load.attempts());
    expect_audit_clean();
  }
};

TEST_F(ClusterFailover, AKilledNodesPartitionsAreWrittenAgainOnASurvivorWithin12s) { run(true, 12.0); }

TEST_F(ClusterFailover, ASigtermedNodesPartitionsAreWrittenAgainOnASurvivorWithin3s) { run(false, 3.0); }

TEST_F(ClusterSuite, AHoldExpiresOnceAcrossATakeover) {
  Business b = create_business("holds");
  add_wallets(b, 1, 500'000);
  const int owner = owners()[b.partition.value];
  // Expires 3 s from now: after the owner is killed, before the survivors notice (6 s).
  const HttpResult placed = command(
      "/v1/holds", json{{"source", b.wallets[0]}, {"amount", 10'000}, {"reference", "h-1"}, {"expiresIn", 3}},
      b.key, owner);
  const json hold = data_or_throw(placed, 201, "place hold");
  const std::string hold_id = hold["publicId"];
  node(owner).kill9();
  const int survivor = (owner + 1) % kNodes;
  ASSERT_TRUE(wait_until(
      [&] {
        const HttpResult h = node(survivor).client().get("/v1/holds/" + hold_id, b.key);
        return h.status == 200 && h.json["data"]["status"] == "expired";
      },
      milliseconds(30'000)))
      << "the hold was expired by the partition's next owner";
  node(owner).start();
  ASSERT_TRUE(wait_until([&] { return stable(); }, milliseconds(30'000)));
  int expiries = 0;
  for (const json& e : log_events())
    if (e.value("type", "") == "HoldExpired") ++expiries;
  EXPECT_EQ(expiries, 1);
  EXPECT_EQ(balance_of(node(survivor).client(), b.key, b.wallets[0]), 500'000);
  expect_audit_clean();
}

TEST_F(ClusterSuite, AZombieOwnerIsFencedAndAcknowledgesNothing) {
  Business b = create_business("zombie");
  add_wallets(b, 2, 100'000);
  const int zombie = owners()[b.partition.value];
  ASSERT_GE(zombie, 0);
  const pid_t zombie_pid = node(zombie).pid();
  ::kill(zombie_pid, SIGSTOP);
  // Requests sent to the paused owner wait in its sockets until it resumes. Whatever happens, it
  // is resumed and they are answered before the test ends.
  std::vector<unsigned> answers(4, 0);
  std::vector<std::jthread> senders;
  struct Resume {
    pid_t pid;
    ~Resume() { ::kill(pid, SIGCONT); }
  } resume{zombie_pid};
  const std::uint16_t port = node(zombie).port();
  for (std::size_t i = 0; i < answers.size(); ++i)
    senders.emplace_back([&, i] {
      try {
        HttpClient client("127.0.0.1", port, milliseconds(60'000));
        answers[i] =
            client
                .post("/v1/transactions/transfer",
                      transfer_body(b.wallets[0], b.wallets[1], 10'000, "zombie-" + std::to_string(i)), b.key)
                .status;
      } catch (const std::exception&) {
        answers[i] = 0;
      }
    });
  // A survivor takes the partition over and writes it.
  const int survivor = (zombie + 1) % kNodes;
  const auto paused = Clock::now();
  const HttpResult moved = command(
      "/v1/transactions/transfer", transfer_body(b.wallets[0], b.wallets[1], 20'000, "after-takeover"), b.key,
      survivor, milliseconds(40'000), boost::beast::http::verb::post, /*skip=*/zombie);
  ASSERT_EQ(moved.status, 200u) << moved.body;
  std::cout << "[cluster] the paused owner's partition was written again after "
            << seconds_between(paused, Clock::now()) << " s" << std::endl;
  ::kill(zombie_pid, SIGCONT);
  for (auto& t : senders) t.join();
  // Nothing of the zombie's is in the log after the takeover: every event of the partition past
  // the new owner's WriterStarted carries its epoch (or a later one). Once resumed, the node
  // learns it lost the partition: it forwards the transfers waiting in its sockets to the new
  // owner, or, given the partition again by the group when it rejoins, takes it over as any new
  // owner does (a later epoch, the log read to its end) and decides them then. Either way they
  // are decided rightly: a zombie-i in the log must be of the survivor's epoch or a later one,
  // and there exactly when it was acknowledged.
  ASSERT_TRUE(wait_until([&] { return stable(); }, milliseconds(30'000)));
  std::uint64_t epoch = 0, takeover_epoch = 0;
  int zombies = 0;
  std::map<std::string, std::uint64_t> decided;  // zombie-i: the epoch it was written in
  for (const json& e : log_events()) {
    if (e.value("partition", -1) != static_cast<int>(b.partition.value)) continue;
    const std::uint64_t ee = e.value("epoch", 0);
    if (ee < epoch) ++zombies;
    epoch = std::max(epoch, ee);
    const std::string reference =
        e.contains("data") && e["data"].is_object() ? e["data"].value("reference", "") : "";
    if (reference == "after-takeover") takeover_epoch = ee;
    if (reference.starts_with("zombie-")) decided[reference] = ee;
  }
  EXPECT_EQ(zombies, 0);
  ASSERT_GT(takeover_epoch, 0u) << "the survivor's transfer is in the log";
  for (std::size_t i = 0; i < answers.size(); ++i) {
    const std::string reference = "zombie-" + std::to_string(i);
    const auto it = decided.find(reference);
    if (answers[i] == 200u) {
      ASSERT_NE(it, decided.end()) << reference << " was acknowledged and is not in the log";
      EXPECT_GE(it->second, takeover_epoch)
          << reference << " was acknowledged by the zombie, in its old epoch";
    } else {
      EXPECT_EQ(it, decided.end()) << reference << " was answered " << answers[i] << " and is in the log";
    }
  }
  std::cout << "[cluster] transfers sent to the paused owner, decided by an owner after the takeover: "
            << decided.size() << " of " << answers.size() << std::endl;
  const std::int64_t expected = 120'000 + 10'000 * static_cast<std::int64_t>(decided.size());
  wait_until([&] { return balance_of(node(survivor).client(), b.key, b.wallets[1]) == expected; },
             milliseconds(10'000));
  EXPECT_EQ(balance_of(node(survivor).client(), b.key, b.wallets[1]), expected);
  expect_audit_clean();
}

// Webhooks move with the partition (docs/webhooks.md, "In a cluster"). Every node signs with the
// business's keys, which reach it through the log wrapped under the nodes' shared master key.
class ClusterWebhooks : public ClusterSuite {
 protected:
  void SetUp() override {
    extra_args_ = {"--webhook-allow-private", "--webhook-retry-schedule", "1h"};
    ClusterSuite::SetUp();
  }
};

TEST_F(ClusterWebhooks,
       ADeliveryInFlightOnAKilledOwnerIsDeliveredByTheNextOneAndADeliveredOneIsNotSentAgain) {
  kobo::testing::WebhookReceiver receiver;
  Business b = create_business("hooks");
  const int owner = owners()[b.partition.value];
  const HttpResult set =
      command("/v1/accounts/" + b.account, json{{"webhooks", json::array({receiver.url()})}}, b.key, owner,
              milliseconds(30'000), boost::beast::http::verb::patch);
  ASSERT_EQ(set.status, 200u) << set.body;
  // Delivered by the owner: the funding credit.
  add_wallets(b, 2, 100'000);
  ASSERT_TRUE(wait_until([&] { return receiver.count() >= 2; })) << receiver.count();
  std::set<std::string> delivered;
  for (const auto& r : receiver.requests()) delivered.insert(r.header("webhook-id"));
  // Every node knows they were delivered: the owner recorded it in the log.
  const int other = (owner + 1) % kNodes;
  ASSERT_TRUE(wait_until([&] {
    return list_all(node(other).client(), b.key, "/v1/webhook-deliveries", "status=succeeded").size() == 2;
  })) << "the other nodes learn from the log what the owner delivered";
  // A delivery the owner fails to make (its receiver answers 500; the next attempt is an hour
  // away), then the owner is killed.
  receiver.answer_with({500, 500});
  const HttpResult moved = command("/v1/transactions/transfer",
                                   transfer_body(b.wallets[0], b.wallets[1], 10'000, "hooked"), b.key, owner);
  ASSERT_EQ(moved.status, 200u) << moved.body;
  // Its debit and its credit: both refused by the receiver.
  ASSERT_TRUE(wait_until([&] { return receiver.count() >= 4; }));
  std::set<std::string> in_flight;
  for (std::size_t i = 2; i < 4; ++i) in_flight.insert(receiver.requests()[i].header("webhook-id"));
  for (const std::string& id : in_flight) EXPECT_FALSE(delivered.contains(id));
  const auto killed = Clock::now();
  node(owner).kill9();
  // The next owner delivers them, with the same webhook-ids, and nothing the old owner delivered.
  const auto made_again = [&] {
    std::map<std::string, int> times;
    for (const auto& r : receiver.requests()) ++times[r.header("webhook-id")];
    for (const std::string& id : in_flight)
      if (times[id] < 2) return false;
    return true;
  };
  ASSERT_TRUE(wait_until(made_again, milliseconds(30'000))) << "the deliveries in flight were not made again";
  std::cout << "[cluster] the webhooks in flight on the killed owner were delivered again after "
            << seconds_between(killed, Clock::now()) << " s" << std::endl;
  std::this_thread::sleep_for(milliseconds(1'000));
  std::map<std::string, int> times;
  for (const auto& r : receiver.requests()) ++times[r.header("webhook-id")];
  for (const std::string& id : delivered)
    EXPECT_EQ(times[id], 1) << "delivered once, not again by the next owner: " << id;
  const int next = owners()[b.partition.value];
  ASSERT_GE(next, 0);
  ASSERT_TRUE(wait_until([&] {
    return list_all(node(next).client(), b.key, "/v1/webhook-deliveries", "status=succeeded").size() == 4;
  }));
  expect_audit_clean();
}

// Read your writes on any node: a read that sends the token of a write, on another node, is never
// older than the write. One writer, so every balance is known exactly.
// A revoked key is refused on every node (docs/security.md, "Containing a leaked key"): a key
// rolled with an hour's overlap works on every node; revoked through a node that does not write
// the business's partition, it is refused (401) by that node as it answers and by the others as
// soon as their views apply the revocation from the log: asserted within 1 s, the figures printed.
TEST_F(ClusterSuite, ARevokedKeyIsRefusedOnEveryNode) {
  const Business b = create_business("revocation");
  const int owner = owners()[b.partition.value];
  ASSERT_GE(owner, 0);
  const int other = (owner + 1) % kNodes;
  const auto status = [&](int i, const std::string& key) {
    return node(i).client().get("/v1/virtual-accounts", key).status;
  };
  const json rolled = data_or_throw(node(owner).client().post("/v1/accounts/" + b.account + "/keys/roll",
                                                              json{{"overlapSeconds", 3600}}, b.key),
                                    201, "roll");
  const std::string fresh = rolled["secretKey"];
  for (int i = 0; i < kNodes; ++i) {
    EXPECT_TRUE(wait_until([&] { return status(i, fresh) == 200; }, milliseconds(5'000))) << "node " << i;
    EXPECT_EQ(status(i, b.key), 200u) << "node " << i << ": the rolled key in its overlap";
  }
  const HttpResult revoked = node(other).client().post("/v1/accounts/" + b.account + "/keys/revoke",
                                                       json{{"keyId", rolled["previousKeyId"]}}, fresh);
  ASSERT_EQ(revoked.status, 200u) << revoked.body;
  const auto answered = Clock::now();
  EXPECT_EQ(status(other, b.key), 401u) << "the node that answered refuses it at once";
  std::ostringstream figures;
  for (int i = 0; i < kNodes; ++i) {
    EXPECT_TRUE(wait_until([&] { return status(i, b.key) == 401; }, milliseconds(1'000)))
        << "node " << i << " still accepts the revoked key 1 s after the revocation was answered";
    figures << " n" << i + 1 << " "
            << std::chrono::duration_cast<milliseconds>(Clock::now() - answered).count() << " ms";
    EXPECT_EQ(status(i, fresh), 200u) << "node " << i << ": the current key still works";
  }
  std::cout << "[cluster] a revoked key refused after the answer on:" << figures.str() << std::endl;
}

TEST_F(ClusterSuite, AReadWithTheTokenOfAWriteOnAnotherNodeIsNeverOlderThanTheWrite) {
  Business b = create_business("tokens");
  add_wallets(b, 2, 10'000'000);
  std::vector<std::unique_ptr<HttpClient>> clients;
  for (int i = 0; i < kNodes; ++i) clients.push_back(node(i).new_client(milliseconds(15'000)));
  std::int64_t expected = b.funded / 2;  // w1's balance
  std::string last_read_token;
  std::vector<double> waits, server_waits;  // the client's whole read; the wait its answer reports
  for (int i = 0; i < 150; ++i) {
    const int writer = i % kNodes, reader = (i + 1) % kNodes;
    const HttpResult t = clients[writer]->post(
        "/v1/transactions/transfer",
        transfer_body(b.wallets[0], b.wallets[1], 10'000, "tok-" + std::to_string(i), "token test"), b.key);
    ASSERT_EQ(t.status, 200u) << t.body;
    expected += 10'000;
    const std::string token = t.header("kobo-position");
    ASSERT_TRUE(token.starts_with("k1.")) << token;
    const auto sent = Clock::now();
    const HttpResult r =
        clients[reader]->request(boost::beast::http::verb::get, "/v1/virtual-accounts/" + b.wallets[1],
                                 std::nullopt, {{"x-service-key", b.key}, {"Kobo-Position", token}});
    waits.push_back(seconds_between(sent, Clock::now()));
    ASSERT_EQ(r.status, 200u) << r.body;
    EXPECT_EQ(r.json["data"]["balance"].get<std::int64_t>(), expected)
        << "transfer " << i << " written on node " << writer << ", read on node " << reader << " with "
        << token;
    const std::string read_token = r.header("kobo-position");
    EXPECT_TRUE(read_token.starts_with("k1.")) << "a read answer carries the views' token";
    last_read_token = read_token;
    const std::string timing = r.header("server-timing");
    ASSERT_TRUE(timing.starts_with("kobo-position;dur="))
        << "a token read says how long it waited: " << timing;
    const double waited_ms = std::stod(timing.substr(timing.find('=') + 1));
    EXPECT_GE(waited_ms, 0.0);
    EXPECT_LE(waited_ms / 1000, seconds_between(sent, Clock::now())) << "the wait is part of the read";
    server_waits.push_back(waited_ms / 1000);
  }
  std::sort(waits.begin(), waits.end());
  std::sort(server_waits.begin(), server_waits.end());
  std::cout << "[cluster] reads with a write's token on another node: p50 " << waits[waits.size() / 2] * 1000
            << " ms, p99 " << waits[waits.size() * 99 / 100] * 1000 << " ms; their wait for the views: p50 "
            << server_waits[server_waits.size() / 2] * 1000 << " ms, p99 "
            << server_waits[server_waits.size() * 99 / 100] * 1000 << " ms" << std::endl;
  // The read's token, echoed on another node, is answered too (monotonic reads).
  const HttpResult echoed =
      clients[0]->request(boost::beast::http::verb::get, "/v1/virtual-accounts/" + b.wallets[1], std::nullopt,
                          {{"x-service-key", b.key}, {"Kobo-Position", last_read_token}});
  EXPECT_EQ(echoed.status, 200u);
  EXPECT_EQ(echoed.json["data"]["balance"].get<std::int64_t>(), expected);
  // A malformed token is refused, clearly; one of a position the log never reaches waits, then 503.
  for (const std::string bad : {"garbage", "k1.99-1", "k1.0-x", "k1.1-5.0-3"}) {
    const HttpResult r =
        clients[1]->request(boost::beast::http::verb::get, "/v1/virtual-accounts/" + b.wallets[1],
                            std::nullopt, {{"x-service-key", b.key}, {"Kobo-Position", bad}});
    EXPECT_EQ(r.status, 400u) << bad;
    EXPECT_NE(r.body.find("Kobo-Position"), std::string::npos) << r.body;
  }
  const auto sent = Clock::now();
  const HttpResult future =
      clients[1]->request(boost::beast::http::verb::get, "/v1/virtual-accounts/" + b.wallets[1], std::nullopt,
                          {{"x-service-key", b.key},
                           {"Kobo-Position", "k1." + std::to_string(b.partition.value) + "-999999999"}});
  EXPECT_EQ(future.status, 503u);
  EXPECT_EQ(future.header("retry-after"), "1");
  EXPECT_TRUE(future.header("server-timing").starts_with("kobo-position;dur="))
      << "a refused wait says so too";
  const HttpResult plain = clients[1]->get("/v1/virtual-accounts/" + b.wallets[1], b.key);
  EXPECT_TRUE(plain.header("server-timing").empty()) << "a read without a token waits for nothing";
  EXPECT_GE(seconds_between(sent, Clock::now()), 1.9) << "it waited --read-wait-ms (2 s)";
}

// /readyz does not flap under load: polled every 20 ms on every node while transfers run, it
// never answers 503.
TEST_F(ClusterSuite, ReadyzDoesNotFlapUnderLoad) {
  std::vector<Business> businesses = businesses_everywhere(3, 100'000'000);
  std::vector<std::uint16_t> ports;
  for (int i = 0; i < kNodes; ++i) ports.push_back(node(i).port());
  Load load(ports, businesses, seed_, 8);
  ASSERT_TRUE(wait_until([&] { return load.acknowledged() > 20; }, milliseconds(30'000)));
  std::vector<std::unique_ptr<HttpClient>> probes;
  for (int i = 0; i < kNodes; ++i) probes.push_back(node(i).new_client(milliseconds(5'000)));
  int probed = 0, not_ready = 0;
  std::string why;
  const auto until = Clock::now() + milliseconds(8'000);
  while (Clock::now() < until) {
    for (auto& probe : probes) {
      const HttpResult r = probe->get("/readyz");
      ++probed;
      if (r.status != 200) {
        ++not_ready;
        why = r.body;
      }
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  const int acked = load.acknowledged();
  load.stop();
  std::cout << "[cluster] /readyz under load: " << not_ready << " of " << probed << " probes not ready, "
            << acked << " transfers acknowledged" << std::endl;
  EXPECT_EQ(not_ready, 0) << why;
}

TEST_F(ClusterSuite, TheClusterRouteListsTheGroupAndEveryNodesPositionsWithTheSecret) {
  HttpClient& http = node(1).client();
  EXPECT_EQ(http.get("/v1/cluster").status, 401u);
  EXPECT_EQ(
      http.request(boost::beast::http::verb::get, "/v1/cluster", std::nullopt, {{"x-cluster-secret", "nope"}})
          .status,
      401u);
  // Once the group's map is read again after its last rebalance (it is read every 2 s).
  HttpResult r;
  EXPECT_TRUE(wait_until(
      [&] {
        r = http.request(boost::beast::http::verb::get, "/v1/cluster?nodes=all", std::nullopt,
                         {{"x-cluster-secret", kSecret}});
        return r.status == 200 && r.json["data"]["state"] == "Stable" &&
               std::none_of(r.json["data"]["assignment"].begin(), r.json["data"]["assignment"].end(),
                            [](const json& a) { return a["owner"].is_null(); });
      },
      milliseconds(10'000)))
      << r.body;
  ASSERT_EQ(r.status, 200u) << r.body;
  const json& d = r.json["data"];
  EXPECT_EQ(d["node"]["nodeId"], "n2");
  EXPECT_EQ(d["members"].size(), static_cast<std::size_t>(kNodes)) << d.dump();
  ASSERT_EQ(d["assignment"].size(), kPartitions);
  const auto o = owners();
  for (std::uint32_t p = 0; p < kPartitions; ++p)
    EXPECT_EQ(d["assignment"][p]["owner"], "n" + std::to_string(o[p] + 1)) << d.dump();
  ASSERT_EQ(d["nodes"].size(), static_cast<std::size_t>(kNodes)) << d.dump();
  std::set<std::string> ids;
  for (const json& n : d["nodes"]) {
    ids.insert(n.value("nodeId", ""));
    EXPECT_EQ(n["partitions"].size(), kPartitions) << n.dump();
  }
  EXPECT_EQ(ids, (std::set<std::string>{"n1", "n2", "n3"}));

  // A node refuses a secret file that others may read.
  const fs::path loose = secret_dir_ / "loose-secret";
  std::ofstream(loose) << kSecret << "\n";
  fs::permissions(loose, fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_read);
  const auto refused = kobo::testing::run_kobo(
      kobo_options().binary,
      {"serve", "--kafka-brokers", brokers(), "--kafka-topic", topic_, "--cluster", name_, "--node-id", "n9",
       "--cluster-secret-file", loose.string(), "--data-dir", (secret_dir_ / "n9").string()});
  EXPECT_EQ(refused.exit_code, 1) << refused.output.substr(0, 2000);
  EXPECT_NE(refused.output.find("chmod 600"), std::string::npos) << refused.output.substr(0, 2000);
}

// ---- a new node through a peer's checkpoint (docs/architecture.md, "A new node") ----------------

// The first line of `node`'s log whose message starts with `msg`, as JSON.
std::optional<json> log_line(const KoboProcess& node, std::string_view msg) {
  std::ifstream in(node.log_path());
  std::string line;
  while (std::getline(in, line)) {
    const json j = json::parse(line, nullptr, false);
    if (j.is_object() && j.value("msg", "").starts_with(msg)) return j;
  }
  return std::nullopt;
}

// A counter of `node`'s /metrics (0 when absent).
double metric(KoboProcess& node, std::string_view name) {
  const HttpResult res = node.client().get("/metrics");
  std::istringstream lines(res.body);
  std::string line;
  while (std::getline(lines, line))
    if (line.starts_with(std::string(name) + " ")) return std::stod(line.substr(name.size() + 1));
  return 0;
}

// What a client reads of every business on `node`: its wallets and its transactions, in order.
std::string reads(KoboProcess& node, const std::vector<Business>& businesses) {
  std::string out;
  for (const Business& b : businesses)
    for (const char* path : {"/v1/virtual-accounts", "/v1/transactions"})
      for (const json& record : list_all(node.client(), b.key, path)) out += record.dump() + "\n";
  return out;
}

// `kobo audit` of a stopped node's data dir: the log is clean and its views equal a rebuild of
// the log up to their positions, key by key.
void expect_views_equal_a_rebuild(const KoboProcess& node, const std::string& brokers,
                                  const std::string& topic) {
  const fs::path report = node.data_dir() / "audit.json";
  const auto r = kobo::testing::run_kobo(
      kobo_options().binary, {"audit", "--data-dir", node.data_dir().string(), "--kafka-brokers", brokers,
                              "--kafka-topic", topic, "--json", report.string()});
  EXPECT_EQ(r.exit_code, 0) << r.output.substr(0, 4000);
  std::ifstream in(report);
  const json j = json::parse(in, nullptr, false);
  EXPECT_EQ(j.value("violationCount", -1), 0) << r.output.substr(0, 4000);
  EXPECT_TRUE(j.contains("views") && j["views"].value("checked", false)) << j.dump().substr(0, 2000);
}

// Nodes that write a snapshot every 50 events, so that a joining node's writer starts from one.
class ClusterJoin : public ClusterSuite {
 protected:
  void SetUp() override {
    extra_args_ = {"--snapshot-every-events", "50"};
    ClusterSuite::SetUp();
  }
};

TEST_F(ClusterJoin, ANewNodeStartsFromAPeersCheckpointAndItsViewsEqualThePeersAndARebuild) {
  std::vector<Business> businesses = businesses_everywhere(3, 100'000'000);
  std::vector<std::uint16_t> ports;
  for (int i = 0; i < kNodes; ++i) ports.push_back(node(i).port());
  auto load = std::make_unique<Load>(ports, businesses, seed_);
  ASSERT_TRUE(wait_until([&] { return load->acknowledged() > 100; }, milliseconds(30'000)));
  ASSERT_TRUE(wait_until(
      [&] {
        for (int i = 0; i < kNodes; ++i)
          if (metric(node(i), "kobo_snapshots_written_total") < 1) return false;
        return true;
      },
      milliseconds(20'000)))
      << "every node wrote a snapshot";

  // A fourth node with an empty data dir, while transfers go on: it finds a peer in the group.
  const auto started = Clock::now();
  start_node(kNodes);
  KoboProcess& fresh = node(kNodes);
  std::cout << "[cluster] a new node ready through a peer's checkpoint in "
            << seconds_between(started, Clock::now()) << " s" << std::endl;
  const auto joined = log_line(fresh, "cluster: joined through a peer's checkpoint");
  ASSERT_TRUE(joined) << fresh.log_tail();
  EXPECT_FALSE(log_line(fresh, "cluster: a peer's checkpoint is refused")) << fresh.log_tail();
  EXPECT_GT(joined->value("events", 0), 0) << joined->dump();
  EXPECT_TRUE(log_line(fresh, "writer state rebuilt from a snapshot and the log after it"))
      << "the writer starts from the peer's snapshot and history index, not from the log's start\n"
      << fresh.log_tail();
  const std::string peer_id = joined->value("peerNode", "");
  ASSERT_TRUE(peer_id.size() == 2 && peer_id[0] == 'n') << joined->dump();
  KoboProcess& peer = node(peer_id[1] - '1');
  std::this_thread::sleep_for(milliseconds(1'000));  // transfers the new node reads from the log
  load->stop();
  const auto attempts = load->attempts();
  load.reset();

  // It reads what its peer reads, once both have applied the same log.
  std::string at_peer, at_fresh;
  EXPECT_TRUE(wait_until(
      [&] {
        at_peer = reads(peer, businesses);
        at_fresh = reads(fresh, businesses);
        return at_peer == at_fresh;
      },
      milliseconds(15'000)));
  EXPECT_EQ(at_fresh, at_peer);
  expect_bank_invariants(fresh, businesses, attempts);
  // ... and its views equal a rebuild of the log, key by key.
  ASSERT_EQ(fresh.terminate(), 0) << fresh.log_tail();
  expect_views_equal_a_rebuild(fresh, brokers(), topic_);
}

// A checkpoint served by a peer without the cluster's secret: 401, and no copy is made.
TEST_F(ClusterSuite, TheCheckpointRouteAnswersOnlyWithTheClusterSecret) {
  create_business("checkpoint-secret");
  HttpClient& http = node(0).client();
  using boost::beast::http::verb;
  for (const std::optional<std::string>& secret :
       {std::optional<std::string>(), std::optional<std::string>("wrong")}) {
    std::vector<std::pair<std::string, std::string>> headers;
    if (secret) headers.emplace_back("x-cluster-secret", *secret);
    const HttpResult r = http.request(verb::get, "/v1/cluster/checkpoint", std::nullopt, headers);
    EXPECT_EQ(r.status, 401u) << r.body.substr(0, 200);
    EXPECT_EQ(r.json["meta"]["error"]["message"], "Unauthorized") << r.body.substr(0, 200);
    EXPECT_FALSE(r.body.starts_with("KOBOCKP1"));
  }
  for (const auto& entry : fs::directory_iterator(node(0).data_dir()))
    EXPECT_FALSE(entry.path().filename().string().starts_with("views.checkpoint-")) << entry.path();
  // (n2 and n3 joined through n1's checkpoints as the suite started them.)
  const double served = metric(node(0), "kobo_cluster_checkpoints_served_total");
  const HttpResult good =
      http.request(verb::get, "/v1/cluster/checkpoint", std::nullopt, {{"x-cluster-secret", kSecret}});
  EXPECT_EQ(good.status, 200u);
  EXPECT_TRUE(good.body.starts_with("KOBOCKP1")) << "the route is there, and streams with the secret";
  EXPECT_EQ(metric(node(0), "kobo_cluster_checkpoints_served_total"), served + 1);
}

// A peer that serves `bytes` as its checkpoint (the cluster's secret checked), cut short after
// half of them when `cut`: what a node tampered with, or failing, would send. Its first `busy`
// answers are 503 (a copy for another node in progress).
class FakePeer {
 public:
  FakePeer(std::string bytes, bool cut, int busy = 0) {
    http::ServerOptions o;
    o.threads = 1;
    auto busy_left = std::make_shared<std::atomic<int>>(busy);
    server_ = std::make_unique<http::Server>(
        o, [bytes = std::move(bytes), cut, busy_left, this](http::Request&& req, http::Responder respond) {
          if (req.header("x-cluster-secret") != kSecret)
            return respond(http::Response{401, "{}", "application/json", {}});
          ++asked_;
          if (busy_left->fetch_sub(1) > 0) return respond(http::Response{503, "{}", "application/json", {}});
          http::Response r;
          r.content_type = "application/octet-stream";
          auto sent = std::make_shared<bool>(false);
          r.stream = [bytes, cut, sent](std::string& out) -> Result<bool> {
            if (*sent) return Status::error("the peer went away");
            *sent = true;
            out += cut ? bytes.substr(0, bytes.size() / 2) : bytes;
            return cut;  // a cut stream fails on its next piece: the body never ends
          };
          respond(std::move(r));
        });
    EXPECT_TRUE(server_->start().ok());
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  int asked() const { return asked_.load(); }  // requests with the secret, answered or not

 private:
  std::atomic<int> asked_{0};  // before server_: its handler counts into it until it stops
  std::unique_ptr<http::Server> server_;
};

// A peer's stream received into `root` as a joining node receives it.
CheckpointManifest receive_checkpoint(const fs::path& root, const std::string& bytes) {
  CheckpointSink sink(root);
  EXPECT_TRUE(sink.feed(bytes).ok());
  auto m = sink.finish();
  if (!m.ok()) throw std::runtime_error(m.status().message());
  return m.value();
}

// The stream of the checkpoint under `root`, as a peer sends it.
std::string checkpoint_stream(const fs::path& root, const CheckpointManifest& m) {
  auto listed = list_checkpoint(root, m.topic, m.partitions, m.node_id);
  if (!listed.ok()) throw std::runtime_error(listed.status().message());
  CheckpointSource source(root, listed.value());
  std::string out;
  for (;;) {
    auto more = source.next(out);
    if (!more.ok()) throw std::runtime_error(more.status().message());
    if (!more.value()) return out;
  }
}

TEST_F(ClusterSuite, ACheckpointThatDoesNotMatchTheTopicIsRefusedAndTheNodeReplaysInstead) {
  std::vector<Business> businesses = businesses_everywhere(2, 100'000'000);
  for (const Business& b : businesses)
    data_or_throw(command("/v1/transactions/transfer",
                          transfer_body(b.wallets[0], b.wallets[1], 10'000, unique_name("t")), b.key,
                          owners()[b.partition.value]),
                  200, "transfer");
  // A genuine checkpoint of n1, as a joining node receives it.
  const HttpResult genuine = node(0).client().request(boost::beast::http::verb::get, "/v1/cluster/checkpoint",
                                                      std::nullopt, {{"x-cluster-secret", kSecret}});
  ASSERT_EQ(genuine.status, 200u) << genuine.body.substr(0, 200);
  kobo::testing::ScratchDir work("checkpoint-tampered", kobo::testing::ScratchDir::Keep::on_failure);
  const CheckpointManifest manifest = receive_checkpoint(work.path() / "genuine", genuine.body);

  // 1. The recorded chain hash of a partition's position, changed: views of a chain the topic
  //    does not have (RocksDB's checksums hold: the row was written through RocksDB).
  const fs::path hashed = work.path() / "hash";
  fs::copy(work.path() / "genuine", hashed, fs::copy_options::recursive);
  {
    auto views = Views::open((hashed / "views").string(), kPartitions);
    ASSERT_TRUE(views.ok()) << views.status().message();
    auto positions = views.value()->positions();
    ASSERT_TRUE(positions.ok());
    std::uint32_t p = 0;
    while (positions.value()[p].last_seq.value == 0) ++p;
    const ViewPosition& at = positions.value()[p];
    std::string hash = at.last_hash;
    hash[10] = hash[10] == '0' ? '1' : '0';
    const std::string key = view_keys::position(p);
    const std::string row =
        rows::encode(rows::PositionRow{at.next_offset.value, at.last_seq.value, hash, at.epoch.value});
    const ViewChange change{key, row};
    ASSERT_TRUE(views.value()->write(std::span<const ViewChange>(&change, 1)).ok());
  }
  // 2. A byte of a views file changed after the peer wrote it.
  const fs::path flipped = work.path() / "file";
  fs::copy(work.path() / "genuine", flipped, fs::copy_options::recursive);
  {
    fs::path largest;
    for (const auto& entry : fs::directory_iterator(flipped / "views"))
      if (entry.path().extension() == ".sst" &&
          (largest.empty() || entry.file_size() > fs::file_size(largest)))
        largest = entry.path();
    ASSERT_FALSE(largest.empty());
    std::fstream f(largest, std::ios::in | std::ios::out | std::ios::binary);
    const auto middle = static_cast<std::streamoff>(fs::file_size(largest) / 2);
    f.seekg(middle);
    const char c = static_cast<char>(f.get());
    f.seekp(middle);
    f.put(static_cast<char>(c ^ 0x5a));
  }
  FakePeer tampered_hash(checkpoint_stream(hashed, manifest), false);
  FakePeer tampered_file(checkpoint_stream(flipped, manifest), false);
  FakePeer short_stream(genuine.body, true);  // 3. cut short halfway
  // 4. A node given another secret than its peers': the peer answers 401.
  const fs::path wrong_secret = secret_dir_ / "wrong-secret";
  std::ofstream(wrong_secret) << "not-the-cluster-secret-0123456789"
                              << "\n";
  fs::permissions(wrong_secret, fs::perms::owner_read | fs::perms::owner_write);

  struct Case {
    std::string what;
    std::string from;
    fs::path secret;
    std::string why;  // in the refusal's log line
  };
  const std::vector<Case> cases{
      {"a recorded chain hash the topic does not have", tampered_hash.url(), {}, "has hash"},
      {"a views file changed", tampered_file.url(), {}, "the views fail their checksums"},
      {"a stream cut short", short_stream.url(), {}, "broke off after"},
      {"a wrong cluster secret", "http://127.0.0.1:" + std::to_string(node(0).port()), wrong_secret,
       "refused the cluster's secret (401)"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const int n = kNodes + static_cast<int>(i);
    start_node(n, {"--join-from", c.from}, c.secret);  // waits for /readyz
    KoboProcess& fresh = node(n);
    const auto refused = log_line(fresh, "cluster: a peer's checkpoint is refused");
    ASSERT_TRUE(refused) << c.what << "\n" << fresh.log_tail();
    EXPECT_NE(refused->value("why", "").find(c.why), std::string::npos) << c.what << ": " << refused->dump();
    EXPECT_FALSE(log_line(fresh, "cluster: joined through a peer's checkpoint")) << c.what;
    EXPECT_TRUE(log_line(fresh, "writer state rebuilt from the log"))
        << c.what << ": the writer replays the log";
    for (const auto& entry : fs::directory_iterator(fresh.data_dir()))
      EXPECT_FALSE(entry.path().filename().string().starts_with("views.join-")) << "the copy is removed";
    // Its views are the log's, whatever it was sent.
    for (const Business& b : businesses)
      EXPECT_TRUE(wait_until([&] {
        return list_all(fresh.client(), b.key, "/v1/virtual-accounts").size() == 2;
      })) << c.what;
    ASSERT_EQ(fresh.terminate(), 0) << fresh.log_tail();
    expect_views_equal_a_rebuild(fresh, brokers(), topic_);
  }
}

// Two nodes added at once: the peer streams one copy at a time and answers the other 503. That
// node asks again a second later and joins, rather than replaying the topic.
TEST_F(ClusterSuite, ANewNodeAsksABusyPeerAgainAndJoinsOnceItServes) {
  Business b = create_business("busy-peer");
  add_wallets(b, 2, 1'000'000);
  const HttpResult genuine = node(0).client().request(boost::beast::http::verb::get, "/v1/cluster/checkpoint",
                                                      std::nullopt, {{"x-cluster-secret", kSecret}});
  ASSERT_EQ(genuine.status, 200u) << genuine.body.substr(0, 200);
  FakePeer busy_twice(genuine.body, false, 2);
  start_node(kNodes, {"--join-from", busy_twice.url()});
  KoboProcess& fresh = node(kNodes);
  EXPECT_EQ(busy_twice.asked(), 3);
  ASSERT_TRUE(log_line(fresh, "cluster: joined through a peer's checkpoint")) << fresh.log_tail();
  EXPECT_TRUE(
      wait_until([&] { return list_all(fresh.client(), b.key, "/v1/virtual-accounts").size() == 2; }));
}

}  // namespace
}  // namespace kobo::it
