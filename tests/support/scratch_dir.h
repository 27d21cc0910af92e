#pragma once
// A directory of a test's own for what it writes (a log, views, snapshots, a data dir), under
// TMPDIR: made afresh with a unique name (mkdtemp: kobo-<name>-XXXXXX), so that two tests, two
// runs of one test or two processes never share one, and removed with everything in it when the
// ScratchDir goes out of scope.
//
// Unless it is kept, and then its path is printed ("[kobo] kept scratch dir …"): when keep() was
// called, when the test (or, for a suite's directory, the suite) that is running at the end has
// failed, so that a failure leaves what it wrote for inspection, and, for Keep::on_request_or_failure
// (the default), when KOBO_TEST_KEEP_DATA=1 asks for the data of every test. The integration
// suites run with it set and audit the data dirs their servers leave (tests/CMakeLists.txt): a
// directory that is no server's data dir (a broker's, a log of another format) is made with
// Keep::on_failure so that it does not join them.
//
// Thread safety: none; made and dropped by one thread. Not copyable; movable.

#include <filesystem>
#include <string>
#include <string_view>

namespace kobo::testing {

// Whether the test, or the suite, that gtest is running now has failed (false outside a test).
bool current_test_failed();
// Whether KOBO_TEST_KEEP_DATA=1 asks to keep every test's data.
bool keep_data_requested();

class ScratchDir {
 public:
  enum class Keep { on_request_or_failure, on_failure };

  // kobo-<name>-XXXXXX under TMPDIR (/tmp when unset). `name` defaults to the running test's
  // suite and name. Throws std::system_error when it cannot be made.
  explicit ScratchDir(std::string_view name = {}, Keep keep = Keep::on_request_or_failure);
  ~ScratchDir();
  ScratchDir(ScratchDir&& other) noexcept;
  ScratchDir& operator=(ScratchDir&& other) = delete;
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::filesystem::path& relative) const { return path_ / relative; }
  // The path of `relative` inside it, as a string (what the log and the views open).
  std::string str(const std::filesystem::path& relative = {}) const { return (path_ / relative).string(); }

  // Keep it whatever happens.
  void keep() { keep_ = true; }
  // Whether it will be kept if dropped now.
  bool kept() const;

 private:
  std::filesystem::path path_;
  Keep policy_;
  bool keep_ = false;
};

}  // namespace kobo::testing
