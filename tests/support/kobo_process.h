#pragma once
// Runs the real `kobo serve` as a child process for integration tests.
//
// A KoboProcess owns one child at a time: it starts `kobo serve` on a loopback port with a data
// directory (a fresh temporary one unless given), with the admin API on (kTestAdminKey, from a
// 0600 file outside the data dir), waits until GET /healthz answers 200 and, unless it was given
// the credentials of a business the log already has, creates one through the admin API: the
// tests' business, whose keys it keeps in memory only (kobo writes no key anywhere). The child's stderr
// (its JSON log) goes to <data-dir>/kobo.<n>.log and its stdout to <data-dir>/kobo.<n>.stdout
// (n counts starts), so a failed start can show the log's tail. The child gets SIGKILL if the thread that
// started it dies (PR_SET_PDEATHSIG), so a crashed test leaves no server behind.
//
// With KOBO_TEST_KAFKA_DIR set (see test_kafka_brokers()) the child serves on Kafka instead.
//
// Lifecycle: constructed = running. kill9() / terminate() stop it; start() / restart() start it
// again on the same data directory. The destructor SIGKILLs a running child and removes a
// temporary data directory (a ScratchDir, tests/support/scratch_dir.h) unless keep_data_dir(true)
// was called, the test failed or KOBO_TEST_KEEP_DATA=1; a child whose directory is kept gets
// SIGTERM first, so its databases are closed and trimmed. When the running test has failed, the
// destructor prints the log's last lines: a run elsewhere (CI) keeps the test's output and nothing
// else.
//
// Thread safety: none; use it from one thread (the one that started it, see PR_SET_PDEATHSIG).
// client() belongs to that thread too; other threads make their own with new_client().

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/port_lease.h"
#include "tests/support/scratch_dir.h"

namespace kobo::testing {

struct KoboCredentials {
  std::string business_id;
  std::string account_id;
  std::string test_secret_key;
  std::string live_secret_key;
  std::string test_public_key;
  std::string live_public_key;
};

// The admin key every KoboProcess is started with (unless its extra_args name one).
inline constexpr const char* kTestAdminKey = "kobo-integration-admin-key-0123456789abcdef";

struct KoboOptions {
  // The kobo executable; empty means the environment variable KOBO_BINARY.
  std::filesystem::path binary;
  // Empty: a fresh temporary directory, removed by the destructor.
  std::filesystem::path data_dir;
  // Where the child's log (stderr) and stdout go; empty: the data dir. A test of a data dir on a
  // disk that fills up keeps them elsewhere, as a deployment's log is, so they are not lost.
  std::filesystem::path log_dir;
  // 0: a loopback port leased for the process's life, kept across restarts (tests/support/port_lease.h).
  std::uint16_t port = 0;
  // Passed after `serve --listen … --data-dir …`, e.g. {"--partitions", "4"}.
  std::vector<std::string> extra_args;
  std::chrono::milliseconds start_timeout{30'000};
  // After /healthz, also wait for GET /readyz to answer 200 (views caught up with the log).
  bool wait_ready = true;
  // Stay on the embedded log even in a Kafka run (tests that read <data-dir>/log themselves).
  bool embedded_only = false;
  // In a Kafka run, the topic; empty: one named after the data dir.
  std::string kafka_topic;
  // false: a node that makes no business at start (a cluster's, whose tests make theirs with the
  // admin API): healthy means GET /healthz answers 200, and credentials() stays empty.
  bool bootstrap = true;
  // The tests' business when the log already has it (a second process on the same log, a data
  // dir made by another KoboProcess); absent: the first start creates one with the admin API.
  std::optional<KoboCredentials> credentials;
  // False: no admin key, so no admin API and no business made (a server that has none).
  bool admin_api = true;
};

// The Kafka run of the integration suites (ctest label `kafka`): KOBO_TEST_KAFKA_DIR names the
// test broker's directory (tools/kafka/broker.sh), and every KoboProcess then serves on Kafka
// with a topic of its own. Empty when the variable is not set: the embedded log.
std::string test_kafka_brokers();

class KoboProcess {
 public:
  // Starts the server and waits for it to be healthy (and ready, see KoboOptions::wait_ready);
  // throws std::runtime_error (with the log's tail) when it does not come up within
  // options.start_timeout.
  explicit KoboProcess(KoboOptions options = {});
  ~KoboProcess();
  KoboProcess(const KoboProcess&) = delete;
  KoboProcess& operator=(const KoboProcess&) = delete;

  // The Kafka topic it serves on in a Kafka run (see test_kafka_brokers()).
  std::string kafka_topic() const;

  // kFresh: a newly leased port (the one before is given back).
  enum class Port { kSame, kFresh };

  // Starts the child again on the same data directory. Requires a stopped child.
  void start(Port port = Port::kSame);
  // SIGKILL and reap: the crash case.
  void kill9();
  // SIGTERM, then wait up to `timeout` for the child to exit; SIGKILL after that. Returns the
  // exit code, or 128+signal when it died by a signal (so 137 after the SIGKILL fallback).
  int terminate(std::chrono::milliseconds timeout = std::chrono::milliseconds(15'000));
  // kill9() (or nothing, if stopped) then start(port).
  void restart(Port port = Port::kSame);
  // terminate() then start(port).
  void graceful_restart(Port port = Port::kSame);

  bool running();
  pid_t pid() const { return pid_; }
  std::uint16_t port() const { return port_; }
  const std::filesystem::path& data_dir() const { return data_dir_; }
  const KoboCredentials& credentials() const { return credentials_; }
  const std::string& test_key() const { return credentials_.test_secret_key; }
  const std::string& live_key() const { return credentials_.live_secret_key; }
  // stderr (the JSON log) and stdout of the current (or last) child.
  std::filesystem::path log_path() const;
  std::filesystem::path stdout_path() const;
  // The last `lines` lines of the current log.
  std::string log_tail(std::size_t lines = 40) const;

  // A client owned by this object, recreated by each start (for the starting thread).
  HttpClient& client();
  // A new client to this server, for another thread.
  std::unique_ptr<HttpClient> new_client(
      std::chrono::milliseconds timeout = std::chrono::milliseconds(10'000)) const;

  void keep_data_dir(bool keep) { keep_data_dir_ = keep; }

 private:
  // The current (or last) child's output file of that extension, in KoboOptions::log_dir.
  std::filesystem::path output_path(std::string_view extension) const;
  void spawn();
  void wait_healthy();
  void wait_ready();
  // Waits up to `timeout` for the child to exit; returns its wait status or -1.
  int wait_exit(std::chrono::milliseconds timeout);

  KoboOptions options_;
  std::filesystem::path binary_;
  std::optional<ScratchDir> scratch_;  // the data dir, when options_ named none
  std::filesystem::path data_dir_;
  bool keep_data_dir_ = false;
  std::optional<PortLease> lease_;  // when options_ named no port
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
  int starts_ = 0;
  KoboCredentials credentials_;
  std::unique_ptr<HttpClient> client_;
};

}  // namespace kobo::testing
