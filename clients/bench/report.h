// revkv-bench's reports: one run's figures, or a comparison of two endpoints over rounds; as text for
// people and as JSON for scripts.
#ifndef REVKV_CLIENTS_BENCH_REPORT_H_
#define REVKV_CLIENTS_BENCH_REPORT_H_

#include <array>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clients/bench/histogram.h"
#include "clients/bench/options.h"
#include "clients/bench/run_stats.h"

namespace revkv::client {

struct LatencyFigures {  // microseconds
  uint64_t count = 0;
  double mean = 0;
  uint64_t p50 = 0;
  uint64_t p90 = 0;
  uint64_t p99 = 0;
  uint64_t p999 = 0;
  uint64_t max = 0;
};

// One interval (about a second) of the measured time, as the progress line samples it.
struct TimelineSample {
  double seconds = 0;         // since the measured time began, at the interval's end
  double ops_per_second = 0;  // measured operations completed in the interval, per second
  uint64_t p50_us = 0;        // latency of those operations
  uint64_t p99_us = 0;
  uint64_t p999_us = 0;
};

// One run against one endpoint list.
struct RunReport {
  std::string endpoints;
  std::string server_version;  // from Maintenance/Status, when the server says
  std::string failure;         // non-empty: the run could not be made (e.g. endpoint unreachable)
  bool interrupted = false;    // SIGINT ended the measurement early
  int run_order = 0;           // in a --compare run, this run's place among all runs (1 = first); else 0
  // The host's 1-minute load average when the measured phase began and ended (-1: unknown). On a shared
  // machine a high value says the figures were taken under competition.
  double load_average_start = -1;
  double load_average_end = -1;
  // This client's CPU time (user + system, every thread) over the warm-up and measured phase, as a
  // percentage of one core (200 = two cores busy); -1: unknown. A client near its cores' limit is the
  // bottleneck, whatever the server could do.
  double client_cpu_percent = -1;
  // When the measured time began (the end of the warm-up), in microseconds since the Unix epoch: lines
  // the timeline up with events recorded elsewhere (a server's collection pauses); 0: unknown.
  int64_t measure_start_unix_us = 0;
  double measured_seconds = 0;
  uint64_t ops = 0;       // measured operations that completed
  double throughput = 0;  // ops / measured_seconds
  LatencyFigures latency;
  runtime::HistogramSnapshot latency_histogram;  // microseconds, measured operations
  std::vector<TimelineSample> timeline;          // measured time, per interval
  std::array<PhaseCounts, kPhaseCount> phases{};
  ErrorCounts errors;  // every phase
  uint64_t errors_total = 0;
  std::array<uint64_t, kMethodCount> requests{};  // every phase

  const PhaseCounts& phase(Phase p) const { return phases[static_cast<int>(p)]; }
  bool ok() const { return failure.empty() && errors_total == 0; }
};

// The host's 1-minute load average from /proc/loadavg; -1 when it cannot be read.
double HostLoadAverage();

// This process's CPU time so far (user + system, all threads), in seconds (getrusage).
double ProcessCpuSeconds();

// Builds a report from the merged stats of a run whose measured part started at `measure_start`.
RunReport MakeRunReport(std::string endpoints, const WorkerStats& stats, Clock::time_point measure_start,
                        double planned_seconds);

// A comparison of two or more endpoint lists (A, B, C, ...): rounds run them in order, then in reverse
// order, and so on (A B C, C B A, ...; ABBA for two): a slow drift of the machine over the runs (heat,
// other load, caches) then weighs on every side alike instead of always favouring the first.
struct CompareReport {
  std::vector<std::string> endpoints;          // one per side, A first
  std::vector<std::vector<RunReport>> rounds;  // per side, in round order

  bool ok() const;
};

nlohmann::json ToJson(const RunReport& report, const BenchOptions& options);
nlohmann::json ToJson(const CompareReport& report, const BenchOptions& options);
void PrintText(std::FILE* out, const RunReport& report, const BenchOptions& options);
void PrintText(std::FILE* out, const CompareReport& report, const BenchOptions& options);

// etcd's benchmark's "Response time histogram": 10 equal buckets from the fastest to the slowest
// latency (each line: its upper bound in ms, the count of values at or below it and above the previous
// bound, a bar of up to 40 '∎' scaled to the largest count). Nothing when no operation was measured.
void PrintLatencyHistogram(std::FILE* out, const runtime::HistogramSnapshot& latencies);

// HdrHistogram's percentile distribution (outputPercentileDistribution, 5 ticks per half distance,
// values in milliseconds): the .hgrm text its plotters read.
std::string PercentileDistribution(const runtime::HistogramSnapshot& latencies);

// An SVG chart of a run's timeline: throughput (ops/s) above, p50 and p99 latency (ms) below, over the
// measured seconds. Self-contained (no script, no external resource).
std::string TimelineSvg(const RunReport& report, const BenchOptions& options);

// One line describing the workload and load shape ("put, 4 connections x 16 in flight, unary, ...").
std::string DescribeLoad(const BenchOptions& options);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_BENCH_REPORT_H_
