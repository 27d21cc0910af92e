#pragma once
// A node in process for the suites that drive the writer and read the views without HTTP: an
// event log, the writer on it (command/ledger.h), the views (projection/views.h) and the
// projector following the log into them; the parts `kobo serve` wires (app/main.cc) but for
// HTTP and webhooks.
//
// The log is one in memory of the node's own (MemoryLog, which fails appends on request), or
// the test's (an embedded log, one that throws), which must outlive the node. The views live in
// <dir>/views, through `views_env` when the test gives one (a file system that fails on demand).
//
// Lifecycle. start() starts the writer (which replays the log) and then the projector; stop()
// stops the projector and then the writer; the views are closed last, by close_views() or the
// destructor, so that a test reads them after a stop. (`kobo serve` starts its projector first,
// for the webhooks' sake; without webhooks the order changes nothing the views show.) A part
// can be started, stopped and restarted alone: a restart drops it and makes it again with the
// same options, as a crash and a start would (a writer does not start again once stopped).
// Every start returns its error for the test to assert on; a part asked for while the node has
// none throws std::logic_error.
//
// Thread safety: none; one test thread drives it. What it hands out is as thread-safe as that
// part is (Ledger::submit, the views' reads, Projector::wait_applied).

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "command/ledger.h"
#include "events/memory_log.h"
#include "projection/projector.h"
#include "projection/views.h"

namespace kobo::testing {

struct NodeOptions {
  std::uint32_t partitions = 2;  // of the node's own log, the writer's config and the views
  LedgerOptions ledger = {};     // its config.partitions is set to `partitions`
  ProjectorOptions projector = {};
  rocksdb::Env* views_env = nullptr;  // the views' files go through it; null: the machine's own
};

class Node {
 public:
  // On a log in memory of its own.
  explicit Node(std::filesystem::path dir, NodeOptions options = {});
  // On the test's log.
  Node(EventLog& log, std::filesystem::path dir, NodeOptions options = {});
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // The writer, the views and the projector made but not started (a route table needs them).
  [[nodiscard]] Status open();
  // The writer, then the projector on the views.
  [[nodiscard]] Status start();
  // The writer made when it is not, and started.
  [[nodiscard]] Status start_writer();
  // The views opened and the projector made when they are not, and the projector started.
  [[nodiscard]] Status start_projector();
  // The projector, then the writer, stopped and dropped; the views stay open.
  void stop();
  void stop_projector();
  // The projector dropped and the views closed (start_projector() opens them again).
  void close_views();
  // The writer dropped (a crash) and started again on the same log.
  [[nodiscard]] Status restart_writer();
  // The projector dropped and started again on the same views.
  [[nodiscard]] Status restart_projector();

  // Whether the views show, within `within` for each partition, every event the writer made durable.
  [[nodiscard]] bool caught_up(std::chrono::milliseconds within) const;

  EventLog& log() { return log_; }
  // The node's own log; only for a node made without one.
  MemoryLog& memory_log();
  Ledger& ledger();
  Views& views();
  Projector& projector();
  const std::filesystem::path& dir() const { return dir_; }
  std::uint32_t partitions() const { return options_.partitions; }

 private:
  Status open_views();

  std::filesystem::path dir_;
  NodeOptions options_;
  std::unique_ptr<MemoryLog> own_log_;
  EventLog& log_;
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<Views> views_;
  std::unique_ptr<Projector> projector_;
};

// Every key and value of the views, in key order: two views hold the same when these are equal.
std::map<std::string, std::string> view_rows(const Views& views);

// Views built from scratch at `dir` from the whole of `log`, by a projector of their own.
[[nodiscard]] Result<std::unique_ptr<Views>> rebuilt_views(EventLog& log, const std::filesystem::path& dir);

}  // namespace kobo::testing
