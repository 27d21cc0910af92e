#pragma once
// The key layout of the views database. Internal to projection/.
//
// Ids inside keys are 16 bytes (id16 below), a scope (a business and a mode) 17 (scope17), and
// integers big-endian so that keys sort numerically. A wallet transfer between wallets of one
// account writes 5 keys that stay: its event under `L`, the debit's `T`, the caller's `r` and
// two `h` (docs/architecture.md section 5); the rest it changes (wallet rows, list rows, bitmap
// chunks) are rewritten in place.
//
//   V                                        -> the layout's version (kFormat below)
//   P<partition:4>                           -> PositionRow: where the views are in the partition
//   B<business16>                            -> the fact of its BusinessRegistered
//   A<account16>                             -> AccountRow: what changed on the account since
//   H<account16><seq:8>                      -> AccountRow: the row as it was before the change of
//                                               its webhook settings at partition seq `seq`
//   a<business16><id:8>                      -> account publicId (the business's accounts)
//   K<secret key sha256:32>                  -> KeyRow: business, account, live, until when
//   k<account16><mode>                       -> AccountKeysRow: the account's keys of the mode,
//                                               and its signing key wrapped
//   Z<business16>                            -> the admin's reason, while the business is suspended
//   R<business16>                            -> the fact of the admin's last BusinessRateLimitsSet
//   N<account number>                        -> wallet publicId
//   S<partition:4><ledger account>           -> a system account's balance (signed varint)
//   Y<partition:4>                           -> TierLimits: the KYC tier limits in force
//   W<wallet16>                              -> the fact of the event that opened it
//   b<wallet16>                              -> WalletRow: balance, last change, status, movements
//   h<wallet16><number:8>                    -> StatementRow: the wallet's number-th movement
//   D<bank account16>                        -> the fact of its BeneficiarySaved
//   L<scope17><first:8>                      -> EventRow: an event that creates transactions,
//                                               records first.. of the scope's transaction list
//   T<transaction16>                         -> TransactionRow: where its event is, status steps
//                                               (time-ordered ids: new rows land at the end); none
//                                               for a final record whose id derives from its
//                                               event's first (Views::transaction_row)
//   r<account16><mode><reference>            -> RecordAt: the transaction a reference names; none
//                                               for a reference derived from its record's id
//   J<bulk16>                                -> BulkRow: its records and its BulkTransferAccepted
//   O<hold16>                                -> the fact of its HoldPlaced
//   U<hold16>                                -> HoldRow: its number in the hold list, what changed
//   g<kind><scope17><number:8>               -> ListedRow: a wallet (kind w), beneficiary (d) or
//                                               hold (h) of the scope's list of that kind
//   C<kind><scope17>                         -> ListRow: how many the list holds, its latest time
//   X<kind><scope17><field><value><chunk:4>  -> a chunk of the bitmap of the list's records whose
//                                               `field` has `value` (bitmap.h; list_index.h)
//   w<account16><mode>                       -> WebhookRow: its webhook events so far, its secret
//   e<account16><mode><sequence:8>           -> WebhookEventRow: a webhook event that finalized
//                                               a transaction created before (a payout's)
//
// Lists (list_index.h): each kind of record of a scope is numbered from 0 in log order, and a
// filter value is a bitmap over those numbers, in chunks of bitmap::kChunkBits: a combination of
// filters is an AND, totalCount a count, page N a select, a createdAt range a range of numbers.
// The transaction list's numbers are its records' (an event of k records holds k numbers), and
// its rows are the events themselves (`L`): a record is found from its event, with no index of
// its own. Records are rendered from these rows on read (render.h).

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/assert.h"

namespace kobo::view_keys {

inline void put_be(std::string& out, std::uint64_t v, int bytes = 8) {
  KOBO_ASSERT(bytes >= 1 && bytes <= 8 && (bytes == 8 || v >> (8 * bytes) == 0),
              "a big-endian integer fits the bytes it is given");
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

inline std::uint64_t get_be(std::string_view s, std::size_t at, int bytes = 8) {
  KOBO_ASSERT(bytes >= 1 && bytes <= 8, "a big-endian integer of 1 to 8 bytes");
  KOBO_ASSERT(at + static_cast<std::size_t>(bytes) <= s.size(), "a big-endian integer past a key's end");
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v = (v << 8) | static_cast<unsigned char>(s[at + static_cast<std::size_t>(i)]);
  return v;
}

// The layout above, stored under kFormatKey; a layout changes kFormat, so that views of another
// one are rebuilt from the log, never read as if their keys meant the same (Views::open refuses
// them). Layout 1 had no marker; 2 wrote list counters as merge operands; 3 stored rows of facts
// instead of records; 4 added statements; 5 holds, tiers, webhook events and bulk transfers; 6
// moved a wallet's `updated` with its holds; 7 is the layout above: binary ids, the transaction
// list as events numbered by record with bitmaps per filter value, typed accounts and positions; 8
// adds the accounts' keys (`k`: what webhooks are signed with, wrapped), an expiry to a key's row
// (`K`), the suspended businesses (`Z`) and each mode's webhook settings to an account's row (`A`);
// 9 adds the account rows each change of webhook settings replaced (`H`).
inline constexpr std::string_view kFormatKey = "V";
inline constexpr std::string_view kFormat = "9";
inline constexpr std::string_view kFirstFormat = "1";  // what views without a marker have

// The tags above by name, for showing a key to a person (describe below).
struct TagName {
  char tag;
  const char* name;
};
inline constexpr TagName kTagNames[] = {
    {'V', "format"},
    {'P', "positions"},
    {'B', "businesses"},
    {'A', "accounts"},
    {'H', "account history"},
    {'a', "account list"},
    {'K', "keys"},
    {'N', "account numbers"},
    {'S', "system balances"},
    {'Y', "tier limits"},
    {'W', "wallets"},
    {'b', "wallet balances"},
    {'h', "wallet statements"},
    {'D', "bank accounts"},
    {'L', "transaction events"},
    {'T', "transactions"},
    {'r', "transaction references"},
    {'J', "bulk transfers"},
    {'O', "holds"},
    {'U', "hold rows"},
    {'g', "record lists"},
    {'C', "list counts"},
    {'X', "list bitmaps"},
    {'w', "account webhooks"},
    {'e', "webhook events"},
    {'k', "account keys"},
    {'Z', "suspended businesses"},
};

// A key's hash, for what holds keys by it: a batch's rows, the views' stripes and kept rows, a
// rebuild's filter of the chunks it wrote. Transparent: a std::string_view finds a std::string.
struct KeyHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view key) const noexcept { return std::hash<std::string_view>()(key); }
};

// "wallets/\x12\x34…", "positions/\x00\x00\x00\x03": which view a raw key belongs to, with its
// binary parts escaped.
std::string describe(std::string_view key);

// The 16 bytes an id is keyed by: the UUID of a publicId of the form <prefix>-<uuid> (every id
// the service makes), else the first 16 bytes of the SHA-256 of the whole id (ids that tests and
// older tools make). The prefix is not kept: a key's tag says what kind of record it names, and
// a read checks the id it finds against the one it was asked for.
std::string id16(std::string_view id);

inline constexpr std::size_t kScopeSize = 17;
// A business and a mode: the business's id16 and 0 (test) or 1 (live).
inline std::string scope17(std::string_view business, bool live) {
  std::string s = id16(business);
  s.push_back(live ? '\1' : '\0');
  KOBO_ASSERT(s.size() == kScopeSize, "a scope is an id16 and a mode byte");
  return s;
}

inline std::string position(std::uint32_t p) {
  std::string k("P");
  put_be(k, p, 4);
  KOBO_ASSERT(k.size() == 5, "a position key is P and 4 bytes");
  KOBO_ASSERT(get_be(k, 1, 4) == p, "a position key reads back as its partition");
  return k;
}
inline bool is_position(std::string_view key) { return key.size() == 5 && key.front() == 'P'; }
// A key of one record by its id: its tag and the id's 16 bytes, so that no key of a tag is a prefix
// of another of that tag (scans stop at the prefix they were given).
inline std::string record_key(char tag, std::string_view id) {
  std::string k(1, tag);
  k += id16(id);
  KOBO_ASSERT(k.size() == 1 + 16 && k.front() == tag, "a record's key is its tag and an id16");
  return k;
}
// A numbered row of one record: its tag, the id's 16 bytes and a big-endian number, so that the
// record's rows sort by number under the prefix record_key(tag, id).
inline std::string numbered_record_key(char tag, std::string_view id, std::uint64_t number) {
  std::string k = record_key(tag, id);
  put_be(k, number);
  KOBO_ASSERT(k.size() == 1 + 16 + 8, "a numbered record's key is its tag, an id16 and 8 bytes");
  KOBO_ASSERT(get_be(k, 17) == number, "a numbered record's key reads back as its number");
  return k;
}
inline std::string business(std::string_view id) { return record_key('B', id); }
inline std::string account(std::string_view id) { return record_key('A', id); }
inline std::string account_list_prefix(std::string_view business) { return record_key('a', business); }
inline std::string account_list(std::string_view business, std::uint64_t id) {
  return numbered_record_key('a', business, id);
}
// `hash`: the hex SHA-256 of a secret key, as the log holds it; keyed by its 32 bytes (a hash
// that is not 64 hex digits, which no caller makes, is keyed as its text).
std::string key_owner(std::string_view hash);
inline std::string account_keys(std::string_view account, bool live) {
  std::string k = record_key('k', account);
  k.push_back(live ? '\1' : '\0');
  KOBO_ASSERT(k.size() == 1 + kScopeSize, "an account keys key is k, an id16 and a mode");
  return k;
}
inline std::string suspended(std::string_view business) { return record_key('Z', business); }
inline std::string rate_limits(std::string_view business) { return record_key('R', business); }
inline std::string account_number(std::string_view number) { return "N" + std::string(number); }
inline std::string system_balance(std::uint32_t p, std::string_view ledger_account) {
  KOBO_ASSERT(!ledger_account.empty(), "a system balance is of a named system account");
  std::string k("S");
  put_be(k, p, 4);
  k += ledger_account;
  KOBO_ASSERT(k.size() == 5 + ledger_account.size(), "a system balance key is S, 4 bytes and a name");
  KOBO_ASSERT(get_be(k, 1, 4) == p, "a system balance key reads back as its partition");
  return k;
}
inline std::string tier_limits(std::uint32_t p) {
  std::string k("Y");
  put_be(k, p, 4);
  KOBO_ASSERT(k.size() == 5, "a tier limits key is Y and 4 bytes");
  KOBO_ASSERT(get_be(k, 1, 4) == p, "a tier limits key reads back as its partition");
  return k;
}
inline std::string wallet(std::string_view id) { return record_key('W', id); }
inline std::string wallet_row(std::string_view id) { return record_key('b', id); }
inline std::string statement_prefix(std::string_view wallet) { return record_key('h', wallet); }
inline std::string statement_line(std::string_view wallet, std::uint64_t number) {
  return numbered_record_key('h', wallet, number);
}
inline std::string bank_account(std::string_view id) { return record_key('D', id); }

inline std::string event_prefix(std::string_view scope) {
  KOBO_ASSERT(scope.size() == kScopeSize, "a scope of the views is 17 bytes");
  return "L" + std::string(scope);
}
// The event whose first record in the scope's transaction list is number `first`.
inline std::string event(std::string_view scope, std::uint64_t first) {
  std::string k = event_prefix(scope);
  put_be(k, first);
  KOBO_ASSERT(k.size() == 1 + kScopeSize + 8, "an event key is L, a scope and 8 bytes");
  KOBO_ASSERT(get_be(k, 1 + kScopeSize) == first, "an event key reads back as its first record");
  return k;
}
inline std::string transaction(std::string_view id) { return record_key('T', id); }
// A transaction reference of an account and mode: references of the form ref-, rev- or swp-
// followed by a uuid (those the service derives) as a marker byte and the uuid's 16 bytes, any
// other after a zero byte as it is.
std::string transaction_reference(std::string_view account, bool live, std::string_view reference);
inline std::string bulk(std::string_view id) { return record_key('J', id); }
inline std::string hold(std::string_view id) { return record_key('O', id); }
inline std::string hold_row(std::string_view id) { return record_key('U', id); }

// The kinds of list (list_index.h) and their fields as keys spell them.
namespace list {
inline constexpr char kTransactions = 't';
inline constexpr char kWallets = 'w';
inline constexpr char kBeneficiaries = 'd';
inline constexpr char kHolds = 'h';

// Transactions: entry, status and amount, and `a`: the records whose creating event announced
// them as webhook events of account <account16> (webhooks below).
inline constexpr char kEntry = 'e';
inline constexpr char kStatus = 's';
inline constexpr char kAmount = 'm';
inline constexpr char kAnnounced = 'a';
// Wallets: category and isFavourite; beneficiaries: beneficiaryType and accountName; holds:
// source and status.
inline constexpr char kCategory = 'c';
inline constexpr char kFavourite = 'f';
inline constexpr char kBeneficiaryType = 'b';
inline constexpr char kAccountName = 'n';
inline constexpr char kSource = 'o';
inline constexpr char kHoldStatus = 's';
// Every list: the records whose time is earlier than a record's before them (a writer's clock
// that went back), which the newest-first order places apart (list_index.h).
inline constexpr char kDisplaced = 'z';

// A field's value as keys spell it: its length in one byte, then its bytes (a value of 255
// bytes or more: 255, then its SHA-256); so no value's chunks are a prefix of another's.
std::string value(std::string_view bytes);
std::string value(std::int64_t number);

}  // namespace list

inline std::string list_row(char kind, std::string_view scope) {
  KOBO_ASSERT(scope.size() == kScopeSize, "a scope of the views is 17 bytes");
  std::string k("C");
  k.push_back(kind);
  k += scope;
  KOBO_ASSERT(k.size() == 2 + kScopeSize, "a list row key is C, a kind and a scope");
  return k;
}
inline std::string listed_prefix(char kind, std::string_view scope) {
  KOBO_ASSERT(scope.size() == kScopeSize, "a scope of the views is 17 bytes");
  std::string k("g");
  k.push_back(kind);
  k += scope;
  KOBO_ASSERT(k.size() == 2 + kScopeSize, "a listed prefix is g, a kind and a scope");
  return k;
}
inline std::string listed(char kind, std::string_view scope, std::uint64_t number) {
  std::string k = listed_prefix(kind, scope);
  put_be(k, number);
  KOBO_ASSERT(k.size() == 2 + kScopeSize + 8, "a listed key is g, a kind, a scope and 8 bytes");
  KOBO_ASSERT(get_be(k, 2 + kScopeSize) == number, "a listed key reads back as its number");
  return k;
}
// The bitmap of field `field` = `value` (list::value's spelling) of a list, without its chunk.
inline std::string bitmap(char kind, std::string_view scope, char field, std::string_view value) {
  KOBO_ASSERT(scope.size() == kScopeSize, "a scope of the views is 17 bytes");
  std::string k("X");
  k.push_back(kind);
  k += scope;
  k.push_back(field);
  k += value;
  KOBO_ASSERT(!value.empty() && k.size() == 3 + kScopeSize + value.size(),
              "a bitmap key is X, a kind, a scope, a field and its value");
  return k;
}
// The key of chunk `chunk` of `bitmap`, written into `out` (whatever it held).
inline void bitmap_chunk(std::string& out, std::string_view bitmap, std::uint32_t chunk) {
  out.assign(bitmap);
  put_be(out, chunk, 4);
  KOBO_ASSERT(out.size() == bitmap.size() + 4, "a chunk key is its bitmap's and 4 bytes");
  KOBO_ASSERT(get_be(out, bitmap.size(), 4) == chunk, "a chunk key reads back as its chunk");
}
inline std::string bitmap_chunk(std::string_view bitmap, std::uint32_t chunk) {
  std::string k;
  bitmap_chunk(k, bitmap, chunk);
  return k;
}

inline std::string webhook(std::string_view account, bool live) {
  std::string k = "w" + id16(account);
  k.push_back(live ? '\1' : '\0');
  KOBO_ASSERT(k.size() == 1 + kScopeSize, "a webhook key is w, an id16 and a mode");
  return k;
}
// An account's rows before each change of its webhook settings (Views::webhook_settings_at), in
// the order of the changes' seqs in its business's partition.
inline std::string account_history_prefix(std::string_view account) { return record_key('H', account); }
inline std::string account_history(std::string_view account, std::uint64_t seq) {
  return numbered_record_key('H', account, seq);
}
inline std::string webhook_events_prefix(std::string_view account, bool live) {
  std::string k = record_key('e', account);
  k.push_back(live ? '\1' : '\0');
  KOBO_ASSERT(k.size() == 1 + kScopeSize, "a webhook events prefix is e, an id16 and a mode");
  return k;
}
inline std::string webhook_event(std::string_view account, bool live, std::uint64_t sequence) {
  std::string k = webhook_events_prefix(account, live);
  put_be(k, sequence);
  KOBO_ASSERT(k.size() == 1 + kScopeSize + 8, "a webhook event key is e, an id16, a mode and 8 bytes");
  KOBO_ASSERT(get_be(k, 1 + kScopeSize) == sequence, "a webhook event key reads back as its sequence");
  return k;
}

// Where the projector's next key of this kind goes in a memtable, as the part of the key that
// names the run it extends (the memtable's insert hint, views.cc; and a rebuild's files, where a
// long run of one scope's rows is a file of its own, Views::ingest): a numbered row (a statement
// line, an event, a listed record, a webhook event) follows the previous one of its wallet, scope
// or account; any other key follows the previous one of its tag (a transaction's time-ordered id
// the previous transaction, a batch's wallet rows, sorted, the one before). Runs are few: RocksDB
// keeps a hint of some 200 bytes per run in each memtable, so a key written once (a new amount's
// bitmap chunk, a wallet's opening) is no run of its own. A reference, text the caller chose, has
// no run: nullopt.
inline std::optional<std::size_t> insert_run(std::string_view key) {
  if (key.empty()) return std::nullopt;
  switch (key.front()) {
    case 'h':
      return std::min<std::size_t>(key.size(), 17);  // h<wallet16>
    case 'L':
    case 'e':
      return std::min<std::size_t>(key.size(), 1 + kScopeSize);  // L<scope17>, e<account16><mode>
    case 'g':
      return std::min<std::size_t>(key.size(), 2 + kScopeSize);  // g<kind><scope17>
    case 'r':
      return std::nullopt;
    default:
      return 1;
  }
}

}  // namespace kobo::view_keys
