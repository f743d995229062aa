// revkv-bench-gc: revkv's heap and collectors against Boehm GC on the same workload (workload.h), for
// several live-set sizes, in one run. Each (heap, live set) configuration runs in a child process of
// its own (fork): neither collector can be shut down or re-configured once started, and each child
// reports its own peak RSS. The parent starts no thread, so forking it is safe.
//
//   revkv-bench-gc                  full run (live sets 16, 64, 128, 256 MiB), a few minutes
//   revkv-bench-gc --quick          smoke test: one small live set, a few seconds
//   revkv-bench-gc --runs 3         every configuration three times (interleaved), medians reported
//   revkv-bench-gc --json           JSON on stdout instead of the tables (--json-file writes it too)
//   revkv-bench-gc --merge a.json b.json   medians of separately launched runs
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/gc/heaps.h"
#include "bench/gc/report.h"
#include "bench/gc/summary.h"

namespace revkv::bench::gc {
namespace {

using nlohmann::json;

struct Heap {
  std::string name;    // "revkv", "boehm-default", "boehm-1-marker", "boehm-incremental-matched", ...
  BoehmOptions boehm;  // Boehm only
};

// The free-space divisor that gives Boehm the headroom revkv's major trigger gives it. revkv starts a
// major collection when the bytes in use reach live * g (g: HeapOptions::major_growth_factor, 2), so
// it allocates (g - 1) * live between two. Boehm collects once it has allocated min_bytes_allocd()
// (libgc's alloc.c): (2 * pointer-containing bytes in use + roots) / divisor, halved in incremental
// mode; every byte of the benchmark's live set holds pointers, so it allocates 2 * live / d
// (live / d incremental) between two. Equal when d = 2 / (g - 1), or 1 / (g - 1) incremental:
// 2 and 1 for g = 2, against the default 3 (2/3 and 1/3 of the live set).
unsigned MatchedFreeSpaceDivisor(bool incremental) {
  const double headroom = RevkvMajorGrowthFactor() - 1.0;
  const double d = (incremental ? 1.0 : 2.0) / headroom;
  return d < 1.0 ? 1u : static_cast<unsigned>(d + 0.5);
}

// Heap names: revkv; boehm-default or boehm-<n>-marker (stop-the-world collections);
// boehm-incremental or boehm-incremental-<n>-marker (GC_enable_incremental); any Boehm name with
// "-matched" at the end runs with MatchedFreeSpaceDivisor. `divisor` (> 0) sets the divisor of the
// other Boehm heaps and is appended to their names ("-d<n>") so that results stay apart in merges.
std::optional<Heap> ParseHeap(const std::string& name, unsigned divisor) {
  if (name == "revkv") return Heap{name, {}};
  std::string rest = name;
  const auto strip_suffix = [&rest](const std::string& suffix) {
    if (rest.size() <= suffix.size() || rest.compare(rest.size() - suffix.size(), suffix.size(), suffix) != 0)
      return false;
    rest.resize(rest.size() - suffix.size());
    return true;
  };
  const auto strip_prefix = [&rest](const std::string& prefix) {
    if (rest.rfind(prefix, 0) != 0) return false;
    rest = rest.substr(prefix.size());
    return true;
  };
  BoehmOptions o;
  const bool matched = strip_suffix("-matched");
  if (!strip_prefix("boehm")) return std::nullopt;
  if (rest.empty()) return std::nullopt;
  if (strip_prefix("-incremental")) o.incremental = true;
  if (rest == "-default" && !o.incremental) {
    rest.clear();
  } else if (!rest.empty()) {
    if (!strip_prefix("-") || !strip_suffix("-marker") || rest.empty() ||
        rest.find_first_not_of("0123456789") != std::string::npos || rest.size() > 3) {
      return std::nullopt;
    }
    o.markers = static_cast<unsigned>(std::stoul(rest));
    if (o.markers == 0) return std::nullopt;
  }
  o.variant = name;
  if (matched) {
    o.free_space_divisor = MatchedFreeSpaceDivisor(o.incremental);
  } else if (divisor > 0) {
    o.free_space_divisor = divisor;
    o.variant += "-d" + std::to_string(divisor);
  }
  return Heap{o.variant, o};
}

// Runs one configuration in a child process; returns its JSON, or nullopt if the child failed.
std::optional<json> RunInChild(const Heap& heap, const WorkloadConfig& config) {
  int fds[2];
  if (pipe(fds) != 0) {
    std::perror("pipe");
    return std::nullopt;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    return std::nullopt;
  }
  if (pid == 0) {
    close(fds[0]);
    const json result = heap.name == "revkv" ? RunRevkv(config) : RunBoehm(config, heap.boehm);
    const std::string text = result.dump();
    for (size_t done = 0; done < text.size();) {
      const ssize_t n = write(fds[1], text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) _exit(2);
      done += static_cast<size_t>(n);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "revkv-bench-gc: %s child failed (status %d)\n", heap.name.c_str(), status);
    return std::nullopt;
  }
  json result = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (result.is_discarded()) return std::nullopt;
  return result;
}

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

// Groups the raw results of earlier runs (--json-file outputs) by live set and heap, in the order
// first seen, and returns their medians; the raw results go to `raw`.
std::vector<json> MergeFiles(const std::vector<std::string>& files, json& raw) {
  std::vector<std::pair<std::string, std::vector<json>>> groups;
  for (const std::string& file : files) {
    std::ifstream in(file);
    const json doc = json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded() || !doc.contains("raw")) {
      std::fprintf(stderr, "revkv-bench-gc: %s is not a revkv-bench-gc JSON file\n", file.c_str());
      continue;
    }
    for (const json& r : doc["raw"]) {
      const std::string key =
          std::to_string(r["live_mib"].get<uint64_t>()) + "/" + r["variant"].get<std::string>();
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
      if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
      it->second.push_back(r);
      raw.push_back(r);
    }
  }
  // By live set, then revkv, boehm-default, the other Boehm variants.
  const auto order = [](const json& r) {
    const std::string v = r["variant"].get<std::string>();
    return std::make_pair(r["live_mib"].get<uint64_t>(), v == "revkv" ? 0 : v == "boehm-default" ? 1 : 2);
  };
  std::stable_sort(groups.begin(), groups.end(), [&](const auto& a, const auto& b) {
    return order(a.second.front()) < order(b.second.front());
  });
  std::vector<json> medians;
  for (const auto& [key, runs] : groups) medians.push_back(MedianOf(runs));
  return medians;
}

int Main(int argc, char** argv) {
  CLI::App app{"revkv-bench-gc: revkv's heap and collectors against Boehm GC"};
  bool quick = false;
  bool json_stdout = false;
  std::string json_file;
  int runs = 1;
  std::vector<size_t> live_mib;
  std::vector<std::string> heap_names = {"revkv", "boehm-default", "boehm-1-marker", "boehm-incremental"};
  unsigned boehm_divisor = 0;
  std::string live_basis = "nodes";
  WorkloadConfig base;
  base.stream_steps = uint64_t{1} << 20;
  base.two_thread_seconds = 2.0;
  base.force_interval_ms = 50;
  base.forced_collections = 5;
  base.garbage_steps_between_forced = uint64_t{1} << 14;
  app.add_flag("--quick", quick, "smoke test: live set 16 MiB, short phases (a few seconds)");
  app.add_option("--runs", runs, "run every configuration this many times (interleaved) and report medians")
      ->check(CLI::Range(1, 99));
  app.add_option("--live", live_mib, "live-set sizes in MiB of revkv nodes (default 16,64,128,256)")
      ->delimiter(',');
  app.add_option("--heaps", heap_names,
                 "revkv, boehm-default, boehm-<n>-marker, boehm-incremental, boehm-incremental-<n>-marker; "
                 "a Boehm name ending in -matched gets the free-space divisor that matches revkv's major "
                 "trigger (2 stop-the-world, 1 incremental)")
      ->delimiter(',');
  app.add_option("--boehm-free-space-divisor", boehm_divisor,
                 "GC_set_free_space_divisor for the Boehm heaps not named -matched (default: libgc's 3); "
                 "their names get -d<n>")
      ->check(CLI::Range(1u, 1000u));
  app.add_option(
         "--live-basis", live_basis,
         "nodes: both heaps hold the same tree (node count from the revkv size); bytes: each heap holds "
         "the live-set size in its own nodes as stored (Boehm: GC_size, 48 bytes like revkv's, so the same "
         "tree)")
      ->check(CLI::IsMember({"nodes", "bytes"}));
  app.add_option("--stream-steps", base.stream_steps, "one-thread stream: temporary trees of 15 nodes");
  app.add_option("--threads-seconds", base.two_thread_seconds, "duration of the two-thread phase");
  app.add_option("--force-interval-ms", base.force_interval_ms,
                 "two-thread phase: forced full collection period");
  app.add_option("--forced", base.forced_collections, "full collections forced with the live set in place");
  size_t nursery_kib = 0;
  app.add_option("--revkv-nursery-kib", nursery_kib,
                 "revkv nursery per thread (default: HeapOptions' 4 MiB)");
  bool no_reserve = false;
  app.add_flag("--revkv-no-evacuation-reserve", no_reserve,
               "revkv: return free pages to the OS after a major collection (the default since major "
               "collections mark in place; kept so that earlier command lines still run)");
  bool reserve = false;
  app.add_flag("--revkv-evacuation-reserve", reserve,
               "revkv: keep as many free pages mapped after a major collection as the live data uses, for "
               "the next evacuation (HeapOptions::retain_evacuation_reserve = true)");
  bool compact = false;
  app.add_flag(
      "--revkv-compact", compact,
      "revkv: every major collection the benchmark asks for compacts (MajorMode::kCompactEverything, "
      "every live object copied, as before mark-region) instead of marking in place and evacuating "
      "only sparse chunks");
  app.add_flag("--json", json_stdout, "print JSON on stdout instead of the tables");
  app.add_option("--json-file", json_file, "also write the JSON to this file");
  std::vector<std::string> merge_files;
  app.add_option(
      "--merge", merge_files,
      "run nothing: report the medians of the runs in these --json-file outputs, grouped by live set "
      "and heap");
  CLI11_PARSE(app, argc, argv);

  if (quick) {
    if (live_mib.empty()) live_mib = {16};
    base.stream_steps = uint64_t{1} << 16;
    base.two_thread_seconds = 0.25;
    base.forced_collections = 2;
    base.garbage_steps_between_forced = uint64_t{1} << 12;
  }
  if (live_mib.empty()) live_mib = {16, 64, 128, 256};
  base.revkv_nursery_bytes = nursery_kib * 1024;
  base.revkv_evacuation_reserve = reserve && !no_reserve;
  base.revkv_compact = compact;
  std::vector<Heap> heaps;
  for (const std::string& name : heap_names) {
    std::optional<Heap> h = ParseHeap(name, boehm_divisor);
    if (!h) {
      std::fprintf(stderr,
                   "revkv-bench-gc: unknown heap '%s' (revkv, boehm-default, boehm-<n>-marker, "
                   "boehm-incremental, boehm-incremental-<n>-marker, each Boehm name optionally "
                   "followed by -matched)\n",
                   name.c_str());
      return 2;
    }
    heaps.push_back(*h);
  }

  if (!merge_files.empty()) {
    json raw = json::array();
    const std::vector<json> medians = MergeFiles(merge_files, raw);
    const json doc = {
        {"benchmark", "revkv-bench-gc"}, {"merged_from", merge_files}, {"results", medians}, {"raw", raw}};
    if (json_stdout) {
      std::printf("%s\n", doc.dump(2).c_str());
    } else {
      std::printf("revkv-bench-gc: medians of %zu results from %zu file(s)\n", raw.size(),
                  merge_files.size());
      PrintTables(medians, stdout);
    }
    if (!json_file.empty()) std::ofstream(json_file) << doc.dump(2) << "\n";
    return medians.empty() ? 1 : 0;
  }

  const json machine_before = Machine();
  const uint64_t t0 = NowNanos();
  std::vector<std::vector<json>> by_config(live_mib.size() * heaps.size());
  const size_t total = by_config.size() * static_cast<size_t>(runs);
  size_t done = 0;
  bool failed = false;
  for (int run = 0; run < runs; ++run) {
    for (size_t l = 0; l < live_mib.size(); ++l) {
      for (size_t h = 0; h < heaps.size(); ++h) {
        WorkloadConfig c = base;
        c.live_mib = live_mib[l];
        c.live_nodes = (uint64_t{c.live_mib} << 20) / RevkvNodeBytes();
        // Boehm's node size is known only once its collector runs (GC_size): the child sizes the tree.
        if (live_basis == "bytes" && heaps[h].name != "revkv") c.live_bytes = uint64_t{c.live_mib} << 20;
        const uint64_t start = NowNanos();
        std::optional<json> r = RunInChild(heaps[h], c);
        ++done;
        std::fprintf(stderr, "[%zu/%zu] run %d %-26s live %4zu MiB: %s in %.1f s\n", done, total, run + 1,
                     heaps[h].name.c_str(), c.live_mib, r ? "ok" : "FAILED",
                     static_cast<double>(NowNanos() - start) / 1e9);
        if (!r) {
          failed = true;
          continue;
        }
        if (!(*r)["verified"].get<bool>()) {
          std::fprintf(stderr, "revkv-bench-gc: %s lost part of the long-lived tree\n",
                       heaps[h].name.c_str());
          failed = true;
        }
        (*r)["run"] = run + 1;
        by_config[l * heaps.size() + h].push_back(std::move(*r));
      }
    }
  }

  std::vector<json> medians;
  json raw = json::array();
  for (const std::vector<json>& runs_of_config : by_config) {
    if (runs_of_config.empty()) continue;
    medians.push_back(MedianOf(runs_of_config));
    for (const json& r : runs_of_config) raw.push_back(r);
  }
  json doc = {{"benchmark", "revkv-bench-gc"},
              {"quick", quick},
              {"runs", runs},
              {"live_basis", live_basis},
              {"seconds", static_cast<double>(NowNanos() - t0) / 1e9},
              {"machine_before", machine_before},
              {"machine_after", Machine()},
              {"workload",
               {{"temp_tree_nodes", kTempTreeNodes},
                {"ring_slots", kRingSlots},
                {"stream_steps", base.stream_steps},
                {"two_thread_seconds", base.two_thread_seconds},
                {"force_interval_ms", base.force_interval_ms},
                {"forced_collections", base.forced_collections},
                {"garbage_steps_between_forced", base.garbage_steps_between_forced},
                {"revkv_nursery_bytes", base.revkv_nursery_bytes},
                {"revkv_evacuation_reserve", base.revkv_evacuation_reserve},
                {"revkv_compact", base.revkv_compact}}},
              {"results", medians},
              {"raw", raw}};
  if (json_stdout) {
    std::printf("%s\n", doc.dump(2).c_str());
  } else {
    std::printf("revkv-bench-gc: %d run(s)%s, medians; live basis: %s; load before: %s\n", runs,
                quick ? " (quick)" : "", live_basis.c_str(),
                machine_before["loadavg"].get<std::string>().c_str());
    PrintTables(medians, stdout);
  }
  if (!json_file.empty()) {
    std::ofstream f(json_file);
    f << doc.dump(2) << "\n";
  }
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace revkv::bench::gc

int main(int argc, char** argv) { return revkv::bench::gc::Main(argc, argv); }
