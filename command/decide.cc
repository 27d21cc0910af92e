#include "command/decide.h"

#include <cstdio>

#include "command/nuban.h"
#include "common/crypto.h"

namespace kobo {
namespace {

using nlohmann::json;

std::string object_id() { return random_hex(12); }  // `_id`: 24 lowercase hex

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
  for (char c : random_hex(12)) digits += static_cast<char>('0' + (c % 10));
  std::string inst(institution.substr(0, 6));
  inst.insert(0, 6 - inst.size(), '0');
  return inst + stamp + digits;
}

json transaction_base(const Caller& c, const LedgerConfig& config, std::int64_t id, std::string_view entry,
                      Kobo amount, Kobo balance, const std::string& narration, UnixMs now) {
  const std::string ts = format_iso8601(now);
  return json{
      {"_id", object_id()},
      {"id", id},
      {"publicId", "trx-" + uuid_v4()},
      {"auth", c.business},
      {"account", c.account},
      {"deletedAt", nullptr},
      {"requestSrc", "api"},
      {"tags", json::array()},
      {"currency", "NGN"},
      {"entry", entry},
      {"live", c.live},
      {"amount", amount.value},
      {"balance", balance.value},
      {"fee", 0},
      {"feeReference", nullptr},
      {"actualAmount", amount.value},
      {"clientTransaction", {{"fee", 0}, {"actualAmount", amount.value}}},
      {"narration", narration},
      {"debitReference", nullptr},
      {"tRef", random_hex(10)},
      {"processor", config.processor},
      {"currencyPair", "NGN/NGN"},
      {"batchId", nullptr},
      {"metadata", json::object()},
      {"createdAt", ts},
      {"updatedAt", ts},
  };
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

Decision decide_create_wallet(const PartitionState& s, const CreateWallet& c, const LedgerConfig& config,
                              UnixMs now) {
  const std::string scope = scope_key(c.caller.account, c.caller.live);
  if (s.wallet_names.contains(scope + c.account_name)) return reject(Rejection::wallet_name_taken);
  if (c.category == "primary") {
    const auto it = s.primary_wallets.find(scope);
    if (it != s.primary_wallets.end() && it->second >= config.primary_wallets_max)
      return reject(Rejection::primary_wallet_limit);
  }
  const std::string ts = format_iso8601(now);
  json wallet{
      {"_id", object_id()},
      {"id", interleaved_id(s.wallets_created, s.partition, config.partitions)},
      {"publicId", "vba-" + uuid_v4()},
      {"auth", c.caller.business},
      {"account", c.caller.account},
      {"accountName", c.account_name},
      {"accountNumber",
       nuban::account_number(config.nuban_code,
                             static_cast<std::uint64_t>(interleaved_id(s.account_numbers_issued, s.partition,
                                                                       config.partitions)))},
      {"bankName", config.bank_name},
      {"bankCode", config.bank_code},
      {"live", c.caller.live},
      {"isFavourite", false},
      {"processor", config.processor},
      {"category", c.category},
      {"balance", 0},
      {"currency", "NGN"},
      {"createdAt", ts},
      {"updatedAt", ts},
      {"lastUpdated", ts},
  };
  if (c.email_address) wallet["emailAddress"] = *c.email_address;
  if (c.mobile) wallet["mobile"] = *c.mobile;
  Decision d;
  d.record = wallet;
  d.events.push_back({EventType::wallet_created, c.caller.business, c.caller.live, {{"wallet", std::move(wallet)}}});
  return d;
}

const WalletState* caller_wallet(const PartitionState& s, const Caller& c, const std::string& id) {
  const auto it = s.wallets.find(id);
  if (it == s.wallets.end() || it->second.business != c.business || it->second.live != c.live) return nullptr;
  return &it->second;
}

Decision decide_wallet_transfer(const PartitionState& s, const WalletTransfer& c, const LedgerConfig& config,
                                UnixMs now) {
  const std::string reference = c.reference.value_or("ref-" + uuid_v4());
  if (c.reference) {
    const auto it = s.references.find(scope_key(c.caller.account, c.caller.live) + reference);
    if (it != s.references.end()) {
      if (it->second.fingerprint != c.fingerprint) return reject(Rejection::duplicate_reference);
      Decision d;
      d.replayed = true;
      d.transaction = it->second.transaction;
      return d;
    }
  }
  const WalletState* src = caller_wallet(s, c.caller, c.source);
  if (src == nullptr) return reject(Rejection::source_not_found);
  const WalletState* dst = caller_wallet(s, c.caller, c.destination);
  if (dst == nullptr) return reject(Rejection::destination_not_found);
  if (c.source == c.destination) return reject(Rejection::same_source_and_destination);
  if (src->balance < c.amount) return reject(Rejection::insufficient_funds);

  const Kobo src_after = src->balance - c.amount;
  const Kobo dst_after = dst->balance + c.amount;
  const std::string link_ref = uuid_v4();
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
  credit["reference"] = "ref-" + uuid_v4();
  credit["debitReference"] = reference;
  credit["status"] = "success";
  debit["meta"] = {{"isThirdParty", false}, {"rate", rate(c.amount)}, {"credit", mirror(credit)}};
  credit["meta"] = {{"isThirdParty", false}, {"rate", rate(c.amount)}, {"credit", mirror(debit)}};

  Decision d;
  d.record = debit;
  d.transaction = debit.at("publicId").get<std::string>();
  json debited = posting(c.source, c.amount, src_after);
  debited["transaction"] = std::move(debit);
  if (c.reference) debited["fingerprint"] = c.fingerprint;
  json credited = posting(c.destination, c.amount, dst_after);
  credited["transaction"] = std::move(credit);
  d.events.push_back({EventType::debited, c.caller.business, c.caller.live, std::move(debited)});
  d.events.push_back({EventType::credited, c.caller.business, c.caller.live, std::move(credited)});
  return d;
}

Decision decide_incoming_credit(const PartitionState& s, const IncomingCredit& c, const LedgerConfig& config,
                                UnixMs now) {
  const auto num = s.wallet_by_number.find(c.account_number);
  if (num == s.wallet_by_number.end()) return reject(Rejection::account_not_found);
  const WalletState* dst = caller_wallet(s, c.caller, num->second);
  if (dst == nullptr) return reject(Rejection::account_not_found);

  const Kobo dst_after = dst->balance + c.amount;
  const Kobo inbound_after = s.balance_of(kInboundSettlement) - c.amount;
  const std::string ts = format_iso8601(now);
  const std::string reference = "ref-" + uuid_v4();
  const std::string session = session_id(c.sender_bank_nibss_code, now);
  json source{
      {"id", interleaved_id(s.transactions_created, s.partition, config.partitions)},
      {"processor", config.processor},
      {"type", "bank_account"},
      {"publicId", "src-" + uuid_v4()},
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
  credit["destination"] = num->second;
  credit["destinationType"] = "VirtualAccount";
  credit["destinationData"] = wallet_snapshot(num->second, *dst, config);
  credit["reference"] = reference;
  credit["linkRef"] = uuid_v4();
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

  Decision d;
  d.record = credit;
  d.transaction = credit.at("publicId").get<std::string>();
  d.events.push_back({EventType::debited, c.caller.business, c.caller.live,
                      posting(kInboundSettlement, c.amount, inbound_after)});
  json credited = posting(num->second, c.amount, dst_after);
  credited["transaction"] = std::move(credit);
  d.events.push_back({EventType::credited, c.caller.business, c.caller.live, std::move(credited)});
  return d;
}

Decision decide_settle(const PartitionState& s, const SettleTransfer& c, UnixMs now) {
  const auto it = s.pending_settlement.find(c.transaction);
  KOBO_ASSERT(it != s.pending_settlement.end(), "settling a transfer that is not pending");
  const auto w = s.wallets.find(it->second);
  KOBO_ASSERT(w != s.wallets.end(), "pending transfer to an unknown wallet");
  Decision d;
  d.events.push_back({EventType::transaction_status_changed, w->second.business, w->second.live,
                      {{"publicId", c.transaction},
                       {"from", "pending"},
                       {"status", "success"},
                       {"updatedAt", format_iso8601(now)}}});
  return d;
}

}  // namespace

json wallet_snapshot(const std::string& public_id, const WalletState& w, const LedgerConfig& config) {
  return json{{"id", w.id},
              {"publicId", public_id},
              {"bankName", config.bank_name},
              {"bankCode", config.bank_code},
              {"accountName", w.account_name},
              {"accountNumber", w.account_number},
              {"currency", "NGN"},
              {"reference", nullptr},
              {"processor", config.processor}};
}

Decision decide(const PartitionState& state, const Command& command, const LedgerConfig& config, UnixMs now) {
  return std::visit(
      [&](const auto& c) -> Decision {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, CreateBusiness>) return decide_create_business(state, c, config, now);
        else if constexpr (std::is_same_v<T, CreateWallet>) return decide_create_wallet(state, c, config, now);
        else if constexpr (std::is_same_v<T, WalletTransfer>) return decide_wallet_transfer(state, c, config, now);
        else if constexpr (std::is_same_v<T, IncomingCredit>) return decide_incoming_credit(state, c, config, now);
        else return decide_settle(state, c, now);
      },
      command);
}

}  // namespace kobo
