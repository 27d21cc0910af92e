#pragma once
// The Kafka flags of every subcommand that reads or writes the log on Kafka (`kobo serve`,
// `audit`, `replay`, `events`), registered by one function so each is spelled, explained and
// given its environment variable once (docs/architecture.md section 8).
//
//   --kafka-brokers, --kafka-topic                        where the log is
//   --kafka-tls, --kafka-ca-file, --kafka-cert-file,      TLS: the CA that signed the brokers'
//   --kafka-key-file, --kafka-key-password                certificates (else the system's), and a
//                                                         client certificate when the cluster wants one
//   --kafka-sasl-mechanism, --kafka-sasl-username,        SASL: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
//   --kafka-sasl-password, --kafka-allow-plaintext-sasl   (PLAIN without TLS only when allowed)
//   --kafka-config KEY=VALUE (repeatable)                 any other librdkafka property, applied last

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "events/kafka_log.h"

namespace kobo {

struct KafkaFlags {
  std::string brokers;  // empty: the embedded log
  std::string topic = kDefaultKafkaTopic;
  bool tls = false;
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string key_password;
  std::string sasl_mechanism;
  std::string sasl_username;
  std::string sasl_password;
  bool allow_plaintext_sasl = false;  // SASL PLAIN without TLS sends the password in clear
  std::vector<std::string> config;    // KEY=VALUE

  // Options for open_kafka_log: brokers, topic and the librdkafka properties of the flags
  // (security.protocol from TLS and SASL, then --kafka-config's), or an error naming the flag
  // that is wrong or missing. SASL PLAIN over a connection without TLS, which sends the
  // password in clear, is refused unless allow_plaintext_sasl. The caller sets the rest
  // (partitions, writer, timeouts).
  [[nodiscard]] Result<KafkaLogOptions> log_options() const;
};

// Adds the flags above to `sub`; `brokers_help` says what --kafka-brokers does for it.
void add_kafka_flags(CLI::App* sub, KafkaFlags& flags, const std::string& brokers_help);

}  // namespace kobo
