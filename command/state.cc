#include "command/state.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <utility>
#include <variant>

#include "common/assert.h"
#include "common/crypto.h"

namespace kobo {

namespace {

constexpr std::size_t kUuidVersion = 14;  // the digit that is 4 in a uuid v4

// A lower-case uuid v4 as its 128 bits; nullopt for any other text, which would not print back
// the same.
std::optional<WalletKey> pack_uuid(std::string_view uuid) {
  const auto bytes = parse_uuid(uuid);
  if (!bytes || uuid[kUuidVersion] != '4') return std::nullopt;
  WalletKey k;
  for (std::size_t i = 0; i < 8; ++i) {
    k.hi = k.hi << 8 | (*bytes)[i];
    k.lo = k.lo << 8 | (*bytes)[8 + i];
  }
  KOBO_ASSERT(((k.hi >> 12) & 0xf) == 4, "a uuid v4 keeps its version nibble in `hi`");
  return k;
}

std::string unpack_uuid(const WalletKey& k) {
  UuidBytes b;
  for (std::size_t i = 0; i < 8; ++i) {
    b[i] = static_cast<std::uint8_t>(k.hi >> (8 * (7 - i)));
    b[8 + i] = static_cast<std::uint8_t>(k.lo >> (8 * (7 - i)));
  }
  std::string uuid = format_uuid(b);
  KOBO_ASSERT(uuid.size() == 36 && uuid[kUuidVersion] == '4',
              "a wallet key unpacks to the uuid v4 it packed");
  return uuid;
}

// The name index's key, kept in snapshots, so stable_hash. A collision only costs a comparison:
// name_taken() confirms every hit.
std::uint64_t name_hash(std::string_view account, bool live, std::string_view name) {
  return stable_hash(scope_key(account, live) + std::string(name));
}

}  // namespace

std::uint64_t stable_hash(std::string_view text) {
  std::uint64_t h = 14'695'981'039'346'656'037ULL;  // the FNV offset basis
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1'099'511'628'211ULL;  // the FNV prime
  }
  return h;
}

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
  const auto parsed = std::from_chars(text.data(), text.data() + text.size(), n);
  KOBO_ASSERT(parsed.ec == std::errc() && n < 10'000'000'000ULL, "ten digits are a number below 10^10");
  return n;
}

std::optional<WalletKey> Wallets::key_of(std::string_view id) const {
  if (id.starts_with(kWalletIdPrefix))
    if (auto k = pack_uuid(id.substr(kWalletIdPrefix.size()))) {
      KOBO_ASSERT(k->hi != 0, "a packed uuid v4 holds its version nibble in `hi`: never 0");
      return k;
    }
  if (auto odd = odd_ids_.find(id)) return WalletKey{0, *odd};
  return std::nullopt;
}

std::string Wallets::id_of(const WalletKey& key) const {
  KOBO_ASSERT(key.hi != 0 || key.lo < odd_ids_.size(), "a wallet key is a uuid's or an interned id's");
  if (key.hi == 0) return odd_ids_[static_cast<std::uint32_t>(key.lo)];
  return std::string(kWalletIdPrefix) + unpack_uuid(key);
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
  KOBO_ASSERT(by_key_.contains(it->second), "an account number names a wallet that exists");
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

std::optional<WalletFacts> Wallets::facts(std::string_view id) const {
  const WalletState* w = find(id);
  if (w == nullptr) return std::nullopt;
  const WalletBank& b = bank(*w);
  WalletFacts facts{w->id,  std::string(id), w->account_name, format_account_number(w->account_number),
                    b.code, b.name};
  KOBO_ASSERT(facts.account_number.size() == 10, "a wallet's account number shows 10 digits");
  return facts;
}

void Wallets::add(std::string_view id, const Caller& owner, const WalletBank& bank, WalletState w,
                  bool named) {
  std::optional<WalletKey> key = key_of(id);
  if (!key) key = WalletKey{0, odd_ids_.intern(std::string(id))};
  KOBO_ASSERT(!by_key_.contains(*key), "wallet id reused");
  KOBO_ASSERT(!named || !name_taken(owner.account, owner.live, w.account_name), "wallet name reused");
  const bool number_new = by_number_.emplace(w.account_number, *key).second;
  KOBO_ASSERT(number_new, "account number reused");
  if (named) by_name_.emplace(name_hash(owner.account, owner.live, w.account_name), *key);
  w.owner = owners_.intern(owner);
  w.bank = banks_.intern(bank);
  by_key_.emplace(*key, std::move(w));
  KOBO_ASSERT(by_number_.size() == by_key_.size(), "every wallet has its account number, once");
}

Kobo PartitionState::balance_of(std::string_view ledger_account) const {
  if (const WalletState* w = wallets.find(ledger_account)) return w->balance;
  if (const auto a = system_account_from_name(ledger_account)) return balance_of(*a);
  return Kobo(0);
}

Kobo PartitionState::held_of(std::string_view wallet) const {
  if (held.empty()) return Kobo(0);
  const auto it = held.find(std::string(wallet));
  if (it == held.end()) return Kobo(0);
  KOBO_ASSERT(it->second.value > 0, "a wallet holds a positive amount or has no entry");
  return it->second;
}

std::uint64_t interleaved_id(std::uint64_t n, Partition p, std::uint32_t partitions) {
  KOBO_ASSERT(p.value < partitions, "an id of one of the partitions");
  KOBO_ASSERT(n <= (UINT64_MAX - partitions) / partitions, "ids never run out of 64 bits");
  return n * partitions + p.value + 1;
}

namespace {

// Moves the balances of an event's postings, each through the one posting rule.
void post_all(PartitionState& s, const std::vector<Posting>& postings) {
  KOBO_ASSERT(!postings.empty(), "a money event posts something");
  for (const Posting& p : postings) {
    Kobo* balance = nullptr;
    if (WalletState* w = s.wallets.find(p.account)) {
      balance = &w->balance;
    } else {
      const auto a = system_account_from_name(p.account);
      KOBO_ASSERT(a.has_value(), "posting to an unknown ledger account");
      balance = &s.system_balances[static_cast<std::size_t>(*a)];
    }
    const PostingResult r = post(*balance, p);
    KOBO_ASSERT(r.fault == PostingFault::none, "a posting the writer decided breaks the posting rule");
    *balance = r.balance;
    const auto total = checked_add(s.total, p.amount);
    KOBO_ASSERT(total.has_value(), "the partition's sum overflows");
    s.total = *total;
  }
}

// The records a money event creates count towards the integer ids of the next ones.
void count_transactions(PartitionState& s, const EventData& d) {
  const std::size_t created = transactions_created_count(d);
  KOBO_ASSERT(created >= 1 && created <= 3, "a money event creates 1 to 3 transaction records");
  s.transactions_created += created;
  KOBO_ASSERT(s.transactions_created >= created, "the count of records never wraps");
}

// Whether a payout's metadata asks the sandbox rail to fail it: read once, when it is accepted.
bool sandbox_fails(const RawJson& metadata) {
  const auto j = nlohmann::json::parse(metadata.text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return false;
  const auto it = j.find("sandboxOutcome");
  return it != j.end() && it->is_string() && it->get_ref<const std::string&>() == "failed";
}

template <typename Opened>
void open_wallet(PartitionState& s, const Event& e, const Opened& x, bool named) {
  const std::string& id = x.wallet.value;
  const std::uint64_t int_id = x.id;
  const std::string& name = x.name;
  const std::string& account_number = x.account_number;
  WalletState ws;
  ws.id = int_id;
  ws.account_name = name;
  const auto number = parse_account_number(account_number);
  KOBO_ASSERT(number.has_value(), "a wallet's account number has 10 digits");
  ws.account_number = *number;
  ws.tier = static_cast<std::uint8_t>(x.kyc_tier.value_or(0));
  s.wallets.add(id, Caller{e.business, x.account.value, e.live}, WalletBank{x.bank_code, x.bank_name},
                std::move(ws), named);
  ++s.wallets_created;
  ++s.account_numbers_issued;
  KOBO_ASSERT(s.wallets.id_with_number(account_number) == id, "a wallet opened is found by its number");
}

// A collection wallet is paid or expires once; then it leaves the hot state (History keeps its number).
void close_collection(PartitionState& s, const WalletId& collection) {
  const auto number = s.collection_numbers.find(collection.value);
  KOBO_ASSERT(number != s.collection_numbers.end(), "a collection wallet closes once, while it is open");
  const std::size_t closed = s.collections.erase(number->second);
  KOBO_ASSERT(closed == 1, "an open collection wallet has its number");
  s.collection_numbers.erase(number);
  KOBO_ASSERT(s.collection_numbers.size() == s.collections.size(),
              "each open collection wallet has its number");
}

// Adds `delta` to what wallet `source`'s pending holds reserve; the entry leaves at zero.
void add_held(PartitionState& s, const std::string& source, Kobo delta) {
  Kobo& h = s.held[source];
  h += delta;
  KOBO_ASSERT(h.value >= 0, "a wallet's holds reserve a negative amount");
  if (h.value == 0) s.held.erase(source);
  KOBO_ASSERT(s.held.size() <= s.holds.size(), "a wallet holds money only for pending holds of it");
}

// A pending hold ends: what remains of it is released and it leaves the hot state.
void end_hold(PartitionState& s, const HoldId& hold) {
  const auto it = s.holds.find(hold.value);
  KOBO_ASSERT(it != s.holds.end(), "a hold ends once, while it is pending");
  add_held(s, it->second.source, -it->second.remaining());
  s.holds.erase(it);
  KOBO_ASSERT(!s.holds.contains(hold.value), "an ended hold leaves the hot state");
}

struct Applier {
  PartitionState& s;
  const Event& e;

  void operator()(const WriterStarted& x) const {
    KOBO_ASSERT(x.epoch == e.epoch, "a writer starts with the epoch it appends with");
    KOBO_ASSERT(e.business.empty(), "a writer starts a partition, not a business");
    if (x.tier_limits) s.tier_limits = *x.tier_limits;
  }

  void operator()(const WalletTierChanged& x) const {
    WalletState* w = s.wallets.find(x.wallet.value);
    KOBO_ASSERT(w != nullptr, "the tier of an unknown wallet changed");
    w->tier = static_cast<std::uint8_t>(x.kyc_tier.value_or(0));
    KOBO_ASSERT(w->tier <= kKycTiers, "a wallet's tier is one of the tiers, or none");
  }

  void operator()(const BusinessRegistered& x) const {
    const bool business_new = s.businesses.insert(e.business).second;
    KOBO_ASSERT(business_new, "a business registered twice");
    const bool account_new = s.account_business.emplace(x.account.value, e.business).second;
    KOBO_ASSERT(account_new, "an account registered twice");
    ++s.accounts_created;
  }

  void operator()(const AccountUpdated& x) const {
    KOBO_ASSERT(s.account_business.contains(x.account.value), "update of an unknown account");
  }

  void operator()(const WebhookSecretRotated& x) const {
    KOBO_ASSERT(s.account_business.contains(x.account.value), "webhook secret of an unknown account");
  }

  void operator()(const SigningKeySealed& x) const {
    KOBO_ASSERT(s.account_business.contains(x.account.value), "signing key of an unknown account");
  }

  void operator()(const SecretKeyRolled& x) const {
    KOBO_ASSERT(s.account_business.contains(x.account.value), "a key of an unknown account rolled");
  }

  void operator()(const SecretKeyRevoked& x) const {
    KOBO_ASSERT(s.account_business.contains(x.account.value), "a key of an unknown account revoked");
  }

  void operator()(const WebhooksConfigured& x) const {
    KOBO_ASSERT(s.account_business.contains(x.account.value), "webhooks of an unknown account");
  }

  void operator()(const BusinessSuspended&) const {
    KOBO_ASSERT(s.businesses.contains(e.business), "an unknown business suspended");
  }

  void operator()(const BusinessResumed&) const {
    KOBO_ASSERT(s.businesses.contains(e.business), "an unknown business resumed");
  }

  // Rate limits are the query API's to enforce (every node reads them from its views).
  void operator()(const BusinessRateLimitsSet&) const {
    KOBO_ASSERT(s.businesses.contains(e.business), "rate limits of an unknown business");
  }

  void operator()(const WalletOpened& x) const {
    KOBO_ASSERT(x.id != 0 && !x.wallet.empty(), "a wallet opens with its ids");
    if (x.category == WalletCategory::primary) ++s.primary_wallets[scope_key(x.account.value, e.live)];
    open_wallet(s, e, x, /*named=*/true);
  }

  void operator()(const TransitWalletOpened& x) const {
    KOBO_ASSERT(s.wallets.find(x.settlement_wallet.value) != nullptr,
                "a transit wallet settles to a known wallet");
    // A transit wallet's name is exempt from the uniqueness rule.
    open_wallet(s, e, x, /*named=*/false);
    s.transit_settlement.emplace(x.wallet.value, x.settlement_wallet.value);
  }

  void operator()(const CollectionWalletOpened& x) const {
    CollectionState cs;
    cs.public_id = x.wallet.value;
    cs.destination = x.destination.value;
    cs.amount = x.amount;
    cs.expires_at = x.expires_at.ms;
    cs.business = e.business;
    cs.live = e.live;
    KOBO_ASSERT(!s.wallets.id_with_number(x.account_number), "collection account number reused");
    s.collection_numbers.emplace(cs.public_id, x.account_number);
    const bool number_new = s.collections.emplace(x.account_number, std::move(cs)).second;
    KOBO_ASSERT(number_new, "collection account number reused");
    ++s.account_numbers_issued;
    KOBO_ASSERT(s.collection_numbers.size() == s.collections.size(),
                "each open collection wallet has its number");
  }

  void operator()(const CollectionWalletExpired& x) const { close_collection(s, x.wallet); }

  void operator()(const BeneficiarySaved& x) const {
    KOBO_ASSERT(x.id != 0, "a saved beneficiary has its integer id");
    ++s.bank_accounts_created;
  }

  void operator()(const WalletTransferSettled& x) const {
    const TransferLegs legs = x.legs();
    KOBO_ASSERT(
        s.wallets.find(legs.source.account) != nullptr && s.wallets.find(legs.destination.account) != nullptr,
        "a wallet transfer moves money between wallets the partition has");
    post_all(s, x.postings);
    count_transactions(s, e.data);
  }

  void operator()(const BankTransferInitiated& x) const {
    post_all(s, x.postings);
    count_transactions(s, e.data);
    const PayoutLegs legs = x.legs();
    PayoutState p;
    p.source = legs.source.account;
    p.amount = legs.amount();
    p.fee = legs.fee.amount;
    p.updated_at = e.time;
    p.sandbox_fails = !e.live && sandbox_fails(x.metadata);  // a sandbox switch: test mode only
    p.business = e.business;
    p.live = e.live;
    KOBO_ASSERT(p.amount.value > 0 && p.fee.value > 0, "a payout in flight has an amount and a fee");
    const bool payout_new = s.payouts.emplace(x.transaction.value, std::move(p)).second;
    KOBO_ASSERT(payout_new, "a payout initiated twice");
  }

  void operator()(const PayoutProcessing&) const { change_status(); }

  void operator()(const PayoutSucceeded& x) const {
    const auto p = s.payouts.find(x.transaction.value);
    KOBO_ASSERT(p != s.payouts.end() && x.legs().amount() == p->second.amount,
                "a payout settles the amount it was accepted for");
    post_all(s, x.postings);
    change_status();
  }

  void operator()(const PayoutFailed& x) const {
    const auto p = s.payouts.find(x.transaction.value);
    const ReversalLegs legs = x.legs();
    KOBO_ASSERT(p != s.payouts.end() && legs.source.account == p->second.source &&
                    legs.credited() == p->second.amount + p->second.fee,
                "a reversal gives its source back the amount and the fee it was debited");
    post_all(s, x.postings);
    count_transactions(s, e.data);
    change_status();
  }

  void operator()(const IncomingCreditReceived& x) const {
    const IncomingLegs legs = x.legs();
    if (x.collection) {
      const auto number = s.collection_numbers.find(x.collection->value);
      KOBO_ASSERT(number != s.collection_numbers.end(), "a payment of an open collection wallet");
      const CollectionState& c = s.collections.at(number->second);
      KOBO_ASSERT(c.destination == legs.wallet.account && c.amount == legs.amount(),
                  "a collection wallet pays its destination the amount it was opened for");
    }
    const auto transit = s.transit_settlement.find(legs.wallet.account);
    KOBO_ASSERT(legs.sweep.has_value() == (transit != s.transit_settlement.end()) &&
                    (!legs.sweep || legs.sweep->credit.account == transit->second),
                "a transit wallet, and only one, sweeps what it receives to its settlement wallet");
    post_all(s, x.postings);
    count_transactions(s, e.data);
    if (x.collection) close_collection(s, *x.collection);
  }

  void operator()(const HoldPlaced& x) const {
    KOBO_ASSERT(x.amount.value > 0, "a hold reserves a positive amount");
    const WalletState* w = s.wallets.find(x.source.value);
    KOBO_ASSERT(w != nullptr, "a hold on an unknown wallet");
    HoldState h;
    h.source = x.source.value;
    h.amount = x.amount;
    h.expires_at = x.expires_at.ms;
    h.business = e.business;
    h.account = x.account.value;
    h.live = e.live;
    const bool hold_new = s.holds.emplace(x.hold.value, std::move(h)).second;
    KOBO_ASSERT(hold_new, "a hold placed twice");
    add_held(s, x.source.value, x.amount);
    KOBO_ASSERT(s.available_of(x.source.value, *w).value >= 0, "a hold reserves more than is available");
  }

  void operator()(const HoldCaptured& x) const {
    const auto it = s.holds.find(x.hold.value);
    KOBO_ASSERT(it != s.holds.end(), "a capture of a hold that is not pending");
    const TransferLegs legs = x.legs();
    KOBO_ASSERT(legs.source.account == it->second.source, "a capture moves money from its hold's source");
    const Kobo amount = legs.amount();
    KOBO_ASSERT(amount.value > 0 && amount <= it->second.remaining(),
                "a capture above what its hold has left");
    // The hold releases what it captures, then the money moves: available stays as it was.
    it->second.captured += amount;
    add_held(s, it->second.source, -amount);
    post_all(s, x.postings);
    count_transactions(s, e.data);
    if (x.final.value_or(false) || it->second.remaining().value == 0) end_hold(s, x.hold);
  }

  void operator()(const HoldVoided& x) const { end_hold(s, x.hold); }
  void operator()(const HoldExpired& x) const { end_hold(s, x.hold); }
  // A bulk transfer's own event moves nothing: its items' events that follow do.
  void operator()(const BulkTransferAccepted& x) const {
    KOBO_ASSERT(
        e.seq == e.command_seq && e.command_size <= 1 + 2 * (x.items - x.rejected.size()),
        "a bulk transfer opens its command, which holds its accepted items' events (and beneficiaries)");
  }
  // Webhook deliveries are the webhooks' business (docs/webhooks.md): nothing to decide with.
  void operator()(const WebhookDeliveriesEnded& x) const {
    KOBO_ASSERT(e.business.empty() && !x.deliveries.empty(), "deliveries end in a partition-level event");
  }
  // A signed checkpoint is the audit's to verify (events/checkpoint.h); the writer keeps only
  // which key signs the next one, to rotate from it.
  void operator()(const ChainCheckpointed& x) const {
    KOBO_ASSERT(e.business.empty(), "a checkpoint is partition-level");
    s.checkpoint_key = x.next_key.value_or(x.key);
  }

  void change_status() const {
    const auto c = status_change(e.data);
    KOBO_ASSERT(c.has_value(), "a payout event changes a status");
    const auto p = s.payouts.find(c->transaction.value);
    KOBO_ASSERT(p != s.payouts.end(), "status change of a payout not in flight");
    KOBO_ASSERT(p->second.status == c->from, "payout moved from a status it was not in");
    if (c->to == TransactionStatus::success || c->to == TransactionStatus::failed) {
      s.payouts.erase(p);
    } else {
      p->second.status = c->to;
      p->second.updated_at = e.time;
    }
  }
};

}  // namespace

void apply(PartitionState& s, const Event& e) {
  KOBO_ASSERT(e.partition == s.partition, "an event is applied to its own partition's state");
  KOBO_ASSERT(s.total.value == 0, "a partition's balances sum to zero before every event");
  std::visit(Applier{s, e}, e.data);
  if (const auto debit = tier_debit(e.data)) {
    WalletState* w = s.wallets.find(debit->wallet);
    KOBO_ASSERT(w != nullptr, "a debit of an unknown wallet");
    KOBO_ASSERT(debit->amount.value > 0, "a counted debit moves money");
    w->debits = w->debits.plus(lagos_day(e.time), debit->amount);
  }
  // Each event's postings sum to zero (validate()): so do the partition's balances after it.
  KOBO_ASSERT(s.total.value == 0, "partition balances do not sum to zero");
}

}  // namespace kobo
