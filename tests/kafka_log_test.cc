// The Kafka EventLog beyond the shared contract (event_log_contract_test.cc runs that too):
// - against the real test broker (KOBO_TEST_KAFKA_DIR): transactional.id fencing of a second
//   writer, read_committed hiding aborted and open transactions, and the record layout
//   analysts consume (key, CloudEvents headers, JSON value);
// - against librdkafka's mock cluster, for faults a real broker cannot produce on cue:
//   abortable errors retried, a broker down answered promptly, a fenced writer stopped.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>

#include "events/kafka_log.h"
#include "tests/support/kobo_process.h"
#include "tests/support/test_kafka.h"

namespace kobo {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Kafka protocol API keys (rdkafka_mock.h takes them as plain numbers).
constexpr std::int16_t kAddPartitionsToTxn = 24;
constexpr std::int16_t kEndTxn = 26;

EncodedEvent ev(std::uint32_t p, std::uint64_t seq, std::string bytes, std::string business = "biz-1") {
  return EncodedEvent{Partition(p),        Seq(seq),          EventType::wallet_transfer_settled,
                      std::move(business), 1'795'000'000'000, std::move(bytes)};
}

std::string unique_topic(const std::string& what) {
  return "kafka-log-test." + what + "." + std::to_string(::getpid()) + "." +
         std::to_string(Clock::now().time_since_epoch().count());
}

KafkaLogOptions broker_options(const std::string& topic, int partitions = 2) {
  KafkaLogOptions o;
  o.brokers = testing::test_kafka_brokers();
  o.topic = topic;
  o.partitions = static_cast<std::uint32_t>(partitions);
  o.config = testing::test_kafka_config();        // a secured broker: SASL over TLS
  testing::ensure_test_topic(topic, partitions);  // which denies CreateTopics
  return o;
}

// A raw client's configuration: the test broker, and its security settings when it has some.
rd_kafka_conf_t* raw_conf() {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  auto set = [&](const std::string& k, const std::string& v) {
    EXPECT_EQ(rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err), RD_KAFKA_CONF_OK)
        << k << ": " << err;
  };
  set("bootstrap.servers", testing::test_kafka_brokers());
  for (const auto& [k, v] : testing::test_kafka_config()) set(k, v);
  return conf;
}

std::unique_ptr<EventLog> open_or_fail(const KafkaLogOptions& o) {
  auto log = open_kafka_log(o);
  EXPECT_TRUE(log.ok()) << log.status().message();
  return log.ok() ? std::move(log).value() : nullptr;
}

// What a read_committed reader sees, as values by partition: read until `expected` records
// came (or 10 s passed), then a little longer, so that a record that should not be there shows.
std::map<std::uint32_t, std::vector<std::string>> read_committed(EventLog& log, std::size_t expected) {
  auto reader = log.open_reader(std::vector<Offset>(log.partitions(), Offset(0)));
  EXPECT_TRUE(reader.ok());
  std::vector<LogRecord> recs;
  for (int i = 0; i < 100 && recs.size() < expected; ++i)
    EXPECT_TRUE(reader.value()->poll(1000, 100ms, recs).ok());
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(reader.value()->poll(1000, 100ms, recs).ok());
  std::map<std::uint32_t, std::vector<std::string>> out;
  for (const auto& r : recs) out[r.partition.value].push_back(r.bytes);
  return out;
}

// ---- the real broker -----------------------------------------------------------------------

TEST(KafkaLogOnBroker, ASecondWriterFencesTheFirst) {
  const auto o = broker_options(unique_topic("fence"));
  auto first = open_or_fail(o);
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(first->append(std::vector<EncodedEvent>{ev(0, 1, "first-1")}).ok());

  auto second = open_or_fail(o);  // same transactional.ids: init_transactions fences `first`
  ASSERT_NE(second, nullptr);
  const Status late = first->append(std::vector<EncodedEvent>{ev(0, 2, "zombie")});
  EXPECT_FALSE(late.ok());
  EXPECT_TRUE(first->fenced());
  EXPECT_FALSE(first->reset_writer().ok()) << "a fenced writer must never write again";
  EXPECT_FALSE(first->append(std::vector<EncodedEvent>{ev(0, 2, "zombie-again")}).ok());

  ASSERT_TRUE(second->append(std::vector<EncodedEvent>{ev(0, 2, "second-2")}).ok());
  EXPECT_FALSE(second->fenced());
  const auto seen = read_committed(*second, 2);
  EXPECT_EQ(seen.at(0), (std::vector<std::string>{"first-1", "second-2"}));
}

// A raw transactional producer, to leave transactions open or aborted behind the log's back.
struct RawProducer {
  explicit RawProducer(const std::string& id) {
    rd_kafka_conf_t* conf = raw_conf();
    char err[512];
    EXPECT_EQ(rd_kafka_conf_set(conf, "transactional.id", id.c_str(), err, sizeof err), RD_KAFKA_CONF_OK);
    rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    EXPECT_NE(rk, nullptr) << err;
    rd_kafka_error_t* e = rd_kafka_init_transactions(rk, 30'000);
    EXPECT_EQ(e, nullptr) << (e ? rd_kafka_error_string(e) : "");
    EXPECT_EQ(rd_kafka_begin_transaction(rk), nullptr);
  }
  ~RawProducer() { rd_kafka_destroy(rk); }
  void produce(const std::string& topic, std::int32_t p, const std::string& value) {
    EXPECT_EQ(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(p),
                                RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
              RD_KAFKA_RESP_ERR_NO_ERROR);
    EXPECT_EQ(rd_kafka_flush(rk, 10'000), RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  rd_kafka_t* rk = nullptr;
};

TEST(KafkaLogOnBroker, ReadersSeeNeitherAbortedNorOpenTransactions) {
  const auto o = broker_options(unique_topic("isolation"));
  auto log = open_or_fail(o);
  ASSERT_NE(log, nullptr);
  ASSERT_TRUE(log->append(std::vector<EncodedEvent>{ev(1, 1, "before")}).ok());
  {
    RawProducer aborted("kobo.isolation-aborted-" + o.topic);  // kobo.*: the secured broker's ACLs
    aborted.produce(o.topic, 1, "aborted");
    ASSERT_EQ(rd_kafka_abort_transaction(aborted.rk, 10'000), nullptr);
  }
  ASSERT_TRUE(log->append(std::vector<EncodedEvent>{ev(1, 2, "after")}).ok());
  RawProducer open("kobo.isolation-open-" + o.topic);
  open.produce(o.topic, 0, "uncommitted");

  const auto seen = read_committed(*log, 2);
  auto ends = log->end_offsets();
  ASSERT_TRUE(ends.ok());
  EXPECT_EQ(ends.value()[0], Offset(0)) << "the end is the last stable offset, before the open transaction";
  EXPECT_EQ(seen.count(0), 0u);
  EXPECT_EQ(seen.at(1), (std::vector<std::string>{"before", "after"}));
}

TEST(KafkaLogOnBroker, RecordsCarryTheBusinessKeyAndCloudEventsHeaders) {
  const auto o = broker_options(unique_topic("layout"));
  auto log = open_or_fail(o);
  ASSERT_NE(log, nullptr);
  EncodedEvent e = ev(1, 7, R"({"type":"Credited"})", "biz-42");
  ASSERT_TRUE(log->append(std::vector<EncodedEvent>{e}).ok());

  rd_kafka_conf_t* conf = raw_conf();
  char err[512];
  // Never joined; named within the secured broker's ACLs.
  ASSERT_EQ(rd_kafka_conf_set(conf, "group.id", "kobo.layout-check", err, sizeof err), RD_KAFKA_CONF_OK);
  ASSERT_EQ(rd_kafka_conf_set(conf, "isolation.level", "read_committed", err, sizeof err), RD_KAFKA_CONF_OK);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  ASSERT_NE(rk, nullptr) << err;
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(list, o.topic.c_str(), 1)->offset = 0;
  ASSERT_EQ(rd_kafka_assign(rk, list), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_topic_partition_list_destroy(list);
  rd_kafka_message_t* m = nullptr;
  for (int i = 0; i < 100 && m == nullptr; ++i) {
    m = rd_kafka_consumer_poll(rk, 100);
    if (m != nullptr && m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_message_destroy(m);
      m = nullptr;
    }
  }
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(std::string(static_cast<const char*>(m->key), m->key_len), "biz-42");
  EXPECT_EQ(std::string(static_cast<const char*>(m->payload), m->len), R"({"type":"Credited"})");
  rd_kafka_headers_t* headers = nullptr;
  ASSERT_EQ(rd_kafka_message_headers(m, &headers), RD_KAFKA_RESP_ERR_NO_ERROR);
  auto header = [&](const char* name) {
    const void* v = nullptr;
    std::size_t size = 0;
    if (rd_kafka_header_get_last(headers, name, &v, &size) != RD_KAFKA_RESP_ERR_NO_ERROR)
      return std::string("(missing)");
    return std::string(static_cast<const char*>(v), size);
  };
  EXPECT_EQ(header("ce_specversion"), "1.0");
  EXPECT_EQ(header("ce_id"), "1-7");
  EXPECT_EQ(header("ce_type"), "ng.kobo.ledger.WalletTransferSettled");
  EXPECT_EQ(header("ce_source"), "/kobo/ledger/partitions/1");
  EXPECT_EQ(header("ce_time"), format_iso8601(e.time));
  EXPECT_EQ(header("content-type"), "application/json");
  rd_kafka_message_destroy(m);
  rd_kafka_destroy(rk);
}

TEST(KafkaLogOnBroker, AnExistingTopicKeepsItsPartitionCount) {
  auto o = broker_options(unique_topic("partitions"), 3);
  ASSERT_NE(open_or_fail(o), nullptr);
  o.partitions = 5;
  o.writer = false;
  auto again = open_or_fail(o);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->partitions(), 3u);
  EXPECT_FALSE(again->append(std::vector<EncodedEvent>{ev(0, 1, "read-only")}).ok());
}

// ---- librdkafka's mock cluster -----------------------------------------------------------------

class KafkaLogOnMock : public ::testing::Test {
 protected:
  void SetUp() override {
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    char err[512];
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    ASSERT_NE(rk_, nullptr) << err;
    mock_ = rd_kafka_mock_cluster_new(rk_, 1);
    ASSERT_NE(mock_, nullptr);
    ASSERT_EQ(rd_kafka_mock_topic_create(mock_, "mocked", 2, 1), RD_KAFKA_RESP_ERR_NO_ERROR);
    options_.brokers = rd_kafka_mock_cluster_bootstraps(mock_);
    options_.topic = "mocked";
    options_.partitions = 2;
    options_.create_topic = false;  // the mock cluster has no CreateTopics
    options_.append_timeout = 2'000ms;
    options_.connect_timeout = 5'000ms;
  }
  void TearDown() override {
    log_.reset();
    if (mock_ != nullptr) rd_kafka_mock_cluster_destroy(mock_);
    if (rk_ != nullptr) rd_kafka_destroy(rk_);
  }
  void open() {
    log_ = open_or_fail(options_);
    ASSERT_NE(log_, nullptr);
  }

  rd_kafka_t* rk_ = nullptr;
  rd_kafka_mock_cluster_t* mock_ = nullptr;
  KafkaLogOptions options_;
  std::unique_ptr<EventLog> log_;
};

TEST_F(KafkaLogOnMock, AppendsAndReadsBack) {
  open();
  ASSERT_TRUE(log_->append(std::vector<EncodedEvent>{ev(0, 1, "a"), ev(1, 1, "b")}).ok());
  auto ends = log_->end_offsets();
  ASSERT_TRUE(ends.ok());
  EXPECT_GE(ends.value()[0], Offset(1));
}

TEST_F(KafkaLogOnMock, AnAbortableProduceErrorAbortsAndRetriesTheTransaction) {
  open();
  // The broker refuses to add the partition to the transaction: it must be aborted. (A refused
  // Produce would do too on a real broker, but the mock cluster then trips over the skipped
  // sequence numbers, which real brokers handle with an epoch bump.)
  rd_kafka_mock_push_request_errors(mock_, kAddPartitionsToTxn, 1,
                                    RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
  const Status s = log_->append(std::vector<EncodedEvent>{ev(0, 1, "retried")});
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_FALSE(log_->fenced());
}

TEST_F(KafkaLogOnMock, ABrokerThatIsDownIsAnsweredWithinTheAppendBudget) {
  open();
  ASSERT_TRUE(log_->append(std::vector<EncodedEvent>{ev(0, 1, "up")}).ok());
  ASSERT_EQ(rd_kafka_mock_broker_set_down(mock_, 1), RD_KAFKA_RESP_ERR_NO_ERROR);
  const auto started = Clock::now();
  const Status s = log_->append(std::vector<EncodedEvent>{ev(0, 2, "down")});
  const auto took = Clock::now() - started;
  EXPECT_FALSE(s.ok());
  EXPECT_LT(took, options_.append_timeout + 1'500ms) << "an append must not hang while the broker is down";
  EXPECT_FALSE(log_->fenced());
  EXPECT_FALSE(log_->append(std::vector<EncodedEvent>{ev(0, 2, "in doubt")}).ok())
      << "after a failed append the writer must be reset before it writes again";

  ASSERT_EQ(rd_kafka_mock_broker_set_up(mock_, 1), RD_KAFKA_RESP_ERR_NO_ERROR);
  Status reset = Status::error("not tried");
  for (int i = 0; i < 10 && !reset.ok(); ++i) reset = log_->reset_writer();
  ASSERT_TRUE(reset.ok()) << reset.message();
  const Status again = log_->append(std::vector<EncodedEvent>{ev(0, 2, "back")});
  EXPECT_TRUE(again.ok()) << again.message();
}

TEST_F(KafkaLogOnMock, AFencedCommitStopsTheWriterForGood) {
  open();
  rd_kafka_mock_push_request_errors(mock_, kEndTxn, 1, RD_KAFKA_RESP_ERR_PRODUCER_FENCED);
  EXPECT_FALSE(log_->append(std::vector<EncodedEvent>{ev(1, 1, "fenced")}).ok());
  EXPECT_TRUE(log_->fenced());
  EXPECT_FALSE(log_->reset_writer().ok());
  EXPECT_FALSE(log_->append(std::vector<EncodedEvent>{ev(1, 1, "never")}).ok());
}

}  // namespace
}  // namespace kobo
