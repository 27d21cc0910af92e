#pragma once
// What an audit is given besides the log (audit.h): the writer key to check the signed
// checkpoints with, and where it keeps what it checks the past against.
//
// Thread safety: values.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "audit/report.h"
#include "common/time.h"

namespace kobo::audit {

// What `kobo audit --verify-key` checks the checkpoints with.
struct SignatureOptions {
  std::string public_key;  // the writer's Ed25519 public key, 64 hex digits
  UnixMs now = 0;          // the audit's clock
  // An unsigned tail whose last checkpoint is older than this is a violation (the writer signs
  // every `--checkpoint-seconds` and as it stops): allow that interval and some margin.
  UnixMs unsigned_max_age_ms = 60'000;
  std::vector<VerifiedCheckpoint> verified_before;
};

struct AuditOptions {
  std::optional<SignatureOptions> signatures;  // with the writer's key: its checkpoints are checked too
  // What grows with history (every id, number and reference used; the records that have ended)
  // the audit keeps in a scratch index on disk (docs/architecture.md section 5a, "The audit"), in
  // a directory it makes under this one and removes when it is done. Empty: the system's
  // temporary directory ($TMPDIR, else /tmp).
  std::filesystem::path scratch_dir;
  // The scratch index's block cache and memtables together: with the wallets, what bounds the
  // audit's memory at any log size.
  std::size_t scratch_cache_bytes = std::size_t{32} << 20;
};

}  // namespace kobo::audit
