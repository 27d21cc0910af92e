#pragma once
// The test broker of the Kafka run when it is secured (tools/kafka/broker.sh start DIR --secured):
// clients authenticate with SASL over TLS and may not create topics, so the tests create theirs
// through the operator's listener first, as an operator would.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kobo::testing {

// Whether KOBO_TEST_KAFKA_DIR names a secured broker.
bool test_kafka_secured();

// The librdkafka properties a client of the test broker needs (DIR/client.properties of a
// secured broker; none for a plain one).
std::vector<std::pair<std::string, std::string>> test_kafka_config();

// On a secured test broker: creates `topic` with `partitions` partitions and unlimited retention
// through the operator's listener, unless it exists. Nothing on a plain one (the service creates
// its topic there). Throws std::runtime_error when it cannot.
void ensure_test_topic(const std::string& topic, int partitions);

// On a secured test broker: sets KOBO_KAFKA_CA_FILE, KOBO_KAFKA_SASL_MECHANISM,
// KOBO_KAFKA_SASL_USERNAME and KOBO_KAFKA_SASL_PASSWORD in this process's environment, so every
// `kobo` it runs (serve, audit, replay, events) connects as the service's user.
void export_test_kafka_credentials();

// One partition of a topic as the cluster's metadata describes it: its leader's broker id (-1:
// none), how many replicas it has and how many are in sync, and its end offset (high watermark).
struct TestPartition {
  int leader = -1;
  int replicas = 0;
  int in_sync = 0;
  std::int64_t end_offset = -1;
};

// The partitions of `topic` at `brokers` (a plain listener), by partition id; empty when the
// metadata cannot be had within `timeout_ms`. For the cluster test, which kills the leader.
std::vector<TestPartition> describe_test_topic(const std::string& brokers, const std::string& topic,
                                               int timeout_ms = 5'000);

}  // namespace kobo::testing
