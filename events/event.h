#pragma once
// The event envelope (DESIGN section 4) and its JSON codec.
//
// The wire form of an event is canonical JSON: object keys sorted, no white space, integers
// only, prefixed by its "hash" member. `hash` is the hex SHA-256 of `prevHash` (hex) followed by
// the canonical JSON of the event without its hash, so the chain of a partition can be verified
// from the bytes alone. Schemas: schemas/events/*.schema.json.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/time.h"
#include "events/types.h"

namespace kobo {

enum class EventType {
  writer_started,              // a writer took the partition; data: {epoch}
  business_created,            // data: {business}
  account_created,             // data: {account, secretKeyHashes}
  account_updated,             // data: {accountId, changes: {webhooks?, live?}, updatedAt}
  wallet_created,              // data: {wallet}
  bank_account_added,          // data: {bankAccount}
  collection_created,          // data: {collection}
  collection_status_changed,   // data: {publicId, from, status, updatedAt}
  debited,                     // data: {ledgerAccount, amount, balance, transaction?}
  credited,                    // data: {ledgerAccount, amount, balance, transaction?}
  transaction_status_changed,  // data: {publicId, from, status, updatedAt}
};

std::string_view to_string(EventType t);
std::optional<EventType> event_type_from_string(std::string_view s);

inline constexpr int kEventSchemaVersion = 1;
inline const std::string kGenesisHash(64, '0');

struct Event {
  Partition partition{0};
  Seq seq{0};
  Epoch epoch{0};
  // The command this event belongs to: the seq of its first event and how many it has.
  // A reader applies a command's events together or not at all.
  Seq command_seq{0};
  std::uint32_t command_size = 1;
  EventType type = EventType::writer_started;
  int schema_version = kEventSchemaVersion;
  std::string business;  // "biz-…"; empty for partition-level events (writer_started)
  bool live = false;
  UnixMs time = 0;
  nlohmann::json data = nlohmann::json::object();
  std::string prev_hash;  // hex
  std::string hash;       // hex; set by seal()

  bool last_of_command() const { return seq.value == command_seq.value + command_size - 1; }
};

// Computes `hash` from `prev_hash` and the rest, and returns the wire form.
std::string seal(Event& e);

// Parses the wire form and checks its hash (over the bytes as they are) and envelope. Never
// trusts the input: a corrupt or edited event is an error, not a crash.
Result<Event> decode_event(std::string_view bytes);

// decode_event without the hash check: the event as written, for `kobo audit`, which reports an
// edited event and goes on reading. Nothing else may trust what it returns.
Result<Event> decode_event_unverified(std::string_view bytes);

// Whether `bytes`, which decoded to `e`, are exactly the wire form seal() writes for it. Only a
// writer that is not ours could write an event whose hash holds but whose bytes are not
// canonical, so the hot readers skip this re-encoding and `kobo audit` asks it of every event.
bool in_canonical_form(const Event& e, std::string_view bytes);

}  // namespace kobo
