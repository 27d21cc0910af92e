// write_file_atomically (common/file.h): mode from the first byte, whole contents, no leftovers.

#include "common/file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/scratch_dir.h"

namespace kobo {
namespace {

namespace fs = std::filesystem;

class WriteFileAtomically : public ::testing::Test {
 protected:
  static std::string read(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  static unsigned mode(const fs::path& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
  }
  std::size_t entries() const {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir_), {}));
  }

  testing::ScratchDir scratch_;
  const fs::path dir_ = scratch_.path();
};

TEST_F(WriteFileAtomically, WritesTheContentsWithMode0600WhateverTheUmask) {
  for (mode_t mask : {022u, 0u, 077u, 0177u}) {
    const mode_t old = ::umask(mask);
    const fs::path path = dir_ / ("credentials-" + std::to_string(mask) + ".json");
    const Status s = write_file_atomically(path, "{\"testSecretKey\":\"sk_test_1\"}\n", 0600);
    ::umask(old);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(mode(path), 0600u) << "umask " << mask;
    EXPECT_EQ(read(path), "{\"testSecretKey\":\"sk_test_1\"}\n");
  }
  EXPECT_EQ(entries(), 4u) << "a temporary file was left behind";
}

TEST_F(WriteFileAtomically, ReplacesAnExistingFileWholeAndTightensItsMode) {
  const fs::path path = dir_ / "credentials.json";
  { std::ofstream(path) << "an older and much longer file than the new one\n"; }
  fs::permissions(path, fs::perms(0644));
  ASSERT_TRUE(write_file_atomically(path, "new\n").ok());
  EXPECT_EQ(read(path), "new\n");
  EXPECT_EQ(mode(path), 0600u);
  EXPECT_EQ(entries(), 1u);
}

TEST_F(WriteFileAtomically, ReplacesASymlinkRatherThanWritingThroughIt) {
  const fs::path target = dir_ / "elsewhere";
  { std::ofstream(target) << "untouched"; }
  const fs::path path = dir_ / "credentials.json";
  fs::create_symlink(target, path);
  ASSERT_TRUE(write_file_atomically(path, "keys").ok());
  EXPECT_FALSE(fs::is_symlink(path));
  EXPECT_EQ(read(path), "keys");
  EXPECT_EQ(read(target), "untouched");
}

TEST_F(WriteFileAtomically, FailsWithoutTouchingAnythingWhenTheDirectoryIsMissing) {
  const Status s = write_file_atomically(dir_ / "missing" / "credentials.json", "keys");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("missing"), std::string::npos) << s.message();
  EXPECT_EQ(entries(), 0u);
}

TEST_F(WriteFileAtomically, FailsAndLeavesTheOldFileWhenTheRenameCannotHappen) {
  const fs::path path = dir_ / "credentials.json";
  fs::create_directory(path);  // a directory where the file should go: rename(2) refuses
  const Status s = write_file_atomically(path, "keys");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(fs::is_directory(path));
  EXPECT_EQ(entries(), 1u) << "the temporary file was not removed";
}

}  // namespace
}  // namespace kobo
