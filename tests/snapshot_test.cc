// Snapshots of the writer's state (command/snapshot.h): a writer started from a snapshot and the
// log after it decides exactly as one that replayed the whole log, byte for byte in what it
// appends; a torn, corrupt or foreign snapshot is refused, an older one or the whole log used;
// a snapshot on a full disk fails without harm and is written once there is room.
#include "command/snapshot.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "command/ledger.h"
#include "common/crypto.h"
#include "common/metrics.h"
#include "events/embedded_log.h"
#include "tests/support/commands.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/small_disk.h"

namespace kobo {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr std::uint32_t kPartitions = 3;
constexpr UnixMs kNow = 1'790'000'000'000;

const Caller kAda{"biz-snapshot-a", "acc-snapshot-a", false};
const Caller kBola{"biz-snapshot-b", "acc-snapshot-b", true};

class SnapshotTest : public ::testing::Test {
 protected:
  static std::unique_ptr<EventLog> open_log(const fs::path& path) {
    EmbeddedLogOptions o;
    o.path = path.string();
    o.partitions = kPartitions;
    auto log = open_embedded_log(o);
    EXPECT_TRUE(log.ok()) << log.status().message();
    return std::move(log).value();
  }

  // A seeded, virtual-clock writer: two of them given the same commands decide the same events.
  LedgerOptions options(std::uint64_t seed, bool snapshots) const {
    LedgerOptions o;
    o.config.partitions = kPartitions;
    o.config.rail_delay = std::chrono::hours(1);  // payouts stay in flight: part of the state
    o.ids = std::make_shared<SeededIds>(seed);
    o.clock = [this] { return clock_.load(); };
    if (snapshots) {
      o.snapshot_dir = snapshots_;
      o.snapshot_every_events = 20;
      o.history_dir = dir_ / "history";  // a start uses a snapshot only with an index that covers it
    }
    return o;
  }

  // Commands that touch every part of the state: businesses, wallets (named and transit),
  // funding, transfers and their references (an idempotent repeat, a refusal), a payout in
  // flight, a collection wallet, a beneficiary. Returns what each was answered.
  std::vector<std::string> traffic(Ledger& l, int round) {
    std::vector<std::string> answers;
    const auto run = [&](Command c) { return answer(l, std::move(c), answers); };
    const std::string r = std::to_string(round);
    for (const Caller& caller : {kAda, kBola}) {
      if (round == 0)
        run(CreateBusiness{caller.business, "Biz", caller.account, "Default", std::string(64, 'a' + round),
                           std::string(64, 'b'), "pk_test_x", "pk_live_x"});
      std::vector<Outcome> wallets;
      for (int i = 0; i < 3; ++i) {
        wallets.push_back(run(CreateWallet{caller, "w" + r + "-" + std::to_string(i), "secondary", {}, {}}));
        wallets_[{round, caller.business}].push_back(wallets.back().id);
        const auto& opened = std::get<WalletOpened>(wallets.back().events.at(0).data);
        run(IncomingCredit{caller, opened.account_number, Kobo(1'000'000), "fund", "S", "0000014579", "058",
                           "GTB", "000013"});
      }
      for (int i = 0; i < 6; ++i) run(transfer(caller, round, i));
      WalletTransfer too_much;
      too_much.caller = caller;
      too_much.source = wallets[0].id;
      too_much.destination = wallets[1].id;
      too_much.amount = Kobo(999'000'000);
      too_much.narration = "no";
      run(too_much);
      // Holds: one pending (captured in part, expiring under later()), one voided.
      const Outcome placed =
          run(PlaceHold{caller, wallets[0].id, Kobo(30'000), "hold-" + r, std::nullopt, RawJson{}, 7'200});
      holds_[{round, caller.business}] = placed.id;
      run(CaptureHold{caller, placed.id, wallets[1].id, "cap-" + r, Kobo(10'000), std::nullopt, false});
      const Outcome voided =
          run(PlaceHold{caller, wallets[1].id, Kobo(5'000), "hold-v-" + r, "v", RawJson{}, 60});
      run(VoidHold{caller, voided.id});
      BankTransfer b = testing::bank_transfer(caller, wallets[2].id, Kobo(50'000), "bka-" + r);
      b.save_beneficiary = true;
      run(b);
      run(CreateCollection{caller, wallets[0].id, "Pay me", Kobo(25'000), 900, "col-ref-" + r});
      run(CreateTransitWallet{caller, "transit " + r, wallets[1].id, std::nullopt, std::nullopt});
      run(AddBankAccount{caller, "bka-saved-" + r, "Ada", "0000014579", "GTB", "058", "personal"});
    }
    return answers;
  }

  static Outcome answer(Ledger& l, Command c, std::vector<std::string>& answers) {
    Outcome o = l.execute(std::move(c));
    answers.push_back(std::string(to_string(o.rejection)) + " " + o.id + (o.replayed ? " replayed" : ""));
    return o;
  }

  // The i-th transfer of a round; i and i + 4 share a reference (the second conflicts).
  WalletTransfer transfer(const Caller& caller, int round, int i, std::int64_t extra = 0) {
    const auto& ids = wallets_.at({round, caller.business});
    WalletTransfer t;
    t.caller = caller;
    t.source = ids.at(static_cast<std::size_t>(i % 3));
    t.destination = ids.at(static_cast<std::size_t>((i + 1) % 3));
    t.amount = Kobo(10'000 * (i + 1) + extra);
    t.narration = "t";
    t.reference = "ref-" + std::to_string(round) + "-" + std::to_string(i % 4);
    return t;
  }

  // What an earlier round did, again: what the writer remembers of it answers (taken names and
  // references, idempotent repeats and conflicting ones).
  std::vector<std::string> repeat(Ledger& l, int round) {
    std::vector<std::string> answers;
    const std::string r = std::to_string(round);
    for (const Caller& caller : {kAda, kBola}) {
      answer(l, CreateWallet{caller, "w" + r + "-0", "secondary", {}, {}}, answers);
      for (int i = 0; i < 4; ++i) answer(l, transfer(caller, round, i), answers);
      answer(l, transfer(caller, round, 1, 1), answers);
      const auto& ids = wallets_.at({round, caller.business});
      answer(l, PlaceHold{caller, ids.at(0), Kobo(30'000), "hold-" + r, std::nullopt, RawJson{}, 7'200},
             answers);
      answer(l, PlaceHold{caller, ids.at(0), Kobo(30'001), "hold-" + r, std::nullopt, RawJson{}, 7'200},
             answers);
      const std::string& hold = holds_.at({round, caller.business});
      answer(l, CaptureHold{caller, hold, ids.at(1), "cap-" + r, Kobo(10'000), std::nullopt, false}, answers);
      answer(l, CaptureHold{caller, hold, ids.at(1), "cap2-" + r, Kobo(20'001), std::nullopt, false},
             answers);
      answer(l,
             CreateCollection{caller, wallets_.at({round, caller.business}).at(0), "Again", Kobo(25'000), 900,
                              "col-ref-" + r},
             answers);
    }
    return answers;
  }

  // What fell due under the virtual clock is decided when a command comes: payouts in flight
  // move on, unpaid collection wallets expire.
  std::vector<std::string> later(Ledger& l) {
    std::vector<std::string> answers;
    for (int step = 0; step < 3; ++step) {
      clock_ += 3 * 3'600'000;
      WalletTransfer nudge = transfer(kAda, 0, 0);
      nudge.source = "vba-none";
      answer(l, nudge, answers);
    }
    return answers;
  }

  // Every record of the log, as stored, in partition and log order.
  static std::vector<std::string> records(EventLog& log) {
    auto reader = log.open_reader(std::vector<Offset>(kPartitions, Offset(0)));
    std::vector<std::string> out;
    for (;;) {
      std::vector<LogRecord> got;
      EXPECT_TRUE(reader.value()->poll(4096, 0ms, got).ok());
      if (got.empty()) break;
      for (auto& r : got) out.push_back(std::to_string(r.partition.value) + ":" + r.bytes);
    }
    std::stable_sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
      return a.substr(0, a.find(':')) < b.substr(0, b.find(':'));
    });
    return out;
  }

  std::vector<fs::path> snapshot_files() const {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(snapshots_, ec))
      if (e.path().extension() == ".bin") out.push_back(e.path());
    std::sort(out.begin(), out.end(), std::greater<>());
    return out;
  }

  // Runs two rounds of traffic with snapshots on until at least `snapshots` were written after
  // the first; the second round is the log's tail after the newest.
  void make_log_with_snapshots(std::size_t snapshots = 1) {
    auto log = open_log(dir_ / "log");
    Ledger l(*log, options(1, true));
    ASSERT_TRUE(l.start().ok());
    for (int round = 0; snapshot_files().size() < snapshots; ++round) {
      ASSERT_LT(round, 40) << "the snapshotter wrote no snapshot";
      traffic(l, round);
      for (int i = 0; i < 30 && snapshot_files().size() < snapshots; ++i) std::this_thread::sleep_for(100ms);
    }
    traffic(l, 100);  // the tail: after the newest snapshot
  }

  // Starts one writer on the log with its snapshots and one on a copy of the log without any,
  // gives both the same commands, and expects the same answers and byte-identical logs.
  void expect_start_equals_whole_replay() {
    fs::remove_all(dir_ / "log-copy");
    fs::copy(dir_ / "log", dir_ / "log-copy", fs::copy_options::recursive);
    auto with = open_log(dir_ / "log");
    auto without = open_log(dir_ / "log-copy");
    const auto run = [&](EventLog& log, bool snapshots) {
      clock_ = kNow;
      Ledger l(log, options(2, snapshots));
      EXPECT_TRUE(l.start().ok());
      std::vector<std::string> answers;
      for (auto part : {traffic(l, 200), repeat(l, 0), repeat(l, 100), later(l)})
        answers.insert(answers.end(), part.begin(), part.end());
      return answers;
    };
    const auto answers_with = run(*with, true);
    const auto answers_without = run(*without, false);
    EXPECT_EQ(answers_with, answers_without);
    const auto a = records(*with), b = records(*without);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << "record " << i;
  }

  testing::ScratchDir scratch_;
  const fs::path dir_ = scratch_.path();
  fs::path snapshots_ = dir_ / "snapshots";  // where the writers with snapshots keep them
  std::atomic<UnixMs> clock_{kNow};
  std::map<std::pair<int, std::string>, std::vector<std::string>>
      wallets_;                                               // (round, business) -> wallet ids
  std::map<std::pair<int, std::string>, std::string> holds_;  // (round, business) -> the pending hold
};

TEST_F(SnapshotTest, AStartFromASnapshotDecidesExactlyAsAWholeReplay) {
  make_log_with_snapshots();
  {
    auto log = open_log(dir_ / "log");
    const auto snapshot = load_snapshot(snapshots_, *log);
    ASSERT_TRUE(snapshot.has_value()) << "the snapshot written is not used";
    EXPECT_GT(snapshot->events, 0u);
  }
  expect_start_equals_whole_replay();
}

TEST_F(SnapshotTest, ATornOrCorruptSnapshotIsRefusedAndTheWholeLogReplayed) {
  make_log_with_snapshots();
  const auto files = snapshot_files();
  for (std::size_t i = 1; i < files.size(); ++i) fs::remove(files[i]);  // only the newest is left
  const fs::path newest = files.front();
  std::string pristine;
  {
    std::ifstream in(newest, std::ios::binary);
    pristine.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const auto write = [&](const std::string& bytes) {
    std::ofstream(newest, std::ios::binary | std::ios::trunc) << bytes;
  };
  std::string flipped = pristine;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x20);
  const std::vector<std::pair<std::string, std::string>> damages{
      {"half written", pristine.substr(0, pristine.size() / 2)},
      {"a byte changed", flipped},
      {"bytes after its end", pristine + "junk"},
      {"empty", ""},
  };
  for (const auto& [name, bytes] : damages) {
    write(bytes);
    auto log = open_log(dir_ / "log");
    EXPECT_FALSE(load_snapshot(snapshots_, *log).has_value()) << name;
    EXPECT_FALSE(decode_snapshot(bytes, kPartitions).ok()) << name;
  }
  write(flipped);
  expect_start_equals_whole_replay();
}

// A snapshot is checked beyond its hash: the state it decodes to must be one the writer could
// hold (here, balances that sum to zero), else it is refused and the whole log replayed.
TEST_F(SnapshotTest, ASnapshotWhoseHashHoldsButWhoseStateIsInconsistentIsRefused) {
  make_log_with_snapshots();
  const auto files = snapshot_files();
  for (std::size_t i = 1; i < files.size(); ++i) fs::remove(files[i]);
  const fs::path newest = files.front();
  std::string bytes;
  {
    std::ifstream in(newest, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_TRUE(decode_snapshot(bytes, kPartitions).ok());
  // The last partition's state ends with its total (i64), then the tier table: a count (u64)
  // and three tiers of (i64, u8, i64), then its checkpoint key (a u64 length: 0, unsigned). One
  // kobo more in the total, and the hash made anew.
  constexpr std::size_t kHash = 32, kTiers = 8 + 3 * 17 + 8;
  std::string body = bytes.substr(0, bytes.size() - kHash);
  body[body.size() - kTiers - 8] = static_cast<char>(body[body.size() - kTiers - 8] + 1);
  const Sha256 hash = sha256(body);
  const std::string forged = body + std::string(reinterpret_cast<const char*>(hash.data()), hash.size());
  const auto decoded = decode_snapshot(forged, kPartitions);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.status().message().find("do not sum to zero"), std::string::npos)
      << decoded.status().message();
  std::ofstream(newest, std::ios::binary | std::ios::trunc) << forged;
  auto log = open_log(dir_ / "log");
  EXPECT_FALSE(load_snapshot(snapshots_, *log).has_value());
  log.reset();
  expect_start_equals_whole_replay();
}

// The key that signs a partition's next checkpoint (a writer rotates from it) survives a
// snapshot; one that is not a key is refused.
TEST_F(SnapshotTest, TheCheckpointKeyRoundTripsAndAMalformedOneIsRefused) {
  make_log_with_snapshots();
  std::string bytes;
  {
    std::ifstream in(snapshot_files().front(), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto snapshot = decode_snapshot(bytes, kPartitions);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().message();
  const std::string key(64, 'a');
  snapshot->states.back().checkpoint_key = key;
  const auto again = decode_snapshot(encode_snapshot(snapshot.value()), kPartitions);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->states.back().checkpoint_key, key);
  // The key is the last partition's state's last member: one digit edited, the hash made anew.
  constexpr std::size_t kHash = 32;
  const std::string encoded = encode_snapshot(snapshot.value());
  std::string body = encoded.substr(0, encoded.size() - kHash);
  ASSERT_EQ(body.substr(body.size() - key.size()), key);
  body[body.size() - 1] = 'X';
  const Sha256 hash = sha256(body);
  const auto refused = decode_snapshot(
      body + std::string(reinterpret_cast<const char*>(hash.data()), hash.size()), kPartitions);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("checkpoint key"), std::string::npos)
      << refused.status().message();
}

TEST_F(SnapshotTest, TheNewestUsableSnapshotIsTheOneUsed) {
  make_log_with_snapshots(2);
  const auto files = snapshot_files();
  ASSERT_EQ(files.size(), 2u) << "the two newest are kept";
  std::ofstream(files.front(), std::ios::binary | std::ios::app) << "x";
  auto log = open_log(dir_ / "log");
  const auto used = load_snapshot(snapshots_, *log);
  ASSERT_TRUE(used.has_value());
  EXPECT_EQ(fs::path("snapshot-" + std::string(20 - std::to_string(used->events).size(), '0') +
                     std::to_string(used->events) + ".bin"),
            files.back().filename())
      << "the older snapshot, the newest being damaged";
}

TEST_F(SnapshotTest, ATemporaryFileACrashLeftIsRemovedByTheNextSnapshot) {
  fs::create_directories(snapshots_);
  const fs::path leftover = snapshots_ / ".snapshot-00000000000000000007.bin.tmp-0123456789abcdef";
  std::ofstream(leftover, std::ios::binary) << "half a snapshot";
  make_log_with_snapshots();
  EXPECT_FALSE(fs::exists(leftover));
  EXPECT_FALSE(snapshot_files().empty());
}

TEST_F(SnapshotTest, ASnapshotOfAnotherLogIsRefused) {
  make_log_with_snapshots();
  {
    // A log that holds less than the snapshot: refused for its end.
    auto empty = open_log(dir_ / "empty-log");
    EXPECT_FALSE(load_snapshot(snapshots_, *empty).has_value());
  }
  // A log as long, with other events: refused for its seq's hash.
  auto other = open_log(dir_ / "other-log");
  {
    Ledger l(*other, options(99, false));
    ASSERT_TRUE(l.start().ok());
    for (int round = 0; round < 12; ++round) traffic(l, round);
  }
  EXPECT_FALSE(load_snapshot(snapshots_, *other).has_value());
}

// Guarantee 8 (docs/architecture.md section 6) for snapshots: on a full disk a snapshot fails without harm
// (commands go on being decided, the snapshots there were stay whole and usable, no temporary file is left)
// and the next one is written once there is room, and is the one a start uses.
TEST_F(SnapshotTest, ASnapshotOnAFullDiskFailsWithoutHarmAndIsWrittenOnceThereIsRoom) {
  if (!testing::SmallDisk::can_mount()) GTEST_SKIP() << "mounting a tmpfs needs root";
  testing::SmallDisk disk("snapshot-full", "8m");
  ASSERT_TRUE(disk.mounted()) << "mount tmpfs: errno " << disk.mount_error();
  snapshots_ = disk.path() / "snapshots";  // the log stays on the test's own disk
  const metrics::Counter& written = metrics::registry().counter("kobo_snapshots_written_total", "");
  const metrics::Counter& failed = metrics::registry().counter("kobo_snapshot_failures_total", "");
  // Rounds of traffic until `done`, each given up to 3 s for the snapshotter to act on it.
  const auto rounds_until = [&](Ledger& l, int& round, const auto& done) {
    for (const int first = round; !done(); ++round) {
      if (round - first >= 10) return false;
      traffic(l, round);
      for (int i = 0; i < 30 && !done(); ++i) std::this_thread::sleep_for(100ms);
    }
    return true;
  };
  {
    auto log = open_log(dir_ / "log");
    LedgerOptions o = options(1, true);
    o.snapshot_poll = 50ms;
    Ledger l(*log, o);
    ASSERT_TRUE(l.start().ok());
    int round = 0;
    ASSERT_TRUE(rounds_until(l, round, [&] { return !snapshot_files().empty(); })) << "no first snapshot";

    // traffic() asserts nothing: that commands went on is read from the log's length.
    const auto logged = [&] {
      const auto ends = log->end_offsets();
      EXPECT_TRUE(ends.ok());
      std::uint64_t n = 0;
      for (const Offset end : ends.value()) n += end.value;
      return n;
    };
    ASSERT_TRUE(disk.fill(0));
    const std::uint64_t failures = failed.value();
    const std::uint64_t logged_before = logged();
    traffic(l, round++);  // at least one round on the full disk
    ASSERT_TRUE(rounds_until(l, round, [&] { return failed.value() > failures; }))
        << "no snapshot was tried on the full disk";
    EXPECT_GT(logged(), logged_before) << "the writer stopped with the snapshots' disk full";
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(snapshots_, ec))
      EXPECT_EQ(e.path().extension(), ".bin") << "left on the full disk: " << e.path();
    ASSERT_FALSE(snapshot_files().empty());
    const auto usable = load_snapshot(snapshots_, *log);
    ASSERT_TRUE(usable.has_value()) << "the full disk spoiled the snapshots there were";

    disk.unfill();
    const std::uint64_t writes = written.value();
    const std::uint64_t failures_then = failed.value();
    ASSERT_TRUE(rounds_until(l, round, [&] { return written.value() > writes; }))
        << "no snapshot was written once there was room";
    EXPECT_EQ(failed.value(), failures_then);
    const auto newest = load_snapshot(snapshots_, *log);
    ASSERT_TRUE(newest.has_value());
    EXPECT_GT(newest->events, usable->events);
    traffic(l, 100);  // a tail after the newest snapshot
  }
  expect_start_equals_whole_replay();
}

// The log as the snapshotter sees it, unreachable on demand: end_offsets() fails as a broker
// outage does (ErrorKind::unavailable), and the rest is the embedded log's.
class UnreachableLog final : public EventLog {
 public:
  explicit UnreachableLog(EventLog& log) : log_(log) {}
  std::atomic<bool> down{false};
  std::uint32_t partitions() const override { return log_.partitions(); }
  Status append(std::span<const EncodedEvent> batch) override { return log_.append(batch); }
  Result<std::unique_ptr<LogReader>> open_reader(std::vector<Offset> start) override {
    return log_.open_reader(std::move(start));
  }
  Result<std::vector<Offset>> end_offsets() override {
    if (down.load()) return Status::error("end offsets: Local: Timed out", ErrorKind::unavailable);
    return log_.end_offsets();
  }

 private:
  EventLog& log_;
};

// A log that cannot be read for a while (a Kafka leader moving) delays the snapshots; it does
// not end them.
TEST_F(SnapshotTest, SnapshotsGoOnOnceALogThatCouldNotBeReadCanBeAgain) {
  const metrics::Counter& written = metrics::registry().counter("kobo_snapshots_written_total", "");
  auto embedded = open_log(dir_ / "log");
  UnreachableLog log(*embedded);
  LedgerOptions o = options(1, true);
  o.snapshot_poll = 50ms;
  Ledger l(log, o);
  ASSERT_TRUE(l.start().ok());
  const auto rounds_until = [&](int& round, const auto& done) {
    for (const int first = round; !done(); ++round) {
      if (round - first >= 10) return false;
      traffic(l, round);
      for (int i = 0; i < 30 && !done(); ++i) std::this_thread::sleep_for(100ms);
    }
    return true;
  };
  int round = 0;
  std::uint64_t writes = written.value();
  ASSERT_TRUE(rounds_until(round, [&] { return written.value() > writes; })) << "no first snapshot";
  log.down = true;
  writes = written.value();
  for (int i = 0; i < 3; ++i) traffic(l, round++);
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(written.value(), writes) << "a snapshot while the log could not be read";
  log.down = false;
  ASSERT_TRUE(rounds_until(round, [&] { return written.value() > writes; }))
      << "the snapshots stopped for good when the log could not be read for a while";
}

}  // namespace
}  // namespace kobo
