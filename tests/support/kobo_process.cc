#include "tests/support/kobo_process.h"

#include "tests/support/test_kafka.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>

namespace kobo::testing {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::string(v) : fallback;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + ::strsignal(WTERMSIG(status));
  return "stopped (status " + std::to_string(status) + ")";
}

int status_to_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

std::string test_kafka_brokers() {
  const std::string dir = env_or("KOBO_TEST_KAFKA_DIR", "");
  if (dir.empty()) return {};
  std::ifstream in(fs::path(dir) / "bootstrap");
  std::string brokers;
  std::getline(in, brokers);
  if (brokers.empty()) throw std::runtime_error("KOBO_TEST_KAFKA_DIR=" + dir + " has no running broker");
  export_test_kafka_credentials();  // a secured broker: every kobo this process runs connects as its user
  return brokers;
}

// A 0600 file holding kTestAdminKey, outside every data dir, made once per test process.
const fs::path& admin_key_file() {
  struct File {
    fs::path path = fs::temp_directory_path() / ("kobo-test-admin-key-" + std::to_string(::getpid()));
    File() {
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0) throw std::system_error(errno, std::generic_category(), "open " + path.string());
      const std::string text = std::string(kTestAdminKey) + "\n";
      const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      ::close(fd);
      if (!written) throw std::runtime_error("cannot write " + path.string());
    }
    ~File() {
      std::error_code ec;
      fs::remove(path, ec);
    }
  };
  static const File file;
  return file.path;
}

KoboProcess::KoboProcess(KoboOptions options) : options_(std::move(options)) {
  binary_ = options_.binary.empty() ? fs::path(env_or("KOBO_BINARY", "")) : options_.binary;
  if (binary_.empty()) throw std::runtime_error("KoboProcess: no kobo binary (set KOBO_BINARY)");
  if (!fs::exists(binary_)) throw std::runtime_error("KoboProcess: no kobo binary at " + binary_.string());
  if (options_.data_dir.empty()) {
    scratch_.emplace("it");
    data_dir_ = scratch_->path();
  } else {
    data_dir_ = options_.data_dir;
    fs::create_directories(data_dir_);
  }
  if (options_.port != 0) {
    port_ = options_.port;
  } else {
    lease_.emplace(PortLease::take());
    port_ = lease_->port();
  }
  if (options_.credentials) credentials_ = *options_.credentials;
  try {
    spawn();
    wait_healthy();
    if (options_.wait_ready) wait_ready();
  } catch (...) {
    if (pid_ > 0) kill9();
    throw;  // scratch_ goes, unless KOBO_TEST_KEEP_DATA keeps it
  }
}

KoboProcess::~KoboProcess() {
  client_.reset();
  // A data directory that is kept is stopped gracefully: RocksDB closed by SIGKILL leaves each
  // write-ahead log at its preallocated 71 MB (228 MB a directory), and a ctest run of the
  // integration suites keeps ~150 directories for the audit at its end (tests/CMakeLists.txt),
  // which filled a CI machine's disk. A failed test's is kept (ScratchDir's rule), and its log's
  // last lines are printed: CI keeps a failed test's output and nothing else.
  const bool failed = current_test_failed();
  const bool kept = keep_data_dir_ || failed || (scratch_ ? scratch_->kept() : keep_data_requested());
  if (pid_ > 0 && kept) terminate(milliseconds(5'000));
  if (pid_ > 0) kill9();
  if (failed) std::cout << "[kobo] " << log_path().string() << ", last lines:\n" << log_tail() << std::flush;
  if (scratch_ && keep_data_dir_) scratch_->keep();
  scratch_.reset();  // removed, or kept and named
}

std::string KoboProcess::kafka_topic() const {
  return options_.kafka_topic.empty() ? "it." + data_dir_.filename().string() : options_.kafka_topic;
}

fs::path KoboProcess::output_path(std::string_view extension) const {
  const fs::path& dir = options_.log_dir.empty() ? data_dir_ : options_.log_dir;
  return dir / ("kobo." + std::to_string(starts_) + "." + std::string(extension));
}

fs::path KoboProcess::log_path() const { return output_path("log"); }

fs::path KoboProcess::stdout_path() const { return output_path("stdout"); }

std::string KoboProcess::log_tail(std::size_t lines) const {
  std::ifstream in(log_path());
  if (!in) return "(no log at " + log_path().string() + ")";
  std::deque<std::string> tail;
  std::string line;
  while (std::getline(in, line)) {
    tail.push_back(line);
    if (tail.size() > lines) tail.pop_front();
  }
  std::string out;
  for (const auto& l : tail) out += l + "\n";
  return out;
}

void KoboProcess::spawn() {
  if (pid_ > 0) throw std::logic_error("KoboProcess::spawn: a child is already running");
  ++starts_;
  client_.reset();

  std::vector<std::string> args = {binary_.string(), "serve",
                                   "--listen",       "127.0.0.1:" + std::to_string(port_),
                                   "--data-dir",     data_dir_.string()};
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  const bool own_admin_key =
      std::any_of(options_.extra_args.begin(), options_.extra_args.end(),
                  [](const std::string& a) { return a == "--admin-key" || a == "--admin-key-file"; });
  if (!own_admin_key && options_.admin_api)
    args.insert(args.end(), {"--admin-key-file", admin_key_file().string()});
  if (const auto brokers = test_kafka_brokers(); !brokers.empty() && !options_.embedded_only) {
    // The Kafka run of a suite: a topic of its own per data dir, kept across restarts. A secured
    // broker denies the service CreateTopics: the operator makes it, with the partitions asked for.
    int partitions = 6;
    for (std::size_t i = 0; i + 1 < options_.extra_args.size(); ++i)
      if (options_.extra_args[i] == "--partitions" || options_.extra_args[i] == "--kafka-partitions")
        partitions = std::stoi(options_.extra_args[i + 1]);
    ensure_test_topic(kafka_topic(), partitions);
    args.insert(args.end(), {"--kafka-brokers", brokers, "--kafka-topic", kafka_topic()});
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  const std::string log = log_path().string();
  const std::string out = stdout_path().string();
  int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) throw std::system_error(errno, std::generic_category(), "open " + log);
  int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out_fd < 0) {
    int err = errno;
    ::close(log_fd);
    throw std::system_error(err, std::generic_category(), "open " + out);
  }
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::close(log_fd);
    ::close(out_fd);
    if (null_fd >= 0) ::close(null_fd);
    throw std::system_error(err, std::generic_category(), "fork");
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execv(argv[0], argv.data());
    static const char msg[] = "KoboProcess: execv failed\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(log_fd);
  ::close(out_fd);
  if (null_fd >= 0) ::close(null_fd);
  pid_ = pid;
}

void KoboProcess::wait_healthy() {
  const auto deadline = Clock::now() + options_.start_timeout;
  std::string last_error = "no attempt";
  while (Clock::now() < deadline) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      throw std::runtime_error("kobo serve " + describe_status(status) +
                               " before it was healthy; log tail:\n" + log_tail());
    }
    try {
      HttpClient probe("127.0.0.1", port_, milliseconds(1000));
      HttpResult res = probe.get("/healthz");
      if (res.status == 200) {
        // HTTP serves before the writer has started (a node starts in a broker outage): the
        // tests' business is made once it takes commands.
        if (!options_.bootstrap || !credentials_.test_secret_key.empty() || !options_.admin_api) return;
        HttpResult made = probe.request(boost::beast::http::verb::post, "/v1/admin/businesses",
                                        R"({"name":"Integration"})", {{"x-admin-key", kTestAdminKey}});
        if (made.status == 201) {
          const auto& c = made.json.at("data").at("credentials");
          credentials_ = KoboCredentials{c.at("businessId"),    c.at("accountId"),     c.at("testSecretKey"),
                                         c.at("liveSecretKey"), c.at("testPublicKey"), c.at("livePublicKey")};
          return;
        }
        last_error = "POST /v1/admin/businesses answered " + std::to_string(made.status) + " " + made.body;
      } else {
        last_error = "GET /healthz answered " + std::to_string(res.status) + " " + res.body;
      }
    } catch (const std::exception& e) {
      last_error = e.what();
    }
    std::this_thread::sleep_for(milliseconds(25));
  }
  throw std::runtime_error("kobo serve not healthy after " + std::to_string(options_.start_timeout.count()) +
                           " ms (last: " + last_error + "); log tail:\n" + log_tail());
}

void KoboProcess::wait_ready() {
  const auto deadline = Clock::now() + options_.start_timeout;
  std::string last = "no attempt";
  HttpClient probe("127.0.0.1", port_, milliseconds(1000));
  while (Clock::now() < deadline) {
    if (!running()) {
      throw std::runtime_error("kobo serve exited while waiting for /readyz; log tail:\n" + log_tail());
    }
    try {
      HttpResult res = probe.get("/readyz");
      if (res.status == 200) return;
      last = "GET /readyz answered " + std::to_string(res.status) + " " + res.body;
    } catch (const std::exception& e) {
      last = e.what();
    }
    std::this_thread::sleep_for(milliseconds(25));
  }
  throw std::runtime_error("kobo serve not ready after " + std::to_string(options_.start_timeout.count()) +
                           " ms (last: " + last + "); log tail:\n" + log_tail());
}

int KoboProcess::wait_exit(milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      pid_ = -1;
      return r == -1 ? 0 : status;
    }
    if (Clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(milliseconds(5));
  }
}

bool KoboProcess::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

void KoboProcess::kill9() {
  client_.reset();
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

int KoboProcess::terminate(milliseconds timeout) {
  client_.reset();
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  int status = wait_exit(timeout);
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    status = wait_exit(milliseconds(10'000));
  }
  return status_to_code(status);
}

void KoboProcess::start(Port port) {
  if (pid_ > 0) throw std::logic_error("KoboProcess::start: already running");
  if (port == Port::kFresh) {
    PortLease fresh = PortLease::take();  // taken while the old one is held: a different port
    port_ = fresh.port();
    lease_ = std::move(fresh);
  }
  const auto deadline = Clock::now() + options_.start_timeout;
  for (int attempt = 1;; ++attempt) {
    spawn();
    try {
      wait_healthy();
      if (options_.wait_ready) wait_ready();
      return;
    } catch (const std::runtime_error&) {
      // The old listener's port can linger briefly after a kill: a child that exited early gets a
      // few more tries while time is left. One that hangs, or keeps exiting, fails the start.
      if (pid_ > 0 || attempt >= 5 || Clock::now() >= deadline) {
        if (pid_ > 0) kill9();
        throw;
      }
      std::this_thread::sleep_for(milliseconds(200));
    }
  }
}

void KoboProcess::restart(Port port) {
  kill9();
  start(port);
}

void KoboProcess::graceful_restart(Port port) {
  terminate();
  start(port);
}

HttpClient& KoboProcess::client() {
  if (!client_) client_ = std::make_unique<HttpClient>("127.0.0.1", port_);
  return *client_;
}

std::unique_ptr<HttpClient> KoboProcess::new_client(milliseconds timeout) const {
  return std::make_unique<HttpClient>("127.0.0.1", port_, timeout);
}

}  // namespace kobo::testing
