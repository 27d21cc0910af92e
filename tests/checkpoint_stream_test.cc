// The checkpoint stream (query-api/checkpoint_stream.h): what a peer sends a joining node comes
// out whole on the other side, in any piece sizes, and a stream that is cut short, changed on
// the way, or names a file outside its root is refused before anything of it is trusted.
#include "query-api/checkpoint_stream.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iterator>

#include "common/varint.h"
#include "tests/support/scratch_dir.h"

namespace kobo {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A root with a file in each part, one of them empty and one larger than a piece.
CheckpointManifest make_root(const fs::path& root) {
  std::string big(kCheckpointPieceBytes + 12'345, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7919 % 251);
  write(root / "views" / "000012.sst", big);
  write(root / "views" / "CURRENT", "MANIFEST-000005\n");
  write(root / "history" / "OPTIONS-000007", "");
  write(root / "snapshots" / "snapshot-00000000000000001000.bin", "KOBOSNAP...");
  auto m = list_checkpoint(root, "kobo.ledger.events", 6, "n1");
  EXPECT_TRUE(m.ok());
  return m.value();
}

// The whole stream of `root`, as the peer sends it.
std::string stream_of(const fs::path& root, const CheckpointManifest& m) {
  CheckpointSource source(root, m);
  std::string out;
  for (;;) {
    auto more = source.next(out);
    EXPECT_TRUE(more.ok());
    if (!more.ok() || !more.value()) return out;
  }
}

// Feeds `bytes` in pieces of `piece` bytes; the first error, or finish()'s.
Result<CheckpointManifest> receive(const fs::path& root, std::string_view bytes, std::size_t piece) {
  CheckpointSink sink(root);
  for (std::size_t at = 0; at < bytes.size(); at += piece)
    if (auto s = sink.feed(bytes.substr(at, piece)); !s) return s;
  return sink.finish();
}

TEST(CheckpointStream, CarriesEveryFileWholeInAnyPieceSizes) {
  testing::ScratchDir dir("checkpoint-stream", testing::ScratchDir::Keep::on_failure);
  const fs::path from = dir.path() / "from";
  const CheckpointManifest m = make_root(from);
  ASSERT_EQ(m.files.size(), 4u);
  EXPECT_EQ(m.files[0].path, "history/OPTIONS-000007");  // sorted by path
  const std::string bytes = stream_of(from, m);
  ASSERT_TRUE(bytes.starts_with(kCheckpointMagic));
  int n = 0;
  for (const std::size_t piece : {std::size_t{1} << 20, std::size_t{4'093}, bytes.size()}) {
    const fs::path to = dir.path() / ("to-" + std::to_string(n++));
    auto got = receive(to, bytes, piece);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(got.value(), m);
    for (const CheckpointFile& f : m.files) EXPECT_EQ(read(to / f.path), read(from / f.path)) << f.path;
  }
}

// The refusals, in the order a stream meets them.
TEST(CheckpointStream, RefusesAStreamThatIsNotWholeOrNotAsSent) {
  testing::ScratchDir dir("checkpoint-stream", testing::ScratchDir::Keep::on_failure);
  const fs::path from = dir.path() / "from";
  const CheckpointManifest m = make_root(from);
  const std::string good = stream_of(from, m);
  const std::size_t head = kCheckpointMagic.size() + 4 + encode_manifest(m).size();
  // A stream's head with `other` as its manifest, encoded here: encode_manifest() refuses to
  // write what a peer of ours never sends.
  auto with_manifest = [](const CheckpointManifest& other) {
    std::string manifest;
    put_length_prefixed(manifest, other.topic);
    put_varint(manifest, other.partitions);
    put_length_prefixed(manifest, other.node_id);
    put_varint(manifest, other.files.size());
    for (const CheckpointFile& f : other.files) {
      put_length_prefixed(manifest, f.path);
      put_varint(manifest, f.size);
    }
    std::string out(kCheckpointMagic);
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((manifest.size() >> (8 * i)) & 0xff));
    return out + manifest;
  };
  struct Row {
    std::string what;
    std::function<std::string()> bytes;
    std::string error;  // what the refusal says, after "the checkpoint stream is refused: "
  };
  const std::vector<Row> rows{
      {"another format", [&] { return "KOBOCKP2" + good.substr(8); },
       "it does not start as a checkpoint stream"},
      {"a manifest of no bytes", [&] { return std::string(kCheckpointMagic) + std::string(4, '\0'); },
       "its manifest's length is out of range"},
      {"a path outside the root",
       [&] {
         CheckpointManifest bad = m;
         bad.files[0].path = "views/..";
         return with_manifest(bad);
       },
       "the path views/.. names no plain file of its folder"},
      {"a path in another folder",
       [&] {
         CheckpointManifest bad = m;
         bad.files[0].path = "log/000001.sst";
         return with_manifest(bad);
       },
       "the path log/000001.sst is not in views/, history/ or snapshots/"},
      {"a file listed twice",
       [&] {
         CheckpointManifest bad = m;
         bad.files[1] = bad.files[0];
         return with_manifest(bad);
       },
       "the manifest lists history/OPTIONS-000007 twice"},
      {"cut before its manifest", [&] { return good.substr(0, 10); },
       "it ended after 10 bytes, before its manifest"},
      {"cut in a file", [&] { return good.substr(0, head + 100); }, "it ended after"},
      {"cut before its digest", [&] { return good.substr(0, good.size() - 32); }, "before its digest"},
      {"a byte changed in a file",
       [&] {
         std::string bad = good;
         bad[head + 50] = static_cast<char>(bad[head + 50] ^ 1);
         return bad;
       },
       "its digest does not hold"},
      {"bytes past its digest", [&] { return good + "x"; }, "it has bytes past its digest"},
  };
  int n = 0;
  for (const Row& row : rows) {
    auto got = receive(dir.path() / ("to-" + std::to_string(n++)), row.bytes(), 1'000);
    ASSERT_FALSE(got.ok()) << row.what;
    EXPECT_NE(got.status().message().find(row.error), std::string::npos)
        << row.what << ": " << got.status().message();
  }
}

TEST(CheckpointStream, APathIsAPlainFileOfOneOfItsThreeFolders) {
  for (const char* ok :
       {"views/CURRENT", "history/000012.sst", "snapshots/snapshot-00000000000000000001.bin"})
    EXPECT_TRUE(check_checkpoint_path(ok).ok()) << ok;
  for (const char* bad : {"CURRENT", "views/", "views/.", "views/..", "views/a/b", "../views/x", "/views/x",
                          "webhooks/x", "views/a b", "views/x\n"})
    EXPECT_FALSE(check_checkpoint_path(bad).ok()) << bad;
  EXPECT_FALSE(check_checkpoint_path("views/" + std::string(kCheckpointNameBytesMax + 1, 'a')).ok());
}

}  // namespace
}  // namespace kobo
