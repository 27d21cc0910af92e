// A Kobo cluster of three real `kobo serve` nodes on one topic of the test broker
// (docs/architecture.md, "Cluster"), in the Kafka run only (ctest labels `kafka` and `cluster`):
//  - ownership is exclusive: once the group is stable every partition has exactly one owner;
//  - a command sent to its partition's owner is decided; one sent to another node is never
//    decided there (503 with Retry-After, nothing in the log);
//  - a node killed -9 under load: its partitions' writes are acknowledged again on a survivor
//    within 8 s (session.timeout.ms 6000); a node stopped with SIGTERM: within 1 s; no
//    acknowledged transfer is lost or applied twice, money is conserved, `kobo audit` passes;
//  - a hold expires once across a takeover;
//  - a webhook delivery in flight on a killed owner is delivered by the next owner with the same
//    webhook-id, and one the old owner delivered is not sent again;
//  - a zombie (an owner paused with SIGSTOP past its session, then resumed) cannot append and
//    acknowledges nothing.
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

#include "events/partitioner.h"
#include "tests/audit/run_kobo.h"
#include "tests/integration/harness.h"
#include "tests/support/webhook_receiver.h"

namespace kobo::it {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::uint32_t kPartitions = 6;
constexpr int kNodes = 3;
const std::string kAdminKey = "cluster-test-admin-key-0123456789abcdef";

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
    topic_ = "it." + name_;
    // One master key for every node (docs/security.md): what one wraps, the others open.
    master_key_file_ = fs::temp_directory_path() / ("kobo-" + name_ + "-master-key");
    std::ofstream(master_key_file_) << std::string(64, 'c') << "\n";
    fs::permissions(master_key_file_, fs::perms::owner_read | fs::perms::owner_write);
    for (int i = 0; i < kNodes; ++i) {
      start_node(i);
      if (i == 0) continue;  // the first made the topic; the others join it
    }
    ASSERT_TRUE(wait_until([&] { return stable(); }, milliseconds(30'000))) << describe_owners();
  }

  void TearDown() override {
    for (auto& n : nodes_)
      if (n && ::testing::Test::HasFailure()) keep_data_dir_if_failed(*n);
    std::error_code ec;
    fs::remove(master_key_file_, ec);
  }

  void start_node(int i) {
    std::vector<std::string> args{
        "--partitions",      std::to_string(kPartitions), "--cluster",       name_,
        "--node-id",         "n" + std::to_string(i + 1), "--admin-key",     kAdminKey,
        "--kafka-config",    "session.timeout.ms=6000",   "--rail-delay-ms", "50",
        "--master-key-file", master_key_file_.string()};
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
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
// it last saw write the business's partition and, on a 503 or no answer, to the next node.
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
    for (int i = 0; !stop_.load(); ++i) {
      const std::size_t bi = (static_cast<std::size_t>(t) + static_cast<std::size_t>(i)) % businesses_.size();
      const Business& b = businesses_[bi];
      const std::size_t n = b.wallets.size();
      const std::size_t from = rng() % n, to = (from + 1 + rng() % (n - 1)) % n;
      Attempt a;
      a.business = bi;
      a.amount = 10'000 + static_cast<std::int64_t>(rng() % 1'000);
      a.reference = "cl-" + std::to_string(seed) + "-" + std::to_string(t) + "-" + std::to_string(i);
      const json body = transfer_body(b.wallets[from], b.wallets[to], a.amount, a.reference, "cluster test");
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
  int acknowledged = 0;
  for (const Attempt& a : attempts) {
    const int n = seen.count(a.reference) ? seen[a.reference] : 0;
    if (a.status == 200) {
      ++acknowledged;
      EXPECT_EQ(n, 1) << "an acknowledged transfer is there exactly once: " << a.reference;
    } else {
      EXPECT_LE(n, 1) << a.reference;
      if (a.status != 0) {
        EXPECT_EQ(n, 0) << "a transfer refused with " << a.status << " moved money: " << a.reference;
      }
    }
  }
  std::cout << "[cluster] " << acknowledged << " acknowledged transfers checked" << std::endl;
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

TEST_F(ClusterSuite, ACommandToTheOwnerIsDecidedAndOneToAnotherNodeIsNot) {
  Business b = create_business("owner-test");
  const int owner = owners()[b.partition.value];
  ASSERT_GE(owner, 0);
  const int other = (owner + 1) % kNodes;
  const HttpResult decided =
      node(owner).client().post("/v1/virtual-accounts", wallet_body("at-owner"), b.key);
  EXPECT_EQ(decided.status, 201u) << decided.body;

  const auto before = log_events().size();
  const auto sent = Clock::now();
  const HttpResult refused =
      node(other).client().post("/v1/virtual-accounts", wallet_body("elsewhere"), b.key);
  EXPECT_EQ(refused.status, 503u) << refused.body;
  EXPECT_EQ(refused.header("retry-after"), "1");
  EXPECT_LT(seconds_between(sent, Clock::now()), 2.0) << "another node writes it: answered at once";
  // Nothing was decided on the other node: the log has no new event, the owner one wallet.
  EXPECT_EQ(log_events().size(), before);
  const auto wallets = list_all(node(owner).client(), b.key, "/v1/virtual-accounts");
  ASSERT_EQ(wallets.size(), 1u);
  EXPECT_EQ(wallets[0]["accountName"], "at-owner");
  // Reads are answered on every node.
  for (int i = 0; i < kNodes; ++i)
    EXPECT_TRUE(wait_until([&] {
      return list_all(node(i).client(), b.key, "/v1/virtual-accounts").size() == 1;
    })) << "node "
        << i;
}

// A node killed -9 (or stopped with SIGTERM) under load: its partitions are written again on a
// survivor within the target, and the bank's invariants hold.
class ClusterFailover : public ClusterSuite {
 public:
  void run(bool kill9, double target_s) {
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
                << " acknowledged again after " << took[p.value] << " s (target " << target_s << " s)"
                << std::endl;
      EXPECT_LE(took[p.value], target_s) << "partition " << p.value;
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

TEST_F(ClusterFailover, AKilledNodesPartitionsAreWrittenAgainOnASurvivorWithin8s) { run(true, 8.0); }

TEST_F(ClusterFailover, ASigtermedNodesPartitionsAreWrittenAgainOnASurvivorWithin1s) { run(false, 1.0); }

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
  for (std::size_t i = 0; i < answers.size(); ++i)
    EXPECT_NE(answers[i], 200u) << "the zombie acknowledged zombie-" << i;
  // Nothing of the zombie's is in the log after the takeover: every event of the partition past
  // the new owner's WriterStarted carries its epoch (or a later one).
  ASSERT_TRUE(wait_until([&] { return stable(); }, milliseconds(30'000)));
  std::uint64_t epoch = 0;
  int zombies = 0;
  for (const json& e : log_events()) {
    if (e.value("partition", -1) != static_cast<int>(b.partition.value)) continue;
    const std::uint64_t ee = e.value("epoch", 0);
    if (ee < epoch) ++zombies;
    epoch = std::max(epoch, ee);
  }
  EXPECT_EQ(zombies, 0);
  for (const json& e : log_events())
    if (e.contains("data") && e["data"].is_object() &&
        e["data"].value("reference", "").starts_with("zombie-"))
      ADD_FAILURE() << "a zombie's transfer is in the log: " << e.dump();
  EXPECT_EQ(balance_of(node(survivor).client(), b.key, b.wallets[1]), 120'000);
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

}  // namespace
}  // namespace kobo::it
