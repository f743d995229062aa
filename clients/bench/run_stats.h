// What one client thread counts during a run, and the live totals the progress line reads.
//
// Each worker thread owns a WorkerStats and is its only writer; nothing in it is shared while the run
// goes, except LiveCounters, which the main thread reads once a second. At the end the main thread
// (after joining the workers) merges every WorkerStats into one.
#ifndef REVKV_CLIENTS_BENCH_RUN_STATS_H_
#define REVKV_CLIENTS_BENCH_RUN_STATS_H_

#include <grpcpp/support/status.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "clients/bench/histogram.h"

namespace revkv::client {

using Clock = std::chrono::steady_clock;

// The phases an operation can belong to, by the time it was meant to start.
enum class Phase : uint8_t { kConnect, kPreload, kWarmup, kMeasured };
inline constexpr int kPhaseCount = 4;
const char* PhaseName(Phase phase);

// Requests sent, by method; kStatus counts the connection probes, kPipeline and kPipelineBatch the
// messages sent on revkv.v1.KV/Pipeline and PipelineBatch streams.
enum class Method : uint8_t { kRange, kPut, kTxn, kPipeline, kStatus, kPipelineBatch };
inline constexpr int kMethodCount = 6;
const char* MethodName(Method method);

// Failed operations by gRPC code and message.
using ErrorCounts = std::map<std::pair<grpc::StatusCode, std::string>, uint64_t>;

struct PhaseCounts {
  uint64_t ops = 0;      // operations completed
  uint64_t errors = 0;   // operations failed (an error status, or a transfer out of retries)
  uint64_t retries = 0;  // transfer compare failures that were retried
};

// Totals that the progress line reads while the run goes. Single writer (the owner worker), any
// number of readers: each counter is a relaxed load and store, since a reader needs only some recent
// value of each, with no order between them.
struct alignas(64) LiveCounters {
  std::atomic<uint64_t> ops{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> retries{0};

  static void Bump(std::atomic<uint64_t>& counter) {
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
};

// One worker's figures. Owner thread only, except `live` (see LiveCounters) and latency.Snapshot(), which
// any thread may take while the owner records (runtime::Histogram).
struct WorkerStats {
  std::array<PhaseCounts, kPhaseCount> phases{};
  ErrorCounts errors;                             // every phase
  LatencyHistogram latency;                       // measured operations only
  std::array<uint64_t, kMethodCount> requests{};  // every phase
  Clock::time_point last_measured_completion{};   // when the last measured operation ended
  LiveCounters live;

  PhaseCounts& phase(Phase p) { return phases[static_cast<int>(p)]; }
  const PhaseCounts& phase(Phase p) const { return phases[static_cast<int>(p)]; }
  void CountRequest(Method method) { ++requests[static_cast<int>(method)]; }
  void CountDone(Phase p) {
    ++phase(p).ops;
    LiveCounters::Bump(live.ops);
  }
  void CountError(Phase p, const grpc::Status& status) {
    ++phase(p).errors;
    ++errors[{status.error_code(), status.error_message()}];
    LiveCounters::Bump(live.errors);
  }
  void CountRetry(Phase p) {
    ++phase(p).retries;
    LiveCounters::Bump(live.retries);
  }

  // Adds `other` (not being written) into this.
  void Merge(const WorkerStats& other);
};

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_BENCH_RUN_STATS_H_
