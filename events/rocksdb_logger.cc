#include "events/rocksdb_logger.h"

#include <cstdarg>
#include <cstdio>

#include "common/assert.h"
#include "common/log.h"

namespace kobo {
namespace {

class StderrLogger final : public rocksdb::Logger {
 public:
  explicit StderrLogger(std::string database)
      : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL), database_(std::move(database)) {
    KOBO_ASSERT(!database_.empty(), "a log line names its database");
  }

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    KOBO_ASSERT(format != nullptr, "RocksDB logs a format");
    char line[1024];
    std::vsnprintf(line, sizeof line, format, ap);
    log::warn("rocksdb", {{"database", database_}, {"message", line}});
  }

 private:
  const std::string database_;
};

}  // namespace

std::shared_ptr<rocksdb::Logger> rocksdb_logger(std::string database) {
  return std::make_shared<StderrLogger>(std::move(database));
}

}  // namespace kobo
