#pragma once
// Forwarder: a cluster node's HTTP client to its peers (docs/architecture.md, "Cluster":
// "Forwarding"). A command whose partition another node writes is sent to that node as it came
// (method, target, headers, body) and its answer comes back as it is (status, headers, body), so
// a client never sees which node owns what.
//
// A forwarded request carries `x-kobo-forwarded: <this node's id>` and the cluster's secret
// (`x-cluster-secret`, read from --cluster-secret-file): the receiver checks the secret, and
// never forwards such a request again (it answers it, waits for its partition, or answers 503).
//
// Connections: per peer URL a keep-alive pool of at most `connections_per_peer`; a request that
// finds every connection busy waits for one in a queue. An idle connection the peer has closed is
// noticed before it is used (it reads as closed) and dropped, so a peer's restart does not fail
// a request that was never sent.
//
// What a failure means (docs/architecture.md, "Forwarding and retries"): `sent` false says no
// byte of the request left this node (the connection was never made), so the owner cannot have
// decided it and the caller may send it again, to whichever node writes the partition next.
// `sent` true (a failure while writing or reading) is ambiguous: the owner may have decided the
// command. The Forwarder never sends such a request again.
//
// Thread safety: forward() may be called from any thread; `done` is called once, on one of the
// Forwarder's threads. Lifecycle: destroy it after the HTTP server has stopped; forwards still
// in flight then are dropped (their responders answer 500).

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "query-api/message.h"

namespace kobo {

struct ForwarderOptions {
  std::string node_id;  // sent as x-kobo-forwarded
  std::string secret;   // sent as x-cluster-secret
  std::size_t connections_per_peer = 512;
  std::chrono::milliseconds timeout{20'000};  // one exchange, connect to the answer's last byte
  std::size_t answer_limit = 64 << 20;        // bytes of an answer's body
  int threads = 1;
};

struct Forwarded {
  std::optional<http::Response> answer;  // the owner's answer, as it came
  bool sent = false;                     // whether any of the request may have reached the owner
  std::string error;                     // why there is no answer
};

// The headers of a forwarded request.
inline constexpr std::string_view kForwardedHeader = "x-kobo-forwarded";
inline constexpr std::string_view kClusterSecretHeader = "x-cluster-secret";

// The request target (origin form) of a request: its path and query percent-encoded again.
std::string request_target(const http::Request& request);

class Forwarder {
 public:
  explicit Forwarder(ForwarderOptions options);
  ~Forwarder();
  Forwarder(const Forwarder&) = delete;
  Forwarder& operator=(const Forwarder&) = delete;

  // Sends `request` to the node at `url` (http://HOST:PORT) and calls `done` with its answer.
  void forward(const std::string& url, const http::Request& request, std::function<void(Forwarded)> done);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kobo
