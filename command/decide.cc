#include "command/decide.h"

#include <cstdio>

#include "command/nuban.h"
#include "common/crypto.h"

namespace kobo {
namespace {

using nlohmann::json;

// The id source of the decide() call under way: every id a decision assigns is drawn from it,
// so the decision is a function of its inputs. Installed by decide() for the call's duration.
thread_local IdSource* current_ids = nullptr;

IdSource& ids() {
  KOBO_ASSERT(current_ids != nullptr, "an id drawn outside decide()");
  return *current_ids;
}

class UsingIds {
 public:
  explicit UsingIds(IdSource& source) { current_ids = &source; }
  ~UsingIds() { current_ids = nullptr; }
  UsingIds(const UsingIds&) = delete;
  UsingIds& operator=(const UsingIds&) = delete;
};

std::string object_id() { return ids().hex(12); }  // `_id`: 24 lowercase hex

Decision reject(Rejection r) {
  Decision d;
  d.rejection = r;
  return d;
}

json rate(Kobo amount) {
  return {{"rateId", 1}, {"rate", 1}, {"sourceCurrency", "NGN"}, {"destinationCurrency", "NGN"},
          {"convertedAmount", amount.value}};
}

// A NIP-style session id: sender institution, yymmddHHmmss, 12 random digits.
std::string session_id(std::string_view institution, UnixMs now) {
  std::string t = format_iso8601(now);  // 2026-11-21T07:02:00.000Z
  std::string stamp = t.substr(2, 2) + t.substr(5, 2) + t.substr(8, 2) + t.substr(11, 2) + t.substr(14, 2) +
                      t.substr(17, 2);
  std::string digits;
  for (char c : ids().hex(6)) digits += static_cast<char>('0' + (c % 10));
  std::string inst(institution.substr(0, 6));
  inst.insert(0, 6 - inst.size(), '0');
  return inst + stamp + digits;
}

// Appends members to an object, keys given in sorted order (so each lands at the end of the
// map): nlohmann's initializer-list constructor builds and copies a two-element array for every
// member, which cost a third of deciding a wallet transfer.
class Members {
 public:
  explicit Members(json& object) : map_(object.get_ref<json::object_t&>()) {}
  Members& operator()(const char* key, json value) {
    map_.emplace_hint(map_.end(), key, std::move(value));
    return *this;
  }

 private:
  json::object_t& map_;
};

json transaction_base(const Caller& c, const LedgerConfig& config, std::int64_t id, std::string_view entry,
                      Kobo amount, Kobo balance, const std::string& narration, UnixMs now) {
  const std::string ts = format_iso8601(now);
  json client(json::value_t::object);
  Members{client}("actualAmount", amount.value)("fee", 0);
  json t(json::value_t::object);
  Members{t}("_id", object_id())
      ("account", c.account)
      ("actualAmount", amount.value)
      ("amount", amount.value)
      ("auth", c.business)
      ("balance", balance.value)
      ("batchId", nullptr)
      ("clientTransaction", std::move(client))
      ("createdAt", ts)
      ("currency", "NGN")
      ("currencyPair", "NGN/NGN")
      ("debitReference", nullptr)
      ("deletedAt", nullptr)
      ("entry", entry)
      ("fee", 0)
      ("feeReference", nullptr)
      ("id", id)
      ("live", c.live)
      ("metadata", json::object())
      ("narration", narration)
      ("processor", config.processor)
      ("publicId", "trx-" + ids().uuid())
      ("requestSrc", "api")
      ("tRef", ids().hex(10))
      ("tags", json::array())
      ("updatedAt", ts);
  return t;
}

// meta.credit: the counterpart side of a transaction, as the spec's 2.7 lists it.
json mirror(const json& other) {
  json m;
  for (const char* k : {"source", "sourceType", "sourceData", "destination", "destinationType", "destinationData",
                        "amount", "currency", "actualAmount", "fee", "narration", "balance"})
    m[k] = other.at(k);
  return m;
}

json posting(std::string_view ledger_account, Kobo amount, Kobo balance_after) {
  return json{{"ledgerAccount", ledger_account}, {"amount", amount.value}, {"balance", balance_after.value}};
}

Decision decide_create_business(const PartitionState& s, const CreateBusiness& c, const LedgerConfig& config,
                                UnixMs now) {
  if (s.businesses.contains(c.business_id)) return reject(Rejection::business_exists);
  const std::string ts = format_iso8601(now);
  const json business{{"publicId", c.business_id}, {"name", c.name}, {"createdAt", ts}, {"updatedAt", ts}};
  const json account{
      {"_id", object_id()},
      {"id", std::to_string(interleaved_id(s.accounts_created, s.partition, config.partitions))},
      {"publicId", c.account_id},
      {"name", c.account_name},
      {"webhooks", json::array()},
      {"isDefault", true},
      {"live", false},
      {"pubKey", {{"live", c.live_public_key}, {"test", c.test_public_key}}},
      {"business", c.business_id},
      {"createdAt", ts},
      {"updatedAt", ts},
      {"__v", 0},
  };
  Decision d;
  d.events.push_back({EventType::business_created, c.business_id, false, {{"business", business}}});
  d.events.push_back({EventType::account_created, c.business_id, false,
                      {{"account", account},
                       {"secretKeyHashes", {{"test", c.test_secret_key_hash}, {"live", c.live_secret_key_hash}}}}});
  d.record = {{"business", business}, {"account", account}};
  return d;
}

Decision decide_update_account(const PartitionState& s, const UpdateAccount& c, UnixMs now) {
  const auto it = s.account_business.find(c.account_id);
  if (it == s.account_business.end() || it->second != c.caller.business) return reject(Rejection::account_not_found);
  json changes = json::object();
  if (c.webhooks) changes["webhooks"] = *c.webhooks;
  if (c.live) changes["live"] = *c.live;
  Decision d;
  d.events.push_back({EventType::account_updated, c.caller.business, false,
                      {{"accountId", c.account_id}, {"changes", std::move(changes)}, {"updatedAt", format_iso8601(now)}}});
  return d;
}

json bank_account_record(const PartitionState& s, const AddBankAccount& c, const LedgerConfig& config, UnixMs now) {
  const std::string ts = format_iso8601(now);
  return json{
      {"_id", object_id()},
      {"id", interleaved_id(s.bank_accounts_created, s.partition, config.partitions)},
      {"publicId", c.public_id},
      {"auth", c.caller.business},
      {"account", c.caller.account},
      {"accountName", c.account_name},
      {"accountNumber", c.account_number},
      {"bankName", c.bank_name},
      {"bankCode", c.bank_code},
      {"reference", "bkr-" + ids().uuid()},
      {"live", c.caller.live},
      {"processor", config.processor},
      {"currency", "NGN"},
      {"version", 1},
      {"beneficiaryType", c.beneficiary_type},
      {"clientIds", json::object()},
      {"createdAt", ts},
      {"updatedAt", ts},
      {"lastUpdated", ts},
  };
}

Decision decide_add_bank_account(const PartitionState& s, const AddBankAccount& c, const LedgerConfig& config,
                                 UnixMs now) {
  Decision d;
  if (s.bank_accounts.contains(c.public_id)) {
    d.replayed = true;
    d.transaction = c.public_id;
    return d;
  }
  d.record = bank_account_record(s, c, config, now);
  d.events.push_back({EventType::bank_account_added, c.caller.business, c.caller.live, {{"bankAccount", d.record}}});
  return d;
}

// The fields every wallet has (spec 2.1 and 2.2), with a new id and account number.
json new_wallet(const PartitionState& s, const Caller& caller, const std::string& name,
                const std::optional<std::string>& email_address, const std::optional<json>& mobile,
                const LedgerConfig& config, UnixMs now) {
  const std::string ts = format_iso8601(now);
  json wallet{
      {"_id", object_id()},
      {"id", interleaved_id(s.wallets_created, s.partition, config.partitions)},
      {"publicId", "vba-" + ids().uuid()},
      {"auth", caller.business},
      {"account", caller.account},
      {"accountName", name},
      {"accountNumber",
       nuban::account_number(config.nuban_code,
                             static_cast<std::uint64_t>(interleaved_id(s.account_numbers_issued, s.partition,
                                                                       config.partitions)))},
      {"bankName", config.bank_name},
      {"bankCode", config.bank_code},
      {"live", caller.live},
      {"processor", config.processor},
      {"balance", 0},
      {"currency", "NGN"},
      {"createdAt", ts},
      {"updatedAt", ts},
      {"lastUpdated", ts},
  };
  if (email_address) wallet["emailAddress"] = *email_address;
  if (mobile) wallet["mobile"] = *mobile;
  return wallet;
}

Decision wallet_created(const Caller& caller, json wallet) {
  Decision d;
  d.record = wallet;
  d.events.push_back({EventType::wallet_created, caller.business, caller.live, {{"wallet", std::move(wallet)}}});
  return d;
}

Decision decide_create_wallet(const PartitionState& s, const CreateWallet& c, const LedgerConfig& config,
                              UnixMs now) {
  if (s.wallets.name_taken(c.caller.account, c.caller.live, c.account_name))
    return reject(Rejection::wallet_name_taken);
  if (c.category == "primary") {
    const auto it = s.primary_wallets.find(scope_key(c.caller.account, c.caller.live));
    if (it != s.primary_wallets.end() && it->second >= config.primary_wallets_max)
      return reject(Rejection::primary_wallet_limit);
  }
  json wallet = new_wallet(s, c.caller, c.account_name, c.email_address, c.mobile, config, now);
  wallet["isFavourite"] = false;
  wallet["category"] = c.category;
  return wallet_created(c.caller, std::move(wallet));
}

const WalletState* caller_wallet(const PartitionState& s, const Caller& c, const std::string& id) {
  const WalletState* w = s.wallets.find(id);
  if (w == nullptr) return nullptr;
  const Caller& owner = s.wallets.owner(*w);
  return owner.business == c.business && owner.live == c.live ? w : nullptr;
}

// Idempotency (DESIGN section 2.4): a reference seen before is a replay of the same body, or a
// conflict. Transfers of every kind share one reference space per account and mode.
std::optional<Decision> check_reference(const PartitionState& s, const Caller& caller,
                                        const std::optional<std::string>& reference, const std::string& fingerprint) {
  if (!reference) return std::nullopt;
  const auto it = s.references.find(scope_key(caller.account, caller.live) + *reference);
  if (it == s.references.end()) return std::nullopt;
  if (it->second.fingerprint != fingerprint) return reject(Rejection::duplicate_reference);
  Decision d;
  d.replayed = true;
  d.transaction = it->second.transaction;
  return d;
}

// The longest a collection wallet may stay open: far beyond what the API accepts, and far
// from overflowing a time in milliseconds.
constexpr std::int64_t kCollectionExpirySecondsMax = 100LL * 366 * 24 * 3600;

// Whether `balance + delta` stays within the range of kobo (amounts from outside the HTTP
// validation, the simulation say, must never overflow a balance).
bool fits(Kobo balance, Kobo delta) { return checked_add(balance, delta).has_value(); }

Decision decide_wallet_transfer(const PartitionState& s, const WalletTransfer& c, const LedgerConfig& config,
                                UnixMs now) {
  if (c.amount.value <= 0) return reject(Rejection::out_of_range);
  if (auto replay = check_reference(s, c.caller, c.reference, c.fingerprint)) return std::move(*replay);
  const std::string reference = c.reference.value_or("ref-" + ids().uuid());
  const WalletState* src = caller_wallet(s, c.caller, c.source);
  if (src == nullptr) return reject(Rejection::source_not_found);
  const WalletState* dst = caller_wallet(s, c.caller, c.destination);
  if (dst == nullptr) return reject(Rejection::destination_not_found);
  if (c.source == c.destination) return reject(Rejection::same_source_and_destination);
  if (src->balance < c.amount) return reject(Rejection::insufficient_funds);
  if (!fits(dst->balance, c.amount)) return reject(Rejection::out_of_range);

  const Kobo src_after = src->balance - c.amount;
  const Kobo dst_after = dst->balance + c.amount;
  const std::string link_ref = ids().uuid();
  json debit = transaction_base(c.caller, config, interleaved_id(s.transactions_created, s.partition, config.partitions),
                                "debit", c.amount, src_after, c.narration, now);
  json credit =
      transaction_base(c.caller, config, interleaved_id(s.transactions_created + 1, s.partition, config.partitions),
                       "credit", c.amount, dst_after, c.narration, now);
  for (json* t : {&debit, &credit}) {
    (*t)["source"] = c.source;
    (*t)["sourceType"] = "VirtualAccount";
    (*t)["sourceData"] = wallet_snapshot(c.source, *src, config);
    (*t)["destination"] = c.destination;
    (*t)["destinationType"] = "VirtualAccount";
    (*t)["destinationData"] = wallet_snapshot(c.destination, *dst, config);
    if (c.name_enquiry_ref) (*t)["destinationData"]["nameEnquiryRef"] = *c.name_enquiry_ref;
    (*t)["linkRef"] = link_ref;
  }
  debit["reference"] = reference;
  debit["status"] = "pending";
  credit["reference"] = "ref-" + ids().uuid();
  credit["debitReference"] = reference;
  credit["status"] = "success";
  debit["meta"] = {{"isThirdParty", false}, {"rate", rate(c.amount)}, {"credit", mirror(credit)}};
  credit["meta"] = {{"isThirdParty", false}, {"rate", rate(c.amount)}, {"credit", mirror(debit)}};

  Decision d;
  d.record_in = EventMember{0, "transaction"};
  d.transaction = debit.at("publicId").get<std::string>();
  json debited = posting(c.source, c.amount, src_after);
  debited["transaction"] = std::move(debit);
  if (c.reference) debited["fingerprint"] = c.fingerprint;
  json credited = posting(c.destination, c.amount, dst_after);
  credited["transaction"] = std::move(credit);
  d.events.push_back({EventType::debited, c.caller.business, c.caller.live, std::move(debited)});
  d.events.push_back({EventType::credited, c.caller.business, c.caller.live, std::move(credited)});
  d.schedule.push_back({now, SettleTransfer{s.partition, d.transaction}});
  return d;
}

Decision decide_bank_transfer(const PartitionState& s, const BankTransfer& c, const LedgerConfig& config,
                              UnixMs now) {
  if (c.amount.value <= 0) return reject(Rejection::out_of_range);
  if (auto replay = check_reference(s, c.caller, c.reference, c.fingerprint)) return std::move(*replay);
  const std::string reference = c.reference.value_or("ref-" + ids().uuid());
  const WalletState* src = caller_wallet(s, c.caller, c.source);
  if (src == nullptr) return reject(Rejection::source_not_found);
  const Kobo fee = transfer_fee(config, c.amount);
  const auto checked_actual = checked_add(c.amount, fee);
  if (!checked_actual || !fits(s.balance_of(kPayoutSuspense), c.amount) || !fits(s.balance_of(kFeeAccount), fee))
    return reject(Rejection::out_of_range);
  const Kobo actual = *checked_actual;
  if (src->balance < actual) return reject(Rejection::insufficient_funds);

  Decision d;
  std::int64_t beneficiary_id = 0;
  if (auto it = s.bank_accounts.find(c.bank_account_id); it != s.bank_accounts.end()) {
    beneficiary_id = it->second;
  } else if (c.save_beneficiary) {
    const AddBankAccount add{c.caller,  c.bank_account_id, c.account_name, c.account_number,
                             c.bank_name, c.bank_code,       "external"};
    json account = bank_account_record(s, add, config, now);
    beneficiary_id = account.at("id").get<std::int64_t>();
    d.events.push_back({EventType::bank_account_added, c.caller.business, c.caller.live,
                        {{"bankAccount", std::move(account)}}});
  }
  const Kobo src_after = src->balance - actual;
  json debit = transaction_base(c.caller, config, interleaved_id(s.transactions_created, s.partition, config.partitions),
                                "debit", c.amount, src_after, c.narration, now);
  debit["source"] = c.source;
  debit["sourceType"] = "VirtualAccount";
  debit["sourceData"] = wallet_snapshot(c.source, *src, config);
  debit["destination"] = c.bank_account_id;
  debit["destinationType"] = "BankAccount";
  debit["destinationData"] = {{"id", beneficiary_id},
                              {"publicId", c.bank_account_id},
                              {"bankName", c.bank_name},
                              {"bankCode", c.bank_code},
                              {"accountName", c.account_name},
                              {"accountNumber", c.account_number},
                              {"processor", config.processor},
                              {"clientIds", json::object()},
                              {"nameEnquiryRef", c.name_enquiry_ref}};
  debit["fee"] = fee.value;
  debit["feeReference"] = "fee-" + ids().uuid();
  debit["actualAmount"] = actual.value;
  debit["clientTransaction"] = {{"fee", fee.value}, {"actualAmount", actual.value}};
  debit["reference"] = reference;
  debit["linkRef"] = ids().uuid();
  debit["status"] = "pending";
  debit["metadata"] = c.metadata;
  json credit_side = mirror(debit);
  credit_side["balance"] = 0;  // the other side is a bank whose balance we do not keep
  debit["meta"] = {{"isThirdParty", true}, {"rate", rate(c.amount)}, {"credit", std::move(credit_side)}};

  d.record_in = EventMember{d.events.size(), "transaction"};
  d.transaction = debit.at("publicId").get<std::string>();
  json debited = posting(c.source, actual, src_after);
  debited["transaction"] = std::move(debit);
  if (c.reference) debited["fingerprint"] = c.fingerprint;
  d.events.push_back({EventType::debited, c.caller.business, c.caller.live, std::move(debited)});
  d.events.push_back({EventType::credited, c.caller.business, c.caller.live,
                      posting(kPayoutSuspense, c.amount, s.balance_of(kPayoutSuspense) + c.amount)});
  d.events.push_back(
      {EventType::credited, c.caller.business, c.caller.live, posting(kFeeAccount, fee, s.balance_of(kFeeAccount) + fee)});
  d.schedule.push_back({now, AdvancePayout{s.partition, d.transaction, "processing"}});
  return d;
}

json rail_verify(const std::string& status, const PayoutState& p, UnixMs now) {
  const bool final = status == "success" || status == "failed";
  const std::string message = status == "success"   ? "Transfer successful"
                              : status == "failed"  ? "Transfer failed"
                                                    : "Transfer is being processed";
  return json{{"status", final ? (status == "success" ? "success" : "failed") : "pending"},
              {"data",
               {{"status", status},
                {"message", message},
                {"data",
                 {{"narration", p.narration},
                  {"amount", p.amount.value},
                  {"date", format_iso8601(now)},
                  {"beneficiary",
                   {{"accountNumber", p.beneficiary.at("accountNumber")},
                    {"bankCode", p.beneficiary.at("bankCode")},
                    {"bankName", p.beneficiary.at("bankName")},
                    {"accountName", p.beneficiary.at("accountName")}}},
                  {"transactionStatus", status},
                  {"sessionId", session_id("999999", now)},
                  {"type", "transfer"}}}}}};
}

Decision decide_advance_payout(const PartitionState& s, const AdvancePayout& c, const LedgerConfig& config,
                               UnixMs now) {
  const auto it = s.payouts.find(c.transaction);
  KOBO_ASSERT(it != s.payouts.end(), "advancing a payout that is not in flight");
  const PayoutState& p = it->second;
  const bool legal = (p.status == "pending" && c.status == "processing") ||
                     (p.status == "processing" && (c.status == "success" || c.status == "failed"));
  KOBO_ASSERT(legal, "illegal payout transition");
  Decision d;
  auto event = [&](EventType type, json data) { d.events.push_back({type, p.business, p.live, std::move(data)}); };
  event(EventType::transaction_status_changed, {{"publicId", c.transaction},
                                                {"from", p.status},
                                                {"status", c.status},
                                                {"updatedAt", format_iso8601(now)},
                                                {"verify", rail_verify(c.status, p, now)}});
  if (c.status == "success") {
    event(EventType::debited, posting(kPayoutSuspense, p.amount, s.balance_of(kPayoutSuspense) - p.amount));
    event(EventType::credited,
          posting(kOutboundSettlement, p.amount, s.balance_of(kOutboundSettlement) + p.amount));
  } else if (c.status == "failed") {
    // The reversal: the amount leaves payout suspense, the fee is refunded, the wallet is
    // credited what it was debited.
    const WalletState* w = s.wallets.find(p.source);
    KOBO_ASSERT(w != nullptr, "payout from an unknown wallet");
    const Kobo actual = p.amount + p.fee;
    const Kobo wallet_after = w->balance + actual;
    const Caller& owner = s.wallets.owner(*w);
    json credit = transaction_base(owner, config, interleaved_id(s.transactions_created, s.partition, config.partitions),
                                   "credit", actual, wallet_after, "Reversal: " + p.narration, now);
    credit["source"] = p.beneficiary.at("publicId");
    credit["sourceType"] = "BankAccount";
    credit["sourceData"] = p.beneficiary;
    credit["destination"] = p.source;
    credit["destinationType"] = "VirtualAccount";
    credit["destinationData"] = wallet_snapshot(p.source, *w, config);
    credit["reference"] = "rev-" + ids().uuid();
    credit["debitReference"] = p.reference;
    credit["linkRef"] = p.link_ref;
    credit["status"] = "success";
    credit["tags"] = json::array({"reversal"});
    json mirrored = mirror(credit);
    credit["meta"] = {{"isThirdParty", true}, {"rate", rate(actual)}, {"credit", std::move(mirrored)}};
    event(EventType::debited, posting(kPayoutSuspense, p.amount, s.balance_of(kPayoutSuspense) - p.amount));
    event(EventType::debited, posting(kFeeAccount, p.fee, s.balance_of(kFeeAccount) - p.fee));
    json credited = posting(p.source, actual, wallet_after);
    credited["transaction"] = std::move(credit);
    event(EventType::credited, std::move(credited));
  } else {
    PayoutState next = p;
    next.status = c.status;
    next.updated_at = now;
    d.schedule.push_back(next_rail_step(c.transaction, next, s.partition, config));
  }
  return d;
}

// The credit of money arriving from another bank to wallet `wallet_id` (inbound settlement
// pays it), appended to `d`.
void credit_incoming(const PartitionState& s, const IncomingCredit& c, const std::string& wallet_id,
                     const WalletState* dst, const LedgerConfig& config, UnixMs now, Decision& d) {

  const Kobo dst_after = dst->balance + c.amount;
  const Kobo inbound_after = s.balance_of(kInboundSettlement) - c.amount;
  const std::string ts = format_iso8601(now);
  const std::string reference = "ref-" + ids().uuid();
  const std::string session = session_id(c.sender_bank_nibss_code, now);
  json source{
      {"id", interleaved_id(s.transactions_created, s.partition, config.partitions)},
      {"processor", config.processor},
      {"type", "bank_account"},
      {"publicId", "src-" + ids().uuid()},
      {"createdAt", ts},
      {"updatedAt", ts},
      {"channel", "NIP"},
      {"reference", reference},
      {"sessionId", session},
      {"bankName", c.sender_bank_name},
      {"bankCode", c.sender_bank_code},
      {"nibssBankCode", c.sender_bank_nibss_code},
      {"accountName", c.sender_name},
      {"accountNumber", c.sender_account_number},
      {"currency", "NGN"},
      {"live", c.caller.live},
  };
  json credit = transaction_base(c.caller, config, interleaved_id(s.transactions_created, s.partition, config.partitions),
                                 "credit", c.amount, dst_after, c.narration, now);
  credit["source"] = source.at("publicId");
  credit["sourceType"] = "External";
  credit["sourceData"] = source;
  credit["destination"] = wallet_id;
  credit["destinationType"] = "VirtualAccount";
  credit["destinationData"] = wallet_snapshot(wallet_id, *dst, config);
  credit["reference"] = reference;
  credit["linkRef"] = ids().uuid();
  credit["status"] = "success";
  json mirrored = mirror(credit);
  mirrored["auth"] = c.caller.business;
  mirrored["account"] = c.caller.account;
  mirrored["linkRef"] = credit.at("linkRef");
  credit["meta"] = {
      {"isThirdParty", false},
      {"rate", rate(c.amount)},
      {"credit", std::move(mirrored)},
      {"clientResponse",
       {{"message", "Transaction successful"},
        {"amount", c.amount.value},
        {"tranDateTime", ts},
        {"currency", "NGN"},
        {"processor", config.processor},
        {"narration", c.narration},
        {"reference", reference},
        {"type", "credit"},
        {"authorization",
         {{"channel", "NIP"},
          {"reference", reference},
          {"sessionId", session},
          {"bankName", c.sender_bank_name},
          {"bankCode", c.sender_bank_code},
          {"nibssBankCode", c.sender_bank_nibss_code},
          {"accountName", c.sender_name},
          {"accountNumber", c.sender_account_number}}},
        {"status", "success"}}},
  };

  d.record_in = EventMember{d.events.size() + 1, "transaction"};  // the credit, after the settlement's debit
  d.transaction = credit.at("publicId").get<std::string>();
  d.events.push_back({EventType::debited, c.caller.business, c.caller.live,
                      posting(kInboundSettlement, c.amount, inbound_after)});
  json credited = posting(wallet_id, c.amount, dst_after);
  credited["transaction"] = std::move(credit);
  d.events.push_back({EventType::credited, c.caller.business, c.caller.live, std::move(credited)});
}

// A transit wallet's sweep of `amount` (just credited to it) to its settlement wallet: a
// debit record on the transit wallet and a credit record on the settlement wallet.
void sweep(const PartitionState& s, const Caller& caller, const std::string& transit_id, const WalletState& transit,
           const std::string& settlement_id, Kobo amount, const LedgerConfig& config, UnixMs now,
           Decision& d) {
  const WalletState* settlement = s.wallets.find(settlement_id);
  KOBO_ASSERT(settlement != nullptr, "a transit wallet settles to a wallet that exists");
  const Kobo transit_after = transit.balance - amount;  // `transit` is as credited just before
  const Kobo settlement_after = settlement->balance + amount;
  const std::string link_ref = ids().uuid();
  // Ids after the incoming credit's record, which this command also creates.
  json debit = transaction_base(caller, config, interleaved_id(s.transactions_created + 1, s.partition, config.partitions),
                                "debit", amount, transit_after, "Transit settlement", now);
  json credit = transaction_base(caller, config, interleaved_id(s.transactions_created + 2, s.partition, config.partitions),
                                 "credit", amount, settlement_after, "Transit settlement", now);
  for (json* t : {&debit, &credit}) {
    (*t)["source"] = transit_id;
    (*t)["sourceType"] = "VirtualAccount";
    (*t)["sourceData"] = wallet_snapshot(transit_id, transit, config);
    (*t)["destination"] = settlement_id;
    (*t)["destinationType"] = "VirtualAccount";
    (*t)["destinationData"] = wallet_snapshot(settlement_id, *settlement, config);
    (*t)["linkRef"] = link_ref;
    (*t)["status"] = "success";
    (*t)["tags"] = json::array({"sweep"});
  }
  debit["reference"] = "swp-" + ids().uuid();
  credit["reference"] = "swp-" + ids().uuid();
  credit["debitReference"] = debit["reference"];
  debit["meta"] = {{"isThirdParty", false}, {"rate", rate(amount)}, {"credit", mirror(credit)}};
  credit["meta"] = {{"isThirdParty", false}, {"rate", rate(amount)}, {"credit", mirror(debit)}};
  json debited = posting(transit_id, amount, transit_after);
  debited["transaction"] = std::move(debit);
  json credited = posting(settlement_id, amount, settlement_after);
  credited["transaction"] = std::move(credit);
  d.events.push_back({EventType::debited, caller.business, caller.live, std::move(debited)});
  d.events.push_back({EventType::credited, caller.business, caller.live, std::move(credited)});
}

Decision decide_incoming_credit(const PartitionState& s, const IncomingCredit& c, const LedgerConfig& config,
                                UnixMs now) {
  if (c.amount.value <= 0 || !fits(s.balance_of(kInboundSettlement), -c.amount)) return reject(Rejection::out_of_range);
  Decision d;
  if (const auto col = s.collections.find(c.account_number); col != s.collections.end()) {
    const CollectionState& cs = col->second;
    if (cs.business != c.caller.business || cs.live != c.caller.live) return reject(Rejection::account_not_found);
    if (!cs.active || now >= cs.expires_at) return reject(Rejection::collection_inactive);
    if (c.amount != cs.amount) return reject(Rejection::amount_mismatch);
    const WalletState* dst = caller_wallet(s, c.caller, cs.destination);
    KOBO_ASSERT(dst != nullptr, "a collection wallet pays into a wallet that exists");
    if (!fits(dst->balance, c.amount)) return reject(Rejection::out_of_range);
    credit_incoming(s, c, cs.destination, dst, config, now, d);
    d.events.back().data["transaction"]["metadata"] = {{"collectionAccount", cs.public_id}};
    d.events.push_back({EventType::collection_status_changed, c.caller.business, c.caller.live,
                        {{"publicId", cs.public_id}, {"from", "pending"}, {"status", "success"},
                         {"updatedAt", format_iso8601(now)}}});
    return d;
  }
  const auto wallet_id = s.wallets.id_with_number(c.account_number);
  if (!wallet_id) return reject(Rejection::account_not_found);
  const WalletState* dst = caller_wallet(s, c.caller, *wallet_id);
  if (dst == nullptr) return reject(Rejection::account_not_found);
  if (!fits(dst->balance, c.amount)) return reject(Rejection::out_of_range);
  if (const auto transit = s.transit_settlement.find(*wallet_id); transit != s.transit_settlement.end()) {
    const WalletState* settlement = s.wallets.find(transit->second);
    if (settlement != nullptr && !fits(settlement->balance, c.amount)) return reject(Rejection::out_of_range);
  }
  credit_incoming(s, c, *wallet_id, dst, config, now, d);
  if (const auto transit = s.transit_settlement.find(*wallet_id); transit != s.transit_settlement.end()) {
    WalletState credited = *dst;
    credited.balance += c.amount;
    sweep(s, c.caller, *wallet_id, credited, transit->second, c.amount, config, now, d);
  }
  return d;
}

Decision decide_create_collection(const PartitionState& s, const CreateCollection& c, const LedgerConfig& config,
                                  UnixMs now) {
  if (c.amount.value <= 0 || c.expire_in_s < 0 || c.expire_in_s > kCollectionExpirySecondsMax)
    return reject(Rejection::out_of_range);
  const WalletState* dst = caller_wallet(s, c.caller, c.destination);
  if (dst == nullptr) return reject(Rejection::destination_not_found);
  if (c.reference && s.collection_references.contains(scope_key(c.caller.account, c.caller.live) + *c.reference))
    return reject(Rejection::reference_exists);
  const std::string ts = format_iso8601(now);
  const UnixMs expires_at = now + c.expire_in_s * 1000;
  json collection{
      {"_id", object_id()},
      {"id", interleaved_id(s.account_numbers_issued, s.partition, config.partitions)},
      {"publicId", "vba-" + ids().uuid()},
      {"auth", c.caller.business},
      {"account", c.caller.account},
      {"reference", c.reference ? json(*c.reference) : json(nullptr)},
      {"destination", c.destination},
      {"parentAccountNumber", format_account_number(dst->account_number)},
      {"accountName", c.account_name},
      {"accountNumber",
       nuban::account_number(config.nuban_code,
                             static_cast<std::uint64_t>(interleaved_id(s.account_numbers_issued, s.partition,
                                                                       config.partitions)))},
      {"amount", c.amount.value},
      {"bankName", config.bank_name},
      {"bankCode", config.bank_code},
      {"live", c.caller.live},
      {"processor", config.processor},
      {"expiration", format_iso8601(expires_at)},
      {"createdAt", ts},
      {"updatedAt", ts},
      {"currency", "NGN"},
      {"active", true},
      {"status", "pending"},
  };
  Decision d;
  d.record = collection;
  d.transaction = collection.at("publicId").get<std::string>();
  d.events.push_back({EventType::collection_created, c.caller.business, c.caller.live, {{"collection", collection}}});
  d.schedule.push_back({expires_at, ExpireCollection{s.partition, d.transaction}});
  return d;
}

Decision decide_expire_collection(const PartitionState& s, const ExpireCollection& c, UnixMs now) {
  const auto number = s.collection_numbers.find(c.collection);
  KOBO_ASSERT(number != s.collection_numbers.end(), "expiring an unknown collection wallet");
  const CollectionState& cs = s.collections.at(number->second);
  Decision d;
  if (!cs.active) return d;  // paid before it expired
  d.events.push_back({EventType::collection_status_changed, cs.business, cs.live,
                      {{"publicId", cs.public_id}, {"from", "pending"}, {"status", "expired"},
                       {"updatedAt", format_iso8601(now)}}});
  return d;
}

Decision decide_create_transit(const PartitionState& s, const CreateTransitWallet& c, const LedgerConfig& config,
                               UnixMs now) {
  const WalletState* settlement = caller_wallet(s, c.caller, c.settlement_account);
  if (settlement == nullptr || s.transit_settlement.contains(c.settlement_account))
    return reject(Rejection::settlement_account_not_found);
  json wallet = new_wallet(s, c.caller, c.account_name, c.email_address, c.mobile, config, now);
  wallet["alias"] = c.account_name;
  wallet["reference"] = nullptr;
  wallet["settlementAccount"] = c.settlement_account;
  return wallet_created(c.caller, std::move(wallet));
}

Decision decide_settle(const PartitionState& s, const SettleTransfer& c, UnixMs now) {
  const auto it = s.pending_settlement.find(c.transaction);
  KOBO_ASSERT(it != s.pending_settlement.end(), "settling a transfer that is not pending");
  const WalletState* w = s.wallets.find(it->second);
  KOBO_ASSERT(w != nullptr, "pending transfer to an unknown wallet");
  const Caller& owner = s.wallets.owner(*w);
  Decision d;
  d.events.push_back({EventType::transaction_status_changed, owner.business, owner.live,
                      {{"publicId", c.transaction},
                       {"from", "pending"},
                       {"status", "success"},
                       {"updatedAt", format_iso8601(now)}}});
  return d;
}

}  // namespace

Kobo transfer_fee(const LedgerConfig& config, Kobo amount) {
  for (const FeeTier& t : config.fee_tiers)
    if (amount.value <= t.up_to_kobo) return Kobo(t.fee_kobo);
  KOBO_ASSERT(false, "the fee schedule must cover every amount");
  return Kobo(0);
}

Scheduled next_rail_step(const std::string& transaction, const PayoutState& payout, Partition partition,
                         const LedgerConfig& config) {
  if (payout.status == "pending") return {payout.updated_at, AdvancePayout{partition, transaction, "processing"}};
  KOBO_ASSERT(payout.status == "processing", "a payout in flight is pending or processing");
  return {payout.updated_at + config.rail_delay.count(),
          AdvancePayout{partition, transaction, payout.sandbox_fails ? "failed" : "success"}};
}

std::vector<Scheduled> resume_schedule(const PartitionState& state, const LedgerConfig& config) {
  std::vector<Scheduled> out;
  for (const auto& [trx, wallet] : state.pending_settlement)
    out.push_back({0, SettleTransfer{state.partition, trx}});
  for (const auto& [trx, payout] : state.payouts) out.push_back(next_rail_step(trx, payout, state.partition, config));
  for (const auto& [number, c] : state.collections)
    if (c.active) out.push_back({c.expires_at, ExpireCollection{state.partition, c.public_id}});
  return out;
}

json wallet_snapshot(const std::string& public_id, const WalletState& w, const LedgerConfig& config) {
  json s(json::value_t::object);
  Members{s}("accountName", w.account_name)
      ("accountNumber", format_account_number(w.account_number))
      ("bankCode", config.bank_code)
      ("bankName", config.bank_name)
      ("currency", "NGN")
      ("id", w.id)
      ("processor", config.processor)
      ("publicId", public_id)
      ("reference", nullptr);
  return s;
}

const nlohmann::json& record_of(const Decision& d) {
  if (!d.record_in) return d.record;
  return d.events.at(d.record_in->event).data.at(d.record_in->member);
}

Decision decide(const PartitionState& state, const Command& command, const LedgerConfig& config, UnixMs now,
                IdSource& id_source) {
  const UsingIds using_ids(id_source);
  return std::visit(
      [&](const auto& c) -> Decision {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, CreateBusiness>) return decide_create_business(state, c, config, now);
        else if constexpr (std::is_same_v<T, UpdateAccount>) return decide_update_account(state, c, now);
        else if constexpr (std::is_same_v<T, AddBankAccount>) return decide_add_bank_account(state, c, config, now);
        else if constexpr (std::is_same_v<T, CreateWallet>) return decide_create_wallet(state, c, config, now);
        else if constexpr (std::is_same_v<T, WalletTransfer>) return decide_wallet_transfer(state, c, config, now);
        else if constexpr (std::is_same_v<T, BankTransfer>) return decide_bank_transfer(state, c, config, now);
        else if constexpr (std::is_same_v<T, IncomingCredit>) return decide_incoming_credit(state, c, config, now);
        else if constexpr (std::is_same_v<T, AdvancePayout>) return decide_advance_payout(state, c, config, now);
        else if constexpr (std::is_same_v<T, CreateCollection>) return decide_create_collection(state, c, config, now);
        else if constexpr (std::is_same_v<T, CreateTransitWallet>) return decide_create_transit(state, c, config, now);
        else if constexpr (std::is_same_v<T, ExpireCollection>) return decide_expire_collection(state, c, now);
        else return decide_settle(state, c, now);
      },
      command);
}

}  // namespace kobo
