#pragma once
// The key layout of the views database. Internal to projection/.
//
//   V                                            -> the layout's version (kFormat below)
//   P<partition:4>                               -> position JSON {offset, seq, hash, epoch}
//   B<business>                                  -> business JSON
//   A<account>                                   -> account JSON
//   a<business>|<id:8>                           -> account publicId (listing)
//   K<secret key sha256 hex>                     -> KeyRow: business, account, live, until when
//   k<account>|<t|l>                             -> AccountKeysRow: the account's keys of the mode,
//                                                   and its signing key wrapped (rows.h)
//   Z<business>                                  -> the admin's reason, while the business is suspended
//   D<bank account publicId>                     -> the fact of its BeneficiarySaved (rows.h)
//   W<wallet publicId>                           -> the fact of the event that opened it
//   b<wallet publicId>                           -> WalletRow: balance, last change, status, movements
//   h<wallet publicId>|<number:8>                -> StatementRow: the wallet's number-th movement
//                                                   (from 1, log order), its time and balance after
//   N<account number>                            -> wallet publicId
//   S<partition:4><ledger account>               -> system account balance JSON
//   Y<partition:4>                               -> TierLimits: the KYC tier limits in force (rows.h)
//   E<partition:4><seq:8>                        -> the fact of an event that creates transactions
//   T<transaction publicId>                      -> TransactionRow: its event, which one, status steps
//   J<bulk publicId>                             -> BulkRow: its command's first event (its
//                                                   BulkTransferAccepted, whose fact is under E) and size
//   i<business>|<t|l>|<id:8>                     -> transaction publicId
//   r<account>|<t|l>|<reference>                 -> transaction publicId
//   t<business>|<t|l>|<createdAt ms:8>|<id:8>    -> ListedRow: entry, status, amount, publicId
//   f<business>|<t|l>|<filter>|<createdAt ms:8>|<id:8> -> transaction publicId (listing by one filter)
//   n<business>|<t|l>|<filter>                   -> how many transactions match it (decimal text)
//   g<kind><business>|<t|l>|<filter>|<id:8>      -> publicId: wallets (kind w) and beneficiaries
//                                                   (kind d) listed by one filter of their list
//   m<kind><business>|<t|l>|<filter>             -> how many of them match it (decimal text)
//   O<hold publicId>                             -> the fact of its HoldPlaced
//   U<hold publicId>                             -> HoldRow: captured, status, its captures' events
//   L<business>|<t|l>|<filter>|<createdAt ms:8>|<seq:8> -> hold publicId (listing by one filter)
//   M<business>|<t|l>|<filter>                   -> how many holds match it (decimal text)
//   w<account>|<t|l>                             -> WebhookRow: its webhook events so far, its secret
//   e<account>|<t|l>|<sequence:8>                -> WebhookEventRow: its sequence-th webhook event
//   x<transaction publicId>                      -> <sequence:8><account>: the webhook event it had
// Records are rendered from these rows on read (render.h); businesses, accounts and keys, a few
// per business, are stored as their records. Integers are big-endian so keys sort numerically. A transaction
// <filter> is one of the list's single-value filters (transaction_filter below): the counters make totalCount
// a read and the `f` listings page through matching transactions only, so no list of one filter scans. The
// wallet and beneficiary lists do the same with `m` and `g` (record_filter below).

#include <cstdint>
#include <string>
#include <string_view>

#include "events/ledger.h"

namespace kobo::view_keys {

inline void put_be(std::string& out, std::uint64_t v, int bytes = 8) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

inline std::uint64_t get_be(std::string_view s, std::size_t at, int bytes = 8) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v = (v << 8) | static_cast<unsigned char>(s[at + static_cast<std::size_t>(i)]);
  return v;
}

// The layout above, stored under kFormatKey; a layout changes kFormat, so that views of another
// one are rebuilt from the log, never read as if their keys meant the same (Views::open refuses
// them). Layout 1 had no marker; layout 2 writes the counters (`n`, `m`) as merge operands
// (view_counter_merge in views.h), which a kobo of layout 1 cannot read; layout 3 stores rows of
// facts instead of wallet, transaction and bank account records; layout 4 adds the wallets'
// statements (`h`) and their movement counts in WalletRow; layout 5 adds holds (`O`, `U`, `L`,
// `M`) and what they reserve in WalletRow, the KYC tiers (`Y`, and a wallet's tier and day
// debits in WalletRow), the accounts' webhook events (`w`, `e`, `x`), facts of form 2 (transfers
// name their bulk) and bulk transfers (`J`); layout 6 is 5 with a wallet's `updated` moved by its
// holds too (placed, captured, voided, expired), as its availableBalance is; layout 7 adds the
// accounts' keys (`k`: what webhooks are signed with, wrapped), an expiry to a key's row (`K`), and
// the suspended businesses (`Z`).
inline constexpr std::string_view kFormatKey = "V";
inline constexpr std::string_view kFormat = "7";
inline constexpr std::string_view kFirstFormat = "1";  // what views without a marker have

// The tags above by name, for showing a key to a person (describe_view_key in rebuild.h).
struct TagName {
  char tag;
  const char* name;
};
inline constexpr TagName kTagNames[] = {
    {'V', "format"},
    {'P', "positions"},
    {'B', "businesses"},
    {'A', "accounts"},
    {'a', "account list"},
    {'K', "keys"},
    {'k', "account keys"},
    {'Z', "suspended businesses"},
    {'D', "bank accounts"},
    {'W', "wallets"},
    {'b', "wallet balances"},
    {'h', "wallet statements"},
    {'E', "transaction events"},
    {'N', "account numbers"},
    {'S', "system balances"},
    {'Y', "tier limits"},
    {'T', "transactions"},
    {'J', "bulk transfers"},
    {'i', "transaction ids"},
    {'r', "transaction references"},
    {'t', "transaction list"},
    {'f', "transaction list by filter"},
    {'n', "transaction counts"},
    {'g', "record list by filter"},
    {'m', "record counts"},
    {'O', "holds"},
    {'U', "hold rows"},
    {'L', "hold list by filter"},
    {'M', "hold counts"},
    {'w', "account webhooks"},
    {'e', "webhook events"},
    {'x', "webhook events by transaction"},
};

inline std::string scoped(char tag, std::string_view owner, bool live) {
  return tag + scope_key(owner, live);
}

inline std::string position(std::uint32_t p) {
  std::string k("P");
  put_be(k, p, 4);
  return k;
}
inline bool is_position(std::string_view key) { return key.size() == 5 && key.front() == 'P'; }
inline std::string business(std::string_view id) { return "B" + std::string(id); }
inline std::string account(std::string_view id) { return "A" + std::string(id); }
inline std::string account_list_prefix(std::string_view business) {
  return "a" + std::string(business) + "|";
}
inline std::string account_list(std::string_view business, std::uint64_t id) {
  std::string k = account_list_prefix(business);
  put_be(k, id);
  return k;
}
inline std::string key_owner(std::string_view hash) { return "K" + std::string(hash); }
inline std::string account_keys(std::string_view account, bool live) { return scoped('k', account, live); }
inline std::string suspended(std::string_view business) { return "Z" + std::string(business); }
inline std::string wallet(std::string_view id) { return "W" + std::string(id); }
inline std::string wallet_row(std::string_view id) { return "b" + std::string(id); }
inline std::string statement_prefix(std::string_view wallet) { return "h" + std::string(wallet) + "|"; }
inline std::string statement_line(std::string_view wallet, std::uint64_t number) {
  std::string k = statement_prefix(wallet);
  put_be(k, number);
  return k;
}
inline std::string event_fact(std::uint32_t partition, std::uint64_t seq) {
  std::string k("E");
  put_be(k, partition, 4);
  put_be(k, seq);
  return k;
}
inline std::string bank_account(std::string_view id) { return "D" + std::string(id); }
inline std::string account_number(std::string_view number) { return "N" + std::string(number); }
inline std::string system_balance(std::uint32_t p, std::string_view ledger_account) {
  std::string k("S");
  put_be(k, p, 4);
  k += ledger_account;
  return k;
}
inline std::string tier_limits(std::uint32_t p) {
  std::string k("Y");
  put_be(k, p, 4);
  return k;
}
inline std::string transaction(std::string_view id) { return "T" + std::string(id); }
inline std::string bulk(std::string_view id) { return "J" + std::string(id); }
inline std::string transaction_id(std::string_view business, bool live, std::uint64_t id) {
  std::string k = scoped('i', business, live);
  put_be(k, id);
  return k;
}
inline std::string transaction_reference(std::string_view account, bool live, std::string_view reference) {
  return scoped('r', account, live) + std::string(reference);
}
inline std::string transaction_list(std::string_view business, bool live, std::uint64_t created_ms,
                                    std::uint64_t id) {
  std::string k = scoped('t', business, live);
  put_be(k, created_ms);
  put_be(k, id);
  return k;
}

// The transaction list's single-value filters as keys spell them: every transaction is counted
// under `all` and its day, and listed and counted under its entry, status and amount.
namespace transaction_filter {
inline std::string all() { return "*"; }
inline std::string entry(std::string_view entry) { return "e" + std::string(entry); }
inline std::string status(std::string_view status) { return "s" + std::string(status); }
inline std::string amount(std::int64_t amount) {
  std::string k("a");
  put_be(k, static_cast<std::uint64_t>(amount));
  return k;
}
inline std::string day(std::int64_t day) {
  std::string k("d");
  put_be(k, static_cast<std::uint64_t>(day));
  return k;
}
}  // namespace transaction_filter

// The wallet and beneficiary lists' filters as keys spell them: every record is listed and
// counted under `all` and under each of its filtered members (`member` names it: c category,
// f isFavourite, b beneficiaryType, n accountName) with its value, length first, so that no
// value's listing is a prefix of another's.
namespace record_filter {
inline std::string all() { return "*"; }
inline std::string of(char member, std::string_view value) {
  std::string k(1, member);
  put_be(k, value.size(), 2);
  k += value;
  return k;
}
}  // namespace record_filter

inline std::string record_count(char kind, std::string_view business, bool live, std::string_view filter) {
  std::string k = scoped('m', business, live);
  k.insert(1, 1, kind);
  k += filter;
  return k;
}
inline std::string record_listed_prefix(char kind, std::string_view business, bool live,
                                        std::string_view filter) {
  std::string k = scoped('g', business, live);
  k.insert(1, 1, kind);
  k += filter;
  k += '|';
  return k;
}
inline std::string record_listed(char kind, std::string_view business, bool live, std::string_view filter,
                                 std::uint64_t id) {
  std::string k = record_listed_prefix(kind, business, live, filter);
  put_be(k, id);
  return k;
}

inline std::string hold(std::string_view id) { return "O" + std::string(id); }
inline std::string hold_row(std::string_view id) { return "U" + std::string(id); }
// The hold list's filters: every hold is listed and counted under `all`, its source, its status,
// and its source and status together (record_filter's spelling).
namespace hold_filter {
inline std::string all() { return "*"; }
inline std::string source(std::string_view wallet) { return record_filter::of('s', wallet); }
inline std::string status(std::string_view status) { return record_filter::of('t', status); }
inline std::string source_status(std::string_view wallet, std::string_view status) {
  return source(wallet) + hold_filter::status(status);
}
}  // namespace hold_filter
inline std::string hold_count(std::string_view business, bool live, std::string_view filter) {
  return scoped('M', business, live) + std::string(filter);
}
inline std::string hold_listed_prefix(std::string_view business, bool live, std::string_view filter) {
  std::string k = scoped('L', business, live);
  k += filter;
  k += '|';
  return k;
}
inline std::string hold_listed(std::string_view business, bool live, std::string_view filter,
                               std::uint64_t created_ms, std::uint64_t seq) {
  std::string k = hold_listed_prefix(business, live, filter);
  put_be(k, created_ms);
  put_be(k, seq);
  return k;
}
inline std::string webhook(std::string_view account, bool live) { return scoped('w', account, live); }
inline std::string webhook_events_prefix(std::string_view account, bool live) {
  return scoped('e', account, live) + "|";
}
inline std::string webhook_event(std::string_view account, bool live, std::uint64_t sequence) {
  std::string k = webhook_events_prefix(account, live);
  put_be(k, sequence);
  return k;
}
inline std::string webhook_event_of(std::string_view transaction) { return "x" + std::string(transaction); }

inline std::string transaction_count(std::string_view business, bool live, std::string_view filter) {
  return scoped('n', business, live) + std::string(filter);
}
// The `f` listing of one filter: its prefix, and the key of one transaction in it.
inline std::string transaction_filtered_prefix(std::string_view business, bool live,
                                               std::string_view filter) {
  std::string k = scoped('f', business, live);
  k += filter;
  k += '|';
  return k;
}
inline std::string transaction_filtered(std::string_view business, bool live, std::string_view filter,
                                        std::uint64_t created_ms, std::uint64_t id) {
  std::string k = transaction_filtered_prefix(business, live, filter);
  put_be(k, created_ms);
  put_be(k, id);
  return k;
}

}  // namespace kobo::view_keys
