#include "events/kafka_log.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "common/time.h"

namespace kobo {

std::string cloud_event_type(EventType t) { return "ng.kobo.ledger." + std::string(to_string(t)); }

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct HandleDeleter {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE); }
};
using Handle = std::unique_ptr<rd_kafka_t, HandleDeleter>;
struct ConfDeleter {
  void operator()(rd_kafka_conf_t* c) const { rd_kafka_conf_destroy(c); }
};
struct ErrorDeleter {
  void operator()(rd_kafka_error_t* e) const { rd_kafka_error_destroy(e); }
};
using Error = std::unique_ptr<rd_kafka_error_t, ErrorDeleter>;
struct ListDeleter {
  void operator()(rd_kafka_topic_partition_list_t* l) const { rd_kafka_topic_partition_list_destroy(l); }
};
using PartitionList = std::unique_ptr<rd_kafka_topic_partition_list_t, ListDeleter>;
struct MessageDeleter {
  void operator()(rd_kafka_message_t* m) const { rd_kafka_message_destroy(m); }
};
using Message = std::unique_ptr<rd_kafka_message_t, MessageDeleter>;

int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1'000'000'000));
}

// librdkafka's warnings and errors join our JSON log lines (it suppresses repeats itself).
void on_log(const rd_kafka_t* rk, int level, const char* facility, const char* message) {
  if (level > 4) return;
  log::warn("librdkafka", {{"handle", rd_kafka_name(rk)}, {"facility", facility}, {"message", message}});
}

using Properties = std::vector<std::pair<std::string, std::string>>;

Result<Handle> new_handle(rd_kafka_type_t type, const KafkaLogOptions& o, Properties props) {
  std::unique_ptr<rd_kafka_conf_t, ConfDeleter> conf(rd_kafka_conf_new());
  char err[512];
  props.insert(props.begin(), {"bootstrap.servers", o.brokers});
  props.insert(props.end(), o.config.begin(), o.config.end());  // the caller's overrides win
  for (const auto& [key, value] : props)
    if (rd_kafka_conf_set(conf.get(), key.c_str(), value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK)
      return Status::error("kafka property " + key + ": " + err);
  rd_kafka_conf_set_log_cb(conf.get(), on_log);
  rd_kafka_t* rk = rd_kafka_new(type, conf.get(), err, sizeof err);
  if (rk == nullptr) return Status::error(std::string("kafka: ") + err);
  (void)conf.release();  // owned by the handle now
  return Handle(rk);
}

Status error_status(std::string_view what, const rd_kafka_error_t* e) {
  return Status::error(std::string(what) + ": " + rd_kafka_error_string(e));
}

// Creates the topic when it is missing: an event log keeps everything, so no retention limit.
Status ensure_topic(rd_kafka_t* rk, const KafkaLogOptions& o) {
  char err[512];
  rd_kafka_NewTopic_t* topic =
      rd_kafka_NewTopic_new(o.topic.c_str(), static_cast<int>(o.partitions), -1, err, sizeof err);
  if (topic == nullptr) return Status::error(std::string("kafka topic ") + o.topic + ": " + err);
  rd_kafka_NewTopic_set_config(topic, "retention.ms", "-1");
  rd_kafka_NewTopic_set_config(topic, "retention.bytes", "-1");
  rd_kafka_AdminOptions_t* options = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
  const int timeout = static_cast<int>(o.connect_timeout.count());
  rd_kafka_AdminOptions_set_request_timeout(options, timeout, err, sizeof err);
  rd_kafka_AdminOptions_set_operation_timeout(options, timeout, err, sizeof err);
  rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
  rd_kafka_CreateTopics(rk, &topic, 1, options, queue);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(queue, timeout + 1'000);

  Status result;
  if (ev == nullptr) {
    result = Status::error("kafka: creating topic " + o.topic + " timed out");
  } else if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    result = Status::error("kafka: creating topic " + o.topic + ": " + rd_kafka_event_error_string(ev));
  } else {
    std::size_t n = 0;
    const rd_kafka_topic_result_t** results =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
    for (std::size_t i = 0; i < n; ++i) {
      const rd_kafka_resp_err_t code = rd_kafka_topic_result_error(results[i]);
      if (code == RD_KAFKA_RESP_ERR_NO_ERROR) {
        log::info("created the Kafka topic", {{"topic", o.topic}, {"partitions", o.partitions}});
      } else if (code != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
        result = Status::error("kafka: creating topic " + o.topic + ": " +
                               rd_kafka_topic_result_error_string(results[i]));
      }
    }
  }
  if (ev != nullptr) rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(queue);
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_NewTopic_destroy(topic);
  return result;
}

// The topic's partition count, waiting for its metadata to settle after a creation.
Result<std::uint32_t> topic_partitions(rd_kafka_t* rk, const std::string& topic, Clock::time_point deadline) {
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  std::string problem = "no metadata";
  for (;;) {
    const rd_kafka_metadata_t* md = nullptr;
    const rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, std::max(ms_left(deadline), 1));
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      // Found once every partition has a leader: a topic just created has none for a moment.
      bool found = md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR &&
                   md->topics[0].partition_cnt > 0;
      for (int i = 0; found && i < md->topics[0].partition_cnt; ++i)
        found = md->topics[0].partitions[i].leader >= 0 &&
                md->topics[0].partitions[i].err == RD_KAFKA_RESP_ERR_NO_ERROR;
      const auto n = found ? static_cast<std::uint32_t>(md->topics[0].partition_cnt) : 0u;
      if (!found) problem = md->topic_cnt == 1 ? rd_kafka_err2str(md->topics[0].err) : "topic missing";
      rd_kafka_metadata_destroy(md);
      if (found) {
        rd_kafka_topic_destroy(rkt);
        return n;
      }
    } else {
      problem = rd_kafka_err2str(err);
    }
    if (ms_left(deadline) == 0) break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  rd_kafka_topic_destroy(rkt);
  return Status::error("kafka: no metadata for topic " + topic + ": " + problem);
}

Properties reader_properties(const std::string& name) {
  return {{"client.id", name},
          {"isolation.level", "read_committed"},
          {"enable.auto.commit", "false"},
          {"enable.auto.offset.store", "false"},
          {"enable.partition.eof", "true"},
          {"auto.offset.reset", "error"},  // a position the topic no longer has is an error, never a skip
          {"fetch.wait.max.ms", "10"},     // the projection's lag: answer fetches as soon as there is data
          {"fetch.error.backoff.ms", "100"}};
}

class KafkaReader final : public LogReader {
 public:
  KafkaReader(Handle rk, std::vector<Offset> start) : rk_(std::move(rk)), pos_(std::move(start)) {}

  Status poll(std::size_t max_records, std::chrono::milliseconds timeout,
              std::vector<LogRecord>& out) override {
    int wait = static_cast<int>(timeout.count());
    for (std::size_t got = 0; got < max_records;) {
      Message m(rd_kafka_consumer_poll(rk_.get(), wait));
      if (!m) break;
      wait = 0;  // take what is already here, then return
      const auto p = static_cast<std::uint32_t>(m->partition);
      if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        // The end of what is readable now: past any transaction markers and aborted records.
        if (p < pos_.size()) pos_[p] = std::max(pos_[p], Offset(static_cast<std::uint64_t>(m->offset)));
        continue;
      }
      if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (transient(m->err)) {
          log::warn("kafka reader", {{"error", rd_kafka_message_errstr(m.get())}});
          continue;
        }
        return Status::error(std::string("kafka reader: ") + rd_kafka_message_errstr(m.get()));
      }
      if (p >= pos_.size()) return Status::error("kafka reader: a record of partition " + std::to_string(p));
      const auto offset = static_cast<std::uint64_t>(m->offset);
      out.push_back(
          LogRecord{Partition(p), Offset(offset), std::string(static_cast<const char*>(m->payload), m->len)});
      pos_[p] = Offset(offset + 1);
      ++got;
    }
    return {};
  }

  Offset position(Partition p) const override { return pos_.at(p.value); }

 private:
  // Errors librdkafka recovers from by itself (a broker going away, a leader moving).
  static bool transient(rd_kafka_resp_err_t err) {
    switch (err) {
      case RD_KAFKA_RESP_ERR__TRANSPORT:
      case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
      case RD_KAFKA_RESP_ERR__RESOLVE:
      case RD_KAFKA_RESP_ERR__TIMED_OUT:
      case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
      case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
      case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
        return true;
      default:
        return false;
    }
  }

  Handle rk_;
  std::vector<Offset> pos_;
};

class KafkaLogImpl final : public EventLog {
 public:
  explicit KafkaLogImpl(KafkaLogOptions o) : options_(std::move(o)) {}

  Status open() {
    const auto deadline = Clock::now() + options_.connect_timeout;
    auto meta = new_handle(RD_KAFKA_CONSUMER, options_, reader_properties("kobo-meta"));
    if (!meta) return meta.status();
    meta_ = std::move(meta).value();
    if (options_.writer && options_.create_topic) {
      if (auto s = ensure_topic(meta_.get(), options_); !s) return s;
    }
    auto n = topic_partitions(meta_.get(), options_.topic, deadline);
    if (!n) return n.status();
    partitions_ = n.value();
    if (options_.writer && partitions_ != options_.partitions)
      log::warn(
          "the Kafka topic exists with another partition count; the service uses the topic's",
          {{"topic", options_.topic}, {"partitions", partitions_}, {"configured", options_.partitions}});
    if (options_.writer) {
      writers_.resize(partitions_);
      for (std::uint32_t p = 0; p < partitions_; ++p) {
        if (auto s = init_writer(p, deadline); !s) return s;
      }
    }
    return {};
  }

  std::uint32_t partitions() const override { return partitions_; }

  Status append(std::span<const EncodedEvent> batch) override {
    std::lock_guard lock(write_mu_);
    if (!options_.writer) return Status::error("kafka: this log was opened to read only");
    if (fenced_.load()) return Status::error("kafka: another writer has taken the partitions");
    const auto deadline = Clock::now() + options_.append_timeout;

    std::map<std::uint32_t, std::vector<const EncodedEvent*>> slices;  // by partition, in order
    for (const EncodedEvent& e : batch) {
      if (e.partition.value >= partitions_)
        return Status::error("kafka: no partition " + std::to_string(e.partition.value));
      slices[e.partition.value].push_back(&e);
    }
    for (const auto& [p, events] : slices) {
      if (writers_[p].in_doubt)
        return Status::error("kafka partition " + std::to_string(p) + ": writer not reset");
    }
    // Every partition's transaction is produced before any commits, so their flushes overlap.
    for (const auto& [p, events] : slices) {
      writers_[p].in_doubt = true;  // until its transaction is committed
      if (auto s = produce(p, events); !s) return failed(p, s);
    }
    for (const auto& [p, events] : slices) {
      if (auto s = commit(p, events, deadline); !s) return failed(p, s);
      writers_[p].in_doubt = false;
    }
    for (const auto& [p, events] : slices) rd_kafka_poll(writers_[p].rk.get(), 0);  // serve its callbacks
    return {};
  }

  Result<std::unique_ptr<LogReader>> open_reader(std::vector<Offset> start) override {
    if (start.size() != partitions_) return Status::error("reader needs one start offset per partition");
    Properties props = reader_properties("kobo-reader");
    // librdkafka's assign() needs a group id; the group is never joined and nothing is committed
    // to it: offsets live beside the views.
    props.emplace_back("group.id", "kobo.readers.unused");
    auto rk = new_handle(RD_KAFKA_CONSUMER, options_, std::move(props));
    if (!rk) return rk.status();
    rd_kafka_poll_set_consumer(rk.value().get());
    PartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(partitions_)));
    for (std::uint32_t p = 0; p < partitions_; ++p)
      rd_kafka_topic_partition_list_add(list.get(), options_.topic.c_str(), static_cast<std::int32_t>(p))
          ->offset = static_cast<std::int64_t>(start[p].value);
    if (const rd_kafka_resp_err_t err = rd_kafka_assign(rk.value().get(), list.get());
        err != RD_KAFKA_RESP_ERR_NO_ERROR)
      return Status::error(std::string("kafka: assigning partitions: ") + rd_kafka_err2str(err));
    return std::unique_ptr<LogReader>(std::make_unique<KafkaReader>(std::move(rk).value(), std::move(start)));
  }

  Result<std::vector<Offset>> end_offsets() override {
    // A read_committed handle asks for the last stable offset: where its readers stop. A leader
    // that is moving (or not elected yet) is asked again until the connect timeout.
    const auto deadline = Clock::now() + options_.connect_timeout;
    for (;;) {
      PartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(partitions_)));
      for (std::uint32_t p = 0; p < partitions_; ++p)
        rd_kafka_topic_partition_list_add(list.get(), options_.topic.c_str(), static_cast<std::int32_t>(p))
            ->offset = RD_KAFKA_OFFSET_END;
      rd_kafka_resp_err_t err =
          rd_kafka_offsets_for_times(meta_.get(), list.get(), std::max(ms_left(deadline), 1));
      std::vector<Offset> out(partitions_);
      for (int i = 0; i < list->cnt && err == RD_KAFKA_RESP_ERR_NO_ERROR; ++i) {
        const rd_kafka_topic_partition_t& tp = list->elems[i];
        err = tp.err != RD_KAFKA_RESP_ERR_NO_ERROR ? tp.err
              : tp.offset < 0                      ? RD_KAFKA_RESP_ERR__NO_OFFSET
                                                   : RD_KAFKA_RESP_ERR_NO_ERROR;
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
          out[static_cast<std::size_t>(tp.partition)] = Offset(static_cast<std::uint64_t>(tp.offset));
      }
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return out;
      const bool moving = err == RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION ||
                          err == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE ||
                          err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
                          err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT;
      if (!moving || ms_left(deadline) == 0)
        return Status::error(std::string("kafka: end offsets: ") + rd_kafka_err2str(err));
      std::this_thread::sleep_for(milliseconds(100));
    }
  }

  Status reset_writer() override {
    std::lock_guard lock(write_mu_);
    if (!options_.writer) return {};
    if (fenced_.load()) return Status::error("kafka: another writer has taken the partitions");
    // Within the append budget: the writer thread waits on this while commands queue up.
    const auto deadline = Clock::now() + std::min(options_.append_timeout, options_.connect_timeout);
    for (std::uint32_t p = 0; p < partitions_; ++p) {
      if (!writers_[p].in_doubt) continue;
      writers_[p].rk.reset();
      if (auto s = init_writer(p, deadline); !s) return s;
    }
    return {};
  }

  bool fenced() const override { return fenced_.load(); }

 private:
  struct Writer {
    Handle rk;
    bool in_doubt = false;  // an append failed before committing: re-initialise before writing
  };

  // A transactional producer for partition p. init_transactions() fences every earlier producer
  // with the same transactional.id and settles its open transaction, committed or aborted.
  Status init_writer(std::uint32_t p, Clock::time_point deadline) {
    const std::string id = options_.transactional_id_prefix + "." + options_.topic + "." + std::to_string(p);
    auto rk = new_handle(RD_KAFKA_PRODUCER, options_,
                         {{"client.id", "kobo-writer-" + std::to_string(p)},
                          {"transactional.id", id},
                          {"enable.idempotence", "true"},
                          {"acks", "all"},
                          {"partitioner", "murmur2_random"},
                          {"linger.ms", "1"},
                          {"transaction.timeout.ms", "10000"},
                          {"message.timeout.ms", "10000"}});
    if (!rk) return rk.status();
    if (Error e(rd_kafka_init_transactions(rk.value().get(), std::max(ms_left(deadline), 1))); e) {
      writers_[p].in_doubt = true;
      return error_status("kafka partition " + std::to_string(p) + ": init_transactions", e.get());
    }
    writers_[p] = Writer{std::move(rk).value(), false};
    return {};
  }

  Status produce(std::uint32_t p, const std::vector<const EncodedEvent*>& events) {
    rd_kafka_t* rk = writers_[p].rk.get();
    if (Error e(rd_kafka_begin_transaction(rk)); e) {
      note_fatal(e.get());
      return error_status("begin_transaction", e.get());
    }
    for (const EncodedEvent* e : events) {
      rd_kafka_headers_t* headers = cloud_event_headers(*e);
      const rd_kafka_resp_err_t err = rd_kafka_producev(
          rk, RD_KAFKA_V_TOPIC(options_.topic.c_str()), RD_KAFKA_V_PARTITION(static_cast<std::int32_t>(p)),
          RD_KAFKA_V_KEY(e->business.empty() ? nullptr : e->business.data(), e->business.size()),
          RD_KAFKA_V_VALUE(const_cast<char*>(e->bytes.data()), e->bytes.size()), RD_KAFKA_V_HEADERS(headers),
          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        rd_kafka_headers_destroy(headers);  // not taken by a failed produce
        return Status::error(std::string("produce: ") + rd_kafka_err2str(err));
      }
    }
    return {};
  }

  // Commits partition p's transaction. An abortable error aborts it and produces and commits
  // the same events again, while the append's time budget lasts.
  Status commit(std::uint32_t p, const std::vector<const EncodedEvent*>& events, Clock::time_point deadline) {
    rd_kafka_t* rk = writers_[p].rk.get();
    for (;;) {
      Error e(rd_kafka_commit_transaction(rk, std::max(ms_left(deadline), 1)));
      if (!e) return {};
      note_fatal(e.get());
      if (rd_kafka_error_is_fatal(e.get()) || ms_left(deadline) == 0)
        return error_status("commit_transaction", e.get());
      if (rd_kafka_error_txn_requires_abort(e.get())) {
        log::warn("kafka transaction aborted; retrying it",
                  {{"partition", p}, {"error", rd_kafka_error_string(e.get())}});
        if (auto s = abort_and_produce_again(p, events, deadline); !s) return s;
      } else if (!rd_kafka_error_is_retriable(e.get())) {
        return error_status("commit_transaction", e.get());
      }
    }
  }

  // Aborts partition p's transaction and produces its events in a new one. A produce refused
  // right after the error that caused the abort (librdkafka remembers a topic's error until it
  // has fresh metadata) is tried again until the deadline.
  Status abort_and_produce_again(std::uint32_t p, const std::vector<const EncodedEvent*>& events,
                                 Clock::time_point deadline) {
    rd_kafka_t* rk = writers_[p].rk.get();
    for (;;) {
      if (Error a(rd_kafka_abort_transaction(rk, std::max(ms_left(deadline), 1))); a) {
        note_fatal(a.get());
        return error_status("abort_transaction", a.get());
      }
      auto s = produce(p, events);
      if (s || fenced_.load() || ms_left(deadline) == 0) return s;
      std::this_thread::sleep_for(milliseconds(std::min(100, ms_left(deadline))));
    }
  }

  rd_kafka_headers_t* cloud_event_headers(const EncodedEvent& e) const {
    rd_kafka_headers_t* h = rd_kafka_headers_new(6);
    auto add = [h](const char* name, const std::string& value) {
      rd_kafka_header_add(h, name, -1, value.data(), static_cast<ssize_t>(value.size()));
    };
    add("ce_specversion", "1.0");
    add("ce_id", std::to_string(e.partition.value) + "-" + std::to_string(e.seq.value));
    add("ce_type", cloud_event_type(e.type));
    add("ce_source", "/kobo/ledger/partitions/" + std::to_string(e.partition.value));
    add("ce_time", format_iso8601(e.time));
    add("content-type", "application/json");
    return h;
  }

  void note_fatal(const rd_kafka_error_t* e) {
    const rd_kafka_resp_err_t code = rd_kafka_error_code(e);
    if (rd_kafka_error_is_fatal(e) || code == RD_KAFKA_RESP_ERR__FENCED ||
        code == RD_KAFKA_RESP_ERR_PRODUCER_FENCED || code == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH) {
      if (!fenced_.exchange(true))
        log::error("kafka: the writer is fenced or failed fatally; it writes nothing more",
                   {{"error", rd_kafka_error_string(e)}});
    }
  }

  Status failed(std::uint32_t p, const Status& s) {
    return Status::error("kafka partition " + std::to_string(p) + ": " + s.message());
  }

  const KafkaLogOptions options_;
  Handle meta_;  // metadata, topic creation and end offsets
  std::uint32_t partitions_ = 0;
  std::mutex write_mu_;
  std::vector<Writer> writers_;  // guarded by write_mu_
  std::atomic<bool> fenced_{false};
};

}  // namespace

Result<std::unique_ptr<EventLog>> open_kafka_log(const KafkaLogOptions& options) {
  if (options.brokers.empty()) return Status::error("kafka: no brokers given");
  if (options.partitions == 0) return Status::error("kafka: a topic needs at least one partition");
  auto log = std::make_unique<KafkaLogImpl>(options);
  if (auto s = log->open(); !s) return s;
  return std::unique_ptr<EventLog>(std::move(log));
}

}  // namespace kobo
