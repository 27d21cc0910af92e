#pragma once
// The views' rows: facts, not records (docs/architecture.md section 5). A record is rendered from
// its rows on read (projection/render.h), so a change to what a record shows changes the renderer
// only, and a transfer writes a few small rows instead of its rendered records.
//
//   the fact of an event (events/fact_codec.h): an event that creates transactions (`E` keys), a
//     wallet's opening (`W`), a saved beneficiary (`D`)
//   TransactionRow (`T`): which event created the transaction, which of its transactions it is,
//     and the status changes since
//   WalletRow (`b`): what changes on a wallet: its balance, when it last changed, a collection
//     wallet's status
//   ListedRow (`t`): what the transaction list filters on when it scans (entry, status, amount)
//   KeyRow (`K`): whose a secret key is
//
// The binary forms below are part of the views' key layout (view_keys.h kFormat). Pure.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "events/event.h"
#include "events/ledger.h"
#include "events/types.h"

namespace kobo::rows {

struct StatusStep {
  TransactionStatus status = TransactionStatus::pending;
  UnixMs time = 0;
  bool operator==(const StatusStep&) const = default;
};

struct TransactionRow {
  Partition partition{0};
  Seq seq{0};                     // the event that created it (its fact is under E<partition><seq>)
  std::uint32_t index = 0;        // which of the event's transactions (transactions_created order)
  std::vector<StatusStep> steps;  // the status changes since, oldest first (a payout's)
  bool operator==(const TransactionRow&) const = default;
};
std::string encode(const TransactionRow& row);
[[nodiscard]] Result<TransactionRow> decode_transaction(std::string_view bytes);

struct WalletRow {
  Kobo balance;
  UnixMs updated = 0;  // the last change: its opening, a posting, a collection's close
  CollectionStatus status = CollectionStatus::pending;  // a collection wallet's; pending for the others
  bool operator==(const WalletRow&) const = default;
};
std::string encode(const WalletRow& row);
[[nodiscard]] Result<WalletRow> decode_wallet(std::string_view bytes);

struct ListedRow {
  Entry entry = Entry::debit;
  TransactionStatus status = TransactionStatus::success;
  std::int64_t amount = 0;
  std::string public_id;
  bool operator==(const ListedRow&) const = default;
};
std::string encode(const ListedRow& row);
[[nodiscard]] Result<ListedRow> decode_listed(std::string_view bytes);

struct KeyRow {
  std::string business;
  std::string account;
  bool live = false;  // the key's mode
  bool operator==(const KeyRow&) const = default;
};
std::string encode(const KeyRow& row);
[[nodiscard]] Result<KeyRow> decode_key(std::string_view bytes);

}  // namespace kobo::rows
