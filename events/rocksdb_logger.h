#pragma once
// RocksDB's info log, sent to our JSON log on stderr instead of a LOG file beside the data.
// Every RocksDB database of ours (the embedded log, the views, webhook deliveries) uses it:
// RocksDB's own file logger lives on the data disk, and once a full disk has failed one of its
// writes, its next line trips an assertion that aborts the process (the simulation met it). Warnings and
// errors only; RocksDB's informational chatter is dropped.

#include <rocksdb/env.h>

#include <memory>
#include <string>

namespace kobo {

// Thread-safe (log::write is).
std::shared_ptr<rocksdb::Logger> rocksdb_logger(std::string database);

}  // namespace kobo
