// LatencyHistogram: the fsync latency the server exports to Prometheus, in fixed buckets of seconds,
// recorded by one thread and read by any. The counting is runtime::Histogram's (the code base's one
// histogram) over nanoseconds, laid out with kLatencyBucketBounds as its bounds so that each Prometheus
// bucket is exact.
#ifndef REVKV_SERVER_WAL_LATENCY_HISTOGRAM_H_
#define REVKV_SERVER_WAL_LATENCY_HISTOGRAM_H_

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/histogram/histogram.h"

namespace revkv::server {

// Upper bounds (inclusive, seconds) of the finite buckets; a last, implicit bucket is +Inf.
inline constexpr std::array<double, 15> kLatencyBucketBounds = {
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5};

// A copy of the histogram at one moment, in Prometheus' shape: cumulative_counts[i] observations took at
// most kLatencyBucketBounds[i] seconds; `count` is the +Inf bucket.
struct LatencySnapshot {
  std::array<uint64_t, kLatencyBucketBounds.size()> cumulative_counts{};
  uint64_t count = 0;
  double sum_seconds = 0;
  double max_seconds = 0;
};

// Record() and Snapshot(): any thread, never blocking (runtime::Histogram). The fields of a snapshot are
// read one by one, so one taken during a Record may count that observation in some fields and not yet
// in others; counters never go backwards.
class LatencyHistogram {
 public:
  LatencyHistogram() : histogram_(runtime::HistogramLayout::Bounds(BoundsInNanos())) {}

  void Record(std::chrono::nanoseconds latency) {
    histogram_.Record(static_cast<uint64_t>(std::max<int64_t>(0, latency.count())));
  }

  LatencySnapshot Snapshot() const {
    const runtime::HistogramSnapshot h = histogram_.Snapshot();
    LatencySnapshot s;
    uint64_t running = 0;
    for (size_t i = 0; i < kLatencyBucketBounds.size(); ++i) {
      running += h.buckets[i];
      s.cumulative_counts[i] = running;
    }
    s.count = running + h.buckets.back();
    s.sum_seconds = static_cast<double>(h.sum) * 1e-9;
    s.max_seconds = static_cast<double>(h.max) * 1e-9;
    return s;
  }

 private:
  static std::vector<uint64_t> BoundsInNanos() {
    std::vector<uint64_t> bounds;
    for (double seconds : kLatencyBucketBounds)
      bounds.push_back(static_cast<uint64_t>(std::llround(seconds * 1e9)));
    return bounds;
  }

  runtime::Histogram histogram_;
};

}  // namespace revkv::server

#endif  // REVKV_SERVER_WAL_LATENCY_HISTOGRAM_H_
