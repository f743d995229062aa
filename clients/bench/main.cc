// revkv-bench: a load generator for etcd's v3 API (revkv, etcd, revkv-null-server).
//
//   revkv-bench put --endpoints 127.0.0.1:2379 --connections 4 --inflight 16 --duration 10s
//   revkv-bench txn --preload --keys 1000 --json
//   revkv-bench get --compare 127.0.0.1:2379 127.0.0.1:2390 --rounds 3
//   revkv-bench get --compare 127.0.0.1:2390 127.0.0.1:2391 127.0.0.1:2379   # ceiling, naive store, revkv
#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/synchronization/mutex.h"
#include "clients/bench/options.h"
#include "clients/bench/report.h"
#include "clients/bench/runner.h"
#include "server/config/version.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitErrors = 1;
constexpr int kExitUsage = 2;

// Set by the first SIGINT: start no more operations, report what was measured. A lock-free atomic
// store is async-signal-safe; release pairs with the workers' acquire loads.
std::atomic<bool> g_stop{false};

extern "C" void OnInterrupt(int /*signal*/) {
  g_stop.store(true, std::memory_order_release);
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}

// Writes `text` to `path` (nothing when `path` is empty); false, with a message, if it cannot.
bool WriteFile(const std::string& path, const std::string& text) {
  if (path.empty()) return true;
  std::FILE* f = std::fopen(path.c_str(), "w");
  bool ok = f != nullptr && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f != nullptr && std::fclose(f) != 0) ok = false;
  if (!ok) std::fprintf(stderr, "revkv-bench: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
  return ok;
}

int Main(int argc, char** argv) {
  // Debian's absl tracks the lock order of every absl::Mutex acquisition (gRPC's mutexes are absl's) to
  // report potential deadlocks: a graph update per lock, 3-4% of a server's CPU under load
  // (docs/benchmarks.md). Off; revkv's own locks are checked by TSan and docs/locks.md.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  using namespace revkv::client;
  BenchOptions options;
  CLI::App app("revkv-bench: load generator for etcd's v3 gRPC API (revkv, etcd, revkv-null-server)");
  app.set_version_flag("--version", std::string("revkv-bench ") + std::string(revkv::server::kServerVersion),
                       "Print the version and exit");
  app.footer(
      "Exit status: 0 when every request succeeded, 1 when any failed or an endpoint was unreachable, "
      "2 for bad options.");
  AddBenchFlags(app, &options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  if (absl::Status valid = ValidateBenchOptions(options); !valid.ok()) {
    std::fprintf(stderr, "revkv-bench: %s\n", std::string(valid.message()).c_str());
    return kExitUsage;
  }
  absl::StatusOr<WorkloadSpec> spec = WorkloadSpec::Create(options);
  absl::StatusOr<ChannelFactory> channels = ChannelFactory::Create(options.transport);
  for (const absl::Status& status : {spec.status(), channels.status()}) {
    if (!status.ok()) {
      std::fprintf(stderr, "revkv-bench: %s\n", std::string(status.message()).c_str());
      return kExitUsage;
    }
  }
  std::vector<std::vector<Endpoint>> targets;
  for (const std::string& list :
       options.compare.empty() ? std::vector<std::string>{options.endpoints} : options.compare) {
    absl::StatusOr<std::vector<Endpoint>> endpoints = ParseEndpoints(list);
    if (!endpoints.ok()) {
      std::fprintf(stderr, "revkv-bench: %s\n", std::string(endpoints.status().message()).c_str());
      return kExitUsage;
    }
    targets.push_back(*std::move(endpoints));
  }

  std::signal(SIGINT, OnInterrupt);
  RunContext context{.options = &options, .spec = &*spec, .channels = &*channels, .stop = &g_stop};
  std::FILE* text_out = options.json ? stderr : stdout;
  bool ok = false;
  if (options.compare.empty()) {
    const RunReport report = RunBenchmark(context, targets[0], options.preload);
    PrintText(text_out, report, options);
    if (!WriteFile(options.percentiles_file, PercentileDistribution(report.latency_histogram)) ||
        !WriteFile(options.svg_file, TimelineSvg(report, options))) {
      return kExitErrors;
    }
    if (options.json)
      std::printf(
          "%s\n",
          ToJson(report, options).dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    if (!report.failure.empty()) std::fprintf(stderr, "revkv-bench: %s\n", report.failure.c_str());
    ok = report.ok();
  } else {
    const CompareReport report = RunComparison(context, targets);
    PrintText(text_out, report, options);
    if (options.json)
      std::printf(
          "%s\n",
          ToJson(report, options).dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    ok = report.ok();
  }
  return ok ? kExitOk : kExitErrors;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
