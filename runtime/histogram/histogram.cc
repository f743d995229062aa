// The histogram (histogram.h).
#include "runtime/histogram/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "runtime/port/diagnostics.h"

namespace revkv::runtime {
namespace {

[[noreturn]] void Fatal(const char* what) { runtime::port::Fatal("revkv histogram: %s", what); }

}  // namespace

HistogramLayout HistogramLayout::LogLinear(int significant_bits, uint64_t max_value) {
  if (significant_bits < 2 || significant_bits > 20) Fatal("significant_bits must be in [2, 20]");
  HistogramLayout layout;
  layout.bits_ = significant_bits;
  layout.max_value_ = max_value;
  layout.bucket_count_ = layout.IndexOf(max_value) + 1;
  return layout;
}

HistogramLayout HistogramLayout::Bounds(std::vector<uint64_t> upper_bounds) {
  for (size_t i = 1; i < upper_bounds.size(); ++i) {
    if (upper_bounds[i] <= upper_bounds[i - 1]) Fatal("bucket bounds must be strictly increasing");
  }
  HistogramLayout layout;
  layout.bucket_count_ = upper_bounds.size() + 1;
  layout.bounds_ = std::make_shared<const std::vector<uint64_t>>(std::move(upper_bounds));
  return layout;
}

size_t HistogramLayout::IndexOf(uint64_t value) const {
  if (bits_ == 0) {
    return static_cast<size_t>(std::lower_bound(bounds_->begin(), bounds_->end(), value) - bounds_->begin());
  }
  value = std::min(value, max_value_);
  const uint64_t exact = uint64_t{1} << bits_;
  if (value < exact) return static_cast<size_t>(value);
  // For value in [2^k, 2^(k+1)) with k >= bits: shift = k - (bits - 1) keeps the top `bits` bits,
  // sub in [2^(bits-1), 2^bits); the buckets of that range follow those of the range below, 2^(bits-1)
  // apiece.
  const int shift = (63 - std::countl_zero(value)) - (bits_ - 1);
  return static_cast<size_t>(static_cast<uint64_t>(shift) * (exact / 2) + (value >> shift));
}

uint64_t HistogramLayout::UpperBound(size_t index) const {
  if (bits_ == 0) return index < bounds_->size() ? (*bounds_)[index] : UINT64_MAX;
  const uint64_t exact = uint64_t{1} << bits_;
  if (index < exact) return index;
  const uint64_t half = exact / 2;
  const uint64_t shift = index / half - 1;
  const uint64_t sub = index - shift * half;
  // sub + 1 <= 2^bits and shift <= 64 - bits, so the shift stays in range; at the very top the product is
  // 2^64, which wraps to 0, and minus one is UINT64_MAX as it should be.
  return ((sub + 1) << shift) - 1;
}

bool HistogramLayout::operator==(const HistogramLayout& other) const {
  if (bits_ != other.bits_ || max_value_ != other.max_value_) return false;
  return bits_ != 0 || bounds_ == other.bounds_ || *bounds_ == *other.bounds_;
}

uint64_t HistogramSnapshot::ValueAtPercentile(double percentile) const {
  if (count == 0) return 0;
  uint64_t total = 0;
  for (uint64_t b : buckets) total += b;
  if (total == 0) return 0;
  const double clamped = std::clamp(percentile, 0.0, 100.0);
  // The rank is rounded to the nearest integer, as HdrHistogram does, so that 99.9% of 1000 values is the
  // 999th and not, through 0.999 * 1000 = 999.0000000000001, the 1000th.
  const auto rank = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::floor(clamped / 100.0 * static_cast<double>(total) + 0.5)));
  uint64_t seen = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    seen += buckets[i];
    if (seen >= rank) return std::min(layout.UpperBound(i), max);
  }
  return max;
}

uint64_t HistogramSnapshot::CountAtOrBelow(uint64_t value) const {
  uint64_t n = 0;
  for (size_t i = 0; i < buckets.size() && layout.UpperBound(i) <= value; ++i) n += buckets[i];
  return n;
}

void HistogramSnapshot::Merge(const HistogramSnapshot& other) {
  if (!(layout == other.layout)) Fatal("merging histograms of different layouts");
  if (buckets.size() < other.buckets.size()) buckets.resize(other.buckets.size(), 0);
  for (size_t i = 0; i < other.buckets.size(); ++i) buckets[i] += other.buckets[i];
  if (other.count != 0) min = count == 0 ? other.min : std::min(min, other.min);
  count += other.count;
  sum += other.sum;
  max = std::max(max, other.max);
}

Histogram::Histogram(HistogramLayout layout)
    : layout_(std::move(layout)), buckets_(new std::atomic<uint64_t>[layout_.bucket_count()]()) {}

Histogram::Histogram(const Histogram& other) : Histogram(other.layout_) { Merge(other); }

Histogram& Histogram::operator=(const Histogram& other) {
  if (this == &other) return *this;
  if (!(layout_ == other.layout_)) {
    layout_ = other.layout_;
    buckets_.reset(new std::atomic<uint64_t>[layout_.bucket_count()]());
  }
  Clear();
  Merge(other);
  return *this;
}

void Histogram::Record(uint64_t value) {
  value = std::min(value, layout_.max_value());
  // Relaxed: statistics only (see the header).
  buckets_[layout_.IndexOf(value)].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
  uint64_t seen = max_.load(std::memory_order_relaxed);
  while (value > seen && !max_.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
  seen = min_.load(std::memory_order_relaxed);
  while (value < seen && !min_.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

HistogramSnapshot Histogram::Snapshot() const {
  HistogramSnapshot s;
  s.layout = layout_;
  s.buckets.resize(layout_.bucket_count());
  // The count is the sum of the buckets as read, not count_: a Record between the reads of the buckets
  // and of count_ would otherwise be in one and not the other, and a Prometheus +Inf bucket (the count)
  // could fall below a finite bucket or count a value no bucket holds. Each bucket only grows, so the
  // sum of successive snapshots does too.
  for (size_t i = 0; i < s.buckets.size(); ++i) {
    s.buckets[i] = buckets_[i].load(std::memory_order_relaxed);
    s.count += s.buckets[i];
  }
  s.sum = sum_.load(std::memory_order_relaxed);
  s.max = max_.load(std::memory_order_relaxed);
  const uint64_t min = min_.load(std::memory_order_relaxed);
  s.min = min == UINT64_MAX && s.count == 0 ? 0 : min;
  return s;
}

void Histogram::Merge(const Histogram& other) {
  if (!(layout_ == other.layout_)) Fatal("merging histograms of different layouts");
  for (size_t i = 0; i < layout_.bucket_count(); ++i) {
    const uint64_t n = other.buckets_[i].load(std::memory_order_relaxed);
    if (n != 0) buckets_[i].fetch_add(n, std::memory_order_relaxed);
  }
  count_.fetch_add(other.count_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  sum_.fetch_add(other.sum_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  max_.store(std::max(max_.load(std::memory_order_relaxed), other.max_.load(std::memory_order_relaxed)),
             std::memory_order_relaxed);
  min_.store(std::min(min_.load(std::memory_order_relaxed), other.min_.load(std::memory_order_relaxed)),
             std::memory_order_relaxed);
}

void Histogram::Clear() {
  for (size_t i = 0; i < layout_.bucket_count(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
  count_.store(0, std::memory_order_relaxed);
  sum_.store(0, std::memory_order_relaxed);
  min_.store(UINT64_MAX, std::memory_order_relaxed);
  max_.store(0, std::memory_order_relaxed);
}

}  // namespace revkv::runtime
