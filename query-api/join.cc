#include "query-api/join.h"

#include <rocksdb/db.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>
#include <fstream>
#include <iterator>
#include <thread>

#include "command/snapshot.h"
#include "common/file.h"
#include "common/log.h"
#include "events/log_follower.h"
#include "events/rocksdb_logger.h"
#include "projection/views.h"
#include "query-api/checkpoint_stream.h"
#include "query-api/forwarder.h"

namespace kobo {

namespace fs = std::filesystem;

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kCheckpointTarget = "/v1/cluster/checkpoint";
constexpr std::size_t kReadPieceBytes = std::size_t{256} << 10;
// Room the data dir's disk must have beyond the checkpoint itself (RocksDB's logs, the log-source).
constexpr std::uint64_t kDiskMarginBytes = std::uint64_t{256} << 20;
constexpr std::size_t kRefusalBodyMax = std::size_t{16} << 10;  // an error answer's body kept for the log
constexpr std::chrono::milliseconds kBusyRetry{1'000};          // between two rounds of busy peers

// A failure that sends the join to the next peer (it could not be asked, or was busy), as
// opposed to a refusal of what it gave.
Status pass_over(std::string why) { return Status::error(std::move(why), ErrorKind::unavailable); }

// Runs one asynchronous operation to its end on `io` (so that the stream's timeouts apply).
template <typename Start>
boost::system::error_code run_one(net::io_context& io, Start start) {
  boost::system::error_code result = net::error::would_block;
  start([&result](boost::system::error_code ec, auto&&...) { result = ec; });
  io.restart();
  io.run();
  return result;
}

// Receives the checkpoint of the peer at `url` into options.scratch through `sink`. `busy`: the
// peer answered 503 (it is streaming a copy to another node, or has not started yet).
Status fetch(const JoinOptions& o, const std::string& url, CheckpointSink& sink, bool& busy) {
  const auto parsed = boost::urls::parse_uri(url);
  if (!parsed || parsed->scheme() != "http" || parsed->host().empty())
    return pass_over("the peer's URL " + url + " is not http://HOST:PORT");
  const std::string host = parsed->host();
  const std::string port = parsed->has_port() ? std::string(parsed->port()) : "80";
  net::io_context io;
  tcp::resolver resolver(io);
  boost::system::error_code ec;
  const auto addresses = resolver.resolve(host, port, ec);
  if (ec) return pass_over("cannot resolve " + host + ": " + ec.message());
  beast::tcp_stream stream(io);
  stream.expires_after(o.connect_timeout);
  ec = run_one(io, [&](auto done) { stream.async_connect(addresses, std::move(done)); });
  if (ec) return pass_over("cannot connect to " + url + ": " + ec.message());

  bhttp::request<bhttp::empty_body> req{bhttp::verb::get, kCheckpointTarget, 11};
  req.set(bhttp::field::host, host + ":" + port);
  req.set(kClusterSecretHeader, o.secret);
  req.set(kJoiningNodeHeader, o.node_id);  // for the peer's log
  stream.expires_after(o.connect_timeout);
  ec = run_one(io, [&](auto done) { bhttp::async_write(stream, req, std::move(done)); });
  if (ec) return pass_over("cannot ask " + url + ": " + ec.message());

  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::buffer_body> parser;
  parser.body_limit(boost::none);  // the stream's own limits bound it (checkpoint_stream.h)
  stream.expires_after(o.stall_timeout);
  ec = run_one(io, [&](auto done) { bhttp::async_read_header(stream, buffer, parser, std::move(done)); });
  if (ec) return pass_over("no answer from " + url + ": " + ec.message());
  const unsigned status = parser.get().result_int();

  std::string piece(kReadPieceBytes, '\0');
  std::string refusal;  // an error answer's body
  bool room_checked = false;
  while (!parser.is_done()) {
    parser.get().body().data = piece.data();
    parser.get().body().size = piece.size();
    stream.expires_after(o.stall_timeout);
    ec = run_one(io, [&](auto done) { bhttp::async_read(stream, buffer, parser, std::move(done)); });
    if (ec == bhttp::error::need_buffer) ec = {};
    if (ec)
      return Status::error("the stream from " + url + " broke off after " +
                           std::to_string(sink.bytes_received()) + " bytes: " + ec.message());
    const std::string_view got(piece.data(), piece.size() - parser.get().body().size);
    if (status != 200) {
      refusal.append(got.substr(0, kRefusalBodyMax - std::min(refusal.size(), kRefusalBodyMax)));
      continue;
    }
    if (auto s = sink.feed(got); !s) return s;
    if (!room_checked && sink.manifest()) {
      room_checked = true;
      const auto space = fs::space(o.scratch, ec);
      const std::uint64_t needed = sink.manifest()->bytes() + kDiskMarginBytes;
      if (!ec && space.available < needed)
        return Status::error("the checkpoint needs " + std::to_string(needed) +
                             " bytes, the data dir's disk has " + std::to_string(space.available) + " free");
    }
  }
  busy = status == 503;
  if (status == 503 || status == 404)
    return pass_over(url + " answered " + std::to_string(status) + ": " + refusal.substr(0, 200));
  if (status == 401) return Status::error(url + " refused the cluster's secret (401)");
  if (status != 200)
    return Status::error(url + " answered " + std::to_string(status) + ": " + refusal.substr(0, 200));
  return {};
}

// Opens a received RocksDB database read-only and checks every block of its files against its
// checksum: a file changed after the peer wrote it fails here, not later under a read.
Status verify_files(const fs::path& dir, std::string_view what) {
  rocksdb::Options options;
  options.info_log = rocksdb_logger("join");
  rocksdb::DB* raw = nullptr;
  if (const auto s = rocksdb::DB::OpenForReadOnly(options, dir.string(), &raw); !s.ok())
    return Status::error("the " + std::string(what) + " do not open: " + s.ToString());
  const std::unique_ptr<rocksdb::DB> db(raw);
  if (const auto s = db->VerifyChecksum(); !s.ok())
    return Status::error("the " + std::string(what) + " fail their checksums: " + s.ToString());
  return {};
}

// The checks of a received checkpoint (see join.h); `joined` gets what they learn.
Status check(const JoinOptions& o, const CheckpointManifest& m, EventLog& log, Joined& joined) {
  if (m.topic != o.topic)
    return Status::error("the checkpoint is of the topic " + m.topic + ", this node's log is " + o.topic);
  if (m.partitions != log.partitions())
    return Status::error("the checkpoint is of " + std::to_string(m.partitions) +
                         " partitions, the log has " + std::to_string(log.partitions()));
  const fs::path views_dir = o.scratch / "views";
  if (!fs::exists(views_dir / "CURRENT")) return Status::error("the checkpoint holds no views");
  if (auto s = verify_files(views_dir, "views"); !s) return s;
  if (fs::exists(o.scratch / "history" / "CURRENT"))
    if (auto s = verify_files(o.scratch / "history", "history index"); !s) return s;
  {
    auto views = Views::open(views_dir.string(), log.partitions());
    if (!views) return Status::error("the checkpoint's views: " + views.status().message());
    auto positions = views.value()->positions();
    if (!positions) return Status::error("the checkpoint's views: " + positions.status().message());
    std::vector<FollowCursor> cursors;
    for (const ViewPosition& p : positions.value()) {
      cursors.push_back(FollowCursor{ChainFollower(p.last_seq, p.last_hash, p.epoch), p.next_offset, false});
      joined.events += p.last_seq.value;
    }
    if (auto s = check_positions(log, cursors); !s)
      return Status::error("the checkpoint's views: " + s.message());
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(o.scratch / "snapshots", ec)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    auto snapshot = decode_snapshot(bytes, log.partitions());
    if (!snapshot) return Status::error("the checkpoint's snapshot: " + snapshot.status().message());
    if (auto s = check_positions(log, snapshot->cursors); !s)
      return Status::error("the checkpoint's snapshot: " + s.message());
  }
  if (ec) return Status::error("the checkpoint's snapshots: " + ec.message());
  return {};
}

// Moves the checked copy into the data dir: the views last, so that a start cut short before
// them finds no views and rebuilds them from the log (what it moved first is checked again at
// every start: the snapshot against the log, the history index's head by the writer's replay).
Status install(const JoinOptions& o) {
  for (const std::string_view part : {"snapshots", "history", "views"}) {
    const fs::path from = o.scratch / part;
    const fs::path to = o.data_dir / part;
    std::error_code ec;
    if (!fs::exists(from, ec)) continue;
    if (fs::exists(to, ec)) return Status::error(to.string() + " appeared meanwhile");
    fs::rename(from, to, ec);
    if (ec) return Status::error("cannot move " + from.string() + " to " + to.string() + ": " + ec.message());
  }
  return sync_directory(o.data_dir);
}

}  // namespace

bool data_dir_is_new(const fs::path& data_dir) {
  std::error_code ec;
  for (const std::string_view part : {"views", "history", "snapshots"})
    if (fs::exists(data_dir / part, ec) || ec) return false;
  return true;
}

Result<Joined> join_through_checkpoint(const JoinOptions& o, EventLog& log) {
  KOBO_ASSERT(!o.scratch.empty() && !o.data_dir.empty(), "a checkpoint is received beside the data dir");
  const auto began = Clock::now();
  struct Scratch {  // removed whatever happens
    const fs::path& dir;
    ~Scratch() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } scratch{o.scratch};
  Status last = Status::error("no peer to take a checkpoint from");
  for (;;) {
    bool any_busy = false;
    for (const std::string& url : o.peers) {
      std::error_code ec;
      fs::remove_all(o.scratch, ec);
      fs::create_directories(o.scratch, ec);
      if (ec) return Status::error("cannot create " + o.scratch.string() + ": " + ec.message());
      log::info("cluster: taking a peer's checkpoint", {{"peer", url}});
      CheckpointSink sink(o.scratch);
      bool busy = false;
      Status fetched = fetch(o, url, sink, busy);
      if (!fetched && fetched.kind() == ErrorKind::unavailable) {
        log::warn("cluster: a peer gave no checkpoint; asking the next",
                  {{"peer", url}, {"why", fetched.message()}});
        any_busy = any_busy || busy;
        last = fetched;
        continue;
      }
      if (!fetched) return fetched;
      auto manifest = sink.finish();
      if (!manifest) return manifest.status();
      Joined joined{url, manifest->node_id, manifest->files.size(), manifest->bytes()};
      joined.received_seconds = std::chrono::duration<double>(Clock::now() - began).count();
      if (auto s = check(o, manifest.value(), log, joined); !s) return s;
      if (auto s = install(o); !s) return s;
      joined.seconds = std::chrono::duration<double>(Clock::now() - began).count();
      return joined;
    }
    // A peer busy with another node's copy (two nodes added at once) is asked again, for a while:
    // a copy takes seconds, a replay of the topic far longer.
    if (!any_busy || Clock::now() + kBusyRetry > began + o.busy_wait) return last;
    std::this_thread::sleep_for(kBusyRetry);
  }
}

}  // namespace kobo
