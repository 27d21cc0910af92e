#include "events/kafka_log.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>

#include "common/log.h"
#include "common/time.h"

namespace kobo {

std::string cloud_event_type(EventType t) {
  KOBO_ASSERT(static_cast<std::size_t>(t) < std::variant_size_v<EventData>,
              "a CloudEvents type of an event type");
  return "ng.kobo.ledger." + std::string(to_string(t));
}

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
  const int ms = static_cast<int>(std::clamp<long long>(left, 0, 1'000'000'000));
  KOBO_ASSERT(ms >= 0, "no time left is 0 ms, never less");
  return ms;
}

// librdkafka's warnings and errors join our JSON log lines (it suppresses repeats itself).
void on_log(const rd_kafka_t* rk, int level, const char* facility, const char* message) {
  KOBO_ASSERT(rk != nullptr && facility != nullptr && message != nullptr,
              "librdkafka logs a line of a handle");
  if (level > 4) return;
  log::warn("librdkafka", {{"handle", rd_kafka_name(rk)}, {"facility", facility}, {"message", message}});
}

using Properties = std::vector<std::pair<std::string, std::string>>;

// What librdkafka reports through its error callback that no retry fixes: a wrong password
// (SASL), a TLS handshake that failed. Shared by a log's handles and its readers'.
class ErrorSink {
 public:
  void note(rd_kafka_resp_err_t err, const char* reason) {
    KOBO_ASSERT(reason != nullptr, "librdkafka gives an error its reason");
    if (err != RD_KAFKA_RESP_ERR__AUTHENTICATION && err != RD_KAFKA_RESP_ERR__SSL) return;
    std::lock_guard lock(mu_);
    if (refusal_.empty()) refusal_ = reason;
  }
  std::string refusal() const {
    std::lock_guard lock(mu_);
    return refusal_;
  }

 private:
  mutable std::mutex mu_;
  std::string refusal_;  // the first one: later ones repeat it
};

void on_error(rd_kafka_t*, int err, const char* reason, void* opaque) {
  if (opaque != nullptr) static_cast<ErrorSink*>(opaque)->note(static_cast<rd_kafka_resp_err_t>(err), reason);
}

Result<Handle> new_handle(rd_kafka_type_t type, const KafkaLogOptions& o, Properties props, ErrorSink* sink) {
  KOBO_ASSERT(!o.brokers.empty() && !o.topic.empty(),
              "open_kafka_log() refuses a log without brokers or topic");
  std::unique_ptr<rd_kafka_conf_t, ConfDeleter> conf(rd_kafka_conf_new());
  char err[512];
  props.insert(props.begin(), {"bootstrap.servers", o.brokers});
  // A broker that comes back is reconnected to within a second (librdkafka backs off to 10 s).
  props.insert(props.begin() + 1, {"reconnect.backoff.max.ms", "1000"});
  props.insert(props.end(), o.config.begin(), o.config.end());  // the caller's overrides win
  for (const auto& [key, value] : props)
    if (rd_kafka_conf_set(conf.get(), key.c_str(), value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK)
      return Status::error("kafka property " + key + ": " + err);
  rd_kafka_conf_set_log_cb(conf.get(), on_log);
  rd_kafka_conf_set_error_cb(conf.get(), on_error);
  rd_kafka_conf_set_opaque(conf.get(), sink);
  rd_kafka_t* rk = rd_kafka_new(type, conf.get(), err, sizeof err);
  if (rk == nullptr) return Status::error(std::string("kafka: ") + err);
  (void)conf.release();  // owned by the handle now
  return Handle(rk);
}

Status error_status(std::string_view what, const rd_kafka_error_t* e) {
  KOBO_ASSERT(e != nullptr, "an error status of an error librdkafka returned");
  return Status::error(std::string(what) + ": " + rd_kafka_error_string(e));
}

// Errors librdkafka or a broker coming (back) up clears by itself: a broker going away, a leader
// or coordinator moving, a request that timed out.
bool is_transient(rd_kafka_resp_err_t err) {
  switch (err) {
    case RD_KAFKA_RESP_ERR__TRANSPORT:
    case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
    case RD_KAFKA_RESP_ERR__RESOLVE:
    case RD_KAFKA_RESP_ERR__TIMED_OUT:
    case RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE:
    case RD_KAFKA_RESP_ERR__WAIT_COORD:
    case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
    case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
    case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS:
    case RD_KAFKA_RESP_ERR_NOT_COORDINATOR:
    case RD_KAFKA_RESP_ERR_NOT_CONTROLLER:
    case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS:
    case RD_KAFKA_RESP_ERR_CONCURRENT_TRANSACTIONS:
      return true;
    default:
      return false;
  }
}

constexpr const char* kReaderGroup = "kobo.readers.unused";
// The most partitions a log serves (kobo serve's --partitions allows as many).
constexpr std::uint32_t kPartitionsMax = 1024;

Properties reader_properties(const std::string& name) {
  KOBO_ASSERT(!name.empty(), "a reader's handle has a client id");
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
  KafkaReader(std::shared_ptr<ErrorSink> sink, Handle rk, std::vector<Offset> start)
      : sink_(std::move(sink)), rk_(std::move(rk)), pos_(std::move(start)) {
    KOBO_ASSERT(rk_ != nullptr && !pos_.empty(), "a reader has a handle and a position per partition");
  }

  // What a record from the brokers must be before it is handed on (bytes from the network): of
  // one of the log's partitions, at or past the reader's position there, with its payload.
  Status poll(std::size_t max_records, std::chrono::milliseconds timeout,
              std::vector<LogRecord>& out) override {
    const std::size_t before = out.size();
    KOBO_ASSERT(max_records > 0, "a poll asks for a record at least");
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
        if (is_transient(m->err)) {
          log::warn("kafka reader", {{"error", rd_kafka_message_errstr(m.get())}});
          continue;
        }
        if (m->err == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED)
          return Status::error(std::string("kafka reader: ") + rd_kafka_message_errstr(m.get()) +
                               ": grant this client's principal READ and DESCRIBE on Group " + kReaderGroup +
                               " (never joined, but librdkafka's assign() needs a group id)");
        return Status::error(std::string("kafka reader: ") + rd_kafka_message_errstr(m.get()));
      }
      if (m->partition < 0 || p >= pos_.size())
        return Status::error("kafka reader: a record of partition " + std::to_string(m->partition));
      if (m->offset < 0 || static_cast<std::uint64_t>(m->offset) < pos_[p].value)
        return Status::error("kafka reader: partition " + std::to_string(p) + " gave offset " +
                             std::to_string(m->offset) + ", before its position " +
                             std::to_string(pos_[p].value));
      if (m->payload == nullptr && m->len > 0)
        return Status::error("kafka reader: a record of partition " + std::to_string(p) +
                             " without its payload");
      const auto offset = static_cast<std::uint64_t>(m->offset);
      KOBO_ASSERT(p < pos_.size() && offset >= pos_[p].value,
                  "a record handed on is of one of the log's partitions, at or past the reader's position");
      out.push_back(
          LogRecord{Partition(p), Offset(offset),
                    m->len == 0 ? std::string() : std::string(static_cast<const char*>(m->payload), m->len)});
      KOBO_ASSERT(out.back().bytes.size() == m->len && out.back().offset.value == offset,
                  "a record handed on holds its payload whole, at its offset");
      pos_[p] = Offset(offset + 1);
      ++got;
    }
    KOBO_ASSERT(out.size() - before <= max_records, "a poll returns no more records than asked");
    return {};
  }

  Offset position(Partition p) const override {
    KOBO_ASSERT(p.value < pos_.size(), "the position of one of the reader's partitions");
    return pos_[p.value];
  }

 private:
  std::shared_ptr<ErrorSink>
      sink_;  // the handle's error callback writes here: declared first, destroyed last
  Handle rk_;
  std::vector<Offset> pos_;
};

class KafkaLogImpl final : public EventLog {
 public:
  explicit KafkaLogImpl(KafkaLogOptions o) : options_(std::move(o)), partitions_(options_.partitions) {
    KOBO_ASSERT(partitions_ > 0, "open_kafka_log() refuses a topic of no partitions");
  }

  ~KafkaLogImpl() override {
    {
      std::lock_guard lock(connect_mu_);
      stopping_ = true;
    }
    connect_cv_.notify_all();
    if (connector_.joinable()) connector_.join();
    KOBO_ASSERT(!connector_.joinable(), "the connector ends before the log it connects");
  }

  Status open() {
    KOBO_ASSERT(meta_ == nullptr && !connector_.joinable(), "a log opens once");
    if (options_.partitions > kPartitionsMax)
      return Status::error("kafka: at most " + std::to_string(kPartitionsMax) + " partitions");
    auto meta = new_handle(RD_KAFKA_CONSUMER, options_, reader_properties("kobo-meta"), sink_.get());
    if (!meta) return meta.status();
    meta_ = std::move(meta).value();
    if (options_.connect_in_background) {
      connector_ = std::thread([this] { connect_until_done(); });
      return {};
    }
    if (auto s = connect(Clock::now() + options_.connect_timeout); !s) return s;
    connected_.store(true, std::memory_order_release);
    KOBO_ASSERT(partitions_ > 0 && (!options_.writer || writers_.size() == partitions_),
                "a connected log knows its partitions, and a writer has a producer's place for each");
    return {};
  }

  std::uint32_t partitions() const override {
    KOBO_ASSERT(partitions_ > 0 && partitions_ <= kPartitionsMax,
                "a log serves 1 to kPartitionsMax partitions");
    return partitions_;
  }

  Status append(std::span<const EncodedEvent> batch) override {
    if (!connected_.load(std::memory_order_acquire)) return not_connected();
    std::lock_guard lock(write_mu_);
    if (!options_.writer) return Status::error("kafka: this log was opened to read only");
    if (fenced_.load()) return Status::error("kafka: another writer has taken the partitions");
    const auto deadline = Clock::now() + options_.append_timeout;

    std::map<std::uint32_t, std::vector<const EncodedEvent*>> slices;  // by partition, in order
    KOBO_ASSERT(writers_.size() == partitions_, "a connected writer has a producer per partition");
    for (const EncodedEvent& e : batch) {
      if (e.partition.value >= partitions_)
        return Status::error("kafka: no partition " + std::to_string(e.partition.value));
      KOBO_ASSERT(e.seq.value >= 1 && !e.bytes.empty(), "the writer appends sealed events");
      auto& slice = slices[e.partition.value];
      KOBO_ASSERT(slice.empty() || slice.back()->seq.value + 1 == e.seq.value,
                  "a partition's events are appended in chain order");
      slice.push_back(&e);
    }
    KOBO_ASSERT(
        std::accumulate(slices.begin(), slices.end(), std::size_t{0},
                        [](std::size_t n, const auto& s) { return n + s.second.size(); }) == batch.size(),
        "every event of the batch is in its partition's transaction, once");
    for (const auto& [p, events] : slices) {
      if (fenced_partition_[p].load())
        return Status::error("kafka partition " + std::to_string(p) + ": another writer has taken it");
      if (writers_[p].in_doubt)
        return Status::error("kafka partition " + std::to_string(p) + ": writer not reset");
      if (!writers_[p].rk)
        return Status::error("kafka partition " + std::to_string(p) + ": this writer has not acquired it");
    }
    // Every partition's transaction is produced before any commits, so their flushes overlap.
    for (const auto& [p, events] : slices) {
      writers_[p].in_doubt = true;  // until its transaction is committed
      if (auto s = produce(p, events); !s) return failed(p, s);
    }
    for (const auto& [p, events] : slices) {
      KOBO_ASSERT(writers_[p].in_doubt, "a transaction is in doubt until it commits");
      if (auto s = commit(p, events, deadline); !s) return failed(p, s);
      writers_[p].in_doubt = false;
    }
    for (const auto& [p, events] : slices) rd_kafka_poll(writers_[p].rk.get(), 0);  // serve its callbacks
    KOBO_ASSERT(std::ranges::none_of(slices, [&](const auto& s) { return writers_[s.first].in_doubt; }),
                "every transaction of an append that succeeded committed");
    return {};
  }

  Result<std::unique_ptr<LogReader>> open_reader(std::vector<Offset> start) override {
    if (start.size() != partitions_) return Status::error("reader needs one start offset per partition");
    Properties props = reader_properties("kobo-reader");
    // librdkafka's assign() needs a group id; the group is never joined and nothing is committed
    // to it: offsets live beside the views.
    props.emplace_back("group.id", kReaderGroup);
    // No sink: a reader's connections say nothing about whether the log connects (librdkafka
    // reports a SASL error when a reader's coordinator connection is closed at its destruction).
    auto rk = new_handle(RD_KAFKA_CONSUMER, options_, std::move(props), nullptr);
    if (!rk) return rk.status();
    rd_kafka_poll_set_consumer(rk.value().get());
    PartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(partitions_)));
    for (std::uint32_t p = 0; p < partitions_; ++p) {
      KOBO_ASSERT(start[p].value <= static_cast<std::uint64_t>(INT64_MAX), "an offset Kafka can hold");
      rd_kafka_topic_partition_list_add(list.get(), options_.topic.c_str(), static_cast<std::int32_t>(p))
          ->offset = static_cast<std::int64_t>(start[p].value);
    }
    KOBO_ASSERT(list->cnt == static_cast<int>(partitions_), "a reader is assigned every partition");
    if (const rd_kafka_resp_err_t err = rd_kafka_assign(rk.value().get(), list.get());
        err != RD_KAFKA_RESP_ERR_NO_ERROR)
      return Status::error(std::string("kafka: assigning partitions: ") + rd_kafka_err2str(err));
    return std::unique_ptr<LogReader>(
        std::make_unique<KafkaReader>(sink_, std::move(rk).value(), std::move(start)));
  }

  Result<std::vector<Offset>> end_offsets() override {
    if (!connected_.load(std::memory_order_acquire)) return not_connected();
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
      KOBO_ASSERT(list->cnt == static_cast<int>(partitions_), "an end offset is asked of every partition");
      for (int i = 0; i < list->cnt && err == RD_KAFKA_RESP_ERR_NO_ERROR; ++i) {
        const rd_kafka_topic_partition_t& tp = list->elems[i];
        // The brokers answer for the partitions asked of them; one they do not know is an error.
        if (tp.partition < 0 || static_cast<std::uint32_t>(tp.partition) >= partitions_) {
          err = RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION;
          break;
        }
        err = tp.err != RD_KAFKA_RESP_ERR_NO_ERROR ? tp.err
              : tp.offset < 0                      ? RD_KAFKA_RESP_ERR__NO_OFFSET
                                                   : RD_KAFKA_RESP_ERR_NO_ERROR;
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
          out[static_cast<std::size_t>(tp.partition)] = Offset(static_cast<std::uint64_t>(tp.offset));
      }
      KOBO_ASSERT(out.size() == partitions_, "an end offset per partition");
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return out;
      const bool moving = err == RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION ||
                          err == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE ||
                          err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
                          err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT;
      if (!moving || ms_left(deadline) == 0)
        return Status::error("kafka: end offsets of topic " + options_.topic + " at " + options_.brokers +
                                 ": " + rd_kafka_err2str(err),
                             moving || is_transient(err) ? ErrorKind::unavailable : ErrorKind::other);
      std::this_thread::sleep_for(milliseconds(100));
    }
  }

  Status reset_writer() override {
    if (!options_.writer) return {};
    if (!connected_.load(std::memory_order_acquire)) return not_connected();
    std::lock_guard lock(write_mu_);
    if (fenced_.load()) return Status::error("kafka: another writer has taken the partitions");
    // Within the append budget: the writer thread waits on this while commands queue up.
    const auto deadline = Clock::now() + std::min(options_.append_timeout, options_.connect_timeout);
    for (std::uint32_t p = 0; p < partitions_; ++p) {
      // A partition another writer has taken stays theirs: re-initialising its producer would
      // fence them back. Only acquire() (a new assignment) takes it again.
      if (!writers_[p].in_doubt || fenced_partition_[p].load()) continue;
      writers_[p].rk.reset();
      if (auto s = init_writer(p, deadline); !s) return s;
      KOBO_ASSERT(!writers_[p].in_doubt && writers_[p].rk != nullptr, "a reset writer can write");
    }
    // What another writer took stays in doubt until acquire() takes it back.
    for (std::uint32_t p = 0; p < partitions_; ++p)
      KOBO_ASSERT(!writers_[p].in_doubt || fenced_partition_[p].load(),
                  "after a reset, every partition this writer holds can be written");
    return {};
  }

  bool fenced() const override {
    const bool fenced = fenced_.load();
    // note_fatal(): a cluster node is fenced a partition at a time, never as a whole.
    KOBO_ASSERT(!fenced || !options_.acquire_partitions,
                "only a log that writes every partition is fenced whole");
    return fenced;
  }

  Status acquire(Partition partition) override {
    if (!options_.writer) return Status::error("kafka: this log was opened to read only");
    if (!connected_.load(std::memory_order_acquire)) return not_connected();
    const std::uint32_t p = partition.value;
    if (p >= partitions_) return Status::error("kafka: no partition " + std::to_string(p));
    std::lock_guard lock(write_mu_);
    if (fenced_.load()) return Status::error("kafka: another writer has taken the partitions");
    KOBO_ASSERT(writers_.size() == partitions_, "a connected writer has a producer's place per partition");
    writers_[p].rk.reset();  // an earlier producer of ours: the new one fences it anyway
    fenced_partition_[p].store(false);
    return init_writer(p, Clock::now() + options_.connect_timeout);
  }

  void release(Partition partition) override {
    const std::uint32_t p = partition.value;
    if (!options_.writer || p >= partitions_) return;
    std::lock_guard lock(write_mu_);
    if (p >= writers_.size()) return;  // not connected yet: nothing was acquired
    // No transaction of ours is open between appends (each commits or fails before append()
    // returns). One left open by a failed append is aborted by the next owner's acquire().
    writers_[p] = Writer{};
    KOBO_ASSERT(writers_[p].rk == nullptr && !writers_[p].in_doubt,
                "a released partition has no producer of ours");
  }

  bool fenced(Partition p) const override {
    return fenced_.load() || (p.value < partitions_ && fenced_partition_[p.value].load());
  }

  std::string fault() const override {
    if (connected_.load(std::memory_order_acquire)) return {};
    return not_connected().message();
  }

 private:
  struct Writer {
    Handle rk;
    bool in_doubt = false;  // an append failed before committing: re-initialise before writing
  };

  // The background connector's body: connect() until it succeeds, a permanent error stops it, or
  // the log is destroyed. Each attempt's problem is what not_connected() reports meanwhile.
  void connect_until_done() {
    KOBO_ASSERT(options_.connect_in_background, "only a log that connects in the background has a connector");
    for (int attempt = 1;; ++attempt) {
      Status s = connect(Clock::now() + options_.connect_timeout);
      if (s) {
        connected_.store(true, std::memory_order_release);
        log::info("connected to Kafka", {{"brokers", options_.brokers}, {"topic", options_.topic}});
        return;
      }
      std::unique_lock lock(connect_mu_);
      if (stopping_) return;
      if (s.kind() != ErrorKind::unavailable) {
        refused_ = s.message();
        log::error("Kafka refuses this service; it will not connect", {{"error", s.message()}});
        return;
      }
      problem_ = s.message();
      if (attempt == 1 || attempt % 30 == 0)
        log::warn("Kafka cannot be reached yet; trying again every second", {{"error", s.message()}});
      connect_cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; });
      if (stopping_) return;
    }
  }

  // Why an operation that needs the brokers cannot run yet (unavailable), or never will.
  Status not_connected() const {
    std::lock_guard lock(connect_mu_);
    if (!refused_.empty()) return Status::error(refused_);
    return Status::error("kafka: not connected to topic " + options_.topic + " at " + options_.brokers +
                             (problem_.empty() ? std::string(" yet") : ": " + problem_),
                         ErrorKind::unavailable);
  }

  bool stopping() const {
    std::lock_guard lock(connect_mu_);
    return stopping_;
  }

  // One attempt to reach the topic before `deadline`: its metadata, the topic created when it is
  // missing (a writer that may), its partition count checked, and for a writer one transactional
  // producer per partition. ErrorKind::unavailable: a broker coming up may clear it; any other
  // error names what no retry fixes.
  Status connect(Clock::time_point deadline) {
    auto n = describe_topic(deadline, /*just_created=*/false);
    if (!n) return n.status();
    if (n.value() == 0) {
      if (!options_.writer || !options_.create_topic)
        return Status::error("kafka: there is no topic " + options_.topic + " at " + options_.brokers);
      if (auto s = create_topic(deadline); !s) return s;
      n = describe_topic(deadline, /*just_created=*/true);
      if (!n) return n.status();
    } else {
      warn_on_retention(deadline);
    }
    // describe_topic() answers 0 only for a topic it did not just create.
    KOBO_ASSERT(n.value() > 0, "a topic found or made has a partition at least");
    if (n.value() > kPartitionsMax)
      return Status::error("kafka: topic " + options_.topic + " has " + std::to_string(n.value()) +
                           " partitions; at most " + std::to_string(kPartitionsMax) + " are served");
    if (options_.connect_in_background && n.value() != partitions_)
      return Status::error("kafka: topic " + options_.topic + " has " + std::to_string(n.value()) +
                           " partitions, but this data dir's views are of " + std::to_string(partitions_) +
                           "; use the topic they were built from, or another --data-dir");
    if (!options_.connect_in_background) {
      partitions_ = n.value();
      if (options_.writer && partitions_ != options_.partitions)
        log::warn(
            "the Kafka topic exists with another partition count; the service uses the topic's",
            {{"topic", options_.topic}, {"partitions", partitions_}, {"configured", options_.partitions}});
    }
    KOBO_ASSERT(partitions_ > 0, "a topic has a partition at least");
    if (!options_.writer) return {};
    std::lock_guard lock(write_mu_);
    writers_.clear();
    writers_.resize(partitions_);
    // A cluster node writes only the partitions it is assigned, each acquire()d when it is:
    // initialising every producer here would fence the other nodes' writers.
    if (options_.acquire_partitions) return {};
    for (std::uint32_t p = 0; p < partitions_; ++p) {
      if (auto s = init_writer(p, deadline); !s) return s;
    }
    KOBO_ASSERT(std::ranges::none_of(writers_, [](const Writer& w) { return w.in_doubt || w.rk == nullptr; }),
                "a connected writer has a producer ready per partition");
    return {};
  }

  // The topic's partition count once every partition has a leader (a topic just created has none
  // for a moment); 0 when the metadata says there is no such topic (unless it was just created).
  Result<std::uint32_t> describe_topic(Clock::time_point deadline, bool just_created) {
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(meta_.get(), options_.topic.c_str(), nullptr);
    const auto done = [rkt](Result<std::uint32_t> r) {
      rd_kafka_topic_destroy(rkt);
      return r;
    };
    for (;;) {
      const rd_kafka_metadata_t* md = nullptr;
      // Short requests, so that a refusal reported meanwhile (a wrong password) ends the wait.
      const rd_kafka_resp_err_t err =
          rd_kafka_metadata(meta_.get(), 0, rkt, &md, std::clamp(ms_left(deadline), 1, 1'000));
      rd_kafka_poll(meta_.get(), 0);  // serves the error callback
      if (const std::string refusal = sink_->refusal(); !refusal.empty())
        return done(Status::error("kafka: the brokers at " + options_.brokers +
                                  " refuse this client: " + refusal +
                                  " (check the TLS and SASL settings: --kafka-ca-file, "
                                  "--kafka-sasl-mechanism, --kafka-sasl-username, --kafka-sasl-password)"));
      std::string problem;
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        problem = rd_kafka_err2str(err);
      } else {
        KOBO_ASSERT(md != nullptr, "librdkafka answers a metadata request that succeeded with the metadata");
        const rd_kafka_resp_err_t topic_err =
            md->topic_cnt == 1 ? md->topics[0].err : RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
        std::uint32_t n = 0;
        if (topic_err == RD_KAFKA_RESP_ERR_NO_ERROR && md->topics[0].partition_cnt > 0) {
          n = static_cast<std::uint32_t>(md->topics[0].partition_cnt);
          for (int i = 0; i < md->topics[0].partition_cnt; ++i)
            if (md->topics[0].partitions[i].leader < 0 ||
                md->topics[0].partitions[i].err != RD_KAFKA_RESP_ERR_NO_ERROR)
              n = 0;
        }
        rd_kafka_metadata_destroy(md);
        if (n > 0) return done(n);
        if (topic_err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART && !just_created) return done(0u);
        if (topic_err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
          return done(Status::error(
              "kafka: the brokers at " + options_.brokers + " deny this client topic " + options_.topic +
              ": grant its principal DESCRIBE, READ and WRITE on Topic " + options_.topic + " (ACLs)"));
        problem = topic_err == RD_KAFKA_RESP_ERR_NO_ERROR ? "a partition has no leader yet"
                                                          : rd_kafka_err2str(topic_err);
      }
      {
        std::lock_guard lock(connect_mu_);
        problem_ = problem;
      }
      if (ms_left(deadline) == 0 || stopping())
        return done(Status::error(
            "kafka: cannot reach topic " + options_.topic + " at " + options_.brokers + ": " + problem,
            ErrorKind::unavailable));
      std::this_thread::sleep_for(milliseconds(100));
    }
  }

  // CreateTopics, for a topic the metadata says is missing: an event log keeps everything, so no
  // retention limit; the replication factor is the cluster's default.
  Status create_topic(Clock::time_point deadline) {
    KOBO_ASSERT(options_.writer && options_.create_topic, "only a writer that may creates the topic");
    KOBO_ASSERT(options_.partitions > 0 && options_.partitions <= kPartitionsMax,
                "open() refuses a partition count the topic cannot be made with");
    char err[512];
    rd_kafka_NewTopic_t* topic = rd_kafka_NewTopic_new(
        options_.topic.c_str(), static_cast<int>(options_.partitions), -1, err, sizeof err);
    if (topic == nullptr) return Status::error("kafka topic " + options_.topic + ": " + err);
    rd_kafka_NewTopic_set_config(topic, "retention.ms", "-1");
    rd_kafka_NewTopic_set_config(topic, "retention.bytes", "-1");
    rd_kafka_AdminOptions_t* admin = rd_kafka_AdminOptions_new(meta_.get(), RD_KAFKA_ADMIN_OP_CREATETOPICS);
    const int timeout = std::max(ms_left(deadline), 1);
    rd_kafka_AdminOptions_set_request_timeout(admin, timeout, err, sizeof err);
    rd_kafka_AdminOptions_set_operation_timeout(admin, timeout, err, sizeof err);
    rd_kafka_queue_t* queue = rd_kafka_queue_new(meta_.get());
    rd_kafka_CreateTopics(meta_.get(), &topic, 1, admin, queue);
    rd_kafka_event_t* ev = rd_kafka_queue_poll(queue, timeout + 1'000);

    const std::string what = "kafka: creating topic " + options_.topic + " at " + options_.brokers;
    const auto refused = [&](rd_kafka_resp_err_t code, const std::string& message) {
      if (code == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
          code == RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED)
        return Status::error(what + " was denied (" + message +
                             "): grant this client's principal CREATE on Topic " + options_.topic +
                             ", or create the topic beforehand (" + std::to_string(options_.partitions) +
                             " partitions, retention.ms=-1)");
      return Status::error(what + ": " + message,
                           is_transient(code) ? ErrorKind::unavailable : ErrorKind::other);
    };
    Status result;
    if (ev == nullptr) {
      result = Status::error(what + " timed out", ErrorKind::unavailable);
    } else if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      result = refused(rd_kafka_event_error(ev), rd_kafka_event_error_string(ev));
    } else {
      std::size_t n = 0;
      const rd_kafka_topic_result_t** results =
          rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
      for (std::size_t i = 0; i < n; ++i) {
        const rd_kafka_resp_err_t code = rd_kafka_topic_result_error(results[i]);
        if (code == RD_KAFKA_RESP_ERR_NO_ERROR) {
          log::info("created the Kafka topic",
                    {{"topic", options_.topic}, {"partitions", options_.partitions}});
        } else if (code != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
          const char* message = rd_kafka_topic_result_error_string(results[i]);
          result = refused(code, message != nullptr ? message : rd_kafka_err2str(code));
        }
      }
    }
    if (ev != nullptr) rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(queue);
    rd_kafka_AdminOptions_destroy(admin);
    rd_kafka_NewTopic_destroy(topic);
    return result;
  }

  // An existing topic is used as it is, but one that deletes old records would lose the ledger:
  // say so. A principal that may not read the topic's configuration is told it could not be checked.
  void warn_on_retention(Clock::time_point deadline) {
    KOBO_ASSERT(meta_ != nullptr, "the metadata handle is made before the topic is checked");
    char err[512];
    rd_kafka_ConfigResource_t* resource =
        rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, options_.topic.c_str());
    rd_kafka_AdminOptions_t* admin =
        rd_kafka_AdminOptions_new(meta_.get(), RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
    // Only a warning depends on it: a small part of the budget, the rest is the producers'.
    const int timeout = std::clamp(ms_left(deadline) / 4, 1, 3'000);
    rd_kafka_AdminOptions_set_request_timeout(admin, timeout, err, sizeof err);
    rd_kafka_queue_t* queue = rd_kafka_queue_new(meta_.get());
    rd_kafka_DescribeConfigs(meta_.get(), &resource, 1, admin, queue);
    rd_kafka_event_t* ev = rd_kafka_queue_poll(queue, timeout + 1'000);
    std::string problem = "no answer";
    if (ev != nullptr && rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      problem = rd_kafka_event_error_string(ev);
    } else if (ev != nullptr) {
      std::size_t n = 0;
      const rd_kafka_ConfigResource_t** results =
          rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev), &n);
      if (n == 1 && rd_kafka_ConfigResource_error(results[0]) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        problem.clear();
        std::size_t count = 0;
        const rd_kafka_ConfigEntry_t** entries = rd_kafka_ConfigResource_configs(results[0], &count);
        for (std::size_t i = 0; i < count; ++i) {
          const std::string name = rd_kafka_ConfigEntry_name(entries[i]);
          const char* value = rd_kafka_ConfigEntry_value(entries[i]);
          if ((name == "retention.ms" || name == "retention.bytes") && value != nullptr &&
              std::string_view(value) != "-1")
            log::warn(
                "the Kafka topic deletes old records, but the event log is the ledger and must keep them "
                "all: set retention.ms and retention.bytes to -1",
                {{"topic", options_.topic}, {"setting", name}, {"value", value}});
        }
      } else if (n == 1) {
        problem = rd_kafka_err2str(rd_kafka_ConfigResource_error(results[0]));
      }
    }
    if (!problem.empty())
      log::info("the Kafka topic's retention could not be checked",
                {{"topic", options_.topic}, {"error", problem}});
    if (ev != nullptr) rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(queue);
    rd_kafka_AdminOptions_destroy(admin);
    rd_kafka_ConfigResource_destroy(resource);
  }

  std::string transactional_id(std::uint32_t p) const {
    KOBO_ASSERT(p < partitions_, "a producer of one of the topic's partitions");
    KOBO_ASSERT(!options_.transactional_id_prefix.empty(), "a writer's transactional ids are its own");
    return options_.transactional_id_prefix + "." + options_.topic + "." + std::to_string(p);
  }

  // A transactional producer for partition p. init_transactions() fences every earlier producer
  // with the same transactional.id and settles its open transaction, committed or aborted.
  Status init_writer(std::uint32_t p, Clock::time_point deadline) {
    KOBO_ASSERT(options_.writer && p < writers_.size(), "a producer is made for a writer's partition");
    const std::string id = transactional_id(p);
    auto rk = new_handle(RD_KAFKA_PRODUCER, options_,
                         {{"client.id", "kobo-writer-" + std::to_string(p)},
                          {"transactional.id", id},
                          {"enable.idempotence", "true"},
                          {"acks", "all"},
                          {"partitioner", "murmur2_random"},
                          {"linger.ms", "1"},
                          {"transaction.timeout.ms", "10000"},
                          {"message.timeout.ms", "10000"}},
                         sink_.get());
    if (!rk) return rk.status();
    if (Error e(rd_kafka_init_transactions(rk.value().get(), std::max(ms_left(deadline), 1))); e) {
      writers_[p].in_doubt = true;
      const rd_kafka_resp_err_t code = rd_kafka_error_code(e.get());
      rd_kafka_poll(rk.value().get(), 0);  // serves the error callback
      const std::string what =
          "kafka partition " + std::to_string(p) + ": init_transactions at " + options_.brokers;
      if (const std::string refusal = sink_->refusal(); !refusal.empty())
        return Status::error(what + ": the brokers refuse this client: " + refusal);
      if (code == RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED ||
          code == RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED)
        return Status::error(what + " was denied (" + rd_kafka_error_string(e.get()) +
                             "): grant this client's principal WRITE and DESCRIBE on TransactionalId " + id +
                             " (or on the prefix " + options_.transactional_id_prefix + "." + options_.topic +
                             ".)");
      const bool retry = rd_kafka_error_is_retriable(e.get()) || is_transient(code) ||
                         (!rd_kafka_error_is_fatal(e.get()) && !rd_kafka_error_txn_requires_abort(e.get()));
      return Status::error(what + ": " + rd_kafka_error_string(e.get()),
                           retry ? ErrorKind::unavailable : ErrorKind::other);
    }
    // The topic's metadata now, not at the first produce: a producer that meets a topic it does
    // not know asks for it only at its next one-second scan, so the first transaction (a
    // takeover's WriterStarted) would wait about a second. A failure only leaves that wait.
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk.value().get(), options_.topic.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    if (rd_kafka_metadata(rk.value().get(), 0, rkt, &md, std::clamp(ms_left(deadline), 1, 5'000)) ==
            RD_KAFKA_RESP_ERR_NO_ERROR &&
        md != nullptr)
      rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    writers_[p] = Writer{std::move(rk).value(), false};
    KOBO_ASSERT(writers_[p].rk != nullptr && !writers_[p].in_doubt, "a producer made is ready to write");
    return {};
  }

  Status produce(std::uint32_t p, const std::vector<const EncodedEvent*>& events) {
    KOBO_ASSERT(!events.empty() && writers_[p].in_doubt,
                "a transaction of events, in doubt until it commits");
    rd_kafka_t* rk = writers_[p].rk.get();
    KOBO_ASSERT(rk != nullptr, "a partition's producer exists while its writer is connected");
    if (Error e(rd_kafka_begin_transaction(rk)); e) {
      note_fatal(p, e.get());
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
    KOBO_ASSERT(writers_[p].in_doubt, "produced events are in doubt until their transaction commits");
    return {};
  }

  // Commits partition p's transaction. An abortable error aborts it and produces and commits
  // the same events again, while the append's time budget lasts.
  Status commit(std::uint32_t p, const std::vector<const EncodedEvent*>& events, Clock::time_point deadline) {
    rd_kafka_t* rk = writers_[p].rk.get();
    KOBO_ASSERT(rk != nullptr && !events.empty(), "a produced transaction commits");
    for (;;) {
      Error e(rd_kafka_commit_transaction(rk, std::max(ms_left(deadline), 1)));
      if (!e) return {};
      note_fatal(p, e.get());
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
    KOBO_ASSERT(rk != nullptr && writers_[p].in_doubt, "only a transaction in doubt is aborted");
    for (;;) {
      if (Error a(rd_kafka_abort_transaction(rk, std::max(ms_left(deadline), 1))); a) {
        note_fatal(p, a.get());
        return error_status("abort_transaction", a.get());
      }
      auto s = produce(p, events);
      if (s || fenced_partition_[p].load() || ms_left(deadline) == 0) return s;
      std::this_thread::sleep_for(milliseconds(std::min(100, ms_left(deadline))));
    }
  }

  rd_kafka_headers_t* cloud_event_headers(const EncodedEvent& e) const {
    KOBO_ASSERT(e.seq.value >= 1, "a CloudEvents id names an appended event's seq");
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
    KOBO_ASSERT(h != nullptr, "an event's CloudEvents headers");
    return h;
  }

  // A fatal error of partition p's producer (fenced: another writer initialised its
  // transactional.id). One log writing every partition stops writing for good; a cluster node's
  // stops writing that partition until it acquire()s it again.
  void note_fatal(std::uint32_t p, const rd_kafka_error_t* e) {
    KOBO_ASSERT(e != nullptr, "a fatal error is one librdkafka returned");
    const rd_kafka_resp_err_t code = rd_kafka_error_code(e);
    if (rd_kafka_error_is_fatal(e) || code == RD_KAFKA_RESP_ERR__FENCED ||
        code == RD_KAFKA_RESP_ERR_PRODUCER_FENCED || code == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH) {
      if (options_.acquire_partitions) {
        if (!fenced_partition_[p].exchange(true))
          log::warn("kafka: another writer has taken the partition; this one writes nothing more to it",
                    {{"partition", p}, {"error", rd_kafka_error_string(e)}});
      } else if (!fenced_.exchange(true)) {
        log::error("kafka: the writer is fenced or failed fatally; it writes nothing more",
                   {{"error", rd_kafka_error_string(e)}});
      }
    }
    KOBO_ASSERT(!options_.acquire_partitions || !fenced_.load(),
                "a cluster node is fenced a partition at a time");
  }

  Status failed(std::uint32_t p, const Status& s) {
    KOBO_ASSERT(!s.ok() && writers_[p].in_doubt, "a failed append leaves its partition's writer in doubt");
    return Status::error("kafka partition " + std::to_string(p) + ": " + s.message());
  }

  const KafkaLogOptions options_;
  // Written by connect() before connected_ is set (or before open() returns), read-only after.
  std::uint32_t partitions_ = 0;
  const std::shared_ptr<ErrorSink> sink_ = std::make_shared<ErrorSink>();  // outlives every handle
  Handle meta_;  // metadata, topic creation and end offsets
  std::atomic<bool> connected_{false};
  mutable std::mutex connect_mu_;
  std::condition_variable connect_cv_;
  bool stopping_ = false;  // guarded by connect_mu_
  std::string problem_;    // guarded by connect_mu_: why the last attempt to connect failed
  std::string refused_;    // guarded by connect_mu_: a permanent refusal; nothing connects after it
  std::thread connector_;  // with connect_in_background, until connected or refused
  std::mutex write_mu_;
  std::vector<Writer> writers_;  // guarded by write_mu_
  std::atomic<bool> fenced_{false};
  // With acquire_partitions: which partitions another writer has taken since they were acquired.
  std::unique_ptr<std::atomic<bool>[]> fenced_partition_ =
      std::make_unique<std::atomic<bool>[]>(kPartitionsMax);
};

}  // namespace

Result<std::unique_ptr<EventLog>> open_kafka_log(const KafkaLogOptions& options) {
  if (options.brokers.empty()) return Status::error("kafka: no brokers given");
  if (options.partitions == 0) return Status::error("kafka: a topic needs at least one partition");
  auto log = std::make_unique<KafkaLogImpl>(options);
  if (auto s = log->open(); !s) return s;
  KOBO_ASSERT(log->partitions() > 0, "an open log has a partition at least");
  return std::unique_ptr<EventLog>(std::move(log));
}

}  // namespace kobo
