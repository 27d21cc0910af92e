#pragma once
// decide(): the pure decision of one command against one partition's state. It checks the
// command's rules in a fixed order of precedence and either rejects it or returns the events
// that carry it out: ledger facts (events/event.h), nothing the projection can render. It never
// changes the state; the writer applies the events (state.h).

#include <chrono>
#include <climits>
#include <optional>
#include <string>
#include <vector>

#include "command/commands.h"
#include "command/history.h"
#include "command/id_source.h"
#include "command/state.h"
#include "common/time.h"
#include "events/event.h"

namespace kobo {

// A bank transfer's fee: the first tier whose `up_to_kobo` covers the amount (VAT included).
// Fees are positive: a posting of 0 kobo is not a valid posting (events/event.h validate()).
struct FeeTier {
  std::int64_t up_to_kobo;
  std::int64_t fee_kobo;
};

struct LedgerConfig {
  std::uint32_t partitions = 6;
  std::string bank_name = "Kobo Sandbox MFB";  // the service's own bank, recorded on the wallets it opens
  std::string bank_code = "099999";            // its NIBSS code
  std::string nuban_code = "999999";           // its NUBAN institution code
  int primary_wallets_max = 5;                 // per account and mode
  // CBN NIP tiers: <= N5,000 -> N10.75; <= N50,000 -> N26.88; above -> N53.75.
  std::vector<FeeTier> fee_tiers{{500'000, 1'075}, {5'000'000, 2'688}, {INT64_MAX, 5'375}};
  std::chrono::milliseconds rail_delay{500};  // sandbox rail: processing -> final
  // KYC tier limits (events/limits.h): recorded in the log by WriterStarted, decided with from there.
  TierLimits tier_limits = cbn_tier_limits();
};

Kobo transfer_fee(const LedgerConfig& config, Kobo amount);

// An internal command the writer runs at `due` (payout rail steps, collection expiries).
struct Scheduled {
  UnixMs due = 0;
  Command command;
};

// An event before the writer gives it a place in the log. Its type is its data's alternative.
struct EventDraft {
  std::string business;
  bool live = false;
  EventData data;
};

struct Decision {
  Rejection rejection = Rejection::none;
  std::vector<EventDraft> events;
  bool replayed = false;  // an idempotent repeat: no events, `id` names the original
  // The publicId of the record the command produced, or for a replay the original's: the
  // wallet (CreateWallet, CreateTransitWallet), the collection wallet, the debit transaction
  // (WalletTransfer, BankTransfer), the incoming credit's transaction, the bank account
  // (AddBankAccount), the account (CreateBusiness, UpdateAccount), the payout (AdvancePayout),
  // the hold (PlaceHold, CaptureHold, VoidHold, ExpireHold).
  std::string id;
  std::vector<Scheduled> schedule;    // follow-ups, run once these events are durable
  std::optional<std::uint32_t> item;  // a rejected atomic bulk transfer: the item rejected
};

// A decision that rejects the command for `r`: it appends and schedules nothing.
Decision reject(Rejection r);
// An idempotent repeat of the command whose record is `id`: it appends and schedules nothing.
Decision replay_of(std::string id);

// What the payout rail does next with a payout in flight (pending or processing): the sandbox
// rail moves a test payout to processing at once, and to success (or failed, when its metadata
// asks for it with sandboxOutcome "failed") `rail_delay` after that. Live payouts are not the
// sandbox's: they stay pending until a real rail takes them.
Scheduled next_rail_step(const std::string& transaction, const PayoutState& payout, Partition partition,
                         const LedgerConfig& config);

// The follow-ups a partition owes after a restart: rail steps of test payouts in flight, the
// expiries of open collection wallets and of pending holds. Ordered by what the state holds, not
// by its hash maps' history: by due time, then payouts, collections, holds, each by publicId. So a writer
// started from a snapshot takes follow-ups due at the same time in the order a whole replay does.
std::vector<Scheduled> resume_schedule(const PartitionState& state, const LedgerConfig& config);

// A bulk transfer is decided by decide_bulk() (command/bulk.h), which calls decide() per item;
// decide() asserts it is not given one.
// `history` answers what was used before (references, bank accounts, closed collection wallets);
// a command it cannot answer for (an I/O error) is rejected `unavailable`, never decided blind.
// Deterministic: the only ids the decision draws (new wallets' and transactions' uuids) come
// from `ids` and the only time is `now`, so the same state, command, time and id source give
// the same decision, byte for byte. Amounts are checked positive and every sum is checked for
// overflow: such a command is rejected `out_of_range`, never applied.
[[nodiscard]] Decision decide(const PartitionState& state, const History& history, const Command& command,
                              const LedgerConfig& config, UnixMs now, IdSource& ids);

}  // namespace kobo
