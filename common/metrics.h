#pragma once
// Prometheus metrics: counters, gauges and histograms in one process-wide registry, rendered
// in the text exposition format (version 0.0.4) by GET /metrics.
//
// Thread safety: registering (counter(), gauge(), histogram()) takes a mutex; the returned
// references stay valid for the life of the process and their updates are lock-free atomics,
// so hot paths look a metric up once and keep the reference.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace kobo::metrics {

class Counter {
 public:
  void inc(std::uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  std::uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double v);
  void render(std::string& out, std::string_view name, std::string_view labels) const;
  std::uint64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_;  // one per bound, not cumulative
  std::atomic<std::uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

// Bucket bounds for latencies in seconds (100 µs .. 10 s) and for batch sizes (1 .. 16384).
std::vector<double> latency_buckets();
std::vector<double> size_buckets();

class Registry {
 public:
  // `labels` is the rendered label set without braces, e.g. `route="/v1/x",status="200"`.
  Counter& counter(std::string_view name, std::string_view help, std::string_view labels = {});
  Gauge& gauge(std::string_view name, std::string_view help, std::string_view labels = {});
  Histogram& histogram(std::string_view name, std::string_view help, std::string_view labels = {},
                       std::vector<double> upper_bounds = latency_buckets());
  std::string render() const;

 private:
  struct Family {
    std::string type;
    std::string help;
    std::map<std::string, std::unique_ptr<Counter>> counters;
    std::map<std::string, std::unique_ptr<Gauge>> gauges;
    std::map<std::string, std::unique_ptr<Histogram>> histograms;
  };
  Family& family(std::string_view name, std::string_view help, std::string_view type);

  mutable std::mutex mu_;
  std::map<std::string, Family, std::less<>> families_;
};

// The process-wide registry.
Registry& registry();

// Escapes a label value for the text format (backslash, quote, newline).
std::string escape_label(std::string_view value);

}  // namespace kobo::metrics
