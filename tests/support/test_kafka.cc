#include "tests/support/test_kafka.h"

#include <librdkafka/rdkafka.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

namespace kobo::testing {

namespace fs = std::filesystem;

namespace {

fs::path broker_dir() {
  const char* dir = std::getenv("KOBO_TEST_KAFKA_DIR");
  return dir == nullptr ? fs::path() : fs::path(dir);
}

std::string first_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

bool test_kafka_secured() {
  const fs::path dir = broker_dir();
  return !dir.empty() && fs::exists(dir / "client.properties");
}

std::vector<std::pair<std::string, std::string>> test_kafka_config() {
  std::vector<std::pair<std::string, std::string>> out;
  if (!test_kafka_secured()) return out;
  std::ifstream in(broker_dir() / "client.properties");
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (eq != std::string::npos && !line.empty() && line[0] != '#')
      out.emplace_back(line.substr(0, eq), line.substr(eq + 1));
  }
  return out;
}

void export_test_kafka_credentials() {
  if (!test_kafka_secured()) return;
  std::map<std::string, std::string> config;
  for (auto& [k, v] : test_kafka_config()) config[k] = v;
  ::setenv("KOBO_KAFKA_CA_FILE", config["ssl.ca.location"].c_str(), 1);
  ::setenv("KOBO_KAFKA_SASL_MECHANISM", config["sasl.mechanisms"].c_str(), 1);
  ::setenv("KOBO_KAFKA_SASL_USERNAME", config["sasl.username"].c_str(), 1);
  ::setenv("KOBO_KAFKA_SASL_PASSWORD", config["sasl.password"].c_str(), 1);
}

void ensure_test_topic(const std::string& topic, int partitions) {
  if (!test_kafka_secured()) return;
  const std::string admin = first_line(broker_dir() / "admin-bootstrap");
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", admin.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
    rd_kafka_conf_destroy(conf);
    throw std::runtime_error(std::string("ensure_test_topic: ") + err);
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (rk == nullptr) throw std::runtime_error(std::string("ensure_test_topic: ") + err);
  rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(topic.c_str(), partitions, -1, err, sizeof err);
  rd_kafka_NewTopic_set_config(nt, "retention.ms", "-1");
  rd_kafka_NewTopic_set_config(nt, "retention.bytes", "-1");
  rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
  rd_kafka_CreateTopics(rk, &nt, 1, nullptr, queue);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(queue, 30'000);
  std::string problem;
  if (ev == nullptr) {
    problem = "no answer within 30 s";
  } else if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    problem = rd_kafka_event_error_string(ev);
  } else {
    std::size_t n = 0;
    const rd_kafka_topic_result_t** results =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
    for (std::size_t i = 0; i < n; ++i) {
      const rd_kafka_resp_err_t code = rd_kafka_topic_result_error(results[i]);
      if (code != RD_KAFKA_RESP_ERR_NO_ERROR && code != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
        problem = rd_kafka_err2str(code);
    }
  }
  if (ev != nullptr) rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(queue);
  rd_kafka_NewTopic_destroy(nt);
  rd_kafka_destroy(rk);
  if (!problem.empty()) throw std::runtime_error("creating the test topic " + topic + ": " + problem);
}

std::vector<TestPartition> describe_test_topic(const std::string& brokers, const std::string& topic,
                                               int timeout_ms) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK ||
      rd_kafka_conf_set(conf, "log_level", "0", err, sizeof err) != RD_KAFKA_CONF_OK) {
    rd_kafka_conf_destroy(conf);
    throw std::runtime_error(std::string("describe_test_topic: ") + err);
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (rk == nullptr) throw std::runtime_error(std::string("describe_test_topic: ") + err);
  std::vector<TestPartition> out;
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  if (rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms) == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1 &&
      md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    const rd_kafka_metadata_topic_t& t = md->topics[0];
    out.resize(static_cast<std::size_t>(t.partition_cnt));
    for (int i = 0; i < t.partition_cnt; ++i) {
      const rd_kafka_metadata_partition_t& p = t.partitions[i];
      if (p.id < 0 || p.id >= t.partition_cnt) continue;
      TestPartition& tp = out[static_cast<std::size_t>(p.id)];
      tp.leader = p.err == RD_KAFKA_RESP_ERR_NO_ERROR ? p.leader : -1;
      tp.replicas = p.replica_cnt;
      tp.in_sync = p.isr_cnt;
      std::int64_t low = 0, high = -1;
      if (rd_kafka_query_watermark_offsets(rk, topic.c_str(), p.id, &low, &high, timeout_ms) ==
          RD_KAFKA_RESP_ERR_NO_ERROR)
        tp.end_offset = high;
    }
  }
  if (md != nullptr) rd_kafka_metadata_destroy(md);
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
  return out;
}

}  // namespace kobo::testing
