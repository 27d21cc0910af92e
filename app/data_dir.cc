#include "app/data_dir.h"

#include <algorithm>
#include <cctype>

#include "events/embedded_log.h"
#include "events/kafka_log.h"

namespace kobo {

// RocksDB says "lock … Resource temporarily unavailable" when another process has the database.
std::string explain_lock(const std::string& message) {
  std::string lower = message;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower.find("lock") == std::string::npos) return message;
  return message + "\n(another process holds this data dir: stop `kobo serve` on it first)";
}

Result<std::unique_ptr<EventLog>> open_existing_log(const std::filesystem::path& data_dir,
                                                    bool beside_a_writer) {
  EmbeddedLogOptions o;
  o.path = (data_dir / "log").string();
  o.partitions = 0;  // as the log was created
  o.create_if_missing = false;
  o.read_only = beside_a_writer;
  auto log = open_embedded_log(o);
  if (!log) return Status::error(explain_lock(log.status().message()));
  return log;
}

Result<std::unique_ptr<EventLog>> open_log_to_read(const std::filesystem::path& data_dir,
                                                   const std::string& kafka_brokers,
                                                   const std::string& kafka_topic, bool beside_a_writer) {
  if (!kafka_brokers.empty()) {
    KafkaLogOptions k;
    k.brokers = kafka_brokers;
    k.topic = kafka_topic;
    k.writer = false;
    return open_kafka_log(k);
  }
  return open_existing_log(data_dir, beside_a_writer);
}

}  // namespace kobo
