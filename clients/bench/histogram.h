// Latencies in microseconds, HdrHistogram-style: the code base's one histogram (runtime::Histogram) with
// three significant digits. Values below 2048 us are exact; above, each power of two is split into 1024
// buckets, so a value is known to within 0.1%; values up to 2^36 us (19 hours) fit in 27,648 counters
// (216 KiB), larger ones are clamped. Each thread records into its own histogram; Merge adds them up at
// the end, and a Snapshot gives the percentiles.
#ifndef REVKV_CLIENTS_BENCH_HISTOGRAM_H_
#define REVKV_CLIENTS_BENCH_HISTOGRAM_H_

#include <cstdint>

#include "runtime/histogram/histogram.h"

namespace revkv::client {

inline constexpr uint64_t kMaxLatencyMicros = (uint64_t{1} << 36) - 1;

// A runtime::Histogram with the latency layout above (so that merged histograms share it).
class LatencyHistogram : public runtime::Histogram {
 public:
  LatencyHistogram() : runtime::Histogram(runtime::HistogramLayout::LogLinear(11, kMaxLatencyMicros)) {}
};

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_BENCH_HISTOGRAM_H_
