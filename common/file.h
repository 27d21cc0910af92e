#pragma once
// Files that must be whole or absent (credentials.json, the signing keys), and the small
// POSIX file helpers the components share.

#include <filesystem>
#include <string>
#include <string_view>

#include "common/result.h"

namespace kobo {

// Replaces `path` with `contents` atomically and durably: a new file beside it (same directory,
// so the rename cannot cross file systems) created with O_CREAT|O_EXCL and `mode` from its first
// byte (and exactly `mode`, whatever the umask), written, fsynced, renamed over `path`, then the
// directory fsynced so that the rename survives a crash. Readers see the old file or the new
// one, never part of one. On an error the temporary file is removed and `path` is unchanged.
// Thread-safe: concurrent writers of one path each use their own temporary file; the last
// rename wins.
[[nodiscard]] Status write_file_atomically(const std::filesystem::path& path, std::string_view contents,
                                           unsigned mode = 0600);

// fsyncs the directory `dir`, so that what was created, renamed or removed in it survives a crash.
[[nodiscard]] Status sync_directory(const std::filesystem::path& dir);

// What errno value `errnum` means, as strerror() says it, but thread-safe.
std::string error_text(int errnum);

}  // namespace kobo
