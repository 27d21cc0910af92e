#pragma once
// Opening an existing data dir's log for the offline commands (`kobo audit`, `kobo replay`,
// `kobo events`), which must never create one and must say why a locked dir cannot be read.

#include <filesystem>
#include <memory>
#include <string>

#include "common/result.h"
#include "events/event_log.h"

namespace kobo {

// The embedded log under data_dir/log, with as many partitions as it was created with; an
// error when there is none or another process holds it.
[[nodiscard]] Result<std::unique_ptr<EventLog>> open_existing_log(const std::filesystem::path& data_dir,
                                                                  bool beside_a_writer = false);

// The log an offline command reads: the Kafka topic when `kafka_brokers` is given (read only),
// else data_dir/log. `beside_a_writer`: the embedded log is opened read-only beside a server
// that may be running on it (a RocksDB secondary instance), following its appends.
[[nodiscard]] Result<std::unique_ptr<EventLog>> open_log_to_read(const std::filesystem::path& data_dir,
                                                                 const std::string& kafka_brokers,
                                                                 const std::string& kafka_topic,
                                                                 bool beside_a_writer = false);

// `message` with a hint when RocksDB refused the database because another process holds it.
std::string explain_lock(const std::string& message);

}  // namespace kobo
