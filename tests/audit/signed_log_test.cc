// `kobo audit --verify-key` (audit/signatures.h) over a real log that a Ledger wrote with a writer
// key (events/checkpoint.h) on the embedded backend: the clean log verifies, and each forgery of
// docs/security.md "A log nobody can forge" is reported where it is: an event appended without
// the key, an event edited and the chain re-sealed after it, a cut tail, a forged epoch and the
// real writer's events it turns into zombies. Each forgery is first shown to pass the unkeyed
// audit, which is what the signatures are for.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "audit/audit.h"
#include "command/ledger.h"
#include "common/crypto.h"
#include "events/checkpoint.h"
#include "events/embedded_log.h"
#include "events/partitioner.h"
#include "tests/audit/log_surgery.h"
#include "tests/support/scratch_dir.h"

namespace kobo::audit {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::LogSurgery;

constexpr std::uint32_t kPartitions = 2;
constexpr std::uint64_t kCheckpointEvents = 7;

Outcome must(Ledger& ledger, Command c) {
  Outcome o = ledger.execute(std::move(c));
  EXPECT_TRUE(o.ok()) << to_string(o.rejection) << " " << o.detail;
  return o;
}

// A business of partition n % kPartitions with two funded wallets and a few transfers between them.
void business(Ledger& ledger, int n) {
  std::string biz = "biz-" + uuid_v4();
  while (partition_for(biz, kPartitions).value != static_cast<std::uint32_t>(n) % kPartitions)
    biz = "biz-" + uuid_v4();
  const std::string acc = "acc-" + uuid_v4();
  must(ledger,
       CreateBusiness{biz, "Business " + std::to_string(n), acc, "Default", sha256_hex("sk_test_" + biz),
                      sha256_hex("sk_live_" + biz), "pk_test_" + biz, "pk_live_" + biz});
  const Caller caller{biz, acc, false};
  std::vector<std::string> wallets;
  for (int i = 0; i < 2; ++i) {
    const Outcome w = must(ledger, CreateWallet{caller, "wallet " + std::to_string(i), "secondary", {}, {}});
    wallets.push_back(w.id);
    must(ledger,
         IncomingCredit{caller, std::get<WalletOpened>(w.events.at(0).data).account_number, Kobo(1'000'000),
                        "funding", "Ada Obi", "0123456784", "044", "Access Bank", "000014"});
  }
  for (int i = 0; i < 4; ++i) {
    WalletTransfer t;
    t.caller = caller;
    t.source = wallets[i % 2];
    t.destination = wallets[(i + 1) % 2];
    t.amount = Kobo(1'000 + i);
    t.narration = "transfer " + std::to_string(i);
    t.reference = "ref-" + std::to_string(n) + "-" + std::to_string(i);
    must(ledger, t);
  }
}

LedgerOptions signing(const fs::path& key_file) {
  LedgerOptions lo;
  lo.config.partitions = kPartitions;
  auto signer = open_key_file_signer(key_file);
  EXPECT_TRUE(signer.ok()) << signer.status().message();
  lo.signer = signer.value();
  lo.checkpoint_events = kCheckpointEvents;
  lo.checkpoint_interval = 3'600'000ms;  // signed by count and as the writer stops, not by time
  return lo;
}

// Decodes a record the test made or read (the audit's own tests trust nothing; these are the
// forger's tools).
Event event_of(const std::string& record) {
  auto e = decode_event_unverified(record);
  EXPECT_TRUE(e.ok()) << e.status().message();
  return std::move(e).value();
}

// A forged event extending `after`'s chain: balanced, nothing the unkeyed audit can fault.
Event extending(const Event& after, EventData data, Epoch epoch) {
  Event e;
  e.partition = after.partition;
  e.seq = Seq(after.seq.value + 1);
  e.command_seq = e.seq;
  e.epoch = epoch;
  e.time = after.time + 1;
  e.data = std::move(data);
  e.prev_hash = after.hash;
  return e;
}

// Re-seals records[from..] so that each links to the one before: what a forger without the
// key does after editing records[from - 1].
void rechain(std::vector<std::string>& records, std::size_t from) {
  for (std::size_t i = from; i < records.size(); ++i) {
    Event e = event_of(records[i]);
    e.prev_hash = event_of(records[i - 1]).hash;
    records[i] = seal_unvalidated(e);
  }
}

class SignedLog : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    scratch_.emplace("signed-log-test");
    root_ = scratch_->path();
    const std::string pem = new_ed25519_private_key_pem();
    std::ofstream(root_ / "writer.pem") << pem;
    public_key_ = public_key_of_pem(pem).value();
    // Two writer generations, so two signed epochs per partition.
    auto log = open_embedded_log({(root_ / "golden").string(), kPartitions, /*sync=*/false});
    ASSERT_TRUE(log.ok()) << log.status().message();
    for (int generation = 0; generation < 2; ++generation) {
      Ledger ledger(*log.value(), signing(root_ / "writer.pem"));
      ASSERT_TRUE(ledger.start().ok());
      for (int n = 0; n < 3; ++n) business(ledger, generation * 10 + n);
      ledger.stop();
    }
  }
  static void TearDownTestSuite() { scratch_.reset(); }

 protected:
  fs::path copy() {
    const fs::path to = root_ / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(to);
    fs::copy(root_ / "golden", to, fs::copy_options::recursive);
    return to;
  }

  static SignatureOptions keyed(UnixMs now = now_ms()) {
    SignatureOptions o;
    o.public_key = public_key_;
    o.now = now;
    return o;
  }

  static AuditReport audit(const fs::path& dir, const std::optional<SignatureOptions>& signatures) {
    auto log = open_embedded_log({dir.string(), 0, false, false});
    EXPECT_TRUE(log.ok()) << log.status().message();
    auto report = signatures ? audit_log(*log.value(), *signatures) : audit_log(*log.value());
    EXPECT_TRUE(report.ok()) << report.status().message();
    return std::move(report).value();
  }

  static bool flags(const AuditReport& r, Check check, std::uint32_t partition, std::uint64_t seq,
                    std::string_view says) {
    for (const Violation& v : r.violations)
      if (v.check == check && v.partition && v.partition->value == partition && v.seq &&
          v.seq->value == seq && v.reason.find(says) != std::string::npos)
        return true;
    return false;
  }

  static std::optional<testing::ScratchDir> scratch_;
  static fs::path root_;
  static std::string public_key_;
};

std::optional<testing::ScratchDir> SignedLog::scratch_;
fs::path SignedLog::root_;
std::string SignedLog::public_key_;

TEST_F(SignedLog, ACleanLogVerifiesWithTheWriterKeyOnly) {
  const AuditReport r = audit(root_ / "golden", keyed());
  EXPECT_TRUE(r.clean()) << summary(r);
  EXPECT_TRUE(r.signatures.checked);
  EXPECT_EQ(r.signatures.unsigned_events, 0u) << "the writer signs its tail as it stops";
  // Two generations' WriterStarted checkpoints per partition, and the count-based ones between.
  EXPECT_GT(r.signatures.checkpoints, 4u * kPartitions);
  ASSERT_EQ(r.signatures.last.size(), kPartitions);

  // Another key verifies none of it.
  SignatureOptions other = keyed();
  other.public_key = public_key_of_pem(new_ed25519_private_key_pem()).value();
  const AuditReport wrong = audit(root_ / "golden", other);
  EXPECT_FALSE(wrong.clean());
  EXPECT_TRUE(flags(wrong, Check::epoch, 0, 1, "forged")) << summary(wrong);
  EXPECT_TRUE(flags(wrong, Check::signature, 0, 2, "another key")) << summary(wrong);
}

TEST_F(SignedLog, AnEventAppendedWithoutTheKeyIsFlagged) {
  const fs::path dir = copy();
  Seq forged;
  {
    LogSurgery surgery(dir);
    auto records = surgery.records(1);
    const Event last = event_of(records.back());
    Event e = extending(last, WebhookDeliveriesEnded{{WebhookDeliveryEnded{"whd-forged", true}}}, last.epoch);
    forged = e.seq;
    records.push_back(seal(e));
    surgery.rewrite(1, records);
  }
  EXPECT_TRUE(audit(dir, std::nullopt).clean()) << "the unkeyed chain cannot tell";
  // Soon after, the tail may be the writer's, not signed yet: noted, not proven.
  const AuditReport soon = audit(dir, keyed(now_ms()));
  EXPECT_TRUE(soon.clean()) << summary(soon);
  EXPECT_EQ(soon.signatures.unsigned_events, 1u);
  // Older than the writer's interval, it is a violation at the forged event.
  const AuditReport later = audit(dir, keyed(now_ms() + 3'600'000));
  EXPECT_TRUE(flags(later, Check::signature, 1, forged.value, "signed by no checkpoint")) << summary(later);
  EXPECT_EQ(later.violation_count, 1u) << summary(later);
}

TEST_F(SignedLog, AnEditedEventWithTheChainResealedIsFlagged) {
  const fs::path dir = copy();
  std::uint64_t edited = 0;
  {
    LogSurgery surgery(dir);
    auto records = surgery.records(0);
    // The first wallet transfer's narration: it moves no money, so only the signatures see it.
    for (std::size_t i = 1; i + 1 < records.size(); ++i) {
      Event e = event_of(records[i]);
      if (auto* t = std::get_if<WalletTransferSettled>(&e.data)) {
        t->narration = "forged narration";
        records[i] = seal(e);
        rechain(records, i + 1);
        edited = e.seq.value;
        break;
      }
    }
    ASSERT_GT(edited, 0u);
    surgery.rewrite(0, records);
  }
  EXPECT_TRUE(audit(dir, std::nullopt).clean()) << "the unkeyed chain cannot tell";
  const AuditReport r = audit(dir, keyed());
  ASSERT_FALSE(r.clean());
  // The first checkpoint after the edit fails, naming the range the edit is in.
  const Violation& v = r.violations.front();
  EXPECT_EQ(v.check, Check::signature) << summary(r);
  ASSERT_TRUE(v.seq.has_value());
  EXPECT_GT(v.seq->value, edited);
  EXPECT_LE(v.seq->value, edited + kCheckpointEvents + 1);
  EXPECT_NE(v.reason.find("not what the writer signed"), std::string::npos) << v.reason;
}

TEST_F(SignedLog, ACutTailIsFlaggedAgainstAnEarlierAudit) {
  const fs::path dir = copy();
  const AuditReport before = audit(dir, keyed());
  ASSERT_TRUE(before.clean());
  const VerifiedCheckpoint last = before.signatures.last.at(0);
  // Round trip through the --json report, as `--verified-before` reads it.
  auto listed = verified_checkpoints(to_json(before));
  ASSERT_TRUE(listed.ok()) << listed.status().message();
  ASSERT_EQ(listed->size(), before.signatures.last.size());
  {
    // The last checkpoint and everything after the one before it: a cut at a checkpoint, which
    // leaves a log that looks whole.
    LogSurgery surgery(dir);
    auto records = surgery.records(0);
    std::size_t keep = records.size() - 1;
    while (keep > 0 && event_of(records[keep - 1]).type() != EventType::chain_checkpointed) --keep;
    ASSERT_GT(keep, 0u);
    records.resize(keep);
    surgery.rewrite(0, records);
  }
  EXPECT_TRUE(audit(dir, std::nullopt).clean());
  EXPECT_TRUE(audit(dir, keyed()).clean()) << "a cut at a checkpoint is invisible without an earlier audit";
  SignatureOptions o = keyed();
  o.verified_before = listed.value();
  const AuditReport r = audit(dir, o);
  EXPECT_TRUE(flags(r, Check::signature, 0, last.seq.value, "tail was cut")) << summary(r);
}

TEST_F(SignedLog, ACutInsideASignedStretchIsFlaggedByItsAge) {
  const fs::path dir = copy();
  std::uint64_t kept_checkpoint = 0;
  {
    LogSurgery surgery(dir);
    auto records = surgery.records(1);
    // Up to two business events after a checkpoint in the middle of the log.
    const auto type_at = [&](std::size_t k) { return event_of(records[k]).type(); };
    const auto partition_level = [](EventType t) {
      return t == EventType::chain_checkpointed || t == EventType::writer_started;
    };
    std::size_t i = records.size() / 2;
    while (i + 3 < records.size() && !(type_at(i) == EventType::chain_checkpointed &&
                                       !partition_level(type_at(i + 1)) && !partition_level(type_at(i + 2))))
      ++i;
    ASSERT_LT(i + 3, records.size());
    kept_checkpoint = event_of(records[i]).seq.value;
    records.resize(i + 3);
    surgery.rewrite(1, records);
  }
  const AuditReport r = audit(dir, keyed(now_ms() + 3'600'000));
  EXPECT_TRUE(flags(r, Check::signature, 1, kept_checkpoint + 1, "signed by no checkpoint")) << summary(r);
}

TEST_F(SignedLog, AForgedEpochAndTheZombiesItMakesAreFlagged) {
  const fs::path dir = copy();
  std::uint64_t forged = 0, zombie = 0;
  {
    // A WriterStarted of the next epoch put before the writer's last checkpoint: it extends the
    // chain, and the real checkpoint after it becomes a fenced writer's event.
    LogSurgery surgery(dir);
    auto records = surgery.records(0);
    const Event checkpoint = event_of(records.back());
    ASSERT_EQ(checkpoint.type(), EventType::chain_checkpointed);
    const Event before = event_of(records[records.size() - 2]);
    const Epoch next(checkpoint.epoch.value + 1);
    Event w = extending(before, WriterStarted{next, std::nullopt}, next);
    forged = w.seq.value;
    zombie = checkpoint.seq.value;
    records.insert(records.end() - 1, seal(w));
    surgery.rewrite(0, records);
  }
  const AuditReport unkeyed = audit(dir, std::nullopt);
  EXPECT_TRUE(unkeyed.clean()) << summary(unkeyed);
  EXPECT_EQ(unkeyed.zombies, 1u) << "the unkeyed audit notes the zombie only";
  const AuditReport r = audit(dir, keyed());
  EXPECT_TRUE(flags(r, Check::epoch, 0, forged, "no checkpoint the writer key signed")) << summary(r);
  EXPECT_TRUE(flags(r, Check::epoch, 0, zombie, "the writer key signed it")) << summary(r);
}

TEST(SignedCheckpoints, TheWriterSignsItsTailAfterTheInterval) {
  testing::ScratchDir dir("signed-interval");
  const std::string pem = new_ed25519_private_key_pem();
  std::ofstream(dir / "writer.pem") << pem;
  auto log = open_embedded_log({dir.str("log"), kPartitions, /*sync=*/false});
  ASSERT_TRUE(log.ok());
  LedgerOptions lo = signing(dir / "writer.pem");
  lo.checkpoint_events = 1'000'000;
  lo.checkpoint_interval = 200ms;
  Ledger ledger(*log.value(), lo);
  ASSERT_TRUE(ledger.start().ok());
  business(ledger, 1);
  SignatureOptions o;
  o.public_key = public_key_of_pem(pem).value();
  o.unsigned_max_age_ms = 0;
  auto unsigned_now = [&] {
    o.now = now_ms();
    auto r = audit_log(*log.value(), o);
    EXPECT_TRUE(r.ok());
    return r->signatures.unsigned_events;
  };
  for (int i = 0; i < 100 && unsigned_now() > 0; ++i) std::this_thread::sleep_for(20ms);
  o.now = now_ms();
  auto r = audit_log(*log.value(), o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->clean()) << summary(r.value());
  EXPECT_EQ(r->signatures.unsigned_events, 0u);
  ledger.stop();
}

// A key file of a new Ed25519 key in `dir`, and its public key.
std::pair<fs::path, std::string> new_key_file(const fs::path& dir, const std::string& name) {
  const std::string pem = new_ed25519_private_key_pem();
  std::ofstream(dir / name) << pem;
  return {dir / name, public_key_of_pem(pem).value()};
}

// One writer generation on the log at `dir` signing with `key`, rotating from `previous` when
// given, that adds a business to each partition.
void generation(const fs::path& dir, const fs::path& key, const std::optional<fs::path>& previous, int n) {
  auto log = open_embedded_log({dir.string(), kPartitions, /*sync=*/false});
  ASSERT_TRUE(log.ok()) << log.status().message();
  LedgerOptions lo = signing(key);
  if (previous) lo.previous_signer = open_key_file_signer(*previous).value();
  Ledger ledger(*log.value(), lo);
  ASSERT_TRUE(ledger.start().ok());
  for (std::uint32_t p = 0; p < kPartitions; ++p) business(ledger, n + static_cast<int>(p));
  ledger.stop();
}

// The audit of the log at `dir`, with the writer key `key` (64 hex digits) or unkeyed.
AuditReport audit_at(const fs::path& dir, const std::optional<std::string>& key) {
  auto log = open_embedded_log({dir.string(), 0, false, false});
  EXPECT_TRUE(log.ok()) << log.status().message();
  SignatureOptions o;
  o.public_key = key.value_or("");
  o.now = now_ms();
  auto r = key ? audit_log(*log.value(), o) : audit_log(*log.value());
  EXPECT_TRUE(r.ok()) << r.status().message();
  return std::move(r).value();
}

// The checkpoints of partition p of the log at `dir` that name a next key.
std::vector<Event> handovers(const fs::path& dir, std::uint32_t p) {
  std::vector<Event> out;
  LogSurgery surgery(dir);
  for (const std::string& record : surgery.records(p)) {
    Event e = event_of(record);
    if (const auto* c = std::get_if<ChainCheckpointed>(&e.data); c != nullptr && c->next_key)
      out.push_back(std::move(e));
  }
  return out;
}

// Rotating the writer key: a writer given its new key and the one it replaces signs each
// partition's first checkpoint with the old key, naming the new one; the audit, given the first
// key, follows the handover and verifies the whole log; a writer with the new key alone goes on
// without another rotation; a writer with a key nobody handed over to is flagged; and a handover
// whose next key a forger changed (the chain re-sealed, the later checkpoints re-signed with the
// forger's key) fails at the handover.
TEST(SignedRotation, TheOldKeySignsTheHandoverAndTheAuditFollowsIt) {
  testing::ScratchDir dir("signed-rotation");
  const auto [old_key, old_public] = new_key_file(dir.path(), "old.pem");
  const auto [new_key, new_public] = new_key_file(dir.path(), "new.pem");
  const fs::path log_dir = dir / "log";
  generation(log_dir, old_key, std::nullopt, 0);
  generation(log_dir, new_key, old_key, 10);  // the rotation
  generation(log_dir, new_key, old_key, 20);  // rotated already: nothing to hand over
  generation(log_dir, new_key, std::nullopt, 30);
  std::uint64_t handover_seq = 0;
  for (std::uint32_t p = 0; p < kPartitions; ++p) {
    const auto found = handovers(log_dir, p);
    ASSERT_EQ(found.size(), 1u) << "partition " << p << " rotates once";
    const auto& c = std::get<ChainCheckpointed>(found[0].data);
    EXPECT_EQ(c.key, old_public);
    EXPECT_EQ(c.next_key, new_public);
    EXPECT_TRUE(checkpoint_verifies(found[0], c, old_public));
    if (p == 0) handover_seq = found[0].seq.value;
  }
  const AuditReport r = audit_at(log_dir, old_public);
  EXPECT_TRUE(r.clean()) << summary(r);
  EXPECT_EQ(r.signatures.unsigned_events, 0u);
  bool noted = false;
  for (const std::string& note : r.notes) noted = noted || note.find("handed over") != std::string::npos;
  EXPECT_TRUE(noted) << summary(r);
  // The new key alone does not verify what the old one signed before the handover.
  EXPECT_FALSE(audit_at(log_dir, new_public).clean());

  // A writer whose key nobody handed over to: its checkpoints are another key's.
  testing::ScratchDir wrong("signed-rotation-wrong");
  fs::copy(log_dir, wrong / "log", fs::copy_options::recursive);
  const auto [stray_key, stray_public] = new_key_file(wrong.path(), "stray.pem");
  generation(wrong / "log", stray_key, std::nullopt, 40);
  const AuditReport stray = audit_at(wrong / "log", old_public);
  bool flagged = false;
  for (const Violation& v : stray.violations)
    flagged = flagged || (v.check == Check::signature && v.reason.find("another key") != std::string::npos);
  EXPECT_TRUE(flagged) << summary(stray);

  // A forger changes the handover's next key to its own and re-signs every later checkpoint.
  testing::ScratchDir forged("signed-rotation-forged");
  fs::copy(log_dir, forged / "log", fs::copy_options::recursive);
  const auto [forger_key, forger_public] = new_key_file(forged.path(), "forger.pem");
  {
    LogSurgery surgery(forged / "log");
    auto records = surgery.records(0);
    auto forger = open_key_file_signer(forger_key).value();
    for (std::size_t i = 1; i < records.size(); ++i) {
      Event e = event_of(records[i]);
      e.prev_hash = event_of(records[i - 1]).hash;
      auto* c = std::get_if<ChainCheckpointed>(&e.data);
      if (c != nullptr && e.seq.value > handover_seq) {
        ASSERT_TRUE(sign_checkpoint(*forger, e).ok());
      } else if (c != nullptr && e.seq.value == handover_seq) {
        c->next_key = forger_public;  // the old key's signature is kept: the forger cannot make one
      }
      records[i] = seal_unvalidated(e);
    }
    surgery.rewrite(0, records);
  }
  EXPECT_TRUE(audit_at(forged / "log", std::nullopt).clean()) << "the unkeyed chain cannot tell";
  const AuditReport f = audit_at(forged / "log", old_public);
  ASSERT_FALSE(f.clean());
  const Violation& v = f.violations.front();
  EXPECT_EQ(v.check, Check::signature) << summary(f);
  ASSERT_TRUE(v.seq.has_value() && v.partition.has_value());
  EXPECT_EQ(v.partition->value, 0u);
  EXPECT_EQ(v.seq->value, handover_seq) << summary(f);
}

// The sample of tests/schemas/sample_events.jsonl, signed by OpenSSL's command line over the
// message the schema describes: the writer's message and the audit's check are that message.
TEST(SignedCheckpoints, AnEventSignedByOpenSslOverTheDocumentedMessageVerifies) {
  const std::string record =
      R"({"hash":"918dd4a5cf5336b61654d9d34ba8c7741571cf86c5415c71957224731c1fe8a0","business":"","data":{"key":"aafa3bef2fc9e72c11a0c389d4f5c5674b57e392ee8d8663785978edec7580f4","log":"embedded","signature":"05ccd1d8f158947afb07f2bc76d0a21aa02ea5526a1c2bd9fc7d108c8462d77c71ac7ab18443e98136925fd609da7deaa315dd9367dca66a745d2f8072731007"},"epoch":1,"live":false,"partition":1,"prevHash":"df784a8b9c06796aef262f189ace3116d2f566932be631fec6f4336408ddcf10","schemaVersion":2,"seq":3,"time":"2026-11-18T11:06:40.000Z","type":"ChainCheckpointed"})";
  auto e = decode_event(record);
  ASSERT_TRUE(e.ok()) << e.status().message();
  const auto& c = std::get<ChainCheckpointed>(e->data);
  EXPECT_TRUE(
      checkpoint_verifies(e.value(), c, "aafa3bef2fc9e72c11a0c389d4f5c5674b57e392ee8d8663785978edec7580f4"));
  Event moved = e.value();
  moved.epoch = Epoch(moved.epoch.value + 1);
  EXPECT_FALSE(checkpoint_verifies(moved, c, c.key)) << "the epoch is signed";
}

TEST(SignedCheckpoints, AWriterKeyIsReadAsHexPemOrFile) {
  testing::ScratchDir dir("signed-keys");
  const std::string pem = new_ed25519_private_key_pem();
  const std::string hex = public_key_of_pem(pem).value();
  EXPECT_EQ(read_public_key(hex).value(), hex);
  std::ofstream(dir / "public.hex") << hex << "\n";
  EXPECT_EQ(read_public_key((dir / "public.hex").string()).value(), hex);
  EXPECT_FALSE(read_public_key("not a key").ok());
  EXPECT_FALSE(open_key_file_signer(dir / "public.hex").ok());
}

}  // namespace
}  // namespace kobo::audit
