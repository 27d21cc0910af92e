#pragma once
// Structured logs: one JSON object per line on stderr. Thread-safe; lines never interleave.

#include <nlohmann/json.hpp>
#include <string_view>

namespace kobo::log {

enum class Level { debug, info, warn, error };

void write(Level level, std::string_view msg, const nlohmann::json& fields = nlohmann::json::object());
inline void info(std::string_view msg, const nlohmann::json& fields = nlohmann::json::object()) {
  write(Level::info, msg, fields);
}
inline void warn(std::string_view msg, const nlohmann::json& fields = nlohmann::json::object()) {
  write(Level::warn, msg, fields);
}
inline void error(std::string_view msg, const nlohmann::json& fields = nlohmann::json::object()) {
  write(Level::error, msg, fields);
}
// Lines below this level are dropped (default info; KOBO_LOG_LEVEL=debug|info|warn|error).
void set_min_level(Level level);

}  // namespace kobo::log
