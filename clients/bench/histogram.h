// A latency histogram in the manner of HdrHistogram: microsecond values, three significant digits.
//
// Layout: values below 2048 us each have a counter of their own (exact to the microsecond). Above, each
// power-of-two range [2^k, 2^(k+1)) is split into 1024 equal buckets, so a recorded value is known to
// within 1/1024 of itself (under 0.1%). Values from 0 to 2^36 us (19 hours) fit in 27,648 counters (216
// KiB); larger ones are clamped. Recording is an index computation and an increment: no allocation, no
// lock. Each thread records into its own histogram; Merge adds them up at the end.
#ifndef REVKV_CLIENTS_BENCH_HISTOGRAM_H_
#define REVKV_CLIENTS_BENCH_HISTOGRAM_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace revkv::client {

// A histogram of microsecond values. Owner thread only; Merge reads another histogram that must not be
// recorded into at the same time.
class LatencyHistogram {
 public:
  static constexpr uint64_t kMaxValue = (uint64_t{1} << 36) - 1;

  LatencyHistogram();

  void Record(uint64_t micros);
  void Merge(const LatencyHistogram& other);
  void Clear();

  uint64_t count() const { return count_; }
  uint64_t min() const { return count_ == 0 ? 0 : min_; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ == 0 ? 0 : static_cast<double>(sum_) / static_cast<double>(count_); }

  // The smallest recorded value v such that `percentile` percent of the values (rounded to a whole
  // count) are <= v, up to the bucket's resolution: the highest value its bucket holds, capped at max().
  // 0 when empty.
  // `percentile` is in [0, 100].
  uint64_t ValueAtPercentile(double percentile) const;

 private:
  static constexpr int kSubBucketBits = 11;  // 2048 exact values, then 1024 buckets per power of two
  static constexpr uint64_t kSubBucketCount = uint64_t{1} << kSubBucketBits;
  static constexpr uint64_t kHalfCount = kSubBucketCount / 2;

  static size_t IndexOf(uint64_t value);
  static uint64_t HighestValueAt(size_t index);

  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
};

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_BENCH_HISTOGRAM_H_
