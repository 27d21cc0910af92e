#pragma once
// Secret keys an older kobo kept in plaintext in the data dir, sealed into the log and removed
// (docs/security.md, "Upgrading a data dir"): <data-dir>/signing-keys/<account>.json, the copy of
// each account's keys that webhooks were signed with before envelope encryption, and
// <data-dir>/credentials.json, the first business's keys.

#include <filesystem>

#include "command/ledger.h"
#include "common/master_key.h"
#include "common/result.h"
#include "projection/projector.h"
#include "projection/views.h"

namespace kobo {

// For every plaintext key that is its account's current key and not sealed under `master` (not at
// all, in a log of an older kobo, or under another master key), appends a SigningKeySealed (the
// key wrapped under `master`), then removes the files. A file whose account
// the log does not have (an older kobo wrote it before the account was appended, and stopped in
// between) or whose key is no longer current is removed without sealing: nothing signs with it.
// Waits for the views to catch up with the log first; ErrorKind::unavailable while they have
// not, or while the writer cannot append (the start step tries again).
[[nodiscard]] Status seal_legacy_signing_keys(const std::filesystem::path& data_dir, Ledger& ledger,
                                              const Views& views, const Projector& projector,
                                              const MasterKey& master);

}  // namespace kobo
