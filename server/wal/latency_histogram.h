// LatencyHistogram: a fixed-bucket histogram of durations in seconds, recorded by one thread and read by
// any, for the fsync latency the server exports to Prometheus.
#ifndef REVKV_SERVER_WAL_LATENCY_HISTOGRAM_H_
#define REVKV_SERVER_WAL_LATENCY_HISTOGRAM_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

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

// Record(): one thread at a time (the WAL's flusher). Snapshot(): any thread, never blocks. The fields of a
// snapshot are read one by one, so one taken during a Record may count that observation in some fields
// and not yet in others; counters never go backwards.
class LatencyHistogram {
 public:
  void Record(std::chrono::nanoseconds latency) {
    const double seconds = std::chrono::duration<double>(latency).count();
    size_t bucket = 0;
    while (bucket < kLatencyBucketBounds.size() && seconds > kLatencyBucketBounds[bucket]) ++bucket;
    // Relaxed: statistics only; nothing else is published through these counters.
    buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
    const uint64_t ns = static_cast<uint64_t>(latency.count());
    sum_ns_.fetch_add(ns, std::memory_order_relaxed);
    if (ns > max_ns_.load(std::memory_order_relaxed)) max_ns_.store(ns, std::memory_order_relaxed);
  }

  LatencySnapshot Snapshot() const {
    LatencySnapshot s;
    uint64_t running = 0;
    for (size_t i = 0; i < kLatencyBucketBounds.size(); ++i) {
      running += buckets_[i].load(std::memory_order_relaxed);
      s.cumulative_counts[i] = running;
    }
    s.count = running + buckets_.back().load(std::memory_order_relaxed);
    s.sum_seconds = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) * 1e-9;
    s.max_seconds = static_cast<double>(max_ns_.load(std::memory_order_relaxed)) * 1e-9;
    return s;
  }

 private:
  std::array<std::atomic<uint64_t>, kLatencyBucketBounds.size() + 1> buckets_{};  // per bucket, last is +Inf
  std::atomic<uint64_t> sum_ns_{0};
  std::atomic<uint64_t> max_ns_{0};  // single writer, so load-compare-store is enough
};

}  // namespace revkv::server

#endif  // REVKV_SERVER_WAL_LATENCY_HISTOGRAM_H_
