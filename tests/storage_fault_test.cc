// Guarantee 8 (docs/architecture.md section 6) for each kind of storage fault: an I/O error, a read-only file
// system and a full disk, injected under the real RocksDB databases of the embedded log and of the views
// (tests/support/faulty_fs.h; the disk-full tests fill a real tmpfs as well). For each kind:
// - the log: a command is refused with the fault named (unavailable, or storage_full for a full
//   disk), nothing refused is in the log, the writer reports why it is not healthy, and once
//   the fault clears it writes again in the same process; the log then holds exactly the
//   acknowledged commands, also when read from scratch.
// - the views: the projector keeps the batch it could not write and says why, reads go on, and
//   once the fault clears the views catch up and equal views rebuilt from the log.

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <filesystem>
#include <map>

#include "command/ledger.h"
#include "events/embedded_log.h"
#include "events/log_follower.h"
#include "projection/projector.h"
#include "tests/support/faulty_fs.h"
#include "tests/support/node.h"
#include "tests/support/scratch_dir.h"

namespace kobo {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::Fault;
using testing::FaultyFileSystem;

constexpr std::uint32_t kPartitions = 2;
const Caller kCaller{"biz-storage-faults", "acc-f", false};

struct Kind {
  Fault fault;
  const char* name;
  const char* says;     // what the fault's message names
  Rejection rejection;  // how a command is refused while it lasts
};

const Kind kKinds[] = {
    {Fault::io_error, "IoError", "Input/output error", Rejection::unavailable},
    {Fault::read_only, "ReadOnly", "Read-only file system", Rejection::unavailable},
    {Fault::no_space, "NoSpace", "No space left on device", Rejection::storage_full},
};

class StorageFaults : public ::testing::TestWithParam<Kind> {
 public:  // ViewsOnAFaultyDisk funds its wallets with funded_pair()
  static LedgerOptions ledger_options() {
    LedgerOptions o;
    o.config.partitions = kPartitions;
    o.recovery_retry = 20ms;
    return o;
  }

  static std::string account_number(const Outcome& opened) {
    return std::get<WalletOpened>(opened.events.at(0).data).account_number;
  }

  // Two funded wallets; their public ids.
  static std::pair<std::string, std::string> funded_pair(Ledger& l) {
    std::vector<std::string> ids;
    for (const char* name : {"a", "b"}) {
      const Outcome w = l.execute(CreateWallet{kCaller, name, "secondary", {}, {}});
      EXPECT_TRUE(w.ok()) << to_string(w.rejection);
      ids.push_back(w.id);
      const Outcome f = l.execute(IncomingCredit{kCaller, account_number(w), Kobo(1'000'000), "f", "S",
                                                 "0000014579", "058", "GTB", "000013"});
      EXPECT_TRUE(f.ok()) << to_string(f.rejection);
    }
    return {ids.at(0), ids.at(1)};
  }

  static WalletTransfer transfer(const std::string& src, const std::string& dst, std::string ref) {
    WalletTransfer t;
    t.caller = kCaller;
    t.source = src;
    t.destination = dst;
    t.amount = Kobo(1'000);
    t.narration = "n";
    t.reference = std::move(ref);
    return t;
  }

  testing::ScratchDir scratch_;
  const fs::path dir_ = scratch_.path();
};

// The references of the wallet transfers a log holds, read from scratch.
std::multiset<std::string> transfer_references(EventLog& log) {
  class Collect final : public LogVisitor {
   public:
    Status accepted(const Event& e) override {
      if (const auto* t = std::get_if<WalletTransferSettled>(&e.data)) refs.insert(t->reference);
      return {};
    }
    std::multiset<std::string> refs;
  } collect;
  LogFollower follower(log);
  EXPECT_TRUE(follower.open().ok());
  const Status s = follower.follow_to_end(collect);
  EXPECT_TRUE(s.ok()) << s.message();
  return collect.refs;
}

TEST_P(StorageFaults, OnTheLogCommandsAreRefusedNamingItAndResumeInTheSameProcess) {
  const Kind& kind = GetParam();
  auto faulty = std::make_shared<FaultyFileSystem>();
  const auto env = testing::env_over(faulty);
  const std::string path = (dir_ / "log").string();
  std::multiset<std::string> acknowledged;
  {
    auto opened = open_embedded_log({.path = path, .partitions = kPartitions, .env = env.get()});
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    Ledger ledger(*opened.value(), ledger_options());
    ASSERT_TRUE(ledger.start().ok());
    const auto [a, b] = funded_pair(ledger);
    ASSERT_TRUE(ledger.execute(transfer(a, b, "before")).ok());
    acknowledged.insert("before");

    faulty->set(kind.fault);
    for (int i = 0; i < 3; ++i) {
      const Outcome refused = ledger.execute(transfer(a, b, "during-" + std::to_string(i)));
      EXPECT_EQ(refused.rejection, kind.rejection) << to_string(refused.rejection) << ": " << refused.detail;
      EXPECT_NE(refused.detail.find(kind.says), std::string::npos) << refused.detail;
    }
    EXPECT_GT(faulty->failed(), 0u);
    EXPECT_FALSE(ledger.healthy());
    EXPECT_NE(ledger.fault().find(kind.says), std::string::npos) << ledger.fault();
    // Reads of what is durable go on: the log's end is where it was.
    EXPECT_TRUE(opened.value()->end_offsets().ok());

    faulty->set(Fault::none);
    bool resumed = false;
    for (int i = 0; i < 500 && !resumed; ++i) {
      const std::string ref = "after-" + std::to_string(i);
      const Outcome o = ledger.execute(transfer(a, b, ref));
      if (o.ok()) {
        acknowledged.insert(ref);
        resumed = true;
      } else {
        EXPECT_TRUE(o.rejection == Rejection::unavailable || o.rejection == Rejection::storage_full)
            << to_string(o.rejection) << ": " << o.detail;
        std::this_thread::sleep_for(10ms);
      }
    }
    ASSERT_TRUE(resumed) << "writes did not resume: " << ledger.fault();
    EXPECT_TRUE(ledger.healthy());
    EXPECT_EQ(ledger.fault(), "");
    EXPECT_EQ(transfer_references(*opened.value()), acknowledged);
  }
  // From scratch, with nothing injected: exactly the acknowledged transfers.
  auto reopened = open_embedded_log({.path = path, .partitions = kPartitions});
  ASSERT_TRUE(reopened.ok()) << reopened.status().message();
  EXPECT_EQ(transfer_references(*reopened.value()), acknowledged);
}

// A node (tests/support/node.h) whose writer is on a log in memory and whose views are on a disk
// that fails on demand, with its projector following the log into them.
class ViewsOnAFaultyDisk {
 public:
  ViewsOnAFaultyDisk(const LedgerOptions& o, const fs::path& dir)
      : node(dir, {.partitions = kPartitions, .ledger = o, .views_env = env.get()}) {}

  // Started, with two funded wallets (`funded`) that the views show.
  void start() {
    const Status s = node.start();
    ASSERT_TRUE(s.ok()) << s.message();
    views = &node.views();
    projector = &node.projector();
    funded = StorageFaults::funded_pair(ledger());
    ASSERT_TRUE(caught_up(5s));
  }

  // Whether the views show every command the writer acknowledged, within `within`.
  bool caught_up(std::chrono::milliseconds within) const { return node.caught_up(within); }

  // Stops the projector and expects the views to equal views rebuilt from the log in dir.
  void expect_equal_to_a_rebuild(const fs::path& dir) {
    projector->stop();
    auto rebuilt = testing::rebuilt_views(node.log(), dir / "rebuilt");
    ASSERT_TRUE(rebuilt.ok());
    EXPECT_EQ(testing::view_rows(*views), testing::view_rows(*rebuilt.value()));
  }

  Ledger& ledger() { return node.ledger(); }

  const std::shared_ptr<FaultyFileSystem> faulty = std::make_shared<FaultyFileSystem>();
  const std::unique_ptr<rocksdb::Env> env = testing::env_over(faulty);
  testing::Node node;
  Views* views = nullptr;
  Projector* projector = nullptr;
  std::pair<std::string, std::string> funded;
};

TEST_P(StorageFaults, OnTheViewsReadsGoOnTheProjectorSaysWhyAndCatchesUpAfter) {
  const Kind& kind = GetParam();
  ViewsOnAFaultyDisk s(ledger_options(), dir_);
  ASSERT_NO_FATAL_FAILURE(s.start());
  const auto [a, b] = s.funded;
  const Scope scope{kCaller.business, false};
  ASSERT_TRUE(s.views->wallet_text(scope, a).value().has_value());

  s.faulty->set(kind.fault);
  // The writer is not on this disk: commands go on being acknowledged.
  ASSERT_TRUE(s.ledger().execute(transfer(a, b, "while-the-views-fail")).ok());
  bool said = false;
  for (int i = 0; i < 500 && !said; ++i) {
    said = s.projector->views_unwritable() && s.projector->fault().find(kind.says) != std::string::npos;
    if (!said) std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(said) << "views_unwritable " << s.projector->views_unwritable()
                    << ", fault: " << s.projector->fault();
  EXPECT_FALSE(s.caught_up(50ms)) << "the views cannot have applied what they could not write";
  EXPECT_TRUE(s.views->wallet_text(scope, a).value().has_value()) << "reads go on";
  EXPECT_TRUE(s.projector->healthy()) << "a write fault is not the projection stopping";
  // The projector retries through a reopen every second; while the fault lasts each one fails,
  // and reads go on against the views as they were.
  const std::uint64_t failed_before = s.faulty->failed();
  std::this_thread::sleep_for(2500ms);
  EXPECT_GT(s.faulty->failed(), failed_before) << "the projector retried meanwhile";
  EXPECT_TRUE(s.projector->views_unwritable());
  EXPECT_NE(s.projector->fault().find(kind.says), std::string::npos) << s.projector->fault();
  EXPECT_TRUE(s.views->wallet_text(scope, b).value().has_value()) << "reads go on across failed reopens";

  s.faulty->set(Fault::none);
  ASSERT_TRUE(s.caught_up(10s)) << s.projector->fault();
  EXPECT_FALSE(s.projector->views_unwritable());
  EXPECT_EQ(s.projector->fault(), "");
  EXPECT_TRUE(s.views->transaction_text(scope, kCaller.account, "while-the-views-fail").value().has_value());
  s.expect_equal_to_a_rebuild(dir_);
}

// A views write whose acknowledgement is lost: the batch reached the views' write-ahead log, yet
// RocksDB reports the write failed, and the reopen before the retry recovers it from the log. The
// projector must see that the batch landed and not apply it again: its list counters are merge
// operands (projection/views.h), which would count twice.
TEST_P(StorageFaults, OnTheViewsABatchWhoseWriteFailedAfterReachingTheLogIsAppliedOnce) {
  const Kind& kind = GetParam();
  ViewsOnAFaultyDisk s(ledger_options(), dir_);
  ASSERT_NO_FATAL_FAILURE(s.start());
  const auto [a, b] = s.funded;

  s.faulty->lose_next_wal_ack(kind.fault);
  ASSERT_TRUE(s.ledger().execute(transfer(a, b, "acknowledgement-lost")).ok());
  ASSERT_TRUE(s.caught_up(10s)) << s.projector->fault();
  EXPECT_EQ(s.faulty->failed(), 1u) << "the lost acknowledgement was not met";
  EXPECT_EQ(s.projector->fault(), "");

  const Scope scope{kCaller.business, false};
  const Page all = s.views->transactions(scope, TransactionFilter{}, PageRequest{1, 100}).value();
  EXPECT_EQ(all.total_count, all.items.size()) << "a list counted the batch twice";
  s.expect_equal_to_a_rebuild(dir_);
}

INSTANTIATE_TEST_SUITE_P(EachKind, StorageFaults, ::testing::ValuesIn(kKinds),
                         [](const ::testing::TestParamInfo<Kind>& param_info) {
                           return std::string(param_info.param.name);
                         });

}  // namespace
}  // namespace kobo
