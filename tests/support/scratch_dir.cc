#include "tests/support/scratch_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <system_error>
#include <utility>
#include <vector>

namespace kobo::testing {

namespace fs = std::filesystem;

namespace {

// The running test as "Suite.Name", with what a file name cannot hold ('/' of a parameterized
// test) replaced.
std::string current_test_name() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info == nullptr ? "test" : std::string(info->test_suite_name()) + "." + info->name();
  for (char& c : name)
    if (c == '/') c = '_';
  return name;
}

}  // namespace

bool keep_data_requested() {
  const char* env = std::getenv("KOBO_TEST_KEEP_DATA");
  return env != nullptr && std::string_view(env) == "1";
}

bool current_test_failed() {
  const auto* unit = ::testing::UnitTest::GetInstance();
  return (unit->current_test_suite() != nullptr && unit->current_test_suite()->Failed()) ||
         (unit->current_test_info() != nullptr && unit->current_test_info()->result()->Failed());
}

ScratchDir::ScratchDir(std::string_view name, Keep keep) : policy_(keep) {
  const std::string pattern =
      (fs::temp_directory_path() /
       ("kobo-" + (name.empty() ? current_test_name() : std::string(name)) + "-XXXXXX"))
          .string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr)
    throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
  path_ = buffer.data();
}

ScratchDir::ScratchDir(ScratchDir&& other) noexcept
    : path_(std::exchange(other.path_, {})), policy_(other.policy_), keep_(other.keep_) {}

bool ScratchDir::kept() const {
  return keep_ || current_test_failed() || (policy_ == Keep::on_request_or_failure && keep_data_requested());
}

ScratchDir::~ScratchDir() {
  if (path_.empty()) return;
  if (kept()) {
    std::fprintf(stderr, "[kobo] kept scratch dir %s\n", path_.c_str());
    return;
  }
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace kobo::testing
