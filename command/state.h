#pragma once
// The writer's in-memory state of one partition, and apply(): the one function that folds an
// event into it. The writer calls apply() on the events it has just decided and, on start, on
// every event of the log, so live state and replayed state cannot drift apart.
//
// Owned by the writer thread; not thread-safe.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "events/chain.h"
#include "events/event.h"
#include "common/time.h"
#include "events/types.h"

namespace kobo {

// Ledger accounts that are not wallets; one of each per partition (DESIGN "Double entry").
inline constexpr std::string_view kInboundSettlement = "sys:inbound-settlement";
inline constexpr std::string_view kFeeAccount = "sys:fees";
inline constexpr std::string_view kPayoutSuspense = "sys:payout-suspense";
inline constexpr std::string_view kOutboundSettlement = "sys:outbound-settlement";

struct WalletState {
  std::string business;
  std::string account;
  bool live = false;
  bool primary = false;
  std::int64_t id = 0;
  std::string account_name;
  std::string account_number;
  Kobo balance;
  std::string settlement;  // transit wallets: the wallet every credit is swept to
};

struct CollectionState {
  std::string public_id;
  std::string destination;  // the wallet a payment credits
  Kobo amount;
  UnixMs expires_at = 0;
  bool active = true;
  std::string business;
  std::string account;
  bool live = false;
};

// A bank transfer on the payout rail. Legal moves: pending -> processing -> success | failed.
struct PayoutState {
  std::string status = "pending";
  std::string source;        // the wallet that paid, credited back on failure
  Kobo amount;
  Kobo fee;
  UnixMs updated_at = 0;     // of the last status change
  bool sandbox_fails = false;  // metadata.sandboxOutcome == "failed"
  std::string reference;
  std::string link_ref;
  std::string narration;
  nlohmann::json beneficiary;  // the destinationData snapshot
  std::string business;
  bool live = false;
};

struct ReferenceState {
  std::string fingerprint;  // of the request that first used the reference
  std::string transaction;  // publicId of the transaction it produced
};

struct PartitionState {
  Partition partition{0};
  ChainFollower chain;

  // Per-partition counters behind the integer ids: id = n * partitions + partition + 1.
  std::uint64_t wallets_created = 0;
  std::uint64_t transactions_created = 0;
  std::uint64_t accounts_created = 0;
  std::uint64_t account_numbers_issued = 0;
  std::uint64_t bank_accounts_created = 0;

  std::unordered_set<std::string> businesses;
  std::unordered_map<std::string, std::string> account_business;  // acc-… -> biz-…
  std::unordered_map<std::string, WalletState> wallets;            // vba-… -> state
  std::unordered_map<std::string, std::int64_t> bank_accounts;     // bka-… -> integer id
  std::unordered_map<std::string, CollectionState> collections;    // account number -> collection wallet
  std::unordered_map<std::string, std::string> collection_numbers; // vba-… -> account number
  std::unordered_set<std::string> collection_references;           // scope_key(account, live) + reference
  std::unordered_map<std::string, std::string> wallet_by_number;   // account number -> vba-…
  std::unordered_set<std::string> wallet_names;                    // scope_key(account, live) + name
  std::unordered_map<std::string, int> primary_wallets;            // scope_key(account, live) -> count
  std::unordered_map<std::string, ReferenceState> references;      // scope_key(account, live) + reference
  std::unordered_map<std::string, Kobo> system_balances;           // sys:… -> balance
  std::unordered_map<std::string, std::string> pending_settlement; // debit trx-… -> credit wallet
  std::unordered_map<std::string, PayoutState> payouts;            // debit trx-… in flight
  Kobo total;  // sum of every balance in the partition: zero after every command

  Kobo balance_of(std::string_view ledger_account) const;
};

// "acc-…|t|" or "acc-…|l|": the prefix of keys scoped to an account and a mode.
std::string scope_key(std::string_view account, bool live);

// The integer id of the n-th record (from 0) of a kind in partition p.
std::int64_t interleaved_id(std::uint64_t n, Partition p, std::uint32_t partitions);

// Folds one accepted event into the state. The event has passed the chain check; anything
// inconsistent here is a bug or a corrupt log that slipped past the hash, so it asserts.
void apply(PartitionState& s, const Event& e);

}  // namespace kobo
