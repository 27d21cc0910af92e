#pragma once
// Position tokens: read your writes on any node (docs/architecture.md, "Cluster": "Position
// tokens"; schemas/openapi.yaml, the Kobo-Position header).
//
// Every answer to a command carries `Kobo-Position`: the log positions the answer depends on (the
// command's partition and the seq the writer stood at when it answered), merged with the token
// the request sent, if any. Every read answer carries the token of the views it was read from:
// each partition's seq the views had applied once the read was done, so the token covers
// everything the read saw. A request that sends a token back (the `Kobo-Position` request
// header), on any node, is read only from views that have applied every position it names: it
// waits up to `read_wait` (--read-wait-ms), then is answered 503 with `Retry-After: 1`. A client
// that echoes the last token it got therefore reads its own writes, and never reads older than
// it read before, whichever node answers.
//
// A token is opaque to clients: `k1` then, per partition with a position, `.<partition>-<seq>`
// (decimal), partitions ascending, e.g. `k1.0-17.4-3`. A seq is a partition's place in the log:
// it grows across writers (a new writer of a partition starts after the end it read, and a
// fenced writer's events are never committed), so a position a node acknowledged means the same
// on every node of the same topic. A token that is not one (bad syntax, a partition the topic
// does not have, more than 64 KiB) is answered 400 `Invalid Kobo-Position header` before any
// other step.
//
// Thread safety: the hooks run on many threads at once; they hold no mutable state but their
// pool, on which a read that had to wait goes on.

#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "projection/projector.h"
#include "query-api/route.h"

namespace kobo::api {

inline constexpr std::string_view kPositionHeader = "Kobo-Position";

// Per partition, a seq; partitions without one are absent.
using Positions = std::map<std::uint32_t, std::uint64_t>;

// The token's text, and back; nullopt: not a token (or a partition >= `partitions`).
std::string format_positions(const Positions& positions);
std::optional<Positions> parse_positions(std::string_view token, std::uint32_t partitions);
// The larger seq of each partition.
void merge_positions(Positions& into, const Positions& other);

// Whether `projector`'s views have applied every position of `positions` now. Allocates nothing:
// the common case of a token read and of a relayed answer.
[[nodiscard]] bool views_have(const Projector& projector, const Positions& positions);
// Calls `then(applied)` once the views have applied every position (true) or once `wait` has
// passed (false): on the projector's thread, or on this one when they have them already. No
// thread is held meanwhile.
void wait_for_views(Projector& projector, const Positions& positions, std::chrono::milliseconds wait,
                    std::function<void(bool)> then);

class PositionHooks : public EdgeHooks {
 public:
  PositionHooks(Projector& projector, std::uint32_t partitions, std::chrono::milliseconds read_wait);
  ~PositionHooks() override;

  std::optional<http::Response> admit(const RouteTraits& route, const http::Request& request) override;
  void command_answered(const Exchange& x, LogPosition at, http::Response& answer) override;
  void before_read(const Exchange& x, http::Responder respond,
                   std::function<void(http::Responder)> then) override;
  void read_answered(const Exchange& x, http::Response& answer) override;

  // The token of the views now: every partition's applied seq.
  std::string views_token() const;

 private:
  Projector& projector_;
  const std::uint32_t partitions_;
  const std::chrono::milliseconds read_wait_;
  boost::asio::thread_pool pool_{1};
};

}  // namespace kobo::api
