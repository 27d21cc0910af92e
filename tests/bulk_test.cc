// decide_bulk() (command/bulk.h): a bulk transfer's items decided in order by the rules a single
// transfer is decided by, atomically or each on its own, leaving the writer's state and history
// as they were when it refuses.

#include <gtest/gtest.h>

#include "tests/decide_harness.h"

namespace kobo::testing {
namespace {

const Caller kAlice{"biz-a", "acc-a", false};
const Caller kAliceOther{"biz-a", "acc-a2", false};  // another account of the same business

BulkTransfer bulk(std::string reference, bool atomic, std::vector<BulkItem> items) {
  BulkTransfer b;
  b.caller = kAlice;
  b.reference = std::move(reference);
  b.atomic = atomic;
  b.items = std::move(items);
  return b;
}

TEST(BulkTransfer, AtomicRefusalLeavesStateAndHistoryAsTheyWere) {
  Partition0 p;
  const std::string a = p.wallet(kAlice, "a"), b = p.wallet(kAlice, "b");
  p.fund(kAlice, a, 25'000);
  const Kobo total = p.state().total;
  const std::uint64_t transactions = p.state().transactions_created;
  const BulkTransfer c = bulk("payroll-1", true,
                              {{transfer(kAlice, a, b, 10'000, "i-0")},
                               {transfer(kAlice, a, b, 10'000, "i-1")},
                               {transfer(kAlice, a, b, 10'000, "i-2")}});  // 5,000 left: refused
  const Decision d = p.run_bulk(c);
  EXPECT_EQ(d.rejection, Rejection::insufficient_funds);
  ASSERT_TRUE(d.item.has_value());
  EXPECT_EQ(*d.item, 2u);
  EXPECT_TRUE(d.events.empty());
  EXPECT_EQ(p.balance(a), Kobo(25'000));
  EXPECT_EQ(p.balance(b), Kobo(0));
  EXPECT_EQ(p.state().total, total);
  EXPECT_EQ(p.state().transactions_created, transactions);
  for (const char* ref : {"i-0", "i-1", "i-2"})
    EXPECT_FALSE(p.history().transfer_reference("acc-a", false, ref).value().has_value()) << ref;
  EXPECT_FALSE(p.history().bulk_reference("acc-a", false, "payroll-1").value().has_value());

  // Funded, the very same bulk goes through: nothing of the refusal was kept.
  p.fund(kAlice, a, 5'000);
  const Decision ok = p.run_bulk(c);
  ASSERT_EQ(ok.rejection, Rejection::none);
  EXPECT_EQ(p.balance(a), Kobo(0));
  EXPECT_EQ(p.balance(b), Kobo(30'000));
  ASSERT_EQ(p.sealed().size(), 4u);
  const auto& head = std::get<BulkTransferAccepted>(p.sealed()[0].data);
  EXPECT_EQ(head.batch.value, ok.id);
  EXPECT_EQ(head.items, 3u);
  EXPECT_TRUE(head.rejected.empty());
  for (std::size_t k = 1; k < 4; ++k) {
    const auto& x = std::get<WalletTransferSettled>(p.sealed()[k].data);
    ASSERT_TRUE(x.batch.has_value());
    EXPECT_EQ(x.batch->value, ok.id);
    EXPECT_EQ(p.sealed()[k].command_seq, p.sealed()[0].seq);
    EXPECT_EQ(p.sealed()[k].command_size, 4u);
  }
}

TEST(BulkTransfer, EachItemSeesTheBalancesTheItemsBeforeItLeave) {
  Partition0 p;
  const std::string a = p.wallet(kAlice, "a"), b = p.wallet(kAlice, "b"), c = p.wallet(kAlice, "c");
  p.fund(kAlice, a, 20'000);
  // b holds nothing until the first item pays it.
  const Decision d = p.run_bulk(bulk("chain", true,
                                     {{transfer(kAlice, a, b, 20'000)},
                                      {transfer(kAlice, b, c, 15'000)},
                                      {bank_transfer(kAlice, b, 3'000)}}));  // 5,000 left: 3,000 + 1,075 fee
  ASSERT_EQ(d.rejection, Rejection::none);
  EXPECT_EQ(p.balance(a), Kobo(0));
  EXPECT_EQ(p.balance(b), Kobo(5'000 - 3'000 - 1'075));
  EXPECT_EQ(p.balance(c), Kobo(15'000));
  EXPECT_EQ(p.state().total, Kobo(0));
}

TEST(BulkTransfer, NonAtomicRecordsEachRefusalAndAppliesTheRest) {
  Partition0 p;
  const std::string a = p.wallet(kAlice, "a"), b = p.wallet(kAlice, "b");
  p.fund(kAlice, a, 30'000);
  BulkItem refused{bank_transfer(kAlice, a, 10'000), Rejection::bank_not_found};
  const Decision d = p.run_bulk(bulk("each", false,
                                     {{transfer(kAlice, a, b, 20'000, "e-0")},
                                      {transfer(kAlice, a, b, 20'000, "e-1")},  // 10,000 left
                                      {transfer(kAlice, a, "vba-none", 1'000)},
                                      refused,
                                      {transfer(kAlice, a, b, 20'000, "e-0")},  // its reference is taken
                                      {transfer(kAlice, a, b, 10'000, "e-5")}}));
  ASSERT_EQ(d.rejection, Rejection::none);
  const auto& head = std::get<BulkTransferAccepted>(p.sealed().at(0).data);
  std::vector<std::pair<std::uint64_t, std::string>> rejected;
  for (const auto& r : head.rejected) rejected.emplace_back(r.index, r.reason);
  const std::vector<std::pair<std::uint64_t, std::string>> expected{{1, "insufficient_funds"},
                                                                    {2, "destination_not_found"},
                                                                    {3, "bank_not_found"},
                                                                    {4, "duplicate_reference"}};
  EXPECT_EQ(rejected, expected);
  EXPECT_EQ(head.rejected[0].reference, std::optional<std::string>("e-1"));
  EXPECT_EQ(p.sealed().size(), 3u);  // the bulk and its two accepted items
  EXPECT_EQ(p.balance(a), Kobo(0));
  EXPECT_EQ(p.balance(b), Kobo(30'000));
}

TEST(BulkTransfer, ItsReferenceIsIdempotentAsAWhole) {
  Partition0 p;
  const std::string a = p.wallet(kAlice, "a"), b = p.wallet(kAlice, "b");
  p.fund(kAlice, a, 100'000);
  const BulkTransfer c = bulk("same", false, {{transfer(kAlice, a, b, 20'000)}});
  const Decision first = p.run_bulk(c);
  ASSERT_EQ(first.rejection, Rejection::none);
  const Decision again = p.run_bulk(c);
  EXPECT_TRUE(again.replayed);
  EXPECT_EQ(again.id, first.id);
  EXPECT_TRUE(again.events.empty());
  BulkTransfer other = c;
  other.atomic = true;
  EXPECT_EQ(p.run_bulk(other).rejection, Rejection::duplicate_reference);
  EXPECT_EQ(p.balance(a), Kobo(80'000));
}

TEST(BulkTransfer, AtomicDrawsOnTheCallersAccountOnly) {
  Partition0 p;
  const std::string a = p.wallet(kAlice, "a"), theirs = p.wallet(kAliceOther, "t");
  p.fund(kAliceOther, theirs, 50'000);
  const Decision d = p.run_bulk(bulk("other", true, {{transfer(kAlice, theirs, a, 10'000)}}));
  EXPECT_EQ(d.rejection, Rejection::source_not_found);
  EXPECT_EQ(p.balance(theirs), Kobo(50'000));
}

}  // namespace
}  // namespace kobo::testing
