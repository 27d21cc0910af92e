#pragma once
// Signed checkpoints of a partition's chain (docs/security.md, "A log nobody can forge").
//
// The hash chain (events/chain.h) shows that nothing changed between two readings of the log,
// but anyone who can append to the log can extend it, or rewrite it from the genesis. So the
// writer signs, with an Ed25519 key only it holds, the head of each partition's chain it writes:
// a ChainCheckpointed event right after every WriterStarted and then every N events or T
// seconds. Its signature covers the log's name, the partition, the epoch, the seq and hash of
// the event before it (its prevHash, which commits to every earlier event) and its own time, so
// it cannot be replayed into another log, partition, generation or place in the chain.
// `kobo audit --verify-key` checks every checkpoint with the writer's public key: an event no
// later checkpoint covers was not written by the key's holder, or not yet signed.
//
// The signer is an interface so that a KMS or HSM can hold the key; KeyFileSigner, the one
// implementation here, reads a PEM private key (`openssl genpkey -algorithm ed25519`).
// Thread safety: the functions are thread-safe; a signer is used by the writer thread only.

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"
#include "events/event.h"

namespace kobo {

// What signs checkpoints: the writer's key, wherever it is kept.
class CheckpointSigner {
 public:
  virtual ~CheckpointSigner() = default;
  // The public key, as the hex of its 32 raw bytes: what a checkpoint names as `key`.
  virtual const std::string& public_key() const = 0;
  // The Ed25519 signature of `message`, as the hex of its 64 bytes.
  [[nodiscard]] virtual Result<std::string> sign(std::string_view message) = 0;
};

// A signer over a PEM file holding an Ed25519 private key (`--writer-key-file`).
[[nodiscard]] Result<std::shared_ptr<CheckpointSigner>> open_key_file_signer(
    const std::filesystem::path& pem);

// A new Ed25519 private key in PEM (tests, and the docs' `openssl genpkey` equivalent).
std::string new_ed25519_private_key_pem();
// The public key of a PEM private key, as 64 hex digits.
[[nodiscard]] Result<std::string> public_key_of_pem(std::string_view private_key_pem);

// The writer's public key as `kobo audit --verify-key` takes it: 64 hex digits, a PEM public key
// (`openssl pkey -pubout`), or a file holding either. Answers the 64 hex digits.
[[nodiscard]] Result<std::string> read_public_key(std::string_view file_or_text);

// The bytes a checkpoint's signature covers: e's place (partition, epoch, seq - 1 and prevHash:
// the head it signs), its time, and the checkpoint's log, key and next key.
std::string checkpoint_message(const Event& e, const ChainCheckpointed& c);

// Fills e's ChainCheckpointed signature with `signer` (e must be placed: partition, seq, epoch,
// time and prevHash set, and not yet sealed).
[[nodiscard]] Status sign_checkpoint(CheckpointSigner& signer, Event& e);

// Whether e's checkpoint is signed by `public_key` (64 hex digits) over e's place.
bool checkpoint_verifies(const Event& e, const ChainCheckpointed& c, std::string_view public_key);

}  // namespace kobo
