#include "common/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/crypto.h"

namespace kobo {

namespace fs = std::filesystem;

namespace {

Status errno_error(const std::string& what, const fs::path& path) {
  return Status::error("cannot " + what + " " + path.string() + ": " + error_text(errno));
}

Status write_all(int fd, std::string_view contents) {
  while (!contents.empty()) {
    const ssize_t n = ::write(fd, contents.data(), contents.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::error(n < 0 ? error_text(errno) : "write returned 0");
    contents.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

Status write_new_file(const fs::path& tmp, std::string_view contents, unsigned mode) {
  const int fd =
      ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, static_cast<mode_t>(mode));
  if (fd < 0) return errno_error("create", tmp);
  Status s;
  if (::fchmod(fd, static_cast<mode_t>(mode)) != 0) s = errno_error("chmod", tmp);  // the umask took bits
  if (s) {
    if (auto w = write_all(fd, contents); !w)
      s = Status::error("cannot write " + tmp.string() + ": " + w.message());
  }
  if (s && ::fsync(fd) != 0) s = errno_error("fsync", tmp);
  if (::close(fd) != 0 && s) s = errno_error("close", tmp);
  return s;
}

}  // namespace

Status write_file_atomically(const fs::path& path, std::string_view contents, unsigned mode) {
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const fs::path tmp = dir / ("." + path.filename().string() + ".tmp-" + random_hex(8));
  if (auto s = write_new_file(tmp, contents, mode); !s) {
    ::unlink(tmp.c_str());
    return s;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = errno_error("rename " + tmp.string() + " to", path);
    ::unlink(tmp.c_str());
    return s;
  }
  // The rename is durable once the directory is.
  return sync_directory(dir);
}

Status sync_directory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno_error("open directory", dir);
  const bool synced = ::fsync(fd) == 0;
  const int fsync_errno = errno;
  ::close(fd);
  if (!synced) {
    errno = fsync_errno;
    return errno_error("fsync directory", dir);
  }
  return {};
}

std::string error_text(int errnum) {
  char buffer[256];
  // The GNU strerror_r: the message, in `buffer` or in a static string.
  return ::strerror_r(errnum, buffer, sizeof buffer);
}

}  // namespace kobo
