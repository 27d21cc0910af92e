// The single writer over the in-memory log: acknowledgement only after a durable append,
// replay on start, settlement, and no double spend under concurrency.
#include "command/ledger.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

#include "events/memory_log.h"

namespace kobo {
namespace {

using namespace std::chrono_literals;

constexpr std::uint32_t kPartitions = 3;
const Caller kCaller{"biz-ledger-test", "acc-1", false};

LedgerOptions options() {
  LedgerOptions o;
  o.config.partitions = kPartitions;
  return o;
}

std::string create_wallet(Ledger& l, const std::string& name) {
  const Outcome o = l.execute(CreateWallet{kCaller, name, "secondary", {}, {}});
  EXPECT_TRUE(o.ok()) << to_string(o.rejection);
  return o.record.at("publicId").get<std::string>();
}

Outcome fund(Ledger& l, const Outcome& wallet, std::int64_t amount) {
  Outcome o = l.execute(IncomingCredit{kCaller, wallet.record.at("accountNumber"), Kobo(amount), "f", "S",
                                       "0000014579", "058", "GTB", "000013"});
  EXPECT_TRUE(o.ok()) << to_string(o.rejection);
  return o;
}

WalletTransfer transfer(const std::string& src, const std::string& dst, std::int64_t amount, std::string ref) {
  WalletTransfer t;
  t.caller = kCaller;
  t.source = src;
  t.destination = dst;
  t.amount = Kobo(amount);
  t.narration = "n";
  t.reference = std::move(ref);
  t.fingerprint = "fp";
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
  { Ledger l(log, options()); ASSERT_TRUE(l.start().ok()); }
  { Ledger l(log, options()); ASSERT_TRUE(l.start().ok()); }
  std::vector<std::uint64_t> epochs;
  for (const Event& e : events_of(log))
    if (e.partition == Partition(0) && e.type == EventType::writer_started) epochs.push_back(e.epoch.value);
  EXPECT_EQ(epochs, (std::vector<std::uint64_t>{1, 2}));
}

TEST(Ledger, AnswersATransactionWithTheRecordItsEventCarries) {
  MemoryLog log(kPartitions);
  Ledger l(log, options());
  ASSERT_TRUE(l.start().ok());
  const Outcome w = l.execute(CreateWallet{kCaller, "src", "secondary", {}, {}});
  const std::string src = w.record.at("publicId"), dst = create_wallet(l, "dst");
  const Outcome funded = fund(l, w, 40'000);
  const Outcome sent = l.execute(transfer(src, dst, 25'000, "r1"));
  ASSERT_TRUE(funded.ok() && sent.ok());
  std::map<std::string, nlohmann::json> logged;  // publicId -> the transaction an event carries
  for (const Event& e : events_of(log))
    if (e.data.contains("transaction")) logged[e.data["transaction"]["publicId"]] = e.data["transaction"];
  for (const Outcome* o : {&funded, &sent}) {
    ASSERT_TRUE(o->record.is_object());
    EXPECT_EQ(o->record, logged.at(o->record.at("publicId")));
  }
  EXPECT_EQ(sent.record.at("entry"), "debit");
  EXPECT_EQ(funded.record.at("entry"), "credit");
}

TEST(Ledger, AFailedAppendAcknowledgesNothingAndChangesNothing) {
  MemoryLog log(kPartitions);
  Ledger l(log, options());
  ASSERT_TRUE(l.start().ok());
  const Outcome w = l.execute(CreateWallet{kCaller, "src", "secondary", {}, {}});
  const std::string src = w.record.at("publicId"), dst = create_wallet(l, "dst");
  fund(l, w, 30'000);
  const std::size_t before = events_of(log).size();

  log.fail_next_appends(1);
  const Outcome failed = l.execute(transfer(src, dst, 30'000, "r1"));
  EXPECT_EQ(failed.rejection, Rejection::unavailable);
  EXPECT_EQ(events_of(log).size(), before);

  // The writer re-read the log: the money is still there and the reference is still free.
  const Outcome retried = l.execute(transfer(src, dst, 30'000, "r1"));
  EXPECT_TRUE(retried.ok());
  EXPECT_FALSE(retried.replayed);
  EXPECT_EQ(retried.record.at("balance"), 0);
  EXPECT_EQ(l.execute(transfer(src, dst, 10'000, "r2")).rejection, Rejection::insufficient_funds);
}

TEST(Ledger, RebuildsItsStateFromTheLogOnStart) {
  MemoryLog log(kPartitions);
  std::string src, dst;
  {
    Ledger l(log, options());
    ASSERT_TRUE(l.start().ok());
    const Outcome w = l.execute(CreateWallet{kCaller, "src", "secondary", {}, {}});
    src = w.record.at("publicId");
    dst = create_wallet(l, "dst");
    fund(l, w, 50'000);
    ASSERT_TRUE(l.execute(transfer(src, dst, 20'000, "before-restart")).ok());
  }
  Ledger again(log, options());
  ASSERT_TRUE(again.start().ok());
  EXPECT_EQ(again.business_count(), 0u) << "no CreateBusiness was issued";
  EXPECT_TRUE(again.execute(transfer(src, dst, 20'000, "before-restart")).replayed);
  EXPECT_EQ(again.execute(transfer(src, dst, 30'001, "x")).rejection, Rejection::insufficient_funds);
  EXPECT_TRUE(again.execute(transfer(src, dst, 30'000, "y")).ok());
  EXPECT_EQ(again.execute(CreateWallet{kCaller, "src", "secondary", {}, {}}).rejection, Rejection::wallet_name_taken);
}

TEST(Ledger, SettlesAWalletTransferAfterItIsDurable) {
  MemoryLog log(kPartitions);
  Ledger l(log, options());
  ASSERT_TRUE(l.start().ok());
  const Outcome w = l.execute(CreateWallet{kCaller, "src", "secondary", {}, {}});
  const std::string dst = create_wallet(l, "dst");
  fund(l, w, 10'000);
  const Outcome t = l.execute(transfer(w.record.at("publicId"), dst, 10'000, "r"));
  ASSERT_TRUE(t.ok());
  bool settled = false;
  for (int i = 0; i < 100 && !settled; ++i) {
    for (const Event& e : events_of(log))
      if (e.type == EventType::transaction_status_changed && e.data.at("publicId") == t.transaction) settled = true;
    if (!settled) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(settled);
}

TEST(Ledger, NeverSpendsMoreThanTheBalanceUnderConcurrency) {
  MemoryLog log(kPartitions);
  Ledger l(log, options());
  ASSERT_TRUE(l.start().ok());
  const Outcome w = l.execute(CreateWallet{kCaller, "src", "secondary", {}, {}});
  const std::string src = w.record.at("publicId"), dst = create_wallet(l, "dst");
  constexpr int kAffordable = 37;
  fund(l, w, kAffordable * 10'000 + 9'999);
  std::atomic<int> ok{0}, poor{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        const Outcome o = l.execute(transfer(src, dst, 10'000, "t" + std::to_string(t) + "-" + std::to_string(i)));
        if (o.ok()) ++ok;
        else if (o.rejection == Rejection::insufficient_funds) ++poor;
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

}  // namespace
}  // namespace kobo
