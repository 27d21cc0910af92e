#include "cluster/cluster.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <span>

#include "common/assert.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/thread.h"

namespace kobo {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kClientIdPrefix = "kobo:";
constexpr std::size_t kNodeIdMax = 64;
constexpr std::size_t kUrlMax = 200;
// How long a read of the group (DescribeConsumerGroups) may take before it is given up.
constexpr int kDescribeTimeoutMs = 3'000;
// After a rebalance the other members may still be syncing: the map is read again this much later.
constexpr auto kRefreshAfterRebalance = std::chrono::milliseconds(300);

struct ClusterMetrics {
  metrics::Gauge& members =
      metrics::registry().gauge("kobo_cluster_members", "Members of the node's cluster, as last read");
  metrics::Counter& rebalances = metrics::registry().counter(
      "kobo_cluster_rebalances_total", "Rebalances of the cluster that changed this node's partitions");
  metrics::Gauge& writer_lag(Partition p) {
    return metrics::registry().gauge(
        "kobo_partition_writer_lag_records",
        "Records of the partition the writer's state has not read yet (0 where this node writes it)",
        label(p));
  }
  metrics::Gauge& views_lag(Partition p) {
    return metrics::registry().gauge("kobo_partition_views_lag_events",
                                     "Events of the partition the writer's state has and the views have not",
                                     label(p));
  }
  static std::string label(Partition p) { return "partition=\"" + std::to_string(p.value) + "\""; }
};

ClusterMetrics& cluster_metrics() {
  static ClusterMetrics m;
  return m;
}

std::vector<Partition> partitions_of(const rd_kafka_topic_partition_list_t* list, const std::string& topic) {
  std::vector<Partition> out;
  for (int i = 0; i < list->cnt; ++i)
    if (list->elems[i].partition >= 0 && topic == list->elems[i].topic)
      out.emplace_back(static_cast<std::uint32_t>(list->elems[i].partition));
  return out;
}

std::string to_text(const std::vector<Partition>& ps) {
  std::string out;
  for (const Partition p : ps) out += (out.empty() ? "" : ",") + std::to_string(p.value);
  return out;
}

}  // namespace

Status check_node_id(std::string_view id) {
  if (id.empty() || id.size() > kNodeIdMax)
    return Status::error("--node-id must be 1 to " + std::to_string(kNodeIdMax) + " characters");
  for (const char c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
      return Status::error("--node-id may hold only letters, digits, '.', '_' and '-', got " +
                           std::string(id));
  return {};
}

Status check_advertise(std::string_view url) {
  const bool scheme = url.starts_with("http://") || url.starts_with("https://");
  const std::string_view rest = url.substr(url.find("//") == std::string_view::npos ? 0 : url.find("//") + 2);
  if (!scheme || rest.empty() || url.size() > kUrlMax || rest.find_first_of(" @") != std::string_view::npos)
    return Status::error("--advertise wants the URL other nodes reach this one at, http://HOST:PORT, got " +
                         std::string(url));
  return {};
}

std::string member_client_id(std::string_view node_id, std::string_view url) {
  return std::string(kClientIdPrefix) + std::string(node_id) + "@" + std::string(url);
}

std::optional<MemberAddress> parse_member_client_id(std::string_view client_id) {
  if (!client_id.starts_with(kClientIdPrefix)) return std::nullopt;
  client_id.remove_prefix(kClientIdPrefix.size());
  const auto at = client_id.find('@');
  if (at == std::string_view::npos) return std::nullopt;
  MemberAddress a{std::string(client_id.substr(0, at)), std::string(client_id.substr(at + 1))};
  if (!check_node_id(a.node_id).ok() || !check_advertise(a.url).ok()) return std::nullopt;
  return a;
}

namespace {

// Big-endian reads over a byte range that refuse to run past its end.
class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  std::optional<std::int64_t> integer(std::size_t width) {
    KOBO_ASSERT(width == 2 || width == 4, "Kafka's protocol integers here are int16 or int32");
    if (bytes_.size() - at_ < width) return std::nullopt;
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < width; ++i) v = (v << 8) | bytes_[at_ + i];
    at_ += width;
    return width == 2 ? std::int64_t{static_cast<std::int16_t>(v)}
                      : std::int64_t{static_cast<std::int32_t>(v)};
  }
  std::optional<std::string_view> text(std::size_t size) {
    if (bytes_.size() - at_ < size) return std::nullopt;
    const std::string_view out(reinterpret_cast<const char*>(bytes_.data() + at_), size);
    at_ += size;
    return out;
  }
  std::size_t left() const { return bytes_.size() - at_; }

 private:
  std::span<const std::uint8_t> bytes_;
  std::size_t at_ = 0;
};

}  // namespace

std::optional<std::vector<Partition>> parse_member_assignment(std::span<const std::uint8_t> bytes,
                                                              std::string_view topic) {
  std::vector<Partition> out;
  if (bytes.empty()) return out;  // a member between rebalances holds nothing yet
  Reader r(bytes);
  const auto version = r.integer(2);
  const auto topics = r.integer(4);
  if (!version || *version < 0 || !topics) return std::nullopt;
  for (std::int64_t t = 0; t < *topics; ++t) {
    const auto name_size = r.integer(2);
    if (!name_size || *name_size < 0) return std::nullopt;
    const auto name = r.text(static_cast<std::size_t>(*name_size));
    const auto count = r.integer(4);
    // Each partition is 4 bytes: a count beyond what is left is a lie, refused before any read.
    if (!name || !count || *count < -1 || (*count > 0 && static_cast<std::size_t>(*count) > r.left() / 4))
      return std::nullopt;
    for (std::int64_t i = 0; i < *count; ++i) {
      const auto partition = r.integer(4);
      KOBO_ASSERT(partition.has_value(), "the count was checked against the bytes left");
      if (*partition < 0) return std::nullopt;
      if (*name == topic) out.emplace_back(static_cast<std::uint32_t>(*partition));
    }
  }
  return out;  // the user data that follows is not Kobo's
}

namespace {

// A group's description as an owner map: its Kobo members (those whose client.id is a node's)
// and the partitions of `topic` each was assigned.
OwnerMap owner_map(const rd_kafka_group_info& g, const std::string& topic, std::uint32_t partitions) {
  OwnerMap map;
  map.owner.resize(partitions);
  map.state = g.state != nullptr ? g.state : "";
  map.read_at = std::chrono::system_clock::now();
  for (int i = 0; i < g.member_cnt; ++i) {
    const rd_kafka_group_member_info& m = g.members[i];
    const auto address = parse_member_client_id(m.client_id != nullptr ? m.client_id : "");
    if (!address) continue;  // not a Kobo node (an operator's tool in the group?)
    OwnerMap::Member member{address->node_id, address->url, {}};
    const auto assigned =
        parse_member_assignment(std::span(static_cast<const std::uint8_t*>(m.member_assignment),
                                          static_cast<std::size_t>(std::max(m.member_assignment_size, 0))),
                                topic);
    if (!assigned) {
      log::warn("cluster: a member's assignment does not parse; its partitions count as unowned",
                {{"node", address->node_id}});
    } else {
      member.partitions = *assigned;
    }
    for (const Partition p : member.partitions)
      if (p.value < map.owner.size()) map.owner[p.value] = map.members.size();
    map.members.push_back(std::move(member));
  }
  return map;
}

// The group as its coordinator describes it, asked through `rk` (any client of the brokers); an
// error when it could not be read in time.
//
// Read with rd_kafka_list_groups(), not the admin API's DescribeConsumerGroups: librdkafka 2.0's
// admin path aborts the process (`rd_kafka_enq_once_del_source_return: eonce->refcnt > 0`) when a
// describe times out while the coordinator is unreachable (a broker outage), a use-after-free
// fixed only in later releases. list_groups keeps its state to itself and drops late answers.
Result<OwnerMap> describe_group(rd_kafka_t* rk, const std::string& group, const std::string& topic,
                                std::uint32_t partitions) {
  const rd_kafka_group_list* list = nullptr;
  const rd_kafka_resp_err_t err = rd_kafka_list_groups(rk, group.c_str(), &list, kDescribeTimeoutMs);
  Result<OwnerMap> out =
      Status::error("cluster: the group was not described in time", ErrorKind::unavailable);
  if (list == nullptr) {
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
      out = Status::error(std::string("cluster: describing the group: ") + rd_kafka_err2str(err),
                          ErrorKind::unavailable);
    return out;
  }
  // __PARTIAL: a broker did not answer, but the one that coordinates the group did.
  for (int i = 0; i < list->group_cnt; ++i) {
    const rd_kafka_group_info& g = list->groups[i];
    if (group != g.group) continue;
    if (g.err != RD_KAFKA_RESP_ERR_NO_ERROR)
      out = Status::error(std::string("cluster: describing the group: ") + rd_kafka_err2str(g.err),
                          ErrorKind::unavailable);
    else
      out = owner_map(g, topic, partitions);
  }
  rd_kafka_group_list_destroy(list);
  return out;
}

}  // namespace

// The group member: a librdkafka consumer subscribed to the log's topic. Its rebalance callback
// runs on the cluster's thread, inside rd_kafka_consumer_poll() (and rd_kafka_consumer_close()).
class Cluster::Member {
 public:
  Member(Cluster& cluster) : cluster_(cluster) {}
  ~Member() {
    if (rk_ != nullptr) rd_kafka_destroy(rk_);
  }
  Member(const Member&) = delete;
  Member& operator=(const Member&) = delete;

  Status create() {
    const ClusterOptions& o = cluster_.options_;
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    std::vector<std::pair<std::string, std::string>> props{
        {"bootstrap.servers", o.kafka.brokers},
        {"group.id", o.name},
        {"client.id", member_client_id(o.node_id, o.advertise)},
        {"partition.assignment.strategy", "cooperative-sticky"},
        {"session.timeout.ms", "6000"},
        {"heartbeat.interval.ms", "250"},
        {"reconnect.backoff.max.ms", "1000"},
        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"},
        {"auto.offset.reset", "latest"},
        {"enable.partition.eof", "false"},
    };
    // The caller's settings win, but for what makes the member one of this cluster's nodes.
    for (const auto& [key, value] : o.kafka.config) {
      if (key == "group.id" || key == "client.id" || key == "group.instance.id" ||
          key == "partition.assignment.strategy") {
        log::warn("cluster: a Kafka setting the cluster's member makes its own is ignored for it",
                  {{"setting", key}});
        continue;
      }
      props.emplace_back(key, value);
    }
    char err[512];
    for (const auto& [key, value] : props) {
      if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
        rd_kafka_conf_destroy(conf);
        return Status::error("cluster: kafka property " + key + ": " + err);
      }
    }
    rd_kafka_conf_set_rebalance_cb(conf, &Member::on_rebalance);
    rd_kafka_conf_set_opaque(conf, this);
    rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (rk_ == nullptr) {
      rd_kafka_conf_destroy(conf);
      return Status::error(std::string("cluster: ") + err);
    }
    rd_kafka_poll_set_consumer(rk_);
    rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, o.kafka.topic.c_str(), RD_KAFKA_PARTITION_UA);
    const rd_kafka_resp_err_t e = rd_kafka_subscribe(rk_, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
      return Status::error(std::string("cluster: subscribing to the topic: ") + rd_kafka_err2str(e));
    return {};
  }

  // Serves the group for up to `wait`: heartbeats run on librdkafka's threads, rebalances here.
  void poll(std::chrono::milliseconds wait) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, static_cast<int>(wait.count()));
    if (m == nullptr) return;
    // A record fetched before its partition was paused, or an error: the group is what matters.
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
      log::warn("cluster member", {{"error", rd_kafka_message_errstr(m)}});
    rd_kafka_message_destroy(m);
  }

  // Leaves the group: the rebalance callback revokes everything first.
  void close() {
    if (const rd_kafka_resp_err_t e = rd_kafka_consumer_close(rk_); e != RD_KAFKA_RESP_ERR_NO_ERROR)
      log::warn("cluster: leaving the group", {{"error", rd_kafka_err2str(e)}});
  }

  // The group as its coordinator describes it; an error when it could not be read in time.
  Result<OwnerMap> describe() {
    const ClusterOptions& o = cluster_.options_;
    return describe_group(rk_, o.name, o.kafka.topic, cluster_.log_.partitions());
  }

 private:
  static void on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* list,
                           void* opaque) {
    static_cast<Member*>(opaque)->rebalance(rk, err, list);
  }

  // Assigned: taken by the writer (which fences the previous owner first); revoked: released by
  // the writer before the group may give them to another member. Both incremental.
  void rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* list) {
    const std::string& topic = cluster_.options_.kafka.topic;
    const std::vector<Partition> ps = partitions_of(list, topic);
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
      if (rd_kafka_error_t* e = rd_kafka_incremental_assign(rk, list)) {
        log::error("cluster: assigning partitions", {{"error", rd_kafka_error_string(e)}});
        rd_kafka_error_destroy(e);
        return;
      }
      // Nothing of the topic is read through the group: the node's own readers read it.
      rd_kafka_pause_partitions(rk, list);
      if (!ps.empty()) {
        cluster_metrics().rebalances.inc();
        log::info("cluster: partitions assigned to this node", {{"partitions", to_text(ps)}});
      }
      for (const Partition p : ps) cluster_.ledger_.take(p);
    } else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
      if (!ps.empty()) {
        cluster_metrics().rebalances.inc();
        log::info("cluster: partitions revoked from this node",
                  {{"partitions", to_text(ps)}, {"lost", rd_kafka_assignment_lost(rk) == 1}});
      }
      cluster_.ledger_.release(ps);
      if (rd_kafka_error_t* e = rd_kafka_incremental_unassign(rk, list)) {
        log::error("cluster: unassigning partitions", {{"error", rd_kafka_error_string(e)}});
        rd_kafka_error_destroy(e);
      }
    } else {
      log::error("cluster: rebalance failed", {{"error", rd_kafka_err2str(err)}});
      cluster_.ledger_.release(ps);
      rd_kafka_assign(rk, nullptr);
    }
    cluster_.refresh_soon_.store(true);
  }

  Cluster& cluster_;
  rd_kafka_t* rk_ = nullptr;
};

Result<OwnerMap> read_group(const ClusterOptions& options, std::uint32_t partitions) {
  if (options.kafka.brokers.empty()) return Status::error("--cluster needs --kafka-brokers");
  // A client of its own, in no group: the caller's settings (security, --kafka-config) but for
  // what would make it a member.
  std::vector<std::pair<std::string, std::string>> props{{"bootstrap.servers", options.kafka.brokers},
                                                         {"client.id", "kobo-join:" + options.node_id}};
  for (const auto& [key, value] : options.kafka.config)
    if (key != "group.id" && key != "client.id" && key != "group.instance.id" &&
        key != "partition.assignment.strategy")
      props.emplace_back(key, value);
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  for (const auto& [key, value] : props) {
    if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return Status::error("cluster: kafka property " + key + ": " + err);
    }
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    return Status::error(std::string("cluster: ") + err);
  }
  auto map = describe_group(rk, options.name, options.kafka.topic, partitions);
  rd_kafka_destroy(rk);
  return map;
}

Result<std::unique_ptr<Cluster>> Cluster::open(ClusterOptions options, Ledger& ledger, EventLog& log) {
  if (options.name.empty()) return Status::error("--cluster needs a name");
  if (auto s = check_node_id(options.node_id); !s) return s;
  if (auto s = check_advertise(options.advertise); !s) return s;
  if (options.kafka.brokers.empty()) return Status::error("--cluster needs --kafka-brokers");
  return std::unique_ptr<Cluster>(new Cluster(std::move(options), ledger, log));
}

Cluster::Cluster(ClusterOptions options, Ledger& ledger, EventLog& log)
    : options_(std::move(options)), ledger_(ledger), log_(log) {
  auto empty = std::make_shared<OwnerMap>();
  empty->owner.resize(log_.partitions());
  map_ = std::move(empty);
}

Cluster::~Cluster() { stop(); }

Status Cluster::start() {
  KOBO_ASSERT(!thread_.joinable(), "start() once");
  auto member = std::make_unique<Member>(*this);
  if (auto s = member->create(); !s) return s;
  member_ = std::move(member);
  log::info("cluster: joining",
            {{"cluster", options_.name}, {"node", options_.node_id}, {"advertise", options_.advertise}});
  thread_ = std::thread([this] { run(); });
  return {};
}

void Cluster::stop() {
  if (stopping_.exchange(true)) return;
  if (thread_.joinable()) thread_.join();
}

void Cluster::run() {
  name_this_thread("kobo-cluster");
  auto next_refresh = Clock::now();
  while (!stopping_.load()) {
    member_->poll(std::chrono::milliseconds(50));
    if (refresh_soon_.exchange(false))
      next_refresh = std::min(next_refresh, Clock::now() + kRefreshAfterRebalance);
    if (Clock::now() >= next_refresh) {
      refresh();
      update_metrics();
      next_refresh = Clock::now() + options_.refresh;
    }
  }
  // Revokes every partition (the Ledger lets each go), then leaves: the others take them now.
  log::info("cluster: leaving", {{"cluster", options_.name}, {"node", options_.node_id}});
  member_->close();
}

void Cluster::refresh() {
  auto map = member_->describe();
  if (!map) {
    log::warn("cluster: the owner map was not read", {{"error", map.status().message()}});
    return;
  }
  cluster_metrics().members.set(static_cast<double>(map->members.size()));
  std::size_t mine = 0;
  for (const auto& m : map->members) mine += m.node_id == options_.node_id ? 1 : 0;
  if (mine > 1)
    log::warn("cluster: more than one member has this node's id; give each node its own --node-id",
              {{"node", options_.node_id}});
  std::lock_guard lock(map_mu_);
  map_ = std::make_shared<const OwnerMap>(std::move(map).value());
}

void Cluster::update_metrics() {
  auto ends = log_.end_offsets();
  for (std::uint32_t i = 0; i < log_.partitions(); ++i) {
    const Partition p(i);
    if (ends) {
      const std::uint64_t end = ends.value()[i].value;
      const std::uint64_t read = ledger_.followed_offset(p).value;
      cluster_metrics().writer_lag(p).set(ledger_.owns(p) || read >= end ? 0
                                                                         : static_cast<double>(end - read));
    }
    if (views_applied_) {
      const std::uint64_t writer = ledger_.durable_seq(p).value;
      const std::uint64_t views = views_applied_(p).value;
      cluster_metrics().views_lag(p).set(views >= writer ? 0 : static_cast<double>(writer - views));
    }
  }
}

std::shared_ptr<const OwnerMap> Cluster::owners() const {
  std::lock_guard lock(map_mu_);
  return map_;
}

PartitionOwner Cluster::owner(Partition p) const {
  const auto map = owners();
  PartitionOwner out;
  out.epoch = ledger_.epoch(p);
  if (p.value < map->owner.size() && map->owner[p.value]) {
    const OwnerMap::Member& m = map->members[*map->owner[p.value]];
    out.node_id = m.node_id;
    out.url = m.url;
  }
  return out;
}

bool Cluster::owned_elsewhere(Partition p) const {
  const PartitionOwner o = owner(p);
  return !o.node_id.empty() && o.node_id != options_.node_id;
}

}  // namespace kobo
