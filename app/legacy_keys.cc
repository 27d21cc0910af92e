#include "app/legacy_keys.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/crypto.h"
#include "common/file.h"
#include "common/log.h"
#include "events/keys.h"
#include "webhooks/webhooks.h"

namespace kobo {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::string_view kLegacyDir = "signing-keys";
constexpr std::string_view kLegacyCredentials = "credentials.json";

struct PlainKey {
  fs::path file;
  bool live = false;
  std::string key;
};

// The keys of a signing-keys/<account>.json ({"test","live"}) or of credentials.json
// ({"testSecretKey","liveSecretKey",…}); none when it is neither.
std::vector<PlainKey> read_file(const fs::path& path) {
  std::ifstream in(path);
  const json j = json::parse(in, nullptr, false);
  std::vector<PlainKey> out;
  if (!j.is_object()) return out;
  for (const bool live : {false, true})
    for (const char* member : {live ? "live" : "test", live ? "liveSecretKey" : "testSecretKey"})
      if (j.contains(member) && j.at(member).is_string())
        out.push_back({path, live, j.at(member).get<std::string>()});
  return out;
}

Status caught_up(const Ledger& ledger, const Projector& projector) {
  for (std::uint32_t p = 0; p < ledger.config().partitions; ++p)
    if (!projector.wait_applied(Partition(p), ledger.durable_seq(Partition(p)), std::chrono::seconds(5)))
      return Status::error("the views have not caught up with the log", ErrorKind::unavailable);
  return {};
}

// Seals `k` when it is its account's current key and not sealed yet.
Status seal(const PlainKey& k, Ledger& ledger, const Views& views, const MasterKey& master) {
  const std::string hash = sha256_hex(k.key);
  const auto owner = views.key_owner(hash);
  if (!owner) return owner.status();
  if (!owner.value() || owner.value()->live != k.live) {
    log::warn("a plaintext signing key of an older kobo names no key of the log: removed unsealed",
              {{"file", k.file.string()}});
    return {};
  }
  const KeyOwner& o = *owner.value();
  const auto keys = views.account_keys(o.account, k.live);
  if (!keys) return keys.status();
  if (!keys.value() || keys.value()->keys.empty() || keys.value()->keys.front().hash != hash)
    return {};  // not the current key
  const std::string& held = keys.value()->signing_key;
  if (!held.empty() && master.unwrap(held, signing_key_context(o.account, k.live, key_id_of_hash(hash))).ok())
    return {};  // sealed already, under this master key
  auto wrapped = wrap_signing_key(master, o.account, k.live, k.key);
  if (!wrapped) return wrapped.status();
  const Outcome sealed =
      ledger.execute(SealSigningKey{Caller{o.business, o.account, k.live}, std::move(wrapped).value()});
  if (!sealed.ok())
    return Status::error(
        "sealing a signing key failed: " + std::string(to_string(sealed.rejection)) + " " + sealed.detail,
        sealed.rejection == Rejection::unavailable || sealed.rejection == Rejection::storage_full
            ? ErrorKind::unavailable
            : ErrorKind::other);
  log::info("sealed a signing key of an older kobo into the log",
            {{"account", o.account}, {"live", k.live}, {"keyId", key_id_of_hash(hash)}});
  return {};
}

}  // namespace

Status seal_legacy_signing_keys(const fs::path& data_dir, Ledger& ledger, const Views& views,
                                const Projector& projector, const MasterKey& master) {
  const fs::path dir = data_dir / kLegacyDir;
  const fs::path credentials = data_dir / kLegacyCredentials;
  std::error_code ec;
  std::vector<fs::path> files;
  if (fs::is_directory(dir, ec)) {
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.path().extension() == ".json") files.push_back(entry.path());
    if (ec) return Status::error("cannot list " + dir.string() + ": " + ec.message());
  }
  if (fs::exists(credentials, ec)) files.push_back(credentials);
  if (files.empty()) {
    if (fs::is_directory(dir, ec)) fs::remove(dir, ec);
    return {};
  }
  if (auto s = caught_up(ledger, projector); !s) return s;
  for (const fs::path& file : files) {
    for (const PlainKey& k : read_file(file))
      if (auto s = seal(k, ledger, views, master); !s) return s;
    // Sealed (durably: execute() answers once the event is in the log) or of no use: gone.
    if (!fs::remove(file, ec) && ec)
      return Status::error("cannot remove " + file.string() + ": " + ec.message());
    if (file == credentials)
      log::warn(
          "removed credentials.json: kobo keeps no secret key on disk any more. Its keys still work; "
          "if no copy of them was kept elsewhere, the admin issues new ones with POST "
          "/v1/admin/accounts/{accountId}/keys/roll (docs/security.md)",
          {{"file", file.string()}});
  }
  fs::remove(dir, ec);  // when empty
  if (auto s = sync_directory(data_dir); !s) return s;
  log::info("no plaintext secret keys are left in the data dir");
  return {};
}

}  // namespace kobo
