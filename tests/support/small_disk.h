#pragma once
// A small tmpfs for tests of a disk that fills up (guarantee 8, docs/architecture.md section 6): mounted in a
// fresh scratch directory (tests/support/scratch_dir.h), filled on request with a file that can be removed to
// make room, and unmounted by the destructor. Mounting needs root: `available()` is false otherwise, and the
// test skips.

#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "tests/support/scratch_dir.h"

namespace kobo::testing {

class SmallDisk {
 public:
  // `size` as mount(8) takes it, e.g. "16m".
  SmallDisk(const std::string& name, const std::string& size) {
    if (geteuid() != 0) return;
    path_ = dir_.emplace(name, ScratchDir::Keep::on_failure).path();  // what it held goes with the unmount
    mounted_ = mount("tmpfs", path_.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
    if (!mounted_) error_ = errno;
  }
  ~SmallDisk() {
    if (mounted_) umount2(path_.c_str(), MNT_DETACH);
  }
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;

  static bool can_mount() { return geteuid() == 0; }
  bool mounted() const { return mounted_; }
  int mount_error() const { return error_; }
  const std::filesystem::path& path() const { return path_; }

  // Fills the disk but for about `leave` bytes; false when it has less free than that already.
  // Each call adds a file of its own, so a second call tops up what the first left (room the
  // process under test freed meanwhile) without giving the first one's back.
  bool fill(std::uintmax_t leave) {
    const auto space = std::filesystem::space(path_);
    if (space.available <= leave) return false;
    std::ofstream f(path_ / ("filler-" + std::to_string(fillers_++)), std::ios::binary);
    const std::string block(64 * 1024, 'x');
    for (std::uintmax_t left = space.available - leave; left > 0;) {
      const auto n = std::min<std::uintmax_t>(left, block.size());
      f.write(block.data(), static_cast<std::streamsize>(n));
      if (!f) break;
      left -= n;
    }
    return true;
  }
  // Gives the room back.
  void unfill() {
    for (; fillers_ > 0; --fillers_)
      std::filesystem::remove(path_ / ("filler-" + std::to_string(fillers_ - 1)));
  }

 private:
  std::optional<ScratchDir> dir_;  // removed after the destructor's unmount
  std::filesystem::path path_;
  bool mounted_ = false;
  int error_ = 0;
  int fillers_ = 0;
};

}  // namespace kobo::testing
