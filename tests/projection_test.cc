// The projector: views built incrementally, across restarts, equal views rebuilt from scratch.
#include "projection/projector.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <random>
#include <set>
#include <span>
#include <thread>

#include "command/ledger.h"
#include "events/fact_codec.h"
#include "events/log_follower.h"
#include "events/memory_log.h"
#include "projection/bitmap.h"
#include "projection/rebuild.h"
#include "projection/render.h"
#include "projection/rows.h"
#include "projection/view_keys.h"
#include "tests/support/commands.h"
#include "tests/support/node.h"
#include "tests/support/scratch_dir.h"

namespace kobo {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;

constexpr std::uint32_t kPartitions = 2;
const Caller kCaller{"biz-projection", "acc-p", false};

std::map<std::string, std::string> dump(const Views& v) {
  std::map<std::string, std::string> out;
  std::unique_ptr<rocksdb::Iterator> it(v.db().NewIterator(rocksdb::ReadOptions()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) out[it->key().ToString()] = it->value().ToString();
  return out;
}

// Every event of `log`, in log order within each partition.
std::vector<Event> events_of(EventLog& log) {
  struct Collect final : LogVisitor {
    std::vector<Event> events;
    Status accepted(const Event& e) override {
      events.push_back(e);
      return {};
    }
  } collect;
  LogFollower follower(log);
  EXPECT_TRUE(follower.open().ok());
  EXPECT_TRUE(follower.follow_to_end(collect).ok());
  return std::move(collect.events);
}

class ProjectionTest : public ::testing::Test {
 protected:
  // A node's writer on a log in memory (tests/support/node.h); a test starts the node's projector
  // into its views, or projectors of its own into views it names.
  void SetUp() override {
    ASSERT_TRUE(node_.start_writer().ok());
    ledger_ = &node_.ledger();
  }

  std::unique_ptr<Views> open_views(const std::string& name) {
    auto v = Views::open((dir_ / name).string(), kPartitions);
    EXPECT_TRUE(v.ok());
    return std::move(v).value();
  }

  // Some wallets, funding and transfers, all waited for.
  std::vector<std::string> traffic(const std::string& prefix, int wallets) {
    std::vector<std::string> ids;
    for (int i = 0; i < wallets; ++i) {
      const Outcome w =
          ledger_->execute(CreateWallet{kCaller, prefix + std::to_string(i), "secondary", {}, {}});
      EXPECT_TRUE(w.ok());
      ids.push_back(w.id);
      EXPECT_TRUE(ledger_
                      ->execute(IncomingCredit{kCaller, account_number(w), Kobo(100'000), "f", "S",
                                               "0000014579", "058", "GTB", "000013"})
                      .ok());
    }
    for (int i = 0; i + 1 < wallets; ++i) {
      WalletTransfer t;
      t.caller = kCaller;
      t.source = ids[static_cast<std::size_t>(i)];
      t.destination = ids[static_cast<std::size_t>(i + 1)];
      t.amount = Kobo(10'000 * (i + 1));
      t.narration = "n";
      t.reference = prefix + "-ref-" + std::to_string(i);
      EXPECT_TRUE(ledger_->execute(t).ok());
    }
    return ids;
  }

  static std::string account_number(const Outcome& opened) {
    return std::get<WalletOpened>(opened.events.at(0).data).account_number;
  }

  void wait_caught_up(const Projector& p) { wait_caught_up(p, *ledger_); }
  static void wait_caught_up(const Projector& p, const Ledger& ledger) {
    for (std::uint32_t i = 0; i < kPartitions; ++i)
      ASSERT_TRUE(p.wait_applied(Partition(i), ledger.durable_seq(Partition(i)), 5s));
  }

  testing::ScratchDir dir_;
  testing::Node node_{dir_.path(), {.partitions = kPartitions}};
  MemoryLog& log_ = node_.memory_log();
  Ledger* ledger_ = nullptr;
};

TEST_F(ProjectionTest, IncrementalViewsAcrossARestartEqualAFullRebuild) {
  {
    ASSERT_TRUE(node_.start_projector().ok());
    traffic("first", 4);
    wait_caught_up(node_.projector());
    node_.close_views();
  }
  ASSERT_TRUE(node_.start_projector().ok());
  Views* const views = &node_.views();
  {
    traffic("second", 3);
    std::this_thread::sleep_for(50ms);  // let settlements land too
    wait_caught_up(node_.projector());
    node_.stop_projector();
  }
  auto rebuilt = open_views("rebuilt");
  Projector fresh(log_, *rebuilt);
  ASSERT_TRUE(fresh.catch_up().ok());
  EXPECT_EQ(dump(*views), dump(*rebuilt));
  // kobo replay's rebuild writes sorted files that the views ingest, in lanes: the same rows,
  // whether a lane writes one file or one per command, later ones reading the rows of earlier
  // ones back (files of one byte, polls of two records: a poll ends mid-command too).
  for (const std::uint32_t lanes : {1u, 2u}) {
    // A scope's events of a file of their own (one byte makes every run one) change nothing either.
    for (const RebuildOptions& shape :
         {RebuildOptions{.lanes = lanes},
          RebuildOptions{.lanes = lanes, .file_bytes = 1, .poll_records_max = 2},
          RebuildOptions{.lanes = lanes, .file_bytes = 1, .run_file_bytes = 1, .poll_records_max = 2},
          RebuildOptions{.lanes = lanes, .run_file_bytes = 1},
          // Lanes that hold 2 events at most: the reader holds back the partitions of a lane
          // with 1 (Projector::hold_back) and reads the others first.
          RebuildOptions{.lanes = lanes, .file_bytes = 1, .poll_records_max = 2, .lane_events_max = 2},
          RebuildOptions{.lanes = lanes, .lane_events_max = 2}}) {
      const std::string name = std::to_string(lanes) + " lanes, files of " +
                               std::to_string(shape.file_bytes) + ", runs of " +
                               std::to_string(shape.run_file_bytes) + ", lanes of " +
                               std::to_string(shape.lane_events_max) + " events";
      auto ingested = rebuild_views(log_, dir_ / ("ingested " + name), {}, {}, shape);
      ASSERT_TRUE(ingested.ok()) << ingested.status().message();
      EXPECT_EQ(dump(*views), dump(*ingested.value())) << name;
    }
  }
}

// A rebuild's lanes share the partitions by the events each holds (assign_lanes()), so that
// uneven partitions do not leave one lane applying alone at the end.
TEST(AssignLanes, SharesUnevenPartitionsSoThatTheLanesFinishTogether) {
  EXPECT_EQ(assign_lanes(6, 2), (std::vector<std::uint32_t>{0, 1, 0, 1, 0, 1}));
  // The benchmark's log: its businesses fill three of six partitions.
  const std::vector<std::uint64_t> events{2, 335'197, 504'781, 2, 168'136, 2};
  const auto lane_of = assign_lanes(6, 2, events);
  ASSERT_EQ(lane_of.size(), 6u);
  std::vector<std::uint64_t> load(2);
  for (std::uint32_t p = 0; p < 6; ++p) load.at(lane_of[p]) += events[p];
  EXPECT_EQ(load[0], 504'781u);
  EXPECT_EQ(load[1], 335'197u + 168'136 + 3 * 2);
  // Every lane applies a partition, even where none holds an event.
  auto idle = assign_lanes(4, 4, std::vector<std::uint64_t>(4, 0));
  std::sort(idle.begin(), idle.end());
  EXPECT_EQ(idle, (std::vector<std::uint32_t>{0, 1, 2, 3}));
  auto one_busy = assign_lanes(3, 2, {0, 9, 0});
  EXPECT_EQ(one_busy, (std::vector<std::uint32_t>{1, 0, 1}));
}

TEST_F(ProjectionTest, BalancesAndTransactionsAreReadable) {
  ASSERT_TRUE(node_.start_projector().ok());
  Views* const views = &node_.views();
  Projector& p = node_.projector();
  const auto ids = traffic("w", 2);
  std::this_thread::sleep_for(50ms);
  wait_caught_up(p);
  const Scope scope{kCaller.business, false};
  EXPECT_EQ(json::parse(*views->wallet_text(scope, ids[0]).value()).at("balance"), 90'000);
  EXPECT_EQ(json::parse(*views->wallet_text(scope, ids[1]).value()).at("balance"), 110'000);
  EXPECT_FALSE(views->wallet_text(Scope{"biz-other", false}, ids[0]).value().has_value());
  EXPECT_FALSE(views->wallet_text(Scope{kCaller.business, true}, ids[0]).value().has_value());
  auto debit = views->transaction_by_reference_text(scope, kCaller.account, "w-ref-0").value();
  ASSERT_TRUE(debit.has_value());
  EXPECT_EQ(json::parse(*debit).at("status"), "success");
  const Page all = views->transactions(scope, {}, PageRequest{1, 2}).value();
  EXPECT_EQ(all.total_count, 4u);  // two fundings, one debit, one credit
  ASSERT_EQ(all.items.size(), 2u);
  TransactionFilter debits;
  debits.entry = "debit";
  EXPECT_EQ(views->transactions(scope, debits, PageRequest{1, 10}).value().total_count, 1u);
}

// docs/architecture.md section 5: a final record whose id derives from its event's first record's
// (a transfer's credit), and a reference derived from its record's id, have no row of their own;
// the views find them from the first's row and check the event names them.
TEST_F(ProjectionTest, ARecordDerivedFromItsEventsFirstIsFoundWithoutARowOfItsOwn) {
  ASSERT_TRUE(node_.start_projector().ok());
  Views* const views = &node_.views();
  traffic("d", 2);  // funds d-0 and moves 10,000 kobo with reference d-ref-0
  wait_caught_up(node_.projector());
  const Scope scope{kCaller.business, false};
  const auto debit =
      json::parse(*views->transaction_by_reference_text(scope, kCaller.account, "d-ref-0").value());
  const TransactionId debit_id(debit.at("publicId").get<std::string>());
  const TransactionId credit_id = nth_transaction_id(debit_id, 1);
  const std::string credit_reference = derived_reference("ref-", credit_id);
  ASSERT_EQ(first_of_nth(credit_id, 1), debit_id) << "a transfer's ids are time-ordered, so invertible";

  EXPECT_TRUE(views->read(view_keys::transaction(debit_id.value)).value().has_value());
  EXPECT_FALSE(views->read(view_keys::transaction(credit_id.value)).value().has_value());
  EXPECT_FALSE(views->read(view_keys::transaction_reference(kCaller.account, false, credit_reference))
                   .value()
                   .has_value());

  const auto by_id = views->transaction_text(scope, kCaller.account, credit_id.value).value();
  ASSERT_TRUE(by_id.has_value());
  EXPECT_EQ(json::parse(*by_id).at("publicId"), credit_id.value);
  EXPECT_EQ(json::parse(*by_id).at("entry"), "credit");
  const auto by_reference = views->transaction_text(scope, kCaller.account, credit_reference).value();
  ASSERT_TRUE(by_reference.has_value());
  EXPECT_EQ(*by_reference, *by_id);
  // Its webhook event is found as its debit's is (announced by their event, when it was).
  const auto event = views->webhook_event_of(scope, credit_id.value).value();
  EXPECT_EQ(event.has_value(), views->webhook_event_of(scope, debit_id.value).value().has_value());
  if (event) {
    EXPECT_NE(event->body.find(credit_id.value), std::string::npos) << event->body;
  }

  // Not found: another scope or account, a third record the event does not create, an id one bit
  // off, a reference of another kind.
  EXPECT_FALSE(
      views->transaction_text(Scope{kCaller.business, true}, kCaller.account, credit_id.value).value());
  EXPECT_FALSE(views->transaction_text(scope, "acc-other", credit_reference).value());
  EXPECT_FALSE(
      views->transaction_text(scope, kCaller.account, nth_transaction_id(debit_id, 2).value).value());
  std::string off = credit_id.value;
  off.back() = off.back() == '0' ? '1' : '0';
  EXPECT_FALSE(views->transaction_text(scope, kCaller.account, off).value());
  EXPECT_FALSE(views->transaction_text(scope, kCaller.account, "swp-" + credit_reference.substr(4)).value());
}

// query-api answers a write with the record its events render (projection/render.h): the same
// record the views then show, so an answer and a GET after it agree.
TEST_F(ProjectionTest, TheRecordAWriteAnswersIsTheOneTheViewsShow) {
  ASSERT_TRUE(node_.start_projector().ok());
  Views* const views = &node_.views();
  Projector& p = node_.projector();
  const Outcome a = ledger_->execute(CreateWallet{kCaller, "answer-a", "secondary", {}, {}});
  const Outcome b = ledger_->execute(CreateWallet{kCaller, "answer-b", "secondary", {}, {}});
  ASSERT_TRUE(a.ok() && b.ok());
  wait_caught_up(p);
  const Outcome credit = ledger_->execute(IncomingCredit{kCaller, account_number(a), Kobo(50'000), "f", "S",
                                                         "0000014579", "058", "GTB", "000013"});
  ASSERT_TRUE(credit.ok());
  wait_caught_up(p);
  WalletTransfer t{kCaller, a.id, b.id, Kobo(20'000), "rent", std::string("answer-ref"), std::nullopt};
  const Outcome transfer = ledger_->execute(t);
  ASSERT_TRUE(transfer.ok());
  wait_caught_up(p);

  const Scope scope{kCaller.business, false};
  const ViewRecords records(*views);
  // A wallet's answer is its record as opened; the views' copy has since moved its balance.
  const auto opened_text = render::created_record(a.events, a.id, records, {});
  ASSERT_TRUE(opened_text.has_value());
  EXPECT_EQ(*opened_text, json::parse(*opened_text).dump());
  auto opened = std::optional<json>(json::parse(*opened_text));
  EXPECT_EQ(opened->at("balance"), 0);
  json shown = json::parse(*views->wallet_text(scope, a.id).value());
  EXPECT_EQ(shown.at("balance"), 30'000);
  for (const char* member : {"balance", "availableBalance", "updatedAt", "lastUpdated"}) {
    opened->erase(member);
    shown.erase(member);
  }
  EXPECT_EQ(opened->dump(), shown.dump());

  for (const Outcome* o : {&credit, &transfer}) {
    auto answer = render::created_record(o->events, o->id, records, {});
    ASSERT_TRUE(answer.has_value());
    EXPECT_EQ(*answer, views->transaction_text(scope, kCaller.account, o->id).value().value());
    // Rendered as text, in the form dump() gives the decoded record (record_text.h).
    EXPECT_EQ(*answer, json::parse(*answer).dump());
  }
  EXPECT_EQ(render::created_record(transfer.events, "trx-none", records, {}), std::nullopt);
  // A transfer's answer shows it pending (docs/architecture.md section 7), and differs in nothing else.
  json pending = json::parse(
      *render::created_record(transfer.events, transfer.id, records, {}, TransactionStatus::pending));
  json settled = json::parse(*views->transaction_text(scope, kCaller.account, transfer.id).value());
  EXPECT_EQ(pending.at("status"), "pending");
  EXPECT_EQ(settled.at("status"), "success");
  pending.erase("status");
  settled.erase("status");
  EXPECT_EQ(pending, settled);

  // A payout is shown as created until the rail moves it; then the views render its status steps.
  const Outcome payout = ledger_->execute(testing::bank_transfer(kCaller, a.id, Kobo(1'000)));
  ASSERT_TRUE(payout.ok());
  wait_caught_up(p);
  const auto payout_answer = render::created_record(payout.events, payout.id, records, {});
  ASSERT_TRUE(payout_answer.has_value()) << "the payout's id";
  json answered = json::parse(*payout_answer);
  json now = json::parse(*views->transaction_text(scope, kCaller.account, payout.id).value());
  EXPECT_EQ(answered.at("status"), "pending");
  if (now.at("status") != "pending") {  // the rail moved it meanwhile: its steps show
    EXPECT_TRUE(now.at("meta").contains("verify"));
    now["meta"].erase("verify");
  }
  for (json* r : {&answered, &now})
    for (const char* member : {"status", "updatedAt"}) r->erase(member);
  EXPECT_EQ(answered, now);
}

// A record belongs to the business and mode of the event that created it, whatever bytes the
// business id holds; a wallet another scope owns is not found, not refused.
TEST_F(ProjectionTest, ARecordsScopeIsTheBusinessAndModeOfItsEvent) {
  auto views = open_views("scope");
  const std::string odd = "biz \"q\" \xc3\xa9 \\ \x01";
  const auto put_wallet = [&](const std::string& id, const std::string& business, bool live) {
    Event e;
    e.business = business;
    e.live = live;
    e.time = 1'764'000'000'000;
    WalletOpened w;
    w.account = AccountId("acc-1");
    w.account_number = "0000000044";
    w.bank_code = "099999";
    w.bank_name = "Kobo Sandbox MFB";
    w.id = 1;
    w.name = "w";
    w.wallet = WalletId(id);
    e.data = w;
    ASSERT_TRUE(views->db().Put(rocksdb::WriteOptions(), view_keys::wallet(id), encode_fact(e)).ok());
    ASSERT_TRUE(views->db()
                    .Put(rocksdb::WriteOptions(), view_keys::wallet_row(id), rows::encode(render::opened(e)))
                    .ok());
  };
  put_wallet("vba-plain", "biz-1", false);
  put_wallet("vba-odd", odd, true);
  const auto text = [&](const std::string& business, bool live, const std::string& id) {
    return views->wallet_text(Scope{business, live}, id).value();
  };
  ASSERT_TRUE(text("biz-1", false, "vba-plain").has_value());
  EXPECT_EQ(json::parse(*text("biz-1", false, "vba-plain")).at("auth"), "biz-1");
  EXPECT_FALSE(text("biz-1", true, "vba-plain"));
  EXPECT_FALSE(text("biz-2", false, "vba-plain"));
  ASSERT_TRUE(text(odd, true, "vba-odd").has_value());
  EXPECT_EQ(json::parse(*text(odd, true, "vba-odd")).at("auth"), odd);
  EXPECT_FALSE(text("biz \"q\" \xc3\xa9 \\ ", true, "vba-odd"));
  EXPECT_FALSE(text("biz-1", false, "vba-missing"));

  // A row the views cannot decode is an error to answer (503), never a crash or a record.
  ASSERT_TRUE(views->db().Put(rocksdb::WriteOptions(), view_keys::wallet("vba-bad"), "\x01\x03").ok());
  EXPECT_FALSE(views->wallet_text(Scope{"biz-1", false}, "vba-bad").ok());
}

// The asynchronous read barrier: no thread waits, every caller is answered exactly once.
TEST_F(ProjectionTest, WhenAppliedAnswersOnceAppliedOnTimeoutAndOnStop) {
  ASSERT_TRUE(node_.start_projector().ok());
  Projector& p = node_.projector();
  traffic("w", 2);
  wait_caught_up(p);
  const Partition part(0);
  auto waiter = [&](Seq seq, std::chrono::milliseconds timeout) {
    auto answered = std::make_shared<std::promise<bool>>();
    auto calls = std::make_shared<std::atomic<int>>(0);
    p.when_applied(part, seq, timeout, [answered, calls](bool applied) {
      if (calls->fetch_add(1) == 0) answered->set_value(applied);
    });
    return std::pair{answered->get_future(), calls};
  };

  // Applied already: answered before when_applied returns.
  auto [now, now_calls] = waiter(ledger_->durable_seq(part), 5s);
  ASSERT_EQ(now.wait_for(0s), std::future_status::ready);
  EXPECT_TRUE(now.get());

  // Not yet appended: answered true once it is applied, not before.
  const Seq next(ledger_->durable_seq(part).value + 1);
  auto [later, later_calls] = waiter(next, 10s);
  EXPECT_EQ(later.wait_for(200ms), std::future_status::timeout);
  // A command lands in partition 0 or 1; append until partition 0 moves.
  for (int i = 0; ledger_->durable_seq(part) < next; ++i) {
    ASSERT_LT(i, 50) << "no command reached partition 0";
    const Caller other{"biz-when-applied-" + std::to_string(i), "acc-w", false};
    ASSERT_TRUE(ledger_->execute(CreateWallet{other, "w", "secondary", {}, {}}).ok());
  }
  ASSERT_EQ(later.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(later.get());

  // Never appended: answered false at its deadline, within a tick or so.
  const auto asked = std::chrono::steady_clock::now();
  auto [never, never_calls] = waiter(Seq(next.value + 1'000), 300ms);
  ASSERT_EQ(never.wait_for(5s), std::future_status::ready);
  EXPECT_FALSE(never.get());
  EXPECT_GE(std::chrono::steady_clock::now() - asked, 300ms);

  // Waiting when the projector stops: answered false by stop().
  auto [stopped, stopped_calls] = waiter(Seq(next.value + 1'000), 60s);
  EXPECT_EQ(stopped.wait_for(100ms), std::future_status::timeout);
  p.stop();
  ASSERT_EQ(stopped.wait_for(0s), std::future_status::ready);
  EXPECT_FALSE(stopped.get());
  // And one asked after the stop is answered at once.
  auto [after, after_calls] = waiter(Seq(next.value + 1'000), 60s);
  ASSERT_EQ(after.wait_for(0s), std::future_status::ready);
  EXPECT_FALSE(after.get());

  std::this_thread::sleep_for(2 * Projector::kWaiterTick);
  for (const auto& calls : {now_calls, later_calls, never_calls, stopped_calls, after_calls})
    EXPECT_EQ(calls->load(), 1) << "a waiter was answered more than once";
}

// Flushes spaced out (ProjectorOptions::flush_spacing) hold the views back only while nobody
// waits: what the log gained is not applied before the spacing runs out, but a read barrier that
// waits for it ends the spacing at once, and every event is applied all the same.
TEST_F(ProjectionTest, SpacedFlushesHoldBackOnlyWhileNobodyWaits) {
  auto views = open_views("spaced");
  ProjectorOptions o;
  o.flush_spacing = 3s;
  Projector p(log_, *views, o);
  ASSERT_TRUE(p.start().ok());
  traffic("s", 2);
  wait_caught_up(p);  // the first flush, and the waiters end the spacing of the ones after it

  // Another command, not waited for: the projector has it within a poll, and holds it back.
  const Outcome w = ledger_->execute(CreateWallet{kCaller, "spaced", "secondary", {}, {}});
  ASSERT_TRUE(w.ok());
  std::this_thread::sleep_for(500ms);
  EXPECT_LT(p.applied_seq(w.partition), w.seq) << "a flush went out before its spacing ran out";

  // A waiter ends the spacing: answered well before the 3 s would have passed.
  const auto asked = std::chrono::steady_clock::now();
  ASSERT_TRUE(p.wait_applied(w.partition, w.seq, 10s));
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 1500ms) << "the waiter waited out the spacing";

  // And the views are the rebuild's: spacing changes when a flush goes, not what it holds.
  traffic("t", 3);
  wait_caught_up(p);
  p.stop();
  auto rebuilt = open_views("spaced-rebuild");
  Projector r(log_, *rebuilt);
  ASSERT_TRUE(r.catch_up().ok());
  EXPECT_EQ(dump(*views), dump(*rebuilt));
}

// Any combination of the transaction list's filters (entry, status, amount, live, a createdAt
// range) answers what filtering every record says, in the order of (createdAt, id) descending,
// page by page with the exact totalCount: across days, through payouts moving from status to
// status, and while the writer's clock goes back (records earlier than those before them, which
// the list places by time: list_index.h). And the bitmaps, built batch by batch, equal a
// rebuild's.
TEST_F(ProjectionTest, EveryCombinationOfTransactionFiltersAgreesWithFilteringEveryRecord) {
  constexpr UnixMs kStart = 20'000 * kMsPerDay + 5'000;
  std::atomic<UnixMs> clock{kStart};
  LedgerOptions o;
  o.config.partitions = kPartitions;
  o.config.rail_delay = 1'000ms;
  o.clock = [&clock] { return clock.load(); };
  testing::Node node(dir_ / "lists", {.partitions = kPartitions, .ledger = o});
  ASSERT_TRUE(node.start().ok());
  EventLog& log = node.log();
  Ledger& ledger = node.ledger();
  Views* const views = &node.views();
  Projector& projector = node.projector();

  std::vector<Outcome> wallets;
  for (int i = 0; i < 3; ++i) {
    wallets.push_back(
        ledger.execute(CreateWallet{kCaller, "lists-" + std::to_string(i), "secondary", {}, {}}));
    ASSERT_TRUE(wallets.back().ok());
    ASSERT_TRUE(ledger
                    .execute(IncomingCredit{kCaller, account_number(wallets.back()), Kobo(50'000'000), "f",
                                            "S", "0000014579", "058", "GTB", "000013"})
                    .ok());
  }
  // What fell due under the virtual clock is decided when a command comes: this one is refused.
  const auto move_clock = [&](std::chrono::milliseconds by) {
    clock += by.count();
    WalletTransfer nudge;
    nudge.caller = kCaller;
    nudge.source = "vba-none";
    nudge.destination = wallets[0].id;
    nudge.amount = Kobo(10'000);
    nudge.narration = "nudge";
    EXPECT_EQ(ledger.execute(nudge).rejection, Rejection::source_not_found);
  };
  int n = 0;
  for (int day = 0; day < 4; ++day) {
    clock = kStart + day * kMsPerDay;
    for (int i = 0; i < 5; ++i, ++n) {
      // Day 2's third and fourth commands come from a clock that went back a day and an hour.
      if (day == 2 && i == 2) clock -= kMsPerDay + 3'600'000;
      if (day == 2 && i == 4) clock = kStart + day * kMsPerDay + 60'000;
      WalletTransfer t;
      t.caller = kCaller;
      t.source = wallets[static_cast<std::size_t>(n % 3)].id;
      t.destination = wallets[static_cast<std::size_t>((n + 1) % 3)].id;
      t.amount = Kobo(10'000 * (1 + n % 4));
      t.narration = "t";
      ASSERT_TRUE(ledger.execute(t).ok());
      BankTransfer b = testing::bank_transfer(kCaller, t.source, Kobo(10'000 * (1 + n % 3)), "bka-lists");
      if (n % 4 == 0) b.metadata = RawJson{R"({"sandboxOutcome":"failed"})"};
      ASSERT_TRUE(ledger.execute(b).ok());
      move_clock(600ms);  // some payouts move on, some stay where they are
    }
  }
  wait_caught_up(projector, ledger);

  // The oracle: every transaction record of the scope, each read by its id, newest first, and
  // filtered one by one.
  const Scope scope{kCaller.business, false};
  std::vector<json> records;
  for (const Event& e : events_of(log))
    for (const CreatedTransaction& t : transactions_created(e.data))
      if (auto record = views->transaction(scope, "", t.id.value).value())
        records.push_back(std::move(*record));
  std::sort(records.begin(), records.end(), [](const json& a, const json& b) {
    return std::pair{*parse_iso8601(a.at("createdAt").get<std::string>()), a.at("id").get<std::uint64_t>()} >
           std::pair{*parse_iso8601(b.at("createdAt").get<std::string>()), b.at("id").get<std::uint64_t>()};
  });
  std::set<std::string> statuses;
  for (const json& t : records) statuses.insert(t.at("status").get<std::string>());
  EXPECT_GE(statuses.size(), 3u) << "the payouts did not move through enough statuses to test the lists";
  // Some records are earlier than records before them in the log (the clock went back).
  std::size_t displaced = 0;
  {
    UnixMs latest = 0;
    for (const Event& e : events_of(log))
      for (std::size_t k = 0; k < transactions_created_count(e.data); ++k) {
        if (e.time < latest) ++displaced;
        latest = std::max(latest, e.time);
      }
  }
  EXPECT_GE(displaced, 4u) << "the clock going back displaced no record: the test tests little";

  const auto day_start = [](int day) { return kStart - kStart % kMsPerDay + day * kMsPerDay; };
  using Part = std::pair<std::string, std::function<void(TransactionFilter&)>>;
  std::vector<Part> entries{{"", {}}}, status_values{{"", {}}}, amounts{{"", {}}}, lives{{"", {}}},
      ranges{{"", {}}};
  for (const char* entry : {"credit", "debit"})
    entries.push_back({std::string(" entry=") + entry, [entry](TransactionFilter& f) { f.entry = entry; }});
  for (const char* status : {"pending", "processing", "success", "failed"})
    status_values.push_back(
        {std::string(" status=") + status, [status](TransactionFilter& f) { f.status = status; }});
  for (const std::int64_t amount : {10'000, 20'000, 40'000, 12'345})
    amounts.push_back(
        {" amount=" + std::to_string(amount), [amount](TransactionFilter& f) { f.amount = amount; }});
  for (const bool live : {false, true})
    lives.push_back({live ? " live=true" : " live=false", [live](TransactionFilter& f) { f.live = live; }});
  ranges.push_back({" day 1", [&](TransactionFilter& f) {
                      f.created_from = day_start(1);
                      f.created_until = day_start(2);
                    }});
  ranges.push_back({" days 1-2", [&](TransactionFilter& f) {
                      f.created_from = day_start(1);
                      f.created_until = day_start(3);
                    }});
  ranges.push_back({" from day 2", [&](TransactionFilter& f) { f.created_from = day_start(2); }});
  ranges.push_back({" until day 1", [&](TransactionFilter& f) { f.created_until = day_start(1); }});
  ranges.push_back({" day 2, its first hour", [&](TransactionFilter& f) {
                      f.created_from = day_start(2);
                      f.created_until = day_start(2) + 3'600'000;
                    }});
  ranges.push_back({" an empty range", [&](TransactionFilter& f) {
                      f.created_from = day_start(3);
                      f.created_until = day_start(1);
                    }});

  int combinations = 0, matched_some = 0;
  for (const Part& entry : entries)
    for (const Part& status : status_values)
      for (const Part& amount : amounts)
        for (const Part& live : lives)
          for (const Part& range : ranges) {
            TransactionFilter filter;
            std::string name;
            for (const Part* part : {&entry, &status, &amount, &live, &range}) {
              if (part->second) part->second(filter);
              name += part->first;
            }
            ++combinations;
            std::vector<std::string> expected;
            for (const json& t : records) {
              const UnixMs created = *parse_iso8601(t.at("createdAt").get<std::string>());
              if ((filter.entry && t.at("entry") != *filter.entry) ||
                  (filter.status && t.at("status") != *filter.status) ||
                  (filter.amount && t.at("amount") != *filter.amount) ||
                  (filter.live && *filter.live != scope.live) ||
                  (filter.created_from && created < *filter.created_from) ||
                  (filter.created_until && created >= *filter.created_until))
                continue;
              expected.push_back(t.at("publicId").get<std::string>());
            }
            if (!expected.empty()) ++matched_some;
            for (std::uint64_t page = 1; page <= expected.size() / 7 + 2; ++page) {
              const Page got = views->transactions(scope, filter, PageRequest{page, 7}).value();
              ASSERT_EQ(got.total_count, expected.size()) << name << ", page " << page;
              std::vector<std::string> ids;
              for (const std::string& t : got.items)
                ids.push_back(json::parse(t).at("publicId").get<std::string>());
              const auto from = std::min<std::size_t>(expected.size(), (page - 1) * 7);
              const auto to = std::min<std::size_t>(expected.size(), page * 7);
              ASSERT_EQ(ids, std::vector<std::string>(expected.begin() + static_cast<std::ptrdiff_t>(from),
                                                      expected.begin() + static_cast<std::ptrdiff_t>(to)))
                  << name << ", page " << page;
            }
          }
  EXPECT_EQ(combinations, 3 * 5 * 5 * 3 * 7);
  EXPECT_GE(matched_some, 300) << "most combinations match nothing: the test tests little";

  // A page whose first index does not fit in 64 bits ((2^62) * 64 would wrap to 0): past the end.
  TransactionFilter debits;
  debits.entry = "debit";
  for (const auto& filter : {TransactionFilter{}, debits}) {
    const Page far =
        views->transactions(scope, filter, PageRequest{(std::uint64_t{1} << 62) + 1, 64}).value();
    EXPECT_TRUE(far.items.empty()) << "a page far past the end is empty";
    EXPECT_GT(far.total_count, 0u);
  }

  projector.stop();
  auto rebuilt = open_views("lists-rebuilt");
  Projector fresh(log, *rebuilt);
  ASSERT_TRUE(fresh.catch_up().ok());
  EXPECT_EQ(dump(*views), dump(*rebuilt));
}

// The wallet and beneficiary lists: every combination of their filters and every page says what
// filtering every record says (list_index.h).
TEST_F(ProjectionTest, EveryCombinationOfWalletAndBeneficiaryFiltersAgreesWithFilteringEveryRecord) {
  auto views = open_views("record-lists");
  Projector p(log_, *views);
  ASSERT_TRUE(p.start().ok());
  for (int i = 0; i < 13; ++i)
    ASSERT_TRUE(ledger_
                    ->execute(CreateWallet{
                        kCaller, "list-" + std::to_string(i), i % 3 == 0 ? "primary" : "secondary", {}, {}})
                    .ok());
  const char* types[] = {"vba", "external", "personal"};
  const char* names[] = {"Ada", "Ada|Obi", "Bola"};  // a name that another one begins
  for (int i = 0; i < 11; ++i)
    ASSERT_TRUE(
        ledger_
            ->execute(AddBankAccount{kCaller, "bka-list-" + std::to_string(i), names[i % 3],
                                     "00000" + std::to_string(10'000 + i), "GTB", "058", types[i % 3]})
            .ok());
  wait_caught_up(p);
  const Scope scope{kCaller.business, kCaller.live};

  // The oracle: every record of a kind in the scope, newest (highest id) first.
  const auto all_of = [&](const std::string& tag) {
    std::vector<json> out;
    for (const Event& e : events_of(log_)) {
      std::string id;
      if (const auto* w = std::get_if<WalletOpened>(&e.data); w != nullptr && tag == "W")
        id = w->wallet.value;
      if (const auto* b = std::get_if<BeneficiarySaved>(&e.data); b != nullptr && tag == "D")
        id = b->bank_account.value;
      if (id.empty()) continue;
      const auto text =
          (tag == "W" ? views->wallet_text(scope, id) : views->bank_account_text(scope, id)).value();
      if (!text) continue;
      out.push_back(json::parse(*text));
    }
    std::sort(out.begin(), out.end(), [](const json& a, const json& b) {
      return std::stoull(a.at("id").dump()) > std::stoull(b.at("id").dump());
    });
    return out;
  };
  const auto expect_pages = [](const std::string& name, const std::vector<json>& records, const auto& keep,
                               const auto& list) {
    std::vector<std::string> expected;
    for (const json& r : records)
      if (keep(r)) expected.push_back(r.at("publicId").get<std::string>());
    for (std::uint64_t page = 1; page <= expected.size() / 4 + 2; ++page) {
      const Page got = list(PageRequest{page, 4});
      EXPECT_EQ(got.total_count, expected.size()) << name << ", page " << page;
      std::vector<std::string> ids;
      for (const std::string& r : got.items) ids.push_back(json::parse(r).at("publicId").get<std::string>());
      const auto from = std::min<std::size_t>(expected.size(), (page - 1) * 4);
      const auto to = std::min<std::size_t>(expected.size(), page * 4);
      EXPECT_EQ(ids, std::vector<std::string>(expected.begin() + static_cast<std::ptrdiff_t>(from),
                                              expected.begin() + static_cast<std::ptrdiff_t>(to)))
          << name << ", page " << page;
    }
  };

  const auto wallets = all_of("W");
  for (const std::optional<std::string>& category :
       {std::optional<std::string>{}, std::optional<std::string>{"primary"},
        std::optional<std::string>{"secondary"}})
    for (const std::optional<bool> favourite :
         {std::optional<bool>{}, std::optional<bool>{false}, std::optional<bool>{true}})
      for (const std::optional<bool> live :
           {std::optional<bool>{}, std::optional<bool>{false}, std::optional<bool>{true}}) {
        WalletFilter f;
        f.category = category;
        f.is_favourite = favourite;
        f.live = live;
        expect_pages(
            "wallets " + category.value_or("-") +
                (favourite ? " favourite=" + std::to_string(*favourite) : "") +
                (live ? " live=" + std::to_string(*live) : ""),
            wallets,
            [&](const json& w) {
              return (!category || w.at("category") == *category) &&
                     (!favourite || w.at("isFavourite") == *favourite) && (!live || *live == scope.live);
            },
            [&](const PageRequest& page) { return views->wallets(scope, f, page).value(); });
      }
  const Page far = views->wallets(scope, {}, PageRequest{(std::uint64_t{1} << 62) + 1, 64}).value();
  EXPECT_TRUE(far.items.empty()) << "a page far past the end is empty";
  EXPECT_EQ(far.total_count, wallets.size());
  const auto beneficiaries = all_of("D");
  for (const std::optional<std::string>& type :
       {std::optional<std::string>{}, std::optional<std::string>{"vba"},
        std::optional<std::string>{"personal"}})
    for (const std::optional<std::string>& name :
         {std::optional<std::string>{}, std::optional<std::string>{"Ada"},
          std::optional<std::string>{"Ada|Obi"}, std::optional<std::string>{"Bola"}})
      for (const std::optional<bool> live :
           {std::optional<bool>{}, std::optional<bool>{false}, std::optional<bool>{true}}) {
        BankAccountFilter f;
        f.beneficiary_type = type;
        f.account_name = name;
        f.live = live;
        expect_pages(
            "beneficiaries " + type.value_or("-") + " " + name.value_or("-") +
                (live ? " live=" + std::to_string(*live) : ""),
            beneficiaries,
            [&](const json& b) {
              return (!type || b.at("beneficiaryType") == *type) && (!name || b.at("accountName") == *name) &&
                     (!live || *live == scope.live);
            },
            [&](const PageRequest& page) { return views->bank_accounts(scope, f, page).value(); });
      }
}

// The hold list: every combination of its filters (source, status) answers what filtering every
// hold says, newest first (placed time, then log order), as holds are captured, voided and
// expire, and while the clock goes back.
TEST_F(ProjectionTest, EveryCombinationOfHoldFiltersAgreesWithFilteringEveryHold) {
  constexpr UnixMs kStart = 20'000 * kMsPerDay + 5'000;
  std::atomic<UnixMs> clock{kStart};
  LedgerOptions o;
  o.config.partitions = kPartitions;
  o.clock = [&clock] { return clock.load(); };
  MemoryLog log(kPartitions);
  Ledger ledger(log, o);
  ASSERT_TRUE(ledger.start().ok());
  auto views = open_views("holds");
  Projector projector(log, *views);
  ASSERT_TRUE(projector.start().ok());
  std::vector<std::string> wallets;
  for (int i = 0; i < 3; ++i) {
    const Outcome w =
        ledger.execute(CreateWallet{kCaller, "holds-" + std::to_string(i), "secondary", {}, {}});
    ASSERT_TRUE(w.ok());
    wallets.push_back(w.id);
    ASSERT_TRUE(ledger
                    .execute(IncomingCredit{kCaller, account_number(w), Kobo(50'000'000), "f", "S",
                                            "0000014579", "058", "GTB", "000013"})
                    .ok());
  }
  for (int i = 0; i < 14; ++i) {
    clock += 60'000;
    if (i == 9) clock -= 3'600'000;  // the clock goes back an hour
    const Outcome h =
        ledger.execute(PlaceHold{kCaller, wallets[static_cast<std::size_t>(i % 3)], Kobo(10'000 + i),
                                 "hold-" + std::to_string(i), std::nullopt, RawJson{}, 600});
    ASSERT_TRUE(h.ok()) << i;
    if (i % 4 == 1) {
      ASSERT_TRUE(ledger.execute(VoidHold{kCaller, h.id}).ok());
    }
    if (i % 4 == 2) {
      ASSERT_TRUE(ledger
                      .execute(CaptureHold{kCaller, h.id, wallets[static_cast<std::size_t>((i + 1) % 3)],
                                           "capture-" + std::to_string(i), std::nullopt, std::nullopt, false})
                      .ok());
    }
  }
  clock += 601'000;  // the first holds expire when a command next comes
  ASSERT_TRUE(
      ledger.execute(PlaceHold{kCaller, wallets[0], Kobo(10'000), "hold-last", std::nullopt, RawJson{}, 600})
          .ok());
  wait_caught_up(projector, ledger);

  const Scope scope{kCaller.business, false};
  std::vector<json> holds;
  for (const Event& e : events_of(log))
    if (const auto* x = std::get_if<HoldPlaced>(&e.data))
      holds.push_back(json::parse(*views->hold_text(scope, x->hold.value).value()));
  std::reverse(holds.begin(), holds.end());  // newest first among holds placed at one time
  std::stable_sort(holds.begin(), holds.end(), [](const json& a, const json& b) {
    return *parse_iso8601(a.at("createdAt").get<std::string>()) >
           *parse_iso8601(b.at("createdAt").get<std::string>());
  });
  std::set<std::string> statuses;
  for (const json& h : holds) statuses.insert(h.at("status").get<std::string>());
  EXPECT_EQ(statuses.size(), 4u) << "the holds did not reach every status";
  for (const std::optional<std::string>& source :
       {std::optional<std::string>{}, std::optional<std::string>{wallets[0]},
        std::optional<std::string>{wallets[2]}, std::optional<std::string>{"vba-none"}})
    for (const std::optional<std::string>& status :
         {std::optional<std::string>{}, std::optional<std::string>{"pending"},
          std::optional<std::string>{"captured"}, std::optional<std::string>{"voided"},
          std::optional<std::string>{"expired"}}) {
      std::vector<std::string> expected;
      for (const json& h : holds)
        if ((!source || h.at("source") == *source) && (!status || h.at("status") == *status))
          expected.push_back(h.at("publicId").get<std::string>());
      for (std::uint64_t page = 1; page <= expected.size() / 3 + 2; ++page) {
        const Page got = views->holds(scope, HoldFilter{source, status}, PageRequest{page, 3}).value();
        ASSERT_EQ(got.total_count, expected.size()) << source.value_or("-") << " " << status.value_or("-");
        std::vector<std::string> ids;
        for (const std::string& h : got.items)
          ids.push_back(json::parse(h).at("publicId").get<std::string>());
        const auto from = std::min<std::size_t>(expected.size(), (page - 1) * 3);
        const auto to = std::min<std::size_t>(expected.size(), page * 3);
        ASSERT_EQ(ids, std::vector<std::string>(expected.begin() + static_cast<std::ptrdiff_t>(from),
                                                expected.begin() + static_cast<std::ptrdiff_t>(to)))
            << source.value_or("-") << " " << status.value_or("-") << ", page " << page;
      }
    }
  projector.stop();
  auto rebuilt = open_views("holds-rebuilt");
  Projector fresh(log, *rebuilt);
  ASSERT_TRUE(fresh.catch_up().ok());
  EXPECT_EQ(dump(*views), dump(*rebuilt));
}

// A bitmap chunk is stored as the smallest of its encodings, chosen from its bits alone (so a
// rebuild's bytes equal the live views'), and decodes back to the same bits; bytes that are no
// chunk's are an error, never a crash.
TEST(Bitmap, ChunksRoundTripInTheirSmallestEncodingAndRefuseOtherBytes) {
  std::mt19937_64 rng(7);
  for (int shape = 0; shape < 6; ++shape) {
    bitmap::Chunk c;
    for (std::uint32_t bit = 0; bit < bitmap::kChunkBits; ++bit) {
      const bool on = shape == 0   ? false
                      : shape == 1 ? bit == 77
                      : shape == 2 ? bit >= 100 && bit < 9'000
                      : shape == 3 ? bit % 2 == 1
                      : shape == 4 ? rng() % 50 == 0
                                   : rng() % 3 == 0;
      if (on) c.set(bit);
    }
    const std::string bytes = bitmap::encode(c);
    const auto back = bitmap::decode(bytes);
    ASSERT_TRUE(back.ok()) << shape;
    EXPECT_TRUE(back.value() == c) << shape;
    EXPECT_EQ(bitmap::encode(back.value()), bytes) << shape;
    EXPECT_LE(bytes.size(), 1u + bitmap::kChunkBits / 8) << shape;
    // Built another way (cleared from a full chunk), the same bits are the same bytes.
    bitmap::Chunk other = bitmap::Chunk::range(0, bitmap::kChunkBits);
    for (std::uint32_t bit = 0; bit < bitmap::kChunkBits; ++bit)
      if (!c.test(bit)) other.clear(bit);
    EXPECT_EQ(bitmap::encode(other), bytes) << shape;
    std::uint32_t rank = 0;
    c.each([&](std::uint32_t bit) {
      EXPECT_EQ(c.select(rank), bit);
      EXPECT_EQ(c.count_below(bit), rank);
      ++rank;
    });
    EXPECT_EQ(rank, c.count());
  }
  EXPECT_EQ(bitmap::encode(bitmap::Chunk()).size(), 1u) << "an empty chunk is its encoding's byte";
  using namespace std::string_literals;
  for (const std::string& bad : {""s, "\x07"s, "\x00\x00"s, "\x00\x80"s, "\x01\x00\xff\xff\x03"s,
                                 "\x02\x01\x02"s, "\x00\xff\xff\xff"s, "\x01\x01\x01\x00\x00"s})
    EXPECT_FALSE(bitmap::decode(bad).ok()) << "decoded " << bad.size() << " bytes of garbage";
}

// The encoding a chunk is written in is the smallest of the three (bitmap.h), deltas before runs
// before the bitset on a tie, whatever the shape: sized here bit by bit, as plainly as it can be.
TEST(Bitmap, EachChunkTakesTheSmallestEncodingDeltasThenRunsOnATie) {
  const auto varint_size = [](std::uint64_t v) {
    std::size_t n = 1;
    for (; v >= 0x80; v >>= 7) ++n;
    return n;
  };
  std::mt19937_64 rng(11);
  for (int round = 0; round < 400; ++round) {
    bitmap::Chunk c;
    // Densities from empty to full, in runs of random lengths: every encoding wins somewhere, and
    // some rounds land near the sizes where one overtakes another.
    const std::uint32_t density = static_cast<std::uint32_t>(rng() % 1001);  // per mille
    const std::uint32_t longest = 1 + static_cast<std::uint32_t>(rng() % (round % 4 == 0 ? 400 : 3));
    for (std::uint32_t bit = 0; bit < bitmap::kChunkBits;) {
      const std::uint32_t run = 1 + static_cast<std::uint32_t>(rng() % longest);
      const bool on = rng() % 1000 < density;
      for (std::uint32_t k = 0; k < run && bit < bitmap::kChunkBits; ++k, ++bit)
        if (on) c.set(bit);
    }
    std::size_t deltas = 1, runs = 1;
    std::int64_t previous = -1, run_end = 0;
    bool in_run = false;
    std::int64_t run_start = 0;
    for (std::uint32_t bit = 0; bit <= bitmap::kChunkBits; ++bit) {
      const bool on = bit < bitmap::kChunkBits && c.test(bit);
      if (on) {
        deltas += varint_size(static_cast<std::uint64_t>(bit - previous));
        previous = bit;
      }
      if (on && !in_run) run_start = bit;
      if (!on && in_run) {
        runs += varint_size(static_cast<std::uint64_t>(run_start - run_end)) +
                varint_size(static_cast<std::uint64_t>(bit - run_start - 1));
        run_end = bit;
      }
      in_run = on;
    }
    const std::size_t bitset = 1 + bitmap::kChunkBits / 8;
    const char kind = deltas <= runs && deltas <= bitset ? 0 : runs <= bitset ? 1 : 2;
    const std::string bytes = bitmap::encode(c);
    ASSERT_EQ(bytes[0], kind) << "round " << round << ": deltas " << deltas << ", runs " << runs;
    ASSERT_EQ(bytes.size(), std::min({deltas, runs, bitset})) << "round " << round;
    const auto back = bitmap::decode(bytes);
    ASSERT_TRUE(back.ok() && back.value() == c) << "round " << round;
  }
}

// Every row decoder takes bytes from disk: a row cut short, or with a byte past its end, is an
// error; what encode writes decodes to the same row.
TEST(Rows, DecodersCheckLengthsRangesAndInvariants) {
  using namespace std::string_literals;
  const std::string scope = view_keys::scope17("biz-1", false);
  const rows::TransactionRow t{
      scope, rows::RecordAt{12, 1}, {{TransactionStatus::processing, 5}, {TransactionStatus::failed, 9}}, 4};
  EXPECT_EQ(rows::decode_transaction(rows::encode(t)).value(), t);
  const rows::StatementRow line{100, rows::RecordAt{3, 0}, Kobo(-50), Kobo(70), Kobo(120)};
  EXPECT_EQ(rows::decode_statement(rows::encode(line)).value(), line);
  rows::AccountRow account;
  account.business = "biz-1";
  account.live = true;
  account.webhooks = {"https://a.example"};
  account.webhook_events = std::vector<std::string>{"account.credit"};
  account.updated = 7;
  account.version = 2;
  EXPECT_EQ(rows::decode_account(rows::encode(account)).value(), account);
  rows::AccountRow apart = account;  // each mode's webhook settings its own
  apart.modes_apart = true;
  apart.live_webhooks = {"https://live.example"};
  EXPECT_EQ(rows::decode_account(rows::encode(apart)).value(), apart);
  rows::KeyRow key{"biz-1", "acc-1", true, 1'700'000'000'000};
  EXPECT_EQ(rows::decode_key(rows::encode(key)).value(), key);
  key.revoked = true;
  EXPECT_EQ(rows::decode_key(rows::encode(key)).value(), key);
  const rows::AccountKeysRow keys{"kw1.mk-1.x", {{std::string(64, 'c'), 5, 0}, {std::string(64, 'd'), 3, 9}}};
  EXPECT_EQ(rows::decode_account_keys(rows::encode(keys)).value(), keys);
  const rows::PositionRow position{10, 9, std::string(64, 'a'), 3};
  EXPECT_EQ(rows::decode_position(rows::encode(position)).value(), position);
  const rows::ListRow list{10, 99, 2};
  EXPECT_EQ(rows::decode_list(rows::encode(list)).value(), list);
  const rows::WebhookEventRow event{
      WebhookEventType::account_debit, 9, 0, rows::RecordAt{4, 0}, 5, std::string(64, 'b'), "trx-1"};
  EXPECT_EQ(rows::decode_webhook_event(rows::encode(event)).value(), event);
  EXPECT_EQ(rows::decode_balance(rows::encode_balance(Kobo(-7))).value(), Kobo(-7));

  const auto refuses_cut_and_padded = [](const std::string& bytes, auto decode, const char* what) {
    for (std::size_t n = 0; n < bytes.size(); ++n)
      EXPECT_FALSE(decode(std::string_view(bytes).substr(0, n)).ok()) << what << " cut to " << n;
    EXPECT_FALSE(decode(bytes + '\x05').ok()) << what << " with a byte more";
  };
  // (A transaction row ends in its steps, a list: cut between two steps it is another row.)
  refuses_cut_and_padded(rows::encode(rows::TransactionRow{scope, rows::RecordAt{12, 1}, {}, 4}),
                         rows::decode_transaction, "transaction row");
  refuses_cut_and_padded(rows::encode(line), rows::decode_statement, "statement row");
  refuses_cut_and_padded(rows::encode(account), rows::decode_account, "account row");
  refuses_cut_and_padded(rows::encode(apart), rows::decode_account, "account row of two modes");
  refuses_cut_and_padded(rows::encode(keys), rows::decode_account_keys, "account keys row");
  refuses_cut_and_padded(rows::encode(position), rows::decode_position, "position row");
  refuses_cut_and_padded(rows::encode(list), rows::decode_list, "list row");
  refuses_cut_and_padded(rows::encode(rows::RecordAt{5, 2}), rows::decode_record_at, "reference row");
  // Invariants: steps out of a payout's order, a record past its event's, more displaced than held.
  // The encoders assert them, so such rows are forged from a good row's bytes.
  std::string backwards = rows::encode(t);
  ASSERT_EQ(backwards.substr(backwards.size() - 4), "\x01\x0a\x03\x12"s) << "processing at 5, failed at 9";
  backwards.replace(backwards.size() - 4, 4, "\x03\x12\x01\x0a"s);  // failed, then processing
  EXPECT_FALSE(rows::decode_transaction(backwards).ok());
  EXPECT_FALSE(rows::decode_record_at("\x05\x03").ok()) << "a record index past an event's three";
  EXPECT_FALSE(rows::decode_list("\x01\x00\x02").ok()) << "more displaced than listed";
  std::string early = rows::encode(event);
  ASSERT_EQ(early[1], '\x09') << "the position, after the type";
  early[1] = '\x04';  // announced before the record it announces (number 4) was created
  EXPECT_FALSE(rows::decode_webhook_event(early).ok());
}

// A key a person reads (kobo audit's differences) names its view and shows its binary parts.
TEST(ViewKeys, ADescribedKeyNamesItsViewForEveryTagOfTheLayout) {
  EXPECT_EQ(describe_view_key(view_keys::position(3)), "positions/3");
  // Ids are keyed by their UUID's 16 bytes, and shown as the UUID; binary parts are escaped.
  const std::string uuid = "00112233-4455-4677-8899-aabbccddeeff";
  EXPECT_EQ(describe_view_key(view_keys::wallet("vba-" + uuid)), "wallets/" + uuid);
  EXPECT_EQ(describe_view_key(view_keys::statement_line("vba-" + uuid, 7)),
            "wallet statements/" + uuid + "/7");
  EXPECT_EQ(describe_view_key(view_keys::account_history("acc-" + uuid, 9)),
            "account history/" + uuid + "/9");
  EXPECT_EQ(describe_view_key(view_keys::event(view_keys::scope17("biz-" + uuid, true), 12)),
            "transaction events/" + uuid + "/live/12");
  EXPECT_EQ(describe_view_key(view_keys::transaction_reference("acc-" + uuid, false, "my-ref")),
            "transaction references/" + uuid + "/test/\\x00my-ref");
  EXPECT_EQ(describe_view_key("T\x01\x02"), "transactions/\\x01\\x02") << "a key too short for its id";
  const std::string scope = view_keys::scope17("biz-1", false);
  namespace l = view_keys::list;
  const std::vector<std::string> keys{
      std::string(view_keys::kFormatKey),
      view_keys::position(0),
      view_keys::business("biz-1"),
      view_keys::account("acc-1"),
      view_keys::account_history("acc-1", 3),
      view_keys::account_list("biz-1", 1),
      view_keys::key_owner("ab"),
      view_keys::account_keys("acc-1", true),
      view_keys::suspended("biz-1"),
      view_keys::account_number("0123456789"),
      view_keys::system_balance(0, "fees"),
      view_keys::tier_limits(0),
      view_keys::wallet("vba-1"),
      view_keys::wallet_row("vba-1"),
      view_keys::statement_line("vba-1", 1),
      view_keys::bank_account("bka-1"),
      view_keys::event(scope, 0),
      view_keys::transaction("trx-1"),
      view_keys::transaction_reference("acc-1", false, "ref"),
      view_keys::bulk("blk-1"),
      view_keys::hold("hld-1"),
      view_keys::hold_row("hld-1"),
      view_keys::listed(l::kWallets, scope, 1),
      view_keys::list_row(l::kTransactions, scope),
      view_keys::bitmap_chunk(view_keys::bitmap(l::kTransactions, scope, l::kEntry, l::value("debit")), 0),
      view_keys::webhook("acc-1", false),
      view_keys::webhook_event("acc-1", false, 1),
  };
  std::set<char> tags;
  for (const std::string& key : keys) {
    EXPECT_FALSE(describe_view_key(key).starts_with("view '")) << key << ": a tag without a name";
    tags.insert(key[0]);
  }
  EXPECT_EQ(tags.size(), keys.size()) << "two kinds of keys share a tag";
  EXPECT_EQ(tags.size(), std::size(view_keys::kTagNames)) << "a tag of the layout no key here has";
}

// Ids in keys are 16 bytes: a publicId's UUID, or the SHA-256 of any other id; derived
// references are their UUID's bytes after a marker, others their text after a zero byte.
TEST(ViewKeys, IdsAndReferencesAreKeyedByTheirBytes) {
  EXPECT_EQ(view_keys::id16("trx-00112233-4455-4677-8899-aabbccddeeff").size(), 16u);
  EXPECT_EQ(view_keys::id16("trx-00112233-4455-4677-8899-aabbccddeeff"),
            view_keys::id16("vba-00112233-4455-4677-8899-aabbccddeeff"))
      << "the prefix is the key's tag's to say";
  EXPECT_NE(view_keys::id16("trx-00112233-4455-4677-8899-aabbccddeeff"),
            view_keys::id16("trx-00112233-4455-4677-8899-AABBCCDDEEFF"))
      << "an id not in the canonical form is another id";
  EXPECT_EQ(view_keys::id16("biz-projection").size(), 16u);
  EXPECT_NE(view_keys::id16("biz-a"), view_keys::id16("biz-b"));
  const std::string derived =
      view_keys::transaction_reference("acc-1", false, "ref-00112233-4455-4677-8899-aabbccddeeff");
  const std::string text = view_keys::transaction_reference("acc-1", false, "ref-00112233");
  EXPECT_EQ(derived.size(), 1u + 16 + 1 + 1 + 16);
  EXPECT_EQ(text.size(), 1u + 16 + 1 + 1 + 12);
  EXPECT_NE(view_keys::transaction_reference("acc-1", false, "r"),
            view_keys::transaction_reference("acc-1", true, "r"));
  EXPECT_NE(view_keys::list::value(std::string(300, 'a')), view_keys::list::value(std::string(301, 'a')));
  EXPECT_EQ(view_keys::list::value(std::string(300, 'a')).size(), 33u);
}

// A memtable insert starts from the last key of its run (views.cc): a wallet's statement lines
// and a scope's events run on from their own previous key, not from another wallet's or scope's;
// any other key's run is its tag; a caller's reference has none.
TEST(ViewKeys, AnInsertsRunIsThePartOfItsKeyThatItsPreviousKeyShares) {
  const std::string scope = view_keys::scope17("biz-a", false);
  const auto run = [](const std::string& key) { return view_keys::insert_run(key); };
  EXPECT_EQ(run(view_keys::statement_line("wlt-a", 1)), run(view_keys::statement_line("wlt-a", 2)));
  EXPECT_NE(view_keys::statement_line("wlt-a", 1).substr(0, *run(view_keys::statement_line("wlt-a", 1))),
            view_keys::statement_line("wlt-b", 1).substr(0, *run(view_keys::statement_line("wlt-b", 1))))
      << "each wallet's statement is a run of its own";
  EXPECT_EQ(run(view_keys::event(scope, 7)), 1 + view_keys::kScopeSize);
  EXPECT_EQ(run(view_keys::webhook_event("acc-1", true, 3)), 1 + view_keys::kScopeSize);
  EXPECT_EQ(run(view_keys::listed('w', scope, 9)), 2 + view_keys::kScopeSize);
  EXPECT_EQ(run(view_keys::transaction("trx-00112233-4455-7677-8899-aabbccddeeff")), 1u)
      << "transaction ids are time-ordered: a new one follows the last";
  EXPECT_EQ(run(view_keys::wallet_row("wlt-a")), 1u);
  EXPECT_EQ(run(view_keys::wallet("wlt-a")), 1u) << "a key written once is no run of its own";
  EXPECT_FALSE(run(view_keys::transaction_reference("acc-1", false, "order-17")).has_value());
  EXPECT_FALSE(run("").has_value());
  for (const std::string& key : {view_keys::statement_line("wlt-a", 1), view_keys::event(scope, 1),
                                 view_keys::wallet_row("wlt-a"), std::string("h")})
    EXPECT_LE(*run(key), key.size()) << "a run is a prefix of its key";
}

// Views carry their key layout: new ones get it, and views of another layout (those from before
// the marker are of the first) are refused with what to do, never read as if their keys meant
// the same.
// Every transaction an event finalizes is the next webhook event of its account in its mode,
// numbered from 1 in log order; its body is rendered on read; the secret's rotations are kept.
TEST_F(ProjectionTest, WebhookEventsAreNumberedPerAccountAndModeInLogOrder) {
  ASSERT_TRUE(node_.start_projector().ok());
  Views* const views = &node_.views();
  Projector& p = node_.projector();
  const std::string hash(64, 'a');
  ASSERT_TRUE(ledger_
                  ->execute(CreateBusiness{kCaller.business, "P", kCaller.account, "Default", hash, hash,
                                           "pk_t", "pk_l"})
                  .ok());
  EXPECT_TRUE(views->webhook(kCaller.account, false).value() == rows::WebhookRow{}) << "none before any";
  traffic("hook", 3);  // three credits, then two transfers of a debit and a credit each
  wait_caught_up(p);

  const auto all = views->webhook_events(kCaller.account, false, 0, 1000);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all.value().size(), 7u);
  const std::vector<WebhookEventType> types{
      WebhookEventType::account_credit, WebhookEventType::account_credit, WebhookEventType::account_credit,
      WebhookEventType::account_debit,  WebhookEventType::account_credit, WebhookEventType::account_debit,
      WebhookEventType::account_credit};
  const Scope scope{kCaller.business, false};
  for (std::size_t i = 0; i < all.value().size(); ++i) {
    const WebhookEvent& e = all.value()[i];
    SCOPED_TRACE(e.body);
    EXPECT_EQ(e.sequence, i + 1);
    EXPECT_EQ(e.type, types[i]);
    EXPECT_EQ(e.account, kCaller.account);
    EXPECT_TRUE(e.id.starts_with("evt-"));
    const json body = json::parse(e.body);
    EXPECT_EQ(body["sequence"], i + 1);
    EXPECT_EQ(body["event"], to_string(types[i]));
    EXPECT_EQ(body.dump(), e.body) << "the bytes dump() writes: members in key order";
    // The transaction as a GET shows it, and the same event found from the transaction.
    const std::string trx = body["data"]["publicId"];
    EXPECT_EQ(body["data"], json::parse(*views->transaction_text(scope, "", trx).value()));
    const auto of = views->webhook_event_of(scope, trx);
    ASSERT_TRUE(of.ok() && of.value().has_value());
    EXPECT_EQ(of.value()->sequence, e.sequence);
    EXPECT_EQ(of.value()->body, e.body);
    EXPECT_FALSE(views->webhook_event_of(Scope{"biz-other", false}, trx).value().has_value())
        << "another business's";
  }
  // Pages of it, and nothing in the other mode.
  const auto page = views->webhook_events(kCaller.account, false, 5, 10).value();
  ASSERT_EQ(page.size(), 2u);
  EXPECT_EQ(page[0].sequence, 6u);
  EXPECT_EQ(views->webhook_events(kCaller.account, false, 0, 1).value().size(), 1u);
  EXPECT_TRUE(views->webhook_events(kCaller.account, false, 7, 10).value().empty());
  EXPECT_TRUE(views->webhook_events(kCaller.account, true, 0, 10).value().empty());
  EXPECT_EQ(views->webhook(kCaller.account, false).value().sequence, 7u);

  // Rotations: the current one is named by its event's hash, the previous one is kept.
  const Outcome first = ledger_->execute(RotateWebhookSecret{kCaller, kCaller.account});
  ASSERT_TRUE(first.ok());
  const Outcome second = ledger_->execute(RotateWebhookSecret{kCaller, kCaller.account});
  ASSERT_TRUE(second.ok());
  wait_caught_up(p);
  const rows::WebhookRow row = views->webhook(kCaller.account, false).value();
  EXPECT_EQ(row.sequence, 7u);
  EXPECT_EQ(row.secret, second.events[0].hash);
  EXPECT_EQ(row.secret_at, second.events[0].time);
  EXPECT_EQ(row.previous, first.events[0].hash);
  EXPECT_TRUE(views->webhook(kCaller.account, true).value().secret.empty()) << "of the test mode only";

  // The same from the log alone.
  auto rebuilt = open_views("hooks-rebuilt");
  Projector fresh(log_, *rebuilt);
  ASSERT_TRUE(fresh.start().ok());
  wait_caught_up(fresh);
  EXPECT_EQ(dump(*rebuilt), dump(*views));
}

TEST_F(ProjectionTest, ViewsOfAnotherKeyLayoutAreRefusedNotRead) {
  {
    auto views = open_views("layout");
    ASSERT_TRUE(views);
    EXPECT_EQ(views->read(std::string(view_keys::kFormatKey)).value(), std::string(view_keys::kFormat));
  }
  EXPECT_TRUE(Views::open((dir_ / "layout").string(), kPartitions).ok()) << "its own layout opens";

  const auto write_raw = [&](const std::string& key, const std::optional<std::string>& value) {
    rocksdb::DB* raw = nullptr;
    rocksdb::Options options;
    ASSERT_TRUE(rocksdb::DB::Open(options, (dir_ / "layout").string(), &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(
        (value ? db->Put(rocksdb::WriteOptions(), key, *value) : db->Delete(rocksdb::WriteOptions(), key))
            .ok());
  };
  write_raw(view_keys::wallet("vba-1"), "{}");
  write_raw(std::string(view_keys::kFormatKey), std::nullopt);
  auto first = Views::open((dir_ / "layout").string(), kPartitions);
  ASSERT_FALSE(first.ok()) << "views from before the marker are of layout 1, which this kobo does not read";
  EXPECT_EQ(first.status().kind(), ErrorKind::other_format);
  EXPECT_NE(first.status().message().find("key layout 1"), std::string::npos) << first.status().message();

  write_raw(std::string(view_keys::kFormatKey), "99");
  auto later = Views::open((dir_ / "layout").string(), kPartitions);
  ASSERT_FALSE(later.ok());
  EXPECT_EQ(later.status().kind(), ErrorKind::other_format);
  EXPECT_NE(later.status().message().find("key layout 99"), std::string::npos) << later.status().message();
  EXPECT_NE(later.status().message().find("kobo replay"), std::string::npos) << later.status().message();
}

// Views::ingest leaves the order of a file's keys to RocksDB's SstFileWriter: keys out of order,
// or one key twice, are an error that ingests nothing and leaves no file behind, never a crash.
TEST_F(ProjectionTest, AnIngestOfKeysOutOfOrderIsAnErrorAndIngestsNothing) {
  const auto path = dir_ / "ingest-order";
  auto opened = Views::open(path.string(), kPartitions, nullptr, ViewWrites::unlogged);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  auto& views = *opened.value();
  const std::string a = view_keys::wallet_row("vba-order-a");
  const std::string b = view_keys::wallet_row("vba-order-b");
  ASSERT_LT(a, b);
  // A scope's events before them are a file of their own (runs of a byte or more), written whole
  // before the next one fails: not ingested either, nor left behind.
  const std::string scope = view_keys::scope17("biz-order", false);
  const std::string event = view_keys::event(scope, 0);
  ASSERT_LT(event, a);
  for (const auto& changes :
       {std::vector<ViewChange>{{b, "2"}, {a, "1"}}, std::vector<ViewChange>{{a, "1"}, {a, "2"}},
        std::vector<ViewChange>{{event, "e"}, {b, "2"}, {a, "1"}}}) {
    const auto s = views.ingest(changes, 1);
    ASSERT_FALSE(s.ok()) << "keys out of strict order are refused";
    EXPECT_NE(s.message().find("views ingest"), std::string::npos) << s.message();
    EXPECT_EQ(views.read(a).value(), std::nullopt);
    EXPECT_EQ(views.read(b).value(), std::nullopt);
    EXPECT_EQ(views.read(event).value(), std::nullopt);
    for (const auto& entry : std::filesystem::directory_iterator(path))
      EXPECT_EQ(entry.path().filename().string().rfind("ingest-", 0), std::string::npos)
          << "a refused file is not left behind: " << entry.path();
  }
  ASSERT_TRUE(views.ingest(std::vector<ViewChange>{{event, "e"}, {a, "1"}, {b, "2"}}, 1).ok());
  EXPECT_EQ(views.read(event).value(), std::optional<std::string>("e"));
  EXPECT_EQ(views.read(a).value(), std::optional<std::string>("1"));
  EXPECT_EQ(views.read(b).value(), std::optional<std::string>("2"));
}

// docs/architecture.md, "Rebuilds write files": a scope's events, most of a rebuild's bytes, only
// grow at their end. Ingested as files of their own, each batch's lie past the earlier ones' and
// rest at the last level as they are, never merged by compaction with the rest of a batch (whose
// keys, before and after them, overlap earlier batches').
TEST_F(ProjectionTest, AScopesEventsIngestedBatchByBatchRestAtTheLastLevelAsIngested) {
  const auto path = dir_ / "ingest-runs";
  auto opened = Views::open(path.string(), kPartitions, nullptr, ViewWrites::unlogged);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  auto& views = *opened.value();
  const std::string scope = view_keys::scope17("biz-runs", false);
  constexpr int kBatches = 3;
  constexpr int kEvents = 100;
  const std::string value(100, 'v');
  for (int batch = 0; batch < kBatches; ++batch) {
    // A row before the scope's events and one after, of every batch, as a rebuild's batches have.
    std::vector<std::pair<std::string, std::string>> rows{
        {view_keys::business("biz-runs"), std::to_string(batch)}};
    for (int i = 0; i < kEvents; ++i)
      rows.emplace_back(view_keys::event(scope, static_cast<std::uint64_t>(batch * kEvents + i)), value);
    rows.emplace_back(view_keys::wallet_row("vba-runs"), std::to_string(batch));
    std::vector<ViewChange> changes;
    for (const auto& [key, row] : rows) changes.push_back({key, row});
    ASSERT_TRUE(std::is_sorted(changes.begin(), changes.end(),
                               [](const ViewChange& x, const ViewChange& y) { return x.key < y.key; }));
    ASSERT_TRUE(views.ingest(changes, 1024).ok());
  }
  std::vector<rocksdb::LiveFileMetaData> files;
  views.db().GetLiveFilesMetaData(&files);
  const int last_level = views.db().NumberLevels() - 1;
  int event_files = 0;
  for (const auto& f : files) {
    if (f.smallestkey.front() != 'L') {
      EXPECT_NE(f.largestkey.front(), 'L') << "no other file spans the events";
      continue;
    }
    ++event_files;
    EXPECT_EQ(f.largestkey.front(), 'L') << "a file of the events holds nothing else";
    EXPECT_EQ(f.level, last_level) << "a batch's events rest at the last level as ingested";
  }
  EXPECT_EQ(event_files, kBatches) << "each batch's events one file, never merged";
  for (int n = 0; n < kBatches * kEvents; ++n)
    EXPECT_EQ(views.read(view_keys::event(scope, static_cast<std::uint64_t>(n))).value(),
              std::optional(value));
  EXPECT_EQ(views.read(view_keys::business("biz-runs")).value(), std::optional<std::string>("2"));
  EXPECT_EQ(views.read(view_keys::wallet_row("vba-runs")).value(), std::optional<std::string>("2"));
}

// A row (a key's owner, a suspension, a wallet's balance) is kept by the thread that read it,
// and never used once a write that could change it has landed: a revoked key, a suspension or a
// transfer shows on the next read, on any thread, and views opened since never read what others
// kept.
TEST_F(ProjectionTest, AKeptRowIsReadAgainOnceAWriteCouldHaveChangedIt) {
  auto views = open_views("settings");
  ASSERT_TRUE(views);
  const std::string key = view_keys::suspended("biz-kept");
  const std::string other = view_keys::suspended("biz-other");
  const auto write = [&](const std::string& k, const std::string& v) {
    const ViewChange change{k, v};
    ASSERT_TRUE(views->write(std::span<const ViewChange>(&change, 1)).ok());
  };
  EXPECT_EQ(views->read(key).value(), std::nullopt);
  write(key, "\1fraud");
  EXPECT_EQ(views->read(key).value(), std::optional<std::string>("\1fraud")) << "a write of the row itself";
  std::thread([&] { EXPECT_EQ(views->read(key).value(), std::optional<std::string>("\1fraud")); }).join();
  write(other, "\1x");
  write(key, "");
  EXPECT_EQ(views->read(key).value(), std::optional<std::string>("")) << "a suspension lifted";
  std::thread([&] { EXPECT_EQ(views->read(key).value(), std::optional<std::string>("")); }).join();
  // A row that moves with every transfer, read between its writes by two threads.
  const std::string wallet_row = view_keys::wallet_row("vba-kept");
  for (const std::string& value : std::vector<std::string>{"a", "b", std::string(2000, 'c'), "d"}) {
    write(wallet_row, value);
    EXPECT_EQ(views->read(wallet_row).value(), std::optional<std::string>(value));
    EXPECT_EQ(views->read(wallet_row).value(), std::optional<std::string>(value)) << "read again, kept";
    std::thread([&] {
      EXPECT_EQ(views->read(wallet_row).value(), std::optional<std::string>(value));
    }).join();
  }
  // A write past write(), through the database handed out: no row kept from before is used.
  ASSERT_TRUE(views->db().Put(rocksdb::WriteOptions(), wallet_row, "e").ok());
  EXPECT_EQ(views->read(wallet_row).value(), std::optional<std::string>("e"));
  // Views opened again at the same path (a restart, a rebuild) read their own rows.
  views.reset();
  {
    rocksdb::DB* raw = nullptr;
    rocksdb::Options options;
    ASSERT_TRUE(rocksdb::DB::Open(options, (dir_ / "settings").string(), &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), key, "\1again").ok());
  }
  views = open_views("settings");
  ASSERT_TRUE(views);
  EXPECT_EQ(views->read(key).value(), std::optional<std::string>("\1again"));
}

}  // namespace
}  // namespace kobo
