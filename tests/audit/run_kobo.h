#pragma once
// Runs `kobo audit` / `kobo replay` (or any kobo subcommand) as a child process to its end, and
// reads a views database from disk, for the tests of the audit commands.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace kobo::testing {

struct RunResult {
  int exit_code = -1;  // 128 + signal when it died by one
  std::string output;  // stdout and stderr together
};

// Runs `binary args…` and waits for it. The child's stdin is /dev/null.
RunResult run_kobo(const std::filesystem::path& binary, const std::vector<std::string>& args);

// Every key and value of a RocksDB database (the views), opened read-only.
std::map<std::string, std::string> dump_db(const std::filesystem::path& dir);

}  // namespace kobo::testing
