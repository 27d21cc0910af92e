#include "command/decide.h"

#include <algorithm>
#include <type_traits>
#include <variant>

#include "command/nuban.h"
#include "common/log.h"
#include "events/ledger.h"

namespace kobo {

Decision reject(Rejection r) {
  KOBO_ASSERT(r != Rejection::none, "a rejection names its reason");
  Decision d;
  d.rejection = r;
  return d;
}

Decision replay_of(std::string id) {
  KOBO_ASSERT(!id.empty(), "a replay names the record it repeats");
  Decision d;
  d.replayed = true;
  d.id = std::move(id);
  return d;
}

namespace {

// The history index could not be read: the command is answered 503 and decided again later.
Decision unavailable(const Status& why) {
  KOBO_ASSERT(!why.ok(), "a read that failed");
  log::warn("a command could not be decided: the history index cannot be read", {{"error", why.message()}});
  return reject(Rejection::unavailable);
}

Decision one_event(const Caller& c, EventData data, std::string id) {
  KOBO_ASSERT(!id.empty() && !c.business.empty(), "a command's event is a business's and names its record");
  Decision d;
  d.events.push_back({c.business, c.live, std::move(data)});
  d.id = std::move(id);
  return d;
}

std::string_view sys(SystemAccount a) { return account_name(a); }

WalletId new_wallet_id(IdSource& ids) {
  WalletId id(std::string(kWalletIdPrefix) + ids.uuid());
  KOBO_ASSERT(id.value.size() == kWalletIdPrefix.size() + 36, "a wallet id is its prefix and a uuid");
  return id;
}
TransactionId new_transaction_id(IdSource& ids, UnixMs now) {
  TransactionId id(std::string(kTransactionIdPrefix) + ids.uuid_v7(now));
  KOBO_ASSERT(id.value.size() == kTransactionIdPrefix.size() + 36,
              "a transaction id is its prefix and a uuid");
  return id;
}

// The longest a collection wallet may stay open: far beyond what the API accepts, and far
// from overflowing a time in milliseconds.
constexpr std::int64_t kCollectionExpirySecondsMax = 100LL * 366 * 24 * 3600;

// The integer id of the k-th transaction record (from 0) a command creates.
std::uint64_t transaction_number(const PartitionState& s, const LedgerConfig& config, std::uint64_t k) {
  KOBO_ASSERT(k < 3, "a command's event creates at most 3 transaction records");
  return interleaved_id(s.transactions_created + k, s.partition, config.partitions);
}

// A new account number of the service's bank (docs/security.md, "No harvesting"): a NUBAN serial
// drawn at random, so that nobody finds other tenants' customers by counting from their own
// numbers. The serials of partition p are those of the form r * partitions + p + 1, so two
// partitions' writers can never draw the same one; within the partition a number any wallet or
// collection wallet ever had (the state's, and History's closed ones) is drawn again. Drawn from
// `ids`, so a seeded run draws the same numbers.
constexpr int kAccountNumberDrawsMax = 64;

std::variant<std::string, Decision> new_account_number(const PartitionState& s, const History& h,
                                                       const LedgerConfig& config, IdSource& ids) {
  constexpr std::uint64_t kSerials = 1'000'000'000;  // 9 digits
  const std::uint64_t p = s.partition.value;
  const std::uint64_t partitions = config.partitions;
  KOBO_ASSERT(p < partitions && partitions < kSerials, "a partition of the configured count");
  const std::uint64_t choices = (kSerials - 1 - (p + 1)) / partitions + 1;  // r * partitions + p + 1 < 1e9
  for (int draw = 0; draw < kAccountNumberDrawsMax; ++draw) {
    std::uint64_t r = 0;
    ids.fill(reinterpret_cast<std::uint8_t*>(&r), sizeof r);
    std::string number = nuban::account_number(config.nuban_code, (r % choices) * partitions + p + 1);
    if (s.wallets.id_with_number(number) || s.collections.contains(number)) continue;
    const auto closed = h.collection(number);
    if (!closed) return unavailable(closed.status());
    if (closed.value()) continue;
    KOBO_ASSERT(parse_account_number(number).has_value(), "an account number issued has 10 digits");
    return number;
  }
  log::error("no free account number after many draws: the partition's NUBAN serials are nearly all taken",
             {{"partition", p}});
  return reject(Rejection::unavailable);
}

const WalletState* caller_wallet(const PartitionState& s, const Caller& c, const std::string& id) {
  const WalletState* w = s.wallets.find(id);
  if (w == nullptr) return nullptr;
  const Caller& owner = s.wallets.owner(*w);
  return owner.business == c.business && owner.live == c.live ? w : nullptr;
}

// KYC tier limits (docs/architecture.md, KYC tiers), from the table the log recorded (state.tier_limits).
bool valid_tier(const std::optional<std::uint64_t>& tier) {
  return !tier || (*tier >= 1 && *tier <= kKycTiers);
}

// Whether a counted debit of `amount` from `w` at `now` stays within its tier's daily allowance.
bool within_daily_debit(const PartitionState& s, const WalletState& w, Kobo amount, UnixMs now) {
  KOBO_ASSERT(amount.value > 0, "a debit is checked once its amount is known positive");
  const TierLimit* limit = tier_limit(s.tier_limits, w.tier);
  if (limit == nullptr) return true;
  const auto after = checked_add(w.debits.on(lagos_day(now)), amount);
  return after && *after <= limit->daily_debit;
}

// Whether a credit that leaves `w` at `balance_after` stays within its tier's balance cap.
bool within_balance_cap(const PartitionState& s, const WalletState& w, Kobo balance_after) {
  KOBO_ASSERT(balance_after > w.balance, "a credit raises the balance it is capped at");
  const TierLimit* limit = tier_limit(s.tier_limits, w.tier);
  return limit == nullptr || !limit->max_balance || balance_after <= *limit->max_balance;
}

Decision decide_create_business(const PartitionState& s, const CreateBusiness& c,
                                const LedgerConfig& config) {
  if (s.businesses.contains(c.business_id)) return reject(Rejection::business_exists);
  BusinessRegistered x;
  x.account = AccountId(c.account_id);
  x.account_name = c.account_name;
  x.id = interleaved_id(s.accounts_created, s.partition, config.partitions);
  KOBO_ASSERT(x.id >= 1, "an account's integer id counts from 1");
  x.live_public_key = c.live_public_key;
  x.live_secret_key_hash = c.live_secret_key_hash;
  x.name = c.name;
  x.test_public_key = c.test_public_key;
  x.test_secret_key_hash = c.test_secret_key_hash;
  x.live_signing_key = c.live_signing_key;
  x.test_signing_key = c.test_signing_key;
  // Registration is not in either mode: the account starts in test mode.
  return one_event(Caller{c.business_id, c.account_id, false}, std::move(x), c.account_id);
}

// Whether `account` is an account of the caller's business.
bool callers_account(const PartitionState& s, const Caller& c, const std::string& account) {
  const auto it = s.account_business.find(account);
  return it != s.account_business.end() && it->second == c.business;
}

Decision decide_update_account(const PartitionState& s, const UpdateAccount& c) {
  if (!callers_account(s, c.caller, c.account_id)) return reject(Rejection::account_not_found);
  Decision d;
  d.id = c.account_id;
  // Webhook settings are of the caller's mode; the live flag is not of a mode: its event is in
  // test mode, whoever asked. A request of neither still records the update (updatedAt, __v).
  if (c.webhooks || c.webhook_events)
    d.events.push_back({c.caller.business, c.caller.live,
                        WebhooksConfigured{AccountId(c.account_id), c.webhook_events, c.webhooks}});
  if (c.live || d.events.empty())
    d.events.push_back({c.caller.business, false, AccountUpdated{AccountId(c.account_id), c.live, {}, {}}});
  KOBO_ASSERT(!d.events.empty() && d.events.size() <= 2,
              "an update records its webhook settings, its live flag, or that it was asked");
  return d;
}

Decision decide_roll_secret_key(const PartitionState& s, const RollSecretKey& c, UnixMs now) {
  if (!callers_account(s, c.caller, c.account_id)) return reject(Rejection::account_not_found);
  if (c.overlap_s < 0 || c.overlap_s > kKeyOverlapSecondsMax) return reject(Rejection::out_of_range);
  return one_event(c.caller,
                   SecretKeyRolled{AccountId(c.account_id), Timestamp{now + c.overlap_s * 1000},
                                   c.secret_key_hash, c.signing_key},
                   c.account_id);
}

Decision decide_revoke_secret_key(const PartitionState& s, const RevokeSecretKey& c) {
  if (!callers_account(s, c.caller, c.account_id)) return reject(Rejection::account_not_found);
  return one_event(c.caller, SecretKeyRevoked{AccountId(c.account_id), c.key_id}, c.account_id);
}

// A business's suspension is not of a mode: the event is in test mode.
Decision decide_suspend_business(const PartitionState& s, const SuspendBusiness& c) {
  if (!s.businesses.contains(c.caller.business)) return reject(Rejection::account_not_found);
  Caller in_test = c.caller;
  in_test.live = false;
  if (c.suspended) return one_event(in_test, BusinessSuspended{c.reason}, c.caller.business);
  return one_event(in_test, BusinessResumed{}, c.caller.business);
}

// A business's rate limits are not of a mode (they apply to its keys of both): the event is in
// test mode, as a suspension is.
Decision decide_set_rate_limits(const PartitionState& s, const SetRateLimits& c) {
  if (!s.businesses.contains(c.caller.business)) return reject(Rejection::account_not_found);
  KOBO_ASSERT(c.reads_per_second.value_or(0) <= kRateLimitPerSecondMax &&
                  c.writes_per_second.value_or(0) <= kRateLimitPerSecondMax,
              "the route checks a rate limit's range");
  Caller in_test = c.caller;
  in_test.live = false;
  return one_event(in_test, BusinessRateLimitsSet{c.reads_per_second, c.writes_per_second},
                   c.caller.business);
}

// A webhook secret is of the caller's mode: the event is in it.
Decision decide_rotate_webhook_secret(const PartitionState& s, const RotateWebhookSecret& c) {
  const auto it = s.account_business.find(c.account_id);
  if (it == s.account_business.end() || it->second != c.caller.business)
    return reject(Rejection::account_not_found);
  return one_event(c.caller, WebhookSecretRotated{AccountId(c.account_id)}, c.account_id);
}

// A signing key is of the caller's mode: the event is in it.
Decision decide_seal_signing_key(const PartitionState& s, const SealSigningKey& c) {
  const auto it = s.account_business.find(c.caller.account);
  if (it == s.account_business.end() || it->second != c.caller.business)
    return reject(Rejection::account_not_found);
  return one_event(c.caller, SigningKeySealed{AccountId(c.caller.account), c.signing_key}, c.caller.account);
}

BeneficiarySaved beneficiary_saved(const PartitionState& s, const AddBankAccount& c, BeneficiaryType type,
                                   const LedgerConfig& config) {
  BeneficiarySaved x;
  x.account = AccountId(c.caller.account);
  x.account_name = c.account_name;
  x.account_number = c.account_number;
  x.bank_account = BankAccountId(c.public_id);
  x.bank_code = c.bank_code;
  x.bank_name = c.bank_name;
  x.beneficiary_type = type;
  x.id = interleaved_id(s.bank_accounts_created, s.partition, config.partitions);
  KOBO_ASSERT(x.id != 0 && !x.bank_account.empty(), "a beneficiary is saved with its ids");
  return x;
}

Decision decide_add_bank_account(const PartitionState& s, const History& h, const AddBankAccount& c,
                                 const LedgerConfig& config) {
  const auto type = beneficiary_type_from_string(c.beneficiary_type);
  if (!type) return reject(Rejection::out_of_range);
  const auto saved = h.bank_account(c.public_id);
  if (!saved) return unavailable(saved.status());
  if (saved.value()) return replay_of(c.public_id);
  return one_event(c.caller, beneficiary_saved(s, c, *type, config), c.public_id);
}

Decision decide_create_wallet(const PartitionState& s, const History& h, const CreateWallet& c,
                              const LedgerConfig& config, IdSource& ids) {
  const auto category = wallet_category_from_string(c.category);
  if (!category || !valid_tier(c.kyc_tier)) return reject(Rejection::out_of_range);
  if (s.wallets.name_taken(c.caller.account, c.caller.live, c.account_name))
    return reject(Rejection::wallet_name_taken);
  if (*category == WalletCategory::primary) {
    const auto it = s.primary_wallets.find(scope_key(c.caller.account, c.caller.live));
    if (it != s.primary_wallets.end() && it->second >= config.primary_wallets_max)
      return reject(Rejection::primary_wallet_limit);
  }
  auto number = new_account_number(s, h, config, ids);
  if (auto* refused = std::get_if<Decision>(&number)) return std::move(*refused);
  WalletOpened x;
  x.account = AccountId(c.caller.account);
  x.account_number = std::move(std::get<std::string>(number));
  x.bank_code = config.bank_code;
  x.bank_name = config.bank_name;
  x.category = *category;
  x.email_address = c.email_address;
  x.id = interleaved_id(s.wallets_created, s.partition, config.partitions);
  x.kyc_tier = c.kyc_tier;
  x.mobile = c.mobile;
  x.name = c.account_name;
  x.wallet = new_wallet_id(ids);
  KOBO_ASSERT(s.wallets.find(x.wallet.value) == nullptr, "a new wallet's id is new");
  KOBO_ASSERT(!s.wallets.id_with_number(x.account_number) && !s.collections.contains(x.account_number),
              "a new wallet's account number is free (apply() asserts it)");
  std::string id = x.wallet.value;
  return one_event(c.caller, std::move(x), std::move(id));
}

Decision decide_set_wallet_tier(const PartitionState& s, const SetWalletTier& c) {
  if (!valid_tier(c.kyc_tier)) return reject(Rejection::out_of_range);
  const WalletState* w = caller_wallet(s, c.caller, c.wallet);
  if (w == nullptr) return reject(Rejection::wallet_not_found);
  Decision d;
  d.id = c.wallet;
  // The same tier again changes nothing: no event.
  if (w->tier != c.kyc_tier.value_or(0))
    d.events.push_back({c.caller.business, c.caller.live, WalletTierChanged{c.kyc_tier, WalletId(c.wallet)}});
  KOBO_ASSERT(d.events.size() <= 1, "a tier changes once per command");
  return d;
}

Decision decide_create_transit(const PartitionState& s, const History& h, const CreateTransitWallet& c,
                               const LedgerConfig& config, IdSource& ids) {
  if (!valid_tier(c.kyc_tier)) return reject(Rejection::out_of_range);
  const WalletState* settlement = caller_wallet(s, c.caller, c.settlement_account);
  if (settlement == nullptr || s.transit_settlement.contains(c.settlement_account))
    return reject(Rejection::settlement_account_not_found);
  auto number = new_account_number(s, h, config, ids);
  if (auto* refused = std::get_if<Decision>(&number)) return std::move(*refused);
  TransitWalletOpened x;
  x.account = AccountId(c.caller.account);
  x.account_number = std::move(std::get<std::string>(number));
  x.bank_code = config.bank_code;
  x.bank_name = config.bank_name;
  x.email_address = c.email_address;
  x.id = interleaved_id(s.wallets_created, s.partition, config.partitions);
  x.kyc_tier = c.kyc_tier;
  x.mobile = c.mobile;
  x.name = c.account_name;
  x.settlement_wallet = WalletId(c.settlement_account);
  x.wallet = new_wallet_id(ids);
  KOBO_ASSERT(s.wallets.find(x.wallet.value) == nullptr, "a new wallet's id is new");
  std::string id = x.wallet.value;
  return one_event(c.caller, std::move(x), std::move(id));
}

Decision decide_create_collection(const PartitionState& s, const History& h, const CreateCollection& c,
                                  const LedgerConfig& config, UnixMs now, IdSource& ids) {
  if (c.amount.value <= 0 || c.expire_in_s < 0 || c.expire_in_s > kCollectionExpirySecondsMax)
    return reject(Rejection::out_of_range);
  const WalletState* dst = caller_wallet(s, c.caller, c.destination);
  if (dst == nullptr) return reject(Rejection::destination_not_found);
  if (c.reference) {
    const auto taken = h.collection_reference_taken(c.caller.account, c.caller.live, *c.reference);
    if (!taken) return unavailable(taken.status());
    if (taken.value()) return reject(Rejection::reference_exists);
  }
  auto number = new_account_number(s, h, config, ids);
  if (auto* refused = std::get_if<Decision>(&number)) return std::move(*refused);
  CollectionWalletOpened x;
  x.account = AccountId(c.caller.account);
  x.account_number = std::move(std::get<std::string>(number));
  x.amount = c.amount;
  x.bank_code = config.bank_code;
  x.bank_name = config.bank_name;
  x.destination = WalletId(c.destination);
  x.expires_at = Timestamp{now + c.expire_in_s * 1000};
  x.id = interleaved_id(s.account_numbers_issued, s.partition, config.partitions);
  x.name = c.account_name;
  x.reference = c.reference;
  x.wallet = new_wallet_id(ids);
  const UnixMs expires_at = x.expires_at.ms;
  KOBO_ASSERT(expires_at >= now, "a collection wallet expires no sooner than it opens");
  KOBO_ASSERT(!s.collections.contains(x.account_number) && !s.wallets.id_with_number(x.account_number),
              "a collection wallet's account number is free (apply() asserts it)");
  std::string id = x.wallet.value;
  Decision d = one_event(c.caller, std::move(x), id);
  d.schedule.push_back({expires_at, ExpireCollection{s.partition, std::move(id)}});
  return d;
}

Decision decide_expire_collection(const PartitionState& s, const ExpireCollection& c) {
  Decision d;
  d.id = c.collection;
  // Expiries are scheduled for open collection wallets only: one that is no longer open was paid.
  const auto number = s.collection_numbers.find(c.collection);
  if (number == s.collection_numbers.end()) return d;
  const CollectionState& cs = s.collections.at(number->second);
  KOBO_ASSERT(cs.public_id == c.collection, "an open collection wallet is found by its id");
  d.events.push_back({cs.business, cs.live, CollectionWalletExpired{WalletId(cs.public_id)}});
  return d;
}

// A payment to an account number that is neither a wallet nor an open collection wallet: a
// collection wallet that was paid or expired is inactive to its owner; anything else is unknown.
Decision reject_closed_collection(const History& h, const IncomingCredit& c) {
  const auto closed = h.collection(c.account_number);
  if (!closed) return unavailable(closed.status());
  if (closed.value() && *closed.value() == CollectionOwner{c.caller.business, c.caller.live})
    return reject(Rejection::collection_inactive);
  return reject(Rejection::account_not_found);
}

// Idempotency (docs/architecture.md, guarantee 4): a reference seen before is a replay of the same request,
// or a conflict. Transfers of every kind share one reference space per account and mode.
std::optional<Decision> check_reference(const History& h, const Caller& caller,
                                        const std::optional<std::string>& reference, const auto& request) {
  if (!reference) return std::nullopt;
  const auto used = h.transfer_reference(caller.account, caller.live, *reference);
  if (!used) return unavailable(used.status());
  if (!used.value()) return std::nullopt;
  KOBO_ASSERT(!used.value()->transaction.empty(), "a reference seen names what it made");
  if (used.value()->fingerprint != request_fingerprint(request))
    return reject(Rejection::duplicate_reference);
  return replay_of(used.value()->transaction);
}

// A debit of `amount` from wallet `src` (id `source`) that someone asked for: a wallet transfer
// (its amount), a bank transfer (amount + fee), a hold's placement (its amount). The one place
// such a debit is checked against what the wallet may spend: its available balance, its balance
// less what its pending holds reserve (extensions section 1), then the day's allowance of its KYC
// tier (section 3). A hold's capture is no such debit: its hold reserved the money already.
Rejection check_debit(const PartitionState& s, std::string_view source, const WalletState& src, Kobo amount,
                      UnixMs now) {
  KOBO_ASSERT(amount.value > 0, "a debit is checked once its amount is known positive");
  if (s.available_of(source, src) < amount) return Rejection::insufficient_funds;
  if (!within_daily_debit(s, src, amount, now)) return Rejection::daily_limit_exceeded;
  return Rejection::none;
}

// A credit of `amount` to wallet `dst` by a wallet transfer or a hold's capture: its balance
// after, or the rejection: an overflow, or a balance above its KYC tier's cap.
std::variant<Kobo, Rejection> check_credit(const PartitionState& s, const WalletState& dst, Kobo amount) {
  KOBO_ASSERT(amount.value > 0, "a credit is checked once its amount is known positive");
  const auto after = checked_add(dst.balance, amount);
  if (!after) return Rejection::out_of_range;
  if (!within_balance_cap(s, dst, *after)) return Rejection::balance_limit_exceeded;
  return *after;
}

Decision decide_wallet_transfer(const PartitionState& s, const History& h, const WalletTransfer& c,
                                const LedgerConfig& config, UnixMs now, IdSource& ids) {
  if (c.amount.value <= 0) return reject(Rejection::out_of_range);
  WalletTransferRequest request{c.source, c.destination, c.amount, c.narration, std::nullopt};
  if (c.name_enquiry_ref) request.name_enquiry_ref = *c.name_enquiry_ref;
  if (auto replay = check_reference(h, c.caller, c.reference, request)) return std::move(*replay);
  const WalletState* src = caller_wallet(s, c.caller, c.source);
  if (src == nullptr) return reject(Rejection::source_not_found);
  const WalletState* dst = caller_wallet(s, c.caller, c.destination);
  if (dst == nullptr) return reject(Rejection::destination_not_found);
  if (c.source == c.destination) return reject(Rejection::same_source_and_destination);
  if (const Rejection r = check_debit(s, c.source, *src, c.amount, now); r != Rejection::none)
    return reject(r);
  const auto src_after = checked_sub(src->balance, c.amount);
  const auto credit = check_credit(s, *dst, c.amount);
  if (const auto* r = std::get_if<Rejection>(&credit)) return reject(*r);
  const auto dst_after = std::get<Kobo>(credit);
  KOBO_ASSERT(dst_after > dst->balance, "a credit raises its wallet's balance");
  if (!src_after) return reject(Rejection::out_of_range);
  KOBO_ASSERT(src_after->value >= 0, "a transfer never overdraws its source (check_debit)");
  KOBO_ASSERT(src->balance - *src_after == dst_after - dst->balance,
              "a transfer credits its destination what it debits its source: no money made or lost");

  WalletTransferSettled x;
  x.account = AccountId(c.caller.account);
  x.ids = {transaction_number(s, config, 0), transaction_number(s, config, 1)};
  x.name_enquiry_ref = c.name_enquiry_ref;
  x.narration = c.narration;
  x.postings = {{c.source, -c.amount, *src_after}, {c.destination, c.amount, dst_after}};
  x.transaction = new_transaction_id(ids, now);
  x.reference = c.reference ? *c.reference : derived_reference("ref-", x.transaction);
  std::string id = x.transaction.value;
  return one_event(c.caller, std::move(x), std::move(id));
}

Decision decide_bank_transfer(const PartitionState& s, const History& h, const BankTransfer& c,
                              const LedgerConfig& config, UnixMs now, IdSource& ids) {
  if (c.amount.value <= 0) return reject(Rejection::out_of_range);
  const BankTransferRequest request{c.source,    c.account_number, c.bank_code,       c.amount,
                                    c.narration, c.metadata.text,  c.save_beneficiary};
  if (auto replay = check_reference(h, c.caller, c.reference, request)) return std::move(*replay);
  const WalletState* src = caller_wallet(s, c.caller, c.source);
  if (src == nullptr) return reject(Rejection::source_not_found);
  const Kobo fee = transfer_fee(config, c.amount);
  const auto actual = checked_add(c.amount, fee);
  const auto suspense_after = checked_add(s.balance_of(SystemAccount::payout_suspense), c.amount);
  const auto fees_after = checked_add(s.balance_of(SystemAccount::fees), fee);
  if (!actual || !suspense_after || !fees_after) return reject(Rejection::out_of_range);
  if (const Rejection r = check_debit(s, c.source, *src, *actual, now); r != Rejection::none)
    return reject(r);
  const auto src_after = checked_sub(src->balance, *actual);
  if (!src_after) return reject(Rejection::out_of_range);
  KOBO_ASSERT(src_after->value >= 0, "a payout never overdraws its source (check_debit)");
  KOBO_ASSERT(fee.value > 0 && *actual == c.amount + fee && src->balance - *src_after == *actual,
              "a payout debits its source its amount and its fee");

  const auto known = h.bank_account(c.bank_account_id);
  if (!known) return unavailable(known.status());
  Decision d;
  std::uint64_t beneficiary_id = 0;
  if (known.value()) {
    beneficiary_id = *known.value();
  } else if (c.save_beneficiary) {
    const AddBankAccount add{c.caller,    c.bank_account_id, c.account_name, c.account_number,
                             c.bank_name, c.bank_code,       "external"};
    BeneficiarySaved saved = beneficiary_saved(s, add, BeneficiaryType::external, config);
    beneficiary_id = saved.id;
    d.events.push_back({c.caller.business, c.caller.live, std::move(saved)});
  }
  BankTransferInitiated x;
  x.account = AccountId(c.caller.account);
  x.beneficiary = Beneficiary{c.account_name,    c.account_number, BankAccountId(c.bank_account_id),
                              c.bank_code,       c.bank_name,      beneficiary_id,
                              c.name_enquiry_ref};
  x.ids = {transaction_number(s, config, 0)};
  x.metadata = c.metadata;
  x.narration = c.narration;
  x.postings = {{c.source, -*actual, *src_after},
                {std::string(sys(SystemAccount::payout_suspense)), c.amount, *suspense_after},
                {std::string(sys(SystemAccount::fees)), fee, *fees_after}};
  if (c.save_beneficiary) x.save_beneficiary = true;
  x.transaction = new_transaction_id(ids, now);
  x.reference = c.reference ? *c.reference : derived_reference("ref-", x.transaction);
  d.id = x.transaction.value;
  d.events.push_back({c.caller.business, c.caller.live, std::move(x)});
  KOBO_ASSERT(d.events.size() <= 2,
              "a payout's command is its beneficiary saved, if it is new, and the payout");
  // The sandbox rail moves test payouts only (docs/security.md, "Modes apart"): a live payout
  // waits, pending, for a real rail.
  if (!c.caller.live)
    d.schedule.push_back({now, AdvancePayout{s.partition, d.id, TransactionStatus::processing}});
  return d;
}

Decision decide_advance_payout(const PartitionState& s, const AdvancePayout& c, const LedgerConfig& config,
                               UnixMs now) {
  using S = TransactionStatus;
  const auto it = s.payouts.find(c.transaction);
  KOBO_ASSERT(it != s.payouts.end(), "advancing a payout that is not in flight");
  const PayoutState& p = it->second;
  const bool legal = (p.status == S::pending && c.status == S::processing) ||
                     (p.status == S::processing && (c.status == S::success || c.status == S::failed));
  KOBO_ASSERT(legal, "illegal payout transition");
  const TransactionId trx(c.transaction);
  const std::string suspense(sys(SystemAccount::payout_suspense));
  // The amounts were accepted with their sums checked; the balances they move back out of hold them.
  const auto suspense_after = checked_sub(s.balance_of(SystemAccount::payout_suspense), p.amount);
  KOBO_ASSERT(suspense_after.has_value(), "payout suspense holds the payout");
  Decision d;
  d.id = c.transaction;
  if (c.status == S::processing) {
    d.events.push_back({p.business, p.live, PayoutProcessing{trx}});
    PayoutState next = p;
    next.status = c.status;
    next.updated_at = now;
    d.schedule.push_back(next_rail_step(c.transaction, next, s.partition, config));
  } else if (c.status == S::success) {
    const auto outbound_after = checked_add(s.balance_of(SystemAccount::outbound_settlement), p.amount);
    KOBO_ASSERT(outbound_after.has_value(), "outbound settlement overflows");  // it mirrors suspense
    KOBO_ASSERT(s.balance_of(SystemAccount::payout_suspense) - *suspense_after ==
                    *outbound_after - s.balance_of(SystemAccount::outbound_settlement),
                "a settled payout moves out of suspense what it settles outbound");
    PayoutSucceeded x;
    x.postings = {{suspense, -p.amount, *suspense_after},
                  {std::string(sys(SystemAccount::outbound_settlement)), p.amount, *outbound_after}};
    x.transaction = trx;
    d.events.push_back({p.business, p.live, std::move(x)});
  } else {
    // The reversal: the amount leaves payout suspense, the fee is refunded, the wallet is
    // credited what it was debited.
    const WalletState* w = s.wallets.find(p.source);
    KOBO_ASSERT(w != nullptr, "payout from an unknown wallet");
    const auto actual = checked_add(p.amount, p.fee);
    const auto fees_after = checked_sub(s.balance_of(SystemAccount::fees), p.fee);
    KOBO_ASSERT(actual && fees_after, "a payout's amounts were checked when it was accepted");
    const auto wallet_after = checked_add(w->balance, *actual);
    KOBO_ASSERT(wallet_after.has_value(), "a reversal gives back what was debited");
    KOBO_ASSERT(
        *wallet_after - w->balance == p.amount + p.fee && suspense_after->value >= 0,
        "a reversal credits the amount and the fee suspense and fees held, and suspense keeps no debt");
    PayoutFailed x;
    x.ids = {transaction_number(s, config, 0)};
    x.postings = {{suspense, -p.amount, *suspense_after},
                  {std::string(sys(SystemAccount::fees)), -p.fee, *fees_after},
                  {p.source, *actual, *wallet_after}};
    x.transaction = trx;
    d.events.push_back({p.business, p.live, std::move(x)});
  }
  return d;
}

Decision decide_incoming_credit(const PartitionState& s, const History& h, const IncomingCredit& c,
                                const LedgerConfig& config, UnixMs now, IdSource& ids) {
  if (c.amount.value <= 0) return reject(Rejection::out_of_range);
  const auto inbound_after = checked_sub(s.balance_of(SystemAccount::inbound_settlement), c.amount);
  if (!inbound_after) return reject(Rejection::out_of_range);

  std::optional<WalletId> collection;
  std::string wallet_id;
  const WalletState* dst = nullptr;
  if (const auto col = s.collections.find(c.account_number); col != s.collections.end()) {
    const CollectionState& cs = col->second;
    if (cs.business != c.caller.business || cs.live != c.caller.live)
      return reject(Rejection::account_not_found);
    if (now >= cs.expires_at) return reject(Rejection::collection_inactive);
    if (c.amount != cs.amount) return reject(Rejection::amount_mismatch);
    dst = caller_wallet(s, c.caller, cs.destination);
    KOBO_ASSERT(dst != nullptr, "a collection wallet pays into a wallet that exists");
    collection = WalletId(cs.public_id);
    wallet_id = cs.destination;
  } else {
    const auto id = s.wallets.id_with_number(c.account_number);
    if (!id) return reject_closed_collection(h, c);
    dst = caller_wallet(s, c.caller, *id);
    if (dst == nullptr) return reject(Rejection::account_not_found);
    wallet_id = *id;
  }
  const auto dst_after = checked_add(dst->balance, c.amount);
  if (!dst_after) return reject(Rejection::out_of_range);
  if (!within_balance_cap(s, *dst, *dst_after)) return reject(Rejection::balance_limit_exceeded);
  KOBO_ASSERT(s.balance_of(SystemAccount::inbound_settlement) - *inbound_after == *dst_after - dst->balance,
              "inbound settlement pays out what the wallet is credited");

  IncomingCreditReceived x;
  x.account = AccountId(c.caller.account);
  x.collection = std::move(collection);
  x.ids = {transaction_number(s, config, 0)};
  x.narration = c.narration;
  x.postings = {{std::string(sys(SystemAccount::inbound_settlement)), -c.amount, *inbound_after},
                {wallet_id, c.amount, *dst_after}};
  // A transit wallet sweeps what it receives to its settlement wallet in the same event.
  if (const auto transit = s.transit_settlement.find(wallet_id); transit != s.transit_settlement.end()) {
    const WalletState* settlement = s.wallets.find(transit->second);
    KOBO_ASSERT(settlement != nullptr, "a transit wallet settles to a wallet that exists");
    const auto settlement_after = checked_add(settlement->balance, c.amount);
    if (!settlement_after) return reject(Rejection::out_of_range);
    if (!within_balance_cap(s, *settlement, *settlement_after))
      return reject(Rejection::balance_limit_exceeded);
    x.postings.push_back({wallet_id, -c.amount, dst->balance});
    x.postings.push_back({transit->second, c.amount, *settlement_after});
    x.ids.push_back(transaction_number(s, config, 1));
    x.ids.push_back(transaction_number(s, config, 2));
  }
  KOBO_ASSERT(x.ids.size() == (x.postings.size() == 4 ? 3 : 1), "a record id per wallet posting");
  x.sender = Sender{c.sender_name, c.sender_account_number, c.sender_bank_code, c.sender_bank_name,
                    c.sender_bank_nibss_code};
  x.transaction = new_transaction_id(ids, now);
  std::string id = x.transaction.value;
  return one_event(c.caller, std::move(x), std::move(id));
}

// The longest a hold may stay pending: what the API accepts (extensions section 2).
constexpr std::int64_t kHoldExpirySecondsMax = 2'592'000;

Decision decide_place_hold(const PartitionState& s, const History& h, const PlaceHold& c,
                           const LedgerConfig& config, UnixMs now, IdSource& ids) {
  (void)config;
  if (c.amount.value <= 0 || c.expires_in_s < 1 || c.expires_in_s > kHoldExpirySecondsMax)
    return reject(Rejection::out_of_range);
  // Idempotency: a hold's reference is unique among the account's holds of the mode.
  HoldRequest request{c.source, c.amount, std::nullopt, c.metadata.text, c.expires_in_s};
  if (c.narration) request.narration = *c.narration;
  const auto used = h.hold_reference(c.caller.account, c.caller.live, c.reference);
  if (!used) return unavailable(used.status());
  if (used.value()) {
    if (used.value()->fingerprint != request_fingerprint(request))
      return reject(Rejection::duplicate_reference);
    return replay_of(used.value()->transaction);
  }
  const WalletState* src = caller_wallet(s, c.caller, c.source);
  if (src == nullptr) return reject(Rejection::source_not_found);
  // A hold's placement is decided as a debit of its amount, though no money moves yet.
  if (const Rejection r = check_debit(s, c.source, *src, c.amount, now); r != Rejection::none)
    return reject(r);

  HoldPlaced x;
  x.account = AccountId(c.caller.account);
  x.amount = c.amount;
  x.expires_at = Timestamp{now + c.expires_in_s * 1000};
  x.hold = HoldId("hld-" + ids.uuid());
  x.metadata = c.metadata;
  x.narration = c.narration;
  x.reference = c.reference;
  x.source = WalletId(c.source);
  KOBO_ASSERT(s.available_of(c.source, *src) >= c.amount, "a hold reserves what is available (check_debit)");
  const UnixMs expires_at = x.expires_at.ms;
  std::string id = x.hold.value;
  Decision d = one_event(c.caller, std::move(x), id);
  d.schedule.push_back({expires_at, ExpireHold{s.partition, std::move(id)}});
  return d;
}

// The pending hold `id` of the caller, or the rejection: one the caller has not got is not found,
// one that has ended (or reached its expiresAt, its expiry not yet decided) is not pending.
std::variant<const HoldState*, Decision> pending_hold(const PartitionState& s, const History& h,
                                                      const Caller& caller, const std::string& id,
                                                      UnixMs now) {
  if (const auto it = s.holds.find(id); it != s.holds.end()) {
    const HoldState& hs = it->second;
    KOBO_ASSERT(hs.remaining().value > 0, "a pending hold has something left to capture");
    if (hs.business != caller.business || hs.live != caller.live) return reject(Rejection::hold_not_found);
    if (now >= hs.expires_at) return reject(Rejection::hold_not_pending);
    return &hs;
  }
  const auto ended = h.hold(id);
  if (!ended) return unavailable(ended.status());
  if (ended.value() && *ended.value() == CollectionOwner{caller.business, caller.live})
    return reject(Rejection::hold_not_pending);
  return reject(Rejection::hold_not_found);
}

Decision decide_capture_hold(const PartitionState& s, const History& h, const CaptureHold& c,
                             const LedgerConfig& config, UnixMs now, IdSource& ids) {
  if (c.amount && c.amount->value <= 0) return reject(Rejection::out_of_range);
  // A capture's reference is a transfer reference: a repeat answers the hold as it is.
  HoldCaptureRequest request{c.hold, c.destination, c.amount, std::nullopt, c.final};
  if (c.narration) request.narration = *c.narration;
  const auto used = h.transfer_reference(c.caller.account, c.caller.live, c.reference);
  if (!used) return unavailable(used.status());
  if (used.value()) {
    if (used.value()->fingerprint != request_fingerprint(request))
      return reject(Rejection::duplicate_reference);
    return replay_of(c.hold);
  }
  auto found = pending_hold(s, h, c.caller, c.hold, now);
  if (auto* d = std::get_if<Decision>(&found)) return std::move(*d);
  const HoldState& hold = *std::get<const HoldState*>(found);
  const WalletState* dst = caller_wallet(s, c.caller, c.destination);
  if (dst == nullptr) return reject(Rejection::destination_not_found);
  if (c.destination == hold.source) return reject(Rejection::same_source_and_destination);
  const Kobo amount = c.amount.value_or(hold.remaining());
  if (amount > hold.remaining()) return reject(Rejection::amount_exceeds_hold);
  KOBO_ASSERT(amount.value > 0 && amount <= hold.remaining(), "a capture takes something its hold has left");
  const WalletState* src = s.wallets.find(hold.source);
  KOBO_ASSERT(src != nullptr, "a hold's source is a wallet");
  // No check_debit: the hold reserved the money when it was placed, and the balance holds it.
  KOBO_ASSERT(src->balance >= amount, "a wallet's balance covers what its holds reserve");
  const auto credit = check_credit(s, *dst, amount);
  if (const auto* r = std::get_if<Rejection>(&credit)) return reject(*r);

  HoldCaptured x;
  x.account = AccountId(c.caller.account);
  if (!c.amount) x.amount_defaulted = true;
  if (c.final) x.final = true;
  x.hold = HoldId(c.hold);
  x.ids = {transaction_number(s, config, 0), transaction_number(s, config, 1)};
  x.narration = c.narration;
  x.postings = {{hold.source, -amount, src->balance - amount},
                {c.destination, amount, std::get<Kobo>(credit)}};
  x.reference = c.reference;
  x.transaction = new_transaction_id(ids, now);
  return one_event(c.caller, std::move(x), c.hold);
}

Decision decide_void_hold(const PartitionState& s, const History& h, const VoidHold& c, UnixMs now) {
  auto found = pending_hold(s, h, c.caller, c.hold, now);
  if (auto* d = std::get_if<Decision>(&found)) return std::move(*d);
  KOBO_ASSERT(std::get<const HoldState*>(found) != nullptr, "a pending hold is found");
  return one_event(c.caller, HoldVoided{HoldId(c.hold)}, c.hold);
}

// The webhooks' record of what they delivered: one partition-level event, nothing to check
// against the state (a delivery's id names its event; a repeat is harmless).
Decision decide_end_webhook_deliveries(const EndWebhookDeliveries& c) {
  Decision d;
  if (c.deliveries.empty() || c.deliveries.size() > kWebhookDeliveriesPerEventMax)
    return reject(Rejection::out_of_range);
  d.events.push_back({"", false, WebhookDeliveriesEnded{c.deliveries}});
  return d;
}

Decision decide_expire_hold(const PartitionState& s, const ExpireHold& c) {
  Decision d;
  d.id = c.hold;
  // Expiries are scheduled for pending holds: one that is no longer pending was captured or voided.
  const auto it = s.holds.find(c.hold);
  if (it == s.holds.end()) return d;
  KOBO_ASSERT(it->second.remaining().value > 0, "a pending hold still reserves something");
  d.events.push_back({it->second.business, it->second.live, HoldExpired{HoldId(c.hold)}});
  return d;
}

}  // namespace

Kobo transfer_fee(const LedgerConfig& config, Kobo amount) {
  for (const FeeTier& t : config.fee_tiers)
    if (amount.value <= t.up_to_kobo) {
      KOBO_ASSERT(t.fee_kobo > 0, "a fee tier charges a positive fee");
      return Kobo(t.fee_kobo);
    }
  KOBO_ASSERT(false, "the fee schedule must cover every amount");
  return Kobo(0);
}

Scheduled next_rail_step(const std::string& transaction, const PayoutState& payout, Partition partition,
                         const LedgerConfig& config) {
  using S = TransactionStatus;
  if (payout.status == S::pending)
    return {payout.updated_at, AdvancePayout{partition, transaction, S::processing}};
  KOBO_ASSERT(payout.status == S::processing, "a payout in flight is pending or processing");
  return {payout.updated_at + config.rail_delay.count(),
          AdvancePayout{partition, transaction, payout.sandbox_fails ? S::failed : S::success}};
}

std::vector<Scheduled> resume_schedule(const PartitionState& state, const LedgerConfig& config) {
  std::vector<const std::pair<const std::string, PayoutState>*> payouts;
  for (const auto& p : state.payouts)
    if (!p.second.live) payouts.push_back(&p);  // the sandbox rail moves test payouts only
  std::sort(payouts.begin(), payouts.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  std::vector<const CollectionState*> collections;
  for (const auto& [number, c] : state.collections) collections.push_back(&c);
  std::sort(collections.begin(), collections.end(),
            [](const CollectionState* a, const CollectionState* b) { return a->public_id < b->public_id; });
  std::vector<const std::pair<const std::string, HoldState>*> holds;
  for (const auto& h : state.holds) holds.push_back(&h);
  std::sort(holds.begin(), holds.end(), [](const auto* a, const auto* b) { return a->first < b->first; });

  std::vector<Scheduled> out;
  out.reserve(payouts.size() + collections.size() + holds.size());
  for (const auto* p : payouts) out.push_back(next_rail_step(p->first, p->second, state.partition, config));
  for (const CollectionState* c : collections)
    out.push_back({c->expires_at, ExpireCollection{state.partition, c->public_id}});
  for (const auto* h : holds) out.push_back({h->second.expires_at, ExpireHold{state.partition, h->first}});
  std::stable_sort(out.begin(), out.end(),
                   [](const Scheduled& a, const Scheduled& b) { return a.due < b.due; });
  KOBO_ASSERT(out.size() == payouts.size() + state.collections.size() + state.holds.size(),
              "a follow-up per test payout in flight, open collection wallet and pending hold");
  KOBO_ASSERT(std::ranges::all_of(out,
                                  [&](const Scheduled& s) {
                                    return std::visit(
                                        [&](const auto& c) {
                                          if constexpr (requires { c.partition; })
                                            return c.partition == state.partition;
                                          else
                                            return false;
                                        },
                                        s.command);
                                  }),
              "a partition's duties are commands of its own partition");
  return out;
}

Decision decide(const PartitionState& state, const History& history, const Command& command,
                const LedgerConfig& config, UnixMs now, IdSource& ids) {
  Decision d = std::visit(
      [&](const auto& c) -> Decision {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, CreateBusiness>)
          return decide_create_business(state, c, config);
        else if constexpr (std::is_same_v<T, UpdateAccount>)
          return decide_update_account(state, c);
        else if constexpr (std::is_same_v<T, RotateWebhookSecret>)
          return decide_rotate_webhook_secret(state, c);
        else if constexpr (std::is_same_v<T, SealSigningKey>)
          return decide_seal_signing_key(state, c);
        else if constexpr (std::is_same_v<T, RollSecretKey>)
          return decide_roll_secret_key(state, c, now);
        else if constexpr (std::is_same_v<T, RevokeSecretKey>)
          return decide_revoke_secret_key(state, c);
        else if constexpr (std::is_same_v<T, SuspendBusiness>)
          return decide_suspend_business(state, c);
        else if constexpr (std::is_same_v<T, SetRateLimits>)
          return decide_set_rate_limits(state, c);
        else if constexpr (std::is_same_v<T, AddBankAccount>)
          return decide_add_bank_account(state, history, c, config);
        else if constexpr (std::is_same_v<T, CreateWallet>)
          return decide_create_wallet(state, history, c, config, ids);
        else if constexpr (std::is_same_v<T, WalletTransfer>)
          return decide_wallet_transfer(state, history, c, config, now, ids);
        else if constexpr (std::is_same_v<T, BankTransfer>)
          return decide_bank_transfer(state, history, c, config, now, ids);
        else if constexpr (std::is_same_v<T, IncomingCredit>)
          return decide_incoming_credit(state, history, c, config, now, ids);
        else if constexpr (std::is_same_v<T, AdvancePayout>)
          return decide_advance_payout(state, c, config, now);
        else if constexpr (std::is_same_v<T, CreateCollection>)
          return decide_create_collection(state, history, c, config, now, ids);
        else if constexpr (std::is_same_v<T, CreateTransitWallet>)
          return decide_create_transit(state, history, c, config, ids);
        else if constexpr (std::is_same_v<T, SetWalletTier>)
          return decide_set_wallet_tier(state, c);
        else if constexpr (std::is_same_v<T, PlaceHold>)
          return decide_place_hold(state, history, c, config, now, ids);
        else if constexpr (std::is_same_v<T, CaptureHold>)
          return decide_capture_hold(state, history, c, config, now, ids);
        else if constexpr (std::is_same_v<T, VoidHold>)
          return decide_void_hold(state, history, c, now);
        else if constexpr (std::is_same_v<T, ExpireHold>)
          return decide_expire_hold(state, c);
        else if constexpr (std::is_same_v<T, EndWebhookDeliveries>)
          return decide_end_webhook_deliveries(c);
        else if constexpr (std::is_same_v<T, BulkTransfer>) {
          KOBO_ASSERT(false, "a bulk transfer is decided by decide_bulk()");
          return reject(Rejection::out_of_range);
        } else {
          static_assert(std::is_same_v<T, ExpireCollection>, "every command is decided");
          return decide_expire_collection(state, c);
        }
      },
      command);
  KOBO_ASSERT(d.rejection == Rejection::none || (d.events.empty() && d.schedule.empty()),
              "a rejection writes nothing");
  KOBO_ASSERT(!d.replayed || d.events.empty(), "a replay writes nothing");
  return d;
}

}  // namespace kobo
