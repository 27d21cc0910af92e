#include "audit/model.h"

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>
#include <unordered_set>

#include "common/time.h"
#include "common/varint.h"
#include "events/keys.h"
#include "events/ledger.h"
#include "events/partitioner.h"

namespace kobo::audit {

namespace {

// The names an event claims (scratch_index.h), by tag: no later event of the partition may use
// one again. Found by a digest of the names, or by the number.
constexpr char kTransactionTag = 'T';        // a transaction's publicId
constexpr char kTransactionNumberTag = 'I';  // a transaction's integer id
constexpr char kReferenceTag = 'R';          // scope_key(account, mode), a transaction's reference
constexpr char kHoldReferenceTag = 'O';      // scope_key(account, mode), a hold's reference
constexpr char kBulkReferenceTag = 'K';      // scope_key(account, mode), a bulk transfer's reference
constexpr char kAccountNumberTag = 'N';      // a wallet's or collection wallet's account number
constexpr char kWalletNameTag = 'M';         // scope_key(account, mode), a wallet's name
constexpr char kAccountIdTag = 'A';          // an account's integer id
constexpr char kWalletIdTag = 'W';           // a wallet's integer id
constexpr char kBankAccountTag = 'B';        // a saved bank account's bka-…
constexpr char kBankAccountIdTag = 'b';      // a saved bank account's integer id
// The records that have ended, found by a digest of their id.
constexpr char kClosedCollectionTag = 'C';  // a collection wallet paid or expired -> its business
constexpr char kSettledPayoutTag = 'P';     // a payout that succeeded or failed -> Payout::encode()
constexpr char kEndedHoldTag = 'H';         // a hold captured, voided or expired -> mode byte, business

bool is_hex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool is_digits(std::string_view s, std::size_t size) {
  return s.size() == size && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// A transaction's status may only move to a higher rank: pending -> processing -> success | failed.
int rank(TransactionStatus s) {
  switch (s) {
    case TransactionStatus::pending:
      return 0;
    case TransactionStatus::processing:
      return 1;
    case TransactionStatus::success:
    case TransactionStatus::failed:
      return 2;
  }
  return 2;
}

std::string kobo_text(Kobo k) { return std::to_string(k.value) + " kobo"; }

// The seq of a record that does not decode, when its JSON still says one.
std::optional<Seq> peek_seq(std::string_view bytes) {
  const auto j = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("seq") && j["seq"].is_number_unsigned())
    return Seq(j["seq"].get<std::uint64_t>());
  return std::nullopt;
}

// What the audit does with a record the chain refused (events/log_follower.h): a duplicate (a
// retried append) and a fenced writer's event are passed over; an event that decodes and extends
// its partition's chain, even past a gap or a broken link, is adopted as the new head, so that one
// tampered event is reported where it is and the audit goes on; anything else is passed over.
// Both passes of the audit follow it, so they read the same events.
Disposition chain_disposition(const RefusedRecord& r) {
  if (r.verdict == ChainVerdict::duplicate || r.verdict == ChainVerdict::zombie) return Disposition::skip;
  if (r.event == nullptr) return Disposition::skip;
  if (!r.problem.empty() && r.event->partition != r.partition) return Disposition::skip;
  KOBO_ASSERT(r.chain != nullptr, "a refused record comes with its partition's head");
  return r.event->seq.value > r.chain->last_seq().value ? Disposition::adopt : Disposition::skip;
}

// The names event `e` claims, in a fixed order: sink(name, check, describe) for each, where
// describe(first) is the violation's reason should the name have been claimed before, at seq
// `first`. Pure: the audit's first pass writes the claims (LogAuditor::apply), and its second
// describes the reuses the scratch index found (ReuseNamer); both see the same claims in the
// same order. `created` is transactions_created(e.data), and `payout_account` the account of the
// payout a PayoutFailed reverses (its reversal's reference is of that account).
template <typename Sink>
void claims_of(const Event& e, const std::vector<CreatedTransaction>& created,
               std::string_view payout_account, Sink&& sink) {
  // The descriptions capture by reference and build their text only when called: the first pass
  // never calls them, and the second calls them within sink().
  const Partition p = e.partition;
  const auto number = [&](const std::string& what, const std::string& n) {
    if (is_digits(n, 10))
      sink(ScratchKey::digest(kAccountNumberTag, p, n), Check::record,
           [&](Seq) { return what + ": account number " + n + " is already taken"; });
  };
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, BusinessRegistered>) {
          sink(ScratchKey::number(kAccountIdTag, p, x.id), Check::record, [&](Seq) {
            return "business " + e.business + ": account id " + std::to_string(x.id) + " is already taken";
          });
        } else if constexpr (std::is_same_v<T, WalletOpened> || std::is_same_v<T, TransitWalletOpened>) {
          const std::string what = "wallet " + x.wallet.value;
          number(what, x.account_number);
          sink(ScratchKey::number(kWalletIdTag, p, x.id), Check::record,
               [&](Seq) { return what + ": id " + std::to_string(x.id) + " is already taken"; });
          // Transit wallets' names are exempt (API document 2.2).
          if constexpr (std::is_same_v<T, WalletOpened>)
            sink(ScratchKey::digest(kWalletNameTag, p, scope_key(x.account.value, e.live), x.name),
                 Check::record, [&](Seq) {
                   return what + ": name '" + x.name + "' is already taken in its account and mode";
                 });
        } else if constexpr (std::is_same_v<T, CollectionWalletOpened>) {
          number("collection wallet " + x.wallet.value, x.account_number);
        } else if constexpr (std::is_same_v<T, BeneficiarySaved>) {
          const std::string what = "bank account " + x.bank_account.value;
          sink(ScratchKey::number(kBankAccountIdTag, p, x.id), Check::record,
               [&](Seq) { return what + ": id " + std::to_string(x.id) + " is already taken"; });
          sink(ScratchKey::digest(kBankAccountTag, p, x.bank_account.value), Check::record,
               [&](Seq) { return what + ": saved again"; });
        } else if constexpr (std::is_same_v<T, HoldPlaced>) {
          sink(ScratchKey::digest(kHoldReferenceTag, p, scope_key(x.account.value, e.live), x.reference),
               Check::reference, [&](Seq first) {
                 return "hold " + x.hold.value + ": reference '" + x.reference +
                        "' was used by a hold before, at seq " + std::to_string(first.value);
               });
        } else if constexpr (std::is_same_v<T, BulkTransferAccepted>) {
          sink(ScratchKey::digest(kBulkReferenceTag, p, scope_key(x.account.value, e.live), x.reference),
               Check::reference,
               [&](Seq) { return "bulk transfer reference '" + x.reference + "' was used before"; });
        }
      },
      e.data);

  // The transaction records the event creates: ids and references unique.
  std::string account(payout_account);
  std::visit(
      [&](const auto& x) {
        if constexpr (requires { x.account; }) account = x.account.value;
      },
      e.data);
  const std::string scope = scope_key(account, e.live);
  for (const CreatedTransaction& t : created) {
    sink(ScratchKey::digest(kTransactionTag, p, t.id.value), Check::record,
         [&](Seq) { return "transaction " + t.id.value + " is created again"; });
    if (t.number != 0)  // 0 is refused at once (check_records)
      sink(ScratchKey::number(kTransactionNumberTag, p, t.number), Check::record, [&](Seq) {
        return "transaction " + t.id.value + ": id " + std::to_string(t.number) + " is taken or zero";
      });
    sink(ScratchKey::digest(kReferenceTag, p, scope, t.reference), Check::reference, [&](Seq first) {
      return "reference '" + t.reference + "' of " + t.id.value + " was used before, at seq " +
             std::to_string(first.value);
    });
  }
}

}  // namespace

// A payout: in memory until it is settled (succeeds or fails), then in the scratch index.
struct LogAuditor::Payout {
  std::string business, source, account;
  Kobo amount, fee;
  TransactionStatus status = TransactionStatus::pending;

  std::string encode() const {
    std::string out;
    put_length_prefixed(out, business);
    put_length_prefixed(out, source);
    put_length_prefixed(out, account);
    put_signed_varint(out, amount.value);
    put_signed_varint(out, fee.value);
    put_varint(out, static_cast<std::uint64_t>(status));
    return out;
  }
  static Payout decode(std::string_view bytes) {
    VarintReader in(bytes);
    Payout p;
    p.business = std::string(in.length_prefixed());
    p.source = std::string(in.length_prefixed());
    p.account = std::string(in.length_prefixed());
    p.amount = Kobo(in.signed_varint());
    p.fee = Kobo(in.signed_varint());
    const std::uint64_t status = in.varint();
    KOBO_ASSERT(in.ok() && in.done() && status <= static_cast<std::uint64_t>(TransactionStatus::failed),
                "the scratch index holds what Payout::encode() wrote");
    p.status = static_cast<TransactionStatus>(status);
    return p;
  }
};

struct LogAuditor::Model {
  struct Wallet {
    std::string business, account;
    bool live = false;
    bool transit = false;
    std::string settlement;  // a transit wallet's
    Kobo balance;
    Kobo held;              // the remaining amounts of its pending holds: balance - held is never below zero
    std::uint8_t tier = 0;  // its KYC tier; 0: none
    DailyDebits debits;
  };
  // A pending hold: it leaves for the scratch index when it ends.
  struct Hold {
    std::string business, source;
    bool live = false;
    Kobo amount, captured;
    UnixMs expires_at = 0;
  };
  // A collection wallet not yet paid or expired: it leaves for the scratch index when it is.
  struct Collection {
    std::string business, destination;
    bool live = false;
    Kobo amount;
    UnixMs expires_at = 0;
  };
  Partition partition{0};
  Epoch epoch{0};
  // In memory: what is per business, account and wallet, and what is in flight. The past is in
  // the scratch index (the tags above).
  std::unordered_set<std::string> businesses;
  std::unordered_map<std::string, std::string> accounts;    // acc-… -> biz-…
  std::unordered_map<std::string, Wallet> wallets;          // vba-… -> wallet (transit wallets too)
  std::unordered_map<std::string, Collection> collections;  // vba-… of a collection wallet still open
  std::unordered_map<std::string, Kobo> system;             // sys:…
  std::unordered_map<std::string, Payout> payouts;          // trx-… of a payout not yet settled
  TierLimits tier_limits = cbn_tier_limits();               // as the last WriterStarted recorded them
  std::unordered_map<std::string, Hold> holds;              // hld-… of a pending hold
  Kobo total;                                               // the sum of every balance in the partition
  Kobo total_reported;  // the total after the last command: a lasting imbalance is reported once

  // The command being read.
  bool open = false;
  Seq first{0};
  std::uint32_t size = 0, seen = 0;
  Seq last{0};
  std::string business;
  bool live = false;
  Kobo sum;
  // A bulk transfer's command: its id, and how many item events it lists and holds.
  std::string bulk;
  std::uint64_t bulk_items = 0, bulk_items_seen = 0;
};

LogAuditor::LogAuditor(std::uint32_t partitions, AuditReport& report, ScratchIndex& scratch,
                       SignatureAuditor* signatures)
    : partitions_(partitions), report_(report), scratch_(scratch), signatures_(signatures) {
  KOBO_ASSERT(partitions <= ScratchKey::kPartitionsMax, "every partition has scratch keys of its own");
  for (std::uint32_t p = 0; p < partitions; ++p) {
    models_.push_back(std::make_unique<Model>());
    models_.back()->partition = Partition(p);
  }
}

LogAuditor::~LogAuditor() = default;

void LogAuditor::violation(Check check, Partition p, Seq seq, std::string reason) {
  report_.add(Violation{check, p, seq, std::nullopt, {}, std::move(reason)});
}

void LogAuditor::violation(Check check, const Event& e, std::string reason) {
  violation(check, e.partition, e.seq, std::move(reason));
}

// ---- the past, in the scratch index ------------------------------------------------------------

// A collection wallet, open (in memory) or closed (in the scratch index).
bool LogAuditor::collection_exists(Model& m, const std::string& id) {
  return m.collections.contains(id) || closed_collection(m, id).has_value();
}

// The business of a collection wallet that was paid or expired, or nullopt.
std::optional<std::string> LogAuditor::closed_collection(Model& m, const std::string& id) {
  return scratch_.find(ScratchKey::digest(kClosedCollectionTag, m.partition, id));
}

// A collection wallet paid or expired leaves memory for the scratch index.
void LogAuditor::close_collection(Model& m, const std::string& id) {
  const auto c = m.collections.find(id);
  KOBO_ASSERT(c != m.collections.end(), "an open collection wallet closes");
  scratch_.put(ScratchKey::digest(kClosedCollectionTag, m.partition, id), c->second.business);
  m.collections.erase(c);
}

// A payout, in flight (in memory) or settled (in the scratch index), or nullopt.
std::optional<LogAuditor::Payout> LogAuditor::payout(Model& m, const std::string& id) {
  if (const auto p = m.payouts.find(id); p != m.payouts.end()) return p->second;
  const auto settled = scratch_.find(ScratchKey::digest(kSettledPayoutTag, m.partition, id));
  if (!settled) return std::nullopt;
  return Payout::decode(*settled);
}

std::size_t LogAuditor::entries() const {
  std::size_t n = 0;
  for (const auto& m : models_)
    n += m->businesses.size() + m->accounts.size() + m->wallets.size() + m->collections.size() +
         m->system.size() + m->payouts.size() + m->holds.size();
  return n;
}

// ---- the log -----------------------------------------------------------------------------------

Disposition LogAuditor::refused(const RefusedRecord& r) {
  if (signatures_ != nullptr) signatures_->refused(r);
  report_refused(r);
  return chain_disposition(r);
}

// Why the chain refused a record, and where: what chain_disposition() makes of it is reported.
void LogAuditor::report_refused(const RefusedRecord& r) {
  const std::string at =
      "partition " + std::to_string(r.partition.value) + " offset " + std::to_string(r.offset.value);
  switch (r.verdict) {
    case ChainVerdict::duplicate:
      ++report_.duplicates;
      return;
    case ChainVerdict::zombie:
      ++report_.zombies;
      report_.note(at + " seq " + std::to_string(r.event->seq.value) + ": skipped an event of epoch " +
                   std::to_string(r.event->epoch.value) + " from a fenced writer");
      return;
    case ChainVerdict::accept:
    case ChainVerdict::broken:
      break;
  }
  auto chain_violation = [&](std::optional<Seq> seq, std::string reason) {
    report_.add(Violation{Check::chain, r.partition, seq, r.offset, {}, std::move(reason)});
  };
  if (r.event == nullptr) {
    chain_violation(peek_seq(r.bytes), "the record cannot be read: " + r.problem);
    return;
  }
  const Event& e = *r.event;
  const ChainFollower& head = *r.chain;
  const std::string seq = "seq " + std::to_string(e.seq.value);
  if (!r.problem.empty()) {
    chain_violation(e.seq, r.problem == "hash mismatch"
                               ? seq + ": its hash does not match its contents (the event was edited)"
                               : seq + ": " + r.problem);
    if (e.partition != r.partition) return;
  }
  const std::uint64_t expected = head.last_seq().value + 1;
  if (e.seq.value == expected) {
    if (e.prev_hash != head.last_hash()) {
      chain_violation(e.seq, seq + ": prevHash is not the hash of seq " + std::to_string(expected - 1) +
                                 " (an event before it was edited, or this one was inserted or replaced)");
    } else if (r.problem.empty()) {
      report_.add(Violation{Check::epoch,
                            r.partition,
                            e.seq,
                            r.offset,
                            {},
                            e.epoch < head.epoch() ? seq + ": epoch " + std::to_string(e.epoch.value) +
                                                         " is older than its writer's epoch " +
                                                         std::to_string(head.epoch().value)
                                                   : seq + ": WriterStarted does not raise the epoch"});
    }
    return;
  }
  if (e.seq.value > expected) {
    const std::uint64_t missing_last = e.seq.value - 1;
    std::string what = missing_last == expected ? "seq " + std::to_string(expected) + " is missing"
                                                : "seqs " + std::to_string(expected) + ".." +
                                                      std::to_string(missing_last) + " are missing";
    report_.add(Violation{Check::chain,
                          r.partition,
                          Seq(expected),
                          r.offset,
                          {},
                          what + " (" + seq + " follows seq " + std::to_string(expected - 1) + ")"});
    return;
  }
  chain_violation(e.seq, seq + " comes after seq " + std::to_string(expected - 1) +
                             " (out of order, or a second, different event with that seq)");
}

Status LogAuditor::accepted(const Event& e) {
  KOBO_ASSERT(e.partition.value < partitions_, "the follower checks the partition");
  Model& m = *models_[e.partition.value];
  if (signatures_ != nullptr) signatures_->accepted(e);
  begin_command(m, e);
  apply(m, e);
  if (e.last_of_command()) end_command(m, m.seen == m.size);
  // The past could not be read or written: the audit cannot judge what follows.
  return scratch_.status();
}

void LogAuditor::begin_command(Model& m, const Event& e) {
  if (m.open && e.command_seq != m.first) {
    violation(Check::command, m.partition, m.first,
              "the command at seq " + std::to_string(m.first.value) + " ends after " +
                  std::to_string(m.seen) + " of its " + std::to_string(m.size) + " events");
    end_command(m, false);
  }
  if (!m.open) {
    m.open = true;
    m.first = e.command_seq;
    m.size = e.command_size;
    m.seen = 0;
    m.business = e.business;
    m.live = e.live;
    m.sum = Kobo(0);
    if (e.seq != e.command_seq)
      violation(Check::command, e,
                "the first events of its command (from seq " + std::to_string(e.command_seq.value) +
                    ") are missing");
  } else {
    if (e.command_size != m.size)
      violation(Check::command, e, "its commandSize differs from the rest of its command");
    if (e.business != m.business || e.live != m.live)
      violation(Check::command, e, "its business or mode differs from the rest of its command");
  }
  ++m.seen;
  m.last = e.seq;
}

void LogAuditor::end_command(Model& m, bool complete) {
  ++report_.commands;
  if (complete && !m.bulk.empty() && m.bulk_items != m.bulk_items_seen)
    violation(Check::command, m.partition, m.first,
              "bulk transfer " + m.bulk + " accepts " + std::to_string(m.bulk_items) +
                  " items but its command holds " + std::to_string(m.bulk_items_seen));
  m.bulk.clear();
  if (complete && m.sum.value != 0)
    violation(Check::double_entry, m.partition, m.first,
              "the postings of the command at seq " + std::to_string(m.first.value) + " sum to " +
                  kobo_text(m.sum) + ", not zero");
  // Reported when the partition goes out of balance, not again while it stays out.
  if (m.total.value != 0 && m.total_reported.value == 0)
    violation(Check::double_entry, m.partition, m.last,
              "the partition's balances sum to " + kobo_text(m.total) + " after the command at seq " +
                  std::to_string(m.first.value));
  m.total_reported = m.total;
  m.open = false;
}

void LogAuditor::apply(Model& m, const Event& e) {
  if (const auto* w = std::get_if<WriterStarted>(&e.data)) {
    if (!e.business.empty()) violation(Check::record, e, "WriterStarted names a business");
    if (e.command_size != 1) violation(Check::command, e, "WriterStarted is not a command of its own");
    if (w->epoch != e.epoch)
      violation(Check::epoch, e, "WriterStarted's data.epoch differs from its envelope's epoch");
    if (w->tier_limits) m.tier_limits = *w->tier_limits;
    if (e.epoch.value != m.epoch.value + 1)
      violation(Check::epoch, e,
                "WriterStarted moves the epoch from " + std::to_string(m.epoch.value) + " to " +
                    std::to_string(e.epoch.value) + ", not to the next one");
    m.epoch = e.epoch;
    return;
  }
  if (m.epoch.value == 0)
    violation(Check::epoch, e, "an event before any WriterStarted");
  else if (e.epoch != m.epoch)
    violation(Check::epoch, e,
              "epoch " + std::to_string(e.epoch.value) + ", but the partition's writer has epoch " +
                  std::to_string(m.epoch.value));
  // What a cluster's webhooks delivered (docs/webhooks.md, "In a cluster"): partition-level,
  // like WriterStarted, and it moves nothing.
  if (std::holds_alternative<WebhookDeliveriesEnded>(e.data)) {
    if (!e.business.empty()) violation(Check::record, e, "WebhookDeliveriesEnded names a business");
    if (e.command_size != 1)
      violation(Check::command, e, "WebhookDeliveriesEnded is not a command of its own");
    return;
  }
  // A signed checkpoint: partition-level, it moves nothing; its signature is the signature
  // check's (audit/signatures.h).
  if (std::holds_alternative<ChainCheckpointed>(e.data)) {
    if (!e.business.empty()) violation(Check::record, e, "ChainCheckpointed names a business");
    if (e.command_size != 1) violation(Check::command, e, "ChainCheckpointed is not a command of its own");
    return;
  }
  if (e.type() != EventType::business_registered && !m.businesses.contains(e.business))
    violation(Check::record, e, "business '" + e.business + "' does not exist in this partition");
  check_bulk(m, e);
  const std::vector<CreatedTransaction> created = transactions_created(e.data);
  check_records(m, e, created);
  claim_names(m, e, created);
  if (const auto* postings = postings_of(e.data)) {
    check_movement(m, e);
    post(m, e, *postings);
  }
  check_limits(m, e);
  if (status_change(e.data)) change_status(m, e);
}

// A bulk transfer opens its command, and its accepted items are that command's other transfers,
// each naming it; its reference is used once per account and mode.
void LogAuditor::check_bulk(Model& m, const Event& e) {
  if (const auto* x = std::get_if<BulkTransferAccepted>(&e.data)) {
    if (e.seq != e.command_seq) violation(Check::command, e, "a bulk transfer does not open its command");
    if (x->atomic && !x->rejected.empty())
      violation(Check::command, e, "an atomic bulk transfer refuses items");
    m.bulk = x->batch.value;
    m.bulk_items = x->rejected.size() <= x->items ? x->items - x->rejected.size() : 0;
    m.bulk_items_seen = 0;
    return;
  }
  const BatchId* batch = batch_of(e.data);
  const bool transfer = std::holds_alternative<WalletTransferSettled>(e.data) ||
                        std::holds_alternative<BankTransferInitiated>(e.data);
  if (batch != nullptr && batch->value != m.bulk)
    violation(Check::command, e, "names bulk transfer " + batch->value + " outside its command");
  else if (batch == nullptr && transfer && !m.bulk.empty())
    violation(Check::command, e, "a transfer in bulk transfer " + m.bulk + "'s command does not name it");
  if (batch != nullptr && batch->value == m.bulk) ++m.bulk_items_seen;
}

// The records an event opens: ids well formed, owners that exist.
void LogAuditor::check_records(Model& m, const Event& e, const std::vector<CreatedTransaction>& created) {
  const auto owned = [&](const AccountId& account) {
    const auto a = m.accounts.find(account.value);
    return a != m.accounts.end() && a->second == e.business;
  };
  const auto bad = [&](const std::string& what, const std::string& why) {
    violation(Check::record, e, what + ": " + why);
  };
  // (Whether an id, number, name or reference was used before is claims_of()'s.)
  const auto number = [&](const std::string& what, const std::string& n) {
    if (!is_digits(n, 10)) bad(what, "account number '" + n + "' is not 10 digits");
  };
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, BusinessRegistered>) {
          const std::string what = "business " + e.business;
          if (!e.business.starts_with("biz-")) bad(what, "id is not biz-…");
          if (partition_for(e.business, partitions_) != m.partition)
            bad(what, "belongs in partition " + std::to_string(partition_for(e.business, partitions_).value));
          if (!m.businesses.insert(e.business).second) bad(what, "registered again");
          if (!x.account.value.starts_with("acc-"))
            bad(what, "account id " + x.account.value + " is not acc-…");
          if (!is_hex64(x.test_secret_key_hash) || !is_hex64(x.live_secret_key_hash))
            bad(what, "the secret key hashes are not SHA-256 hex");
          if (!m.accounts.emplace(x.account.value, e.business).second)
            bad(what, "account " + x.account.value + " exists");
        } else if constexpr (std::is_same_v<T, AccountUpdated>) {
          if (!owned(x.account))
            bad("account " + x.account.value, "updated, but its business does not have it");
          for (const std::string& type : x.webhook_events.value_or(std::vector<std::string>{}))
            if (!webhook_event_type_from_string(type))
              bad("account " + x.account.value, "subscribes to an unknown webhook event type " + type);
        } else if constexpr (std::is_same_v<T, WebhookSecretRotated>) {
          if (!owned(x.account))
            bad("account " + x.account.value, "webhook secret rotated, but its business does not have it");
        } else if constexpr (std::is_same_v<T, SigningKeySealed>) {
          if (!owned(x.account))
            bad("account " + x.account.value, "signing key sealed, but its business does not have it");
        } else if constexpr (std::is_same_v<T, SecretKeyRolled>) {
          if (!owned(x.account))
            bad("account " + x.account.value, "key rolled, but its business does not have it");
          if (!is_hex64(x.secret_key_hash))
            bad("account " + x.account.value, "a rolled key's hash is not SHA-256 hex");
          if (x.previous_key_expires_at.ms < e.time ||
              x.previous_key_expires_at.ms > e.time + kKeyOverlapSecondsMax * 1000)
            bad("account " + x.account.value, "a rolled key's overlap is outside 0 to 72 hours");
        } else if constexpr (std::is_same_v<T, SecretKeyRevoked>) {
          if (!owned(x.account))
            bad("account " + x.account.value, "key revoked, but its business does not have it");
        } else if constexpr (std::is_same_v<T, WebhooksConfigured>) {
          if (!owned(x.account))
            bad("account " + x.account.value, "webhooks configured, but its business does not have it");
          for (const std::string& type : x.webhook_events.value_or(std::vector<std::string>{}))
            if (!webhook_event_type_from_string(type))
              bad("account " + x.account.value, "subscribes to an unknown webhook event type " + type);
        } else if constexpr (std::is_same_v<T, BusinessSuspended> || std::is_same_v<T, BusinessResumed>) {
          if (!m.businesses.contains(e.business))
            bad("business " + e.business, "suspended or resumed, but never registered");
        } else if constexpr (std::is_same_v<T, WalletOpened> || std::is_same_v<T, TransitWalletOpened>) {
          constexpr bool transit = std::is_same_v<T, TransitWalletOpened>;
          const std::string what = "wallet " + x.wallet.value;
          if (!x.wallet.value.starts_with("vba-")) bad(what, "id is not vba-…");
          if (!owned(x.account))
            bad(what, "account " + x.account.value + " is not an account of its business");
          number(what, x.account_number);
          Model::Wallet w{
              e.business, x.account.value, e.live,  transit,
              {},         Kobo(0),         Kobo(0), static_cast<std::uint8_t>(x.kyc_tier.value_or(0)),
              {}};
          if constexpr (transit) {
            const auto s = m.wallets.find(x.settlement_wallet.value);
            if (s == m.wallets.end() || s->second.business != e.business || s->second.live != e.live ||
                s->second.transit)
              bad(what,
                  "settles to " + x.settlement_wallet.value + ", not a wallet of its business and mode");
            w.settlement = x.settlement_wallet.value;
          }
          if (collection_exists(m, x.wallet.value) || !m.wallets.emplace(x.wallet.value, std::move(w)).second)
            bad(what, "opened again");
        } else if constexpr (std::is_same_v<T, CollectionWalletOpened>) {
          const std::string what = "collection wallet " + x.wallet.value;
          if (!owned(x.account))
            bad(what, "account " + x.account.value + " is not an account of its business");
          number(what, x.account_number);
          if (x.amount.value <= 0) bad(what, "accepts " + kobo_text(x.amount));
          const auto d = m.wallets.find(x.destination.value);
          if (d == m.wallets.end() || d->second.business != e.business || d->second.live != e.live)
            bad(what, "pays into " + x.destination.value + ", not a wallet of its business and mode");
          Model::Collection c{e.business, x.destination.value, e.live, x.amount, x.expires_at.ms};
          if (m.wallets.contains(x.wallet.value) || collection_exists(m, x.wallet.value) ||
              !m.collections.emplace(x.wallet.value, std::move(c)).second)
            bad(what, "opened again");
        } else if constexpr (std::is_same_v<T, CollectionWalletExpired>) {
          const auto c = m.collections.find(x.wallet.value);
          const std::optional<std::string> closed =
              c == m.collections.end() ? closed_collection(m, x.wallet.value) : std::nullopt;
          if (c == m.collections.end() ? closed != e.business : c->second.business != e.business)
            violation(Check::status, e,
                      "expiry of collection wallet " + x.wallet.value + ", which its business does not have");
          else if (closed)
            violation(Check::status, e,
                      "expiry of collection wallet " + x.wallet.value + ", which is paid or expired");
          else if (e.time < c->second.expires_at)
            violation(Check::status, e,
                      "collection wallet " + x.wallet.value + " expires before its expiration");
          else
            close_collection(m, x.wallet.value);
        } else if constexpr (std::is_same_v<T, WalletTierChanged>) {
          const auto w = m.wallets.find(x.wallet.value);
          if (w == m.wallets.end() || w->second.business != e.business || w->second.live != e.live)
            bad("wallet " + x.wallet.value, "its tier changed, but its business and mode do not have it");
          else
            w->second.tier = static_cast<std::uint8_t>(x.kyc_tier.value_or(0));
        } else if constexpr (std::is_same_v<T, HoldPlaced>) {
          place_hold(m, e, x);
        } else if constexpr (std::is_same_v<T, HoldCaptured>) {
          const std::vector<Posting>& p = x.postings;
          change_hold(m, e, x.hold, p.size() == 2 ? p[1].amount : Kobo(0), x.final.value_or(false),
                      p.empty() ? std::string() : p[0].account);
        } else if constexpr (std::is_same_v<T, HoldVoided> || std::is_same_v<T, HoldExpired>) {
          change_hold(m, e, x.hold, Kobo(0), /*ends=*/true, {});
        } else if constexpr (std::is_same_v<T, BeneficiarySaved>) {
          const std::string what = "bank account " + x.bank_account.value;
          if (!x.bank_account.value.starts_with("bka-")) bad(what, "id is not bka-…");
          if (!owned(x.account)) bad(what, "its account is not an account of its business");
        }
      },
      e.data);

  // The transaction records the event creates (their ids' and references' reuse is claims_of()'s).
  for (const CreatedTransaction& t : created) {
    ++report_.transactions;
    if (t.number == 0) violation(Check::record, e, "transaction " + t.id.value + ": id 0 is taken or zero");
  }
}

// Claims every name the event uses (claims_of()): a reuse is found at the end of the log, when
// the scratch index reads the claims in order (finish()).
void LogAuditor::claim_names(Model& m, const Event& e, const std::vector<CreatedTransaction>& created) {
  std::string payout_account;
  if (const auto* f = std::get_if<PayoutFailed>(&e.data))
    if (const auto p = payout(m, f->transaction.value)) payout_account = p->account;
  std::uint16_t ordinal = 0;
  claims_of(e, created, payout_account, [&](const ScratchKey& name, Check, const auto&) {
    KOBO_ASSERT(ordinal < std::numeric_limits<std::uint16_t>::max(), "an event claims a few names");
    scratch_.claim(name, e.seq, ordinal++);
  });
}

// The KYC tier limits (events/limits.h) of the tables the log recorded: no counted debit beyond
// the day's allowance of its wallet's tier, no capped credit above its wallet's balance cap.
void LogAuditor::check_limits(Model& m, const Event& e) {
  if (const auto debit = tier_debit(e.data)) {
    if (const auto w = m.wallets.find(debit->wallet); w != m.wallets.end()) {
      Model::Wallet& wallet = w->second;
      const std::int64_t day = lagos_day(e.time);
      wallet.debits = wallet.debits.plus(day, debit->amount);
      const TierLimit* limit = tier_limit(m.tier_limits, wallet.tier);
      if (limit != nullptr && wallet.debits.debited > limit->daily_debit)
        violation(Check::limits, e,
                  debit->wallet + " debited " + kobo_text(wallet.debits.debited) + " on its day, over tier " +
                      std::to_string(wallet.tier) + "'s " + kobo_text(limit->daily_debit));
    }
  }
  const auto* postings = postings_of(e.data);
  if (postings == nullptr || !credits_capped(e.data)) return;
  for (const Posting& p : *postings) {
    if (p.amount.value <= 0) continue;
    const auto w = m.wallets.find(p.account);
    if (w == m.wallets.end()) continue;
    const TierLimit* limit = tier_limit(m.tier_limits, w->second.tier);
    if (limit != nullptr && limit->max_balance && p.balance > *limit->max_balance)
      violation(Check::limits, e,
                p.account + " credited to " + kobo_text(p.balance) + ", over tier " +
                    std::to_string(w->second.tier) + "'s cap of " + kobo_text(*limit->max_balance));
  }
}

// A hold's placement: on a wallet of its business and mode, of a positive amount, its reference
// new among the account's holds, and no more than the wallet has available.
void LogAuditor::place_hold(Model& m, const Event& e, const HoldPlaced& x) {
  const std::string what = "hold " + x.hold.value;
  if (!x.hold.value.starts_with("hld-")) violation(Check::record, e, what + ": id is not hld-…");
  const auto a = m.accounts.find(x.account.value);
  if (a == m.accounts.end() || a->second != e.business)
    violation(Check::record, e, what + ": its account is not an account of its business");
  const auto w = m.wallets.find(x.source.value);
  if (w == m.wallets.end() || w->second.business != e.business || w->second.live != e.live) {
    violation(Check::hold, e, what + " is on " + x.source.value + ", not a wallet of its business and mode");
    return;
  }
  if (x.amount.value <= 0) violation(Check::hold, e, what + " reserves " + kobo_text(x.amount));
  if (w->second.balance - w->second.held < x.amount)
    violation(Check::hold, e,
              what + " reserves " + kobo_text(x.amount) + " of " + x.source.value + ", which has " +
                  kobo_text(w->second.balance - w->second.held) + " available");
  w->second.held += x.amount;
  if (scratch_.find(ScratchKey::digest(kEndedHoldTag, m.partition, x.hold.value)) ||
      !m.holds
           .emplace(x.hold.value,
                    Model::Hold{e.business, x.source.value, e.live, x.amount, Kobo(0), x.expires_at.ms})
           .second)
    violation(Check::record, e, what + " is placed again");
}

// A capture of `captured` (from wallet `from`), or an end (void, expiry, a final capture) of a
// hold: only while it is pending and before its expiresAt (an expiry at or after it), never above
// what it has left. What it releases leaves the source's held amount before the capture's
// postings move its balance.
void LogAuditor::change_hold(Model& m, const Event& e, const HoldId& id, Kobo captured, bool ends,
                             const std::string& from) {
  const std::string what = "hold " + id.value;
  const ScratchKey ended_key = ScratchKey::digest(kEndedHoldTag, m.partition, id.value);
  const auto h = m.holds.find(id.value);
  if (h == m.holds.end()) {
    // An ended hold is in the scratch index: its mode byte, then its business.
    const auto ended = scratch_.find(ended_key);
    if (!ended || ended->substr(1) != e.business || (ended->front() == 'l') != e.live)
      violation(Check::hold, e,
                std::string(to_string(e.type())) + " of " + what + ", which its business does not have");
    else
      violation(Check::hold, e, std::string(to_string(e.type())) + " of " + what + ", which has ended");
    return;
  }
  if (h->second.business != e.business || h->second.live != e.live) {
    violation(Check::hold, e,
              std::string(to_string(e.type())) + " of " + what + ", which its business does not have");
    return;
  }
  Model::Hold& hold = h->second;
  const bool expiry = e.type() == EventType::hold_expired;
  if (expiry ? e.time < hold.expires_at : e.time >= hold.expires_at)
    violation(Check::hold, e, what + (expiry ? " expires before" : " changes after") + " its expiresAt");
  if (e.type() == EventType::hold_captured) {
    if (from != hold.source)
      violation(Check::hold, e, what + " is captured from " + from + ", not its source");
    if (captured.value <= 0 || captured > hold.amount - hold.captured)
      violation(Check::hold, e,
                what + ": a capture of " + kobo_text(captured) + " takes its captures above its amount " +
                    kobo_text(hold.amount) + " (" + kobo_text(hold.captured) + " captured before)");
  }
  hold.captured += captured;
  Kobo released = captured;
  const bool ended = ends || hold.captured >= hold.amount;
  if (ended) released += hold.amount - hold.captured;
  if (const auto w = m.wallets.find(hold.source); w != m.wallets.end()) w->second.held -= released;
  if (ended) {
    // An ended hold leaves memory for the scratch index.
    scratch_.put(ended_key, (hold.live ? "l" : "t") + hold.business);
    m.holds.erase(h);
  }
}

// The postings of one movement of money against what that movement is (docs/architecture.md section
// 4, "Double entry"). Read by position here, and not through events/legs.h as every other reader
// does, on purpose: the audit must not trust the writer's own reading of an event, so a fault in
// the legs (a swapped suspense and fee, say) cannot hide itself from the check that should find it.
void LogAuditor::check_movement(Model& m, const Event& e) {
  const std::vector<Posting>& postings = *postings_of(e.data);
  const auto wrong = [&](const std::string& why) {
    violation(Check::transfer, e, std::string(to_string(e.type())) + ": " + why);
  };
  // The posting at `i` is to `account` (a system account) or to a wallet of the event's
  // business and mode, and moves money the way `sign` says.
  const auto at = [&](std::size_t i) -> const Posting* {
    return i < postings.size() ? &postings[i] : nullptr;
  };
  const auto is_system = [&](std::size_t i, SystemAccount a) {
    return at(i) && at(i)->account == account_name(a);
  };
  const auto own_wallet = [&](std::size_t i) -> const Model::Wallet* {
    if (!at(i)) return nullptr;
    const auto w = m.wallets.find(at(i)->account);
    if (w == m.wallets.end() || w->second.business != e.business || w->second.live != e.live) return nullptr;
    return &w->second;
  };
  std::size_t expected = 0;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, WalletTransferSettled> || std::is_same_v<T, HoldCaptured>) {
          expected = 2;
          if (!own_wallet(0) || !own_wallet(1))
            wrong("a posting is not to a wallet of its business and mode");
          else if (postings[0].account == postings[1].account)
            wrong("the source is the destination");
          else if (postings[0].amount.value >= 0 || postings[1].amount != -postings[0].amount)
            wrong("the source is not debited what the destination is credited");
        } else if constexpr (std::is_same_v<T, BankTransferInitiated>) {
          expected = 3;
          if (!own_wallet(0) || !is_system(1, SystemAccount::payout_suspense) ||
              !is_system(2, SystemAccount::fees))
            wrong("the postings are not [source wallet, sys:payout-suspense, sys:fees]");
          else if (postings[1].amount.value <= 0 || postings[2].amount.value <= 0 ||
                   postings[0].amount != -(postings[1].amount + postings[2].amount))
            wrong("the source is not debited the amount and the fee that suspense and fees are credited");
          else if (!payout(m, x.transaction.value))  // one created again is a record violation
            m.payouts.emplace(x.transaction.value,
                              Payout{e.business, postings[0].account, x.account.value, postings[1].amount,
                                     postings[2].amount, TransactionStatus::pending});
        } else if constexpr (std::is_same_v<T, PayoutSucceeded> || std::is_same_v<T, PayoutFailed>) {
          constexpr bool failed = std::is_same_v<T, PayoutFailed>;
          expected = failed ? 3 : 2;
          const auto found = payout(m, x.transaction.value);
          if (!found) return;  // change_status reports it
          const Payout& paid = *found;
          const bool suspense =
              is_system(0, SystemAccount::payout_suspense) && postings[0].amount == -paid.amount;
          if constexpr (failed) {
            if (!suspense || !is_system(1, SystemAccount::fees) || postings[1].amount != -paid.fee ||
                !at(2) || postings[2].account != paid.source || postings[2].amount != paid.amount + paid.fee)
              wrong("the reversal of " + x.transaction.value +
                    " does not give its amount and fee back to its source");
          } else {
            if (!suspense || !is_system(1, SystemAccount::outbound_settlement) ||
                postings[1].amount != paid.amount)
              wrong(x.transaction.value + " does not move its amount from suspense to outbound settlement");
          }
        } else if constexpr (std::is_same_v<T, IncomingCreditReceived>) {
          const Model::Wallet* credited = own_wallet(1);
          expected = credited != nullptr && credited->transit ? 4 : 2;
          if (!is_system(0, SystemAccount::inbound_settlement) || credited == nullptr)
            wrong("the postings are not [sys:inbound-settlement, a wallet of its business and mode]");
          else if (postings[0].amount.value >= 0 || postings[1].amount != -postings[0].amount)
            wrong("the wallet is not credited what inbound settlement pays");
          else if (credited->transit &&
                   (!at(3) || postings[2].account != postings[1].account ||
                    postings[2].amount != -postings[1].amount ||
                    postings[3].account != credited->settlement || postings[3].amount != postings[1].amount))
            wrong("transit wallet " + postings[1].account +
                  " does not sweep what it received to its settlement wallet");
          if (x.collection) {
            const std::string& id = x.collection->value;
            const auto c = m.collections.find(id);
            const std::optional<std::string> closed =
                c == m.collections.end() ? closed_collection(m, id) : std::nullopt;
            if (c == m.collections.end() ? closed != e.business : c->second.business != e.business)
              wrong("pays collection wallet " + id + ", which its business does not have");
            else if (closed || e.time >= c->second.expires_at)
              violation(Check::status, e, "collection wallet " + id + " is paid when paid or expired");
            else if (at(1) &&
                     (postings[1].account != c->second.destination || postings[1].amount != c->second.amount))
              wrong("collection wallet " + id + " pays another amount or wallet than it was opened for");
            if (c != m.collections.end()) close_collection(m, id);
          }
        }
      },
      e.data);
  if (postings.size() != expected)
    wrong(std::to_string(postings.size()) + " postings, not " + std::to_string(expected));
}

// Moves every balance the postings name with the one posting rule.
void LogAuditor::post(Model& m, const Event& e, const std::vector<Posting>& postings) {
  Kobo sum;
  for (const Posting& p : postings) {
    if (p.amount.value == 0) violation(Check::double_entry, e, "a posting of 0 kobo to " + p.account);
    const auto total = checked_add(sum, p.amount);
    if (total) sum = *total;
    Kobo* balance = nullptr;
    if (is_wallet_account(p.account)) {
      const auto w = m.wallets.find(p.account);
      if (w == m.wallets.end()) {
        violation(Check::record, e, "a posting to " + p.account + ", which is no wallet of this partition");
        continue;
      }
      balance = &w->second.balance;
    } else if (system_account_from_name(p.account)) {
      balance = &m.system[p.account];
    } else {
      violation(Check::record, e, "a posting to " + p.account + ", which is no ledger account");
      continue;
    }
    const PostingResult r = kobo::post(*balance, p);
    switch (r.fault) {
      case PostingFault::none:
        break;
      case PostingFault::negative_wallet:
        violation(Check::negative, e, "wallet " + p.account + " goes below zero, to " + kobo_text(r.balance));
        break;
      case PostingFault::balance_disagrees:
        violation(Check::balance, e,
                  p.account + ": the stated balance " + kobo_text(p.balance) + " is not " +
                      kobo_text(*balance) + " plus " + kobo_text(p.amount));
        break;
      case PostingFault::overflow:
      case PostingFault::unknown_account:
        violation(Check::balance, e, p.account + ": " + std::string(to_string(r.fault)));
        break;
    }
    // The log's stated balance is taken on, so one tampered event is reported where it is.
    m.total = checked_add(checked_sub(m.total, *balance).value_or(m.total), p.balance).value_or(m.total);
    *balance = p.balance;
    if (is_wallet_account(p.account) && p.amount.value < 0 && r.fault == PostingFault::none) {
      const Model::Wallet& w = m.wallets.at(p.account);
      if (w.balance < w.held)
        violation(Check::hold, e,
                  "wallet " + p.account + " is debited below what its holds reserve: available " +
                      kobo_text(w.balance - w.held));
    }
  }
  m.sum = checked_add(m.sum, sum).value_or(m.sum);
  if (sum.value != 0)
    violation(Check::double_entry, e, "its postings sum to " + kobo_text(sum) + ", not zero");
}

// A payout's status moves forward only: pending -> processing -> success | failed.
void LogAuditor::change_status(Model& m, const Event& e) {
  const StatusChange c = *status_change(e.data);
  const std::string& id = c.transaction.value;
  const auto in_flight = m.payouts.find(id);
  std::optional<Payout> found = payout(m, id);
  if (!found) {
    violation(Check::status, e, "status change of " + id + ", which is no payout of this partition");
    return;
  }
  Payout& p = *found;
  if (p.business != e.business)
    violation(Check::record, e, "status change of " + id + " of another business");
  if (p.status != c.from || rank(c.to) <= rank(p.status))
    violation(Check::status, e,
              "the status of " + id + " moves from " + std::string(to_string(p.status)) + " to " +
                  std::string(to_string(c.to)));
  p.status = c.to;
  if (in_flight != m.payouts.end() && rank(p.status) < rank(TransactionStatus::success)) {
    in_flight->second.status = p.status;
    return;
  }
  // A settled payout leaves memory for the scratch index, where a later change finds it.
  scratch_.put(ScratchKey::digest(kSettledPayoutTag, m.partition, id), p.encode());
  if (in_flight != m.payouts.end()) m.payouts.erase(in_flight);
}

// Totals over partitions are the report's, not the ledger's: a sum beyond the range of kobo
// (only ever seen with test amounts near the limit) is noted and left at the last sum that fit.
void LogAuditor::sum_into(Kobo& total, Kobo amount, std::string_view what) {
  if (const auto sum = checked_add(total, amount))
    total = *sum;
  else
    report_.note("the total of " + std::string(what) + " over partitions is beyond the range of kobo");
}

Status LogAuditor::finish() {
  if (signatures_ != nullptr) signatures_->finish();
  for (auto& mp : models_) {
    Model& m = *mp;
    if (m.open) {
      violation(Check::command, m.partition, m.first,
                "the log ends inside the command at seq " + std::to_string(m.first.value) + " (" +
                    std::to_string(m.seen) + " of its " + std::to_string(m.size) + " events)");
      end_command(m, false);
    }
    report_.last_seqs.push_back(m.last);
    report_.businesses += m.businesses.size();
    report_.accounts += m.accounts.size();
    report_.wallets += m.wallets.size();
    for (const auto& [id, w] : m.wallets)
      sum_into(w.live ? report_.wallets_live : report_.wallets_test, w.balance,
               w.live ? "wallets (live)" : "wallets (test)");
    for (const auto& [account, balance] : m.system)
      if (account.starts_with("sys:")) sum_into(report_.system[account], balance, account);
  }
  // The names used again, found in one ordered pass over the claims. The first of them, by
  // partition and seq, as many as the report still lists, are described by a second read of the
  // log (ReuseNamer); the rest are counted.
  const std::size_t listed_max = AuditReport::kViolationsListedMax -
                                 std::min(report_.violations.size(), AuditReport::kViolationsListedMax);
  const auto earlier = [](const Reuse& a, const Reuse& b) {
    return std::tuple(a.partition.value, a.seq.value, a.ordinal) <
           std::tuple(b.partition.value, b.seq.value, b.ordinal);
  };
  std::uint64_t count = 0;
  reuses_.clear();
  if (auto s = scratch_.reuses([&](const Reuse& r) {
        ++count;
        if (listed_max == 0) return;
        reuses_.push_back(r);  // a heap whose top is the latest kept
        std::push_heap(reuses_.begin(), reuses_.end(), earlier);
        if (reuses_.size() > listed_max) {
          std::pop_heap(reuses_.begin(), reuses_.end(), earlier);
          reuses_.pop_back();
        }
      });
      !s)
    return s;
  std::sort_heap(reuses_.begin(), reuses_.end(), earlier);
  KOBO_ASSERT(reuses_.size() <= listed_max && reuses_.size() <= count,
              "the reuses listed are some of those found");
  report_.violation_count += count - reuses_.size();
  return {};
}

// ---- the second pass -----------------------------------------------------------------------------

ReuseNamer::ReuseNamer(const std::vector<Reuse>& reuses, AuditReport& report) : report_(report) {
  for (const Reuse& r : reuses) wanted_[{r.partition.value, r.seq.value}].push_back(r);
  KOBO_ASSERT(wanted_.size() <= reuses.size(), "an event per reuse at most");
}

Disposition ReuseNamer::refused(const RefusedRecord& r) { return chain_disposition(r); }

Status ReuseNamer::accepted(const Event& e) {
  const auto it = wanted_.find({e.partition.value, e.seq.value});
  if (it == wanted_.end()) return {};
  std::uint16_t ordinal = 0;
  claims_of(e, transactions_created(e.data), {},
            [&](const ScratchKey& name, Check check, const auto& describe) {
              for (const Reuse& r : it->second)
                if (r.ordinal == ordinal && r.tag == name.tag())
                  report_.add(Violation{check, e.partition, e.seq, std::nullopt, {}, describe(r.first)});
              ++ordinal;
            });
  // Each reuse is the claim of its ordinal, of its kind: the event the first pass claimed it for.
  for (const Reuse& r : it->second)
    KOBO_ASSERT(r.ordinal < ordinal, "the second pass reads the event the first pass claimed for");
  wanted_.erase(it);
  return {};
}

void ReuseNamer::finish() {
  // An event the first pass claimed for and the second did not read again: the log changed
  // between the two reads.
  for (const auto& [at, reuses] : wanted_)
    for (const Reuse& r : reuses)
      report_.add(Violation{Check::record,
                            r.partition,
                            r.seq,
                            std::nullopt,
                            {},
                            "uses a name (of kind '" + std::string(1, r.tag) + "') used before, at seq " +
                                std::to_string(r.first.value) + "; the log changed while it was audited"});
  wanted_.clear();
}

}  // namespace kobo::audit
