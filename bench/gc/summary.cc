// Summaries of duration samples, the clock and the peak RSS (see summary.h).
#include "bench/gc/summary.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <string>

namespace revkv::bench::gc {

namespace {
// Nearest-rank percentile of sorted, non-empty `v`.
uint64_t Percentile(const std::vector<uint64_t>& v, double q) {
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}
}  // namespace

Summary Summarize(std::vector<uint64_t> samples) {
  Summary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.count = samples.size();
  s.total_ns = std::accumulate(samples.begin(), samples.end(), uint64_t{0});
  s.avg_ns = static_cast<double>(s.total_ns) / static_cast<double>(s.count);
  s.p50_ns = Percentile(samples, 0.50);
  s.p99_ns = Percentile(samples, 0.99);
  s.max_ns = samples.back();
  return s;
}

nlohmann::json ToJson(const Summary& s) {
  return {{"count", s.count},   {"avg_ns", s.avg_ns}, {"p50_ns", s.p50_ns},
          {"p99_ns", s.p99_ns}, {"max_ns", s.max_ns}, {"total_ns", s.total_ns}};
}

uint64_t NowNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t PeakRssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // "VmHWM:  1234 kB"
  }
  return 0;
}

}  // namespace revkv::bench::gc
