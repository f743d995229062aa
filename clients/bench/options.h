// revkv-bench's options: the workload, the data it touches, the load shape and the output.
#ifndef REVKV_CLIENTS_BENCH_OPTIONS_H_
#define REVKV_CLIENTS_BENCH_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "clients/bench/key_space.h"
#include "clients/common/transport.h"

namespace CLI {
class App;
}  // namespace CLI

namespace revkv::client {

enum class Workload {
  kPut,    // Put of a random key
  kGet,    // Range of one random key
  kMixed,  // Range with probability read_ratio, else Put
  kTxn,    // transfer between two random keys: Range both, then Txn guarded by their mod_revisions
  kRange,  // Range of range_size consecutive keys
};

enum class SendMode {
  kUnary,     // one RPC per request, `inflight` RPCs outstanding per connection
  kPipeline,  // revkv.v1.KV/Pipeline: one stream per connection, `inflight` requests outstanding on it
};

// The most endpoints one --compare run takes.
inline constexpr size_t kMaxCompared = 6;

struct BenchOptions {
  Workload workload = Workload::kPut;

  // Where: endpoints to spread the connections over, or the two endpoints of a comparison.
  std::string endpoints = "127.0.0.1:2379";
  std::vector<std::string> compare;  // empty, or {A, B, ...}: 2 to kMaxCompared endpoint lists
  int rounds = 3;                    // comparison rounds; each runs every endpoint once for `duration`
  TransportOptions transport;

  // Load shape.
  int connections = 4;  // gRPC channels, each its own TCP connection
  int inflight = 16;    // requests outstanding per connection
  int threads = 0;      // client threads driving the connections; 0: min(connections, cores)
  SendMode mode = SendMode::kUnary;
  // Pipeline mode: 0 sends one request per revkv.v1.KV/Pipeline message; N > 0 sends up to N requests
  // (those queued when the stream is free to write) per revkv.v1.KV/PipelineBatch message.
  int batch = 0;
  absl::Duration duration = absl::Seconds(10);  // measured time (unless total > 0)
  uint64_t total = 0;                           // measured operations; 0: run for `duration`
  double rate = 0;                              // total operations per second; 0: as fast as possible
  // With `rate`: how far behind its schedule the client may fall and still start the operations it
  // missed (each measured from its scheduled start). Zero keeps one missed start per slot, which hides
  // most of a long server stall from the percentiles (coordinated omission); a stall shorter than the
  // backlog is measured in full.
  absl::Duration rate_backlog = absl::ZeroDuration();
  absl::Duration warmup = absl::Seconds(1);   // load before measuring, excluded from the figures
  absl::Duration timeout = absl::Seconds(5);  // per request (unary) or past the end (pipeline)

  // Data.
  std::string key_prefix = "bench/";
  int key_size = 16;
  int value_size = 100;
  uint64_t keys = 10000;
  KeyDistribution key_distribution = KeyDistribution::kUniform;
  double zipf_exponent = 0.99;
  double read_ratio = 0.9;         // mixed
  int range_size = 10;             // range
  bool serializable = false;       // reads ask for serializable, not linearizable, consistency
  bool preload = false;            // write every key once before the run (not counted)
  int64_t initial_balance = 1000;  // txn: the balance preload writes
  int max_retries = 1000;          // txn: compare failures before a transfer gives up (ABORTED)
  absl::Duration backoff_base = absl::Milliseconds(1);   // txn: first retry waits up to this
  absl::Duration backoff_max = absl::Milliseconds(100);  // txn: no retry waits longer
  uint64_t seed = 1;

  // Output.
  bool json = false;             // the report as JSON on stdout (the text report goes to stderr)
  bool quiet = false;            // no progress line
  std::string percentiles_file;  // HdrHistogram's percentile distribution (.hgrm) of the latencies
  std::string svg_file;          // an SVG of throughput and latency over the measured time
};

const char* WorkloadName(Workload workload);
const char* SendModeName(SendMode mode);
const char* KeyDistributionName(KeyDistribution distribution);

// Declares every option on `app`, storing into `*options` (which must outlive the parse).
void AddBenchFlags(CLI::App& app, BenchOptions* options);

// Checks what the parser cannot: INVALID_ARGUMENT naming the option and the problem.
absl::Status ValidateBenchOptions(const BenchOptions& options);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_BENCH_OPTIONS_H_
