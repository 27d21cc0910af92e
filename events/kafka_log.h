#pragma once
// The Kafka EventLog (docs/architecture.md section 8), on librdkafka.
//
// - Topic `kobo.ledger.events` by default, created with the Admin API when missing, with
//   unlimited retention: the log is the ledger, it must never expire. An existing topic keeps
//   its partition count, and the service takes its partitions from the topic.
// - Records: key = business id (empty for partition-level events), value = the event's wire
//   form, CloudEvents binary-mode headers (ce_specversion, ce_id = "<partition>-<seq>",
//   ce_type = "ng.kobo.ledger.<EventName>", ce_source = "/kobo/ledger/partitions/<p>",
//   ce_time) and content-type: application/json. The writer chooses the partition itself
//   (events/partitioner.h, the same murmur2 as `partitioner=murmur2_random`).
// - Writing: one transactional producer per partition (`transactional.id` =
//   "<prefix>.<topic>.<partition>"), so a second writer's init_transactions fences the first.
//   An append is one Kafka transaction per partition it touches. An abortable error aborts and
//   retries that partition's events within the append's time budget; a fatal one (fenced)
//   makes every later append fail and fenced() true. An append that fails may still have
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
  // Extra librdkafka properties for every handle (tests: the mock cluster, shorter timeouts).
  std::vector<std::pair<std::string, std::string>> config;
};

[[nodiscard]] Result<std::unique_ptr<EventLog>> open_kafka_log(const KafkaLogOptions& options);

// "ng.kobo.ledger.WalletTransferSettled": the CloudEvents type of an event type.
std::string cloud_event_type(EventType t);

}  // namespace kobo
