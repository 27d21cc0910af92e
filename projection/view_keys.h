#pragma once
// The key layout of the views database. Internal to projection/.
//
//   V                                            -> the layout's version (kFormat below)
//   P<partition:4>                               -> position JSON {offset, seq, hash, epoch}
//   B<business>                                  -> business JSON
//   A<account>                                   -> account JSON
//   a<business><id:8>                            -> account publicId (listing)
//   K<secret key sha256 hex>                     -> {business, account, live}
//   D<bank account>                              -> bank account JSON
//   W<wallet>                                    -> wallet JSON (with balance)
//   N<account number>                            -> wallet publicId
//   S<partition:4><ledger account>               -> system account balance JSON
//   T<transaction>                               -> transaction JSON
//   i<business><t|l><id:8>                       -> transaction publicId
//   r<account><t|l><reference>                   -> transaction publicId
//   t<business><t|l><createdAt ms:8><id:8>       -> {entry, status, amount, publicId} (listing)
//   f<business><t|l><filter>|<createdAt ms:8><id:8> -> transaction publicId (listing by one filter)
//   n<business><t|l><filter>                     -> how many transactions match it (decimal text)
//   g<kind><business><t|l><filter>|<id:8>        -> publicId: wallets (kind w) and beneficiaries
//                                                   (kind d) listed by one filter of their list
//   m<kind><business><t|l><filter>               -> how many of them match it (decimal text)
// Integers are big-endian so keys sort numerically. Ids (<business>, <wallet>, …) are held
// compactly (put_id below): the 40-character ids the service makes in 19 bytes. A transaction
// <filter> is one of the list's single-value filters (transaction_filter below): the counters
// make totalCount a read and the `f` listings page through matching transactions only, so no
// list of one filter scans. The wallet and beneficiary lists do the same with `m` and `g`
// (record_filter below).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/crypto.h"

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

// The layout above, stored under kFormatKey. Views without it were written in the first layout
// (ids in full, "|t|" between scope and key); a layout other than this one is rebuilt, not read.
inline constexpr std::string_view kFormatKey = "V";
inline constexpr std::string_view kFormat = "2";

// An id as keys hold it. The ids the service makes, three lower-case letters, a dash and a uuid
// ("trx-" + 8-4-4-4-12 lower-case hex, 40 characters), are the three letters and the uuid's 16
// bytes. Any other text (an id a caller asks for that no one made, a test's) is a 0 byte, its
// length in 4 bytes and its bytes. The first byte tells the two forms apart and each knows its
// length, so two ids never encode alike and an id followed by more key is never ambiguous.
inline constexpr std::size_t kPrefixLength = 3;
inline constexpr std::size_t kCompactIdLength = kPrefixLength + 16;

inline bool is_prefix_letter(char c) { return c >= 'a' && c <= 'z'; }

inline void put_id(std::string& out, std::string_view id) {
  if (id.size() == kPrefixLength + 1 + 36 && id[kPrefixLength] == '-' && is_prefix_letter(id[0]) &&
      is_prefix_letter(id[1]) && is_prefix_letter(id[2])) {
    if (const auto uuid = parse_uuid(id.substr(kPrefixLength + 1))) {
      out.append(id.substr(0, kPrefixLength));
      out.append(reinterpret_cast<const char*>(uuid->data()), uuid->size());
      return;
    }
  }
  out.push_back('\0');
  put_be(out, id.size(), 4);
  out.append(id);
}

struct DecodedId {
  std::string text;
  std::size_t length = 0;  // of its encoding
};

// The id put_id wrote at `at` in `key`; nullopt when what is there is not one.
inline std::optional<DecodedId> read_id(std::string_view key, std::size_t at) {
  if (at >= key.size()) return std::nullopt;
  if (key[at] == '\0') {
    if (key.size() - at < 5) return std::nullopt;
    const std::uint64_t n = get_be(key, at + 1, 4);
    if (key.size() - at - 5 < n) return std::nullopt;
    return DecodedId{std::string(key.substr(at + 5, n)), 5 + n};
  }
  if (key.size() - at < kCompactIdLength || !is_prefix_letter(key[at]) || !is_prefix_letter(key[at + 1]) ||
      !is_prefix_letter(key[at + 2]))
    return std::nullopt;
  UuidBytes uuid;
  for (std::size_t i = 0; i < uuid.size(); ++i)
    uuid[i] = static_cast<std::uint8_t>(key[at + kPrefixLength + i]);
  return DecodedId{std::string(key.substr(at, kPrefixLength)) + "-" + format_uuid(uuid), kCompactIdLength};
}

inline std::string tagged(char tag, std::string_view id) {
  std::string k(1, tag);
  put_id(k, id);
  return k;
}

// The prefix of every key scoped to an owner (an account or a business) and a mode.
inline std::string scoped(char tag, std::string_view owner, bool live) {
  std::string k = tagged(tag, owner);
  k.push_back(live ? 'l' : 't');
  return k;
}

// The tags above by name, and where the key's first id starts (0: it has none): for showing a
// key to a person (describe_view_key in rebuild.h).
struct TagName {
  char tag;
  const char* name;
  std::size_t id_at;
};
inline constexpr TagName kTagNames[] = {
    {'V', "format", 0},
    {'P', "positions", 0},
    {'B', "businesses", 1},
    {'A', "accounts", 1},
    {'a', "account list", 1},
    {'K', "keys", 0},
    {'D', "bank accounts", 1},
    {'W', "wallets", 1},
    {'N', "account numbers", 0},
    {'S', "system balances", 0},
    {'T', "transactions", 1},
    {'i', "transaction ids", 1},
    {'r', "transaction references", 1},
    {'t', "transaction list", 1},
    {'f', "transaction list by filter", 1},
    {'n', "transaction counts", 1},
    {'g', "record list by filter", 2},
    {'m', "record counts", 2},
};

inline std::string position(std::uint32_t p) {
  std::string k("P");
  put_be(k, p, 4);
  return k;
}
inline std::string business(std::string_view id) { return tagged('B', id); }
inline std::string account(std::string_view id) { return tagged('A', id); }
inline std::string account_list_prefix(std::string_view business) { return tagged('a', business); }
inline std::string account_list(std::string_view business, std::uint64_t id) {
  std::string k = account_list_prefix(business);
  put_be(k, id);
  return k;
}
inline std::string key_owner(std::string_view hash) { return "K" + std::string(hash); }
inline std::string wallet(std::string_view id) { return tagged('W', id); }
inline std::string bank_account(std::string_view id) { return tagged('D', id); }
inline std::string account_number(std::string_view number) { return "N" + std::string(number); }
inline std::string system_balance(std::uint32_t p, std::string_view ledger_account) {
  std::string k("S");
  put_be(k, p, 4);
  k += ledger_account;
  return k;
}
inline std::string transaction(std::string_view id) { return tagged('T', id); }
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
