#pragma once
// A partition decided and applied the way the writer does it, without a log: each command's
// events are sealed into a hash chain, decoded back (the wire form must round-trip), and
// applied. `log()` is the wire bytes. Shared by the command tests.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "command/bulk.h"
#include "command/decide.h"
#include "events/ledger.h"

namespace kobo::testing {

inline const LedgerConfig kConfig{};
inline constexpr UnixMs kNow = 1'795'000'000'000;

class Partition0 {
 public:
  explicit Partition0(std::uint64_t seed = 1, LedgerConfig config = kConfig)
      : config_(std::move(config)), ids_(seed) {
    state_.partition = Partition(0);
    auto history = History::open({{}, 1});
    EXPECT_TRUE(history.ok());
    history_ = std::move(history).value();
  }

  Decision decide(const Command& c, UnixMs now = kNow) {
    return kobo::decide(state_, *history_, c, config_, now, ids_);
  }

  // decide() drawing its ids from `ids` instead of the harness's seeded source.
  Decision decide_with(const Command& c, IdSource& ids, UnixMs now = kNow) {
    return kobo::decide(state_, *history_, c, config_, now, ids);
  }

  // Decides `c` and appends and applies its events; the sealed events are in `sealed()`.
  Decision run(const Command& c, UnixMs now = kNow) {
    Decision d = decide(c, now);
    place(d, now);
    return d;
  }

  // decide_bulk() (command/bulk.h) of `c`, its events appended and applied as run() does.
  Decision run_bulk(const BulkTransfer& c, UnixMs now = kNow) {
    Decision d = kobo::decide_bulk(state_, *history_, c, config_, now, ids_);
    place(d, now);
    return d;
  }

  void place(const Decision& d, UnixMs now) {
    sealed_.clear();
    const Seq first(next_seq_);
    const auto n = static_cast<std::uint32_t>(d.events.size());
    for (const auto& draft : d.events) {
      Event e;
      e.seq = Seq(next_seq_++);
      e.command_seq = first;
      e.command_size = n;
      e.business = draft.business;
      e.live = draft.live;
      e.time = now;
      e.data = draft.data;
      e.prev_hash = last_hash_;
      std::string wire = seal(e);
      const auto decoded = decode_event(wire);
      EXPECT_TRUE(decoded.ok()) << (decoded.ok() ? "" : decoded.status().message());
      if (decoded.ok()) {
        EXPECT_TRUE(decoded.value().data == e.data) << "the wire form round-trips";
      }
      log_.push_back(std::move(wire));
      last_hash_ = e.hash;
      apply(state_, e);
      history_->note(e);
      sealed_.push_back(std::move(e));
    }
  }

  const std::vector<std::string>& log() const { return log_; }
  const std::vector<Event>& sealed() const { return sealed_; }
  const std::string& last_wire() const { return log_.back(); }

  std::string wallet(const Caller& c, const std::string& name, const std::string& category = "primary") {
    const Decision d = run(CreateWallet{c, name, category, std::nullopt, std::nullopt});
    EXPECT_EQ(d.rejection, Rejection::none) << name;
    return d.id;
  }

  std::string number(const std::string& wallet_id) const {
    return format_account_number(state_.wallets.find(wallet_id)->account_number);
  }

  void fund(const Caller& c, const std::string& wallet_id, std::int64_t amount) {
    const Decision d = run(IncomingCredit{c, number(wallet_id), Kobo(amount), "fund", "S", "0000014579",
                                          "058", "GTB", "000013"});
    ASSERT_EQ(d.rejection, Rejection::none);
  }

  Kobo balance(const std::string& wallet_id) const { return state_.wallets.find(wallet_id)->balance; }
  const PartitionState& state() const { return state_; }
  const History& history() const { return *history_; }
  const LedgerConfig& config() const { return config_; }

 private:
  LedgerConfig config_;
  PartitionState state_;
  std::unique_ptr<History> history_;  // in memory: every fact stays in its tail
  SeededIds ids_;
  std::uint64_t next_seq_ = 1;
  std::string last_hash_{kGenesisHash};
  std::vector<std::string> log_;
  std::vector<Event> sealed_;
};

inline WalletTransfer transfer(const Caller& c, std::string src, std::string dst, std::int64_t amount,
                               std::optional<std::string> ref = std::nullopt, std::string narration = "n") {
  WalletTransfer t;
  t.caller = c;
  t.source = std::move(src);
  t.destination = std::move(dst);
  t.amount = Kobo(amount);
  t.narration = std::move(narration);
  t.reference = std::move(ref);
  return t;
}

inline BankTransfer bank_transfer(const Caller& c, std::string src, std::int64_t amount,
                                  std::optional<std::string> ref = std::nullopt, bool save = false,
                                  std::string metadata = "{}") {
  BankTransfer t;
  t.caller = c;
  t.source = std::move(src);
  t.bank_account_id = "bka-" + c.business + "-0123456784";
  t.account_number = "0123456784";
  t.account_name = "Ada Obi";
  t.bank_code = "044";
  t.bank_name = "Access Bank";
  t.name_enquiry_ref = "ne-1";
  t.amount = Kobo(amount);
  t.narration = "payout";
  t.reference = std::move(ref);
  t.save_beneficiary = save;
  t.metadata = RawJson{std::move(metadata)};
  return t;
}

// The sum of an event's postings: zero for every money event.
inline Kobo postings_sum(const EventData& d) {
  Kobo sum;
  if (const auto* p = postings_of(d))
    for (const Posting& x : *p) sum += x.amount;
  return sum;
}

}  // namespace kobo::testing
