#include "projection/rows.h"

#include "common/varint.h"

namespace kobo::rows {
namespace {

class Reader : public VarintReader {
 public:
  using VarintReader::VarintReader;
  template <typename E>
  E enumerated(E last) {
    const std::uint64_t v = varint();
    if (v > static_cast<std::uint64_t>(last)) fail();
    return ok() ? static_cast<E>(v) : E{};
  }
};

}  // namespace

std::string encode(const TransactionRow& row) {
  std::string out;
  out.reserve(16 + 6 * row.steps.size());
  put_varint(out, row.partition.value);
  put_varint(out, row.seq.value);
  put_varint(out, row.index);
  for (const StatusStep& s : row.steps) {
    put_varint(out, static_cast<std::uint64_t>(s.status));
    put_signed_varint(out, s.time);
  }
  return out;
}

Result<TransactionRow> decode_transaction(std::string_view bytes) {
  Reader r(bytes);
  TransactionRow row;
  row.partition = Partition(static_cast<std::uint32_t>(r.varint()));
  row.seq = Seq(r.varint());
  row.index = static_cast<std::uint32_t>(r.varint());
  while (r.ok() && !r.done()) {
    StatusStep s;
    s.status = r.enumerated(TransactionStatus::failed);
    s.time = r.signed_varint();
    row.steps.push_back(s);
  }
  if (!r.ok() || !r.done()) return Status::error("a transaction row of the views is malformed");
  return row;
}

std::string encode(const WalletRow& row) {
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
  std::string out;
  for (const TierLimit& l : limits) {
    put_signed_varint(out, l.daily_debit.value);
    put_varint(out, l.max_balance ? 1 : 0);
    if (l.max_balance) put_signed_varint(out, l.max_balance->value);
  }
  return out;
}

Result<TierLimits> decode_tier_limits(std::string_view bytes) {
  Reader r(bytes);
  TierLimits limits;
  while (r.ok() && !r.done()) {
    TierLimit l{Kobo(r.signed_varint()), std::nullopt};
    if (r.varint() == 1) l.max_balance = Kobo(r.signed_varint());
    limits.push_back(l);
  }
  if (!r.ok() || !check_tier_limits(limits).ok())
    return Status::error("the tier limits of the views are malformed");
  return limits;
}

Result<WalletRow> decode_wallet(std::string_view bytes) {
  Reader r(bytes);
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
  if (!r.ok() || !r.done()) return Status::error("a wallet row of the views is malformed");
  return row;
}

std::string encode(const StatementRow& row) {
  std::string out;
  out.reserve(32);
  put_signed_varint(out, row.time);
  put_varint(out, row.partition.value);
  put_varint(out, row.seq.value);
  put_varint(out, row.index);
  put_signed_varint(out, row.amount.value);
  put_signed_varint(out, row.balance.value);
  put_signed_varint(out, row.credited.value);
  return out;
}

Result<StatementRow> decode_statement(std::string_view bytes) {
  Reader r(bytes);
  StatementRow row;
  row.time = r.signed_varint();
  row.partition = Partition(static_cast<std::uint32_t>(r.varint()));
  row.seq = Seq(r.varint());
  row.index = static_cast<std::uint32_t>(r.varint());
  row.amount = Kobo(r.signed_varint());
  row.balance = Kobo(r.signed_varint());
  row.credited = Kobo(r.signed_varint());
  if (!r.ok() || !r.done()) return Status::error("a statement row of the views is malformed");
  return row;
}

std::string encode(const ListedRow& row) {
  std::string out;
  out.reserve(8 + row.public_id.size());
  put_varint(out, static_cast<std::uint64_t>(row.entry));
  put_varint(out, static_cast<std::uint64_t>(row.status));
  put_signed_varint(out, row.amount);
  out += row.public_id;  // the rest
  return out;
}

Result<ListedRow> decode_listed(std::string_view bytes) {
  Reader r(bytes);
  ListedRow row;
  row.entry = r.enumerated(Entry::credit);
  row.status = r.enumerated(TransactionStatus::failed);
  row.amount = r.signed_varint();
  if (!r.ok()) return Status::error("a transaction listing of the views is malformed");
  row.public_id.assign(bytes.substr(bytes.size() - r.left()));
  return row;
}

std::string encode(const HoldRow& row) {
  std::string out;
  out.reserve(24 + 4 * row.captures.size());
  put_varint(out, row.partition.value);
  put_varint(out, row.placed.value);
  put_signed_varint(out, row.captured.value);
  put_varint(out, static_cast<std::uint64_t>(row.status));
  put_signed_varint(out, row.updated);
  for (const Seq s : row.captures) put_varint(out, s.value);
  return out;
}

Result<HoldRow> decode_hold(std::string_view bytes) {
  Reader r(bytes);
  HoldRow row;
  row.partition = Partition(static_cast<std::uint32_t>(r.varint()));
  row.placed = Seq(r.varint());
  row.captured = Kobo(r.signed_varint());
  row.status = r.enumerated(HoldStatus::expired);
  row.updated = r.signed_varint();
  while (r.ok() && !r.done()) row.captures.push_back(Seq(r.varint()));
  if (!r.ok() || !r.done()) return Status::error("a hold row of the views is malformed");
  return row;
}

std::string encode(const BulkRow& row) {
  std::string out;
  put_varint(out, row.partition.value);
  put_varint(out, row.seq.value);
  put_varint(out, row.events);
  return out;
}

Result<BulkRow> decode_bulk(std::string_view bytes) {
  Reader r(bytes);
  BulkRow row;
  row.partition = Partition(static_cast<std::uint32_t>(r.varint()));
  row.seq = Seq(r.varint());
  row.events = static_cast<std::uint32_t>(r.varint());
  if (!r.ok() || !r.done() || row.events == 0) return Status::error("a bulk row of the views is malformed");
  return row;
}

std::string encode(const KeyRow& row) {
  std::string out;
  out.push_back(row.live ? '\1' : '\0');
  put_signed_varint(out, row.expires_at);
  put_length_prefixed(out, row.business);
  out += row.account;  // the rest
  return out;
}

Result<KeyRow> decode_key(std::string_view bytes) {
  Reader r(bytes);
  KeyRow row;
  const unsigned char live = r.byte();
  row.expires_at = r.signed_varint();
  row.business.assign(r.length_prefixed());
  if (!r.ok() || live > 1 || row.expires_at < 0) return Status::error("a key row of the views is malformed");
  row.live = live == 1;
  row.account.assign(bytes.substr(bytes.size() - r.left()));
  return row;
}

std::string encode(const AccountKeysRow& row) {
  std::string out;
  put_length_prefixed(out, row.signing_key);
  put_varint(out, row.keys.size());
  for (const AccountKey& k : row.keys) {
    put_length_prefixed(out, k.hash);
    put_signed_varint(out, k.created);
    put_signed_varint(out, k.expires_at);
  }
  return out;
}

Result<AccountKeysRow> decode_account_keys(std::string_view bytes) {
  Reader r(bytes);
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
    }
  } else {
    r.fail();
  }
  if (!r.ok() || !r.done()) return Status::error("an account keys row of the views is malformed");
  return row;
}

std::string encode(const WebhookRow& row) {
  std::string out;
  put_varint(out, row.sequence);
  put_length_prefixed(out, row.secret);
  put_signed_varint(out, row.secret_at);
  out += row.previous;  // the rest
  return out;
}

Result<WebhookRow> decode_webhook(std::string_view bytes) {
  Reader r(bytes);
  WebhookRow row;
  row.sequence = r.varint();
  row.secret.assign(r.length_prefixed());
  row.secret_at = r.signed_varint();
  if (!r.ok()) return Status::error("a webhook row of the views is malformed");
  row.previous.assign(bytes.substr(bytes.size() - r.left()));
  return row;
}

std::string encode(const WebhookEventRow& row) {
  std::string out;
  out.reserve(48 + row.hash.size() + row.transaction.size());
  put_varint(out, static_cast<std::uint64_t>(row.type));
  put_varint(out, row.partition.value);
  put_varint(out, row.seq.value);
  put_signed_varint(out, row.time);
  put_length_prefixed(out, row.hash);
  out += row.transaction;  // the rest
  return out;
}

Result<WebhookEventRow> decode_webhook_event(std::string_view bytes) {
  Reader r(bytes);
  WebhookEventRow row;
  row.type = r.enumerated(WebhookEventType::account_debit_failed);
  row.partition = Partition(static_cast<std::uint32_t>(r.varint()));
  row.seq = Seq(r.varint());
  row.time = r.signed_varint();
  row.hash.assign(r.length_prefixed());
  if (!r.ok()) return Status::error("a webhook event row of the views is malformed");
  row.transaction.assign(bytes.substr(bytes.size() - r.left()));
  return row;
}

}  // namespace kobo::rows
