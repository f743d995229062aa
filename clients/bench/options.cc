// revkv-bench's command line.
#include "clients/bench/options.h"

#include <CLI/CLI.hpp>
#include <map>

#include "absl/strings/str_cat.h"
#include "clients/common/duration_flag.h"

namespace revkv::client {

const char* WorkloadName(Workload workload) {
  switch (workload) {
    case Workload::kPut:
      return "put";
    case Workload::kGet:
      return "get";
    case Workload::kMixed:
      return "mixed";
    case Workload::kTxn:
      return "txn";
    case Workload::kRange:
      return "range";
  }
  return "?";
}

const char* SendModeName(SendMode mode) { return mode == SendMode::kUnary ? "unary" : "pipeline"; }

const char* KeyDistributionName(KeyDistribution distribution) {
  return distribution == KeyDistribution::kUniform ? "uniform" : "zipfian";
}

void AddBenchFlags(CLI::App& app, BenchOptions* o) {
  const std::map<std::string, Workload> workloads = {{"put", Workload::kPut},
                                                     {"get", Workload::kGet},
                                                     {"mixed", Workload::kMixed},
                                                     {"txn", Workload::kTxn},
                                                     {"range", Workload::kRange}};
  app.add_option("workload", o->workload,
                 "put | get | mixed (reads with --read-ratio) | txn (transfers between two keys) | "
                 "range (--range-size consecutive keys)")
      ->required()
      ->type_name("WORKLOAD")
      ->transform(CLI::CheckedTransformer(workloads).description(""));

  app.add_option("--endpoints", o->endpoints, "comma-separated host:port list; connections go round-robin")
      ->capture_default_str();
  app.add_option(
         "--compare", o->compare,
         "run against endpoints A, B (and C, D, ...) in alternating rounds (A B C, C B A, A B C, ...) "
         "and compare each with A")
      ->expected(2, kMaxCompared)
      ->type_name("A B [C ...]");
  app.add_option("--rounds", o->rounds, "rounds of a --compare run")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  AddTransportFlags(app, &o->transport);

  app.add_option("--connections", o->connections, "gRPC channels, each its own TCP connection")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--inflight", o->inflight, "requests in flight per connection")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", o->threads, "client threads driving the connections")
      ->default_str("min(connections, cores)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--mode", o->mode,
                 "unary: one RPC per request; pipeline: revkv.v1.KV/Pipeline, one stream per connection")
      ->type_name("MODE")
      ->transform(CLI::CheckedTransformer(std::map<std::string, SendMode>{{"unary", SendMode::kUnary},
                                                                          {"pipeline", SendMode::kPipeline}})
                      .description(""))
      ->default_str("unary");
  app.add_option("--batch", o->batch,
                 "pipeline mode: up to N requests per revkv.v1.KV/PipelineBatch message; 0: one per "
                 "revkv.v1.KV/Pipeline message")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  AddDurationOption(app, "--duration", &o->duration, "how long to measure (per round with --compare)");
  app.add_option("--total", o->total, "measure this many operations instead of a duration");
  app.add_option("--rate", o->rate, "total operations per second, paced open-loop; 0: unlimited")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  AddDurationOption(app, "--rate-backlog", &o->rate_backlog,
                    "with --rate: how far behind schedule the client may fall and still start every missed "
                    "operation, each timed from its scheduled start (so a server stall shorter than this is "
                    "measured in full); 0: one missed start per in-flight slot");
  AddDurationOption(app, "--warmup", &o->warmup, "load before measuring, excluded from the figures");
  AddDurationOption(app, "--timeout", &o->timeout,
                    "deadline of each request (unary) or of the stream past the end (pipeline); 0: none");

  app.add_option("--key-prefix", o->key_prefix, "prefix of every key")->capture_default_str();
  app.add_option("--key-size", o->key_size, "bytes per key (prefix + zero-padded index)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--value-size", o->value_size, "bytes per value")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--keys", o->keys, "size of the key space")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--key-distribution", o->key_distribution, "uniform or zipfian")
      ->type_name("DIST")
      ->transform(CLI::CheckedTransformer(
                      std::map<std::string, KeyDistribution>{{"uniform", KeyDistribution::kUniform},
                                                             {"zipfian", KeyDistribution::kZipfian}})
                      .description(""))
      ->default_str("uniform");
  app.add_option("--zipf-exponent", o->zipf_exponent, "Zipfian exponent theta, in (0, 1)")
      ->capture_default_str();
  app.add_option("--read-ratio", o->read_ratio, "mixed: fraction of reads")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--range-size", o->range_size, "range: keys per range")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--consistency", o->serializable,
                 "reads: l (linearizable, etcd's default) or s (serializable: the server may answer from its "
                 "local state without a consensus round)")
      ->type_name("l|s")
      ->transform(
          CLI::CheckedTransformer(std::map<std::string, bool>{{"l", false}, {"s", true}}).description(""))
      ->default_str("l");
  app.add_flag("--preload", o->preload, "write every key once before the run (not counted)");
  app.add_option("--initial-balance", o->initial_balance, "txn: the balance --preload gives every key")
      ->capture_default_str();
  app.add_option("--max-retries", o->max_retries, "txn: compare failures before a transfer gives up")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  AddDurationOption(app, "--backoff-base", &o->backoff_base,
                    "txn: retry n waits a random time below base * 2^(n-1) (jittered exponential backoff)");
  AddDurationOption(app, "--backoff-max", &o->backoff_max, "txn: cap of the retry wait");
  app.add_option("--seed", o->seed, "random seed (the run is random, not replayable: timing differs)")
      ->capture_default_str();

  app.add_flag("--json", o->json, "print the report as JSON on stdout (the text report goes to stderr)");
  app.add_flag("--quiet", o->quiet, "no progress line");
  app.add_option("--percentiles-file", o->percentiles_file,
                 "write the latency percentiles in HdrHistogram's .hgrm format (milliseconds) to FILE")
      ->type_name("FILE");
  app.add_option("--svg", o->svg_file, "write an SVG chart of throughput and latency over time to FILE")
      ->type_name("FILE");
}

absl::Status ValidateBenchOptions(const BenchOptions& o) {
  if (!o.compare.empty() && (o.compare.size() < 2 || o.compare.size() > kMaxCompared)) {
    return absl::InvalidArgumentError(absl::StrCat("--compare takes 2 to ", kMaxCompared, " endpoints"));
  }
  if (!o.compare.empty() && (!o.percentiles_file.empty() || !o.svg_file.empty())) {
    return absl::InvalidArgumentError("--percentiles-file and --svg describe one run: not with --compare");
  }
  if (o.total == 0 && o.duration <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--duration must be positive (or give --total)");
  }
  if (o.workload == Workload::kRange && static_cast<uint64_t>(o.range_size) > o.keys) {
    return absl::InvalidArgumentError(
        absl::StrCat("--range-size ", o.range_size, " is larger than the key space (--keys ", o.keys, ")"));
  }
  if (o.workload == Workload::kTxn && o.keys < 2) {
    return absl::InvalidArgumentError("txn moves amounts between two keys: --keys must be at least 2");
  }
  if (o.key_distribution == KeyDistribution::kZipfian && !(o.zipf_exponent > 0 && o.zipf_exponent < 1)) {
    return absl::InvalidArgumentError("--zipf-exponent must be in (0, 1)");
  }
  if (o.batch > 0 && o.mode != SendMode::kPipeline) {
    return absl::InvalidArgumentError("--batch needs --mode pipeline");
  }
  if (o.backoff_base <= absl::ZeroDuration() || o.backoff_max < o.backoff_base) {
    return absl::InvalidArgumentError("need 0 < --backoff-base <= --backoff-max");
  }
  return KeySpace::Create(o.key_prefix, o.key_size, o.keys).status();
}

}  // namespace revkv::client
