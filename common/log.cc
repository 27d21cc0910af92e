#include "common/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

#include "common/json_writer.h"
#include "common/time.h"

namespace kobo::log {
namespace {

std::atomic<Level> g_min_level{Level::info};
std::mutex g_mu;

const char* name(Level level) {
  switch (level) {
    case Level::debug:
      return "debug";
    case Level::info:
      return "info";
    case Level::warn:
      return "warn";
    case Level::error:
      return "error";
  }
  return "info";
}

}  // namespace

void set_min_level(Level level) { g_min_level.store(level); }

void write(Level level, std::string_view msg, const nlohmann::json& fields) {
  if (level < g_min_level.load(std::memory_order_relaxed)) return;
  nlohmann::json line = {{"time", format_iso8601(now_ms())}, {"level", name(level)}, {"msg", msg}};
  if (fields.is_object()) {
    for (auto it = fields.begin(); it != fields.end(); ++it) line[it.key()] = it.value();
  }
  std::string text;
  JsonWriter(text).value(line);
  text += '\n';
  std::lock_guard lock(g_mu);
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

}  // namespace kobo::log
