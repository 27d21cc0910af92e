#pragma once
// Hand-made logs for the audit's rules (audit_test.cc, audit_memory_test.cc): a Forge appends
// hand-written events, sealed and chained, to partition 0 of a one-partition MemoryLog, so that
// the auditor must judge their content, not just their hashes; opening() writes a business with
// its wallets, and the helpers below the events a rule is about.
//
// Thread safety: none; one test thread.

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/crypto.h"
#include "events/event.h"
#include "events/memory_log.h"

namespace kobo::audit::forge {

// Appends hand-written events to partition 0 of a one-partition MemoryLog, sealed and chained:
// the auditor must judge content, not just hashes.
class Forge {
 public:
  explicit Forge(MemoryLog& log) : log_(log) {}

  struct Draft {
    Draft(EventData d, std::optional<Epoch> e = std::nullopt) : data(std::move(d)), epoch(e) {}
    EventData data;
    std::optional<Epoch> epoch;  // default: the current writer's
  };

  void writer_started(std::optional<TierLimits> limits = std::nullopt) {
    epoch_ = Epoch(epoch_.value + 1);
    append({{WriterStarted{epoch_, std::move(limits)}, epoch_}}, "");
  }

  // One command; returns the seq of its first event.
  std::uint64_t command(const std::vector<Draft>& drafts, const std::string& business = kBusiness,
                        std::optional<std::uint32_t> size = std::nullopt) {
    return append(drafts, business, size);
  }
  // A record as it is, chained or not.
  void raw(std::string bytes) {
    const EncodedEvent e{Partition(0), Seq(++seq_), EventType::writer_started, "", 0, std::move(bytes)};
    EXPECT_TRUE(log_.append(std::span(&e, 1)).ok());
  }

  static constexpr const char* kBusiness = "biz-00000000-0000-4000-8000-000000000001";
  static constexpr const char* kAccount = "acc-00000000-0000-4000-8000-000000000001";
  static constexpr UnixMs kTime = 1'790'000'000'000;

 private:
  std::uint64_t append(const std::vector<Draft>& drafts, const std::string& business,
                       std::optional<std::uint32_t> size = std::nullopt) {
    const std::uint64_t first = seq_ + 1;
    std::vector<EncodedEvent> batch;
    for (const Draft& d : drafts) {
      Event e;
      e.partition = Partition(0);
      e.seq = Seq(++seq_);
      e.epoch = d.epoch.value_or(epoch_);
      e.command_seq = Seq(first);
      e.command_size = size.value_or(static_cast<std::uint32_t>(drafts.size()));
      e.business = business;
      e.time = kTime;
      e.data = d.data;
      e.prev_hash = hash_;
      const std::string bytes = seal_unvalidated(e);  // a row may break what validate() checks
      hash_ = e.hash;
      batch.push_back(EncodedEvent{e.partition, e.seq, e.type(), business, e.time, bytes});
    }
    EXPECT_TRUE(log_.append(batch).ok());
    return first;
  }

  MemoryLog& log_;
  std::uint64_t seq_ = 0;
  std::string hash_{kGenesisHash};
  Epoch epoch_{0};
};

inline const std::string kA = "vba-00000000-0000-4000-8000-00000000000a";
inline const std::string kB = "vba-00000000-0000-4000-8000-00000000000b";
inline const std::string kT = "vba-00000000-0000-4000-8000-00000000000c";  // transit, sweeping to B
inline const std::string kC = "vba-00000000-0000-4000-8000-00000000000d";  // collection of 5,000 into A
inline const std::string kInbound = "sys:inbound-settlement";
inline const std::string kSuspense = "sys:payout-suspense";
inline const std::string kFees = "sys:fees";
inline std::uint64_t next_id = 1000;

inline WalletOpened wallet(const std::string& id, std::uint64_t number, const std::string& account_number,
                           const std::string& name) {
  WalletOpened w;
  w.account = AccountId(Forge::kAccount);
  w.account_number = account_number;
  w.bank_code = "099999";
  w.bank_name = "Kobo Sandbox MFB";
  w.id = number;
  w.name = name;
  w.wallet = WalletId(id);
  return w;
}

// A business with wallets A and B, a transit wallet T sweeping to B, a collection wallet C of
// ₦50 into A, and A funded with ₦1,000 from another bank: seqs 1..7.
inline void opening(Forge& f) {
  f.writer_started();
  BusinessRegistered b;
  b.account = AccountId(Forge::kAccount);
  b.account_name = "Default";
  b.id = 1;
  b.live_secret_key_hash = sha256_hex("l");
  b.test_secret_key_hash = sha256_hex("t");
  b.name = "Test";
  f.command({{b}});
  f.command({{wallet(kA, 1, "0000000011", "A")}});
  f.command({{wallet(kB, 2, "0000000022", "B")}});
  TransitWalletOpened t;
  t.account = AccountId(Forge::kAccount);
  t.account_number = "0000000033";
  t.id = 3;
  t.name = "T";
  t.settlement_wallet = WalletId(kB);
  t.wallet = WalletId(kT);
  f.command({{t}});
  CollectionWalletOpened c;
  c.account = AccountId(Forge::kAccount);
  c.account_number = "0000000044";
  c.amount = Kobo(5'000);
  c.destination = WalletId(kA);
  c.expires_at = Timestamp{Forge::kTime + 60'000};
  c.id = 4;
  c.name = "C";
  c.wallet = WalletId(kC);
  f.command({{c}});
  IncomingCreditReceived in;
  in.account = AccountId(Forge::kAccount);
  in.ids = {1};
  in.narration = "funding";
  in.postings = {{kInbound, Kobo(-100'000), Kobo(-100'000)}, {kA, Kobo(100'000), Kobo(100'000)}};
  in.transaction = TransactionId("trx-fund");
  f.command({{in}});
}

inline IncomingCreditReceived incoming(std::vector<Posting> postings,
                                       std::optional<std::string> collection = std::nullopt) {
  IncomingCreditReceived in;
  in.account = AccountId(Forge::kAccount);
  in.collection = collection ? std::optional(WalletId(*collection)) : std::nullopt;
  for (const Posting& p : postings)
    if (is_wallet_account(p.account)) in.ids.push_back(++next_id);
  in.narration = "in";
  in.postings = std::move(postings);
  in.transaction = TransactionId("trx-in-" + std::to_string(next_id));
  return in;
}

// A wallet transfer A -> B: the source's posting and the destination's.
inline std::uint64_t transfer(Forge& f, const std::string& n, Posting source, Posting destination,
                              const std::string& reference) {
  WalletTransferSettled t;
  t.account = AccountId(Forge::kAccount);
  t.ids = {200 + std::stoull(n) * 2, 201 + std::stoull(n) * 2};
  t.narration = "rent";
  t.postings = {std::move(source), std::move(destination)};
  t.reference = reference;
  t.transaction = TransactionId("trx-t" + n);
  return f.command({{t}});
}

// A payout of ₦200 (fee ₦10.75) from A at 100,000, moved to processing.
inline void payout(Forge& f) {
  BankTransferInitiated p;
  p.account = AccountId(Forge::kAccount);
  p.beneficiary =
      Beneficiary{"Ada Obi", "0123456784", BankAccountId("bka-1"), "044", "Access Bank", 0, "ner-1"};
  p.ids = {300};
  p.narration = "payout";
  p.postings = {{kA, Kobo(-21'075), Kobo(78'925)},
                {kSuspense, Kobo(20'000), Kobo(20'000)},
                {kFees, Kobo(1'075), Kobo(1'075)}};
  p.reference = "pay-1";
  p.transaction = TransactionId("trx-pay");
  f.command({{p}});
  f.command({{PayoutProcessing{TransactionId("trx-pay")}}});
}

inline PayoutFailed reversal() {
  PayoutFailed x;
  x.ids = {400};
  x.postings = {
      {kSuspense, Kobo(-20'000), Kobo(0)}, {kFees, Kobo(-1'075), Kobo(0)}, {kA, Kobo(21'075), Kobo(100'000)}};
  x.transaction = TransactionId("trx-pay");
  return x;
}

// ---- the records whose use the audit remembers (audit/scratch_index.h) ---------------------------

// A wallet transfer of its own transaction id, integer ids and reference.
inline WalletTransferSettled wallet_transfer(const std::string& transaction, std::vector<std::uint64_t> ids,
                                             Posting source, Posting destination,
                                             const std::string& reference) {
  WalletTransferSettled t;
  t.account = AccountId(Forge::kAccount);
  t.ids = std::move(ids);
  t.narration = "rent";
  t.postings = {std::move(source), std::move(destination)};
  t.reference = reference;
  t.transaction = TransactionId(transaction);
  return t;
}

// A hold of `amount` on wallet A, expiring a minute after Forge::kTime.
inline HoldPlaced hold(const std::string& id, const std::string& reference, Kobo amount = Kobo(1'000)) {
  HoldPlaced h;
  h.account = AccountId(Forge::kAccount);
  h.amount = amount;
  h.expires_at = Timestamp{Forge::kTime + 60'000};
  h.hold = HoldId(id);
  h.reference = reference;
  h.source = WalletId(kA);
  return h;
}

inline BeneficiarySaved beneficiary(const std::string& id, std::uint64_t number) {
  BeneficiarySaved b;
  b.account = AccountId(Forge::kAccount);
  b.account_name = "Ada Obi";
  b.account_number = "0123456784";
  b.bank_account = BankAccountId(id);
  b.bank_code = "044";
  b.bank_name = "Access Bank";
  b.id = number;
  return b;
}

// A bulk transfer of one item, which it refused: the command of its one event.
inline BulkTransferAccepted bulk(const std::string& batch, const std::string& reference) {
  BulkTransferAccepted b;
  b.account = AccountId(Forge::kAccount);
  b.batch = BatchId(batch);
  b.fingerprint = sha256_hex(reference);
  b.items = 1;
  b.reference = reference;
  b.rejected = {BulkItemRejected{0, "insufficient_funds", std::nullopt}};
  return b;
}

}  // namespace kobo::audit::forge
