// revkv-null-server: serves revkv's data-path services with empty handlers (see null_server.h).
//
//   revkv-null-server [--listen 127.0.0.1:2390] [--api callback|cq] [--store none|map] [--workers N]
//                     [--stats-file counts.json]
//
// Runs until SIGINT or SIGTERM, then prints the requests it served per method to stderr and, with
// --stats-file, writes them as a JSON object {"Range": n, "Put": n, ...}.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "bench/null_server/null_server.h"

namespace {

int Main(int argc, char** argv) {
  // Debian's absl tracks the lock order of every absl::Mutex acquisition (gRPC's mutexes are absl's) to
  // report potential deadlocks: a graph update per lock, 3-4% of a server's CPU under load
  // (docs/benchmarks.md). Off; revkv's own locks are checked by TSan and docs/locks.md.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  revkv::bench::NullServerOptions options;
  std::string stats_file;
  CLI::App app("revkv-null-server: revkv's gRPC services with empty handlers, the gRPC ceiling");
  app.add_option("--listen", options.listen, "address to serve on (host:port; port 0 picks one)")
      ->capture_default_str();
  app.add_option("--api", options.api, "gRPC API: callback (gRPC's threads) or cq (completion queues)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, revkv::bench::NullServerApi>{
              {"callback", revkv::bench::NullServerApi::kCallback},
              {"cq", revkv::bench::NullServerApi::kCompletionQueue}},
          CLI::ignore_case))
      ->default_str("callback");
  app.add_option(
         "--store", options.store,
         "none: answer empty (the gRPC ceiling); map: a std::map-like store behind one lock (callback)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, revkv::bench::NullServerStore>{{"none", revkv::bench::NullServerStore::kNone},
                                                               {"map", revkv::bench::NullServerStore::kMap}},
          CLI::ignore_case))
      ->default_str("none");
  app.add_option("--workers", options.workers, "cq API: worker threads, each with its own completion queue")
      ->default_str("number of cores")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--stats-file", stats_file, "write per-method request counts as JSON here on exit");
  CLI11_PARSE(app, argc, argv);

  // Block the stop signals before any thread starts, so that every thread inherits the mask and the
  // signal is taken only by sigwait below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto server = revkv::bench::NullServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "revkv-null-server: %s\n", server.status().ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "revkv-null-server: listening on port %d, %s API, store %s, %d workers\n",
               (*server)->port(), std::string(revkv::bench::NullServerApiName(options.api)).c_str(),
               std::string(revkv::bench::NullServerStoreName(options.store)).c_str(), (*server)->workers());

  int signal = 0;
  sigwait(&stop_signals, &signal);
  (*server)->Shutdown();

  const auto counts = (*server)->Counts().ToMap();
  nlohmann::json json(counts);
  for (const auto& [method, count] : counts) {
    std::fprintf(stderr, "revkv-null-server: %-13s %llu\n", method.c_str(),
                 static_cast<unsigned long long>(count));
  }
  if (!stats_file.empty()) {
    std::ofstream out(stats_file);
    out << json.dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "revkv-null-server: cannot write %s\n", stats_file.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
