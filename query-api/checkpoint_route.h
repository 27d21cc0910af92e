#pragma once
// GET /v1/cluster/checkpoint: a copy of this node's views, its writer's history index and newest
// snapshot, streamed to a node that joins the cluster with an empty data dir
// (docs/architecture.md, "A new node: a peer's checkpoint"; the stream: checkpoint_stream.h).
//
// An internal route: it answers only with the cluster's secret in `x-cluster-secret` (401 and
// nothing made without it), it is never forwarded (it is no command: OwnerWait forwards
// commands only), and it exists only on a cluster node given --cluster-secret-file. A node that
// has not started yet (its writer and views not caught up with its start) answers 503.
//
// One copy at a time: another request meanwhile is 503 with Retry-After. The copy is made in
// `scratch` (RocksDB checkpoints: memtables flushed, files hard-linked) on a thread of its own,
// then streamed a piece at a time on the HTTP connection's thread; the scratch copy is removed
// once the stream ends or its connection goes.
//
// Thread safety: the handler runs on the HTTP threads. Lifecycle: construct over open views and
// a Ledger, add_route(), and destroy after the HTTP server stopped and before the views and the
// Ledger go (the destructor waits for a copy being made).

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "command/ledger.h"
#include "projection/views.h"
#include "query-api/router.h"

namespace kobo::api {

struct CheckpointServerOptions {
  std::filesystem::path scratch;  // where a copy is made (app: <data-dir>/views.checkpoint-<pid>)
  std::string secret;             // the cluster's
  std::string topic;              // the log's, named in the manifest
  std::string node_id;
  std::function<bool()> started;  // whether the node has started (its writer and views are open)
};

class CheckpointServer {
 public:
  CheckpointServer(CheckpointServerOptions options, const Views& views, Ledger& ledger);
  ~CheckpointServer();
  CheckpointServer(const CheckpointServer&) = delete;
  CheckpointServer& operator=(const CheckpointServer&) = delete;

  void add_route(http::Router& router);

 private:
  void serve(std::string joiner, http::Responder respond);
  // Makes the copy and answers with its stream (the maker's thread); `joiner`: who asked.
  void make(const std::string& joiner, const http::Responder& respond);

  const CheckpointServerOptions options_;
  const Views& views_;
  Ledger& ledger_;
  // Whether a copy is being made or streamed: shared with the stream, which outlives no server
  // it was answered by but may outlive this object's handler call.
  std::shared_ptr<std::atomic<bool>> busy_ = std::make_shared<std::atomic<bool>>(false);
  std::mutex maker_mu_;
  std::thread maker_;  // guarded by maker_mu_
};

}  // namespace kobo::api
