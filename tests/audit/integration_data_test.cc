// Runs after the integration suites (a ctest fixture cleanup, see tests/CMakeLists.txt): every
// data dir they left under KOBO_IT_DATA_ROOT must pass `kobo audit`, and `kobo replay` must
// rebuild views identical to the ones the server built incrementally (when the server's
// projector had caught up with its log; otherwise the audit has compared them at their position).
// A data dir that passes is removed; one that fails is kept and named.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "tests/audit/run_kobo.h"

namespace kobo::testing {
namespace {

namespace fs = std::filesystem;

#ifndef KOBO_BINARY
#error "needs -DKOBO_BINARY=<path of the kobo executable>"
#endif

fs::path binary() {
  const char* env = std::getenv("KOBO_BINARY");
  return (env != nullptr && *env != '\0') ? fs::path(env) : fs::path(KOBO_BINARY);
}

// What went wrong with one data dir; empty when nothing did.
std::string check(const fs::path& dir, bool& caught_up) {
  const fs::path report = dir / "audit-before.json";
  RunResult r = run_kobo(binary(), {"audit", "--data-dir", dir.string(), "--json", report.string()});
  if (r.exit_code != 0) return "kobo audit exited " + std::to_string(r.exit_code) + ":\n" + r.output;
  std::ifstream in(report);
  const auto j = nlohmann::json::parse(in, nullptr, false);
  caught_up = j.is_object() && j["views"]["caughtUp"] == true;
  const bool has_views = fs::exists(dir / "views");
  std::map<std::string, std::string> before;
  if (has_views) before = dump_db(dir / "views");
  r = run_kobo(binary(), {"replay", "--data-dir", dir.string()});
  if (r.exit_code != 0) return "kobo replay exited " + std::to_string(r.exit_code) + ":\n" + r.output;
  if (has_views && caught_up && dump_db(dir / "views") != before)
    return "kobo replay built views that differ from the incremental ones";
  r = run_kobo(binary(), {"audit", "--data-dir", dir.string()});
  if (r.exit_code != 0)
    return "kobo audit after kobo replay exited " + std::to_string(r.exit_code) + ":\n" + r.output;
  return {};
}

TEST(IntegrationData, EveryDataDirPassesAuditAndReplaysToIdenticalViews) {
  const char* root_env = std::getenv("KOBO_IT_DATA_ROOT");
  if (root_env == nullptr || !fs::exists(root_env))
    GTEST_SKIP() << "no KOBO_IT_DATA_ROOT: no integration data to audit";
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(root_env))
    if (entry.is_directory() && fs::exists(entry.path() / "log" / "CURRENT")) dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  if (dirs.empty()) GTEST_SKIP() << "the integration suites left no data dirs in " << root_env;

  // Two at a time: the data dirs are independent and each check is a few short processes.
  struct Outcome {
    std::string problem;
    bool caught_up = false;
  };
  std::vector<Outcome> outcomes(dirs.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < dirs.size();)
      outcomes[i].problem = check(dirs[i], outcomes[i].caught_up);
  };
  auto other = std::async(std::launch::async, worker);
  worker();
  other.get();

  std::size_t caught_up = 0;
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    if (outcomes[i].caught_up) ++caught_up;
    if (outcomes[i].problem.empty()) {
      std::error_code ec;
      fs::remove_all(dirs[i], ec);
    } else {
      ADD_FAILURE() << dirs[i].string() << " (kept): " << outcomes[i].problem;
    }
  }
  std::cout << "[audit] " << dirs.size() << " integration data dirs audited and replayed; " << caught_up
            << " had views at the end of their log and were compared byte for byte after kobo replay"
            << std::endl;
}

}  // namespace
}  // namespace kobo::testing
