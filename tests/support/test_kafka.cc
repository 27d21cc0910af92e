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

}  // namespace kobo::testing
