#pragma once
// The Kafka EventLog (docs/architecture.md section 8), on librdkafka.
//
// - Topic `kobo.ledger.events` by default. The topic is looked up in the metadata first: an
//   existing one is used as it is (the service takes its partition count, and warns when it has
//   a retention limit: the log is the ledger, it must never expire); CreateTopics is sent only
//   when it is missing, with unlimited retention, so a cluster whose ACLs deny the service
//   CreateTopics serves it once an operator created the topic. A denial names the ACL it needs.
// - Starting in an outage (connect_in_background): open() returns at once whatever the brokers'
//   state, and a thread of the log connects, trying again every second. Until it has, append(),
//   end_offsets() and reset_writer() fail at once with ErrorKind::unavailable naming the brokers;
//   readers wait for records as they do when a broker is down. What no retry fixes (a wrong
//   password, a TLS handshake refused, a missing ACL, a topic with another partition count) is a
//   permanent error of kind other, which they answer from then on.
// - Records: key = business id (empty for partition-level events), value = the event's wire
//   form, CloudEvents binary-mode headers (ce_specversion, ce_id = "<partition>-<seq>",
//   ce_type = "ng.kobo.ledger.<EventName>", ce_source = "/kobo/ledger/partitions/<p>",
//   ce_time) and content-type: application/json. The writer chooses the partition itself
//   (events/partitioner.h, the same murmur2 as `partitioner=murmur2_random`).
// - Writing: one transactional producer per partition (`transactional.id` =
//   "<prefix>.<topic>.<partition>"), so a second writer's init_transactions fences the first.
//   An append is one Kafka transaction per partition it touches. An abortable error aborts and
//   retries that partition's events within the append's time budget; a fatal one (fenced)
//   makes every later append fail and fenced() true (with acquire_partitions: every later append
//   to that partition, and fenced(p) true, until acquire(p)). An append that fails may still have
//   committed some partitions: the caller re-reads the log after reset_writer().
// - Reading: consumers with `isolation.level=read_committed` and explicit offsets (no consumer
//   group; projectors keep their offsets in RocksDB beside their views). end_offsets() is the
//   last stable offset, where such a reader stops.
//
// Thread safety: as EventLog.

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "events/event_log.h"

namespace kobo {

inline constexpr const char* kDefaultKafkaTopic = "kobo.ledger.events";

struct KafkaLogOptions {
  std::string brokers;  // bootstrap.servers
  std::string topic = kDefaultKafkaTopic;
  std::uint32_t partitions = 6;  // when the topic is created
  bool writer = true;            // false: read only (projector role, auditors)
  bool create_topic = true;      // a writer creates a missing topic with the Admin API
  std::string transactional_id_prefix = "kobo";
  std::chrono::milliseconds append_timeout{5'000};    // an append answers within this, or fails
  std::chrono::milliseconds connect_timeout{15'000};  // topic creation, metadata, init_transactions
  // false: open() connects before it returns (within connect_timeout) and the log takes the
  // topic's partition count. true: open() returns at once with `partitions` partitions and
  // connects in the background (see above); a topic with another count is a permanent error.
  // For `kobo serve` on a data dir that knows its topic's partition count.
  bool connect_in_background = false;
  // A cluster node (docs/architecture.md, "Cluster"): no producer is made when the log connects,
  // and a partition is written only after acquire() made its producer, which fences the
  // partition's previous writer; a fatal error (fenced) stops the writes of that partition
  // alone. false: every partition's producer is made as the log connects (one writer for all).
  bool acquire_partitions = false;
  // Extra librdkafka properties for every handle, applied last: security (TLS, SASL), any
  // property of `--kafka-config`, and in tests the mock cluster and shorter timeouts.
  std::vector<std::pair<std::string, std::string>> config;
};

[[nodiscard]] Result<std::unique_ptr<EventLog>> open_kafka_log(const KafkaLogOptions& options);

// "ng.kobo.ledger.WalletTransferSettled": the CloudEvents type of an event type.
std::string cloud_event_type(EventType t);

}  // namespace kobo
