#include "command/state.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <utility>

#include "common/assert.h"
#include "common/crypto.h"

using nlohmann::json;

namespace kobo {

namespace {

constexpr std::string_view kWalletPrefix = "vba-";
constexpr std::size_t kUuidLength = 36;                    // 8-4-4-4-12 hex digits
constexpr std::size_t kUuidDashes[] = {8, 13, 18, 23};
constexpr std::size_t kUuidVersion = 14;                   // the digit that is 4 in a uuid v4

// A lower-case uuid v4 as its 128 bits (32 hex digits, dashes dropped); nullopt for any other
// text, which would not print back the same.
std::optional<WalletKey> pack_uuid(std::string_view uuid) {
  if (uuid.size() != kUuidLength || uuid[kUuidVersion] != '4') return std::nullopt;
  WalletKey k;
  int digits = 0;
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    const char c = uuid[i];
    if (std::ranges::find(kUuidDashes, i) != std::end(kUuidDashes)) {
      if (c != '-') return std::nullopt;
      continue;
    }
    std::uint64_t nibble = 0;
    if (c >= '0' && c <= '9') nibble = static_cast<std::uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f') nibble = static_cast<std::uint64_t>(c - 'a' + 10);
    else return std::nullopt;
    std::uint64_t& half = digits < 16 ? k.hi : k.lo;
    half = half << 4 | nibble;
    ++digits;
  }
  return k;
}

std::string unpack_uuid(const WalletKey& k) {
  UuidBytes b;
  for (std::size_t i = 0; i < 8; ++i) {
    b[i] = static_cast<std::uint8_t>(k.hi >> (8 * (7 - i)));
    b[8 + i] = static_cast<std::uint8_t>(k.lo >> (8 * (7 - i)));
  }
  return format_uuid(b);
}

// The name index's key. A collision only costs a comparison: name_taken() confirms every hit.
std::uint64_t name_hash(std::string_view account, bool live, std::string_view name) {
  return std::hash<std::string>{}(scope_key(account, live) + std::string(name));
}

}  // namespace

std::string format_account_number(std::uint64_t number) {
  char text[11];
  KOBO_ASSERT(number < 10'000'000'000ULL, "account numbers have 10 digits");
  std::snprintf(text, sizeof text, "%010llu", static_cast<unsigned long long>(number));
  return text;
}

std::optional<std::uint64_t> parse_account_number(std::string_view text) {
  if (text.size() != 10 || !std::ranges::all_of(text, [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  std::uint64_t n = 0;
  std::from_chars(text.data(), text.data() + text.size(), n);
  return n;
}

std::optional<WalletKey> Wallets::key_of(std::string_view id) const {
  if (id.starts_with(kWalletPrefix))
    if (auto k = pack_uuid(id.substr(kWalletPrefix.size()))) return k;
  if (auto odd = odd_ids_.find(id)) return WalletKey{0, *odd};
  return std::nullopt;
}

std::string Wallets::id_of(const WalletKey& key) const {
  if (key.hi == 0) return odd_ids_[static_cast<std::uint32_t>(key.lo)];
  return std::string(kWalletPrefix) + unpack_uuid(key);
}

const WalletState* Wallets::at(const WalletKey& key) const {
  const auto it = by_key_.find(key);
  KOBO_ASSERT(it != by_key_.end(), "a wallet index names a wallet that exists");
  return &it->second;
}

const WalletState* Wallets::find(std::string_view id) const {
  const auto key = key_of(id);
  if (!key) return nullptr;
  const auto it = by_key_.find(*key);
  return it == by_key_.end() ? nullptr : &it->second;
}

WalletState* Wallets::find(std::string_view id) {
  return const_cast<WalletState*>(std::as_const(*this).find(id));
}

std::optional<std::string> Wallets::id_with_number(std::string_view number) const {
  const auto n = parse_account_number(number);
  if (!n) return std::nullopt;
  const auto it = by_number_.find(*n);
  if (it == by_number_.end()) return std::nullopt;
  return id_of(it->second);
}

bool Wallets::name_taken(std::string_view account, bool live, std::string_view name) const {
  const auto [first, last] = by_name_.equal_range(name_hash(account, live, name));
  for (auto it = first; it != last; ++it) {
    const WalletState* w = at(it->second);
    const Caller& o = owner(*w);
    if (o.account == account && o.live == live && w->account_name == name) return true;
  }
  return false;
}

void Wallets::add(std::string_view id, const Caller& owner, WalletState w, bool named) {
  std::optional<WalletKey> key = key_of(id);
  if (!key) key = WalletKey{0, odd_ids_.intern(std::string(id))};
  KOBO_ASSERT(!by_key_.contains(*key), "wallet id reused");
  KOBO_ASSERT(!named || !name_taken(owner.account, owner.live, w.account_name), "wallet name reused");
  KOBO_ASSERT(by_number_.emplace(w.account_number, *key).second, "account number reused");
  if (named) by_name_.emplace(name_hash(owner.account, owner.live, w.account_name), *key);
  w.owner = owners_.intern(owner);
  by_key_.emplace(*key, std::move(w));
}

Kobo PartitionState::balance_of(std::string_view ledger_account) const {
  if (const WalletState* w = wallets.find(ledger_account)) return w->balance;
  if (auto s = system_balances.find(std::string(ledger_account)); s != system_balances.end()) return s->second;
  return Kobo(0);
}

std::string scope_key(std::string_view account, bool live) {
  std::string k(account);
  k += live ? "|l|" : "|t|";
  return k;
}

std::int64_t interleaved_id(std::uint64_t n, Partition p, std::uint32_t partitions) {
  return static_cast<std::int64_t>(n * partitions + p.value + 1);
}

namespace {

void post(PartitionState& s, const Event& e, Kobo delta) {
  const std::string account = e.data.at("ledgerAccount").get<std::string>();
  Kobo* balance = nullptr;
  if (WalletState* w = s.wallets.find(account)) {
    balance = &w->balance;
  } else {
    KOBO_ASSERT(account.starts_with("sys:"), "posting to an unknown ledger account");
    balance = &s.system_balances[account];
  }
  *balance += delta;
  s.total += delta;
  KOBO_ASSERT(balance->value == e.data.at("balance").get<std::int64_t>(),
              "event balance disagrees with the replayed balance");
  if (account.starts_with("vba-")) KOBO_ASSERT(balance->value >= 0, "wallet balance below zero");
}

void record_transaction(PartitionState& s, const nlohmann::json& data) {
  const auto& trx = data.at("transaction");
  ++s.transactions_created;
  if (trx.value("entry", "") == "debit" && trx.at("destinationType") == "VirtualAccount" &&
      trx.at("status") == "pending")
    s.pending_settlement.emplace(trx.at("publicId").get<std::string>(), trx.at("destination").get<std::string>());
  if (trx.value("entry", "") == "debit" && trx.at("destinationType") == "BankAccount") {
    PayoutState p;
    p.source = trx.at("source").get<std::string>();
    p.amount = Kobo(trx.at("amount").get<std::int64_t>());
    p.fee = Kobo(trx.at("fee").get<std::int64_t>());
    p.updated_at = parse_iso8601(trx.at("createdAt").get<std::string>()).value_or(0);
    p.sandbox_fails = trx.value("/metadata/sandboxOutcome"_json_pointer, json()) == "failed";
    p.business = trx.at("auth").get<std::string>();
    p.live = trx.at("live").get<bool>();
    p.reference = trx.at("reference").get<std::string>();
    p.link_ref = trx.at("linkRef").get<std::string>();
    p.narration = trx.at("narration").get<std::string>();
    p.beneficiary = trx.at("destinationData");
    s.payouts.emplace(trx.at("publicId").get<std::string>(), std::move(p));
  }
  const auto& ref = trx.find("reference");
  if (trx.value("entry", "") == "debit" && ref != trx.end() && ref->is_string()) {
    const std::string key = scope_key(trx.at("account").get<std::string>(), trx.at("live").get<bool>()) +
                            ref->get<std::string>();
    s.references[key] = ReferenceState{data.value("fingerprint", std::string()),
                                       trx.at("publicId").get<std::string>()};
  }
}

}  // namespace

void apply(PartitionState& s, const Event& e) {
  const auto& d = e.data;
  switch (e.type) {
    case EventType::writer_started:
      break;
    case EventType::business_created:
      s.businesses.insert(d.at("business").at("publicId").get<std::string>());
      break;
    case EventType::account_created: {
      const auto& a = d.at("account");
      s.account_business[a.at("publicId").get<std::string>()] = a.at("business").get<std::string>();
      ++s.accounts_created;
      break;
    }
    case EventType::account_updated:
      KOBO_ASSERT(s.account_business.contains(d.at("accountId").get<std::string>()), "update of an unknown account");
      break;
    case EventType::bank_account_added:
      KOBO_ASSERT(s.bank_accounts
                      .emplace(d.at("bankAccount").at("publicId").get<std::string>(),
                               d.at("bankAccount").at("id").get<std::int64_t>())
                      .second,
                  "bank account added twice");
      ++s.bank_accounts_created;
      break;
    case EventType::collection_created: {
      const auto& c = d.at("collection");
      CollectionState cs;
      cs.public_id = c.at("publicId").get<std::string>();
      cs.destination = c.at("destination").get<std::string>();
      cs.amount = Kobo(c.at("amount").get<std::int64_t>());
      cs.expires_at = parse_iso8601(c.at("expiration").get<std::string>()).value_or(0);
      cs.business = c.at("auth").get<std::string>();
      cs.account = c.at("account").get<std::string>();
      cs.live = c.at("live").get<bool>();
      const std::string number = c.at("accountNumber").get<std::string>();
      if (c.at("reference").is_string())
        s.collection_references.insert(scope_key(cs.account, cs.live) + c.at("reference").get<std::string>());
      KOBO_ASSERT(!s.wallets.id_with_number(number), "collection account number reused");
      s.collection_numbers.emplace(cs.public_id, number);
      KOBO_ASSERT(s.collections.emplace(number, std::move(cs)).second, "collection account number reused");
      ++s.account_numbers_issued;
      break;
    }
    case EventType::collection_status_changed: {
      const auto number = s.collection_numbers.find(d.at("publicId").get<std::string>());
      KOBO_ASSERT(number != s.collection_numbers.end(), "status change of an unknown collection wallet");
      auto& c = s.collections.at(number->second);
      KOBO_ASSERT(c.active && d.at("from") == "pending", "a collection wallet is paid or expires once");
      c.active = false;
      break;
    }
    case EventType::wallet_created: {
      const auto& w = d.at("wallet");
      const Caller owner{w.at("auth").get<std::string>(), w.at("account").get<std::string>(),
                         w.at("live").get<bool>()};
      const std::string id = w.at("publicId").get<std::string>();
      WalletState ws;
      ws.id = w.at("id").get<std::int64_t>();
      ws.account_name = w.at("accountName").get<std::string>();
      const auto number = parse_account_number(w.at("accountNumber").get<std::string>());
      KOBO_ASSERT(number.has_value(), "a wallet's account number has 10 digits");
      ws.account_number = *number;
      const bool transit = w.contains("settlementAccount");  // transit: no name or category rules
      if (transit) {
        s.transit_settlement.emplace(id, w.at("settlementAccount").get<std::string>());
      } else if (w.value("category", "") == "primary") {
        ++s.primary_wallets[scope_key(owner.account, owner.live)];
      }
      s.wallets.add(id, owner, std::move(ws), /*named=*/!transit);
      ++s.wallets_created;
      ++s.account_numbers_issued;
      break;
    }
    case EventType::debited:
      post(s, e, -Kobo(d.at("amount").get<std::int64_t>()));
      if (d.contains("transaction")) record_transaction(s, d);
      break;
    case EventType::credited:
      post(s, e, Kobo(d.at("amount").get<std::int64_t>()));
      if (d.contains("transaction")) record_transaction(s, d);
      break;
    case EventType::transaction_status_changed: {
      const std::string id = d.at("publicId").get<std::string>();
      s.pending_settlement.erase(id);
      if (auto p = s.payouts.find(id); p != s.payouts.end()) {
        KOBO_ASSERT(p->second.status == d.at("from"), "payout moved from a status it was not in");
        const std::string to = d.at("status").get<std::string>();
        if (to == "success" || to == "failed") {
          s.payouts.erase(p);
        } else {
          p->second.status = to;
          p->second.updated_at = parse_iso8601(d.at("updatedAt").get<std::string>()).value_or(0);
        }
      }
      break;
    }
  }
  if (e.last_of_command()) KOBO_ASSERT(s.total.value == 0, "partition balances do not sum to zero");
}

}  // namespace kobo
