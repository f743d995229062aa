// HdrHistogram-style latency histogram.
#include "clients/bench/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace revkv::client {

LatencyHistogram::LatencyHistogram() : counts_(IndexOf(kMaxValue) + 1, 0) {}

size_t LatencyHistogram::IndexOf(uint64_t value) {
  if (value < kSubBucketCount) return static_cast<size_t>(value);
  // For value in [2^k, 2^(k+1)) with k >= kSubBucketBits: shift = k - (kSubBucketBits - 1) drops all but
  // the top kSubBucketBits bits, leaving sub in [1024, 2048); the buckets of that range follow those of
  // the range below, 1024 apiece.
  const int shift = (63 - std::countl_zero(value)) - (kSubBucketBits - 1);
  const uint64_t sub = value >> shift;
  return static_cast<size_t>(static_cast<uint64_t>(shift) * kHalfCount + sub);
}

uint64_t LatencyHistogram::HighestValueAt(size_t index) {
  if (index < kSubBucketCount) return index;
  const uint64_t shift = index / kHalfCount - 1;
  const uint64_t sub = index - shift * kHalfCount;
  return ((sub + 1) << shift) - 1;
}

void LatencyHistogram::Record(uint64_t micros) {
  const uint64_t value = std::min(micros, kMaxValue);
  ++counts_[IndexOf(value)];
  ++count_;
  sum_ += value;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

void LatencyHistogram::Clear() {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = 0;
  sum_ = 0;
  min_ = UINT64_MAX;
  max_ = 0;
}

uint64_t LatencyHistogram::ValueAtPercentile(double percentile) const {
  if (count_ == 0) return 0;
  const double clamped = std::clamp(percentile, 0.0, 100.0);
  // The rank is rounded to the nearest integer, as HdrHistogram does, so that 99.9% of 1000 values is the
  // 999th and not, through 0.999 * 1000 = 999.0000000000001, the 1000th.
  const auto rank = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::floor(clamped / 100.0 * static_cast<double>(count_) + 0.5)));
  uint64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::min(HighestValueAt(i), max_);
  }
  return max_;
}

}  // namespace revkv::client
