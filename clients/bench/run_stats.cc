// Merging per-thread figures.
#include "clients/bench/run_stats.h"

#include <algorithm>

namespace revkv::client {

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kConnect:
      return "connect";
    case Phase::kPreload:
      return "preload";
    case Phase::kWarmup:
      return "warmup";
    case Phase::kMeasured:
      return "measured";
  }
  return "?";
}

const char* MethodName(Method method) {
  switch (method) {
    case Method::kRange:
      return "Range";
    case Method::kPut:
      return "Put";
    case Method::kTxn:
      return "Txn";
    case Method::kPipeline:
      return "Pipeline";
    case Method::kStatus:
      return "Status";
    case Method::kPipelineBatch:
      return "PipelineBatch";
  }
  return "?";
}

void WorkerStats::Merge(const WorkerStats& other) {
  for (int i = 0; i < kPhaseCount; ++i) {
    phases[i].ops += other.phases[i].ops;
    phases[i].errors += other.phases[i].errors;
    phases[i].retries += other.phases[i].retries;
  }
  for (const auto& [key, count] : other.errors) errors[key] += count;
  latency.Merge(other.latency);
  for (int i = 0; i < kMethodCount; ++i) requests[i] += other.requests[i];
  last_measured_completion = std::max(last_measured_completion, other.last_measured_completion);
}

}  // namespace revkv::client
