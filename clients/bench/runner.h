// One benchmark run against one endpoint list, and a comparison of two endpoints in rounds.
//
// A run: make the connections' channels, probe each with Maintenance/Status (waiting up to
// --dial-timeout for it to connect), preload if asked, then the measured phase (warm-up first), with a
// progress line on stderr once a second. The figures come back as a RunReport.
#ifndef REVKV_CLIENTS_BENCH_RUNNER_H_
#define REVKV_CLIENTS_BENCH_RUNNER_H_

#include <atomic>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clients/bench/operation.h"
#include "clients/bench/options.h"
#include "clients/bench/report.h"
#include "clients/common/endpoint.h"
#include "clients/common/transport.h"

namespace revkv::client {

// What a run needs besides the options. All must outlive the run.
struct RunContext {
  const BenchOptions* options = nullptr;
  const WorkloadSpec* spec = nullptr;
  const ChannelFactory* channels = nullptr;
  const std::atomic<bool>* stop = nullptr;  // set by SIGINT: wind down and report what was measured
  std::string label;                        // prefix of the progress line ("A round 2")
};

// Runs the workload against `endpoints` (connections go round-robin over them), preloading first when
// `preload`. Blocks for the run's length. An unreachable endpoint is not an error of this function: the
// report says so in `failure` and counts the probe errors by code.
RunReport RunBenchmark(const RunContext& context, const std::vector<Endpoint>& endpoints, bool preload);

// Runs `rounds` rounds over the sides (two or more endpoint lists), in order in even rounds and in
// reverse order in odd ones (preloading each side before its first round when the options ask), and
// collects their reports, each with its run_order. Stops early when one run fails outright or a stop is
// requested.
CompareReport RunComparison(const RunContext& context, const std::vector<std::vector<Endpoint>>& sides);

// The endpoints as one string ("127.0.0.1:2379,127.0.0.1:22379").
std::string JoinEndpoints(const std::vector<Endpoint>& endpoints);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_BENCH_RUNNER_H_
