// revkv-bench-store: the store and the durable engine measured in-process, without gRPC.
//
// Subcommands:
//  - ops: Store operations per second (get, put, 90/10 mix, small txn) at 1 and 2 threads.
//  - wal: Puts through the Engine per fsync mode (always, interval, none), 1 and 8 writers.
//  - memory: heap and RSS bytes per key after a major collection, and Redis's for the same keys.
//  - recovery: Engine::Open time from the log alone and from a checkpoint.
//  - all: the four, in that order (the default).
//
// Options: --keys N (ops/wal key space, default 100k; memory/recovery keys, default 1M), --duration S
// (ops/wal seconds per case, default 2), --runs R (ops/wal/recovery, default 3, medians), --dir DIR (where
// the temporary data directory is made; default $TMPDIR, else /tmp), --quick (20k keys, 0.2 s, 2 runs: a
// smoke test of a few seconds), --no-redis, --max-heap-mib, --json / --json-file.
//
// Everything touching revkv's heap runs in child processes (child_process.h); this process only
// parses options, makes the data directory, drives the children and Redis, and prints.
#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench/store/benchmarks.h"
#include "bench/store/workload.h"

namespace revkv::bench::store {
namespace {

using nlohmann::json;

struct SubBenchmark {
  const char* name;
  absl::StatusOr<json> (*run)(const Config&);
  void (*print)(const json&, std::FILE*);
};

constexpr SubBenchmark kSubBenchmarks[] = {
    {"ops", RunOps, PrintOps},
    {"wal", RunWal, PrintWal},
    {"memory", RunMemory, PrintMemory},
    {"recovery", RunRecovery, PrintRecovery},
};

std::string FirstLineOf(const char* path, const std::string& prefix) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "";
}

json Machine() {
  std::string model = FirstLineOf("/proc/cpuinfo", "model name");
  if (const size_t colon = model.find(':'); colon != std::string::npos) model = model.substr(colon + 2);
  return {{"cpus", std::thread::hardware_concurrency()},
          {"cpu_model", model},
          {"loadavg", FirstLineOf("/proc/loadavg", "")}};
}

int Main(int argc, char** argv) {
  CLI::App app{"revkv-bench-store: the store and the durable engine, in-process"};
  std::string which = "all";
  Config config;
  uint64_t keys = 0;
  size_t max_heap_mib = 0;
  bool json_stdout = false;
  std::string json_file;
  std::string parent_dir;
  app.add_option("benchmark", which, "ops, wal, memory, recovery or all")
      ->check(CLI::IsMember({"ops", "wal", "memory", "recovery", "all"}));
  CLI::Option* keys_option = app.add_option(
      "--keys", keys,
      "ops and wal: key space (default 100000); memory and recovery: keys loaded (default 1000000)");
  CLI::Option* duration_option =
      app.add_option("--duration", config.seconds, "ops and wal: seconds per case and run (default 2)")
          ->check(CLI::PositiveNumber);
  CLI::Option* runs_option =
      app.add_option("--runs", config.runs,
                     "ops, wal, recovery: runs per case, interleaved; medians (default 3)")
          ->check(CLI::Range(1, 99));
  app.add_option("--dir", parent_dir,
                 "make the temporary data directory under DIR (default $TMPDIR, else /tmp)");
  app.add_flag("--quick", config.quick, "smoke test: 20000 keys, 0.2 s per case, 2 runs (unless given)");
  bool no_redis = false;
  app.add_flag("--no-redis", no_redis, "memory: do not compare with redis-server");
  app.add_option("--max-heap-mib", max_heap_mib, "revkv's heap limit in MiB (default: the runtime's, 2048)");
  app.add_flag("--json", json_stdout, "print JSON on stdout instead of the tables");
  app.add_option("--json-file", json_file, "also write the JSON to this file");
  CLI11_PARSE(app, argc, argv);

  if (config.quick) {
    config.ops_keys = config.load_keys = 20'000;
    if (duration_option->count() == 0) config.seconds = 0.2;
    if (runs_option->count() == 0) config.runs = 2;
  }
  if (keys_option->count() > 0) config.ops_keys = config.load_keys = keys;
  if (config.ops_keys == 0 || config.ops_keys >= 1'000'000'000'000ull) {
    std::fprintf(stderr, "revkv-bench-store: --keys must be in [1, 10^12)\n");
    return 2;
  }
  config.redis = !no_redis;
  config.max_heap_bytes = max_heap_mib << 20;

  if (parent_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    parent_dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  std::error_code ec;
  std::filesystem::create_directories(parent_dir, ec);
  std::string dir_template = parent_dir + "/revkv-bench-store-XXXXXX";
  if (mkdtemp(dir_template.data()) == nullptr) {
    std::perror(("revkv-bench-store: cannot make a directory under " + parent_dir).c_str());
    return 2;
  }
  config.dir = dir_template;

  const json machine = Machine();
  if (!json_stdout) {
    std::printf(
        "revkv-bench-store %s%s: %u cpu(s) (%s), load %s\ndata directory %s (%s), removed at the end\n",
        which.c_str(), config.quick ? " --quick" : "", machine["cpus"].get<unsigned>(),
        machine["cpu_model"].get<std::string>().c_str(), machine["loadavg"].get<std::string>().c_str(),
        config.dir.c_str(), FileSystemOf(config.dir).c_str());
    std::fflush(stdout);
  }
  const uint64_t start = NowNanos();
  json doc = {{"benchmark", "revkv-bench-store"},
              {"quick", config.quick},
              {"dir", config.dir},
              {"file_system", FileSystemOf(config.dir)},
              {"machine_before", machine}};
  bool failed = false;
  for (const SubBenchmark& b : kSubBenchmarks) {
    if (which != "all" && which != b.name) continue;
    absl::StatusOr<json> r = b.run(config);
    if (!r.ok()) {
      std::fprintf(stderr, "revkv-bench-store: %s failed: %s\n", b.name, r.status().ToString().c_str());
      doc[b.name] = {{"error", r.status().ToString()}};
      failed = true;
      continue;
    }
    if (!json_stdout) {
      b.print(*r, stdout);
      std::fflush(stdout);
    }
    doc[b.name] = std::move(*r);
  }
  std::filesystem::remove_all(config.dir, ec);
  doc["seconds"] = SecondsSince(start);
  doc["machine_after"] = Machine();
  if (json_stdout) {
    std::printf("%s\n", doc.dump(2).c_str());
  } else {
    std::printf("\nrevkv-bench-store: %s in %.1f s\n", failed ? "FAILED" : "done",
                doc["seconds"].get<double>());
  }
  if (!json_file.empty()) std::ofstream(json_file) << doc.dump(2) << "\n";
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace revkv::bench::store

int main(int argc, char** argv) { return revkv::bench::store::Main(argc, argv); }
