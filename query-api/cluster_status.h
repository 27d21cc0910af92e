#pragma once
// GET /v1/cluster: the operator's view of a Kobo cluster (docs/architecture.md, "Cluster":
// "Seeing the cluster"), authenticated by the cluster's secret in the `x-cluster-secret` header
// (401 without it; the route exists only on a cluster node given --cluster-secret-file).
//
// It answers, in the API's envelope: this node (id, URL, whether it is leaving), the group as it
// was last read (state, when, its members with their URLs and assigned partitions) and, per
// partition, its owner, the epoch this node's writer has read, and this node's positions (the
// seq its writer has made durable or read, the seq its views have applied, the lag between).
// With `?nodes=all` it asks every other member for its own part too (`nodes`: one entry per
// member; a member that did not answer is listed with the error).
//
// Thread safety: the handler runs on the HTTP threads; what it reads is thread-safe.

#include <memory>
#include <string>

#include "cluster/cluster.h"
#include "command/ledger.h"
#include "projection/projector.h"
#include "query-api/forwarder.h"
#include "query-api/router.h"

namespace kobo::api {

void add_cluster_route(http::Router& router, const Cluster& cluster, const Ledger& ledger,
                       const Projector& projector, Forwarder& peers, std::string secret);

}  // namespace kobo::api
