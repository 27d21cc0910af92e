// A cluster node's writer (command/ledger.h, "Ownership"): two writers over one log, as two nodes
// over one topic, each with its own view of the log that fences the other's on acquire(), as
// Kafka's transactional producers do. What they must show: a writer decides nothing for a
// partition it does not own; a takeover fences the previous writer, reads the partition to its
// end and continues its chain with the next epoch, from a state kept warm meanwhile; a fenced
// writer acknowledges nothing and lets the partition go; a hold expires once across a takeover,
// even when the old owner was only paused (a zombie).
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>

#include "command/ledger.h"
#include "events/memory_log.h"
#include "tests/support/commands.h"

namespace kobo {
namespace {

using namespace std::chrono_literals;

constexpr std::uint32_t kPartitions = 3;
const Caller kCaller{"biz-ownership-test", "acc-1", false};

// One log shared by nodes. Each node appends through its own NodeLog; acquire(p) makes that node
// p's writer and fences whoever was, whose later appends to p fail as Kafka's fenced producer's do.
class SharedLog {
 public:
  SharedLog() : log(kPartitions), holder(kPartitions, -1) {}
  MemoryLog log;
  std::mutex mu;
  std::vector<int> holder;  // guarded by mu: the node that last acquired each partition
};

// A reader that hands out one record per poll: a standby far behind the log.
class OneAtATime final : public LogReader {
 public:
  explicit OneAtATime(std::unique_ptr<LogReader> inner) : inner_(std::move(inner)) {}
  Status poll(std::size_t, std::chrono::milliseconds timeout, std::vector<LogRecord>& out) override {
    return inner_->poll(1, timeout, out);
  }
  Offset position(Partition p) const override { return inner_->position(p); }

 private:
  std::unique_ptr<LogReader> inner_;
};

class NodeLog final : public EventLog {
 public:
  NodeLog(SharedLog& shared, int id, bool slow_reader = false)
      : shared_(shared), id_(id), slow_reader_(slow_reader), fenced_(kPartitions) {}
  std::uint32_t partitions() const override { return shared_.log.partitions(); }
  Status append(std::span<const EncodedEvent> batch) override {
    std::lock_guard lock(shared_.mu);
    for (const EncodedEvent& e : batch)
      if (shared_.holder[e.partition.value] != id_) {
        fenced_[e.partition.value] = true;
        return Status::error("fenced on partition " + std::to_string(e.partition.value));
      }
    return shared_.log.append(batch);
  }
  Result<std::unique_ptr<LogReader>> open_reader(std::vector<Offset> start) override {
    auto reader = shared_.log.open_reader(std::move(start));
    if (!reader || !slow_reader_) return reader;
    return std::unique_ptr<LogReader>(std::make_unique<OneAtATime>(std::move(reader).value()));
  }
  Result<std::vector<Offset>> end_offsets() override { return shared_.log.end_offsets(); }
  Status acquire(Partition p) override {
    std::lock_guard lock(shared_.mu);
    shared_.holder[p.value] = id_;
    fenced_[p.value] = false;
    ++acquired;
    return {};
  }
  void release(Partition) override {}
  bool fenced(Partition p) const override { return fenced_[p.value].load(); }

  std::atomic<int> acquired{0};

 private:
  SharedLog& shared_;
  const int id_;
  const bool slow_reader_;
  std::vector<std::atomic<bool>> fenced_;
};

// A virtual clock the test moves (holds expire by it).
struct TestClock {
  std::atomic<UnixMs> now{1'800'000'000'000};
};

LedgerOptions cluster_options(TestClock* clock = nullptr) {
  LedgerOptions o;
  o.config.partitions = kPartitions;
  o.cluster = true;
  o.recovery_retry = 20ms;
  o.standby_poll = 2ms;
  if (clock != nullptr) o.clock = [clock] { return clock->now.load(); };
  return o;
}

bool wait_for(const std::function<bool()>& pred, std::chrono::milliseconds timeout = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return pred();
}

std::vector<Event> events_of(MemoryLog& log, Partition p) {
  auto reader = log.open_reader(std::vector<Offset>(kPartitions, Offset(0)));
  std::vector<LogRecord> records;
  EXPECT_TRUE(reader.value()->poll(1'000'000, 0ms, records).ok());
  std::vector<Event> out;
  for (const auto& r : records)
    if (r.partition == p) out.push_back(decode_event(r.bytes).value());
  return out;
}

Outcome create_wallet(Ledger& l, const std::string& name) {
  return l.execute(CreateWallet{kCaller, name, "secondary", {}, {}});
}

std::string number_of(const Outcome& wallet) {
  return std::get<WalletOpened>(wallet.events.at(0).data).account_number;
}

Outcome fund(Ledger& l, const Outcome& wallet, std::int64_t amount) {
  return l.execute(IncomingCredit{kCaller, number_of(wallet), Kobo(amount), "f", "S", "0000014579", "058",
                                  "GTB", "000013"});
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

TEST(LedgerOwnership, AClusterWriterDecidesNothingUntilItTakesThePartition) {
  SharedLog shared;
  NodeLog log(shared, 1);
  Ledger l(log, cluster_options());
  ASSERT_TRUE(l.start().ok());
  const Partition p = l.partition_of(kCaller.business);
  EXPECT_EQ(l.ownership(p), Ownership::standby);
  const Outcome refused = create_wallet(l, "w");
  EXPECT_EQ(refused.rejection, Rejection::not_owner);
  EXPECT_TRUE(refused.events.empty());
  EXPECT_TRUE(events_of(shared.log, p).empty())
      << "a cluster writer appends nothing before it owns a partition";

  l.take(p);
  ASSERT_TRUE(wait_for([&] { return l.owns(p); }));
  EXPECT_EQ(log.acquired.load(), 1) << "the previous writer is fenced before the partition is written";
  const auto written = events_of(shared.log, p);
  ASSERT_EQ(written.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<WriterStarted>(written[0].data));
  EXPECT_TRUE(create_wallet(l, "w").ok());
}

TEST(LedgerOwnership, ATakeoverContinuesFromTheWarmStateWithTheNextEpoch) {
  SharedLog shared;
  NodeLog log_a(shared, 1), log_b(shared, 2);
  Ledger a(log_a, cluster_options()), b(log_b, cluster_options());
  ASSERT_TRUE(a.start().ok());
  ASSERT_TRUE(b.start().ok());
  const Partition p = a.partition_of(kCaller.business);
  a.take(p);
  ASSERT_TRUE(wait_for([&] { return a.owns(p); }));
  const Outcome src = create_wallet(a, "src"), dst = create_wallet(a, "dst");
  ASSERT_TRUE(fund(a, src, 50'000).ok());
  ASSERT_TRUE(a.execute(transfer(src.id, dst.id, 20'000, "r1")).ok());
  // B follows as a standby: its state reaches A's without owning anything.
  ASSERT_TRUE(wait_for([&] { return b.durable_seq(p) == a.durable_seq(p); }));
  EXPECT_EQ(b.execute(transfer(src.id, dst.id, 1, "r-b")).rejection, Rejection::not_owner);

  const Epoch a_epoch = a.epoch(p);
  a.release({p});
  EXPECT_EQ(a.ownership(p), Ownership::standby);
  EXPECT_EQ(a.execute(transfer(src.id, dst.id, 1, "r-a")).rejection, Rejection::not_owner);
  b.take(p);
  ASSERT_TRUE(wait_for([&] { return b.owns(p); }));
  EXPECT_EQ(b.epoch(p), Epoch(a_epoch.value + 1)) << "the new writer's epoch follows the old one's";
  // B decides with A's state: the balance left (30,000) and the reference used.
  EXPECT_EQ(b.execute(transfer(src.id, dst.id, 30'001, "r2")).rejection, Rejection::insufficient_funds);
  const Outcome again = b.execute(transfer(src.id, dst.id, 20'000, "r1"));
  EXPECT_TRUE(again.ok());
  EXPECT_TRUE(again.replayed) << "the reference A used is known to B";
  EXPECT_TRUE(b.execute(transfer(src.id, dst.id, 30'000, "r3")).ok());
  // And A, a standby again, follows B.
  ASSERT_TRUE(wait_for([&] { return a.durable_seq(p) == b.durable_seq(p); }));
}

// A standby far behind the log (it reads one record at a time, and on its own only every minute)
// still takes over from the log's end: it reads the partition's tail before WriterStarted.
TEST(LedgerOwnership, ATakeoverReadsThePartitionToItsEndFirst) {
  SharedLog shared;
  NodeLog log_a(shared, 1), log_b(shared, 2, /*slow_reader=*/true);
  LedgerOptions lagging = cluster_options();
  lagging.standby_poll = 60s;
  Ledger a(log_a, cluster_options()), b(log_b, lagging);
  ASSERT_TRUE(a.start().ok());
  ASSERT_TRUE(b.start().ok());
  const Partition p = a.partition_of(kCaller.business);
  a.take(p);
  ASSERT_TRUE(wait_for([&] { return a.owns(p); }));
  const Outcome src = create_wallet(a, "src"), dst = create_wallet(a, "dst");
  ASSERT_TRUE(fund(a, src, 50'000).ok());
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(a.execute(transfer(src.id, dst.id, 1'000, "r" + std::to_string(i))).ok());
  const Seq last = a.durable_seq(p);
  EXPECT_LT(b.durable_seq(p), last) << "the standby is behind";
  a.release({p});
  b.take(p);
  ASSERT_TRUE(wait_for([&] { return b.owns(p); }));
  EXPECT_EQ(b.durable_seq(p), Seq(last.value + 1)) << "WriterStarted follows the partition's last event";
  EXPECT_EQ(b.execute(transfer(src.id, dst.id, 40'001, "r-over")).rejection, Rejection::insufficient_funds);
  EXPECT_TRUE(b.execute(transfer(src.id, dst.id, 1'000, "r3")).replayed);
  EXPECT_TRUE(b.execute(transfer(src.id, dst.id, 40'000, "r-all")).ok());
}

TEST(LedgerOwnership, AFencedWriterAcknowledgesNothingAndLetsThePartitionGo) {
  SharedLog shared;
  NodeLog log_a(shared, 1), log_b(shared, 2);
  Ledger a(log_a, cluster_options()), b(log_b, cluster_options());
  ASSERT_TRUE(a.start().ok());
  ASSERT_TRUE(b.start().ok());
  const Partition p = a.partition_of(kCaller.business);
  a.take(p);
  ASSERT_TRUE(wait_for([&] { return a.owns(p); }));
  const Outcome src = create_wallet(a, "src"), dst = create_wallet(a, "dst");
  ASSERT_TRUE(fund(a, src, 50'000).ok());
  // B is given the partition while A still thinks it owns it (A paused past its session).
  b.take(p);
  ASSERT_TRUE(wait_for([&] { return b.owns(p); }));
  const std::size_t before = events_of(shared.log, p).size();
  const Outcome zombie = a.execute(transfer(src.id, dst.id, 10'000, "z1"));
  EXPECT_FALSE(zombie.ok()) << "a fenced writer acknowledges nothing";
  EXPECT_TRUE(zombie.rejection == Rejection::unavailable || zombie.rejection == Rejection::not_owner);
  ASSERT_TRUE(wait_for([&] { return a.ownership(p) == Ownership::standby; }));
  EXPECT_EQ(a.execute(transfer(src.id, dst.id, 10'000, "z2")).rejection, Rejection::not_owner);
  EXPECT_EQ(events_of(shared.log, p).size(), before) << "nothing of the fenced writer reached the log";
  // B owns it and decides with everything A appended before it was fenced.
  EXPECT_TRUE(b.execute(transfer(src.id, dst.id, 50'000, "b1")).ok());
}

// Hold expiry is a duty of the partition's owner: after a takeover the new owner expires the
// holds the old one had not, and a hold is never expired twice, even by an old owner that was
// only paused and comes back after losing the partition (its append is fenced).
TEST(LedgerOwnership, AHoldExpiresOnceAcrossATakeoverEvenWithAZombie) {
  for (const bool zombie : {false, true}) {
    SCOPED_TRACE(zombie ? "the old owner is fenced, not released" : "the old owner releases");
    SharedLog shared;
    TestClock clock;
    NodeLog log_a(shared, 1), log_b(shared, 2);
    Ledger a(log_a, cluster_options(&clock)), b(log_b, cluster_options(&clock));
    ASSERT_TRUE(a.start().ok());
    ASSERT_TRUE(b.start().ok());
    const Partition p = a.partition_of(kCaller.business);
    a.take(p);
    ASSERT_TRUE(wait_for([&] { return a.owns(p); }));
    const Outcome src = create_wallet(a, "src");
    ASSERT_TRUE(fund(a, src, 50'000).ok());
    const Outcome first =
        a.execute(PlaceHold{kCaller, src.id, Kobo(10'000), "h1", std::nullopt, RawJson{}, 60});
    const Outcome second =
        a.execute(PlaceHold{kCaller, src.id, Kobo(5'000), "h2", std::nullopt, RawJson{}, 120});
    ASSERT_TRUE(first.ok() && second.ok());
    // The first hold expires on A.
    clock.now += 61'000;
    const auto expired = [&] {
      std::map<std::string, int> n;
      for (const Event& e : events_of(shared.log, p))
        if (const auto* x = std::get_if<HoldExpired>(&e.data)) ++n[x->hold.value];
      return n;
    };
    ASSERT_TRUE(wait_for([&] { return expired()[first.id] == 1; }));
    ASSERT_TRUE(wait_for([&] { return b.durable_seq(p) == a.durable_seq(p); }));
    if (!zombie) a.release({p});
    b.take(p);
    ASSERT_TRUE(wait_for([&] { return b.owns(p); }));
    // The second falls due with both writers running: B expires it; A, if it still thinks it
    // owns the partition, tries and is fenced.
    clock.now += 60'000;
    ASSERT_TRUE(wait_for([&] { return expired()[second.id] == 1; }));
    if (zombie) {
      ASSERT_TRUE(wait_for([&] { return a.ownership(p) == Ownership::standby; }));
    }
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(expired()[first.id], 1);
    EXPECT_EQ(expired()[second.id], 1);
    EXPECT_EQ(expired().size(), 2u);
  }
}

// Payout progress (the rail's steps) is a duty of the partition's owner too: a payout the old
// owner moved to processing is settled by the new one, once.
TEST(LedgerOwnership, APayoutInFlightIsSettledOnceByTheNewOwner) {
  for (const bool zombie : {false, true}) {
    SCOPED_TRACE(zombie ? "the old owner is fenced, not released" : "the old owner releases");
    SharedLog shared;
    TestClock clock;
    NodeLog log_a(shared, 1), log_b(shared, 2);
    LedgerOptions o = cluster_options(&clock);
    o.config.rail_delay = 60s;
    Ledger a(log_a, o), b(log_b, o);
    ASSERT_TRUE(a.start().ok());
    ASSERT_TRUE(b.start().ok());
    const Partition p = a.partition_of(kCaller.business);
    a.take(p);
    ASSERT_TRUE(wait_for([&] { return a.owns(p); }));
    const Outcome src = create_wallet(a, "src");
    ASSERT_TRUE(fund(a, src, 5'000'000).ok());
    const Outcome paid = a.execute(testing::bank_transfer(kCaller, src.id, Kobo(100'000)));
    ASSERT_TRUE(paid.ok()) << to_string(paid.rejection);
    const auto count = [&](EventType t) {
      int n = 0;
      for (const Event& e : events_of(shared.log, p)) n += e.type() == t ? 1 : 0;
      return n;
    };
    ASSERT_TRUE(wait_for([&] { return count(EventType::payout_processing) == 1; }));
    ASSERT_TRUE(wait_for([&] { return b.durable_seq(p) == a.durable_seq(p); }));
    if (!zombie) a.release({p});
    b.take(p);
    ASSERT_TRUE(wait_for([&] { return b.owns(p); }));
    clock.now += 61'000;
    ASSERT_TRUE(wait_for([&] { return count(EventType::payout_succeeded) == 1; }));
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(count(EventType::payout_processing), 1);
    EXPECT_EQ(count(EventType::payout_succeeded), 1);
  }
}

}  // namespace
}  // namespace kobo
