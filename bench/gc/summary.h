// Duration samples and their summary, and the process figures the GC benchmark reports (peak RSS,
// a monotonic clock). Shared by the revkv and the Boehm runs.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

namespace revkv::bench::gc {

// Count, mean and nearest-rank percentiles of a set of durations in nanoseconds. All zero when empty.
struct Summary {
  uint64_t count = 0;
  double avg_ns = 0;
  uint64_t p50_ns = 0;
  uint64_t p99_ns = 0;
  uint64_t max_ns = 0;
  uint64_t total_ns = 0;
};

// Summarizes `samples` (taken by value: it sorts them).
Summary Summarize(std::vector<uint64_t> samples);
nlohmann::json ToJson(const Summary& s);

// Nanoseconds on the monotonic clock. Async-signal-safe (the Boehm callbacks use it with the world stopped).
uint64_t NowNanos();

// The process's peak resident set (VmHWM), in bytes; 0 if /proc is unavailable.
uint64_t PeakRssBytes();

}  // namespace revkv::bench::gc
