#pragma once
// The writer's in-memory state of one partition, and apply(): the one function that folds an
// event into it. The writer calls apply() on the events it has just decided and, on start, on
// every event of the log, so live state and replayed state cannot drift apart.
//
// Owned by the writer thread; not thread-safe.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "command/commands.h"
#include "common/time.h"
#include "events/chain.h"
#include "events/event.h"
#include "events/ledger.h"
#include "events/types.h"

namespace kobo {

// A wallet as the writer needs it to decide. A partition holds up to millions of these, so the
// fields are compact: the owner is an index into Wallets' table of owners, the
// account number an integer.
struct WalletState {
  std::uint64_t id = 0;
  std::string account_name;
  std::uint64_t account_number = 0;  // 10 digits: format_account_number() keeps leading zeros
  Kobo balance;
  std::uint32_t owner = 0;  // Wallets::owner(): the business, account and mode it belongs to
  std::uint32_t bank = 0;   // Wallets::bank(): the bank it was opened at (the padding's room)
  DailyDebits debits;       // the counted debits of its last day with one (events/limits.h)
  std::uint8_t tier = 0;    // its KYC tier, 1..3; 0: none
};

// A bank a wallet is opened at: the service's own, as configured when the wallet opened.
struct WalletBank {
  std::string code;
  std::string name;
  auto operator<=>(const WalletBank&) const = default;
};

// Account numbers as text: always 10 digits.
std::string format_account_number(std::uint64_t number);
// The number of a 10-digit text, or nullopt for anything else (so such a number matches no wallet).
std::optional<std::uint64_t> parse_account_number(std::string_view text);

// A wallet's public id in 16 bytes. The writer makes every id "vba-" + a lower-case uuid v4,
// packed here as the uuid's 128 bits; `hi` holds the version nibble 4, so it is never 0. Any
// other id (the writer makes none, but a log is read as it is) is interned: {0, its index}.
struct WalletKey {
  std::uint64_t hi = 0;
  std::uint64_t lo = 0;
  bool operator==(const WalletKey&) const = default;
};

struct WalletKeyHash {
  std::size_t operator()(const WalletKey& k) const noexcept { return k.hi ^ k.lo; }  // random already
};

// Values many records share, each stored once: a record keeps the value's 32-bit index. They
// are few, so each is held twice (by index and by value) and the table stays simply copyable.
template <typename T>
class Interned {
 public:
  // The index of `value`, adding it on first use.
  std::uint32_t intern(const T& value) {
    const auto [it, added] = index_.try_emplace(value, static_cast<std::uint32_t>(values_.size()));
    if (added) values_.push_back(value);
    return it->second;
  }
  template <typename K>
  std::optional<std::uint32_t> find(const K& value) const {
    const auto it = index_.find(value);
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }
  const T& operator[](std::uint32_t index) const { return values_.at(index); }
  std::size_t size() const { return values_.size(); }

 private:
  std::vector<T> values_;
  std::map<T, std::uint32_t, std::less<>> index_;
};

// Every wallet of a partition, by public id, with the two other ways decide() finds one: by
// (account, mode, name) to keep names unique, and by account number for incoming credits. The
// indexes hold 8-byte hashes and numbers, not strings. Lookups take any string a request may
// carry: a malformed or unknown id or number finds nothing.
class Wallets {
 public:
  // The wallet with public id `id`, or null.
  const WalletState* find(std::string_view id) const;
  WalletState* find(std::string_view id);
  // The public id of the wallet with account number `number`, if any.
  std::optional<std::string> id_with_number(std::string_view number) const;
  // Whether account `account` has a wallet named `name` in mode `live` (transit wallets' names
  // do not count).
  bool name_taken(std::string_view account, bool live, std::string_view name) const;
  // The business, account and mode wallet `w` belongs to.
  const Caller& owner(const WalletState& w) const { return owners_[w.owner]; }
  const WalletBank& bank(const WalletState& w) const { return banks_[w.bank]; }
  // What a record shows of wallet `id` (events/ledger.h), or nullopt when there is none.
  std::optional<WalletFacts> facts(std::string_view id) const;

  // Adds wallet `id` of `owner` at `bank` (w.owner and w.bank are set here). `named`: its name is
  // unique in its scope, which transit wallets are exempt from. Asserts that id, account number
  // and name are new.
  void add(std::string_view id, const Caller& owner, const WalletBank& bank, WalletState w, bool named);

 private:
  std::optional<WalletKey> key_of(std::string_view id) const;
  std::string id_of(const WalletKey& key) const;
  const WalletState* at(const WalletKey& key) const;

  Interned<Caller> owners_;        // one per account and mode
  Interned<WalletBank> banks_;     // one, unless the service's bank was configured anew
  Interned<std::string> odd_ids_;  // ids not of the writer's shape: none today
  std::unordered_map<WalletKey, WalletState, WalletKeyHash> by_key_;
  std::unordered_multimap<std::uint64_t, WalletKey> by_name_;  // hash of scope_key(account, live) + name
  std::unordered_map<std::uint64_t, WalletKey> by_number_;     // account number

  friend class SnapshotCodec;  // command/snapshot.cc writes and reads every member as it is
};

// A collection wallet while it is open (active); once paid or expired it leaves the state, and
// History keeps whose its number was.
struct CollectionState {
  std::string public_id;
  std::string destination;  // the wallet a payment credits
  Kobo amount;
  UnixMs expires_at = 0;
  std::string business;
  bool live = false;
};

// A bank transfer on the payout rail: what the writer needs to move it on and to reverse it.
// Legal moves: pending -> processing -> success | failed; a payout leaves the state when final.
struct PayoutState {
  TransactionStatus status = TransactionStatus::pending;
  std::string source;  // the wallet that paid, credited back on failure
  Kobo amount;
  Kobo fee;
  UnixMs updated_at = 0;       // of the last status change
  bool sandbox_fails = false;  // metadata.sandboxOutcome == "failed"
  std::string business;
  bool live = false;
};

// A pending hold (extensions section 2): what it reserves of its source until it is captured,
// voided or expires. It leaves the state when it ends; History keeps whose it was and its
// reference, the views the rest. Legal moves: pending -> (captured | voided | expired).
struct HoldState {
  std::string source;  // vba-…
  Kobo amount;         // as placed
  Kobo captured;       // the sum of its captures so far: never above `amount`
  UnixMs expires_at = 0;
  std::string business;
  std::string account;  // acc-… that placed it
  bool live = false;

  Kobo remaining() const { return amount - captured; }
};

// What the writer decides with in one partition: the hot state (docs/architecture.md). It holds
// every wallet and business, and work in flight (payouts, open collection wallets); it grows
// with them, never with the transfers ever made. What was used before (references, bank
// accounts, closed collection wallets) is History's (history.h), on disk.
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
  Wallets wallets;
  std::unordered_map<std::string, std::string> transit_settlement;  // transit vba-… -> vba-… swept to
  std::unordered_map<std::string, CollectionState> collections;  // account number -> open collection wallet
  std::unordered_map<std::string, std::string> collection_numbers;  // open vba-… -> account number
  std::unordered_map<std::string, int> primary_wallets;             // scope_key(account, live) -> count
  std::array<Kobo, kSystemAccounts.size()> system_balances{};       // by SystemAccount
  std::unordered_map<std::string, PayoutState> payouts;             // debit trx-… in flight
  std::unordered_map<std::string, HoldState> holds;                 // pending hld-… only
  // The sum of `remaining` over each wallet's pending holds; a wallet without one has no entry.
  std::unordered_map<std::string, Kobo> held;
  Kobo total;  // sum of every balance in the partition: zero after every command
  TierLimits tier_limits = cbn_tier_limits();  // as the last WriterStarted recorded them
  // The writer key that signs the partition's next checkpoint, as its last checkpoint names it
  // (that one's `nextKey`, else its `key`; 64 hex digits), empty before the first: a writer
  // given the key it rotates from (LedgerOptions::previous_signer) hands over from this one.
  std::string checkpoint_key;

  // A wallet's or a system account's balance (0 for an account that does not exist).
  Kobo balance_of(std::string_view ledger_account) const;
  Kobo balance_of(SystemAccount a) const { return system_balances[static_cast<std::size_t>(a)]; }
  // What wallet `id`'s pending holds reserve (0 when none), and what it may spend: its balance
  // less that (extensions section 1). O(1).
  Kobo held_of(std::string_view wallet) const;
  Kobo available_of(std::string_view wallet, const WalletState& w) const {
    return w.balance - held_of(wallet);
  }
};

// The integer id of the n-th record (from 0) of a kind in partition p.
std::uint64_t interleaved_id(std::uint64_t n, Partition p, std::uint32_t partitions);

// A 64-bit FNV-1a hash: the same on every platform and standard library, for hashes that are
// persisted (the wallet-name index in snapshots).
std::uint64_t stable_hash(std::string_view text);

// Folds one accepted event into the state, reading its typed data. Every posting moves its
// balance through post() (events/ledger.h). The event has passed the chain check and
// validate(); anything inconsistent here is a bug or a corrupt log that slipped past the hash,
// so it asserts.
void apply(PartitionState& s, const Event& e);

}  // namespace kobo
