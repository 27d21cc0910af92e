#include "command/bulk.h"

#include <algorithm>
#include <array>
#include <set>
#include <utility>

#include "common/crypto.h"
#include "common/log.h"
#include "events/ledger.h"

namespace kobo {
namespace {

const std::optional<std::string>& reference_of(const BulkItem& item) {
  KOBO_ASSERT(!item.transfer.valueless_by_exception(), "an item is a transfer");
  return std::visit([](const auto& t) -> const std::optional<std::string>& { return t.reference; },
                    item.transfer);
}

const std::string& source_of(const BulkItem& item) {
  KOBO_ASSERT(!item.transfer.valueless_by_exception(), "an item is a transfer");
  return std::visit([](const auto& t) -> const std::string& { return t.source; }, item.transfer);
}

// What an item changes that the trial must give back. A wallet or bank transfer's events (and a
// bank item's BeneficiarySaved) change only the wallets they name, the system balances, the
// partition's sum, its id counters and its payouts in flight: those are kept, nothing else, so
// that a bulk costs what its items touch however many accounts, collections and holds the
// partition holds. restore() checks that the rest kept its size.
class Checkpoint {
 public:
  Checkpoint(PartitionState& s, const BulkTransfer& c)
      : s_(s),
        counters_{s.wallets_created, s.transactions_created, s.accounts_created, s.account_numbers_issued,
                  s.bank_accounts_created},
        system_balances_(s.system_balances),
        total_(s.total),
        payouts_(s.payouts),
        sizes_(sizes(s)) {
    std::set<std::string_view> named;
    for (const BulkItem& item : c.items) {
      named.insert(source_of(item));
      if (const auto* w = std::get_if<WalletTransfer>(&item.transfer)) named.insert(w->destination);
    }
    for (const std::string_view id : named)
      if (const WalletState* w = s.wallets.find(id)) wallets_.emplace_back(std::string(id), *w);
    KOBO_ASSERT(wallets_.size() <= named.size() && total_.value == 0,
                "a checkpoint at a command boundary keeps each named wallet once");
  }

  void restore() {
    KOBO_ASSERT(sizes(s_) == sizes_, "a bulk transfer's trial changed state its checkpoint does not keep");
    s_.wallets_created = counters_[0];
    s_.transactions_created = counters_[1];
    s_.accounts_created = counters_[2];
    s_.account_numbers_issued = counters_[3];
    s_.bank_accounts_created = counters_[4];
    s_.system_balances = system_balances_;
    s_.total = total_;
    s_.payouts = std::move(payouts_);
    for (const auto& [id, w] : wallets_) {
      WalletState* now = s_.wallets.find(id);
      KOBO_ASSERT(now != nullptr, "a bulk transfer's trial closes no wallet");
      *now = w;
    }
    KOBO_ASSERT(s_.total.value == 0, "a partition restored to a command boundary sums to zero");
  }

 private:
  // The sizes of what no item changes: a sentinel for an item that would.
  static std::array<std::size_t, 8> sizes(const PartitionState& s) {
    KOBO_ASSERT(s.collections.size() == s.collection_numbers.size(),
                "each open collection wallet has its number");
    return {s.businesses.size(),
            s.account_business.size(),
            s.transit_settlement.size(),
            s.collections.size(),
            s.collection_numbers.size(),
            s.primary_wallets.size(),
            s.holds.size(),
            s.held.size()};
  }

  PartitionState& s_;
  std::array<std::uint64_t, 5> counters_;
  decltype(PartitionState::system_balances) system_balances_;
  Kobo total_;
  decltype(PartitionState::payouts) payouts_;  // in flight only: as many as the rail's delay holds
  std::array<std::size_t, 8> sizes_;
  std::vector<std::pair<std::string, WalletState>> wallets_;
};

// The trial of the items: applies an item's events to the state and notes them into the
// history's tail, as the writer will when it places them; undone by the destructor.
class Trial {
 public:
  Trial(PartitionState& s, History& h, const BulkTransfer& c, UnixMs now)
      : s_(s), h_(h), checkpoint_(s, c), now_(now), seq_(h.noted_seq(s.partition)), first_(seq_) {
    KOBO_ASSERT(s_.total.value == 0, "a trial starts at a command boundary");
    h_.begin_trial();
  }
  ~Trial() {
    h_.undo_trial();
    checkpoint_.restore();
    KOBO_ASSERT(h_.noted_seq(s_.partition) == first_, "a trial's notes are undone");
  }
  Trial(const Trial&) = delete;
  Trial& operator=(const Trial&) = delete;

  void apply_draft(const EventDraft& draft) {
    Event e;
    e.partition = s_.partition;
    seq_ = Seq(seq_.value + 1);
    e.seq = seq_;
    e.command_seq = seq_;
    e.business = draft.business;
    e.live = draft.live;
    e.time = now_;
    e.data = draft.data;
    KOBO_ASSERT(validate(e).ok(), "the writer decides only valid events");
    apply(s_, e);
    h_.note(e);
    KOBO_ASSERT(h_.noted_seq(s_.partition) == seq_, "the history notes each draft tried, in order");
  }

 private:
  PartitionState& s_;
  History& h_;
  Checkpoint checkpoint_;
  UnixMs now_;
  Seq seq_;
  Seq first_;  // where the history's notes stood before the trial
};

void name_batch(EventData& data, const BatchId& batch) {
  KOBO_ASSERT(!batch.empty(), "an item names its bulk");
  if (auto* w = std::get_if<WalletTransferSettled>(&data)) w->batch = batch;
  if (auto* b = std::get_if<BankTransferInitiated>(&data)) b->batch = batch;
}

// An atomic bulk draws on the wallets of the caller's account only (a single transfer may draw
// on any wallet of the caller's business). Unknown wallets are decide()'s to reject.
bool draws_on_another_account(const PartitionState& s, const BulkTransfer& c, const BulkItem& item) {
  KOBO_ASSERT(c.atomic, "only an atomic bulk is bound to its account's wallets");
  const WalletState* w = s.wallets.find(source_of(item));
  return w != nullptr && s.wallets.owner(*w).account != c.caller.account;
}

}  // namespace

std::string bulk_fingerprint(const BulkTransfer& c) {
  std::string canonical = c.atomic ? "atomic" : "each";
  for (const BulkItem& item : c.items) {
    const auto& reference = reference_of(item);
    canonical += reference ? "|r:" + *reference : "|-";
    if (const auto* w = std::get_if<WalletTransfer>(&item.transfer)) {
      WalletTransferRequest r{w->source, w->destination, w->amount, w->narration, std::nullopt};
      if (w->name_enquiry_ref) r.name_enquiry_ref = *w->name_enquiry_ref;
      canonical += "|wallet:" + request_fingerprint(r);
    } else {
      const auto& b = std::get<BankTransfer>(item.transfer);
      canonical += "|bank:" +
                   request_fingerprint(BankTransferRequest{b.source, b.account_number, b.bank_code, b.amount,
                                                           b.narration, b.metadata.text, b.save_beneficiary});
    }
  }
  std::string fingerprint = sha256_hex(canonical);
  KOBO_ASSERT(fingerprint.size() == 64, "a bulk's fingerprint is a hex SHA-256 (events/event.h validate())");
  return fingerprint;
}

Decision decide_bulk(PartitionState& s, History& h, const BulkTransfer& c, const LedgerConfig& config,
                     UnixMs now, IdSource& ids) {
  if (c.items.empty() || c.items.size() > kBulkItemsMax) return reject(Rejection::out_of_range);
  std::string fingerprint = bulk_fingerprint(c);
  const auto used = h.bulk_reference(c.caller.account, c.caller.live, c.reference);
  if (!used) {
    log::warn("a bulk transfer could not be decided: the history index cannot be read",
              {{"error", used.status().message()}});
    return reject(Rejection::unavailable);
  }
  if (used.value()) {
    if (used.value()->fingerprint != fingerprint) return reject(Rejection::duplicate_reference);
    return replay_of(used.value()->transaction);
  }

  BulkTransferAccepted bulk;
  bulk.account = AccountId(c.caller.account);
  bulk.atomic = c.atomic;
  bulk.batch = BatchId("blk-" + ids.uuid());
  bulk.fingerprint = std::move(fingerprint);
  bulk.items = c.items.size();
  bulk.reference = c.reference;

  Decision d;
  d.id = bulk.batch.value;
  std::vector<EventDraft> accepted;
  accepted.reserve(c.items.size());
  {
    Trial trial(s, h, c, now);
    for (std::size_t i = 0; i < c.items.size(); ++i) {
      const BulkItem& item = c.items[i];
      Decision one;
      if (item.refused != Rejection::none) {
        one = reject(item.refused);
      } else if (c.atomic && draws_on_another_account(s, c, item)) {
        one = reject(Rejection::source_not_found);
      } else {
        one = std::visit([&](const auto& t) { return decide(s, h, Command(t), config, now, ids); },
                         item.transfer);
        // A reference used before names a transfer made before: an item is a new transfer.
        if (one.replayed) one = reject(Rejection::duplicate_reference);
      }
      if (one.rejection == Rejection::unavailable || one.rejection == Rejection::storage_full)
        return reject(one.rejection);
      if (one.rejection != Rejection::none) {
        if (c.atomic) {
          Decision failed = reject(one.rejection);
          failed.item = static_cast<std::uint32_t>(i);
          return failed;
        }
        bulk.rejected.push_back(
            BulkItemRejected{i, std::string(to_string(one.rejection)), reference_of(item)});
        continue;
      }
      for (EventDraft& draft : one.events) {
        name_batch(draft.data, bulk.batch);
        trial.apply_draft(draft);
        accepted.push_back(std::move(draft));
      }
      for (Scheduled& f : one.schedule) d.schedule.push_back(std::move(f));
    }
  }
  KOBO_ASSERT(s.total.value == 0, "a bulk's trial leaves the partition as it found it");
  d.events.reserve(accepted.size() + 1);
  d.events.push_back({c.caller.business, c.caller.live, std::move(bulk)});
  for (EventDraft& e : accepted) d.events.push_back(std::move(e));
  KOBO_ASSERT(d.events.size() == accepted.size() + 1, "a bulk's event, then its items'");
  return d;
}

}  // namespace kobo
