#pragma once
// A new node of a cluster starts from a peer's checkpoint instead of the log's offset 0
// (docs/architecture.md, "A new node: a peer's checkpoint"). A node started with an empty data
// dir asks a peer for a copy of its views, its writer's history index and newest snapshot
// (GET /v1/cluster/checkpoint with the cluster's secret: checkpoint_route.h), checks it, and only
// then moves it into its data dir: its projector and writer then read the log after the copy's
// positions, as after a restart.
//
// Any of these refuses the whole checkpoint, saying why (the caller then rebuilds from the log,
// as a node without a peer does):
//   - the peer does not answer 200 (401: the cluster's secret is not the peer's);
//   - the stream is cut short, changed on the way (its SHA-256), or breaks a limit of its format
//     (checkpoint_stream.h), or the data dir's disk has not room for it;
//   - it is of another topic or partition count than this node's log;
//   - the views or the history index do not open, or a block of their files fails RocksDB's
//     checksum, or the views are of another key layout;
//   - the views' position of a partition, or the snapshot's, names no event the log holds there
//     with that seq, hash and epoch, or is past an event that extends it (events/log_follower.h,
//     check_positions): a copy of another log, of a topic recreated since, or tampered with.
// The history index's head is checked by the writer's start, against the log it replays after
// the snapshot (command/ledger.h); an index that disagrees is rebuilt from the log.
//
// Nothing is served from a checkpoint before it passed: it is received into `scratch` (removed
// after, whatever happens) and renamed into the data dir only once checked.
//
// Called once, at start, before anything opens the data dir's views; not thread-safe.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "events/event_log.h"

namespace kobo {

// Who asks for a checkpoint (the joining node's id), for the peer's log.
inline constexpr std::string_view kJoiningNodeHeader = "x-kobo-node";

struct JoinOptions {
  std::filesystem::path data_dir;
  std::filesystem::path scratch;   // where the copy is received (app: <data-dir>/views.join-<pid>)
  std::vector<std::string> peers;  // http://HOST:PORT, asked in order
  std::string secret;              // the cluster's
  std::string topic;               // this node's log's
  std::string node_id;             // this node's, for the peer's log
  std::chrono::milliseconds connect_timeout{3'000};
  // The stream is refused when no byte of it came for this long.
  std::chrono::milliseconds stall_timeout{30'000};
  // While every peer that answered was busy (503: a copy for another node), they are asked again
  // every second for this long.
  std::chrono::milliseconds busy_wait{60'000};
};

struct Joined {
  std::string peer;  // the URL whose checkpoint was taken
  std::string peer_node_id;
  std::size_t files = 0;
  std::uint64_t bytes = 0;
  std::uint64_t events = 0;     // the views' events, all partitions: what the node need not read
  double seconds = 0;           // asking the first peer to the checkpoint in place
  double received_seconds = 0;  // of which receiving the stream (the peer's copy made, sent, written)
};

// Whether `data_dir` is a new node's: no views, no history index and no snapshots.
bool data_dir_is_new(const std::filesystem::path& data_dir);

// Takes the checkpoint of the first peer that gives one, checks it against `log` and moves it
// into the data dir. A peer that cannot be reached, or is busy (503), is passed over for the
// next, and busy ones are asked again (JoinOptions::busy_wait); a checkpoint refused by a check
// ends the join. The error says why.
[[nodiscard]] Result<Joined> join_through_checkpoint(const JoinOptions& options, EventLog& log);

}  // namespace kobo
