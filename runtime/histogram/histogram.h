// revkv runtime — histograms (public header): the one histogram of the code base, for GC pauses and
// time-to-safepoint, STM read/write-set sizes, the log's fsync latency, the server's request metrics and
// the load generator's latencies.
//
// A Histogram counts values (nanoseconds, microseconds, sizes: any uint64_t) in buckets laid out by a
// HistogramLayout, one of two:
//  - log-linear, HdrHistogram's layout: with `significant_bits` b, values below 2^b each have a bucket
//    of their own (exact); above, each power of two [2^k, 2^(k+1)) is split into 2^(b-1) equal buckets,
//    so a value is known to within 1/2^(b-1) of itself. b = 4 (8 buckets per power of two, under 13%)
//    costs 512 counters for all of uint64_t; b = 11 (under 0.1%) 27,648 counters up to 2^36.
//  - explicit upper bounds (inclusive), and one bucket above the last: what Prometheus buckets need to be
//    exact at their bounds.
// Record is lock-free and may run on any number of threads at once: one relaxed fetch_add on the bucket,
// on the count and on the sum, and a compare-exchange on min or max only when the value is a new
// extreme. Snapshot may run on any thread at any time, never blocks and never stops a recorder: it reads
// each counter once (relaxed), so a snapshot taken during a Record may have it in the buckets and not yet
// in sum, min or max (or the reverse); its count is always the sum of its buckets; counters never go
// backwards. Nothing is published through these counters, which is
// why relaxed is enough everywhere.
//
// Thread-safety: Record, Snapshot and the figures are thread-safe; Merge, Clear and assignment are
// owner thread only (no Record on either histogram meanwhile).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace revkv::runtime {

// How values map to buckets. Immutable value type; copies share the bounds.
class HistogramLayout {
 public:
  // HdrHistogram's layout (see above); `significant_bits` in [2, 20]; values above `max_value` are
  // counted as max_value.
  static HistogramLayout LogLinear(int significant_bits, uint64_t max_value = UINT64_MAX);
  // Buckets with these inclusive upper bounds (strictly increasing; aborts otherwise) and one bucket
  // above the last bound.
  static HistogramLayout Bounds(std::vector<uint64_t> upper_bounds);

  size_t bucket_count() const { return bucket_count_; }
  // The bucket of `value`.
  size_t IndexOf(uint64_t value) const;
  // The highest value bucket `index` holds (UINT64_MAX for the bucket above the last bound).
  uint64_t UpperBound(size_t index) const;
  // The largest value recorded as itself (larger ones are clamped): max_value for log-linear layouts,
  // UINT64_MAX for bounds.
  uint64_t max_value() const { return max_value_; }
  bool operator==(const HistogramLayout& other) const;

 private:
  HistogramLayout() = default;

  int bits_ = 0;  // log-linear: significant bits; 0: explicit bounds
  uint64_t max_value_ = UINT64_MAX;
  std::shared_ptr<const std::vector<uint64_t>> bounds_;  // explicit bounds only
  size_t bucket_count_ = 0;
};

// A copy of a histogram's figures at one moment. Plain value type.
struct HistogramSnapshot {
  HistogramLayout layout = HistogramLayout::LogLinear(4);
  std::vector<uint64_t> buckets;  // per bucket (not cumulative), layout.bucket_count() of them
  uint64_t count = 0;
  uint64_t sum = 0;
  uint64_t min = 0;  // 0 when empty
  uint64_t max = 0;

  double mean() const { return count == 0 ? 0 : static_cast<double>(sum) / static_cast<double>(count); }
  // The smallest recorded value v such that `percentile` percent of the values (the rank rounded to a
  // whole count, at least 1, as HdrHistogram does) are <= v, to the bucket's resolution: the highest
  // value its bucket holds, capped at max. 0 when empty. `percentile` is clamped to [0, 100].
  uint64_t ValueAtPercentile(double percentile) const;
  // ValueAtPercentile(100 * q): the value at quantile q in [0, 1].
  uint64_t Quantile(double q) const { return ValueAtPercentile(q * 100.0); }
  // How many recorded values are <= value: exact when `value` is a bucket's upper bound (a Prometheus
  // bound of a Bounds layout), otherwise the buckets wholly at or below it.
  uint64_t CountAtOrBelow(uint64_t value) const;
  // Adds `other`'s figures (same layout; aborts otherwise).
  void Merge(const HistogramSnapshot& other);
};

class Histogram {
 public:
  // 8 buckets per power of two over all of uint64_t (LogLinear(4)) unless told otherwise.
  explicit Histogram(HistogramLayout layout = HistogramLayout::LogLinear(4));
  // Copies the figures (relaxed reads, as Snapshot).
  Histogram(const Histogram& other);
  Histogram& operator=(const Histogram& other);

  // Counts `value` (clamped to layout().max_value()). Thread-safe, lock-free; never allocates.
  void Record(uint64_t value);
  // The figures now. Thread-safe; allocates the copy.
  HistogramSnapshot Snapshot() const;
  // Adds `other`'s figures (same layout). Owner thread only.
  void Merge(const Histogram& other);
  // Forgets everything. Owner thread only.
  void Clear();

  const HistogramLayout& layout() const { return layout_; }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  HistogramLayout layout_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_{0};
  std::atomic<uint64_t> min_{UINT64_MAX};
  std::atomic<uint64_t> max_{0};
};

}  // namespace revkv::runtime
