#pragma once
// decide(): the pure decision of one command against one partition's state. It checks the
// command's rules in a fixed order of precedence and either rejects it or returns the events
// that carry it out. It never changes the state; the writer applies the events (state.h).

#include <chrono>
#include <climits>
#include <optional>
#include <string>
#include <vector>

#include "command/commands.h"
#include "command/id_source.h"
#include "command/state.h"
#include "common/time.h"

namespace kobo {

// A bank transfer's fee: the first tier whose `up_to_kobo` covers the amount (VAT included).
struct FeeTier {
  std::int64_t up_to_kobo;
  std::int64_t fee_kobo;
};

struct LedgerConfig {
  std::uint32_t partitions = 6;
  std::string bank_name = "Kobo Sandbox MFB";  // the service's own bank, shown on wallets
  std::string bank_code = "099999";           // its NIBSS code
  std::string nuban_code = "999999";          // its NUBAN institution code
  std::string processor = "kobo";
  int primary_wallets_max = 5;                 // per account and mode
  // CBN NIP tiers: <= N5,000 -> N10.75; <= N50,000 -> N26.88; above -> N53.75.
  std::vector<FeeTier> fee_tiers{{500'000, 1'075}, {5'000'000, 2'688}, {INT64_MAX, 5'375}};
  std::chrono::milliseconds rail_delay{500};   // sandbox rail: processing -> final
};

Kobo transfer_fee(const LedgerConfig& config, Kobo amount);

// An internal command the writer runs at `due` (settlements, rail steps).
struct Scheduled {
  UnixMs due = 0;
  Command command;
};

// An event before the writer gives it a place in the log.
struct EventDraft {
  EventType type;
  std::string business;
  bool live = false;
  nlohmann::json data;
};

// Where in a decision's events its record is: a member of one event's data.
struct EventMember {
  std::size_t event = 0;
  const char* member = "transaction";
};

struct Decision {
  Rejection rejection = Rejection::none;
  std::vector<EventDraft> events;
  nlohmann::json record;     // what the caller is answered with, unless `record_in` says where it is
  // The record is carried by an event (a transaction a Debited or Credited event holds): the
  // writer takes it from the event once sealed, rather than the decision copying the tree.
  std::optional<EventMember> record_in;
  bool replayed = false;     // an idempotent repeat: no events, `transaction` names the original
  std::string transaction;
  std::vector<Scheduled> schedule;  // follow-ups, run once these events are durable
};

// What the payout rail does next with a payout in flight (pending or processing): the sandbox
// rail moves a payout to processing at once, and to success (or failed, when its metadata asks
// for it with sandboxOutcome "failed") `rail_delay` after that.
Scheduled next_rail_step(const std::string& transaction, const PayoutState& payout, Partition partition,
                         const LedgerConfig& config);

// The follow-ups a partition owes after a restart: settlements and rail steps of work in flight.
std::vector<Scheduled> resume_schedule(const PartitionState& state, const LedgerConfig& config);

// Deterministic: every id the decision assigns is drawn from `ids` and the time is `now`, so the
// same state, command, time and id source give the same decision, byte for byte.
Decision decide(const PartitionState& state, const Command& command, const LedgerConfig& config, UnixMs now,
                IdSource& ids);

// The record a decision answers with, wherever it is held.
const nlohmann::json& record_of(const Decision& d);

// The wallet snapshot embedded in transactions (spec 2.6).
nlohmann::json wallet_snapshot(const std::string& public_id, const WalletState& w, const LedgerConfig& config);

}  // namespace kobo
