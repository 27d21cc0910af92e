#pragma once
// OwnerWait: where a cluster node's commands find their partition's writer (docs/architecture.md,
// "Cluster": "Forwarding"). It wraps the whole router, before any route's work: the partition is
// known from the caller's key alone, and a forwarded command is the owner's to authenticate,
// validate and answer, so forwarding takes the request exactly as it came.
//
// A command (POST, PATCH, PUT or DELETE with an x-service-key; not the name enquiry, which only
// reads) whose business's partition this node does not write is, without holding a thread:
//  - forwarded to the node that writes it (Forwarder), whose answer is the answer, as it came,
//    relayed once this node's views have applied it (OwnerWaitOptions::projector);
//  - held while no node writes it (a rebalance; a dead owner the group has not yet noticed, which
//    refuses the connection), until this node or another one does, or for at most `wait`
//    (--failover-wait-ms), then answered 503 `Service unavailable` with `Retry-After: 1`;
//  - answered 503 with Retry-After when its owner failed while it had it (it may have decided it:
//    never sent again; the client's retry is safe by the command's own idempotency), or when this
//    node is leaving its cluster and no other node writes the partition.
// A request that arrives forwarded (x-kobo-forwarded, with the cluster's secret in
// x-cluster-secret; a wrong secret is 401) is never forwarded again: it is decided here, waits
// for this node to take the partition over, or is answered 503 at once when another node writes
// it. The Ledger never decides a command of a partition it does not write
// (Rejection::not_owner, answered the same way), so a partition revoked between this check and
// the writer is safe too. A single node writes every partition: every request goes straight
// through.
//
// Thread safety: the wrapped handler may be called from any thread. Lifecycle: it owns one timer
// thread; destroy it after the HTTP server has stopped.

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <thread>

#include <optional>
#include <string>

#include "command/ledger.h"
#include "projection/projector.h"
#include "projection/views.h"
#include "query-api/forwarder.h"
#include "query-api/http_server.h"

namespace kobo {

struct OwnerWaitOptions {
  std::chrono::milliseconds wait{10'000};  // --failover-wait-ms
  std::chrono::milliseconds poll{20};      // how often a waiting command looks again
  // The URL of the node that writes partition p now, when it is another node (Cluster::owner);
  // null: never known.
  std::function<std::optional<std::string>(Partition)> owner_elsewhere;
  // Sends commands to their partition's owner; null: none are forwarded (503 as when leaving).
  Forwarder* forwarder = nullptr;
  // The cluster's secret, which a forwarded request must carry (x-cluster-secret).
  std::string secret;
  // Whether this node is leaving its cluster (it has handed its partitions over): nothing waits.
  std::function<bool()> leaving;
  // This node's views. A forwarded command's answer is relayed once they have applied its
  // Kobo-Position, or after `read_wait` (--read-wait-ms): a client that talks to this node alone
  // reads its writes here as on a single node. Null: relayed at once.
  Projector* projector = nullptr;
  std::chrono::milliseconds read_wait{2'000};
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
  void forward(const std::shared_ptr<Waiting>& w, const std::string& url);
  void relay(const std::shared_ptr<Waiting>& w, http::Response answer);
  void again(const std::shared_ptr<Waiting>& w);

  Ledger& ledger_;
  Views& views_;
  const OwnerWaitOptions options_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread thread_;
};

}  // namespace kobo
