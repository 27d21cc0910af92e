#pragma once
// The checkpoint stream: the body of GET /v1/cluster/checkpoint, a peer's copy of what a new node
// starts from (its views, its writer's history index and newest snapshot) as files under one
// root, framed so that the receiver checks every length before it writes a byte
// (docs/architecture.md, "A new node: a peer's checkpoint"):
//
//   "KOBOCKP1"        magic and format
//   u32, LE           the manifest's length, at most kManifestBytesMax
//   manifest          length-prefixed (varint) topic and node id, varint partitions and file
//                     count, then per file its path ("views/000012.sst") and its size
//   the files' bytes  in the manifest's order, each exactly its size
//   32 bytes          SHA-256 of everything before them
//
// A path is two components: views, history or snapshots, then a name of [A-Za-z0-9._-] that is
// neither "." nor "..", so nothing outside the root can be named. The digest makes a stream
// that was cut short, or changed on the way, fail as a whole; what the files say is checked
// after (RocksDB's block checksums, the positions against the log: query-api/join.h).
//
// CheckpointSource (the peer's) reads the files a piece at a time for the HTTP body.
// CheckpointSink (the new node's) takes the bytes as they come and writes the files under its
// root, refusing at the first thing that is wrong (a bad magic, a manifest that does not decode
// or breaks a limit, bytes past the end); finish() refuses a stream that ended short or whose
// digest does not hold. Neither is thread-safe: one thread at a time.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/sha256_stream.h"

namespace kobo {

inline constexpr std::string_view kCheckpointMagic = "KOBOCKP1";
inline constexpr std::size_t kManifestBytesMax = std::size_t{4} << 20;
inline constexpr std::size_t kCheckpointFilesMax = 100'000;
inline constexpr std::size_t kCheckpointNameBytesMax = 255;
inline constexpr std::uint64_t kCheckpointBytesMax = std::uint64_t{1} << 40;  // 1 TiB
inline constexpr std::size_t kCheckpointPieceBytes = std::size_t{1} << 20;    // a body piece

struct CheckpointFile {
  std::string path;  // relative to the root: "views/000012.sst"
  std::uint64_t size = 0;
  bool operator==(const CheckpointFile&) const = default;
};

struct CheckpointManifest {
  std::string topic;  // the log the copy is of
  std::uint32_t partitions = 0;
  std::string node_id;  // the peer that made it
  std::vector<CheckpointFile> files;
  std::uint64_t bytes() const;  // of every file
  bool operator==(const CheckpointManifest&) const = default;
};

// Whether `path` is one a checkpoint may hold (see above); the reason when not.
[[nodiscard]] Status check_checkpoint_path(std::string_view path);

// The manifest of every file under root/views, root/history and root/snapshots, sorted by path.
[[nodiscard]] Result<CheckpointManifest> list_checkpoint(const std::filesystem::path& root, std::string topic,
                                                         std::uint32_t partitions, std::string node_id);

[[nodiscard]] std::string encode_manifest(const CheckpointManifest& m);
// Checks every limit and path, and that no path comes twice.
[[nodiscard]] Result<CheckpointManifest> decode_manifest(std::string_view bytes);

// The peer's side: the stream of the files `manifest` lists under `root`.
class CheckpointSource {
 public:
  CheckpointSource(std::filesystem::path root, CheckpointManifest manifest);
  // Appends the next piece (at most about kCheckpointPieceBytes) to `out`; false once the
  // digest, the last piece, is appended. An error: a file could not be read as listed.
  [[nodiscard]] Result<bool> next(std::string& out);

 private:
  const std::filesystem::path root_;
  const CheckpointManifest manifest_;
  Sha256Stream digest_;
  bool head_sent_ = false;
  bool done_ = false;
  std::size_t file_ = 0;         // the file being sent
  std::uint64_t file_left_ = 0;  // its bytes still to send
  std::ifstream in_;
};

// The new node's side: writes what a stream holds under `root` (created; it should not exist).
class CheckpointSink {
 public:
  explicit CheckpointSink(std::filesystem::path root);
  ~CheckpointSink();
  CheckpointSink(const CheckpointSink&) = delete;
  CheckpointSink& operator=(const CheckpointSink&) = delete;

  // The next bytes of the stream. An error is for good: the stream is refused.
  [[nodiscard]] Status feed(std::string_view bytes);
  // The stream ended: its manifest when it was whole and its digest holds, every file written
  // and fsynced; else why not.
  [[nodiscard]] Result<CheckpointManifest> finish();
  // The manifest once it was read (before the files come), for a check of the disk's room.
  const std::optional<CheckpointManifest>& manifest() const { return manifest_; }
  std::uint64_t bytes_received() const { return received_; }

 private:
  enum class Stage : std::uint8_t { magic, manifest_length, manifest, files, digest, done };
  [[nodiscard]] Status fail(const std::string& why);
  [[nodiscard]] Status open_next_file();
  [[nodiscard]] Status close_file();

  const std::filesystem::path root_;
  Stage stage_ = Stage::magic;
  std::string buffer_;          // the part of a framing field read so far
  std::size_t want_ = 0;        // the framing field's length
  std::uint64_t received_ = 0;  // bytes fed
  Sha256Stream digest_;
  std::optional<CheckpointManifest> manifest_;
  std::size_t file_ = 0;
  std::uint64_t file_left_ = 0;
  int fd_ = -1;  // the file being written
  Status failed_;
};

}  // namespace kobo
