// A read of the views that fails is an operating error, never an abort (guarantee 8,
// docs/architecture.md): the views answer a Result, the API answers 503 `Service unavailable`
// in the standard error envelope without the cause, reads answer again once the disk reads
// again, and the projector stops (healthy() false, /readyz not ready) rather than ending the
// process, also when an exception reaches its thread.
//
// The reads fail under the views' real RocksDB: a file system whose table files fail every read
// while told to, with the block cache emptied so that reads reach the files. The caller's key is
// written again into the memtable, which no file read serves, so that a request gets past
// authentication and fails where its route reads the views.

#include <gtest/gtest.h>
#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <stdexcept>
#include <thread>

#include "command/ledger.h"
#include "common/crypto.h"
#include "events/memory_log.h"
#include "projection/projector.h"
#include "projection/view_keys.h"
#include "projection/views.h"
#include "query-api/api.h"
#include "query-api/credentials.h"
#include "query-api/envelope.h"
#include "query-api/router.h"
#include "tests/support/node.h"
#include "tests/support/scratch_dir.h"

namespace kobo {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr std::uint32_t kPartitions = 2;

// Table files (*.sst) that fail every read while fail(true) holds.
class FailingReads final : public rocksdb::FileSystemWrapper {
 public:
  FailingReads() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  static const char* kClassName() { return "KoboFailingReads"; }
  const char* Name() const override { return kClassName(); }

  void fail(bool on) { failing_ = on; }
  std::uint64_t failed() const { return failed_.load(); }

  rocksdb::IOStatus check(const std::string& file) {
    if (!failing_.load()) return rocksdb::IOStatus::OK();
    ++failed_;
    return rocksdb::IOStatus::IOError("read " + file, "Input/output error");
  }

  rocksdb::IOStatus NewRandomAccessFile(const std::string& f, const rocksdb::FileOptions& o,
                                        std::unique_ptr<rocksdb::FSRandomAccessFile>* r,
                                        rocksdb::IODebugContext* dbg) override;

 private:
  std::atomic<bool> failing_{false};
  std::atomic<std::uint64_t> failed_{0};
};

class FailingFile final : public rocksdb::FSRandomAccessFileOwnerWrapper {
 public:
  FailingFile(std::unique_ptr<rocksdb::FSRandomAccessFile> file, FailingReads& fs, std::string name)
      : FSRandomAccessFileOwnerWrapper(std::move(file)), fs_(fs), name_(std::move(name)) {}

  rocksdb::IOStatus Read(std::uint64_t offset, std::size_t n, const rocksdb::IOOptions& o,
                         rocksdb::Slice* result, char* scratch, rocksdb::IODebugContext* dbg) const override {
    if (auto s = fs_.check(name_); !s.ok()) return s;
    return FSRandomAccessFileOwnerWrapper::Read(offset, n, o, result, scratch, dbg);
  }
  rocksdb::IOStatus MultiRead(rocksdb::FSReadRequest* reqs, std::size_t num_reqs, const rocksdb::IOOptions& o,
                              rocksdb::IODebugContext* dbg) override {
    if (auto s = fs_.check(name_); !s.ok()) {
      for (std::size_t i = 0; i < num_reqs; ++i) reqs[i].status = s;
      return s;
    }
    return FSRandomAccessFileOwnerWrapper::MultiRead(reqs, num_reqs, o, dbg);
  }

 private:
  FailingReads& fs_;
  const std::string name_;
};

rocksdb::IOStatus FailingReads::NewRandomAccessFile(const std::string& f, const rocksdb::FileOptions& o,
                                                    std::unique_ptr<rocksdb::FSRandomAccessFile>* r,
                                                    rocksdb::IODebugContext* dbg) {
  auto s = FileSystemWrapper::NewRandomAccessFile(f, o, r, dbg);
  if (!s.ok() || !f.ends_with(".sst")) return s;
  *r = std::make_unique<FailingFile>(std::move(*r), *this, f);
  return s;
}

// An EventLog whose readers throw from poll() once told to: an exception on the thread that
// reads the log, as a bug or a failed allocation would raise.
class ThrowingLog final : public EventLog {
 public:
  explicit ThrowingLog(std::uint32_t partitions) : log_(partitions) {}
  void throw_from_polls() { throwing_ = true; }

  std::uint32_t partitions() const override { return log_.partitions(); }
  Status append(std::span<const EncodedEvent> batch) override { return log_.append(batch); }
  Result<std::vector<Offset>> end_offsets() override { return log_.end_offsets(); }
  Result<std::unique_ptr<LogReader>> open_reader(std::vector<Offset> start) override {
    auto reader = log_.open_reader(std::move(start));
    if (!reader) return reader.status();
    return std::unique_ptr<LogReader>(std::make_unique<Reader>(std::move(reader).value(), throwing_));
  }

 private:
  class Reader final : public LogReader {
   public:
    Reader(std::unique_ptr<LogReader> reader, const std::atomic<bool>& throwing)
        : reader_(std::move(reader)), throwing_(throwing) {}
    Status poll(std::size_t max_records, std::chrono::milliseconds timeout,
                std::vector<LogRecord>& out) override {
      if (throwing_.load()) throw std::runtime_error("a poll that threw");
      return reader_->poll(max_records, timeout, out);
    }
    Offset position(Partition p) const override { return reader_->position(p); }

   private:
    std::unique_ptr<LogReader> reader_;
    const std::atomic<bool>& throwing_;
  };

  MemoryLog log_;
  std::atomic<bool> throwing_{false};
};

// Every read misses the block cache, so that it reads the files.
void drop_block_cache(rocksdb::DB& db) {
  const rocksdb::Options options = db.GetOptions();
  auto* table = options.table_factory->GetOptions<rocksdb::BlockBasedTableOptions>();
  ASSERT_NE(table, nullptr);
  ASSERT_NE(table->block_cache, nullptr);
  table->block_cache->SetCapacity(0);
}

// A business with its key and a wallet funded by a credit, in the views' files, behind the API
// as `kobo serve` has it; the key also in the memtable (key_in_memtable()).
class ViewsReadErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    const Status started = node_.start();
    ASSERT_TRUE(started.ok()) << started.message();
    ledger_ = &node_.ledger();
    views_ = &node_.views();
    projector_ = &node_.projector();

    creds_ = new_credentials();
    ASSERT_TRUE(ledger_->execute(create_business_command(creds_, "Read errors", nullptr).value()).ok());
    const Caller caller{creds_.business_id, creds_.account_id, false};
    const Outcome w = ledger_->execute(CreateWallet{caller, "Ada", "secondary", {}, {}});
    ASSERT_TRUE(w.ok()) << to_string(w.rejection);
    wallet_ = w.id;
    account_number_ = std::get<WalletOpened>(w.events.at(0).data).account_number;
    const Outcome credit = ledger_->execute(IncomingCredit{caller, account_number_, Kobo(1'000'000), "f", "S",
                                                           "0000014579", "058", "GTB", "000013"});
    ASSERT_TRUE(credit.ok()) << to_string(credit.rejection);
    credit_ = credit.id;
    ASSERT_NO_FATAL_FAILURE(caught_up());
    ASSERT_TRUE(views_->flush().ok());
    // A projector started afresh holds no rows it wrote (projection/apply.h), as after a start:
    // the next event it applies reads the wallet's row from the views' files.
    const Status restarted = node_.restart_projector();
    ASSERT_TRUE(restarted.ok()) << restarted.message();
    projector_ = &node_.projector();
    ASSERT_NO_FATAL_FAILURE(key_in_memtable());
    ASSERT_NO_FATAL_FAILURE(drop_block_cache(views_->db()));

    ApiOptions ao;
    ao.read_barrier_timeout = 2s;
    api_ = std::make_unique<Api>(*ledger_, *views_, *projector_, ao);
    api_->add_routes(router_);
  }
  void TearDown() override { api_.reset(); }

  // The caller's key record written again, unchanged: a read of it is served by the memtable.
  void key_in_memtable() {
    const std::string key = view_keys::key_owner(sha256_hex(creds_.test_secret_key));
    const auto record = views_->read(key);
    ASSERT_TRUE(record.ok() && record.value().has_value());
    const ViewChange change{key, *record.value()};
    ASSERT_TRUE(views_->write(std::span(&change, 1)).ok());
  }

  void caught_up() { ASSERT_TRUE(node_.caught_up(5s)); }

  http::Response call(boost::beast::http::verb method, const std::string& path,
                      const std::string& body = "") {
    http::Request req;
    req.method = method;
    req.path = path;
    req.body = body;
    req.headers.set("x-service-key", creds_.test_secret_key);
    auto answered = std::make_shared<std::promise<http::Response>>();
    auto answer = answered->get_future();
    router_.dispatch(std::move(req),
                     [answered](http::Response r) { answered->set_value(http::rendered(std::move(r))); });
    if (answer.wait_for(10s) != std::future_status::ready) {
      ADD_FAILURE() << path << " was not answered";
      return http::Response{0, "", "", {}};
    }
    return answer.get();
  }
  http::Response get(const std::string& path) { return call(boost::beast::http::verb::get, path); }

  static void expect_unavailable(const http::Response& r, const std::string& what) {
    EXPECT_EQ(r.status, 503u) << what << ": " << r.body;
    EXPECT_EQ(r.body, http::error(503, "Service unavailable").body) << what;
    EXPECT_EQ(r.body.find("Input/output"), std::string::npos) << what << " shows the cause";
  }

  testing::ScratchDir dir_;
  std::shared_ptr<FailingReads> faulty_ = std::make_shared<FailingReads>();
  std::unique_ptr<rocksdb::Env> env_ = rocksdb::NewCompositeEnv(faulty_);
  // The node in process (tests/support/node.h): a writer on a log in memory, and the views on the
  // failing file system with the projector following the log into them.
  testing::Node node_{dir_.path(), {.partitions = kPartitions, .views_env = env_.get()}};
  Ledger* ledger_ = nullptr;
  Views* views_ = nullptr;
  Projector* projector_ = nullptr;
  std::unique_ptr<Api> api_;
  http::Router router_;
  Credentials creds_;
  std::string wallet_, account_number_, credit_;
};

TEST_F(ViewsReadErrors, AreResultsOfTheReadsNeverAnAbort) {
  const Scope scope{creds_.business_id, false};
  faulty_->fail(true);
  const auto wallet = views_->wallet_text(scope, wallet_);
  ASSERT_FALSE(wallet.ok());
  EXPECT_NE(wallet.status().message().find("Input/output error"), std::string::npos)
      << wallet.status().message();
  EXPECT_FALSE(views_->wallets(scope, {}, PageRequest{}).ok());
  EXPECT_FALSE(views_->transaction_text(scope, creds_.account_id, credit_).ok());
  EXPECT_FALSE(views_->transactions(scope, {}, PageRequest{}).ok());
  EXPECT_FALSE(views_->wallet_by_account_number(account_number_).ok());
  EXPECT_GT(faulty_->failed(), 0u) << "the reads met the fault";

  faulty_->fail(false);
  const auto again = views_->wallet_text(scope, wallet_);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_TRUE(again.value().has_value());
}

TEST_F(ViewsReadErrors, ReadsAnswer503WithTheErrorEnvelopeAndNoCauseThenServeAgain) {
  const std::string validate =
      R"({"accountNumber":")" + account_number_ + R"(","bankCode":")" + ledger_->config().bank_code + R"("})";
  const auto each = [&](const std::function<void(const http::Response&, const std::string&)>& check) {
    for (const std::string& path : {"/v1/virtual-accounts/" + wallet_, std::string("/v1/virtual-accounts"),
                                    "/v1/transactions/" + credit_, std::string("/v1/transactions")})
      check(get(path), "GET " + path);
    check(call(boost::beast::http::verb::post, "/v1/transactions/validate-account", validate),
          "POST validate-account");
  };

  faulty_->fail(true);
  each([](const http::Response& r, const std::string& what) { expect_unavailable(r, what); });
  EXPECT_GT(faulty_->failed(), 0u) << "the reads met the fault";

  faulty_->fail(false);
  each([](const http::Response& r, const std::string& what) {
    EXPECT_TRUE(r.status == 200 || r.status == 201) << what << ": " << r.status << " " << r.body;
  });
}

TEST_F(ViewsReadErrors, AKeyThatCannotBeReadIs503NotUnauthorized) {
  ASSERT_TRUE(views_->flush().ok()) << "the key's record leaves the memtable for a file";
  faulty_->fail(true);
  expect_unavailable(get("/v1/virtual-accounts"), "GET /v1/virtual-accounts");
  EXPECT_GT(faulty_->failed(), 0u) << "the read met the fault";
}

// The answer to a write is rendered from its committed event, not read from the views: the
// payout is acknowledged though the views cannot be read. The projector, which reads the source
// wallet's row to apply the event, meets the fault and stops saying why; a read of the payout
// is then 503, not a record the views do not have. Once the disk reads again, the projection
// starts again from the views' positions by itself, and the payout is there.
TEST_F(ViewsReadErrors, AWriteIsAnsweredFromItsEventWhileTheProjectionStopsSayingWhyThenGoesOn) {
  faulty_->fail(true);
  const std::string payout = R"({"source":")" + wallet_ +
                             R"(","accountNumber":"0000014579","bankCode":"011","amount":10000,)"
                             R"("currency":"NGN","narration":"rent"})";
  const http::Response answer =
      call(boost::beast::http::verb::post, "/v1/transactions/bank-transfer", payout);
  ASSERT_EQ(answer.status, 200u) << answer.body;
  const std::string id = nlohmann::json::parse(answer.body).at("data").at("publicId").get<std::string>();

  for (int i = 0; i < 500 && projector_->healthy(); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(projector_->healthy());
  EXPECT_NE(projector_->fault().find("Input/output error"), std::string::npos) << projector_->fault();
  // Not ready, and nothing more on the public answer: the node's log says why.
  const http::Response ready = get("/readyz");
  EXPECT_EQ(ready.status, 503u);
  EXPECT_EQ(ready.body, R"({"status":"not ready"})");
  expect_unavailable(get("/v1/transactions/" + id), "GET the payout");

  faulty_->fail(false);
  for (int i = 0; i < 500 && !projector_->healthy(); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(projector_->healthy()) << projector_->fault();
  EXPECT_EQ(projector_->fault(), "");
  const http::Response read = get("/v1/transactions/" + id);
  EXPECT_EQ(read.status, 200u) << read.body;
  EXPECT_EQ(get("/readyz").status, 200u);
  // What the failed step had applied was dropped, not applied a second time: the wallet is
  // debited once, and the payout is counted once beside the credit.
  const auto data = [](const http::Response& r) { return nlohmann::json::parse(r.body); };
  EXPECT_EQ(data(get("/v1/virtual-accounts/" + wallet_)).at("data").at("balance"),
            nlohmann::json::parse(answer.body).at("data").at("balance"));
  EXPECT_EQ(data(get("/v1/transactions")).at("meta").at("pagination").at("totalCount"), 2);
}

// Views that lack a row the log's earlier events wrote (damaged, or not this log's): the next
// event that changes the row stops the projection, saying which row, and the process goes on
// (not ready) instead of ending at an assertion.
TEST_F(ViewsReadErrors, ARowTheViewsShouldHaveAndDoNotStopsTheProjectionNotTheProcess) {
  ASSERT_TRUE(views_->db().Delete(rocksdb::WriteOptions(), view_keys::wallet_row(wallet_)).ok());
  const Caller caller{creds_.business_id, creds_.account_id, false};
  const Outcome credit = ledger_->execute(
      IncomingCredit{caller, account_number_, Kobo(500), "g", "S", "0000014579", "058", "GTB", "000014"});
  ASSERT_TRUE(credit.ok()) << to_string(credit.rejection);

  for (int i = 0; i < 500 && projector_->healthy(); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(projector_->healthy());
  EXPECT_NE(projector_->fault().find("the views miss a row: posting to a wallet the views do not have"),
            std::string::npos)
      << projector_->fault();
  EXPECT_EQ(get("/readyz").status, 503u);
}

TEST(ProjectorThread, AnExceptionStopsTheProjectionAndSaysWhyInsteadOfEndingTheProcess) {
  const testing::ScratchDir dir;
  ThrowingLog log(kPartitions);
  auto views = Views::open(dir.str("views"), kPartitions);
  ASSERT_TRUE(views.ok()) << views.status().message();
  {
    Projector projector(log, *views.value());
    ASSERT_TRUE(projector.start().ok());
    EXPECT_TRUE(projector.healthy());
    log.throw_from_polls();
    for (int i = 0; i < 500 && projector.healthy(); ++i) std::this_thread::sleep_for(10ms);
    EXPECT_FALSE(projector.healthy());
    EXPECT_EQ(projector.fault(), "the projection stopped: a poll that threw");
    EXPECT_FALSE(projector.wait_applied(Partition(0), Seq(1), 1s)) << "waiters are answered at once";
  }
  views.value().reset();
}

}  // namespace
}  // namespace kobo
