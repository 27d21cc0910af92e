#include "projection/render.h"

#include <concepts>

#include "common/crypto.h"
#include "common/log.h"

namespace kobo::render {

using nlohmann::json;

namespace {

std::string iso(UnixMs ms) { return format_iso8601(ms); }

json rate(Kobo amount) {
  return {{"rateId", 1},
          {"rate", 1},
          {"sourceCurrency", "NGN"},
          {"destinationCurrency", "NGN"},
          {"convertedAmount", amount.value}};
}

json mobile(const Mobile& m) { return {{"isoCode", m.iso_code}, {"phoneNumber", m.phone_number}}; }

// 20 lowercase hex digits, derived from the record (the processor's transaction reference).
std::string t_ref(const TransactionId& id) { return to_hex(sha256("tref|" + id.value)).substr(0, 20); }

// A NIP-style session id: sender institution, yymmddHHmmss, 12 digits derived from `seed`.
std::string session_id(std::string_view institution, UnixMs time, std::string_view seed) {
  const std::string t = iso(time);  // 2026-11-21T07:02:00.000Z
  std::string id(institution.substr(0, 6));
  id.insert(0, 6 - id.size(), '0');
  id +=
      t.substr(2, 2) + t.substr(5, 2) + t.substr(8, 2) + t.substr(11, 2) + t.substr(14, 2) + t.substr(17, 2);
  const std::string h = to_hex(sha256("session|" + std::string(seed)));
  for (std::size_t i = 0; i < 12; ++i) id += static_cast<char>('0' + (h[i] % 10));
  return id;
}

// The records a fact creates, moved out of the caller's variables: a braced list would copy
// each tree, since an initializer list's elements are const.
template <std::same_as<json>... Records>
std::vector<json> records_of(Records&... records) {
  std::vector<json> out;
  out.reserve(sizeof...(records));
  (out.push_back(std::move(records)), ...);
  return out;
}

// How a transaction shows a wallet it moves money from or to.
json snapshot(const json& wallet) {
  return {{"accountName", wallet.at("accountName")},
          {"accountNumber", wallet.at("accountNumber")},
          {"bankCode", wallet.at("bankCode")},
          {"bankName", wallet.at("bankName")},
          {"currency", "NGN"},
          {"id", wallet.at("id")},
          {"processor", kProcessor},
          {"publicId", wallet.at("publicId")},
          {"reference", nullptr}};
}

json wallet_of(const RecordSource& records, std::string_view id) {
  auto w = records.wallet(id);
  KOBO_ASSERT(w.has_value(), "a transaction names a wallet the views do not have");
  return std::move(*w);
}

// meta.credit: the counterpart side of a transaction, as the API document's 2.7 lists it.
json mirror(const json& other) {
  json m;
  for (const char* k :
       {"source", "sourceType", "sourceData", "destination", "destinationType", "destinationData", "amount",
        "currency", "actualAmount", "fee", "narration", "balance"})
    m[k] = other.at(k);
  return m;
}

// The members every transaction record has; the caller adds source, destination, reference,
// linkRef, status and meta.
json transaction_base(const Event& e, const AccountId& account, const CreatedTransaction& t, Kobo amount,
                      std::string_view narration) {
  const std::string ts = iso(e.time);
  return {{"_id", object_id_of(t.id.value)},
          {"account", account.value},
          {"actualAmount", amount.value},
          {"amount", amount.value},
          {"auth", e.business},
          {"balance", t.posting->balance.value},
          {"batchId", nullptr},
          {"clientTransaction", {{"actualAmount", amount.value}, {"fee", 0}}},
          {"createdAt", ts},
          {"currency", "NGN"},
          {"currencyPair", "NGN/NGN"},
          {"debitReference", t.debit_reference ? json(*t.debit_reference) : json(nullptr)},
          {"deletedAt", nullptr},
          {"entry", to_string(entry_of(t.kind))},
          {"fee", 0},
          {"feeReference", nullptr},
          {"id", t.number},
          {"linkRef", t.link_ref},
          {"live", e.live},
          {"metadata", json::object()},
          {"narration", narration},
          {"processor", kProcessor},
          {"publicId", t.id.value},
          {"reference", t.reference},
          {"requestSrc", "api"},
          {"status", to_string(t.status)},
          {"tRef", t_ref(t.id)},
          {"tags", json::array()},
          {"updatedAt", ts}};
}

// Source and destination members of a record that moves money between two wallets.
void between_wallets(json& t, const json& source, const json& destination) {
  t["source"] = source.at("publicId");
  t["sourceType"] = "VirtualAccount";
  t["sourceData"] = snapshot(source);
  t["destination"] = destination.at("publicId");
  t["destinationType"] = "VirtualAccount";
  t["destinationData"] = snapshot(destination);
}

// A pair of records of money moving between two wallets (a wallet transfer, a sweep): each
// mirrors the other in meta.credit.
void mirror_pair(json& debit, json& credit, Kobo amount) {
  json debit_meta{{"isThirdParty", false}, {"rate", rate(amount)}, {"credit", mirror(credit)}};
  credit["meta"] = {{"isThirdParty", false}, {"rate", rate(amount)}, {"credit", mirror(debit)}};
  debit["meta"] = std::move(debit_meta);
}

std::vector<json> wallet_transfer(const Event& e, const WalletTransferSettled& x,
                                  const std::vector<CreatedTransaction>& created,
                                  const RecordSource& records) {
  const json source = wallet_of(records, created[0].posting->account);
  const json destination = wallet_of(records, created[1].posting->account);
  const Kobo amount = created[1].posting->amount;
  json debit = transaction_base(e, x.account, created[0], amount, x.narration);
  json credit = transaction_base(e, x.account, created[1], amount, x.narration);
  for (json* t : {&debit, &credit}) {
    between_wallets(*t, source, destination);
    if (x.name_enquiry_ref) (*t)["destinationData"]["nameEnquiryRef"] = *x.name_enquiry_ref;
  }
  mirror_pair(debit, credit, amount);
  return records_of(debit, credit);
}

std::vector<json> bank_transfer(const Event& e, const BankTransferInitiated& x,
                                const std::vector<CreatedTransaction>& created, const RecordSource& records) {
  const CreatedTransaction& t = created[0];
  const json source = wallet_of(records, t.posting->account);
  const Kobo actual = -t.posting->amount;
  const Kobo amount = x.postings.at(1).amount;  // to payout suspense
  const Kobo fee = x.postings.at(2).amount;     // to fees
  const Beneficiary& b = x.beneficiary;
  json debit = transaction_base(e, x.account, t, amount, x.narration);
  debit["source"] = source.at("publicId");
  debit["sourceType"] = "VirtualAccount";
  debit["sourceData"] = snapshot(source);
  debit["destination"] = b.bank_account.value;
  debit["destinationType"] = "BankAccount";
  debit["destinationData"] = {{"id", b.id},
                              {"publicId", b.bank_account.value},
                              {"bankName", b.bank_name},
                              {"bankCode", b.bank_code},
                              {"accountName", b.account_name},
                              {"accountNumber", b.account_number},
                              {"processor", kProcessor},
                              {"clientIds", json::object()},
                              {"nameEnquiryRef", b.name_enquiry_ref}};
  debit["fee"] = fee.value;
  debit["feeReference"] = derived_reference("fee-", t.id);
  debit["actualAmount"] = actual.value;
  debit["clientTransaction"] = {{"fee", fee.value}, {"actualAmount", actual.value}};
  debit["metadata"] = json::parse(x.metadata.text);
  json other_side = mirror(debit);
  other_side["balance"] = 0;  // the other side is a bank whose balance we do not keep
  debit["meta"] = {{"isThirdParty", true}, {"rate", rate(amount)}, {"credit", std::move(other_side)}};
  return records_of(debit);
}

std::vector<json> payout_reversal(const Event& e, const PayoutFailed& x,
                                  const std::vector<CreatedTransaction>& created,
                                  const RecordSource& records) {
  const CreatedTransaction& t = created[0];
  auto payout = records.transaction(x.transaction.value);
  KOBO_ASSERT(payout.has_value(), "a reversal of a payout the views do not have");
  const json destination = wallet_of(records, t.posting->account);
  const Kobo actual = t.posting->amount;
  json credit = transaction_base(e, AccountId(payout->at("account").get<std::string>()), t, actual,
                                 "Reversal: " + payout->at("narration").get<std::string>());
  credit["source"] = payout->at("destination");
  credit["sourceType"] = "BankAccount";
  credit["sourceData"] = payout->at("destinationData");
  credit["destination"] = destination.at("publicId");
  credit["destinationType"] = "VirtualAccount";
  credit["destinationData"] = snapshot(destination);
  credit["debitReference"] = payout->at("reference");
  credit["tags"] = json::array({"reversal"});
  json mirrored = mirror(credit);
  credit["meta"] = {{"isThirdParty", true}, {"rate", rate(actual)}, {"credit", std::move(mirrored)}};
  return records_of(credit);
}

std::vector<json> incoming_credit(const Event& e, const IncomingCreditReceived& x,
                                  const std::vector<CreatedTransaction>& created,
                                  const RecordSource& records) {
  const CreatedTransaction& t = created[0];
  const json destination = wallet_of(records, t.posting->account);
  const Kobo amount = t.posting->amount;
  const Sender& s = x.sender;
  const std::string ts = iso(e.time);
  // The sender as the NIP transfer authorised it; the credit's source shows the same.
  const json authorization{{"channel", "NIP"},
                           {"reference", t.reference},
                           {"sessionId", session_id(s.nibss_bank_code, e.time, t.id.value)},
                           {"bankName", s.bank_name},
                           {"bankCode", s.bank_code},
                           {"nibssBankCode", s.nibss_bank_code},
                           {"accountName", s.account_name},
                           {"accountNumber", s.account_number}};
  json source = authorization;
  source.update({{"id", t.number},
                 {"processor", kProcessor},
                 {"type", "bank_account"},
                 {"publicId", "src-" + derived_uuid("src|" + t.id.value)},
                 {"createdAt", ts},
                 {"updatedAt", ts},
                 {"currency", "NGN"},
                 {"live", e.live}});
  json credit = transaction_base(e, x.account, t, amount, x.narration);
  credit["source"] = source.at("publicId");
  credit["sourceType"] = "External";
  credit["sourceData"] = source;
  credit["destination"] = destination.at("publicId");
  credit["destinationType"] = "VirtualAccount";
  credit["destinationData"] = snapshot(destination);
  if (x.collection) credit["metadata"] = {{"collectionAccount", x.collection->value}};
  json mirrored = mirror(credit);
  mirrored["auth"] = e.business;
  mirrored["account"] = x.account.value;
  mirrored["linkRef"] = t.link_ref;
  credit["meta"] = {
      {"isThirdParty", false},
      {"rate", rate(amount)},
      {"credit", std::move(mirrored)},
      {"clientResponse",
       {{"message", "Transaction successful"},
        {"amount", amount.value},
        {"tranDateTime", ts},
        {"currency", "NGN"},
        {"processor", kProcessor},
        {"narration", x.narration},
        {"reference", t.reference},
        {"type", "credit"},
        {"authorization", authorization},
        {"status", "success"}}},
  };
  std::vector<json> out = records_of(credit);
  if (created.size() == 3) {
    // A transit wallet sweeps what it received to its settlement wallet. Its snapshot is as
    // the credit left it.
    const json transit = wallet_of(records, created[1].posting->account);
    const json settlement = wallet_of(records, created[2].posting->account);
    json debit = transaction_base(e, x.account, created[1], amount, "Transit settlement");
    json swept = transaction_base(e, x.account, created[2], amount, "Transit settlement");
    for (json* r : {&debit, &swept}) {
      between_wallets(*r, transit, settlement);
      (*r)["tags"] = json::array({"sweep"});
    }
    mirror_pair(debit, swept, amount);
    out.push_back(std::move(debit));
    out.push_back(std::move(swept));
  }
  return out;
}

// The fields every wallet of the service's bank has (API document 2.1 and 2.2).
json wallet_base(const Event& e, const AccountId& account, std::uint64_t id, const WalletId& wallet,
                 const std::string& name, const std::string& number, const std::string& bank_name,
                 const std::string& bank_code) {
  const std::string ts = iso(e.time);
  return {{"_id", object_id_of(wallet.value)},
          {"id", id},
          {"publicId", wallet.value},
          {"auth", e.business},
          {"account", account.value},
          {"accountName", name},
          {"accountNumber", number},
          {"bankName", bank_name},
          {"bankCode", bank_code},
          {"live", e.live},
          {"processor", kProcessor},
          {"balance", 0},
          {"currency", "NGN"},
          {"createdAt", ts},
          {"updatedAt", ts},
          {"lastUpdated", ts}};
}

template <typename Opened>
void contact(json& w, const Opened& x) {
  if (x.email_address) w["emailAddress"] = *x.email_address;
  if (x.mobile) w["mobile"] = mobile(*x.mobile);
}

}  // namespace

BusinessRecords business_records(const Event& e, const BusinessRegistered& x) {
  const std::string ts = iso(e.time);
  BusinessRecords r;
  r.business = {{"publicId", e.business}, {"name", x.name}, {"createdAt", ts}, {"updatedAt", ts}};
  r.account = {{"_id", object_id_of(x.account.value)},
               {"id", std::to_string(x.id)},
               {"publicId", x.account.value},
               {"name", x.account_name},
               {"webhooks", json::array()},
               {"isDefault", true},
               {"live", false},
               {"pubKey", {{"live", x.live_public_key}, {"test", x.test_public_key}}},
               {"business", e.business},
               {"createdAt", ts},
               {"updatedAt", ts},
               {"__v", 0}};
  return r;
}

void update_account(json& account, const Event& e, const AccountUpdated& x) {
  if (x.webhooks) account["webhooks"] = *x.webhooks;
  if (x.live) account["live"] = *x.live;
  account["updatedAt"] = iso(e.time);
  account["__v"] = account.at("__v").get<std::int64_t>() + 1;
}

json wallet(const Event& e, const WalletOpened& x) {
  json w = wallet_base(e, x.account, x.id, x.wallet, x.name, x.account_number, x.bank_name, x.bank_code);
  contact(w, x);
  w["isFavourite"] = false;
  w["category"] = to_string(x.category);
  return w;
}

json transit_wallet(const Event& e, const TransitWalletOpened& x) {
  json w = wallet_base(e, x.account, x.id, x.wallet, x.name, x.account_number, x.bank_name, x.bank_code);
  contact(w, x);
  w["alias"] = x.name;
  w["reference"] = nullptr;
  w["settlementAccount"] = x.settlement_wallet.value;
  return w;
}

json collection_wallet(const Event& e, const CollectionWalletOpened& x, const json& destination) {
  const std::string ts = iso(e.time);
  return {{"_id", object_id_of(x.wallet.value)},
          {"id", x.id},
          {"publicId", x.wallet.value},
          {"auth", e.business},
          {"account", x.account.value},
          {"reference", x.reference ? json(*x.reference) : json(nullptr)},
          {"destination", x.destination.value},
          {"parentAccountNumber", destination.at("accountNumber")},
          {"accountName", x.name},
          {"accountNumber", x.account_number},
          {"amount", x.amount.value},
          {"bankName", x.bank_name},
          {"bankCode", x.bank_code},
          {"live", e.live},
          {"processor", kProcessor},
          {"expiration", iso(x.expires_at.ms)},
          {"createdAt", ts},
          {"updatedAt", ts},
          {"currency", "NGN"},
          {"active", true},
          {"status", "pending"}};
}

json bank_account(const Event& e, const BeneficiarySaved& x) {
  const std::string ts = iso(e.time);
  return {{"_id", object_id_of(x.bank_account.value)},
          {"id", x.id},
          {"publicId", x.bank_account.value},
          {"auth", e.business},
          {"account", x.account.value},
          {"accountName", x.account_name},
          {"accountNumber", x.account_number},
          {"bankName", x.bank_name},
          {"bankCode", x.bank_code},
          {"reference", "bkr-" + derived_uuid("bkr|" + x.bank_account.value)},
          {"live", e.live},
          {"processor", kProcessor},
          {"currency", "NGN"},
          {"version", 1},
          {"beneficiaryType", to_string(x.beneficiary_type)},
          {"clientIds", json::object()},
          {"createdAt", ts},
          {"updatedAt", ts},
          {"lastUpdated", ts}};
}

std::vector<json> transactions(const Event& e, const RecordSource& records) {
  const auto created = transactions_created(e.data);
  if (created.empty()) return {};
  if (const auto* x = std::get_if<WalletTransferSettled>(&e.data))
    return wallet_transfer(e, *x, created, records);
  if (const auto* x = std::get_if<BankTransferInitiated>(&e.data))
    return bank_transfer(e, *x, created, records);
  if (const auto* x = std::get_if<PayoutFailed>(&e.data)) return payout_reversal(e, *x, created, records);
  if (const auto* x = std::get_if<IncomingCreditReceived>(&e.data))
    return incoming_credit(e, *x, created, records);
  KOBO_ASSERT(false, "an event creates transactions render does not know");
  return {};
}

void advance_payout(json& payout, TransactionStatus status, UnixMs time) {
  const std::string_view s = to_string(status);
  const bool final = status == TransactionStatus::success || status == TransactionStatus::failed;
  const std::string_view message = status == TransactionStatus::success  ? "Transfer successful"
                                   : status == TransactionStatus::failed ? "Transfer failed"
                                                                         : "Transfer is being processed";
  const json& b = payout.at("destinationData");
  const std::string id = payout.at("publicId").get<std::string>();
  json verify{{"status", final ? s : "pending"},
              {"data",
               {{"status", s},
                {"message", message},
                {"data",
                 {{"narration", payout.at("narration")},
                  {"amount", payout.at("amount")},
                  {"date", iso(time)},
                  {"beneficiary",
                   {{"accountNumber", b.at("accountNumber")},
                    {"bankCode", b.at("bankCode")},
                    {"bankName", b.at("bankName")},
                    {"accountName", b.at("accountName")}}},
                  {"transactionStatus", s},
                  {"sessionId", session_id("999999", time, id + "|" + std::string(s))},
                  {"type", "transfer"}}}}}};
  payout["status"] = s;
  payout["updatedAt"] = iso(time);
  payout["meta"]["verify"] = std::move(verify);
}

RecordsRead records_read(const Event& e) {
  RecordsRead r;
  if (const auto* postings = postings_of(e.data))
    for (const Posting& p : *postings)
      if (is_wallet_account(p.account)) r.wallets.push_back(p.account);
  if (const auto* x = std::get_if<CollectionWalletOpened>(&e.data)) r.wallets.push_back(x->destination.value);
  if (const auto* x = std::get_if<PayoutFailed>(&e.data)) r.transactions.push_back(x->transaction.value);
  return r;
}

bool can_render(const std::vector<Event>& events, const RecordSource& records) {
  for (const Event& e : events) {
    const RecordsRead r = records_read(e);
    for (const auto& id : r.wallets)
      if (!records.wallet(id)) return false;
    for (const auto& id : r.transactions)
      if (!records.transaction(id)) return false;
  }
  return true;
}

std::optional<json> created_record(const std::vector<Event>& events, std::string_view id,
                                   const RecordSource& records) {
  for (const Event& e : events) {
    std::optional<json> found;
    const auto match = [&](json record) {
      if (record.at("publicId") == id) found = std::move(record);
    };
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, WalletOpened>)
            match(wallet(e, x));
          else if constexpr (std::is_same_v<T, TransitWalletOpened>)
            match(transit_wallet(e, x));
          else if constexpr (std::is_same_v<T, CollectionWalletOpened>)
            match(collection_wallet(e, x, wallet_of(records, x.destination.value)));
          else if constexpr (std::is_same_v<T, BeneficiarySaved>)
            match(bank_account(e, x));
          else if constexpr (std::is_same_v<T, BusinessRegistered>)
            match(business_records(e, x).account);
          else
            for (json& t : transactions(e, records)) match(std::move(t));
        },
        e.data);
    if (found) return found;
  }
  return std::nullopt;
}

}  // namespace kobo::render
