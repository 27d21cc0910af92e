#include "query-api/checkpoint_stream.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <set>

#include "common/assert.h"
#include "common/file.h"
#include "common/varint.h"

namespace kobo {

namespace fs = std::filesystem;

namespace {

constexpr std::array<std::string_view, 3> kParts{"views", "history", "snapshots"};
constexpr std::size_t kTopicBytesMax = 249;  // Kafka's own limit on a topic's name
constexpr std::size_t kNodeIdBytesMax = 64;
constexpr std::uint32_t kPartitionsMax = 1024;

bool name_character(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

void put_u32_le(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint32_t get_u32_le(std::string_view b) {
  KOBO_ASSERT(b.size() == 4, "a u32 is four bytes");
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[static_cast<std::size_t>(i)]);
  return v;
}

std::string as_bytes(const Sha256& d) {
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

}  // namespace

std::uint64_t CheckpointManifest::bytes() const {
  std::uint64_t n = 0;
  for (const CheckpointFile& f : files) n += f.size;
  return n;
}

Status check_checkpoint_path(std::string_view path) {
  const auto slash = path.find('/');
  if (slash == std::string_view::npos)
    return Status::error("the path " + std::string(path) + " has no folder");
  const std::string_view part = path.substr(0, slash);
  const std::string_view name = path.substr(slash + 1);
  if (std::find(kParts.begin(), kParts.end(), part) == kParts.end())
    return Status::error("the path " + std::string(path) + " is not in views/, history/ or snapshots/");
  if (name.empty() || name.size() > kCheckpointNameBytesMax || name == "." || name == ".." ||
      !std::all_of(name.begin(), name.end(), name_character))
    return Status::error("the path " + std::string(path) + " names no plain file of its folder");
  return {};
}

Result<CheckpointManifest> list_checkpoint(const fs::path& root, std::string topic, std::uint32_t partitions,
                                           std::string node_id) {
  CheckpointManifest m{std::move(topic), partitions, std::move(node_id), {}};
  for (const std::string_view part : kParts) {
    const fs::path dir = root / part;
    std::error_code ec;
    if (!fs::exists(dir, ec)) continue;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string path = std::string(part) + "/" + entry.path().filename().string();
      if (!entry.is_regular_file(ec)) return Status::error(path + " is not a plain file");
      const std::uint64_t size = entry.file_size(ec);
      if (ec) return Status::error(path + ": " + ec.message());
      m.files.push_back({path, size});
    }
    if (ec) return Status::error("list " + dir.string() + ": " + ec.message());
  }
  std::sort(m.files.begin(), m.files.end(),
            [](const CheckpointFile& a, const CheckpointFile& b) { return a.path < b.path; });
  for (const CheckpointFile& f : m.files)
    if (auto s = check_checkpoint_path(f.path); !s) return s;
  if (m.files.size() > kCheckpointFilesMax || m.bytes() > kCheckpointBytesMax)
    return Status::error("the checkpoint is larger than a stream may be");
  return m;
}

std::string encode_manifest(const CheckpointManifest& m) {
  std::string out;
  put_length_prefixed(out, m.topic);
  put_varint(out, m.partitions);
  put_length_prefixed(out, m.node_id);
  put_varint(out, m.files.size());
  for (const CheckpointFile& f : m.files) {
    KOBO_ASSERT(check_checkpoint_path(f.path).ok(), "a checkpoint lists only paths it may hold");
    put_length_prefixed(out, f.path);
    put_varint(out, f.size);
  }
  KOBO_ASSERT(out.size() <= kManifestBytesMax, "a manifest within its limit");
  return out;
}

Result<CheckpointManifest> decode_manifest(std::string_view bytes) {
  if (bytes.size() > kManifestBytesMax) return Status::error("the manifest is larger than its limit");
  VarintReader r(bytes);
  CheckpointManifest m;
  m.topic = std::string(r.length_prefixed());
  const std::uint64_t partitions = r.varint();
  m.node_id = std::string(r.length_prefixed());
  const std::uint64_t count = r.varint();
  if (!r.ok() || m.topic.empty() || m.topic.size() > kTopicBytesMax || m.node_id.size() > kNodeIdBytesMax ||
      partitions == 0 || partitions > kPartitionsMax || count > kCheckpointFilesMax)
    return Status::error("the manifest's head does not decode or breaks a limit");
  m.partitions = static_cast<std::uint32_t>(partitions);
  std::set<std::string_view> seen;
  std::uint64_t total = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::string_view path = r.length_prefixed();
    const std::uint64_t size = r.varint();
    if (!r.ok()) return Status::error("the manifest's file " + std::to_string(i) + " does not decode");
    if (auto s = check_checkpoint_path(path); !s) return s;
    if (!seen.insert(path).second) return Status::error("the manifest lists " + std::string(path) + " twice");
    if (size > kCheckpointBytesMax - total)
      return Status::error("the checkpoint is larger than a stream may be");
    total += size;
    m.files.push_back({std::string(path), size});
  }
  if (!r.done()) return Status::error("the manifest has bytes past its last file");
  KOBO_ASSERT(m.files.size() == count && m.bytes() == total, "a manifest decoded whole");
  return m;
}

// ---- CheckpointSource -------------------------------------------------------------------------

CheckpointSource::CheckpointSource(fs::path root, CheckpointManifest manifest)
    : root_(std::move(root)), manifest_(std::move(manifest)) {}

Result<bool> CheckpointSource::next(std::string& out) {
  KOBO_ASSERT(!done_, "nothing is asked of a stream past its end");
  if (!head_sent_) {
    const std::string manifest = encode_manifest(manifest_);
    std::string head(kCheckpointMagic);
    put_u32_le(head, static_cast<std::uint32_t>(manifest.size()));
    head += manifest;
    digest_.update(head);
    out += head;
    head_sent_ = true;
    return true;
  }
  // The next file with bytes to send (an empty one is all in the manifest).
  while (file_left_ == 0 && file_ < manifest_.files.size()) {
    if (in_.is_open()) {
      in_.close();
      ++file_;
      continue;
    }
    const CheckpointFile& f = manifest_.files[file_];
    in_.open(root_ / f.path, std::ios::binary);
    if (!in_) return Status::error("checkpoint: cannot read " + f.path);
    file_left_ = f.size;
  }
  if (file_ < manifest_.files.size()) {
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(file_left_, kCheckpointPieceBytes));
    const std::size_t at = out.size();
    out.resize(at + n);
    in_.read(out.data() + at, static_cast<std::streamsize>(n));
    if (static_cast<std::size_t>(in_.gcount()) != n)
      return Status::error("checkpoint: " + manifest_.files[file_].path + " is shorter than listed");
    digest_.update(std::string_view(out).substr(at));
    file_left_ -= n;
    return true;
  }
  out += as_bytes(digest_.finish());
  done_ = true;
  return false;
}

// ---- CheckpointSink ---------------------------------------------------------------------------

CheckpointSink::CheckpointSink(fs::path root) : root_(std::move(root)), want_(kCheckpointMagic.size()) {}

CheckpointSink::~CheckpointSink() {
  if (fd_ >= 0) ::close(fd_);
}

Status CheckpointSink::fail(const std::string& why) {
  if (failed_.ok()) failed_ = Status::error("the checkpoint stream is refused: " + why);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  return failed_;
}

Status CheckpointSink::open_next_file() {
  KOBO_ASSERT(manifest_ && fd_ < 0 && file_left_ == 0, "a file is opened once the one before is closed");
  while (file_ < manifest_->files.size()) {
    const CheckpointFile& f = manifest_->files[file_];
    const fs::path path = root_ / f.path;
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0) return fail("cannot create " + path.string() + ": " + error_text(errno));
    file_left_ = f.size;
    if (file_left_ > 0) return {};
    if (auto s = close_file(); !s) return s;
  }
  stage_ = Stage::digest;
  want_ = 32;
  return {};
}

Status CheckpointSink::close_file() {
  KOBO_ASSERT(fd_ >= 0 && file_left_ == 0, "a file is closed once written whole");
  const int synced = ::fsync(fd_);
  const int closed = ::close(fd_);
  fd_ = -1;
  if (synced != 0 || closed != 0)
    return fail("cannot write " + manifest_->files[file_].path + ": " + error_text(errno));
  ++file_;
  return {};
}

Status CheckpointSink::feed(std::string_view bytes) {
  if (!failed_.ok()) return failed_;
  received_ += bytes.size();
  while (!bytes.empty()) {
    if (stage_ == Stage::done) return fail("it has bytes past its digest");
    if (stage_ == Stage::files) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(file_left_, bytes.size()));
      for (std::size_t written = 0; written < n;) {
        const ssize_t w = ::write(fd_, bytes.data() + written, n - written);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return fail("cannot write " + manifest_->files[file_].path + ": " + error_text(errno));
        written += static_cast<std::size_t>(w);
      }
      digest_.update(bytes.substr(0, n));
      bytes.remove_prefix(n);
      file_left_ -= n;
      if (file_left_ == 0) {
        if (auto s = close_file(); !s) return s;
        if (auto s = open_next_file(); !s) return s;
      }
      continue;
    }
    // A framing field: gathered whole, then read.
    const std::size_t n = std::min(want_ - buffer_.size(), bytes.size());
    buffer_.append(bytes.substr(0, n));
    if (stage_ != Stage::digest) digest_.update(bytes.substr(0, n));
    bytes.remove_prefix(n);
    if (buffer_.size() < want_) continue;
    const std::string field = std::move(buffer_);
    buffer_.clear();
    switch (stage_) {
      case Stage::magic:
        if (field != kCheckpointMagic) return fail("it does not start as a checkpoint stream of this format");
        stage_ = Stage::manifest_length;
        want_ = 4;
        break;
      case Stage::manifest_length:
        want_ = get_u32_le(field);
        if (want_ == 0 || want_ > kManifestBytesMax) return fail("its manifest's length is out of range");
        stage_ = Stage::manifest;
        break;
      case Stage::manifest: {
        auto m = decode_manifest(field);
        if (!m) return fail(m.status().message());
        manifest_ = std::move(m).value();
        for (const std::string_view part : kParts) {
          std::error_code ec;
          fs::create_directories(root_ / part, ec);
          if (ec) return fail("cannot create " + (root_ / part).string() + ": " + ec.message());
        }
        stage_ = Stage::files;
        if (auto s = open_next_file(); !s) return s;
        break;
      }
      case Stage::digest:
        if (field != as_bytes(digest_.finish()))
          return fail("its digest does not hold: it changed on the way");
        stage_ = Stage::done;
        break;
      case Stage::files:
      case Stage::done:
        KOBO_ASSERT(false, "files and the end are not framing fields");
    }
  }
  return {};
}

Result<CheckpointManifest> CheckpointSink::finish() {
  if (!failed_.ok()) return failed_;
  if (stage_ != Stage::done) {
    const std::string what = !manifest_               ? "before its manifest"
                             : stage_ == Stage::files ? "in " + manifest_->files[file_].path + ", " +
                                                            std::to_string(file_left_) + " bytes short"
                                                      : "before its digest";
    return fail("it ended after " + std::to_string(received_) + " bytes, " + what);
  }
  KOBO_ASSERT(manifest_ && fd_ < 0, "a whole stream has its manifest and no file open");
  for (const std::string_view part : kParts)
    if (auto s = sync_directory(root_ / part); !s) return fail(s.message());
  if (auto s = sync_directory(root_); !s) return fail(s.message());
  return *manifest_;
}

}  // namespace kobo
