#pragma once
// Cluster: a node's membership in a Kobo cluster on Kafka (docs/architecture.md, "Cluster").
//
// Nodes started with the same cluster name on one topic join one Kafka consumer group on it
// (librdkafka, cooperative-sticky assignment). The partitions the group assigns a node are the
// partitions it writes: Cluster hands each to the node's Ledger as it is assigned (take(): the
// writer fences the previous owner, reads the partition to its end, appends WriterStarted) and
// takes it back as it is revoked (release(): the writer finishes the batch in flight, then lets
// go), in the group's rebalance callback, so the group assigns a revoked partition elsewhere only
// once this writer has let it go. The member pauses what it is assigned: membership is what the
// group is for, the log is read by the node's own readers. No consensus of ours: the group's
// protocol decides who writes, and the per-partition transactional producers make sure that a
// writer that missed its revocation (a paused process past its session) cannot append.
//
// Membership is dynamic, not static (`group.instance.id`): a static member that closes does not
// leave its group, so a node stopped with SIGTERM would keep its partitions until its session
// timed out, instead of handing them over at once. A restarted node joins as a new member.
//
// The owner map: which node writes each partition, at which URL, since which epoch. Each member's
// client.id is `kobo:<node id>@<advertised URL>`; the map is read from the group with the Admin
// API (DescribeConsumerGroups) after every rebalance and every `refresh`, and served from an
// immutable snapshot, so owner() is cheap on any thread. It is what the HTTP layer forwards
// commands by, and what GET /v1/cluster shows.
//
// Thread safety: owner(), owners(), node_id() and url() are thread-safe. Lifecycle: open(),
// start() (joins; call once the Ledger has started), stop() (or the destructor: revokes every
// partition through the Ledger, then leaves the group, so the others take them over at once).
// The Cluster must not outlive the Ledger and EventLog it was opened over.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "command/ledger.h"
#include "common/result.h"
#include "events/event_log.h"
#include "events/kafka_log.h"

namespace kobo {

struct ClusterOptions {
  std::string name;       // the consumer group's id (--cluster)
  std::string node_id;    // --node-id: [A-Za-z0-9._-], 1 to 64 characters
  std::string advertise;  // --advertise: http://HOST:PORT, where the other nodes reach this one
  // The brokers, topic and client settings of the node's log (security, --kafka-config). The
  // member's own defaults, which --kafka-config overrides: session.timeout.ms 6000 (Kafka's
  // usual minimum; librdkafka's default is 45 s) and heartbeat.interval.ms 250, so the survivors
  // hear of a rebalance within a quarter of a second.
  KafkaLogOptions kafka;
  std::chrono::milliseconds refresh{2'000};  // the owner map is read again at least this often
};

// Checks a node id and an advertised URL (the flags), naming what is wrong.
[[nodiscard]] Status check_node_id(std::string_view node_id);
[[nodiscard]] Status check_advertise(std::string_view url);

// A member's client.id, and back: `kobo:<node id>@<url>`.
std::string member_client_id(std::string_view node_id, std::string_view url);
struct MemberAddress {
  std::string node_id;
  std::string url;
};
std::optional<MemberAddress> parse_member_client_id(std::string_view client_id);

// The partitions of `topic` in a member's assignment as the group describes it (Kafka's
// ConsumerProtocolAssignment: int16 version, [topic string, [int32 partition]], user data);
// nothing when the bytes are not one. Empty bytes: a member that holds nothing yet.
std::optional<std::vector<Partition>> parse_member_assignment(std::span<const std::uint8_t> bytes,
                                                              std::string_view topic);

// Who writes a partition. node_id empty: nobody the group knows of now (a rebalance, or no
// member); epoch: of the partition's last WriterStarted, as this node's writer has read it.
struct PartitionOwner {
  std::string node_id;
  std::string url;
  Epoch epoch{0};
};

// The group as it was read: its members and who was assigned what. Immutable once made.
struct OwnerMap {
  struct Member {
    std::string node_id;
    std::string url;
    std::vector<Partition> partitions;
  };
  std::vector<Member> members;
  std::vector<std::optional<std::size_t>> owner;  // by partition: an index into members
  std::string state;                              // the group's: Stable, PreparingRebalance, …
  std::chrono::system_clock::time_point read_at;
};

// The cluster's group as it is now, read by a client of its own, not a member: how a node that
// has not joined yet finds its peers (their advertised URLs). An error when it could not be read
// within a few seconds.
[[nodiscard]] Result<OwnerMap> read_group(const ClusterOptions& options, std::uint32_t partitions);

class Cluster {
 public:
  // Checks the options; connects nothing yet.
  [[nodiscard]] static Result<std::unique_ptr<Cluster>> open(ClusterOptions options, Ledger& ledger,
                                                             EventLog& log);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Joins the group (a thread of its own serves it). An error: the member could not be made.
  [[nodiscard]] Status start();
  // Leaves the group: every partition is released through the Ledger first. Idempotent.
  void stop();

  const std::string& node_id() const { return options_.node_id; }
  // True once stop() began: the node is handing its partitions over.
  bool leaving() const { return stopping_.load(); }
  const std::string& url() const { return options_.advertise; }
  // Who writes partition p, as the group said when it was last read.
  PartitionOwner owner(Partition p) const;
  // Whether a node other than this one writes p, as far as the group said.
  bool owned_elsewhere(Partition p) const;
  std::shared_ptr<const OwnerMap> owners() const;
  // The views' position of each partition (the projector's), for the lag metrics; set before
  // start().
  void set_views_position(std::function<Seq(Partition)> applied) { views_applied_ = std::move(applied); }

 private:
  class Member;  // the librdkafka consumer and its rebalance callback (cluster.cc)
  Cluster(ClusterOptions options, Ledger& ledger, EventLog& log);
  void run();
  void refresh();
  void update_metrics();

  const ClusterOptions options_;
  Ledger& ledger_;
  EventLog& log_;
  std::function<Seq(Partition)> views_applied_;
  std::unique_ptr<Member> member_;
  mutable std::mutex map_mu_;
  std::shared_ptr<const OwnerMap> map_;  // guarded by map_mu_; swapped whole
  std::atomic<bool> stopping_{false};
  std::atomic<bool> refresh_soon_{false};  // a rebalance happened: read the map again shortly
  std::thread thread_;
};

}  // namespace kobo
