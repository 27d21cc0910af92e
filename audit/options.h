#pragma once
// What an audit is given besides the log (audit.h): the writer key to check the signed
// checkpoints with.
//
// Thread safety: values.

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

}  // namespace kobo::audit
