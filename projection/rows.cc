#include "projection/rows.h"

#include <algorithm>
#include <functional>

#include "common/crypto.h"
#include "common/varint.h"
#include "events/limits.h"

namespace kobo::rows {
namespace {

class Reader : public VarintReader {
 public:
  using VarintReader::VarintReader;
  template <typename E>
  E enumerated(E last) {
    const std::uint64_t v = varint();
    if (v > static_cast<std::uint64_t>(last)) fail();
    KOBO_ASSERT(!ok() || v <= static_cast<std::uint64_t>(last), "an enum is read in its range only");
    return ok() ? static_cast<E>(v) : E{};
  }
  bool flag() {
    const unsigned char b = byte();
    if (b > 1) fail();
    KOBO_ASSERT(b <= 1 || !ok(), "a flag read is 0 or 1, or the read failed");
    return b == 1;
  }
  std::string_view fixed(std::size_t n) {
    if (left() < n) {
      fail();
      return {};
    }
    std::string_view all = rest();
    KOBO_ASSERT(all.size() >= n, "a fixed-size field is read whole or not at all");
    skip(n);
    return all.substr(0, n);
  }
  std::string_view rest() {
    const std::size_t n = left();
    KOBO_ASSERT(end_ != nullptr || n == 0, "a reader with bytes left knows where they end");
    std::string_view out;
    if (n > 0) out = std::string_view(end_ - n, n);
    return out;
  }
  void set_end(const char* end) { end_ = end; }
  void skip(std::size_t n) {
    [[maybe_unused]] const std::size_t had = left();
    for (std::size_t i = 0; i < n; ++i) byte();
    KOBO_ASSERT(!ok() || had - left() == n, "a skip read past its bytes fails the read");
  }

 private:
  const char* end_ = nullptr;
};

// A reader over `bytes` that knows where they end (for rest() and fixed()).
Reader reader(std::string_view bytes) {
  Reader r(bytes);
  r.set_end(bytes.data() + bytes.size());
  KOBO_ASSERT(r.ok() && r.left() == bytes.size(), "a reader starts at its bytes' front");
  return r;
}

Status malformed(const char* what) {
  KOBO_ASSERT(what != nullptr && *what != '\0', "a refusal names the row it refuses");
  return Status::error(std::string("a ") + what + " of the views is malformed");
}

void put_record_at(std::string& out, const RecordAt& at) {
  KOBO_ASSERT(at.index < kRecordsPerEventMax, "a record past its event's");
  put_varint(out, at.first);
  put_varint(out, at.index);
}

RecordAt get_record_at(Reader& r) {
  RecordAt at;
  at.first = r.varint();
  const std::uint64_t index = r.varint();
  if (index >= kRecordsPerEventMax || at.first + index < at.first) r.fail();
  at.index = static_cast<std::uint32_t>(index);
  KOBO_ASSERT(!r.ok() || (at.index < kRecordsPerEventMax && at.number() >= at.first),
              "a record reference read whole points inside its event");
  return at;
}

// Whether `to` may follow `from` in a payout's life: pending, processing, then success or failed.
bool step_follows(TransactionStatus from, TransactionStatus to) {
  using S = TransactionStatus;
  return (from == S::pending && to == S::processing) ||
         (from == S::processing && (to == S::success || to == S::failed));
}

}  // namespace

std::string encode(const RecordAt& at) {
  std::string out;
  put_record_at(out, at);
  // Two varints: reading them back is O(1).
  const auto back = decode_record_at(out);
  KOBO_ASSERT(back.ok() && back.value().first == at.first && back.value().index == at.index,
              "a reference row reads back as what was written");
  return out;
}

Result<RecordAt> decode_record_at(std::string_view bytes) {
  Reader r = reader(bytes);
  const RecordAt at = get_record_at(r);
  if (!r.ok() || !r.done()) return malformed("reference row");
  KOBO_ASSERT(at.index < kRecordsPerEventMax, "the readers index an event's records by it");
  return at;
}

std::string encode_event(std::string_view hash, UnixMs delay, std::uint64_t webhooks, std::string_view fact) {
  KOBO_ASSERT(hash.size() == kHashSize && delay >= 0,
              "an event row's hash is 32 bytes and its delay not negative");
  KOBO_ASSERT(!fact.empty(), "the decoder refuses an event row without its fact");
  std::string out;
  out.reserve(kHashSize + 8 + fact.size());
  out += hash;
  put_varint(out, static_cast<std::uint64_t>(delay));
  put_varint(out, webhooks);
  out += fact;
  KOBO_ASSERT(out.size() >= kHashSize + 2 + fact.size() && out.compare(0, kHashSize, hash) == 0,
              "an event row is its hash, two varints, then its fact");
  return out;
}

Result<EventRow> decode_event_row(std::string_view bytes) {
  Reader r = reader(bytes);
  EventRow row;
  row.hash = r.fixed(kHashSize);
  const std::uint64_t delay = r.varint();
  row.webhooks = r.varint();
  if (!r.ok() || delay > static_cast<std::uint64_t>(INT64_MAX) || r.done())
    return malformed("transaction event");
  row.delay = static_cast<UnixMs>(delay);
  row.fact = r.rest();
  KOBO_ASSERT(row.hash.size() == kHashSize && !row.fact.empty() && row.delay >= 0,
              "an event row read is its hash and a fact, on time or late");
  return row;
}

std::string encode(const TransactionRow& row) {
  KOBO_ASSERT(row.scope.size() == 17, "a transaction's scope is 17 bytes");
  KOBO_ASSERT(row.scope[16] == '\0' || row.scope[16] == '\1', "a scope ends in its mode byte");
  KOBO_ASSERT(row.steps.size() <= 2, "a payout's status changes twice at most: processing, then its end");
  KOBO_ASSERT(row.steps.empty() || step_follows(TransactionStatus::pending, row.steps.front().status),
              "a payout's first step follows pending (the decoder refuses other steps)");
  KOBO_ASSERT(row.steps.size() < 2 || step_follows(row.steps[0].status, row.steps[1].status),
              "a payout's second step follows its first");
  std::string out;
  out.reserve(24 + 6 * row.steps.size());
  out += row.scope;
  put_record_at(out, row.at);
  put_varint(out, row.webhook);
  for (const StatusStep& s : row.steps) {
    put_varint(out, static_cast<std::uint64_t>(s.status));
    put_signed_varint(out, s.time);
  }
  return out;
}

Result<TransactionRow> decode_transaction(std::string_view bytes) {
  Reader r = reader(bytes);
  TransactionRow row;
  row.scope.assign(r.fixed(17));
  row.at = get_record_at(r);
  row.webhook = r.varint();
  TransactionStatus was = TransactionStatus::pending;
  while (r.ok() && !r.done()) {
    StatusStep s;
    s.status = r.enumerated(TransactionStatus::failed);
    s.time = r.signed_varint();
    if (!step_follows(was, s.status)) r.fail();
    was = s.status;
    row.steps.push_back(s);
  }
  if (!r.ok() || !r.done() || (row.scope.size() == 17 && row.scope[16] != '\0' && row.scope[16] != '\1'))
    return malformed("transaction row");
  KOBO_ASSERT(row.scope.size() == 17 && row.steps.size() <= 2,
              "a transaction row read has its scope and two steps at most");
  KOBO_ASSERT(row.steps.empty() || row.steps.front().status == TransactionStatus::processing,
              "a payout's steps read start where pending ends");
  return row;
}

std::string encode(const WalletRow& row) {
  KOBO_ASSERT(row.tier <= kKycTiers, "a wallet's tier past the tiers");
  KOBO_ASSERT(row.balance.value >= 0 && row.held.value >= 0 && row.credited.value >= 0,
              "a wallet row in debt is one the decoder refuses");
  std::string out;
  put_signed_varint(out, row.balance.value);
  put_signed_varint(out, row.updated);
  put_varint(out, static_cast<std::uint64_t>(row.status));
  put_varint(out, row.movements);
  put_signed_varint(out, row.credited.value);
  put_signed_varint(out, row.moved_at);
  put_signed_varint(out, row.held.value);
  put_varint(out, row.tier);
  put_signed_varint(out, row.debits.day);
  put_signed_varint(out, row.debits.debited.value);
  return out;
}

std::string encode(const TierLimits& limits) {
  KOBO_ASSERT(check_tier_limits(limits).ok(), "tier limits the writer would not record");
  std::string out;
  for (const TierLimit& l : limits) {
    put_signed_varint(out, l.daily_debit.value);
    put_varint(out, l.max_balance ? 1 : 0);
    if (l.max_balance) put_signed_varint(out, l.max_balance->value);
  }
  KOBO_ASSERT(out.size() >= 2 * limits.size(), "each tier takes two bytes at least");
  return out;
}

Result<TierLimits> decode_tier_limits(std::string_view bytes) {
  Reader r = reader(bytes);
  TierLimits limits;
  while (r.ok() && !r.done()) {
    TierLimit l{Kobo(r.signed_varint()), std::nullopt};
    if (r.flag()) l.max_balance = Kobo(r.signed_varint());
    limits.push_back(l);
  }
  if (!r.ok() || !check_tier_limits(limits).ok()) return malformed("tier limits row");
  KOBO_ASSERT(r.done(), "tier limits read whole");
  KOBO_ASSERT(limits.size() == kKycTiers,
              "tier limits read hold a limit per tier (tier_limit() indexes them)");
  return limits;
}

Result<WalletRow> decode_wallet(std::string_view bytes) {
  Reader r = reader(bytes);
  WalletRow row;
  row.balance = Kobo(r.signed_varint());
  row.updated = r.signed_varint();
  row.status = r.enumerated(CollectionStatus::expired);
  row.movements = r.varint();
  row.credited = Kobo(r.signed_varint());
  row.moved_at = r.signed_varint();
  row.held = Kobo(r.signed_varint());
  row.tier = static_cast<std::uint8_t>(r.varint());
  if (row.tier > kKycTiers) r.fail();
  row.debits.day = r.signed_varint();
  row.debits.debited = Kobo(r.signed_varint());
  // A balance is never negative, nor what holds reserve (which may pass the balance within the
  // apply of a capture, between its posting and its release).
  if (row.balance.value < 0 || row.held.value < 0 || row.credited.value < 0) r.fail();
  if (!r.ok() || !r.done()) return malformed("wallet row");
  KOBO_ASSERT(row.tier <= kKycTiers && row.balance.value >= 0 && row.held.value >= 0,
              "a wallet row read has a tier of the tiers and no debt");
  return row;
}

std::string encode(const StatementRow& row) {
  KOBO_ASSERT(row.balance.value >= 0 && row.amount.value != 0, "a movement moves money and leaves no debt");
  KOBO_ASSERT(row.credited.value >= 0,
              "a wallet's credits so far are not negative (the decoder refuses them)");
  std::string out;
  out.reserve(32);
  put_signed_varint(out, row.time);
  put_record_at(out, row.at);
  put_signed_varint(out, row.amount.value);
  put_signed_varint(out, row.balance.value);
  put_signed_varint(out, row.credited.value);
  return out;
}

Result<StatementRow> decode_statement(std::string_view bytes) {
  Reader r = reader(bytes);
  StatementRow row;
  row.time = r.signed_varint();
  row.at = get_record_at(r);
  row.amount = Kobo(r.signed_varint());
  row.balance = Kobo(r.signed_varint());
  row.credited = Kobo(r.signed_varint());
  if (row.balance.value < 0 || row.credited.value < 0 || row.amount.value == 0) r.fail();
  if (!r.ok() || !r.done()) return malformed("statement row");
  KOBO_ASSERT(row.amount.value != 0 && row.balance.value >= 0 && row.at.index < kRecordsPerEventMax,
              "a movement read moves money and leaves no debt");
  return row;
}

std::string encode(const HoldRow& row) {
  KOBO_ASSERT(row.captured.value >= 0, "a hold captured less than nothing");
  KOBO_ASSERT(std::adjacent_find(row.captures.begin(), row.captures.end(), std::greater_equal<>()) ==
                  row.captures.end(),
              "a hold's captures are in log order (the decoder refuses others)");
  std::string out;
  out.reserve(24 + 4 * row.captures.size());
  put_varint(out, row.number);
  put_signed_varint(out, row.captured.value);
  put_varint(out, static_cast<std::uint64_t>(row.status));
  put_signed_varint(out, row.updated);
  for (const std::uint64_t first : row.captures) put_varint(out, first);
  return out;
}

Result<HoldRow> decode_hold(std::string_view bytes) {
  Reader r = reader(bytes);
  HoldRow row;
  row.number = r.varint();
  row.captured = Kobo(r.signed_varint());
  row.status = r.enumerated(HoldStatus::expired);
  row.updated = r.signed_varint();
  while (r.ok() && !r.done()) {
    const std::uint64_t first = r.varint();
    if (!row.captures.empty() && first <= row.captures.back()) r.fail();  // in log order
    row.captures.push_back(first);
  }
  if (row.captured.value < 0) r.fail();
  if (!r.ok() || !r.done()) return malformed("hold row");
  KOBO_ASSERT(row.captured.value >= 0 && std::is_sorted(row.captures.begin(), row.captures.end()),
              "a hold row read captured something or nothing, in log order");
  return row;
}

std::string encode(const BulkRow& row) {
  KOBO_ASSERT(!row.accepted.empty(), "a bulk row holds its BulkTransferAccepted");
  std::string out;
  put_varint(out, row.first);
  out += row.accepted;  // the rest
  KOBO_ASSERT(out.size() > row.accepted.size(), "a bulk row is its first record, then its event");
  return out;
}

Result<BulkRow> decode_bulk(std::string_view bytes) {
  Reader r = reader(bytes);
  BulkRow row;
  row.first = r.varint();
  if (!r.ok() || r.done()) return malformed("bulk row");
  row.accepted.assign(r.rest());
  KOBO_ASSERT(!row.accepted.empty(), "a bulk row read holds its BulkTransferAccepted");
  return row;
}

std::string encode(const ListRow& row) {
  KOBO_ASSERT(row.displaced <= row.count, "a list displaces more records than it holds");
  std::string out;
  put_varint(out, row.count);
  put_signed_varint(out, row.latest);
  put_varint(out, row.displaced);
  const auto back = decode_list(out);
  KOBO_ASSERT(back.ok() && back.value() == row, "a list row reads back as what was written");
  return out;
}

Result<ListRow> decode_list(std::string_view bytes) {
  Reader r = reader(bytes);
  ListRow row;
  row.count = r.varint();
  row.latest = r.signed_varint();
  row.displaced = r.varint();
  if (!r.ok() || !r.done() || row.displaced > row.count) return malformed("list row");
  KOBO_ASSERT(row.displaced <= row.count, "a list read displaces no more than it holds");
  return row;
}

std::string encode(const ListedRow& row) {
  KOBO_ASSERT(row.delay >= 0 && !row.public_id.empty(),
              "a listed record has an id and is not late by less than nothing");
  std::string out;
  put_signed_varint(out, row.time);
  put_varint(out, static_cast<std::uint64_t>(row.delay));
  out += row.public_id;  // the rest
  KOBO_ASSERT(out.size() >= 2 + row.public_id.size() && out.ends_with(row.public_id),
              "a listed row is its time, its delay, then its id to the end");
  return out;
}

Result<ListedRow> decode_listed(std::string_view bytes) {
  Reader r = reader(bytes);
  ListedRow row;
  row.time = r.signed_varint();
  const std::uint64_t delay = r.varint();
  if (!r.ok() || r.done() || delay > static_cast<std::uint64_t>(INT64_MAX)) return malformed("list row");
  row.delay = static_cast<UnixMs>(delay);
  row.public_id.assign(r.rest());
  KOBO_ASSERT(row.delay >= 0 && !row.public_id.empty(), "a listed record read has an id and is not early");
  return row;
}

std::string encode(const KeyRow& row) {
  KOBO_ASSERT(!row.business.empty() && !row.account.empty(), "a key belongs to an account of a business");
  KOBO_ASSERT(row.expires_at >= 0, "a key expires after the epoch");
  std::string out;
  out.push_back(static_cast<char>((row.live ? 1 : 0) | (row.revoked ? 2 : 0)));
  put_signed_varint(out, row.expires_at);
  put_length_prefixed(out, row.business);
  out += row.account;  // the rest
  const auto back = decode_key(out);
  KOBO_ASSERT(back.ok() && back.value() == row, "a key row reads back as what was written");
  return out;
}

Result<KeyRow> decode_key(std::string_view bytes) {
  Reader r = reader(bytes);
  KeyRow row;
  const unsigned char flags = r.byte();
  if (flags > 3) r.fail();
  row.live = (flags & 1) != 0;
  row.revoked = (flags & 2) != 0;
  row.expires_at = r.signed_varint();
  row.business.assign(r.length_prefixed());
  if (!r.ok() || r.done() || row.business.empty() || row.expires_at < 0) return malformed("key row");
  row.account.assign(r.rest());
  KOBO_ASSERT(!row.business.empty() && !row.account.empty(),
              "a key row read names its account of a business");
  KOBO_ASSERT(row.expires_at >= 0, "a key read expires after the epoch, or never (0)");
  return row;
}

namespace {

void put_strings(std::string& out, const std::vector<std::string>& list) {
  const std::size_t before = out.size();
  put_varint(out, list.size());
  for (const std::string& s : list) put_length_prefixed(out, s);
  KOBO_ASSERT(out.size() >= before + 1 + list.size(),
              "a list is its count, then each string's length at least");
}

std::vector<std::string> get_strings(Reader& r) {
  const std::uint64_t n = r.varint();
  std::vector<std::string> out;
  if (n > r.left()) r.fail();  // each takes a byte at least
  for (std::uint64_t i = 0; r.ok() && i < n; ++i) out.emplace_back(r.length_prefixed());
  KOBO_ASSERT(!r.ok() || out.size() == n, "a list of strings read whole holds every one it counts");
  return out;
}

}  // namespace

std::string encode(const AccountRow& row) {
  KOBO_ASSERT(!row.business.empty(), "an account belongs to a business");
  std::string out;
  put_length_prefixed(out, row.business);
  out.push_back(row.live ? '\1' : '\0');
  put_strings(out, row.webhooks);
  out.push_back(row.webhook_events ? '\1' : '\0');
  if (row.webhook_events) put_strings(out, *row.webhook_events);
  out.push_back(row.modes_apart ? '\1' : '\0');
  if (row.modes_apart) {
    put_strings(out, row.live_webhooks);
    out.push_back(row.live_webhook_events ? '\1' : '\0');
    if (row.live_webhook_events) put_strings(out, *row.live_webhook_events);
  }
  put_signed_varint(out, row.updated);
  put_varint(out, row.version);
  return out;
}

Result<AccountRow> decode_account(std::string_view bytes) {
  Reader r = reader(bytes);
  AccountRow row;
  row.business.assign(r.length_prefixed());
  row.live = r.flag();
  row.webhooks = get_strings(r);
  if (r.flag()) row.webhook_events = get_strings(r);
  row.modes_apart = r.flag();
  if (row.modes_apart) {
    row.live_webhooks = get_strings(r);
    if (r.flag()) row.live_webhook_events = get_strings(r);
  }
  row.updated = r.signed_varint();
  row.version = r.varint();
  if (!r.ok() || !r.done() || row.business.empty()) return malformed("account row");
  KOBO_ASSERT(!row.business.empty(), "an account row read names its business");
  return row;
}

std::string hash_bytes(std::string_view hex) {
  KOBO_ASSERT(hex.size() == 2 * kHashSize, "a hash is 64 hex digits");
  std::string out;
  out.reserve(kHashSize);
  const auto digit = [](char c) {
    const int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    KOBO_ASSERT(v >= 0, "a hash is lower-case hex");
    return v;
  };
  for (std::size_t i = 0; i < hex.size(); i += 2)
    out.push_back(static_cast<char>(digit(hex[i]) * 16 + digit(hex[i + 1])));
  KOBO_ASSERT(out.size() == kHashSize, "64 hex digits make 32 bytes");
  return out;
}

std::string hash_hex(std::string_view bytes) {
  KOBO_ASSERT(bytes.size() == kHashSize, "a hash is 32 bytes");
  return to_hex(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

std::string encode(const PositionRow& row) {
  std::string out;
  put_varint(out, row.next_offset);
  put_varint(out, row.seq);
  out += hash_bytes(row.hash);
  KOBO_ASSERT(out.size() >= kHashSize + 2, "a position row holds its raw hash");
  put_varint(out, row.epoch);
  // Written once a flush per partition: reading it back costs a few varints and 32 bytes.
  const auto back = decode_position(out);
  KOBO_ASSERT(back.ok() && back.value() == row, "a position row reads back as what was written");
  return out;
}

Result<PositionRow> decode_position(std::string_view bytes) {
  Reader r = reader(bytes);
  PositionRow row;
  row.next_offset = r.varint();
  row.seq = r.varint();
  const std::string_view hash = r.fixed(kHashSize);
  row.epoch = r.varint();
  if (!r.ok() || !r.done()) return malformed("position row");
  row.hash = hash_hex(hash);
  KOBO_ASSERT(row.hash.size() == 2 * kHashSize, "a position read names its chain's head in hex");
  return row;
}

std::string encode(const AccountKeysRow& row) {
  std::string out;
  put_length_prefixed(out, row.signing_key);
  put_varint(out, row.keys.size());
  for (const AccountKey& k : row.keys) {
    KOBO_ASSERT(!k.hash.empty(), "a key is named by its hash");
    KOBO_ASSERT(k.expires_at >= 0, "a key expires after the epoch, or never (the decoder refuses others)");
    put_length_prefixed(out, k.hash);
    put_signed_varint(out, k.created);
    put_signed_varint(out, k.expires_at);
  }
  return out;
}

Result<AccountKeysRow> decode_account_keys(std::string_view bytes) {
  Reader r = reader(bytes);
  AccountKeysRow row;
  row.signing_key.assign(r.length_prefixed());
  const std::uint64_t n = r.varint();
  // Each key takes at least three bytes: a count beyond that is not this row.
  if (r.ok() && n <= r.left() / 3) {
    row.keys.resize(n);
    for (AccountKey& k : row.keys) {
      k.hash.assign(r.length_prefixed());
      k.created = r.signed_varint();
      k.expires_at = r.signed_varint();
      if (k.hash.empty() || k.expires_at < 0) r.fail();
    }
  } else {
    r.fail();
  }
  if (!r.ok() || !r.done()) return malformed("account keys row");
  KOBO_ASSERT(row.keys.size() == n, "an account keys row read holds every key it counts");
  KOBO_ASSERT(
      std::ranges::none_of(row.keys, [](const AccountKey& k) { return k.hash.empty() || k.expires_at < 0; }),
      "each key read is named by its hash and expires after the epoch, or never (0)");
  return row;
}

std::string encode_balance(Kobo balance) {
  std::string out;
  put_signed_varint(out, balance.value);
  KOBO_ASSERT(!out.empty(), "a balance takes a byte at least");
  const auto back = decode_balance(out);
  KOBO_ASSERT(back.ok() && back.value() == balance, "a balance reads back as what was written");
  return out;
}

Result<Kobo> decode_balance(std::string_view bytes) {
  Reader r = reader(bytes);
  const Kobo balance(r.signed_varint());
  if (!r.ok() || !r.done()) return malformed("system balance");
  return balance;
}

std::string encode(const WebhookRow& row) {
  KOBO_ASSERT(row.announced <= row.sequence, "more webhook events announced at creation than in all");
  std::string out;
  put_varint(out, row.sequence);
  put_varint(out, row.announced);
  put_length_prefixed(out, row.secret);
  put_signed_varint(out, row.secret_at);
  out += row.previous;  // the rest
  return out;
}

Result<WebhookRow> decode_webhook(std::string_view bytes) {
  Reader r = reader(bytes);
  WebhookRow row;
  row.sequence = r.varint();
  row.announced = r.varint();
  row.secret.assign(r.length_prefixed());
  row.secret_at = r.signed_varint();
  if (!r.ok() || row.announced > row.sequence) return malformed("webhook row");
  KOBO_ASSERT(row.announced <= row.sequence, "a webhook row read announced no more than it sent");
  row.previous.assign(r.rest());
  return row;
}

std::string encode(const WebhookEventRow& row) {
  KOBO_ASSERT(!row.transaction.empty(), "a webhook event announces a transaction");
  KOBO_ASSERT(row.at.number() < row.position,
              "a webhook event announces a record created before it (the decoder refuses others)");
  std::string out;
  out.reserve(64 + row.transaction.size());
  put_varint(out, static_cast<std::uint64_t>(row.type));
  put_varint(out, row.position);
  put_varint(out, row.ordinal);
  put_record_at(out, row.at);
  put_signed_varint(out, row.time);
  out += hash_bytes(row.hash);
  out += row.transaction;  // the rest
  return out;
}

Result<WebhookEventRow> decode_webhook_event(std::string_view bytes) {
  Reader r = reader(bytes);
  WebhookEventRow row;
  row.type = r.enumerated(WebhookEventType::account_debit_failed);
  row.position = r.varint();
  row.ordinal = r.varint();
  row.at = get_record_at(r);
  row.time = r.signed_varint();
  const std::string_view hash = r.fixed(kHashSize);
  // The record it announces was created before the event that announced it.
  if (!r.ok() || r.done() || row.at.number() >= row.position) return malformed("webhook event row");
  row.hash = hash_hex(hash);
  row.transaction.assign(r.rest());
  KOBO_ASSERT(row.hash.size() == 2 * kHashSize && !row.transaction.empty() && row.at.number() < row.position,
              "a webhook event read announces an earlier record of an event it names");
  return row;
}

}  // namespace kobo::rows
