#include "projection/render.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <initializer_list>

#include "common/crypto.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "projection/record_text.h"

namespace kobo::render {

using nlohmann::json;
using record_text::Object;

namespace {

std::string iso(UnixMs ms) { return format_iso8601(ms); }

// A JSON value the event holds as it was given (a request's metadata), in canonical form: its
// members in key order, compact. Events written by this ledger hold it so already; one written
// otherwise (by hand, by another writer) is parsed and written again.
std::string canonical(const RawJson& raw) {
  std::string text = json_text(json::parse(raw.text));
  // The event codec holds metadata as an object (events/event.h, RawJson).
  KOBO_ASSERT(text.size() >= 2 && text.front() == '{' && text.back() == '}', "metadata is an object");
  return text;
}

// What records and statement lines both show, written once.
constexpr std::string_view kSweepNarration = "Transit settlement";
std::string reversal_narration(std::string_view payout_narration) {
  return "Reversal: " + std::string(payout_narration);
}
// The publicId of the external source an incoming credit shows.
std::string external_source_id(const TransactionId& credit) {
  std::string id = "src-" + derived_uuid("src|" + credit.value);
  KOBO_ASSERT(id.size() == 4 + 36, "an external source's id is src- and a uuid, as every publicId");
  return id;
}

Object rate(Kobo amount) {
  KOBO_ASSERT(amount.value > 0, "a rate converts an amount that moved");
  Object r;
  r.number("rateId", 1)
      .number("rate", 1)
      .string("sourceCurrency", "NGN")
      .string("destinationCurrency", "NGN")
      .number("convertedAmount", amount.value);
  return r;
}

// 20 lowercase hex digits, derived from the record (the processor's transaction reference).
std::string t_ref(const TransactionId& id) {
  std::string ref = to_hex(sha256("tref|" + id.value)).substr(0, 20);
  KOBO_ASSERT(ref.size() == 20, "a processor's reference is 20 hex digits");
  return ref;
}

// A NIP-style session id: sender institution, yymmddHHmmss, 12 digits derived from `seed`.
std::string session_id(std::string_view institution, UnixMs time, std::string_view seed) {
  const std::string t = iso(time);  // 2026-11-21T07:02:00.000Z
  KOBO_ASSERT(t.size() == 24, "a time shows as yyyy-mm-ddTHH:MM:SS.mmmZ");
  std::string id(institution.substr(0, 6));
  id.insert(0, 6 - id.size(), '0');
  id +=
      t.substr(2, 2) + t.substr(5, 2) + t.substr(8, 2) + t.substr(11, 2) + t.substr(14, 2) + t.substr(17, 2);
  const std::string h = to_hex(sha256("session|" + std::string(seed)));
  for (std::size_t i = 0; i < 12; ++i) id += static_cast<char>('0' + (h[i] % 10));
  KOBO_ASSERT(id.size() == 30, "a session id is 6 digits of institution, 12 of time and 12 derived");
  return id;
}

// How a transaction shows a wallet it moves money from or to.
Object snapshot(const WalletFacts& w) {
  KOBO_ASSERT(!w.public_id.empty(), "a wallet shown has its id");
  Object s;
  s.string("accountName", w.account_name)
      .string("accountNumber", w.account_number)
      .string("bankCode", w.bank_code)
      .string("bankName", w.bank_name)
      .number("id", w.id)
      .string("publicId", w.public_id)
      .string("currency", "NGN")
      .string("processor", kProcessor)
      .null("reference");
  return s;
}

WalletFacts wallet_of(const RecordSource& records, std::string_view id) {
  auto w = records.wallet(id);
  KOBO_ASSERT(w.has_value(), "a transaction names a wallet the views do not have");
  return std::move(*w);
}

// The amount a transaction record shows: what moved between the two sides, before any fee.
Kobo shown_amount(const Event& e, const std::vector<CreatedTransaction>& created, std::size_t k) {
  KOBO_ASSERT(k < created.size() && created[k].posting != nullptr, "an amount of a record the event creates");
  if (const auto* x = std::get_if<WalletTransferSettled>(&e.data)) return x->legs().amount();
  if (const auto* x = std::get_if<HoldCaptured>(&e.data)) return x->legs().amount();
  if (const auto* x = std::get_if<BankTransferInitiated>(&e.data))
    return x->legs().amount();  // before the fee
  if (const auto* x = std::get_if<IncomingCreditReceived>(&e.data))
    return x->legs().amount();  // a sweep moves it on
  return created[k].posting->amount;
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
                        std::string_view narration, std::optional<TransactionStatus> shown) {
  KOBO_ASSERT(t.posting != nullptr && amount.value > 0 && !t.id.empty(),
              "a transaction record shows a posting of its event that moved money, by its id");
  const std::string ts = iso(e.time);
  Object client;
  client.number("actualAmount", amount.value).number("fee", 0);
  Object r(48, 2048);
  r.string("_id", object_id_of(t.id.value))
      .string("account", account.value)
      .number("actualAmount", amount.value)
      .number("amount", amount.value)
      .string("auth", e.business)
      .number("balance", t.posting->balance.value);
  if (const BatchId* batch = batch_of(e.data))
    r.string("batchId", batch->value);
  else
    r.null("batchId");
  r.object("clientTransaction", client)
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
      .string("status", to_string(shown.value_or(t.status)))
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
  KOBO_ASSERT(source_data.get("publicId").has_value() && destination_data.get("publicId").has_value(),
              "both wallets shown have their ids");
  t.raw("source", *source_data.get("publicId"))
      .string("sourceType", "VirtualAccount")
      .object("sourceData", source_data)
      .raw("destination", *destination_data.get("publicId"))
      .string("destinationType", "VirtualAccount")
      .object("destinationData", destination_data);
}

Object meta(bool third_party, Kobo amount, const Object& credit) {
  KOBO_ASSERT(credit.get("balance").has_value(), "meta.credit mirrors the record, its balance with it");
  Object m;
  m.boolean("isThirdParty", third_party).object("rate", rate(amount)).object("credit", credit);
  return m;
}

// meta.credit of one record of a pair that moves money between two wallets (a wallet transfer,
// a hold's capture, a sweep): the pair's other record. The two show the same source,
// destination, amounts and narration (between_wallets), so the other's mirror is this record's
// with the other's balance, and only the record asked for is built.
Object pair_mirror(const Object& record, const CreatedTransaction& other) {
  KOBO_ASSERT(other.posting != nullptr, "the other record of a pair is a posting");
  Object m = mirror(record);
  m.number("balance", other.posting->balance.value);
  return m;
}

// The index of the other record of a pair created at `first` and `first + 1`.
std::size_t other_of_pair(std::size_t k, std::size_t first) {
  KOBO_ASSERT(k == first || k == first + 1, "a record of the pair");
  return k == first ? first + 1 : first;
}

Object wallet_transfer(const Event& e, const WalletTransferSettled& x,
                       const std::vector<CreatedTransaction>& created, std::size_t k,
                       const RecordSource& records, std::optional<TransactionStatus> shown) {
  KOBO_ASSERT(created.size() == 2 && k < 2, "a wallet transfer is a debit and a credit");
  const Kobo amount = shown_amount(e, created, 0);
  const Object source_data = snapshot(wallet_of(records, created[0].posting->account));
  Object destination_data = snapshot(wallet_of(records, created[1].posting->account));
  if (x.name_enquiry_ref) destination_data.string("nameEnquiryRef", *x.name_enquiry_ref);
  Object r = transaction_base(e, x.account, created[k], amount, x.narration, shown);
  between_wallets(r, source_data, destination_data);
  r.object("meta", meta(false, amount, pair_mirror(r, created[other_of_pair(k, 0)])));
  return r;
}

// A hold's capture: a wallet transfer from the hold's source, each record naming the hold in
// meta.hold.
Object hold_capture(const Event& e, const HoldCaptured& x, const std::vector<CreatedTransaction>& created,
                    std::size_t k, const RecordSource& records, std::optional<TransactionStatus> shown) {
  KOBO_ASSERT(created.size() == 2 && k < 2, "a hold's capture is a debit and a credit");
  const Kobo amount = shown_amount(e, created, 0);
  const Object source_data = snapshot(wallet_of(records, created[0].posting->account));
  const Object destination_data = snapshot(wallet_of(records, created[1].posting->account));
  Object r = transaction_base(e, x.account, created[k], amount, x.narration.value_or(""), shown);
  between_wallets(r, source_data, destination_data);
  Object m = meta(false, amount, pair_mirror(r, created[other_of_pair(k, 0)]));
  m.string("hold", x.hold.value);
  r.object("meta", m);
  return r;
}

// How a payout shows the bank account it pays.
Object beneficiary_data(const Beneficiary& b) {
  Object d;
  d.number("id", b.id)
      .string("publicId", b.bank_account.value)
      .string("bankName", b.bank_name)
      .string("bankCode", b.bank_code)
      .string("accountName", b.account_name)
      .string("accountNumber", b.account_number)
      .string("processor", kProcessor)
      .raw("clientIds", "{}")
      .string("nameEnquiryRef", b.name_enquiry_ref);
  return d;
}

// meta.verify of a payout the rail moved on (`step`), as the rail reported it.
Object verify(const BankTransferInitiated& x, const CreatedTransaction& t, Kobo amount,
              const rows::StatusStep& step) {
  KOBO_ASSERT(step.status != TransactionStatus::pending, "the rail moves a payout on from pending");
  const std::string_view s = to_string(step.status);
  const bool final = step.status == TransactionStatus::success || step.status == TransactionStatus::failed;
  const std::string_view message = step.status == TransactionStatus::success  ? "Transfer successful"
                                   : step.status == TransactionStatus::failed ? "Transfer failed"
                                                                              : "Transfer is being processed";
  Object beneficiary;
  beneficiary.string("accountNumber", x.beneficiary.account_number)
      .string("bankCode", x.beneficiary.bank_code)
      .string("bankName", x.beneficiary.bank_name)
      .string("accountName", x.beneficiary.account_name);
  Object report;
  report.string("narration", x.narration)
      .number("amount", amount.value)
      .string("date", iso(step.time))
      .object("beneficiary", beneficiary)
      .string("transactionStatus", s)
      .string("sessionId", session_id("999999", step.time, t.id.value + "|" + std::string(s)))
      .string("type", "transfer");
  Object data;
  data.string("status", s).string("message", message).object("data", report);
  Object v;
  v.string("status", final ? s : "pending").object("data", data);
  return v;
}

// A payout's record; `step`: the last step the rail moved it on, if any (its status, the time
// it shows as updated, and meta.verify).
Object bank_transfer(const Event& e, const BankTransferInitiated& x,
                     const std::vector<CreatedTransaction>& created, const RecordSource& records,
                     std::optional<TransactionStatus> shown, const rows::StatusStep* step) {
  KOBO_ASSERT(created.size() == 1, "a payout creates one record");
  const CreatedTransaction& t = created[0];
  const WalletFacts source = wallet_of(records, t.posting->account);
  const Kobo actual = -t.posting->amount;
  const Kobo amount = shown_amount(e, created, 0);
  const Kobo fee = x.legs().fee.amount;
  KOBO_ASSERT(actual == amount + fee, "a payout's source is debited its amount and its fee");
  Object client;
  client.number("fee", fee.value).number("actualAmount", actual.value);
  Object debit = transaction_base(e, x.account, t, amount, x.narration, shown);
  debit.string("source", source.public_id)
      .string("sourceType", "VirtualAccount")
      .object("sourceData", snapshot(source))
      .string("destination", x.beneficiary.bank_account.value)
      .string("destinationType", "BankAccount")
      .object("destinationData", beneficiary_data(x.beneficiary))
      .number("fee", fee.value)
      .string("feeReference", derived_reference("fee-", t.id))
      .number("actualAmount", actual.value)
      .object("clientTransaction", client)
      // In canonical form, whatever form the event holds it in.
      .raw("metadata", canonical(x.metadata));
  Object other_side = mirror(debit);
  other_side.number("balance", 0);  // the other side is a bank whose balance we do not keep
  Object m = meta(true, amount, other_side);
  if (step != nullptr) {
    m.object("verify", verify(x, t, amount, *step));
    debit.string("status", to_string(shown.value_or(step->status))).string("updatedAt", iso(step->time));
  }
  debit.object("meta", m);
  return debit;
}

Object payout_reversal(const Event& e, const PayoutFailed& x, const std::vector<CreatedTransaction>& created,
                       const RecordSource& records, std::optional<TransactionStatus> shown) {
  KOBO_ASSERT(created.size() == 1, "a reversal creates one record");
  const CreatedTransaction& t = created[0];
  const auto initiated = records.payout(x.transaction.value);
  const auto* payout = initiated ? std::get_if<BankTransferInitiated>(&initiated->data) : nullptr;
  KOBO_ASSERT(payout != nullptr, "a reversal of a payout the views do not have");
  const WalletFacts destination = wallet_of(records, t.posting->account);
  const Kobo actual = shown_amount(e, created, 0);
  Object credit =
      transaction_base(e, payout->account, t, actual, reversal_narration(payout->narration), shown);
  credit.string("source", payout->beneficiary.bank_account.value)
      .string("sourceType", "BankAccount")
      .object("sourceData", beneficiary_data(payout->beneficiary))
      .string("destination", destination.public_id)
      .string("destinationType", "VirtualAccount")
      .object("destinationData", snapshot(destination))
      .string("debitReference", payout->reference)
      .raw("tags", R"(["reversal"])");
  credit.object("meta", meta(true, actual, mirror(credit)));
  return credit;
}

// Record 0 is the credit; a transit wallet's credit is swept on to its settlement wallet by the
// pair 1 and 2 (sweep()).
Object incoming_credit(const Event& e, const IncomingCreditReceived& x,
                       const std::vector<CreatedTransaction>& created, const RecordSource& records,
                       std::optional<TransactionStatus> shown) {
  KOBO_ASSERT(created.size() == (x.legs().sweep ? 3U : 1U),
              "an incoming credit is one record, three when swept");
  const CreatedTransaction& t = created[0];
  const WalletFacts destination = wallet_of(records, t.posting->account);
  const Kobo amount = shown_amount(e, created, 0);
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
      .string("publicId", external_source_id(t.id))
      .string("createdAt", ts)
      .string("updatedAt", ts)
      .string("currency", "NGN")
      .boolean("live", e.live);
  Object credit = transaction_base(e, x.account, t, amount, x.narration, shown);
  credit.raw("source", *source.get("publicId"))
      .string("sourceType", "External")
      .object("sourceData", source)
      .string("destination", destination.public_id)
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
  return credit;
}

// Record k (1 or 2) of the pair by which a transit wallet sweeps what it received to its
// settlement wallet. The transit wallet's snapshot is as the credit left it.
Object sweep(const Event& e, const IncomingCreditReceived& x, const std::vector<CreatedTransaction>& created,
             std::size_t k, const RecordSource& records, std::optional<TransactionStatus> shown) {
  KOBO_ASSERT(created.size() == 3 && (k == 1 || k == 2),
              "a sweep is the pair after a transit wallet's credit");
  const Kobo amount = shown_amount(e, created, 0);
  const Object transit_data = snapshot(wallet_of(records, created[1].posting->account));
  const Object settlement_data = snapshot(wallet_of(records, created[2].posting->account));
  Object r = transaction_base(e, x.account, created[k], amount, kSweepNarration, shown);
  between_wallets(r, transit_data, settlement_data);
  r.raw("tags", R"(["sweep"])");
  r.object("meta", meta(false, amount, pair_mirror(r, created[other_of_pair(k, 1)])));
  return r;
}

// A wallet's KYC tier and its limits for the day `tiers` is shown at (docs/architecture.md, KYC tiers).
void tier_members(Object& w, const rows::WalletRow& now, const TierShown& tiers) {
  static const TierLimits kCbn = cbn_tier_limits();
  const TierLimit* limit = tier_limit(tiers.limits != nullptr ? *tiers.limits : kCbn, now.tier);
  if (limit == nullptr) {
    w.null("kycTier").null("limits");
    return;
  }
  KOBO_ASSERT(now.tier >= 1 && now.tier <= kKycTiers, "a wallet with limits has a tier");
  Object limits;
  limits.number("dailyDebit", limit->daily_debit.value)
      .number("dailyDebitUsed", now.debits.on(lagos_day(tiers.at)).value);
  if (limit->max_balance)
    limits.number("maxBalance", limit->max_balance->value);
  else
    limits.null("maxBalance");
  w.number("kycTier", now.tier).object("limits", limits);
}

// The fields every wallet of the service's bank has (API document 2.1 and 2.2).
Object wallet_base(const Event& e, const AccountId& account, std::uint64_t id, const WalletId& wallet,
                   const std::string& name, const std::string& number, const std::string& bank_name,
                   const std::string& bank_code, const rows::WalletRow& now, const TierShown& tiers) {
  KOBO_ASSERT(now.balance.value >= 0 && now.held.value >= 0, "a wallet shown has no debt and holds no debt");
  const std::string ts = iso(now.updated);
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
      .number("balance", now.balance.value)
      .number("availableBalance", (now.balance - now.held).value)
      .number("heldBalance", now.held.value)
      .string("currency", "NGN")
      .string("createdAt", iso(e.time))
      .string("updatedAt", ts)
      .string("lastUpdated", ts);
  tier_members(w, now, tiers);
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
  KOBO_ASSERT(!e.business.empty() && !x.account.empty(), "a registration names its business and account");
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
      .raw("webhookEvents", R"(["account.credit","account.debit","account.debit.failed"])")
      .boolean("isDefault", true)
      .boolean("live", false)
      .object("pubKey", keys)
      .string("business", e.business)
      .string("createdAt", ts)
      .string("updatedAt", ts)
      .number("__v", 0);
  return {business.text(), account.text()};
}

namespace {

std::string string_array(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ',';
    append_json_string(out, items[i]);
  }
  out += ']';
  KOBO_ASSERT(out.size() >= 2 + 3 * items.size() - (items.empty() ? 0 : 1),
              "each item is a string, between commas");
  return out;
}

}  // namespace

std::string account(const Event& registered, const rows::AccountRow& now, bool live) {
  const auto* x = std::get_if<BusinessRegistered>(&registered.data);
  KOBO_ASSERT(x != nullptr && now.business == registered.business,
              "an account record of its business's registration");
  const std::string created = iso(registered.time);
  // The mode's own webhook settings (rows.h AccountRow), the other mode's not at all.
  const auto [urls, events] = rows::mode_webhooks(now, live);
  Object keys;
  keys.string("live", x->live_public_key).string("test", x->test_public_key);
  Object account;
  account.string("_id", object_id_of(x->account.value))
      .string("id", std::to_string(x->id))
      .string("publicId", x->account.value)
      .string("name", x->account_name)
      .raw("webhooks", string_array(urls))
      .raw("webhookEvents",
           events ? string_array(*events) : R"(["account.credit","account.debit","account.debit.failed"])")
      .boolean("isDefault", true)
      .boolean("live", now.live)
      .object("pubKey", keys)
      .string("business", registered.business)
      .string("createdAt", created)
      .string("updatedAt", iso(now.updated))
      .number("__v", now.version);
  return account.text();
}

namespace {

std::string open_wallet(const Event& e, const WalletOpened& x, const rows::WalletRow& now,
                        const TierShown& tiers) {
  KOBO_ASSERT(x.id != 0 && !x.wallet.empty(), "a wallet shown has its ids");
  Object w = wallet_base(e, x.account, x.id, x.wallet, x.name, x.account_number, x.bank_name, x.bank_code,
                         now, tiers);
  contact(w, x);
  w.boolean("isFavourite", false).string("category", to_string(x.category));
  return w.text();
}

std::string transit_wallet(const Event& e, const TransitWalletOpened& x, const rows::WalletRow& now,
                           const TierShown& tiers) {
  Object w = wallet_base(e, x.account, x.id, x.wallet, x.name, x.account_number, x.bank_name, x.bank_code,
                         now, tiers);
  contact(w, x);
  KOBO_ASSERT(!x.settlement_wallet.empty(), "a transit wallet settles somewhere");
  w.string("alias", x.name).null("reference").string("settlementAccount", x.settlement_wallet.value);
  return w.text();
}

std::string collection_wallet(const Event& e, const CollectionWalletOpened& x, const rows::WalletRow& now,
                              const WalletFacts& destination) {
  KOBO_ASSERT(destination.public_id == x.destination.value,
              "a collection wallet shows its destination's number");
  Object c;
  c.string("_id", object_id_of(x.wallet.value))
      .number("id", x.id)
      .string("publicId", x.wallet.value)
      .string("auth", e.business)
      .string("account", x.account.value)
      .string("destination", x.destination.value)
      .string("parentAccountNumber", destination.account_number)
      .string("accountName", x.name)
      .string("accountNumber", x.account_number)
      .number("amount", x.amount.value)
      .string("bankName", x.bank_name)
      .string("bankCode", x.bank_code)
      .boolean("live", e.live)
      .string("processor", kProcessor)
      .string("expiration", iso(x.expires_at.ms))
      .string("createdAt", iso(e.time))
      .string("updatedAt", iso(now.updated))
      .string("currency", "NGN")
      .boolean("active", now.status == CollectionStatus::pending)
      .string("status", to_string(now.status));
  if (x.reference)
    c.string("reference", *x.reference);
  else
    c.null("reference");
  return c.text();
}

}  // namespace

std::optional<std::string> transactions_owner(const Event& e, const RecordSource& records) {
  if (const AccountId* owner = owner_account(e.data)) return owner->value;
  const auto change = status_change(e.data);
  if (!change) return std::nullopt;
  const auto payout = records.payout(change->transaction.value);
  const AccountId* payer = payout ? owner_account(payout->data) : nullptr;
  if (payer == nullptr) return std::nullopt;
  KOBO_ASSERT(!payer->value.empty(), "a payout names its account");
  return payer->value;
}

std::optional<WalletFacts> wallet_facts(const Event& opening) {
  return std::visit(
      [](const auto& x) -> std::optional<WalletFacts> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, WalletOpened> || std::is_same_v<T, TransitWalletOpened> ||
                      std::is_same_v<T, CollectionWalletOpened>)
          return WalletFacts{x.id, x.wallet.value, x.name, x.account_number, x.bank_code, x.bank_name};
        else
          return std::nullopt;
      },
      opening.data);
}

rows::WalletRow opened(const Event& opening) {
  KOBO_ASSERT(wallet_facts(opening).has_value(), "a wallet row of an event that opens one");
  rows::WalletRow row{Kobo(0), opening.time, CollectionStatus::pending, 0, Kobo(0), 0, Kobo(0), 0, {}};
  std::visit(
      [&](const auto& x) {
        if constexpr (requires { x.kyc_tier; }) row.tier = static_cast<std::uint8_t>(x.kyc_tier.value_or(0));
      },
      opening.data);
  KOBO_ASSERT(row.tier <= kKycTiers, "a wallet opens in a tier of the tiers, or none");
  return row;
}

std::string wallet(const Event& opening, const rows::WalletRow& now, const RecordSource& records,
                   const TierShown& tiers) {
  if (const auto* x = std::get_if<WalletOpened>(&opening.data)) return open_wallet(opening, *x, now, tiers);
  if (const auto* x = std::get_if<TransitWalletOpened>(&opening.data))
    return transit_wallet(opening, *x, now, tiers);
  const auto* x = std::get_if<CollectionWalletOpened>(&opening.data);
  KOBO_ASSERT(x != nullptr, "a wallet record of an event that opens none");
  return collection_wallet(opening, *x, now, wallet_of(records, x->destination.value));
}

rows::HoldRow placed(const Event& placement) {
  KOBO_ASSERT(std::holds_alternative<HoldPlaced>(placement.data), "a hold row of an event that places none");
  return rows::HoldRow{0, Kobo(0), HoldStatus::pending, placement.time, {}};
}

std::string hold(const Event& placement, const rows::HoldRow& now, std::span<const Event> captures) {
  const auto* x = std::get_if<HoldPlaced>(&placement.data);
  KOBO_ASSERT(x != nullptr, "a hold record of an event that places none");
  KOBO_ASSERT(captures.size() == now.captures.size(), "a hold rendered without its captures");
  std::string list;
  JsonWriter items(list);
  items.begin_array();
  for (const Event& e : captures) {
    const auto* c = std::get_if<HoldCaptured>(&e.data);
    KOBO_ASSERT(c != nullptr && c->hold == x->hold, "a hold's capture is a HoldCaptured");
    const TransferLegs legs = c->legs();
    Object item;
    item.string("transaction", c->transaction.value)
        .string("reference", c->reference)
        .string("destination", legs.destination.account)
        .number("amount", legs.amount().value)
        .string("createdAt", iso(e.time));
    items.raw(item.text());
  }
  items.end_array();
  KOBO_ASSERT(now.captured <= x->amount, "a hold captures no more than it reserved");
  const Kobo remaining = now.status == HoldStatus::pending ? x->amount - now.captured : Kobo(0);
  Object h(20, 512);
  h.string("publicId", x->hold.value)
      .string("source", x->source.value)
      .number("amount", x->amount.value)
      .number("capturedAmount", now.captured.value)
      .number("remaining", remaining.value)
      .string("status", to_string(now.status))
      .string("reference", x->reference)
      .raw("metadata", canonical(x->metadata))
      .string("expiresAt", iso(x->expires_at.ms))
      .raw("captures", list)
      .boolean("live", placement.live)
      .string("createdAt", iso(placement.time))
      .string("updatedAt", iso(now.updated));
  if (x->narration)
    h.string("narration", *x->narration);
  else
    h.null("narration");
  return h.text();
}

std::string bank_account(const Event& e, const BeneficiarySaved& x) {
  KOBO_ASSERT(x.id != 0 && !x.bank_account.empty(), "a bank account shown has its ids");
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

namespace {

// Record `k` of those `e` creates, as members to be written; `step` as bank_transfer()'s, the
// only record the rail moves on.
Object record(const Event& e, std::size_t k, const RecordSource& records,
              std::optional<TransactionStatus> shown, const rows::StatusStep* step) {
  const auto created = transactions_created(e.data);
  KOBO_ASSERT(k < created.size(), "a transaction row names a transaction its event does not create");
  if (const auto* x = std::get_if<BankTransferInitiated>(&e.data))
    return bank_transfer(e, *x, created, records, shown, step);
  KOBO_ASSERT(step == nullptr, "a status step of a transaction that is not a payout");
  if (const auto* x = std::get_if<WalletTransferSettled>(&e.data))
    return wallet_transfer(e, *x, created, k, records, shown);
  if (const auto* x = std::get_if<PayoutFailed>(&e.data))
    return payout_reversal(e, *x, created, records, shown);
  if (const auto* x = std::get_if<IncomingCreditReceived>(&e.data))
    return k == 0 ? incoming_credit(e, *x, created, records, shown)
                  : sweep(e, *x, created, k, records, shown);
  if (const auto* x = std::get_if<HoldCaptured>(&e.data))
    return hold_capture(e, *x, created, k, records, shown);
  KOBO_ASSERT(false, "an event creates transactions render does not know");
  return Object();
}

}  // namespace

std::vector<Listed> listed(const Event& e, const RecordSource& records) {
  const auto created = transactions_created(e.data);
  if (created.empty()) return {};
  const AccountId account = std::visit(
      [&](const auto& x) -> AccountId {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, PayoutFailed>) {
          const auto initiated = records.payout(x.transaction.value);
          const auto* payout = initiated ? std::get_if<BankTransferInitiated>(&initiated->data) : nullptr;
          KOBO_ASSERT(payout != nullptr, "a reversal of a payout the views do not have");
          return payout->account;
        } else if constexpr (requires { x.account; }) {
          return x.account;
        } else {
          KOBO_ASSERT(false, "an event creates transactions of no account");
          return AccountId();
        }
      },
      e.data);
  std::vector<Listed> out;
  out.reserve(created.size());
  for (std::size_t k = 0; k < created.size(); ++k) {
    const CreatedTransaction& t = created[k];
    out.push_back(Listed{t.id, account, t.reference, t.number, e.time, entry_of(t.kind), t.status,
                         shown_amount(e, created, k).value});
  }
  KOBO_ASSERT(out.size() == created.size() && !account.empty(), "every record listed, under its account");
  return out;
}

std::string transaction(const Event& e, std::size_t index, std::span<const rows::StatusStep> steps,
                        const RecordSource& records, std::optional<TransactionStatus> shown) {
  // Each step the rail took replaces the one before it: the last is what the record shows.
  KOBO_ASSERT(steps.size() <= 2, "a payout's status changes twice at most");
  return record(e, index, records, shown, steps.empty() ? nullptr : &steps.back()).text();
}

DecidedFacts::DecidedFacts(const std::vector<WalletFacts>& wallets) : wallets_(wallets) {
  constexpr std::size_t kScanMax = 8;
  if (wallets_.size() > kScanMax)
    for (const WalletFacts& w : wallets_) by_id_.emplace(w.public_id, &w);
  // The writer's answer names each wallet once (command/ledger.cc facts_shown()).
  KOBO_ASSERT(by_id_.empty() || by_id_.size() == wallets_.size(),
              "the facts of a decision are of distinct wallets");
}

std::optional<WalletFacts> DecidedFacts::wallet(std::string_view public_id) const {
  if (!by_id_.empty()) {
    const auto it = by_id_.find(public_id);
    if (it == by_id_.end()) return std::nullopt;
    return *it->second;
  }
  for (const WalletFacts& w : wallets_)
    if (w.public_id == public_id) return w;
  return std::nullopt;
}

RecordsRead records_read(const Event& e) {
  RecordsRead r;
  r.wallets = wallets_shown(e.data);
  if (const auto* x = std::get_if<PayoutFailed>(&e.data)) r.payouts.push_back(x->transaction.value);
  return r;
}

bool can_render(std::span<const Event> events, const RecordSource& records) {
  for (const Event& e : events) {
    const RecordsRead r = records_read(e);
    for (const auto& id : r.wallets)
      if (!records.wallet(id)) return false;
    for (const auto& id : r.payouts)
      if (!records.payout(id)) return false;
  }
  return true;
}

std::optional<std::string> created_record(const std::vector<Event>& events, std::string_view id,
                                          const RecordSource& records, const TierShown& tiers,
                                          std::optional<TransactionStatus> shown) {
  for (const Event& e : events) {
    std::optional<std::string> found;
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, WalletOpened> || std::is_same_v<T, TransitWalletOpened> ||
                        std::is_same_v<T, CollectionWalletOpened>) {
            if (x.wallet.value == id) found = wallet(e, opened(e), records, tiers);
          } else if constexpr (std::is_same_v<T, BeneficiarySaved>) {
            if (x.bank_account.value == id) found = bank_account(e, x);
          } else if constexpr (std::is_same_v<T, BusinessRegistered>) {
            if (x.account.value == id) found = business_records(e, x).account;
          } else if constexpr (std::is_same_v<T, HoldPlaced>) {
            if (x.hold.value == id) found = hold(e, placed(e), {});
          } else {
            const auto created = transactions_created(e.data);
            for (std::size_t k = 0; k < created.size(); ++k)
              if (created[k].id.value == id) found = transaction(e, k, {}, records, shown);
          }
        },
        e.data);
    if (found) return found;
  }
  return std::nullopt;
}

}  // namespace kobo::render

namespace kobo::render {

namespace {

StatementLine::Counterparty counterparty_of(const WalletFacts& w) {
  return {w.public_id, w.account_name, w.account_number, w.bank_name};
}
StatementLine::Counterparty counterparty_of(const Beneficiary& b) {
  return {b.bank_account.value, b.account_name, b.account_number, b.bank_name};
}

}  // namespace

StatementLine statement_line(const Event& e, std::size_t index, const RecordSource& records) {
  const auto created = transactions_created(e.data);
  KOBO_ASSERT(index < created.size(), "a statement line names a transaction its event does not create");
  const CreatedTransaction& t = created[index];
  StatementLine line;
  line.transaction = t.id;
  line.reference = t.reference;
  line.created = e.time;
  line.entry = entry_of(t.kind);
  line.fee = Kobo(0);
  const auto wallet_posted = [&](std::size_t k) { return wallet_of(records, created[k].posting->account); };
  switch (t.kind) {
    case TransactionKind::wallet_transfer_debit:
    case TransactionKind::wallet_transfer_credit: {
      const auto& x = std::get<WalletTransferSettled>(e.data);
      line.narration = x.narration;
      line.counterparty =
          counterparty_of(wallet_posted(t.kind == TransactionKind::wallet_transfer_debit ? 1 : 0));
      break;
    }
    case TransactionKind::payout: {
      const auto& x = std::get<BankTransferInitiated>(e.data);
      line.narration = x.narration;
      line.fee = x.legs().fee.amount;  // as the payout's record shows it
      line.counterparty = counterparty_of(x.beneficiary);
      break;
    }
    case TransactionKind::payout_reversal: {
      const auto& x = std::get<PayoutFailed>(e.data);
      const auto initiated = records.payout(x.transaction.value);
      const auto* payout = initiated ? std::get_if<BankTransferInitiated>(&initiated->data) : nullptr;
      KOBO_ASSERT(payout != nullptr, "a reversal of a payout the views do not have");
      line.narration = reversal_narration(payout->narration);
      line.counterparty = counterparty_of(payout->beneficiary);
      break;
    }
    case TransactionKind::incoming_credit: {
      const auto& x = std::get<IncomingCreditReceived>(e.data);
      line.narration = x.narration;
      line.counterparty = {external_source_id(t.id), x.sender.account_name, x.sender.account_number,
                           x.sender.bank_name};
      break;
    }
    case TransactionKind::hold_capture_debit:
    case TransactionKind::hold_capture_credit: {
      const auto& x = std::get<HoldCaptured>(e.data);
      line.narration = x.narration.value_or("");
      line.counterparty =
          counterparty_of(wallet_posted(t.kind == TransactionKind::hold_capture_debit ? 1 : 0));
      break;
    }
    case TransactionKind::sweep_debit:
    case TransactionKind::sweep_credit:
      line.narration = kSweepNarration;
      line.counterparty = counterparty_of(wallet_posted(t.kind == TransactionKind::sweep_debit ? 2 : 1));
      break;
  }
  KOBO_ASSERT(!line.transaction.empty() && line.fee.value >= 0, "a statement line names its transaction");
  return line;
}

std::string webhook_body(WebhookEventType type, std::uint64_t sequence, std::string_view transaction_text) {
  KOBO_ASSERT(transaction_text.starts_with('{'), "a webhook's data is a transaction record");
  Object body;
  body.raw("data", transaction_text).string("event", to_string(type)).number("sequence", sequence);
  return body.text();
}

std::string webhook_event_id(std::string_view event_hash, std::string_view transaction) {
  KOBO_ASSERT(!event_hash.empty() && !transaction.empty(),
              "a webhook event's id derives from its event and record");
  return "evt-" + derived_uuid(std::string("event|").append(event_hash).append("|").append(transaction));
}

// ---- statements ----------------------------------------------------------------------------------

namespace {

// Whether text in a CSV field makes it quoted (RFC 4180): a comma, a quote or a line break.
bool needs_quotes(std::string_view text) { return text.find_first_of(",\"\r\n") != std::string_view::npos; }

// Text a spreadsheet would run as a formula.
bool formula(std::string_view text) {
  return !text.empty() && (text[0] == '=' || text[0] == '+' || text[0] == '-' || text[0] == '@' ||
                           text[0] == '\t' || text[0] == '\r');
}

void escaped(std::string& out, std::string_view text) {
  [[maybe_unused]] const std::size_t before = out.size();
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  KOBO_ASSERT(out.size() >= before + text.size(), "escaping keeps every character, doubling quotes");
}

// One CSV field made of `parts`, written as they are: quoted when it holds a comma, a quote or a
// line break; prefixed with ' when a spreadsheet would run it as a formula.
void csv_text(std::string& out, std::initializer_list<std::string_view> parts) {
  KOBO_ASSERT(parts.size() >= 1, "a CSV field of one part at least");
  bool quoted = false;
  for (const std::string_view p : parts) quoted = quoted || needs_quotes(p);
  if (quoted) out += '"';
  if (formula(*parts.begin())) out += '\'';
  for (const std::string_view p : parts) {
    if (quoted)
      escaped(out, p);
    else
      out += p;
  }
  if (quoted) out += '"';
}

}  // namespace

std::int64_t statement_amount(const StatementLine& line, const rows::StatementRow& row) {
  KOBO_ASSERT(line.fee.value >= 0 && std::llabs(row.amount.value) > line.fee.value,
              "a movement moves more than the fee it carries");
  return std::llabs(row.amount.value) - line.fee.value;
}

void statement_line_json(JsonWriter& w, const StatementLine& line, const rows::StatementRow& row) {
  KOBO_ASSERT(!line.transaction.empty() && row.balance.value >= 0,
              "a statement line of a transaction, no debt after it");
  const auto& c = line.counterparty;
  w.begin_object()
      .member("amount", statement_amount(line, row))
      .member("balanceAfter", row.balance.value)
      .key("counterparty")
      .begin_object()
      .member("accountName", c.account_name)
      .member("accountNumber", c.account_number)
      .member("bankName", c.bank_name)
      .member("publicId", c.public_id)
      .end_object()
      .member("createdAt", iso(line.created))
      .member("entry", to_string(line.entry))
      .member("fee", line.fee.value)
      .member("narration", line.narration)
      .member("reference", line.reference)
      .member("transaction", line.transaction.value)
      .end_object();
}

void statement_line_csv(std::string& out, const StatementLine& line, const rows::StatementRow& row) {
  KOBO_ASSERT(!line.transaction.empty() && row.balance.value >= 0,
              "a statement line of a transaction, no debt after it");
  out += iso(line.created);
  out += ',';
  csv_text(out, {line.reference});
  out += ',';
  out += line.transaction.value;
  out += ',';
  out += to_string(line.entry);
  out += ',';
  append_json_number(out, statement_amount(line, row));  // a JSON integer is a CSV number too
  out += ',';
  append_json_number(out, line.fee.value);
  out += ',';
  csv_text(out, {line.narration});
  out += ',';
  // "accountName (bankName accountNumber)".
  const auto& c = line.counterparty;
  csv_text(out, {c.account_name, " (", c.bank_name, " ", c.account_number, ")"});
  out += ',';
  append_json_number(out, row.balance.value);
  out += "\r\n";
}

std::string statement_page(std::string_view wallet, const StatementTotals& totals, std::string_view lines) {
  KOBO_ASSERT(lines.starts_with('[') && lines.ends_with(']'), "a statement's lines are a JSON array");
  std::string out;
  out.reserve(lines.size() + 256);
  JsonWriter(out)
      .begin_object()
      .member("closingBalance", totals.closing.value)
      .member("from", iso(totals.from))
      .raw_member("lines", lines)
      .member("openingBalance", totals.opening.value)
      .member("to", iso(totals.to))
      .member("totalCredits", totals.credits.value)
      .member("totalDebits", totals.debits.value)
      .member("wallet", wallet)
      .end_object();
  return out;
}

std::string balance(std::string_view wallet, UnixMs at, Kobo balance) {
  KOBO_ASSERT(balance.value >= 0 && !wallet.empty(), "a wallet's balance at a time is no debt");
  std::string out;
  JsonWriter(out)
      .begin_object()
      .member("at", iso(at))
      .member("balance", balance.value)
      .member("wallet", wallet)
      .end_object();
  return out;
}

// ---- bulk transfers ------------------------------------------------------------------------------

BulkAnswer::BulkAnswer(const std::vector<Event>& events)
    : bulk_([&]() -> const BulkTransferAccepted& {
        KOBO_ASSERT(!events.empty() && std::holds_alternative<BulkTransferAccepted>(events.front().data),
                    "a bulk's events open with its BulkTransferAccepted");
        return std::get<BulkTransferAccepted>(events.front().data);
      }()),
      item_event_(bulk_.items, nullptr),
      item_refused_(bulk_.items, nullptr) {
  for (const BulkItemRejected& r : bulk_.rejected) {
    KOBO_ASSERT(r.index < bulk_.items, "a bulk's refused item is one of its items");
    item_refused_[r.index] = &r;
  }
  std::size_t next = 0;
  for (const Event& e : events) {
    if (batch_of(e.data) == nullptr) continue;
    while (next < bulk_.items && item_refused_[next] != nullptr) ++next;
    KOBO_ASSERT(next < bulk_.items, "a bulk's items are accepted or refused");
    item_event_[next++] = &e;
  }
}

bool BulkAnswer::write_items(std::size_t from, std::size_t to, const Record& record, ItemShown accepted,
                             Refused refused, std::string& out) const {
  KOBO_ASSERT(from <= to && to <= items(), "bulk items out of range");
  constexpr std::size_t kItemBytes = 2'560;  // an accepted item: its record (about 2.3 KiB) and members
  out.reserve(out.size() + (to - from) * kItemBytes);
  JsonWriter w(out, JsonWriter::Run{});  // a piece of the items; text() splices the pieces
  const auto item = [&](std::size_t i, const std::optional<std::string>& reference, ItemShown shown,
                        const std::string* transaction) {
    w.begin_object().member("index", std::uint64_t{i});
    if (reference)
      w.member("reference", *reference);
    else
      w.null_member("reference");
    w.member("statusCode", shown.status).member("message", shown.message);
    if (transaction != nullptr)
      w.raw_member("transaction", *transaction);
    else
      w.null_member("transaction");
    w.end_object();
  };
  for (std::size_t i = from; i < to; ++i) {
    if (const BulkItemRejected* r = item_refused_[i]) {
      item(i, r->reference, refused(r->reason), nullptr);
      continue;
    }
    const Event* e = item_event_[i];
    KOBO_ASSERT(e != nullptr, "a bulk's items are accepted or refused");
    const auto transaction = record(*e);
    if (!transaction) return false;
    std::optional<std::string> reference;
    if (const auto* x = std::get_if<WalletTransferSettled>(&e->data)) reference = x->reference;
    if (const auto* x = std::get_if<BankTransferInitiated>(&e->data)) reference = x->reference;
    item(i, reference, accepted, &*transaction);
  }
  return true;
}

std::string BulkAnswer::text(std::span<const std::string> pieces) const {
  std::size_t size = 192;
  for (const std::string& p : pieces) size += p.size() + 1;
  std::string out;
  out.reserve(size);
  JsonWriter w(out);
  w.begin_object()
      .member("publicId", bulk_.batch.value)
      .member("reference", bulk_.reference)
      .member("atomic", bulk_.atomic)
      .key("items")
      .begin_array();
  for (const std::string& p : pieces) w.elements(p);
  w.end_array().end_object();
  KOBO_ASSERT(w.done(), "a bulk answer is one whole object");
  return out;
}

// ---- events ----------------------------------------------------------------------------------

void webhook_event(JsonWriter& w, std::uint64_t sequence, std::string_view id, WebhookEventType type,
                   UnixMs time, std::string_view body) {
  KOBO_ASSERT(!id.empty() && body.starts_with('{'), "a webhook event has its id and an object body");
  w.begin_object()
      .raw_member("body", body)
      .member("createdAt", iso(time))
      .member("event", to_string(type))
      .member("id", id)
      .member("sequence", sequence)
      .end_object();
}

// ---- name enquiry ----------------------------------------------------------------------------

std::string name_enquiry(const NameEnquiry& n) {
  const std::string ts = iso(n.at);
  Object r;
  r.string("publicId", n.public_id)
      .string("auth", n.business)
      .string("account", n.account)
      .string("accountName", n.account_name)
      .string("accountNumber", n.account_number)
      .string("bankName", n.bank_name)
      .string("bankCode", n.bank_code)
      .string("nibssBankCode", n.nibss_code)
      .boolean("live", n.live)
      .string("processor", kProcessor)
      .string("currency", "NGN")
      .string("beneficiaryType", n.own_bank ? "vba" : "external")
      .raw("clientIds", "{}")
      .string("nameEnquiryRef", n.reference)
      .string("createdAt", ts)
      .string("updatedAt", ts);
  return r.text();
}

}  // namespace kobo::render
