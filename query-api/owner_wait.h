#pragma once
// OwnerWait: where a cluster node's commands wait for their partition's writer
// (docs/architecture.md, "Cluster"). Small on purpose: the route wrapper will forward a command
// to the node that writes its partition, and this waiting moves there with it.
//
// A command (POST, PATCH, PUT or DELETE with an x-service-key; not the name enquiry, which only
// reads) whose business's partition this node does not write is held, without holding a thread,
// until this node writes the partition (a takeover: it then goes to its route as any other), or
// is answered 503 `Service unavailable` with `Retry-After: 1` as soon as another node is known to
// write it or this node is leaving its cluster, or after `wait` (--failover-wait-ms) with no
// writer at all. The Ledger never decides
// a command of a partition it does not write (Rejection::not_owner, answered the same way), so a
// partition revoked between this check and the writer is safe too. A single node writes every
// partition: every request goes straight through.
//
// Thread safety: the wrapped handler may be called from any thread. Lifecycle: it owns one timer
// thread; destroy it after the HTTP server has stopped.

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <thread>

#include "command/ledger.h"
#include "projection/views.h"
#include "query-api/http_server.h"

namespace kobo {

struct OwnerWaitOptions {
  std::chrono::milliseconds wait{10'000};  // --failover-wait-ms
  std::chrono::milliseconds poll{20};      // how often a waiting command looks again
  // Whether another node writes partition p now (Cluster::owned_elsewhere); null: never known.
  std::function<bool(Partition)> owned_elsewhere;
  // Whether this node is leaving its cluster (it has handed its partitions over): nothing waits.
  std::function<bool()> leaving;
};

class OwnerWait {
 public:
  OwnerWait(Ledger& ledger, Views& views, OwnerWaitOptions options);
  ~OwnerWait();
  OwnerWait(const OwnerWait&) = delete;
  OwnerWait& operator=(const OwnerWait&) = delete;

  http::Handler wrap(http::Handler inner);

 private:
  struct Waiting;
  void check(const std::shared_ptr<Waiting>& w);

  Ledger& ledger_;
  Views& views_;
  const OwnerWaitOptions options_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread thread_;
};

}  // namespace kobo
