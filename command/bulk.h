#pragma once
// decide_bulk(): a bulk transfer (extensions section 5), decided in one writer step. Each item
// is decided by decide() (decide.h), the very rules a single wallet or bank transfer is decided
// by, against the state the items before it leave: the item's events are applied to the state
// and noted into the history's tail as a trial, and the trial is undone before decide_bulk()
// returns, so the state and history are as they were given and the writer places the events as
// it places any command's. No rule of a transfer is written here, only the bulk's own: its
// reference, its atomicity, and that an atomic bulk draws on the caller's account's wallets.
//
// Writer thread only (it borrows the writer's state and history).

#include "command/commands.h"
#include "command/decide.h"
#include "command/history.h"
#include "command/id_source.h"
#include "command/state.h"

namespace kobo {

// How many items a bulk transfer may hold.
inline constexpr std::size_t kBulkItemsMax = 1'000;

// The bulk's idempotency fingerprint (hex SHA-256): its atomicity and, per item, its kind, its
// reference and its request_fingerprint() (events/ledger.h), in order.
std::string bulk_fingerprint(const BulkTransfer& c);

// The decision: a rejection of the whole bulk (its reference was used for another request, the
// history cannot be read, or for an atomic bulk the first item rejected, named in `item`), a
// replay (`id`: the original bulk), or its events: BulkTransferAccepted, then each accepted
// item's events, each naming the bulk in `batch`. `s` and `h` are left as they were given.
[[nodiscard]] Decision decide_bulk(PartitionState& s, History& h, const BulkTransfer& c,
                                   const LedgerConfig& config, UnixMs now, IdSource& ids);

}  // namespace kobo
