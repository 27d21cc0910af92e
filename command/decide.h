#pragma once
// decide(): the pure decision of one command against one partition's state. It checks the
// command's rules in a fixed order of precedence and either rejects it or returns the events
// that carry it out. It never changes the state; the writer applies the events (state.h).

#include <string>
#include <vector>

#include "command/commands.h"
#include "command/state.h"
#include "common/time.h"

namespace kobo {

struct LedgerConfig {
  std::uint32_t partitions = 6;
  std::string bank_name = "Kobo Sandbox MFB";  // the service's own bank, shown on wallets
  std::string bank_code = "099999";           // its NIBSS code
  std::string nuban_code = "999999";          // its NUBAN institution code
  std::string processor = "kobo";
  int primary_wallets_max = 5;                 // per account and mode
};

// An event before the writer gives it a place in the log.
struct EventDraft {
  EventType type;
  std::string business;
  bool live = false;
  nlohmann::json data;
};

struct Decision {
  Rejection rejection = Rejection::none;
  std::vector<EventDraft> events;
  nlohmann::json record;     // what the caller is answered with
  bool replayed = false;     // an idempotent repeat: no events, `transaction` names the original
  std::string transaction;
};

Decision decide(const PartitionState& state, const Command& command, const LedgerConfig& config, UnixMs now);

// The wallet snapshot embedded in transactions (spec 2.6).
nlohmann::json wallet_snapshot(const std::string& public_id, const WalletState& w, const LedgerConfig& config);

}  // namespace kobo
