#include "query-api/cluster_status.h"

#include <atomic>
#include <chrono>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>

#include "common/crypto.h"
#include "common/json_writer.h"
#include "query-api/envelope.h"

namespace kobo::api {
namespace {

using nlohmann::json;

std::string iso_time(std::chrono::system_clock::time_point t) {
  const std::time_t s = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// This node's own part: its id and its positions.
json this_node(const Cluster& cluster, const Ledger& ledger, const Projector& projector) {
  json partitions = json::array();
  for (std::uint32_t i = 0; i < ledger.config().partitions; ++i) {
    const Partition p(i);
    const Seq writer = ledger.durable_seq(p);
    const Seq views = projector.applied_seq(p);
    partitions.push_back({{"partition", i},
                          {"owned", ledger.owns(p)},
                          {"epoch", ledger.epoch(p).value},
                          {"writerSeq", writer.value},
                          {"viewsSeq", views.value},
                          {"lag", writer > views ? writer.value - views.value : 0}});
  }
  return {{"nodeId", cluster.node_id()},
          {"url", cluster.url()},
          {"leaving", cluster.leaving()},
          {"partitions", std::move(partitions)}};
}

json group(const Cluster& cluster, const Ledger& ledger) {
  const auto map = cluster.owners();
  json members = json::array();
  for (const auto& m : map->members) {
    json parts = json::array();
    for (const Partition p : m.partitions) parts.push_back(p.value);
    members.push_back({{"nodeId", m.node_id}, {"url", m.url}, {"partitions", std::move(parts)}});
  }
  json assignment = json::array();
  for (std::uint32_t i = 0; i < ledger.config().partitions; ++i) {
    const PartitionOwner o = cluster.owner(Partition(i));
    assignment.push_back({{"partition", i},
                          {"owner", o.node_id.empty() ? json(nullptr) : json(o.node_id)},
                          {"url", o.url.empty() ? json(nullptr) : json(o.url)},
                          {"epoch", o.epoch.value}});
  }
  return {{"state", map->state},
          {"readAt", iso_time(map->read_at)},
          {"members", std::move(members)},
          {"assignment", std::move(assignment)}};
}

}  // namespace

void add_cluster_route(http::Router& router, const Cluster& cluster, const Ledger& ledger,
                       const Projector& projector, Forwarder& peers, std::string secret) {
  router.get("/v1/cluster", [&cluster, &ledger, &projector, &peers, secret = std::move(secret)](
                                http::Request&& req, const http::PathParams&, http::Responder respond) {
    if (!constant_time_equal(sha256_hex(req.header(kClusterSecretHeader)), sha256_hex(secret)))
      return respond(http::error(401, "Unauthorized"));
    json data = group(cluster, ledger);
    data["node"] = this_node(cluster, ledger, projector);
    const bool all = req.query_param("nodes") == std::optional<std::string_view>("all");
    std::vector<std::pair<std::string, std::string>> others;  // node id, url
    if (all)
      for (const auto& m : cluster.owners()->members)
        if (m.node_id != cluster.node_id()) others.emplace_back(m.node_id, m.url);
    if (others.empty()) return respond(http::ok_text(200, json_text(data)));
    // Every other member's own part, asked at once; the answer once all have answered.
    struct Gather {
      std::mutex mu;
      json data;
      json nodes = json::array();
      std::size_t left = 0;
      http::Responder respond;
    };
    auto g = std::make_shared<Gather>();
    g->nodes.push_back(data["node"]);
    g->data = std::move(data);
    g->left = others.size();
    g->respond = std::move(respond);
    http::Request ask;
    ask.method = boost::beast::http::verb::get;
    ask.path = "/v1/cluster";
    for (const auto& [id, url] : others) {
      peers.forward(url, ask, [g, node_id = id](Forwarded f) {
        json node;
        if (f.answer && f.answer->status == 200) {
          const json answer = json::parse(f.answer->body, nullptr, false);
          if (answer.is_object() && answer.contains("data")) node = answer["data"].value("node", json());
        }
        if (node.is_null())
          node = {{"nodeId", node_id},
                  {"error", f.answer ? "answered " + std::to_string(f.answer->status) : f.error}};
        std::lock_guard lock(g->mu);
        g->nodes.push_back(std::move(node));
        if (--g->left > 0) return;
        g->data["nodes"] = std::move(g->nodes);
        g->respond(http::ok_text(200, json_text(g->data)));
      });
    }
  });
}

}  // namespace kobo::api
