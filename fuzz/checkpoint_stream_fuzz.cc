// The checkpoint stream a joining cluster node receives from a peer (query-api/checkpoint_stream.h)
// on arbitrary bytes, fed in pieces whose sizes the input's first byte picks: the sink never
// crashes, never writes outside its root, and whatever it accepts as whole has every file the
// manifest lists, at its size. decode_manifest meets the same bytes: whatever decodes re-encodes
// to the same manifest.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#include "query-api/checkpoint_stream.h"

namespace {

namespace fs = std::filesystem;

void require(bool ok) {
  if (!ok) std::abort();
}

// A fresh root per input, under TMPDIR (fuzz/run.sh gives each target its own).
fs::path fresh_root() {
  static const fs::path base =
      fs::temp_directory_path() / ("kobo-fuzz-checkpoint-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(base, ec);
  return base / "join";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (auto m = kobo::decode_manifest(bytes); m.ok())
    require(kobo::decode_manifest(kobo::encode_manifest(m.value())).value() == m.value());
  if (bytes.empty()) return 0;
  const std::size_t piece = 1 + static_cast<unsigned char>(bytes.front()) * 7;
  const std::string_view stream = bytes.substr(1);
  const fs::path root = fresh_root();
  std::error_code ec;
  fs::create_directories(root, ec);
  require(!ec);
  {
    kobo::CheckpointSink sink(root);
    bool failed = false;
    for (std::size_t at = 0; at < stream.size() && !failed; at += piece)
      failed = !sink.feed(stream.substr(at, piece)).ok();
    if (auto m = sink.finish(); m.ok()) {
      require(!failed);
      for (const kobo::CheckpointFile& f : m.value().files)
        require(fs::file_size(root / f.path, ec) == f.size && !ec);
    }
  }
  // Nothing beside the root: every path stayed inside it.
  for (const auto& entry : fs::directory_iterator(root.parent_path(), ec)) require(entry.path() == root);
  return 0;
}
