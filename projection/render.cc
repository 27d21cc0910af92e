#include "projection/render.h"

#include <algorithm>
#include <array>

#include "common/crypto.h"
#include "common/json_dump.h"
#include "common/log.h"
#include "projection/record_bytes.h"
#include "projection/record_text.h"

namespace kobo::render {

using nlohmann::json;
using record_text::Object;

namespace {

std::string iso(UnixMs ms) { return format_iso8601(ms); }

Object rate(Kobo amount) {
  Object r;
  r.number("rateId", 1)
      .number("rate", 1)
      .string("sourceCurrency", "NGN")
      .string("destinationCurrency", "NGN")
      .number("convertedAmount", amount.value);
  return r;
}

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

using record_bytes::required_member;

// How a transaction shows a wallet it moves money from or to: its members read in one pass.
Object snapshot(std::string_view wallet) {
  static constexpr std::array<std::string_view, 6> kShown{
      "accountName", "accountNumber", "bankCode", "bankName", "id", "publicId"};
  Object s;
  std::size_t found = 0;
  record_bytes::for_each_member(wallet, [&](std::string_view key, std::size_t begin, std::size_t end) {
    if (const auto shown = std::find(kShown.begin(), kShown.end(), key); shown != kShown.end()) {
      s.raw(*shown, wallet.substr(begin, end - begin));  // the key the array holds: it outlives `wallet`
      ++found;
    }
    return found < kShown.size();
  });
  KOBO_ASSERT(found == kShown.size(), "a wallet record lacks a member its snapshot shows");
  s.string("currency", "NGN").string("processor", kProcessor).null("reference");
  return s;
}

std::string wallet_of(const RecordSource& records, std::string_view id) {
  auto w = records.wallet(id);
  KOBO_ASSERT(w.has_value(), "a transaction names a wallet the views do not have");
  return std::move(*w);
}

// meta.credit: the counterpart side of a transaction, as the API document's 2.7 lists it.
Object mirror(const Object& other) {
  static constexpr std::array<std::string_view, 12> kMirrored{
      "source", "sourceType", "sourceData",   "destination", "destinationType", "destinationData",
      "amount", "currency",   "actualAmount", "fee",         "narration",       "balance"};
  Object m;
  for (const std::string_view k : kMirrored) {
    const auto v = other.get(k);
    KOBO_ASSERT(v.has_value(), "a transaction record lacks a member its mirror shows");
    m.raw(k, *v);
  }
  return m;
}

// The members every transaction record has; the caller adds source, destination and meta, and
// changes what differs.
Object transaction_base(const Event& e, const AccountId& account, const CreatedTransaction& t, Kobo amount,
                        std::string_view narration) {
  const std::string ts = iso(e.time);
  Object client;
  client.number("actualAmount", amount.value).number("fee", 0);
  Object r(40, 2048);
  r.string("_id", object_id_of(t.id.value))
      .string("account", account.value)
      .number("actualAmount", amount.value)
      .number("amount", amount.value)
      .string("auth", e.business)
      .number("balance", t.posting->balance.value)
      .null("batchId")
      .object("clientTransaction", client)
      .string("createdAt", ts)
      .string("currency", "NGN")
      .string("currencyPair", "NGN/NGN")
      .null("deletedAt")
      .string("entry", to_string(entry_of(t.kind)))
      .number("fee", 0)
      .null("feeReference")
      .number("id", t.number)
      .string("linkRef", t.link_ref)
      .boolean("live", e.live)
      .raw("metadata", "{}")
      .string("narration", narration)
      .string("processor", kProcessor)
      .string("publicId", t.id.value)
      .string("reference", t.reference)
      .string("requestSrc", "api")
      .string("status", to_string(t.status))
      .string("tRef", t_ref(t.id))
      .raw("tags", "[]")
      .string("updatedAt", ts);
  if (t.debit_reference)
    r.string("debitReference", *t.debit_reference);
  else
    r.null("debitReference");
  return r;
}

// Source and destination members of a record that moves money between two wallets, from the
// wallets' snapshots.
void between_wallets(Object& t, const Object& source_data, const Object& destination_data) {
  t.raw("source", *source_data.get("publicId"))
      .string("sourceType", "VirtualAccount")
      .object("sourceData", source_data)
      .raw("destination", *destination_data.get("publicId"))
      .string("destinationType", "VirtualAccount")
      .object("destinationData", destination_data);
}

Object meta(bool third_party, Kobo amount, const Object& credit) {
  Object m;
  m.boolean("isThirdParty", third_party).object("rate", rate(amount)).object("credit", credit);
  return m;
}

// A pair of records of money moving between two wallets (a wallet transfer, a sweep): each
// mirrors the other in meta.credit.
std::vector<std::string> mirror_pair(Object& debit, Object& credit, Kobo amount) {
  const Object debit_meta = meta(false, amount, mirror(credit));
  credit.object("meta", meta(false, amount, mirror(debit)));
  debit.object("meta", debit_meta);
  std::vector<std::string> out;
  out.reserve(2);
  out.push_back(debit.text());
  out.push_back(credit.text());
  return out;
}

std::vector<std::string> wallet_transfer(const Event& e, const WalletTransferSettled& x,
                                         const std::vector<CreatedTransaction>& created,
                                         const RecordSource& records) {
  const std::string source = wallet_of(records, created[0].posting->account);
  const std::string destination = wallet_of(records, created[1].posting->account);
  const Kobo amount = created[1].posting->amount;
  const Object source_data = snapshot(source);
  Object destination_data = snapshot(destination);
  if (x.name_enquiry_ref) destination_data.string("nameEnquiryRef", *x.name_enquiry_ref);
  Object debit = transaction_base(e, x.account, created[0], amount, x.narration);
  Object credit = transaction_base(e, x.account, created[1], amount, x.narration);
  for (Object* t : {&debit, &credit}) between_wallets(*t, source_data, destination_data);
  return mirror_pair(debit, credit, amount);
}

std::vector<std::string> bank_transfer(const Event& e, const BankTransferInitiated& x,
                                       const std::vector<CreatedTransaction>& created,
                                       const RecordSource& records) {
  const CreatedTransaction& t = created[0];
  const std::string source = wallet_of(records, t.posting->account);
  const Kobo actual = -t.posting->amount;
  const Kobo amount = x.postings.at(1).amount;  // to payout suspense
  const Kobo fee = x.postings.at(2).amount;     // to fees
  const Beneficiary& b = x.beneficiary;
  Object destination;
  destination.number("id", b.id)
      .string("publicId", b.bank_account.value)
      .string("bankName", b.bank_name)
      .string("bankCode", b.bank_code)
      .string("accountName", b.account_name)
      .string("accountNumber", b.account_number)
      .string("processor", kProcessor)
      .raw("clientIds", "{}")
      .string("nameEnquiryRef", b.name_enquiry_ref);
  Object client;
  client.number("fee", fee.value).number("actualAmount", actual.value);
  Object debit = transaction_base(e, x.account, t, amount, x.narration);
  debit.raw("source", required_member(source, "publicId"))
      .string("sourceType", "VirtualAccount")
      .object("sourceData", snapshot(source))
      .string("destination", b.bank_account.value)
      .string("destinationType", "BankAccount")
      .object("destinationData", destination)
      .number("fee", fee.value)
      .string("feeReference", derived_reference("fee-", t.id))
      .number("actualAmount", actual.value)
      .object("clientTransaction", client)
      // In the form the views store, whatever form the event holds it in.
      .raw("metadata", dump_json(json::parse(x.metadata.text)));
  Object other_side = mirror(debit);
  other_side.number("balance", 0);  // the other side is a bank whose balance we do not keep
  debit.object("meta", meta(true, amount, other_side));
  return {debit.text()};
}

std::vector<std::string> payout_reversal(const Event& e, const PayoutFailed& x,
                                         const std::vector<CreatedTransaction>& created,
                                         const RecordSource& records) {
  const CreatedTransaction& t = created[0];
  const auto payout = records.transaction(x.transaction.value);
  KOBO_ASSERT(payout.has_value(), "a reversal of a payout the views do not have");
  const std::string destination = wallet_of(records, t.posting->account);
  const Kobo actual = t.posting->amount;
  Object credit = transaction_base(
      e, AccountId(record_bytes::string_value(required_member(*payout, "account"))), t, actual,
      "Reversal: " + record_bytes::string_value(required_member(*payout, "narration")));
  credit.raw("source", required_member(*payout, "destination"))
      .string("sourceType", "BankAccount")
      .raw("sourceData", required_member(*payout, "destinationData"))
      .raw("destination", required_member(destination, "publicId"))
      .string("destinationType", "VirtualAccount")
      .object("destinationData", snapshot(destination))
      .raw("debitReference", required_member(*payout, "reference"))
      .raw("tags", R"(["reversal"])");
  credit.object("meta", meta(true, actual, mirror(credit)));
  return {credit.text()};
}

std::vector<std::string> incoming_credit(const Event& e, const IncomingCreditReceived& x,
                                         const std::vector<CreatedTransaction>& created,
                                         const RecordSource& records) {
  const CreatedTransaction& t = created[0];
  const std::string destination = wallet_of(records, t.posting->account);
  const Kobo amount = t.posting->amount;
  const Sender& s = x.sender;
  const std::string ts = iso(e.time);
  // The sender as the NIP transfer authorised it; the credit's source shows the same.
  const auto sender = [&](Object& o) -> Object& {
    return o.string("channel", "NIP")
        .string("reference", t.reference)
        .string("sessionId", session_id(s.nibss_bank_code, e.time, t.id.value))
        .string("bankName", s.bank_name)
        .string("bankCode", s.bank_code)
        .string("nibssBankCode", s.nibss_bank_code)
        .string("accountName", s.account_name)
        .string("accountNumber", s.account_number);
  };
  Object authorization;
  sender(authorization);
  Object source;
  sender(source)
      .number("id", t.number)
      .string("processor", kProcessor)
      .string("type", "bank_account")
      .string("publicId", "src-" + derived_uuid("src|" + t.id.value))
      .string("createdAt", ts)
      .string("updatedAt", ts)
      .string("currency", "NGN")
      .boolean("live", e.live);
  Object credit = transaction_base(e, x.account, t, amount, x.narration);
  credit.raw("source", *source.get("publicId"))
      .string("sourceType", "External")
      .object("sourceData", source)
      .raw("destination", required_member(destination, "publicId"))
      .string("destinationType", "VirtualAccount")
      .object("destinationData", snapshot(destination));
  if (x.collection) {
    Object metadata;
    metadata.string("collectionAccount", x.collection->value);
    credit.object("metadata", metadata);
  }
  Object mirrored = mirror(credit);
  mirrored.string("auth", e.business).string("account", x.account.value).string("linkRef", t.link_ref);
  Object response;
  response.string("message", "Transaction successful")
      .number("amount", amount.value)
      .string("tranDateTime", ts)
      .string("currency", "NGN")
      .string("processor", kProcessor)
      .string("narration", x.narration)
      .string("reference", t.reference)
      .string("type", "credit")
      .object("authorization", authorization)
      .string("status", "success");
  Object m = meta(false, amount, mirrored);
  m.object("clientResponse", response);
  credit.object("meta", m);
  std::vector<std::string> out{credit.text()};
  if (created.size() == 3) {
    // A transit wallet sweeps what it received to its settlement wallet. Its snapshot is as
    // the credit left it.
    const std::string transit = wallet_of(records, created[1].posting->account);
    const std::string settlement = wallet_of(records, created[2].posting->account);
    const Object transit_data = snapshot(transit);
    const Object settlement_data = snapshot(settlement);
    Object debit = transaction_base(e, x.account, created[1], amount, "Transit settlement");
    Object swept = transaction_base(e, x.account, created[2], amount, "Transit settlement");
    for (Object* r : {&debit, &swept}) {
      between_wallets(*r, transit_data, settlement_data);
      r->raw("tags", R"(["sweep"])");
    }
    for (std::string& record : mirror_pair(debit, swept, amount)) out.push_back(std::move(record));
  }
  return out;
}

// The fields every wallet of the service's bank has (API document 2.1 and 2.2).
Object wallet_base(const Event& e, const AccountId& account, std::uint64_t id, const WalletId& wallet,
                   const std::string& name, const std::string& number, const std::string& bank_name,
                   const std::string& bank_code) {
  const std::string ts = iso(e.time);
  Object w;
  w.string("_id", object_id_of(wallet.value))
      .number("id", id)
      .string("publicId", wallet.value)
      .string("auth", e.business)
      .string("account", account.value)
      .string("accountName", name)
      .string("accountNumber", number)
      .string("bankName", bank_name)
      .string("bankCode", bank_code)
      .boolean("live", e.live)
      .string("processor", kProcessor)
      .number("balance", 0)
      .string("currency", "NGN")
      .string("createdAt", ts)
      .string("updatedAt", ts)
      .string("lastUpdated", ts);
  return w;
}

template <typename Opened>
void contact(Object& w, const Opened& x) {
  if (x.email_address) w.string("emailAddress", *x.email_address);
  if (x.mobile) {
    Object m;
    m.string("isoCode", x.mobile->iso_code).string("phoneNumber", x.mobile->phone_number);
    w.object("mobile", m);
  }
}

}  // namespace

BusinessRecords business_records(const Event& e, const BusinessRegistered& x) {
  const std::string ts = iso(e.time);
  Object business;
  business.string("publicId", e.business)
      .string("name", x.name)
      .string("createdAt", ts)
      .string("updatedAt", ts);
  Object keys;
  keys.string("live", x.live_public_key).string("test", x.test_public_key);
  Object account;
  account.string("_id", object_id_of(x.account.value))
      .string("id", std::to_string(x.id))
      .string("publicId", x.account.value)
      .string("name", x.account_name)
      .raw("webhooks", "[]")
      .boolean("isDefault", true)
      .boolean("live", false)
      .object("pubKey", keys)
      .string("business", e.business)
      .string("createdAt", ts)
      .string("updatedAt", ts)
      .number("__v", 0);
  return {business.text(), account.text()};
}

void update_account(json& account, const Event& e, const AccountUpdated& x) {
  if (x.webhooks) account["webhooks"] = *x.webhooks;
  if (x.live) account["live"] = *x.live;
  account["updatedAt"] = iso(e.time);
  account["__v"] = account.at("__v").get<std::int64_t>() + 1;
}

std::string wallet(const Event& e, const WalletOpened& x) {
  Object w = wallet_base(e, x.account, x.id, x.wallet, x.name, x.account_number, x.bank_name, x.bank_code);
  contact(w, x);
  w.boolean("isFavourite", false).string("category", to_string(x.category));
  return w.text();
}

std::string transit_wallet(const Event& e, const TransitWalletOpened& x) {
  Object w = wallet_base(e, x.account, x.id, x.wallet, x.name, x.account_number, x.bank_name, x.bank_code);
  contact(w, x);
  w.string("alias", x.name).null("reference").string("settlementAccount", x.settlement_wallet.value);
  return w.text();
}

std::string collection_wallet(const Event& e, const CollectionWalletOpened& x, std::string_view destination) {
  const std::string ts = iso(e.time);
  Object c;
  c.string("_id", object_id_of(x.wallet.value))
      .number("id", x.id)
      .string("publicId", x.wallet.value)
      .string("auth", e.business)
      .string("account", x.account.value)
      .string("destination", x.destination.value)
      .raw("parentAccountNumber", required_member(destination, "accountNumber"))
      .string("accountName", x.name)
      .string("accountNumber", x.account_number)
      .number("amount", x.amount.value)
      .string("bankName", x.bank_name)
      .string("bankCode", x.bank_code)
      .boolean("live", e.live)
      .string("processor", kProcessor)
      .string("expiration", iso(x.expires_at.ms))
      .string("createdAt", ts)
      .string("updatedAt", ts)
      .string("currency", "NGN")
      .boolean("active", true)
      .string("status", "pending");
  if (x.reference)
    c.string("reference", *x.reference);
  else
    c.null("reference");
  return c.text();
}

std::string bank_account(const Event& e, const BeneficiarySaved& x) {
  const std::string ts = iso(e.time);
  Object b;
  b.string("_id", object_id_of(x.bank_account.value))
      .number("id", x.id)
      .string("publicId", x.bank_account.value)
      .string("auth", e.business)
      .string("account", x.account.value)
      .string("accountName", x.account_name)
      .string("accountNumber", x.account_number)
      .string("bankName", x.bank_name)
      .string("bankCode", x.bank_code)
      .string("reference", "bkr-" + derived_uuid("bkr|" + x.bank_account.value))
      .boolean("live", e.live)
      .string("processor", kProcessor)
      .string("currency", "NGN")
      .number("version", 1)
      .string("beneficiaryType", to_string(x.beneficiary_type))
      .raw("clientIds", "{}")
      .string("createdAt", ts)
      .string("updatedAt", ts)
      .string("lastUpdated", ts);
  return b.text();
}

std::vector<std::string> transactions(const Event& e, const RecordSource& records) {
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

std::optional<std::string> created_record(const std::vector<Event>& events, std::string_view id,
                                          const RecordSource& records) {
  for (const Event& e : events) {
    std::optional<std::string> found;
    const auto match = [&](std::string record) {
      if (record_bytes::string_value(required_member(record, "publicId")) == id) found = std::move(record);
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
            for (std::string& t : transactions(e, records)) match(std::move(t));
        },
        e.data);
    if (found) return found;
  }
  return std::nullopt;
}

bool settled_when_created(const std::vector<Event>& events, std::string_view id) {
  for (const Event& e : events)
    for (const CreatedTransaction& t : transactions_created(e.data))
      if (t.id.value == id) return t.status == TransactionStatus::success;
  return false;
}

void answer_pending(std::string& record) {
  const bool replaced = record_bytes::replace_members(record, {{"status", R"("pending")"}});
  KOBO_ASSERT(replaced, "an answer without a status");
}

}  // namespace kobo::render
