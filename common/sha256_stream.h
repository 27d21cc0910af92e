#pragma once
// SHA-256 of bytes that come a piece at a time: a stream too large to hold (a checkpoint a new
// cluster node receives, query-api/checkpoint_stream.h). Beside common/crypto.h's one-shot digests,
// through the same OpenSSL digest.

#include <string_view>

#include "common/crypto.h"

namespace kobo {

// update() each piece in order, then finish() once. Not thread-safe: one thread at a time.
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;
  void update(std::string_view piece);
  Sha256 finish();

 private:
  void* ctx_;  // EVP_MD_CTX
  bool finished_ = false;
};

}  // namespace kobo
