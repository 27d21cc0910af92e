#include "common/metrics.h"

#include <algorithm>
#include <cstdio>

#include "common/assert.h"

namespace kobo::metrics {
namespace {

std::string format_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

void add_atomic(std::atomic<double>& a, double v) {
  double cur = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
  }
}

std::string braces(std::string_view labels) {
  return labels.empty() ? std::string() : "{" + std::string(labels) + "}";
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)),
      buckets_(std::make_unique<std::atomic<std::uint64_t>[]>(bounds_.size())) {
  KOBO_ASSERT(std::is_sorted(bounds_.begin(), bounds_.end()), "histogram bounds must be sorted");
  for (std::size_t i = 0; i < bounds_.size(); ++i) buckets_[i].store(0);
}

void Histogram::observe(double v) {
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), v);
  if (it != bounds_.end()) buckets_[it - bounds_.begin()].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  add_atomic(sum_, v);
}

void Histogram::render(std::string& out, std::string_view name, std::string_view labels) const {
  const std::string sep = labels.empty() ? "" : std::string(labels) + ",";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    out += std::string(name) + "_bucket{" + sep + "le=\"" + format_double(bounds_[i]) + "\"} " +
           std::to_string(cumulative) + "\n";
  }
  const std::uint64_t n = count_.load(std::memory_order_relaxed);
  out += std::string(name) + "_bucket{" + sep + "le=\"+Inf\"} " + std::to_string(n) + "\n";
  out += std::string(name) + "_sum" + braces(labels) + " " + format_double(sum_.load()) + "\n";
  out += std::string(name) + "_count" + braces(labels) + " " + std::to_string(n) + "\n";
}

std::vector<double> latency_buckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

std::vector<double> size_buckets() {
  return {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
}

Registry::Family& Registry::family(std::string_view name, std::string_view help, std::string_view type) {
  auto it = families_.find(name);
  if (it == families_.end()) {
    it = families_.emplace(std::string(name), Family{}).first;
    it->second.type = type;
    it->second.help = help;
  }
  KOBO_ASSERT(it->second.type == type, "metric registered twice with different types");
  return it->second;
}

Counter& Registry::counter(std::string_view name, std::string_view help, std::string_view labels) {
  std::lock_guard lock(mu_);
  auto& slot = family(name, help, "counter").counters[std::string(labels)];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Gauge& Registry::gauge(std::string_view name, std::string_view help, std::string_view labels) {
  std::lock_guard lock(mu_);
  auto& slot = family(name, help, "gauge").gauges[std::string(labels)];
  if (!slot) slot = std::make_unique<Gauge>();
  return *slot;
}

Histogram& Registry::histogram(std::string_view name, std::string_view help, std::string_view labels,
                               std::vector<double> upper_bounds) {
  std::lock_guard lock(mu_);
  auto& slot = family(name, help, "histogram").histograms[std::string(labels)];
  if (!slot) slot = std::make_unique<Histogram>(std::move(upper_bounds));
  return *slot;
}

std::string Registry::render() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    out.append("# HELP ")
        .append(name)
        .append(" ")
        .append(f.help)
        .append("\n# TYPE ")
        .append(name)
        .append(" ");
    out.append(f.type).append("\n");
    for (const auto& [labels, c] : f.counters)
      out += name + braces(labels) + " " + std::to_string(c->value()) + "\n";
    for (const auto& [labels, g] : f.gauges)
      out += name + braces(labels) + " " + format_double(g->value()) + "\n";
    for (const auto& [labels, h] : f.histograms) h->render(out, name, labels);
  }
  return out;
}

Registry& registry() {
  static Registry r;
  return r;
}

std::string escape_label(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

}  // namespace kobo::metrics
