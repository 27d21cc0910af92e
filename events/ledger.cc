#include "events/ledger.h"

#include <algorithm>
#include <array>
#include <functional>
#include <utility>

#include "common/crypto.h"
#include "common/json_writer.h"
#include "events/name_table.h"

namespace kobo {
namespace {

template <typename T>
const T* as(const EventData& d) {
  return std::get_if<T>(&d);
}

std::uint64_t id_at(const std::vector<std::uint64_t>& ids, std::size_t k) {
  KOBO_ASSERT(k < 3, "an event numbers at most 3 records");
  return k < ids.size() ? ids[k] : 0;
}

}  // namespace

const AccountId* owner_account(const EventData& d) {
  const AccountId* owner = std::visit(
      [](const auto& x) -> const AccountId* {
        if constexpr (requires { x.account.value; })
          return &x.account;
        else
          return nullptr;
      },
      d);
  KOBO_ASSERT(owner == nullptr || !is_partition_level(type_of(d)), "only a business's event has an owner");
  return owner;
}

std::string scope_key(std::string_view owner, bool live) {
  std::string k(owner);
  k += live ? "|l|" : "|t|";
  KOBO_ASSERT(k.size() == owner.size() + 3 && k.back() == '|', "a scope key ends in its mode between bars");
  return k;
}

std::vector<std::string> wallets_shown(const EventData& d) {
  std::vector<std::string> out;
  if (const auto* postings = postings_of(d))
    for (const Posting& p : *postings)
      if (is_wallet_account(p.account)) out.push_back(p.account);
  if (const auto* x = std::get_if<CollectionWalletOpened>(&d)) out.push_back(x->destination.value);
  KOBO_ASSERT(out.size() <= 4, "an event shows at most the four wallets of a swept credit");
  return out;
}

std::optional<TierDebit> tier_debit(const EventData& d) {
  // Read, not asserted: the audit asks this of events it has not validated.
  std::optional<TierDebit> debit;
  if (const auto* transfer = std::get_if<WalletTransferSettled>(&d)) {
    if (const auto legs = TransferLegs::read(transfer->postings))
      debit = {legs->source.account, legs->amount()};
  } else if (const auto* payout = std::get_if<BankTransferInitiated>(&d)) {
    if (const auto legs = PayoutLegs::read(payout->postings)) debit = {legs->source.account, legs->debited()};
  }
  if (debit) {
    KOBO_ASSERT(debit->amount.value > 0 && is_wallet_account(debit->wallet),
                "a money debit is a wallet's, positive");
    return debit;
  }
  // A hold counts when it is placed; its captures do not count again.
  if (const auto* x = std::get_if<HoldPlaced>(&d)) return TierDebit{x->source.value, x->amount};
  return std::nullopt;
}

bool credits_capped(const EventData& d) { return !std::holds_alternative<PayoutFailed>(d); }

std::string_view to_string(Entry e) { return e == Entry::debit ? "debit" : "credit"; }

std::string_view to_string(TransactionKind k) {
  switch (k) {
    case TransactionKind::wallet_transfer_debit:
      return "wallet_transfer_debit";
    case TransactionKind::wallet_transfer_credit:
      return "wallet_transfer_credit";
    case TransactionKind::payout:
      return "payout";
    case TransactionKind::payout_reversal:
      return "payout_reversal";
    case TransactionKind::incoming_credit:
      return "incoming_credit";
    case TransactionKind::sweep_debit:
      return "sweep_debit";
    case TransactionKind::sweep_credit:
      return "sweep_credit";
    case TransactionKind::hold_capture_debit:
      return "hold_capture_debit";
    case TransactionKind::hold_capture_credit:
      return "hold_capture_credit";
  }
  return "?";
}

Entry entry_of(TransactionKind k) {
  KOBO_ASSERT(k <= TransactionKind::hold_capture_credit, "a transaction kind of the enum");
  switch (k) {
    case TransactionKind::wallet_transfer_debit:
    case TransactionKind::payout:
    case TransactionKind::sweep_debit:
    case TransactionKind::hold_capture_debit:
      return Entry::debit;
    default:
      return Entry::credit;
  }
}

namespace {

// The records `d` creates. With `derive` false, only what needs no derivation (kind, number,
// posting, status): ids past the first, references and link refs are left empty, so counting
// the records costs no hashing.
std::vector<CreatedTransaction> created(const EventData& d, bool derive) {
  std::vector<CreatedTransaction> out;
  out.reserve(3);  // an event creates at most 3 records: references into `out` stay valid
  // The wallet postings of an event, in order, are its records: the k-th gets ids[k] and the
  // k-th id derived from the event's transaction.
  const auto add = [&](TransactionKind kind, const TransactionId& first,
                       const std::vector<std::uint64_t>& ids, const Posting& p,
                       TransactionStatus status) -> CreatedTransaction& {
    const std::size_t k = out.size();
    KOBO_ASSERT(k < 3, "at most 3 records, so the references into `out` stay valid");
    KOBO_ASSERT(is_wallet_account(p.account), "a transaction record is a wallet's posting");
    CreatedTransaction t;
    t.kind = kind;
    if (derive) t.id = nth_transaction_id(first, k);
    t.number = id_at(ids, k);
    t.posting = &p;
    t.status = status;
    return out.emplace_back(std::move(t));
  };
  // A transfer's records, a wallet transfer's or a hold capture's: its debit and its credit.
  const auto transfer = [&](TransactionKind debit_kind, TransactionKind credit_kind, const auto& x) {
    const auto legs = TransferLegs::read(x.postings);
    if (!legs) return;
    auto& debit = add(debit_kind, x.transaction, x.ids, legs->source, TransactionStatus::success);
    auto& credit = add(credit_kind, x.transaction, x.ids, legs->destination, TransactionStatus::success);
    if (derive) {
      debit.reference = x.reference;
      debit.link_ref = link_ref_of(x.transaction);
      credit.reference = derived_reference("ref-", credit.id);
      credit.debit_reference = x.reference;
      credit.link_ref = debit.link_ref;
    }
  };

  // The legs are read, not asserted: the audit asks this of events it has not validated, and
  // an event whose postings are not its type's legs creates no record.
  if (const auto* wallet_transfer = as<WalletTransferSettled>(d)) {
    transfer(TransactionKind::wallet_transfer_debit, TransactionKind::wallet_transfer_credit,
             *wallet_transfer);
  } else if (const auto* capture = as<HoldCaptured>(d)) {
    // A capture is a wallet transfer from the hold's source: its records are joined as one's.
    transfer(TransactionKind::hold_capture_debit, TransactionKind::hold_capture_credit, *capture);
  } else if (const auto* payout_event = as<BankTransferInitiated>(d)) {
    const auto* x = payout_event;
    const auto legs = PayoutLegs::read(x->postings);
    if (!legs) return out;
    auto& payout =
        add(TransactionKind::payout, x->transaction, x->ids, legs->source, TransactionStatus::pending);
    if (derive) {
      payout.reference = x->reference;
      payout.link_ref = link_ref_of(x->transaction);
    }
  } else if (const auto* failed = as<PayoutFailed>(d)) {
    const auto* x = failed;
    const auto legs = ReversalLegs::read(x->postings);
    if (!legs) return out;
    // The reversal is the payout's second record: the payout itself is the first. It is made
    // here, not by add(): what add() asserts of a record, asserted of it.
    KOBO_ASSERT(out.empty() && is_wallet_account(legs->source.account),
                "a reversal credits its payout's wallet");
    CreatedTransaction t;
    t.kind = TransactionKind::payout_reversal;
    t.number = id_at(x->ids, 0);
    t.posting = &legs->source;
    t.status = TransactionStatus::success;
    if (derive) {
      t.id = nth_transaction_id(x->transaction, 1);
      t.reference = derived_reference("rev-", t.id);
      t.link_ref = link_ref_of(x->transaction);  // debit_reference: the payout's, which its reader holds
    }
    out.push_back(std::move(t));
  } else if (const auto* incoming = as<IncomingCreditReceived>(d)) {
    const auto* x = incoming;
    const auto legs = IncomingLegs::read(x->postings);
    if (!legs) return out;
    auto& credit = add(TransactionKind::incoming_credit, x->transaction, x->ids, legs->wallet,
                       TransactionStatus::success);
    if (derive) {
      credit.reference = derived_reference("ref-", credit.id);
      credit.link_ref = link_ref_of(x->transaction);
    }
    if (legs->sweep) {
      auto& debit = add(TransactionKind::sweep_debit, x->transaction, x->ids, legs->sweep->debit,
                        TransactionStatus::success);
      auto& swept = add(TransactionKind::sweep_credit, x->transaction, x->ids, legs->sweep->credit,
                        TransactionStatus::success);
      if (derive) {
        debit.reference = derived_reference("swp-", debit.id);
        debit.link_ref = link_ref_of(debit.id);
        swept.reference = derived_reference("swp-", swept.id);
        swept.debit_reference = debit.reference;
        swept.link_ref = debit.link_ref;
      }
    }
  }
  KOBO_ASSERT(out.size() <= 3, "an event creates at most 3 transaction records");
  // The k-th record is the k-th wallet posting (events/ledger.h): they follow the postings' order.
  KOBO_ASSERT(std::is_sorted(out.begin(), out.end(),
                             [](const CreatedTransaction& a, const CreatedTransaction& b) {
                               return std::less<>()(a.posting, b.posting);
                             }),
              "an event's records are in the order of its postings");
  return out;
}

}  // namespace

std::vector<CreatedTransaction> transactions_created(const EventData& d) {
  std::vector<CreatedTransaction> out = created(d, true);
  // Derived: every record links to its kin by a uuid (the ids may be the event's own, as read).
  KOBO_ASSERT(
      out.size() <= 3 && std::all_of(out.begin(), out.end(),
                                     [](const CreatedTransaction& t) { return t.link_ref.size() == 36; }),
      "an event's records, at most 3, each have their link");
  return out;
}

const BatchId* batch_of(const EventData& d) {
  if (const auto* w = std::get_if<WalletTransferSettled>(&d)) return w->batch ? &*w->batch : nullptr;
  if (const auto* b = std::get_if<BankTransferInitiated>(&d)) return b->batch ? &*b->batch : nullptr;
  return nullptr;
}

std::size_t transactions_created_count(const EventData& d) {
  const std::size_t n = created(d, false).size();
  KOBO_ASSERT(n <= 3, "an event creates at most 3 transaction records");
  return n;
}

std::optional<StatusChange> status_change(const EventData& d) {
  using S = TransactionStatus;
  std::optional<StatusChange> change;
  if (const auto* x = as<PayoutProcessing>(d))
    change = StatusChange{x->transaction, S::pending, S::processing};
  if (const auto* x = as<PayoutSucceeded>(d))
    change = StatusChange{x->transaction, S::processing, S::success};
  if (const auto* x = as<PayoutFailed>(d)) change = StatusChange{x->transaction, S::processing, S::failed};
  // pending < processing < success, failed: a payout's status only moves on.
  KOBO_ASSERT(!change || change->from < change->to, "a payout's status moves forward");
  return change;
}

std::vector<FinalizedTransaction> transactions_finalized(const EventData& d) {
  std::vector<FinalizedTransaction> out;
  // A payout's change comes first: it is the older record.
  if (const auto c = status_change(d);
      c && (c->to == TransactionStatus::success || c->to == TransactionStatus::failed))
    out.push_back({c->transaction, Entry::debit, c->to});
  for (const auto& t : transactions_created(d))
    if (t.status == TransactionStatus::success || t.status == TransactionStatus::failed)
      out.push_back({t.id, entry_of(t.kind), t.status});
  for (const FinalizedTransaction& f : out)
    KOBO_ASSERT(!f.id.empty(), "a finalized transaction has its id (webhooks name it)");
  KOBO_ASSERT(out.size() <= 4, "an event finalizes its payout and at most 3 records it creates");
  return out;
}

namespace {
constexpr NameTable<WebhookEventType, kWebhookEventTypes> kWebhookEventNames{{
    {WebhookEventType::account_credit, "account.credit"},
    {WebhookEventType::account_debit, "account.debit"},
    {WebhookEventType::account_debit_failed, "account.debit.failed"},
}};
}  // namespace

std::string_view to_string(WebhookEventType t) { return name_in(kWebhookEventNames, t); }

std::optional<WebhookEventType> webhook_event_type_from_string(std::string_view s) {
  return value_in(kWebhookEventNames, s);
}

std::optional<WebhookEventType> webhook_event_of(const FinalizedTransaction& f) {
  KOBO_ASSERT(f.status == TransactionStatus::success || f.status == TransactionStatus::failed,
              "only a transaction in a final state is announced");
  if (f.entry == Entry::credit)
    return f.status == TransactionStatus::success ? std::optional(WebhookEventType::account_credit)
                                                  : std::nullopt;
  return f.status == TransactionStatus::success ? WebhookEventType::account_debit
                                                : WebhookEventType::account_debit_failed;
}

std::string request_fingerprint(const WalletTransferRequest& r) {
  std::string canonical = "wallet-transfer|";
  append_json_string(canonical, r.source);
  append_json_string(canonical, r.destination);
  canonical += std::to_string(r.amount.value);
  append_json_string(canonical, r.narration);
  if (r.name_enquiry_ref) append_json_string(canonical, *r.name_enquiry_ref);
  std::string fingerprint = sha256_hex(canonical);
  KOBO_ASSERT(fingerprint.size() == 64,
              "a request's fingerprint is a hex SHA-256 (the history index keeps its bytes)");
  return fingerprint;
}

std::string request_fingerprint(const BankTransferRequest& r) {
  std::string canonical = "bank-transfer|";
  append_json_string(canonical, r.source);
  append_json_string(canonical, r.account_number);
  append_json_string(canonical, r.bank_code);
  canonical += std::to_string(r.amount.value);
  append_json_string(canonical, r.narration);
  canonical += r.metadata;
  canonical += r.save_beneficiary ? "|save" : "|";
  std::string fingerprint = sha256_hex(canonical);
  KOBO_ASSERT(fingerprint.size() == 64,
              "a request's fingerprint is a hex SHA-256 (the history index keeps its bytes)");
  return fingerprint;
}

std::string request_fingerprint(const HoldRequest& r) {
  std::string canonical = "hold|";
  append_json_string(canonical, r.source);
  canonical += std::to_string(r.amount.value);
  canonical += r.narration ? "|n" : "|";
  if (r.narration) append_json_string(canonical, *r.narration);
  canonical += r.metadata;
  canonical += '|' + std::to_string(r.expires_in_s);
  std::string fingerprint = sha256_hex(canonical);
  KOBO_ASSERT(fingerprint.size() == 64,
              "a request's fingerprint is a hex SHA-256 (the history index keeps its bytes)");
  return fingerprint;
}

std::string request_fingerprint(const HoldCaptureRequest& r) {
  std::string canonical = "hold-capture|";
  append_json_string(canonical, r.hold);
  append_json_string(canonical, r.destination);
  canonical += r.amount ? std::to_string(r.amount->value) : "remaining";
  canonical += r.narration ? "|n" : "|";
  if (r.narration) append_json_string(canonical, *r.narration);
  canonical += r.final ? "|final" : "|";
  std::string fingerprint = sha256_hex(canonical);
  KOBO_ASSERT(fingerprint.size() == 64,
              "a request's fingerprint is a hex SHA-256 (the history index keeps its bytes)");
  return fingerprint;
}

HoldRequest request_of(const HoldPlaced& e, UnixMs placed_at) {
  KOBO_ASSERT(e.expires_at.ms > placed_at, "a hold expires after it is placed");
  HoldRequest r{e.source.value, e.amount, std::nullopt, e.metadata.text,
                (e.expires_at.ms - placed_at) / 1000};
  if (e.narration) r.narration = *e.narration;
  KOBO_ASSERT(r.expires_in_s >= 0 && r.source == e.source.value,
              "a hold's request is read back from its event");
  return r;
}

HoldCaptureRequest request_of(const HoldCaptured& e) {
  const TransferLegs legs = e.legs();
  KOBO_ASSERT(!e.hold.empty(), "a capture names its hold");
  HoldCaptureRequest r{e.hold.value, legs.destination.account, std::nullopt, std::nullopt,
                       e.final.value_or(false)};
  if (!e.amount_defaulted.value_or(false)) r.amount = legs.amount();
  if (e.narration) r.narration = *e.narration;
  KOBO_ASSERT(!r.amount || r.amount->value > 0, "a capture's stated amount is positive");
  return r;
}

WalletTransferRequest request_of(const WalletTransferSettled& e) {
  const TransferLegs legs = e.legs();
  WalletTransferRequest r{legs.source.account, legs.destination.account, legs.amount(), e.narration,
                          std::nullopt};
  if (e.name_enquiry_ref) r.name_enquiry_ref = *e.name_enquiry_ref;
  KOBO_ASSERT(r.amount.value > 0 && r.source != r.destination,
              "a transfer's legs move money between two wallets");
  return r;
}

BankTransferRequest request_of(const BankTransferInitiated& e) {
  const PayoutLegs legs = e.legs();
  KOBO_ASSERT(legs.amount().value > 0, "a payout pays a positive amount");
  KOBO_ASSERT(is_wallet_account(legs.source.account), "a payout is paid from a wallet");
  return BankTransferRequest{legs.source.account,
                             e.beneficiary.account_number,
                             e.beneficiary.bank_code,
                             legs.amount(),
                             e.narration,
                             e.metadata.text,
                             e.save_beneficiary.value_or(false)};
}

std::string derived_uuid(std::string_view seed) {
  const Sha256 h = sha256(seed);
  UuidBytes b{};
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = h[i];
  b[6] = static_cast<std::uint8_t>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<std::uint8_t>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  std::string uuid = format_uuid(b);
  KOBO_ASSERT(uuid.size() == 36 && uuid[14] == '4', "a derived id has the shape of a uuid v4");
  KOBO_ASSERT(std::string_view("89ab").find(uuid[19]) != std::string_view::npos,
              "a derived id has the RFC 4122 variant");
  return uuid;
}

namespace {

// The uuid of a time-ordered transaction id (`trx-` and a uuid v7), or nullopt.
std::optional<UuidBytes> time_ordered_uuid(std::string_view id) {
  if (!id.starts_with(kTransactionIdPrefix)) return std::nullopt;
  const std::string_view uuid = id.substr(kTransactionIdPrefix.size());
  if (uuid.size() != 36 || uuid[14] != '7') return std::nullopt;
  return parse_uuid(uuid);
}

// A derivation from a time-ordered id XORs its last 10 bytes with the first 10 of
// SHA-256(`label`), whose bits under the version's nibble and the variant are cleared: the
// result is a uuid v7 of the same time, and the derivation is its own inverse. The masks of the
// labels are hashed once each (every record of a transfer derives).
const UuidBytes& mask_of(std::string_view label) {
  static const auto known = [] {
    std::array<std::pair<std::string_view, UuidBytes>, 6> m{
        {{"trx#1", {}}, {"trx#2", {}}, {"ref-", {}}, {"swp-", {}}, {"rev-", {}}, {"fee-", {}}}};
    for (auto& [name, mask] : m) {
      const Sha256 h = sha256(name);
      for (std::size_t i = 6; i < mask.size(); ++i) mask[i] = h[i - 6];
      mask[6] &= 0x0f;  // the version's nibble stays 7
      mask[8] &= 0x3f;  // the variant's bits stay 10
    }
    return m;
  }();
  for (const auto& [name, mask] : known)
    if (name == label) return mask;
  KOBO_ASSERT(false, "a derivation of a known kind: trx#1, trx#2, ref-, swp-, rev-, fee-");
  return known.front().second;
}
UuidBytes apply_mask(UuidBytes b, std::string_view label) {
  const UuidBytes& mask = mask_of(label);
  for (std::size_t i = 6; i < b.size(); ++i) b[i] ^= mask[i];
  KOBO_ASSERT(b[6] >> 4 == 7 && b[8] >> 6 == 2, "a derivation keeps a uuid v7's version and variant");
  return b;
}
std::string_view record_label(std::size_t k) {
  KOBO_ASSERT(k == 1 || k == 2, "a derived record is the 2nd or 3rd of its event");
  return k == 1 ? "trx#1" : "trx#2";
}

}  // namespace

std::optional<TransactionId> first_of_nth(const TransactionId& id, std::size_t k) {
  KOBO_ASSERT(k >= 1 && k < 3, "a derived record is the 2nd or 3rd of its event");
  const auto uuid = time_ordered_uuid(id.value);
  if (!uuid) return std::nullopt;
  return TransactionId(std::string(kTransactionIdPrefix) + format_uuid(apply_mask(*uuid, record_label(k))));
}

std::optional<TransactionId> record_of_derived_reference(std::string_view reference) {
  constexpr std::size_t kPrefix = 4;
  if (reference.size() != kPrefix + 36) return std::nullopt;
  const std::string_view prefix = reference.substr(0, kPrefix);
  if (std::find(kDerivedReferencePrefixes.begin(), kDerivedReferencePrefixes.end(), prefix) ==
      kDerivedReferencePrefixes.end())
    return std::nullopt;
  const auto uuid =
      time_ordered_uuid(std::string(kTransactionIdPrefix) + std::string(reference.substr(kPrefix)));
  if (!uuid) return std::nullopt;
  return TransactionId(std::string(kTransactionIdPrefix) + format_uuid(apply_mask(*uuid, prefix)));
}

std::string object_id_of(std::string_view public_id) {
  std::string id = to_hex(sha256(public_id)).substr(0, 24);
  KOBO_ASSERT(id.size() == 24, "an `_id` is 24 hex digits");
  return id;
}

TransactionId nth_transaction_id(const TransactionId& first, std::size_t k) {
  if (k == 0) return first;
  KOBO_ASSERT(k < 3, "an event creates at most 3 transaction records");
  const auto uuid = time_ordered_uuid(first.value);
  TransactionId id(std::string(kTransactionIdPrefix) +
                   (uuid ? format_uuid(apply_mask(*uuid, record_label(k)))
                         : derived_uuid(first.value + "#" + std::to_string(k))));
  KOBO_ASSERT(id.value.size() == kTransactionIdPrefix.size() + 36 && id != first,
              "a derived transaction id is trx- and a uuid, not the event's own");
  return id;
}

std::string derived_reference(std::string_view prefix, const TransactionId& id) {
  KOBO_ASSERT(prefix.size() == 4 && prefix.back() == '-',
              "a derived reference's prefix is its kind: ref-, rev-, …");
  const auto uuid = time_ordered_uuid(id.value);
  std::string reference = std::string(prefix) + (uuid ? format_uuid(apply_mask(*uuid, prefix))
                                                      : derived_uuid(std::string(prefix) + id.value));
  KOBO_ASSERT(reference.size() == prefix.size() + 36 && reference.starts_with(prefix),
              "a derived reference is its kind and a uuid");
  return reference;
}

std::string link_ref_of(const TransactionId& first) {
  std::string link = derived_uuid("link|" + first.value);
  KOBO_ASSERT(link.size() == 36, "a link ref is a uuid");
  return link;
}

}  // namespace kobo
