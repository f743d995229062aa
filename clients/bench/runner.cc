// Running the phases of a benchmark, probing connections, and the progress line.
#include "clients/bench/runner.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "clients/bench/pipeline_connection.h"
#include "clients/bench/unary_connection.h"
#include "clients/bench/worker.h"
#include "clients/common/grpc_status.h"
#include "etcdserverpb/rpc.grpc.pb.h"

namespace revkv::client {
namespace {

struct ProbeResult {
  grpc::Status status;
  std::string version;
};

// Waits up to `dial_timeout` for the channel to connect, then asks Maintenance/Status. A server that
// does not implement Status is reachable all the same.
ProbeResult Probe(const std::shared_ptr<grpc::Channel>& channel, absl::Duration dial_timeout) {
  const auto now = std::chrono::system_clock::now();
  const auto deadline = now + absl::ToChronoNanoseconds(dial_timeout);
  channel->WaitForConnected(deadline);
  auto stub = etcdserverpb::Maintenance::NewStub(channel);
  grpc::ClientContext context;
  // Not connected by now: the call fails fast with the channel's last error (UNAVAILABLE and why).
  context.set_deadline(std::max(deadline, std::chrono::system_clock::now() + std::chrono::seconds(1)));
  etcdserverpb::StatusResponse response;
  ProbeResult result;
  result.status = stub->Status(&context, etcdserverpb::StatusRequest(), &response);
  if (result.status.error_code() == grpc::StatusCode::UNIMPLEMENTED) result.status = grpc::Status::OK;
  result.version = response.version();
  return result;
}

// Shared between a phase's workers (which finish) and the main thread (which waits and reports).
// std::mutex rather than absl::Mutex: Debian's absl is not built with -fsanitize=thread, so
// ThreadSanitizer would not see an absl::Mutex order `finished`.
struct PhaseState {
  std::mutex mu;
  std::condition_variable all_finished;
  int finished ABSL_GUARDED_BY(mu) = 0;
  int workers = 0;
};

struct LiveTotals {
  uint64_t ops = 0;
  uint64_t errors = 0;
  uint64_t retries = 0;
};

LiveTotals ReadLive(const std::vector<std::unique_ptr<Worker>>& workers) {
  LiveTotals totals;
  for (const auto& worker : workers) {
    const LiveCounters& live = worker->stats()->live;
    totals.ops += live.ops.load(std::memory_order_relaxed);
    totals.errors += live.errors.load(std::memory_order_relaxed);
    totals.retries += live.retries.load(std::memory_order_relaxed);
  }
  return totals;
}

// The measured operations' latencies so far, every worker's merged (runtime::Histogram: a snapshot
// may be taken while the workers record).
runtime::HistogramSnapshot ReadLatencies(const std::vector<std::unique_ptr<Worker>>& workers) {
  runtime::HistogramSnapshot all = LatencyHistogram().Snapshot();
  for (const auto& worker : workers) all.Merge(worker->stats()->latency.Snapshot());
  return all;
}

// What was recorded between `before` and `after` (both of the same histograms; counters only grow).
runtime::HistogramSnapshot Since(const runtime::HistogramSnapshot& before,
                                 const runtime::HistogramSnapshot& after) {
  runtime::HistogramSnapshot d = after;
  d.count = 0;
  for (size_t i = 0; i < d.buckets.size(); ++i) {
    d.buckets[i] -= std::min(d.buckets[i], i < before.buckets.size() ? before.buckets[i] : 0);
    d.count += d.buckets[i];
  }
  d.sum = after.sum - std::min(after.sum, before.sum);
  return d;  // min and max are those of the whole run: percentiles stay within them
}

// Runs `plan` on every worker and waits for all of them, printing a progress line each second and, for
// the measured phase, adding each second's throughput and latency to `timeline` (when not null).
void RunPhase(const RunContext& context, std::vector<std::unique_ptr<Worker>>& workers, const PhasePlan& plan,
              std::vector<TimelineSample>* timeline = nullptr) {
  PhaseState state;
  state.workers = static_cast<int>(workers.size());
  for (auto& worker : workers) {
    worker->StartPhase(plan, [&state] {
      std::lock_guard<std::mutex> lock(state.mu);
      if (++state.finished == state.workers) state.all_finished.notify_all();
    });
  }
  const bool show = !context.options->quiet;
  const bool terminal = isatty(STDERR_FILENO) == 1;
  LiveTotals last = ReadLive(workers);
  Clock::time_point last_time = plan.start;
  Clock::time_point tick = plan.start + std::chrono::seconds(1);
  bool printed = false;
  runtime::HistogramSnapshot sampled = ReadLatencies(workers);
  Clock::time_point sampled_time = plan.start;
  // One timeline point: the measured operations completed since the last one.
  const auto sample = [&](Clock::time_point now) {
    if (timeline == nullptr || plan.kind != Phase::kMeasured || now <= plan.warmup_end) return;
    const runtime::HistogramSnapshot latencies = ReadLatencies(workers);
    const runtime::HistogramSnapshot interval = Since(sampled, latencies);
    const double seconds =
        std::chrono::duration<double>(now - std::max(sampled_time, plan.warmup_end)).count();
    if (seconds > 0.05 && interval.count > 0) {
      timeline->push_back({.seconds = std::chrono::duration<double>(now - plan.warmup_end).count(),
                           .ops_per_second = static_cast<double>(interval.count) / seconds,
                           .p50_us = interval.ValueAtPercentile(50),
                           .p99_us = interval.ValueAtPercentile(99),
                           .p999_us = interval.ValueAtPercentile(99.9)});
    }
    sampled = latencies;
    sampled_time = now;
  };
  const double planned_seconds =
      plan.end == Clock::time_point::max() ? 0 : std::chrono::duration<double>(plan.end - plan.start).count();
  while (true) {
    {
      std::unique_lock<std::mutex> lock(state.mu);
      if (state.all_finished.wait_until(lock, tick, [&state] { return state.finished == state.workers; }))
        break;
    }
    const Clock::time_point now = Clock::now();
    tick += std::chrono::seconds(1);
    sample(now);
    if (!show) continue;
    const LiveTotals totals = ReadLive(workers);
    const double seconds = std::chrono::duration<double>(now - last_time).count();
    const double rate = seconds > 0 ? static_cast<double>(totals.ops - last.ops) / seconds : 0;
    const char* phase = plan.kind == Phase::kPreload ? "preload"
                        : now < plan.warmup_end      ? "warmup"
                        : now < plan.end             ? "measure"
                                                     : "drain";
    // "3.0s of 11.0s" (warm-up included) for a timed run; "ops 41,000 of 100,000" for a counted one.
    const std::string of = planned_seconds > 0 ? absl::StrFormat(" of %.1fs", planned_seconds) : "";
    std::string line = absl::StrFormat("%s[%-7s %5.1fs%s] %10.0f ops/s  ops %llu", context.label, phase,
                                       std::chrono::duration<double>(now - plan.start).count(), of, rate,
                                       static_cast<unsigned long long>(totals.ops));
    if (plan.kind == Phase::kMeasured && plan.total > 0)
      absl::StrAppend(&line, " of ", plan.total, " measured");
    absl::StrAppend(&line, "  errors ", totals.errors);
    if (context.options->workload == Workload::kTxn) {
      absl::StrAppend(&line, "  retries ", totals.retries);
    }
    std::fprintf(stderr, terminal ? "\r\033[K%s" : "%s\n", line.c_str());
    std::fflush(stderr);
    printed = true;
    last = totals;
    last_time = now;
  }
  for (auto& worker : workers) worker->Join();
  sample(Clock::now());  // the last part of a second
  if (printed && terminal) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
}

}  // namespace

std::string JoinEndpoints(const std::vector<Endpoint>& endpoints) {
  std::string text;
  for (const Endpoint& e : endpoints) {
    absl::StrAppend(&text, text.empty() ? "" : ",", e.https ? "https://" : "", e.target);
  }
  return text;
}

RunReport RunBenchmark(const RunContext& context, const std::vector<Endpoint>& endpoints, bool preload) {
  const BenchOptions& o = *context.options;
  const int connections = o.connections;
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int thread_count = std::min(connections, o.threads > 0 ? o.threads : cores);

  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < thread_count; ++i) workers.push_back(std::make_unique<Worker>());
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  channels.reserve(connections);
  for (int c = 0; c < connections; ++c) {
    channels.push_back(context.channels->Connect(endpoints[c % endpoints.size()], c));
    Worker& worker = *workers[c % thread_count];
    ConnectionConfig config;
    config.index = c;
    config.inflight = o.inflight;
    config.batch = o.batch;
    config.timeout = absl::ToChronoNanoseconds(o.timeout);
    config.seed = o.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(c);
    config.spec = context.spec;
    if (o.mode == SendMode::kUnary) {
      worker.AddConnection(std::make_unique<UnaryConnection>(config, channels.back(), worker.cq(),
                                                             worker.stats(), worker.open_connections()));
    } else {
      worker.AddConnection(std::make_unique<PipelineConnection>(config, channels.back(), worker.cq(),
                                                                worker.stats(), worker.open_connections()));
    }
  }

  // Probe every connection at once, so that an unreachable endpoint costs one dial timeout, not many.
  std::vector<ProbeResult> probes(connections);
  {
    std::vector<std::thread> probers;
    probers.reserve(connections);
    for (int c = 0; c < connections; ++c) {
      probers.emplace_back([&, c] { probes[c] = Probe(channels[c], o.transport.dial_timeout); });
    }
    for (std::thread& t : probers) t.join();
  }
  WorkerStats connect_stats;
  std::string failure;
  std::string version;
  for (int c = 0; c < connections; ++c) {
    connect_stats.CountRequest(Method::kStatus);
    const grpc::Status& status = probes[c].status;
    if (status.ok()) {
      connect_stats.CountDone(Phase::kConnect);
      if (version.empty()) version = probes[c].version;
    } else {
      connect_stats.CountError(Phase::kConnect, status);
      if (failure.empty()) {
        failure =
            absl::StrCat("cannot reach ", JoinEndpoints({endpoints[c % endpoints.size()]}), " (connection ",
                         c, "): ", StatusCodeName(status.error_code()), ": ", status.error_message());
      }
    }
  }

  Clock::time_point measure_start = Clock::now();
  std::vector<TimelineSample> timeline;
  int64_t measure_start_unix_us = 0;
  double load_start = -1;
  double load_end = -1;
  double client_cpu_percent = -1;
  if (failure.empty()) {
    if (preload) {
      PhasePlan plan;
      plan.kind = Phase::kPreload;
      plan.start = Clock::now();
      plan.preload_keys = context.spec->keys.size();
      plan.connections = connections;
      RunPhase(context, workers, plan);
    }
    PhasePlan plan;
    plan.kind = Phase::kMeasured;
    plan.start = Clock::now();
    plan.warmup_end = plan.start + absl::ToChronoNanoseconds(o.warmup);
    if (o.total == 0) plan.end = plan.warmup_end + absl::ToChronoNanoseconds(o.duration);
    plan.total = o.total;
    plan.connections = connections;
    plan.rate = o.rate;
    plan.rate_backlog = absl::ToDoubleSeconds(o.rate_backlog);
    plan.stop = context.stop;
    measure_start = plan.warmup_end;
    measure_start_unix_us = absl::ToUnixMicros(
        absl::Now() + absl::FromChrono(std::chrono::duration_cast<std::chrono::nanoseconds>(plan.warmup_end -
                                                                                            Clock::now())));
    load_start = HostLoadAverage();
    const double cpu_start = ProcessCpuSeconds();
    RunPhase(context, workers, plan, &timeline);
    const double cpu_seconds = ProcessCpuSeconds() - cpu_start;
    const double wall_seconds = std::chrono::duration<double>(Clock::now() - plan.start).count();
    if (wall_seconds > 0) client_cpu_percent = 100 * cpu_seconds / wall_seconds;
    load_end = HostLoadAverage();
  }

  WorkerStats merged;
  merged.Merge(connect_stats);
  for (const auto& worker : workers) merged.Merge(*worker->stats());
  RunReport report = MakeRunReport(JoinEndpoints(endpoints), merged, measure_start,
                                   o.total == 0 ? absl::ToDoubleSeconds(o.duration) : 0);
  report.failure = std::move(failure);
  report.server_version = std::move(version);
  report.load_average_start = load_start;
  report.load_average_end = load_end;
  report.client_cpu_percent = client_cpu_percent;
  report.measure_start_unix_us = measure_start_unix_us;
  report.interrupted = context.stop != nullptr && context.stop->load(std::memory_order_acquire);
  report.timeline = std::move(timeline);
  return report;
}

CompareReport RunComparison(const RunContext& context, const std::vector<std::vector<Endpoint>>& sides) {
  CompareReport report;
  for (const auto& side : sides) report.endpoints.push_back(JoinEndpoints(side));
  report.rounds.resize(sides.size());
  int run_order = 0;
  for (int round = 0; round < context.options->rounds; ++round) {
    // Even rounds in order, odd rounds in reverse (ABBA for two sides), so that drift over time biases
    // no side.
    for (size_t i = 0; i < sides.size(); ++i) {
      const size_t side = round % 2 == 0 ? i : sides.size() - 1 - i;
      RunContext run = context;
      run.label = absl::StrCat(std::string(1, static_cast<char>('A' + side)), " round ", round + 1, " ");
      RunReport result = RunBenchmark(run, sides[side], context.options->preload && round == 0);
      result.run_order = ++run_order;
      const bool failed = !result.failure.empty();
      report.rounds[side].push_back(std::move(result));
      if (failed || (context.stop != nullptr && context.stop->load(std::memory_order_acquire))) return report;
    }
  }
  return report;
}

}  // namespace revkv::client
