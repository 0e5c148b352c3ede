#pragma once
// Process metrics in the Prometheus text format. Any component registers counters, gauges and
// histograms by name; the registry renders them for GET /metrics (docs/metrics.md).
//
// Updating a metric is one or two relaxed atomic operations, so it belongs on hot paths; looking
// one up by name takes a lock, so callers look up once and keep the reference (references stay
// valid for the registry's lifetime).
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "core/thread_annotations.hpp"

namespace sika::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

// A monotonically increasing count.
class Counter {
 public:
  void inc(std::uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  // For totals kept elsewhere (another component's statistics), copied at scrape time.
  void set(std::uint64_t total) { value_.store(total, std::memory_order_relaxed); }
  std::uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

// A value that goes up and down (queue depth, lag).
class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void add(double d) { value_.fetch_add(d, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Counts observations into fixed buckets (upper bounds, ascending) plus their sum.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  const std::vector<double>& bounds() const { return bounds_; }
  // Per-bucket counts (not cumulative); the last one is the +Inf bucket.
  std::vector<std::uint64_t> counts() const;
  double sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;
  std::atomic<double> sum_{0};
};

// Latency buckets in seconds, 100 µs to 10 s.
std::vector<double> latency_buckets();
// Size buckets, 1 to 512 (powers of two).
std::vector<double> size_buckets();

class Registry {
 public:
  // Returns the series `name{labels}`, creating it (and its family, with `help`) on first use.
  // A name always keeps the kind it was first registered with; asking for another kind is a
  // programming error (std::logic_error). Names and label names must match [a-zA-Z_:][a-zA-Z0-9_:]*.
  Counter& counter(std::string_view name, std::string_view help, const Labels& labels = {});
  Gauge& gauge(std::string_view name, std::string_view help, const Labels& labels = {});
  Histogram& histogram(std::string_view name, std::string_view help, const std::vector<double>& bounds,
                       const Labels& labels = {});

  // Runs `collect` at the start of every render(): for values read elsewhere (database counts,
  // another component's statistics). It may register and set metrics; it must not call render().
  void on_scrape(std::function<void()> collect);

  // The exposition text (format 0.0.4): families sorted by name, series by labels.
  std::string render();

 private:
  enum class Kind { counter, gauge, histogram };
  struct Series {
    Labels labels;
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
  };
  struct Family {
    Kind kind;
    std::string help;
    std::map<std::string, Series> series;  // by rendered label text
  };
  Series& series(std::string_view name, std::string_view help, Kind kind, const Labels& labels) REQUIRES(mu_);

  sika::Mutex mu_;
  std::map<std::string, Family, std::less<>> families_ GUARDED_BY(mu_);
  sika::Mutex collect_mu_;
  std::vector<std::function<void()>> collectors_ GUARDED_BY(collect_mu_);
};

// The process's registry: what GET /metrics renders. Components register their metrics here.
Registry& registry();

}  // namespace sika::metrics
