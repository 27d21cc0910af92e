// The single writer over the in-memory log: acknowledgement only after a durable append,
// replay on start, the payout rail, and no double spend under concurrency.
#include "command/ledger.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "events/memory_log.h"
#include "tests/support/commands.h"

namespace kobo {
namespace {

using namespace std::chrono_literals;

constexpr std::uint32_t kPartitions = 3;
const Caller kCaller{"biz-ledger-test", "acc-1", false};

LedgerOptions options(std::uint64_t seed = 0) {
  LedgerOptions o;
  o.config.partitions = kPartitions;
  if (seed != 0) o.ids = std::make_shared<SeededIds>(seed);
  return o;
}

// The account number a wallet was opened with, from the event the writer answered with.
std::string number_of(const Outcome& wallet) {
  KOBO_ASSERT(wallet.events.size() == 1, "a wallet is opened by one event");
  return std::get<WalletOpened>(wallet.events[0].data).account_number;
}

Outcome create_wallet(Ledger& l, const std::string& name) {
  Outcome o = l.execute(CreateWallet{kCaller, name, "secondary", {}, {}});
  EXPECT_TRUE(o.ok()) << to_string(o.rejection);
  return o;
}

Outcome fund(Ledger& l, const Outcome& wallet, std::int64_t amount) {
  Outcome o = l.execute(IncomingCredit{kCaller, number_of(wallet), Kobo(amount), "f", "S", "0000014579",
                                       "058", "GTB", "000013"});
  EXPECT_TRUE(o.ok()) << to_string(o.rejection);
  return o;
}

WalletTransfer transfer(const std::string& src, const std::string& dst, std::int64_t amount,
                        std::string ref) {
  WalletTransfer t;
  t.caller = kCaller;
  t.source = src;
  t.destination = dst;
  t.amount = Kobo(amount);
  t.narration = "n";
  t.reference = std::move(ref);
  return t;
}

std::vector<Event> events_of(MemoryLog& log) {
  auto reader = log.open_reader(std::vector<Offset>(kPartitions, Offset(0)));
  std::vector<LogRecord> records;
  EXPECT_TRUE(reader.value()->poll(1'000'000, 0ms, records).ok());
  std::vector<Event> out;
  for (const auto& r : records) out.push_back(decode_event(r.bytes).value());
  return out;
}

TEST(Ledger, AppendsWriterStartedWithTheNextEpochOnEveryStart) {
  MemoryLog log(kPartitions);
  {
    Ledger l(log, options());
    ASSERT_TRUE(l.start().ok());
  }
  {
    Ledger l(log, options());
    ASSERT_TRUE(l.start().ok());
  }
  std::vector<std::uint64_t> epochs;
  for (const Event& e : events_of(log))
    if (e.partition == Partition(0))
      if (const auto* w = std::get_if<WriterStarted>(&e.data)) epochs.push_back(w->epoch.value);
  EXPECT_EQ(epochs, (std::vector<std::uint64_t>{1, 2}));
}

TEST(Ledger, AnswersWithTheIdAndTheSealedEventsAsAppended) {
  MemoryLog log(kPartitions);
  Ledger l(log, options());
  ASSERT_TRUE(l.start().ok());
  const Outcome src = create_wallet(l, "src"), dst = create_wallet(l, "dst");
  const Outcome funded = fund(l, src, 40'000);
  const Outcome sent = l.execute(transfer(src.id, dst.id, 25'000, "r1"));
  ASSERT_TRUE(funded.ok() && sent.ok());
  EXPECT_EQ(src.id, std::get<WalletOpened>(src.events.at(0).data).wallet.value);
  ASSERT_EQ(sent.events.size(), 1u);
  EXPECT_EQ(sent.id, std::get<WalletTransferSettled>(sent.events[0].data).transaction.value);
  EXPECT_EQ(funded.id, std::get<IncomingCreditReceived>(funded.events.at(0).data).transaction.value);
  EXPECT_EQ(sent.seq, sent.events[0].seq);
  std::map<std::pair<std::uint32_t, std::uint64_t>, Event> logged;
  for (const Event& e : events_of(log)) logged.emplace(std::pair{e.partition.value, e.seq.value}, e);
  for (const Outcome* o : {&src, &dst, &funded, &sent})
    for (const Event& e : o->events) {
      const Event& in_log = logged.at({e.partition.value, e.seq.value});
      EXPECT_EQ(in_log.hash, e.hash);
      EXPECT_TRUE(in_log.data == e.data);
    }
}

TEST(Ledger, AFailedAppendAcknowledgesNothingAndChangesNothing) {
  MemoryLog log(kPartitions);
  Ledger l(log, options());
  ASSERT_TRUE(l.start().ok());
  const Outcome src = create_wallet(l, "src"), dst = create_wallet(l, "dst");
  fund(l, src, 30'000);
  const std::size_t before = events_of(log).size();

  log.fail_next_appends(1);
  const Outcome failed = l.execute(transfer(src.id, dst.id, 30'000, "r1"));
  EXPECT_EQ(failed.rejection, Rejection::unavailable);
  EXPECT_TRUE(failed.events.empty());
  EXPECT_EQ(events_of(log).size(), before);

  // The writer re-read the log: the money is still there and the reference is still free.
  const Outcome retried = l.execute(transfer(src.id, dst.id, 30'000, "r1"));
  EXPECT_TRUE(retried.ok());
  EXPECT_FALSE(retried.replayed);
  ASSERT_EQ(retried.events.size(), 1u);
  EXPECT_EQ(std::get<WalletTransferSettled>(retried.events[0].data).postings.at(0).balance, Kobo(0));
  EXPECT_EQ(l.execute(transfer(src.id, dst.id, 10'000, "r2")).rejection, Rejection::insufficient_funds);
}

TEST(Ledger, RebuildsItsStateFromTheLogOnStart) {
  MemoryLog log(kPartitions);
  std::string src, dst, first;
  {
    Ledger l(log, options());
    ASSERT_TRUE(l.start().ok());
    const Outcome w = create_wallet(l, "src");
    src = w.id;
    dst = create_wallet(l, "dst").id;
    fund(l, w, 50'000);
    const Outcome t = l.execute(transfer(src, dst, 20'000, "before-restart"));
    ASSERT_TRUE(t.ok());
    first = t.id;
  }
  Ledger again(log, options());
  ASSERT_TRUE(again.start().ok());
  EXPECT_EQ(again.business_count(), 0u) << "no CreateBusiness was issued";
  const Outcome replayed = again.execute(transfer(src, dst, 20'000, "before-restart"));
  EXPECT_TRUE(replayed.replayed);
  EXPECT_EQ(replayed.id, first);
  EXPECT_TRUE(replayed.events.empty());
  EXPECT_EQ(again.execute(transfer(src, dst, 20'000, "before-restart-other")).rejection, Rejection::none);
  EXPECT_EQ(again.execute(transfer(src, dst, 10'001, "x")).rejection, Rejection::insufficient_funds);
  EXPECT_EQ(again.execute(transfer(src, dst, 1, "before-restart")).rejection, Rejection::duplicate_reference);
  EXPECT_EQ(again.execute(CreateWallet{kCaller, "src", "secondary", {}, {}}).rejection,
            Rejection::wallet_name_taken);
}

TEST(Ledger, RejectsANegativeTransferWithoutAborting) {
  MemoryLog log(kPartitions);
  Ledger l(log, options());
  ASSERT_TRUE(l.start().ok());
  const Outcome src = create_wallet(l, "src"), dst = create_wallet(l, "dst");
  fund(l, src, 10'000);
  const std::size_t before = events_of(log).size();
  EXPECT_EQ(l.execute(transfer(src.id, dst.id, -10'000, "neg")).rejection, Rejection::out_of_range);
  EXPECT_EQ(l.execute(transfer(src.id, dst.id, std::numeric_limits<std::int64_t>::max(), "big")).rejection,
            Rejection::insufficient_funds);
  EXPECT_EQ(events_of(log).size(), before);
  EXPECT_TRUE(l.execute(transfer(src.id, dst.id, 10'000, "pos")).ok()) << "the writer goes on";
}

TEST(Ledger, MovesAPayoutAlongTheRailUntilItSucceeds) {
  MemoryLog log(kPartitions);
  LedgerOptions o = options();
  o.config.rail_delay = 1ms;
  Ledger l(log, o);
  ASSERT_TRUE(l.start().ok());
  const Outcome src = create_wallet(l, "src");
  fund(l, src, 100'000);
  const Outcome sent = l.execute(testing::bank_transfer(kCaller, src.id, Kobo(10'000)));
  ASSERT_TRUE(sent.ok());
  bool processing = false, succeeded = false;
  for (int i = 0; i < 200 && !succeeded; ++i) {
    for (const Event& e : events_of(log)) {
      if (const auto* x = std::get_if<PayoutProcessing>(&e.data); x && x->transaction.value == sent.id)
        processing = true;
      if (const auto* x = std::get_if<PayoutSucceeded>(&e.data); x && x->transaction.value == sent.id)
        succeeded = true;
    }
    if (!succeeded) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(processing);
  EXPECT_TRUE(succeeded);
}

TEST(Ledger, ASeededIdSourceGivesTheSameIdsOnEveryRun) {
  const auto ids = [](std::uint64_t seed) {
    MemoryLog log(kPartitions);
    Ledger l(log, options(seed));
    EXPECT_TRUE(l.start().ok());
    return std::vector<std::string>{create_wallet(l, "a").id, create_wallet(l, "b").id};
  };
  EXPECT_EQ(ids(11), ids(11));
  EXPECT_NE(ids(11), ids(12));
}

TEST(Ledger, NeverSpendsMoreThanTheBalanceUnderConcurrency) {
  MemoryLog log(kPartitions);
  Ledger l(log, options());
  ASSERT_TRUE(l.start().ok());
  const Outcome w = create_wallet(l, "src");
  const std::string src = w.id, dst = create_wallet(l, "dst").id;
  constexpr int kAffordable = 37;
  fund(l, w, kAffordable * 10'000 + 9'999);
  std::atomic<int> ok{0}, poor{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        const Outcome o =
            l.execute(transfer(src, dst, 10'000, "t" + std::to_string(t) + "-" + std::to_string(i)));
        if (o.ok())
          ++ok;
        else if (o.rejection == Rejection::insufficient_funds)
          ++poor;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kAffordable);
  EXPECT_EQ(poor.load(), 8 * 25 - kAffordable);
}

TEST(Ledger, AnswersUnavailableOnceStopped) {
  MemoryLog log(kPartitions);
  Ledger l(log, options());
  ASSERT_TRUE(l.start().ok());
  l.stop();
  EXPECT_EQ(l.execute(CreateWallet{kCaller, "late", "secondary", {}, {}}).rejection, Rejection::unavailable);
}

// ---- KYC tiers (docs/architecture.md, KYC tiers) ---------------------------------------------------------

Outcome tiered_wallet(Ledger& l, const std::string& name, std::uint64_t tier) {
  Outcome o = l.execute(CreateWallet{kCaller, name, "secondary", {}, {}, tier});
  EXPECT_TRUE(o.ok()) << to_string(o.rejection);
  return o;
}

TEST(LedgerTiers, TheDaysAllowanceIsOfTheLagosDayAndStartsAfreshAtItsMidnight) {
  MemoryLog log(kPartitions);
  UnixMs now = *parse_iso8601("2026-11-25T22:30:00.000Z");  // 23:30 in Lagos
  LedgerOptions o = options();
  o.clock = [&now] { return now; };
  Ledger l(log, o);
  ASSERT_TRUE(l.start().ok());
  const Outcome src = tiered_wallet(l, "src", 1), dst = create_wallet(l, "dst");
  fund(l, src, 11'000'000);
  ASSERT_TRUE(l.execute(transfer(src.id, dst.id, 5'000'000, "a")).ok());
  EXPECT_EQ(l.execute(transfer(src.id, dst.id, 1, "b")).rejection, Rejection::daily_limit_exceeded);
  now = *parse_iso8601("2026-11-25T22:59:59.999Z");
  EXPECT_EQ(l.execute(transfer(src.id, dst.id, 1, "c")).rejection, Rejection::daily_limit_exceeded);
  now = *parse_iso8601("2026-11-25T23:00:00.000Z");  // midnight in Lagos: a new day
  EXPECT_TRUE(l.execute(transfer(src.id, dst.id, 5'000'000, "d")).ok());
  EXPECT_EQ(l.execute(transfer(src.id, dst.id, 1, "e")).rejection, Rejection::daily_limit_exceeded);
}

TEST(LedgerTiers, ABankTransferCountsItsFee) {
  MemoryLog log(kPartitions);
  Ledger l(log, options());
  ASSERT_TRUE(l.start().ok());
  const Outcome src = tiered_wallet(l, "src", 1), dst = create_wallet(l, "dst");
  fund(l, src, 10'000'000);
  // 4,990,000 + a fee of 2,688 leaves 7,312 of the 5,000,000.
  ASSERT_TRUE(l.execute(testing::bank_transfer(kCaller, src.id, Kobo(4'990'000))).ok());
  // 7,000 fits, but not with its fee of 1,075.
  EXPECT_EQ(l.execute(testing::bank_transfer(kCaller, src.id, Kobo(7'000))).rejection,
            Rejection::daily_limit_exceeded);
  EXPECT_TRUE(l.execute(transfer(src.id, dst.id, 7'000, "w")).ok());
}

TEST(LedgerTiers, ABalanceCapRefusesEveryCreditThatWouldPassIt) {
  MemoryLog log(kPartitions);
  Ledger l(log, options());
  ASSERT_TRUE(l.start().ok());
  const Outcome capped = tiered_wallet(l, "capped", 1), rich = create_wallet(l, "rich");
  fund(l, rich, 100'000'000);
  fund(l, capped, 29'000'000);
  EXPECT_EQ(l.execute(transfer(rich.id, capped.id, 1'000'001, "over")).rejection,
            Rejection::balance_limit_exceeded);
  EXPECT_EQ(l.execute(IncomingCredit{kCaller, number_of(capped), Kobo(1'000'001), "f", "S", "0000014579",
                                     "058", "GTB", "000013"})
                .rejection,
            Rejection::balance_limit_exceeded);
  EXPECT_TRUE(l.execute(transfer(rich.id, capped.id, 1'000'000, "to the cap")).ok());
  // A transit wallet sweeping into a capped wallet is refused too.
  const Outcome transit =
      l.execute(CreateTransitWallet{kCaller, "transit", capped.id, std::nullopt, std::nullopt, std::nullopt});
  ASSERT_TRUE(transit.ok());
  const auto& opened = std::get<TransitWalletOpened>(transit.events.at(0).data);
  EXPECT_EQ(l.execute(IncomingCredit{kCaller, opened.account_number, Kobo(1), "f", "S", "0000014579", "058",
                                     "GTB", "000013"})
                .rejection,
            Rejection::balance_limit_exceeded);
}

TEST(LedgerTiers, TheLimitsInForceAreTheOnesTheLogRecorded) {
  MemoryLog log(kPartitions);
  LedgerOptions small = options();
  small.config.tier_limits = {TierLimit{Kobo(1'000), Kobo(50'000)}, TierLimit{Kobo(2'000), std::nullopt},
                              TierLimit{Kobo(3'000), std::nullopt}};
  std::string src, dst;
  {
    Ledger l(log, small);
    ASSERT_TRUE(l.start().ok());
    const Outcome s = tiered_wallet(l, "src", 1);
    src = s.id;
    dst = create_wallet(l, "dst").id;
    fund(l, s, 40'000);
    EXPECT_EQ(l.execute(IncomingCredit{kCaller, number_of(s), Kobo(10'001), "f", "S", "0000014579", "058",
                                       "GTB", "000013"})
                  .rejection,
              Rejection::balance_limit_exceeded);
    ASSERT_TRUE(l.execute(transfer(src, dst, 1'000, "a")).ok());
    EXPECT_EQ(l.execute(transfer(src, dst, 1, "b")).rejection, Rejection::daily_limit_exceeded);
  }
  std::vector<std::optional<TierLimits>> recorded;
  for (const Event& e : events_of(log))
    if (const auto* w = std::get_if<WriterStarted>(&e.data); w != nullptr && e.partition == Partition(0))
      recorded.push_back(w->tier_limits);
  EXPECT_EQ(recorded, (std::vector<std::optional<TierLimits>>{small.config.tier_limits}));
  // A writer started with other limits records them, and decides with them from there on.
  Ledger l(log, options());
  ASSERT_TRUE(l.start().ok());
  EXPECT_TRUE(l.execute(transfer(src, dst, 1, "c")).ok());
}

TEST(LedgerTiers, TheDaysDebitsSurviveARestart) {
  MemoryLog log(kPartitions);
  std::string src, dst;
  {
    Ledger l(log, options());
    ASSERT_TRUE(l.start().ok());
    const Outcome s = tiered_wallet(l, "src", 1);
    src = s.id;
    dst = create_wallet(l, "dst").id;
    fund(l, s, 10'000'000);
    ASSERT_TRUE(l.execute(transfer(src, dst, 4'000'000, "a")).ok());
    ASSERT_TRUE(l.execute(SetWalletTier{kCaller, dst, 2}).ok());
  }
  Ledger l(log, options());
  ASSERT_TRUE(l.start().ok());
  EXPECT_EQ(l.execute(transfer(src, dst, 1'000'001, "b")).rejection, Rejection::daily_limit_exceeded);
  EXPECT_TRUE(l.execute(transfer(src, dst, 1'000'000, "c")).ok());
  // The tier change came back too: tier 2 caps the destination (5,000,000 now) at 50,000,000.
  const Outcome rich = create_wallet(l, "rich");
  fund(l, rich, 100'000'000);
  EXPECT_EQ(l.execute(transfer(rich.id, dst, 45'000'001, "d")).rejection, Rejection::balance_limit_exceeded);
  EXPECT_TRUE(l.execute(transfer(rich.id, dst, 45'000'000, "e")).ok());
}

}  // namespace
}  // namespace kobo

namespace kobo {
namespace {

// The writer's queue is shared between businesses (command/fair_queue.h): a burst of one
// business's commands queued first does not hold another's back; it is taken in the next batch.
TEST(LedgerQueue, OneBusinessBurstDoesNotDelayAnothersCommand) {
  MemoryLog log(kPartitions);
  LedgerOptions o = options();
  o.batch_max = 4;
  Ledger ledger(log, o);
  ASSERT_TRUE(ledger.start().ok());
  const Caller a{"biz-burst", "acc-a", false}, b{"biz-other", "acc-b", false};
  // The first command's answer holds the writer until the burst and the other command are queued.
  std::promise<void> holding, release;
  auto released = release.get_future().share();
  ledger.submit(CreateWallet{a, "first", "secondary", {}, {}}, [&holding, released](Outcome) {
    holding.set_value();
    released.wait();
  });
  holding.get_future().wait();
  std::mutex mu;
  std::vector<std::string> answered;
  std::atomic<int> left{2'001};
  std::promise<void> all_done;
  const auto record = [&](std::string who) {
    return [&, who = std::move(who)](Outcome) {
      {
        std::lock_guard lock(mu);
        answered.push_back(who);
      }
      if (--left == 0) all_done.set_value();
    };
  };
  for (int i = 0; i < 2'000; ++i) ledger.submit(CreateWallet{a, "burst", "secondary", {}, {}}, record("a"));
  ledger.submit(CreateWallet{b, "other", "secondary", {}, {}}, record("b"));
  release.set_value();
  all_done.get_future().wait();
  const auto at = std::find(answered.begin(), answered.end(), "b") - answered.begin();
  EXPECT_LT(at, 4) << "the other business's command waited behind " << at << " of the burst's";
  ledger.stop();
}

TEST(FairQueueTest, ServesKeysInTurnAndCapsEach) {
  FairQueue<int> q(100, 3);
  EXPECT_EQ(q.push("a", 1), FairQueue<int>::Pushed::queued);
  EXPECT_EQ(q.push("a", 2), FairQueue<int>::Pushed::queued);
  EXPECT_EQ(q.push("a", 3), FairQueue<int>::Pushed::queued);
  EXPECT_EQ(q.push("a", 4), FairQueue<int>::Pushed::key_full);
  EXPECT_EQ(q.push("b", 10), FairQueue<int>::Pushed::queued);
  EXPECT_EQ(q.push("c", 20), FairQueue<int>::Pushed::queued);
  std::vector<int> order;
  while (!q.empty()) {
    order.push_back(q.front());
    q.pop_front();
  }
  EXPECT_EQ(order, (std::vector<int>{1, 10, 20, 2, 3}));
  FairQueue<int> small(2, 2);
  EXPECT_EQ(small.push("a", 1), FairQueue<int>::Pushed::queued);
  EXPECT_EQ(small.push("b", 1), FairQueue<int>::Pushed::queued);
  EXPECT_EQ(small.push("c", 1), FairQueue<int>::Pushed::full);
}

}  // namespace
}  // namespace kobo
