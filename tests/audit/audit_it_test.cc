// `kobo audit`, `kobo replay` and `kobo events` as processes on a data dir that `kobo serve` wrote
// (wallets, incoming credits, transfers, payouts that succeed and fail, a kill -9 in the middle):
// the audit is clean, replay rebuilds byte-identical views, events prints the log as stored, a
// running server's data dir is refused, tampered copies of the log exit 1 naming the partition
// and seq of each tamper, and views of another key layout are rebuilt, never read.
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "events/checkpoint.h"
#include "events/fact_codec.h"
#include "projection/rows.h"
#include "projection/view_keys.h"
#include "projection/views.h"
#include "tests/audit/log_surgery.h"
#include "tests/audit/run_kobo.h"
#include "tests/integration/harness.h"

namespace kobo::it {
namespace {

namespace fs = std::filesystem;
using kobo::testing::dump_db;
using kobo::testing::run_kobo;
using kobo::testing::RunResult;
using kobo::testing::Tamper;

fs::path binary() { return kobo_options().binary; }

json payout(HttpClient& http, const std::string& key, const json& wallet, std::int64_t amount, bool fails) {
  json body{{"source", wallet["publicId"]},
            {"accountNumber", "0123456784"},
            {"bankCode", "044"},
            {"amount", amount},
            {"currency", "NGN"},
            {"narration", "audit payout"}};
  if (fails) body["metadata"] = {{"sandboxOutcome", "failed"}};
  return data_or_throw(http.post("/v1/transactions/bank-transfer", body, key), 200, "bank transfer");
}

void wait_final(HttpClient& http, const std::string& key, const std::string& id) {
  const bool done = wait_until([&] {
    const HttpResult res = http.get("/v1/transactions/" + id, key);
    const std::string status = res.status == 200 ? res.json["data"].value("status", "") : "";
    return status == "success" || status == "failed";
  });
  if (!done) throw std::runtime_error("payout " + id + " did not finish");
}

// Everything the service does today, all of it settled.
void traffic(KoboProcess& server, const std::string& tag) {
  HttpClient& http = server.client();
  const std::string& key = server.test_key();
  std::vector<json> wallets;
  for (int i = 0; i < 3; ++i) {
    wallets.push_back(create_wallet(http, key));
    fund(http, key, wallets.back(), 2'000'000);
  }
  for (int i = 0; i < 6; ++i) {
    const std::string ref = unique_name("audit-" + tag);
    const json body =
        transfer_body(wallets[i % 3]["publicId"], wallets[(i + 1) % 3]["publicId"], 10'000 + i, ref);
    data_or_throw(http.post("/v1/transactions/transfer", body, key), 200, "transfer");
    if (i == 0) data_or_throw(http.post("/v1/transactions/transfer", body, key), 200, "idempotent repeat");
    wait_settled(http, key, ref);
  }
  wait_final(http, key, payout(http, key, wallets[0], 50'000, false)["publicId"]);
  wait_final(http, key, payout(http, key, wallets[1], 60'000, true)["publicId"]);
}

class AuditCommand : public ::testing::Test {
 public:
  // One served data dir per suite: traffic, kill -9, restart, traffic, a graceful stop.
  static void SetUpTestSuite() {
    start_error_.clear();
    try {
      server_ = std::make_unique<KoboProcess>(kobo_options({"--rail-delay-ms", "20"}));
      traffic(*server_, "before");
      server_->kill9();
      server_->start();
      traffic(*server_, "after");
      if (server_->terminate() != 0) throw std::runtime_error("kobo serve did not stop cleanly");
    } catch (const std::exception& e) {
      start_error_ = e.what();
    }
  }
  static void TearDownTestSuite() {
    copies_.clear();
    server_.reset();
  }

 protected:
  void SetUp() override {
    if (!start_error_.empty()) GTEST_FAIL() << start_error_;
  }
  static fs::path data_dir() { return server_->data_dir(); }

  // A copy of the served data dir, for this test to change.
  static fs::path copy(const std::string& name) {
    const fs::path to =
        copies_.emplace_back("audit-" + name, kobo::testing::ScratchDir::Keep::on_failure) / "data";
    kobo::testing::copy_data_dir(data_dir(), to);
    return to;
  }

  static json read_json(const fs::path& file) {
    std::ifstream in(file);
    return json::parse(in, nullptr, false);
  }

  static std::unique_ptr<KoboProcess> server_;
  static std::string start_error_;
  // Removed with the suite unless it failed; tampered with, so never kept for an integration audit.
  static std::vector<kobo::testing::ScratchDir> copies_;
};

std::unique_ptr<KoboProcess> AuditCommand::server_;
std::string AuditCommand::start_error_;
std::vector<kobo::testing::ScratchDir> AuditCommand::copies_;

TEST_F(AuditCommand, IsCleanOnAServedDataDirAndReplayReproducesItsViewsByteForByte) {
  const fs::path dir = copy("replay");
  const fs::path report = dir / "audit.json";
  RunResult audit = run_kobo(binary(), {"audit", "--data-dir", dir.string(), "--json", report.string()});
  ASSERT_EQ(audit.exit_code, 0) << audit.output;
  const json r = read_json(report);
  EXPECT_EQ(r["clean"], true) << r.dump(2);
  EXPECT_EQ(r["violationCount"], 0);
  EXPECT_EQ(r["views"]["checked"], true);
  EXPECT_EQ(r["views"]["caughtUp"], true) << "the server stopped with its views behind its log";
  EXPECT_GE(r["transactions"].get<int>(), 2 * (3 + 12 + 2 + 1));
  EXPECT_NE(audit.output.find("violations: none"), std::string::npos) << audit.output;

  const auto incremental = dump_db(dir / "views");
  const RunResult replay = run_kobo(binary(), {"replay", "--data-dir", dir.string()});
  ASSERT_EQ(replay.exit_code, 0) << replay.output;
  EXPECT_NE(replay.output.find("events/s"), std::string::npos) << replay.output;
  EXPECT_EQ(dump_db(dir / "views"), incremental);
  for (const auto& entry : fs::directory_iterator(dir))
    EXPECT_FALSE(entry.path().filename().string().starts_with("views.")) << entry.path() << " left behind";

  audit = run_kobo(binary(), {"audit", "--data-dir", dir.string()});
  EXPECT_EQ(audit.exit_code, 0) << audit.output;
}

TEST_F(AuditCommand, ReplayAndAuditRemoveTheViewCopiesOfKilledRunsOnly) {
  const fs::path dir = copy("leftovers");
  const pid_t dead = ::fork();  // a process that is gone by the time kobo looks
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);
  const auto leave = [&](const std::string& name) {
    fs::create_directories(dir / name);
    std::ofstream(dir / name / "000001.sst") << "as large as the views";
    return dir / name;
  };
  const fs::path rebuild_of_dead = leave("views.rebuild-" + std::to_string(dead));
  const fs::path audit_of_dead = leave("views.audit-" + std::to_string(dead));
  const fs::path running = leave("views.rebuild-" + std::to_string(::getpid()));  // this test runs

  const RunResult replay = run_kobo(binary(), {"replay", "--data-dir", dir.string()});
  ASSERT_EQ(replay.exit_code, 0) << replay.output;
  EXPECT_FALSE(fs::exists(rebuild_of_dead));
  EXPECT_FALSE(fs::exists(audit_of_dead));
  EXPECT_TRUE(fs::exists(running / "000001.sst")) << "the copy of a running process was removed";

  leave("views.audit-" + std::to_string(dead));
  const RunResult audit = run_kobo(binary(), {"audit", "--data-dir", dir.string()});
  EXPECT_EQ(audit.exit_code, 0) << audit.output;
  EXPECT_FALSE(fs::exists(audit_of_dead));
  EXPECT_TRUE(fs::exists(running));
}

// What the audit remembers of the past is in a scratch index on disk (audit/scratch_index.h), in a
// directory of its own under --scratch-dir, removed when it is done; one a killed audit left there
// goes with the next audit.
TEST_F(AuditCommand, KeepsItsScratchIndexUnderScratchDirAndRemovesIt) {
  const fs::path dir = copy("scratch");
  kobo::testing::ScratchDir scratch("audit-scratch", kobo::testing::ScratchDir::Keep::on_failure);
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);
  const fs::path left = scratch / ("kobo-audit-" + std::to_string(dead) + "-abcdef");
  fs::create_directories(left / "index");
  const RunResult audit =
      run_kobo(binary(), {"audit", "--data-dir", dir.string(), "--scratch-dir", scratch.str()});
  EXPECT_EQ(audit.exit_code, 0) << audit.output;
  EXPECT_TRUE(fs::is_empty(scratch.path())) << "the audit left its scratch index, or a killed audit's";
}

TEST_F(AuditCommand, RefusesADataDirThatARunningServerHolds) {
  const fs::path dir = copy("busy");
  KoboOptions options = kobo_options();
  options.data_dir = dir;
  options.credentials = server_->credentials();
  KoboProcess running(options);
  for (const std::string command : {"audit", "replay"}) {
    const RunResult r = run_kobo(binary(), {command, "--data-dir", dir.string()});
    EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.output;
    EXPECT_NE(r.output.find("stop `kobo serve`"), std::string::npos) << command << "\n" << r.output;
  }
  // `kobo events` reads beside the server instead (a secondary instance takes no lock).
  EXPECT_EQ(run_kobo(binary(), {"events", "--data-dir", dir.string()}).exit_code, 0);
  EXPECT_EQ(running.client().get("/healthz").status, 200u) << "the server must not notice";
  EXPECT_EQ(running.terminate(), 0);
  EXPECT_EQ(run_kobo(binary(), {"audit", "--data-dir", dir.string()}).exit_code, 0);
}

TEST_F(AuditCommand, CannotRunWithoutALog) {
  struct Row {
    std::vector<std::string> args;
    const char* says;
  };
  const fs::path missing = data_dir().string() + "-missing";
  for (const Row& row : std::vector<Row>{
           {{"audit", "--data-dir", missing.string()}, "no event log"},
           {{"replay", "--data-dir", missing.string()}, "no event log"},
           {{"audit"}, "--data-dir"},
           // Nothing listens on port 1: the Kafka log cannot be opened (after its connect timeout).
           {{"audit", "--kafka-brokers", "127.0.0.1:1"}, "kafka"},
           {{"replay"}, "--data-dir"},
       }) {
    const RunResult r = run_kobo(binary(), row.args);
    EXPECT_EQ(r.exit_code, 2) << row.args.front() << " " << row.says << "\n" << r.output;
    EXPECT_NE(r.output.find(row.says), std::string::npos) << r.output;
  }
  EXPECT_FALSE(fs::exists(missing)) << "an audit must not create a data dir";
}

// Sets the views' key layout marker (projection/view_keys.h: the key "V") as a kobo of another
// layout would have left the views (a newer one, before a rollback).
void set_views_layout(const fs::path& views, const std::string& layout) {
  rocksdb::DB* raw = nullptr;
  rocksdb::Options options;
  ASSERT_TRUE(rocksdb::DB::Open(options, views.string(), &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "V", layout).ok());
}

TEST_F(AuditCommand, ViewsOfAnotherKeyLayoutAreRebuiltByServeAndReplayAndNotComparedByAudit) {
  const fs::path dir = copy("layout");
  const auto served = dump_db(dir / "views");
  ASSERT_EQ(served.count("V"), 1u) << "views are written with their key layout";
  const std::string other = served.at("V") + "0";

  // Replay replaces views of a layout it does not read, and gives the same views as serving did.
  set_views_layout(dir / "views", other);
  RunResult replay = run_kobo(binary(), {"replay", "--data-dir", dir.string()});
  ASSERT_EQ(replay.exit_code, 0) << replay.output;
  EXPECT_EQ(dump_db(dir / "views"), served);

  // Audit checks the log and says why it leaves such views alone.
  set_views_layout(dir / "views", other);
  const fs::path report = dir / "audit.json";
  const RunResult audit =
      run_kobo(binary(), {"audit", "--data-dir", dir.string(), "--json", report.string()});
  ASSERT_EQ(audit.exit_code, 0) << audit.output;
  const json r = read_json(report);
  EXPECT_EQ(r["views"]["checked"], false) << r.dump(2);
  EXPECT_NE(r.dump().find("key layout " + other), std::string::npos) << r.dump(2);
  EXPECT_NE(audit.output.find("kobo replay"), std::string::npos) << audit.output;

  // Serve rebuilds them before it answers: every wallet shows the balance it had.
  KoboOptions options = kobo_options();
  options.data_dir = dir;
  options.credentials = server_->credentials();
  KoboProcess server(options);
  int wallets = 0;
  for (const auto& [key, value] : served) {
    if (!key.starts_with("W")) continue;
    const auto opening = decode_fact(value);
    ASSERT_TRUE(opening.ok()) << key;
    if (opening.value().live || opening.value().type() != EventType::wallet_opened) continue;
    const std::string id = std::get<WalletOpened>(opening.value().data).wallet.value;
    const auto row = rows::decode_wallet(served.at(view_keys::wallet_row(id)));
    ASSERT_TRUE(row.ok()) << key;
    const HttpResult res = server.client().get("/v1/virtual-accounts/" + id, server.test_key());
    ASSERT_EQ(res.status, 200u) << id;
    EXPECT_EQ(res.json["data"]["balance"], row.value().balance.value) << id;
    ++wallets;
  }
  EXPECT_GE(wallets, 6);
  ASSERT_EQ(server.terminate(), 0);
  const RunResult after =
      run_kobo(binary(), {"audit", "--data-dir", dir.string(), "--json", report.string()});
  EXPECT_EQ(after.exit_code, 0) << after.output;
  EXPECT_EQ(read_json(report)["views"]["checked"], true) << after.output;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST_F(AuditCommand, EventsPrintsEveryRecordAsStoredInPartitionAndLogOrder) {
  const fs::path dir = copy("events");
  std::vector<std::vector<std::string>> stored;
  {
    kobo::testing::LogSurgery log(dir / "log");
    for (std::uint32_t p = 0; p < log.partitions(); ++p) stored.push_back(log.records(p));
  }
  ASSERT_GE(stored.size(), 2u);
  std::vector<std::string> all;
  for (const auto& records : stored) all.insert(all.end(), records.begin(), records.end());
  ASSERT_GT(all.size(), 30u);

  const RunResult r = run_kobo(binary(), {"events", "--data-dir", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(lines_of(r.output), all)
      << "kobo events must print each record as stored, partition by partition";

  const RunResult one = run_kobo(binary(), {"events", "--data-dir", dir.string(), "--partition", "1"});
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_EQ(lines_of(one.output), stored[1]);

  const std::string past_the_end = std::to_string(stored.size());
  const RunResult bad =
      run_kobo(binary(), {"events", "--data-dir", dir.string(), "--partition", past_the_end});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("the log has partitions 0 to " + std::to_string(stored.size() - 1)),
            std::string::npos)
      << bad.output;

  const fs::path missing = data_dir().string() + "-events-missing";
  const RunResult none = run_kobo(binary(), {"events", "--data-dir", missing.string()});
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_FALSE(fs::exists(missing)) << "kobo events must not create a data dir";
}

TEST_F(AuditCommand, TamperedCopiesExitOneAndNameThePartitionAndSeq) {
  struct Row {
    Tamper tamper;
    std::int64_t seq_offset;  // the seq named, relative to the tampered debit's
    const char* check;
  };
  for (const Row& row : std::vector<Row>{{Tamper::edit_amount, 0, "chain"},
                                         {Tamper::edit_amount_resealed, 0, "double_entry"},
                                         {Tamper::drop, 0, "chain"},
                                         {Tamper::swap, 0, "chain"},
                                         {Tamper::insert, 0, "double_entry"}}) {
    const fs::path dir = copy(kobo::testing::to_string(row.tamper));
    kobo::testing::RecordAt at;
    {
      kobo::testing::LogSurgery log(dir / "log");
      at = kobo::testing::tamper(log, row.tamper);
    }
    const fs::path report = dir / "audit.json";
    const RunResult r = run_kobo(binary(), {"audit", "--data-dir", dir.string(), "--json", report.string()});
    EXPECT_EQ(r.exit_code, 1) << kobo::testing::to_string(row.tamper) << "\n" << r.output;
    const json j = read_json(report);
    bool named = false;
    for (const json& v : j["violations"])
      named = named || (v["check"] == row.check && v["partition"] == at.partition &&
                        v["seq"] == static_cast<std::int64_t>(at.seq) + row.seq_offset);
    EXPECT_TRUE(named) << kobo::testing::to_string(row.tamper) << ": partition " << at.partition << " seq "
                       << at.seq << "\n"
                       << r.output;
    EXPECT_EQ(j["views"]["checked"], false) << "views are not compared with a log that has violations";
  }
}

// `kobo serve --writer-key-file` signs the log and `kobo audit --verify-key` (a PEM public key
// file) checks it: clean as served; an event appended without the key is named once its tail is
// older than allowed; a cut tail is named against the earlier report (--verified-before).
TEST(SignedLogCommand, ServeSignsAndAuditVerifiesAndNamesAForgery) {
  kobo::testing::ScratchDir keys("signed-log-keys", kobo::testing::ScratchDir::Keep::on_failure);
  const std::string pem = new_ed25519_private_key_pem();
  std::ofstream(keys / "writer.pem") << pem;
  std::ofstream(keys / "writer.pub") << public_key_of_pem(pem).value() << "\n";
  fs::path served;
  std::unique_ptr<KoboProcess> server = std::make_unique<KoboProcess>(kobo_options(
      {"--rail-delay-ms", "20", "--writer-key-file", keys.str("writer.pem"), "--checkpoint-events", "5"}));
  traffic(*server, "signed");
  ASSERT_EQ(server->terminate(), 0);
  served = server->data_dir();

  const fs::path report = keys / "audit.json";
  RunResult clean = run_kobo(binary(), {"audit", "--data-dir", served.string(), "--verify-key",
                                        keys.str("writer.pub"), "--json", report.string()});
  ASSERT_EQ(clean.exit_code, 0) << clean.output;
  EXPECT_NE(clean.output.find("checkpoints verified with the writer key"), std::string::npos) << clean.output;
  std::ifstream in(report);
  const json j = json::parse(in, nullptr, false);
  EXPECT_EQ(j["signatures"]["checked"], true);
  EXPECT_GT(j["signatures"]["checkpointsVerified"].get<int>(), 0);

  // A forged event appended to the partition with the most events, chained to its last one.
  kobo::testing::ScratchDir copy_dir("signed-log-forged", kobo::testing::ScratchDir::Keep::on_failure);
  const fs::path forged = copy_dir / "data";
  kobo::testing::copy_data_dir(served, forged);
  std::uint32_t partition = 0;
  std::uint64_t seq = 0;
  {
    kobo::testing::LogSurgery log(forged / "log");
    for (std::uint32_t p = 0; p < log.partitions(); ++p)
      if (log.records(p).size() > log.records(partition).size()) partition = p;
    auto records = log.records(partition);
    auto last = decode_event(records.back());
    ASSERT_TRUE(last.ok());
    Event e;
    e.partition = last->partition;
    e.seq = Seq(last->seq.value + 1);
    e.command_seq = e.seq;
    e.epoch = last->epoch;
    e.time = last->time + 1;
    e.data = WebhookDeliveriesEnded{{WebhookDeliveryEnded{"whd-forged", true}}};
    e.prev_hash = last->hash;
    seq = e.seq.value;
    records.push_back(seal(e));
    log.rewrite(partition, records);
  }
  const fs::path forged_report = copy_dir / "forged.json";
  const RunResult r =
      run_kobo(binary(), {"audit", "--data-dir", forged.string(), "--verify-key", keys.str("writer.pub"),
                          "--unsigned-max-age-s", "0", "--json", forged_report.string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  std::ifstream fin(forged_report);
  const json f = json::parse(fin, nullptr, false);
  bool named = false;
  for (const json& v : f["violations"])
    named = named || (v["check"] == "signature" && v["partition"] == partition && v["seq"] == seq);
  EXPECT_TRUE(named) << r.output;

  // The same log cut back to before its forged event and its last checkpoint: the earlier report
  // names what is gone.
  {
    kobo::testing::LogSurgery log(forged / "log");
    auto records = log.records(partition);
    records.resize(records.size() - 2);
    log.rewrite(partition, records);
  }
  const RunResult cut = run_kobo(binary(), {"audit", "--data-dir", forged.string(), "--verify-key",
                                            keys.str("writer.pub"), "--verified-before", report.string()});
  EXPECT_EQ(cut.exit_code, 1) << cut.output;
  EXPECT_NE(cut.output.find("its tail was cut"), std::string::npos) << cut.output;
}

}  // namespace
}  // namespace kobo::it
