#include "app/kafka_flags.h"

#include <cctype>

namespace kobo {

void add_kafka_flags(CLI::App* sub, KafkaFlags& flags, const std::string& brokers_help) {
  sub->add_option("--kafka-brokers", flags.brokers, brokers_help)->envname("KOBO_KAFKA_BROKERS");
  sub->add_option("--kafka-topic", flags.topic, "Kafka topic of the event log")
      ->envname("KOBO_KAFKA_TOPIC")
      ->capture_default_str();
  sub->add_flag("--kafka-tls", flags.tls,
                "Kafka: connect with TLS (implied by --kafka-ca-file and --kafka-cert-file), trusting the "
                "system's CAs unless --kafka-ca-file names one")
      ->envname("KOBO_KAFKA_TLS");
  sub->add_option("--kafka-ca-file", flags.ca_file,
                  "Kafka: PEM file of the CA that signed the brokers' certificates")
      ->envname("KOBO_KAFKA_CA_FILE")
      ->check(CLI::ExistingFile);
  sub->add_option(
         "--kafka-cert-file", flags.cert_file,
         "Kafka: PEM file of this client's certificate, for clusters that authenticate clients by TLS")
      ->envname("KOBO_KAFKA_CERT_FILE")
      ->check(CLI::ExistingFile);
  sub->add_option("--kafka-key-file", flags.key_file,
                  "Kafka: PEM file of the client certificate's private key")
      ->envname("KOBO_KAFKA_KEY_FILE")
      ->check(CLI::ExistingFile);
  sub->add_option("--kafka-key-password", flags.key_password,
                  "Kafka: the password of --kafka-key-file, if any")
      ->envname("KOBO_KAFKA_KEY_PASSWORD");
  sub->add_option("--kafka-sasl-mechanism", flags.sasl_mechanism, "Kafka: SASL authentication")
      ->envname("KOBO_KAFKA_SASL_MECHANISM")
      ->check(CLI::IsMember({"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}));
  sub->add_option("--kafka-sasl-username", flags.sasl_username, "Kafka: the SASL user name")
      ->envname("KOBO_KAFKA_SASL_USERNAME");
  sub->add_option("--kafka-sasl-password", flags.sasl_password,
                  "Kafka: the SASL password (prefer the environment variable: a flag shows in ps)")
      ->envname("KOBO_KAFKA_SASL_PASSWORD");
  sub->add_flag("--kafka-allow-plaintext-sasl", flags.allow_plaintext_sasl,
                "Kafka: allow SASL PLAIN without TLS, which sends the password in clear (a broker on "
                "loopback or a private link; otherwise use --kafka-tls)")
      ->envname("KOBO_KAFKA_ALLOW_PLAINTEXT_SASL");
  sub->add_option("--kafka-config", flags.config,
                  "Kafka: any librdkafka property as KEY=VALUE, applied after the others; repeatable")
      ->take_all()
      ->allow_extra_args(false);
}

Result<KafkaLogOptions> KafkaFlags::log_options() const {
  KafkaLogOptions o;
  o.brokers = brokers;
  o.topic = topic;
  const bool sasl = !sasl_mechanism.empty() || !sasl_username.empty() || !sasl_password.empty();
  if (sasl && (sasl_mechanism.empty() || sasl_username.empty() || sasl_password.empty()))
    return Status::error(
        "Kafka SASL needs --kafka-sasl-mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512), "
        "--kafka-sasl-username and --kafka-sasl-password (or KOBO_KAFKA_SASL_PASSWORD) together");
  if (cert_file.empty() != key_file.empty())
    return Status::error("a Kafka client certificate needs both --kafka-cert-file and --kafka-key-file");
  const bool use_tls = tls || !ca_file.empty() || !cert_file.empty();
  if (use_tls || sasl)
    o.config.emplace_back("security.protocol", use_tls ? (sasl ? "SASL_SSL" : "SSL") : "SASL_PLAINTEXT");
  if (!ca_file.empty()) o.config.emplace_back("ssl.ca.location", ca_file);
  if (!cert_file.empty()) {
    o.config.emplace_back("ssl.certificate.location", cert_file);
    o.config.emplace_back("ssl.key.location", key_file);
  }
  if (!key_password.empty()) o.config.emplace_back("ssl.key.password", key_password);
  if (sasl) {
    o.config.emplace_back("sasl.mechanisms", sasl_mechanism);
    o.config.emplace_back("sasl.username", sasl_username);
    o.config.emplace_back("sasl.password", sasl_password);
  }
  for (const std::string& item : config) {
    const auto eq = item.find('=');
    if (eq == 0 || eq == std::string::npos)
      return Status::error("--kafka-config wants KEY=VALUE, got " + item);
    o.config.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  // What librdkafka will do, --kafka-config's last word included.
  std::string protocol = "plaintext", mechanism = "GSSAPI";  // librdkafka's defaults
  for (const auto& [key, value] : o.config) {
    std::string v = value;
    for (char& ch : v) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (key == "security.protocol") protocol = v;
    if (key == "sasl.mechanisms" || key == "sasl.mechanism") mechanism = v;
  }
  if (protocol == "SASL_PLAINTEXT" && mechanism == "PLAIN" && !allow_plaintext_sasl)
    return Status::error(
        "Kafka SASL PLAIN without TLS would send the password in clear: add --kafka-tls (and "
        "--kafka-ca-file), use SCRAM, or --kafka-allow-plaintext-sasl for a broker on a private link");
  return o;
}

}  // namespace kobo
