#include "tests/audit/run_kobo.h"

#include <fcntl.h>
#include <rocksdb/db.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <stdexcept>
#include <system_error>

#include "projection/views.h"

namespace kobo::testing {

RunResult run_kobo(const std::filesystem::path& binary, const std::vector<std::string>& args) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  std::vector<std::string> argv_s{binary.string()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, STDIN_FILENO);
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  RunResult r;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0)
      r.output.append(buf, static_cast<std::size_t>(n));
    else if (n == 0 || errno != EINTR)
      break;
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::map<std::string, std::string> dump_db(const std::filesystem::path& dir) {
  rocksdb::DB* raw = nullptr;
  rocksdb::Options options;
  const auto s = rocksdb::DB::OpenForReadOnly(options, dir.string(), &raw);
  if (!s.ok()) throw std::runtime_error("dump_db " + dir.string() + ": " + s.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  std::map<std::string, std::string> out;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) out.emplace(it->key().ToString(), it->value().ToString());
  if (!it->status().ok())
    throw std::runtime_error("dump_db " + dir.string() + ": " + it->status().ToString());
  return out;
}

}  // namespace kobo::testing
