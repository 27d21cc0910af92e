// The history index (command/history.h): what was used before, answered from the tail of facts
// not yet written and then from RocksDB on disk; its position kept with it; and a writer whose
// index holds another log's facts rebuilds it from its own log rather than trust it.
#include "command/history.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "command/ledger.h"
#include "events/memory_log.h"
#include "tests/decide_harness.h"
#include "tests/support/scratch_dir.h"

namespace kobo {
namespace {

namespace fs = std::filesystem;
using testing::bank_transfer;
using testing::Partition0;
using testing::transfer;

const Caller kAda{"biz-h", "acc-h", false};

class HistoryIndex : public ::testing::Test {
 protected:
  std::unique_ptr<History> open() {
    auto h = History::open({dir_, 1, std::size_t{8} << 20});
    EXPECT_TRUE(h.ok()) << h.status().message();
    return std::move(h).value();
  }

  // Every event of `p`'s log, decoded.
  static std::vector<Event> events_of(const Partition0& p) {
    std::vector<Event> out;
    for (const std::string& wire : p.log()) out.push_back(decode_event(wire).value());
    return out;
  }

  testing::ScratchDir scratch_;
  const fs::path dir_ = scratch_ / "history";
};

// A partition with one fact of each kind: a transfer reference, a saved bank account, a
// collection wallet with its reference.
Partition0 partition_with_history(std::string& transfer_id, std::string& collection_number) {
  Partition0 p;
  const std::string a = p.wallet(kAda, "a"), b = p.wallet(kAda, "b");
  p.fund(kAda, a, 1'000'000);
  transfer_id = p.run(transfer(kAda, a, b, 10'000, "ref-1")).id;
  EXPECT_EQ(p.run(bank_transfer(kAda, a, 20'000, "ref-2", /*save=*/true)).rejection, Rejection::none);
  const Decision c = p.run(CreateCollection{kAda, b, "Invoice", Kobo(2'500), 600, "col-ref"});
  collection_number = std::get<CollectionWalletOpened>(c.events.at(0).data).account_number;
  return p;
}

TEST_F(HistoryIndex, AnswersFromItsTailThenFromDiskAndKeepsItsPositionAcrossAReopen) {
  std::string trx, number;
  const Partition0 p = partition_with_history(trx, number);
  const std::vector<Event> events = events_of(p);
  const auto expect_answers = [&](const History& h) {
    const auto r = h.transfer_reference(kAda.account, kAda.live, "ref-1");
    ASSERT_TRUE(r.ok() && r.value().has_value());
    EXPECT_EQ(r.value()->transaction, trx);
    EXPECT_EQ(r.value()->fingerprint,
              p.history().transfer_reference(kAda.account, false, "ref-1").value()->fingerprint);
    EXPECT_TRUE(h.transfer_reference(kAda.account, kAda.live, "ref-2").value().has_value());
    EXPECT_FALSE(h.transfer_reference(kAda.account, /*live=*/true, "ref-1").value().has_value())
        << "per mode";
    EXPECT_FALSE(h.transfer_reference(kAda.account, kAda.live, "ref-3").value().has_value());
    EXPECT_TRUE(h.bank_account(bank_transfer(kAda, "", 1).bank_account_id).value().has_value());
    EXPECT_TRUE(h.collection_reference_taken(kAda.account, kAda.live, "col-ref").value());
    EXPECT_FALSE(h.collection_reference_taken(kAda.account, kAda.live, "col-other").value());
    EXPECT_EQ(h.collection(number).value(), (CollectionOwner{kAda.business, kAda.live}));
    EXPECT_FALSE(h.collection("0000000000").value().has_value());
  };
  {
    auto h = open();
    for (const Event& e : events) h->note(e);
    EXPECT_GT(h->tail_size(), 0u);
    EXPECT_EQ(h->position()[0].seq, Seq(0)) << "nothing written yet";
    expect_answers(*h);  // from the tail
    ASSERT_TRUE(h->write_tail().ok());
    EXPECT_EQ(h->tail_size(), 0u);
    EXPECT_EQ(h->position()[0].seq, events.back().seq);
    EXPECT_EQ(h->indexed_seq(Partition(0)), events.back().seq);
    expect_answers(*h);  // from disk
  }
  auto reopened = open();
  EXPECT_EQ(reopened->position()[0].seq, events.back().seq);
  EXPECT_EQ(reopened->position()[0].hash, events.back().hash);
  expect_answers(*reopened);
}

TEST_F(HistoryIndex, ADroppedTailLeavesNothingBehind) {
  std::string trx, number;
  const Partition0 p = partition_with_history(trx, number);
  const std::vector<Event> events = events_of(p);
  auto h = open();
  for (const Event& e : events) h->note(e);
  h->drop_tail();
  EXPECT_EQ(h->tail_size(), 0u);
  EXPECT_FALSE(h->transfer_reference(kAda.account, kAda.live, "ref-1").value().has_value());
  ASSERT_TRUE(h->write_tail().ok());
  EXPECT_EQ(h->position()[0].seq, Seq(0)) << "a dropped tail moves no position";
  for (const Event& e : events) h->note(e);  // from the same place again: the order holds
  ASSERT_TRUE(h->write_tail().ok());
  ASSERT_TRUE(h->clear().ok());
  EXPECT_EQ(h->position()[0].seq, Seq(0));
  EXPECT_FALSE(h->transfer_reference(kAda.account, kAda.live, "ref-1").value().has_value());
}

// A writer whose index holds facts its log does not (the data dir's index beside another log)
// must not refuse a reference that log never used, nor forget one it did.
TEST_F(HistoryIndex, AWriterRebuildsAnIndexOfAnotherLogFromItsOwn) {
  LedgerOptions o;
  o.config.partitions = 2;
  o.history_dir = dir_;
  const auto run = [&](MemoryLog& log, const std::string& reference, std::int64_t amount) {
    Ledger l(log, o);
    EXPECT_TRUE(l.start().ok());
    Outcome a = l.execute(CreateWallet{kAda, "a", "secondary", {}, {}});
    Outcome b = l.execute(CreateWallet{kAda, "b", "secondary", {}, {}});
    EXPECT_TRUE(a.ok() && b.ok());
    const auto& opened = std::get<WalletOpened>(a.events.at(0).data);
    EXPECT_TRUE(l.execute(IncomingCredit{kAda, opened.account_number, Kobo(1'000'000), "f", "S", "0000014579",
                                         "058", "GTB", "000013"})
                    .ok());
    for (int i = 0; i < 5; ++i)
      EXPECT_TRUE(l.execute(transfer(kAda, a.id, b.id, amount, reference + std::to_string(i))).ok());
    return std::make_pair(a.id, b.id);
  };
  MemoryLog first(2), second(2);
  run(first, "first-", 10'000);
  const auto [a, b] = run(second, "second-", 20'000);  // the index says first's, the log second's
  Ledger l(second, o);
  ASSERT_TRUE(l.start().ok());
  const Outcome fresh = l.execute(transfer(kAda, a, b, 10'000, "first-0"));
  EXPECT_TRUE(fresh.ok() && !fresh.replayed)
      << "a reference of another log's index refused: " << to_string(fresh.rejection);
  const Outcome repeat = l.execute(transfer(kAda, a, b, 20'000, "second-0"));
  EXPECT_TRUE(repeat.ok() && repeat.replayed) << "a reference of this log forgotten";
  EXPECT_EQ(l.execute(transfer(kAda, a, b, 30'000, "second-1")).rejection, Rejection::duplicate_reference);
}

}  // namespace
}  // namespace kobo
