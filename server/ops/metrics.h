// revkv server — metrics registry and Prometheus text exposition (public header).
//
// Two kinds of figures reach /metrics:
//  - metrics the server owns (request counts and latencies by method, ...): Counter, Gauge and
//    Histogram objects registered once in a MetricsRegistry, updated lock-free from any thread;
//  - figures owned elsewhere (GC counters and pause histograms, heap bytes, STM and WAL figures): a
//    collector callback registered with AddCollector reads them at scrape time and writes them through
//    a MetricWriter.
// MetricsRegistry::Render() produces text format 0.0.4 (what Prometheus scrapes): every family once,
// sorted by name, with its "# HELP" and "# TYPE" lines; histograms as cumulative `_bucket{le="..."}`
// samples ending with le="+Inf", then `_sum` and `_count`.
//
// Conventions (checked where they can be, so `promtool check metrics` passes): names are
// `revkv_<what>_<unit>` in base units (seconds, bytes) and snake_case; counter names end in `_total` and
// no other metric's does; only histograms produce names ending in `_bucket`, `_sum` or `_count`; the
// label names "le" and "quantile" are reserved; every family has help text; histogram bucket bounds are
// in seconds. A bad name or label name, missing help, a name registered twice or a wrong number of
// label values is a programmer error and aborts with a message ("revkv metrics: ...").
//
// Typical use:
//   MetricsRegistry registry;
//   auto& requests = registry.AddCounterFamily("revkv_grpc_requests_total", "gRPC requests.", {"method"});
//   auto& latency = registry.AddHistogramFamily("revkv_grpc_request_duration_seconds",
//                                               "gRPC request latency.", {"method"}, LatencyBuckets());
//   Counter& puts = requests.WithLabels({"Put"});          // cache children on hot paths
//   Histogram& put_latency = latency.WithLabels({"Put"});
//   puts.Increment();  put_latency.Observe(0.0012);
//   registry.AddCollector([](MetricWriter& out) {
//     out.WriteGauge("revkv_heap_bytes", "Heap bytes in use.", HeapBytesNow());
//   });
//   std::string text = registry.Render();  // serve with content type MetricsRegistry::kContentType
//
// Sections: 1. owned metrics  2. families  3. collector output  4. the registry
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "runtime/histogram/histogram.h"

namespace revkv::server {

class MetricWriter;

enum class MetricType { kCounter, kGauge, kHistogram };

// A set of cumulative histogram buckets: what a Histogram holds at one instant, or what a collector
// converts a histogram owned elsewhere into.
struct CumulativeHistogram {
  std::vector<double> upper_bounds;         // seconds, strictly increasing; +Inf is implied, not listed
  std::vector<uint64_t> cumulative_counts;  // [i]: observations <= upper_bounds[i]; same size as above
  uint64_t count = 0;                       // all observations (the +Inf bucket)
  double sum = 0;                           // sum of observations, in seconds

  // Builds buckets at `upper_bounds_seconds` from a histogram recorded in nanoseconds, e.g. the GC's
  // HistogramSnapshot: pass [&](uint64_t ns) { return snapshot.CountAtOrBelow(ns); }, its count and
  // sum_nanos. Each bound is rounded to the nearest nanosecond.
  static CumulativeHistogram FromNanos(const std::vector<double>& upper_bounds_seconds,
                                       const std::function<uint64_t(uint64_t)>& count_at_or_below_nanos,
                                       uint64_t count, uint64_t sum_nanos);
};

// Bucket bounds in seconds for request latencies: 100 us to 10 s in 1-2.5-5 steps.
const std::vector<double>& LatencyBuckets();
// Bucket bounds in seconds for GC pauses and time-to-safepoint: 10 us to 1 s in 1-2.5-5 steps.
const std::vector<double>& PauseBuckets();
// `count` bounds: start, start*factor, start*factor^2, ... (start > 0, factor > 1, count >= 1).
std::vector<double> ExponentialBuckets(double start, double factor, int count);

// ---------------------------------------------------------------------------------------------------
// 1. Owned metrics
// ---------------------------------------------------------------------------------------------------
// All updates use relaxed atomics: each metric is an independent statistic, a scrape needs no order
// between them, and a scrape that races with an update sees it or not.

// A monotonically increasing count. Thread-safe; Increment is wait-free.
class Counter {
 public:
  void Increment(uint64_t delta = 1) { value_.fetch_add(delta, std::memory_order_relaxed); }
  uint64_t Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A value that goes up and down. Thread-safe; Set is wait-free, Add is lock-free.
class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Add(double delta) { value_.fetch_add(delta, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// A distribution over fixed buckets (upper bounds in seconds). Thread-safe; Observe is lock-free. The
// counting is runtime::Histogram's (the code base's one histogram) over nanoseconds, laid out with these
// bounds, so each bucket is exact. Snapshot reads each bucket atomically but not all at once: it may
// miss observations made while it runs, and `sum` may include one whose bucket it missed. `count` is
// always the sum of the buckets, so the exposition is self-consistent.
class Histogram {
 public:
  // `upper_bounds` must be finite, at least 0 and strictly increasing, also once rounded to whole
  // nanoseconds (a trailing +Inf is dropped); aborts if not.
  explicit Histogram(std::vector<double> upper_bounds);

  // Records one observation in seconds, to the nanosecond; NaN is ignored, a negative value counts as 0.
  void Observe(double seconds);
  // Records one observation given in nanoseconds (e.g. a steady_clock difference).
  void ObserveNanos(int64_t nanos) { histogram_.Record(static_cast<uint64_t>(std::max<int64_t>(0, nanos))); }

  CumulativeHistogram Snapshot() const;
  const std::vector<double>& upper_bounds() const { return upper_bounds_; }

 private:
  const std::vector<double> upper_bounds_;
  runtime::Histogram histogram_;  // nanoseconds; bucket i is upper_bounds_[i], the last +Inf
};

// ---------------------------------------------------------------------------------------------------
// 2. Families
// ---------------------------------------------------------------------------------------------------

namespace internal {
// Name, help and label names shared by every child of a family.
struct FamilyInfo {
  std::string name;
  std::string help;
  std::vector<std::string> label_names;
};
// What the registry holds for each registered family.
class FamilyBase {
 public:
  virtual ~FamilyBase() = default;
  virtual void Write(MetricWriter& out) const = 0;
};
// Writes one child's samples. Defined in metrics.cc.
void WriteChild(MetricWriter& out, const FamilyInfo& info, const std::vector<std::string>& values,
                const Counter& metric);
void WriteChild(MetricWriter& out, const FamilyInfo& info, const std::vector<std::string>& values,
                const Gauge& metric);
void WriteChild(MetricWriter& out, const FamilyInfo& info, const std::vector<std::string>& values,
                const Histogram& metric);
[[noreturn]] void LabelCountMismatch(const FamilyInfo& info, size_t given);
// Abort unless `name` is a valid metric name following the suffix rules for `type` (metric_writer.cc).
void CheckFamilyName(std::string_view name, MetricType type);
// Abort unless `label` is a valid, unreserved label name (`family` is for the message).
void CheckLabelName(std::string_view family, std::string_view label);
// The sample names a family produces: `name`, or `name`_bucket, _sum and _count for a histogram.
std::vector<std::string> SampleNames(std::string_view name, MetricType type);

// Orders label-value vectors, comparing std::string with std::string_view elements.
struct LabelValuesLess {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                        [](std::string_view x, std::string_view y) { return x < y; });
  }
};
}  // namespace internal

// A metric with labels: one child per distinct tuple of label values, created on first use and kept
// for the registry's lifetime. Created by MetricsRegistry::Add*Family. Thread-safe.
template <class Metric>
class Family final : public internal::FamilyBase {
 public:
  Family(internal::FamilyInfo info, std::function<std::unique_ptr<Metric>()> make)
      : info_(std::move(info)), make_(std::move(make)) {}

  // Returns the child for `values` (one per label name, in order), creating it on first use. The
  // reference stays valid as long as the registry. Takes a lock: look children up once and keep the
  // reference on hot paths. Aborts if the number of values differs from the number of label names.
  Metric& WithLabels(std::initializer_list<std::string_view> values) {
    return WithLabels(std::span<const std::string_view>(values.begin(), values.size()));
  }
  Metric& WithLabels(std::span<const std::string_view> values) {
    if (values.size() != info_.label_names.size()) internal::LabelCountMismatch(info_, values.size());
    std::lock_guard<std::mutex> lock(mu_);
    auto it = children_.find(values);
    if (it == children_.end()) {
      it = children_.emplace(std::vector<std::string>(values.begin(), values.end()), make_()).first;
    }
    return *it->second;
  }

  const std::string& name() const { return info_.name; }

  void Write(MetricWriter& out) const override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [values, metric] : children_) internal::WriteChild(out, info_, values, *metric);
  }

 private:
  const internal::FamilyInfo info_;
  const std::function<std::unique_ptr<Metric>()> make_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<Metric>, internal::LabelValuesLess> children_
      ABSL_GUARDED_BY(mu_);
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

// ---------------------------------------------------------------------------------------------------
// 3. Collector output
// ---------------------------------------------------------------------------------------------------

// One label of a sample written by a collector. The strings are borrowed for the duration of the call.
struct Label {
  std::string_view name;
  std::string_view value;
};
using Labels = std::vector<Label>;

// Accumulates samples at scrape time and renders them as text format 0.0.4. Samples of one name may be
// written in several calls (e.g. one per label value): they are grouped under one HELP/TYPE header
// (the first call's help wins) and families come out sorted by name. Breaking the header's naming
// conventions or writing one name with two types aborts. Owner thread only (a collector gets a writer for the
// duration of its call).
class MetricWriter {
 public:
  MetricWriter();
  ~MetricWriter();
  MetricWriter(const MetricWriter&) = delete;
  MetricWriter& operator=(const MetricWriter&) = delete;

  // A counter sample (cumulative since process start; `name` ends in "_total").
  void WriteCounter(std::string_view name, std::string_view help, double value, const Labels& labels = {});
  // A gauge sample.
  void WriteGauge(std::string_view name, std::string_view help, double value, const Labels& labels = {});
  // A histogram (bucket bounds in seconds). Counts that decrease along the buckets (a racy snapshot)
  // are raised to keep the buckets cumulative, and `count` is raised to at least the last bucket.
  // Aborts if the bounds are not strictly increasing or the two vectors differ in size.
  void WriteHistogram(std::string_view name, std::string_view help, const CumulativeHistogram& histogram,
                      const Labels& labels = {});

  // The exposition text of everything written so far.
  std::string Text() const;

 private:
  struct FamilyText;
  FamilyText& FamilyFor(std::string_view name, std::string_view help, MetricType type);

  std::map<std::string, FamilyText, std::less<>> families_;
  std::map<std::string, std::string, std::less<>> sample_names_;  // sample name -> its family's name
};

// ---------------------------------------------------------------------------------------------------
// 4. The registry
// ---------------------------------------------------------------------------------------------------

// Owns registered metric families and collector callbacks, and renders them. Thread-safe: metrics may
// be registered, updated and rendered from any thread. Registering a name twice aborts. Returned
// references stay valid for the registry's lifetime.
class MetricsRegistry {
 public:
  // The HTTP Content-Type of Render()'s output.
  static constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Metrics without labels.
  Counter& AddCounter(std::string_view name, std::string_view help);
  Gauge& AddGauge(std::string_view name, std::string_view help);
  Histogram& AddHistogram(std::string_view name, std::string_view help, std::vector<double> upper_bounds);

  // Families with labels; get children with WithLabels({...}).
  CounterFamily& AddCounterFamily(std::string_view name, std::string_view help,
                                  std::vector<std::string> label_names);
  GaugeFamily& AddGaugeFamily(std::string_view name, std::string_view help,
                              std::vector<std::string> label_names);
  HistogramFamily& AddHistogramFamily(std::string_view name, std::string_view help,
                                      std::vector<std::string> label_names, std::vector<double> upper_bounds);

  // Registers `collector`, called on the rendering thread by every Render() until removed. It must be
  // quick, must not block on I/O and must not call into this registry. Returns an id for
  // RemoveCollector.
  int AddCollector(std::function<void(MetricWriter&)> collector);
  // Removes a collector. When it returns, the collector is not running and will not run again, so what
  // it captured may be destroyed. Blocks while a Render() is in progress.
  void RemoveCollector(int id);

  // Renders every family and every collector's output. Renders are serialized; collectors run under the
  // registry's lock. Allocates; takes time proportional to the number of samples.
  std::string Render() const;

 private:
  template <class Metric>
  Family<Metric>& AddFamily(std::string_view name, std::string_view help,
                            std::vector<std::string> label_names, MetricType type,
                            std::function<std::unique_ptr<Metric>()> make);

  mutable std::mutex mu_;  // guards registration and serializes Render
  std::map<std::string, std::unique_ptr<internal::FamilyBase>, std::less<>> families_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string, std::less<>> sample_names_ ABSL_GUARDED_BY(mu_);  // -> family name
  std::map<int, std::function<void(MetricWriter&)>> collectors_ ABSL_GUARDED_BY(mu_);
  int next_collector_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace revkv::server
