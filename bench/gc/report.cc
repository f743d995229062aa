// Medians across runs and the tables of revkv-bench-gc (see report.h). Pauses print in milliseconds,
// time-to-safepoint in microseconds.
#include "bench/gc/report.h"

#include <algorithm>
#include <string>

namespace revkv::bench::gc {

namespace {

using nlohmann::json;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The value at `path` ("a/b/c"), or null.
const json& At(const json& j, const std::string& path) {
  static const json kNull;
  const json* cur = &j;
  size_t from = 0;
  while (from <= path.size()) {
    const size_t slash = std::min(path.find('/', from), path.size());
    const std::string key = path.substr(from, slash - from);
    if (!cur->is_object() || !cur->contains(key)) return kNull;
    cur = &(*cur)[key];
    from = slash + 1;
  }
  return *cur;
}

double Num(const json& j, const std::string& path) {
  const json& v = At(j, path);
  return v.is_number() ? v.get<double>() : 0.0;
}

// "avg / p50 / p99 / max" of the summary at `path`, divided by `unit`; "-" when it has no samples.
std::string Quad(const json& j, const std::string& path, double unit) {
  if (Num(j, path + "/count") == 0) return "-";
  char buf[128];
  std::snprintf(buf, sizeof(buf), "%.2f / %.2f / %.2f / %.2f", Num(j, path + "/avg_ns") / unit,
                Num(j, path + "/p50_ns") / unit, Num(j, path + "/p99_ns") / unit,
                Num(j, path + "/max_ns") / unit);
  return buf;
}

std::string Count(const json& j, const std::string& path) {
  return std::to_string(static_cast<uint64_t>(Num(j, path + "/count")));
}

std::string HeapName(const json& r) {
  std::string name = At(r, "variant").is_string() ? At(r, "variant").get<std::string>() : "?";
  if (At(r, "system") == "boehm") {
    name += " (" + std::to_string(static_cast<int>(Num(r, "markers"))) + "m";
    if (Num(r, "free_space_divisor") > 0)
      name += " d" + std::to_string(static_cast<int>(Num(r, "free_space_divisor")));
    name += ")";
  }
  return name;
}

constexpr double kMs = 1e6;
constexpr double kUs = 1e3;
constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

json MedianOf(const std::vector<json>& runs) {
  const json& first = runs.front();
  if (first.is_object()) {
    json out = json::object();
    for (const auto& [key, value] : first.items()) {
      std::vector<json> column;
      for (const json& r : runs) {
        if (r.is_object() && r.contains(key)) column.push_back(r[key]);
      }
      out[key] = MedianOf(column);
    }
    return out;
  }
  if (first.is_boolean()) {
    bool all = true;
    for (const json& r : runs) all = all && r.is_boolean() && r.get<bool>();
    return all;
  }
  if (first.is_number()) {
    std::vector<double> v;
    for (const json& r : runs) {
      if (r.is_number()) v.push_back(r.get<double>());
    }
    if (runs.size() == 1) return first;
    return Median(std::move(v));
  }
  return first;
}

void PrintTables(const std::vector<json>& results, std::FILE* out) {
  std::fprintf(out,
               "\nShort-lived stream, 1 thread (ns per allocation includes the collections it causes)\n");
  std::fprintf(out, "%-8s %-36s %6s %9s %12s %7s %-32s %7s %-36s %6s %-32s\n", "live", "heap", "node",
               "ns/alloc", "outside GC", "young", "young pause ms avg/p50/p99/max", "full",
               "full pause ms avg/p50/p99/max", "stops", "world stopped ms avg/p50/p99/max");
  for (const json& r : results) {
    const bool revkv = At(r, "system") == "revkv";
    const std::string young = revkv ? "stream/pauses/minor" : "";
    const std::string full = revkv ? "stream/pauses/major" : "stream/pauses/full";
    std::fprintf(out, "%-8s %-36s %5.0fB %9.1f %12.1f %7s %-32s %7s %-36s %6s %-32s\n",
                 (std::to_string(static_cast<int>(Num(r, "live_mib"))) + "MiB").c_str(), HeapName(r).c_str(),
                 Num(r, "node_bytes"), Num(r, "stream/ns_per_alloc"),
                 Num(r, "stream/ns_per_alloc_outside_pauses"), revkv ? Count(r, young).c_str() : "-",
                 revkv ? Quad(r, young, kMs).c_str() : "-", Count(r, full).c_str(),
                 Quad(r, full, kMs).c_str(), revkv ? "-" : Count(r, "stream/pauses/world_stops").c_str(),
                 revkv ? "-" : Quad(r, "stream/pauses/world_stops", kMs).c_str());
  }

  std::fprintf(out,
               "\nFull collections forced with the live set in place, 1 thread (revkv CollectMajor, Boehm "
               "GC_gcollect, a full collection in incremental mode too; peak heap: the heap held mapped, "
               "pages in use and retained free ones: revkv committed + retained, Boehm GC_get_heap_size)\n");
  std::fprintf(out, "%-8s %-36s %8s %-34s %-34s %9s %10s %10s %10s\n", "live", "heap", "tree MiB",
               "pause ms avg/p50/p99/max", "world stopped ms avg/p50/p99/max", "wall ms", "in use MiB",
               "peak heap", "peak RSS");
  for (const json& r : results) {
    std::fprintf(out, "%-8s %-36s %8.1f %-34s %-34s %9.2f %10.1f %10.1f %10.1f\n",
                 (std::to_string(static_cast<int>(Num(r, "live_mib"))) + "MiB").c_str(), HeapName(r).c_str(),
                 Num(r, "tree_bytes") / kMiB, Quad(r, "forced/pause", kMs).c_str(),
                 Quad(r, "forced/world_stopped", kMs).c_str(), Num(r, "forced/wall/avg_ns") / kMs,
                 Num(r, "in_use_after_full_bytes") / kMiB, Num(r, "peak_heap_bytes") / kMiB,
                 Num(r, "peak_rss_bytes") / kMiB);
  }

  std::fprintf(
      out,
      "\nTwo allocating threads, thread 0 forcing a full collection periodically (time-to-safepoint: revkv "
      "request..all stopped; Boehm PRE..POST_STOP_WORLD)\n");
  std::fprintf(out, "%-8s %-36s %9s %-32s %6s %-34s %6s %-34s %-34s\n", "live", "heap", "ns/alloc",
               "young pause ms avg/p50/p99/max", "full", "full pause ms avg/p50/p99/max", "stops",
               "world stopped ms avg/p50/p99/max", "time-to-safepoint us avg/p50/p99/max");
  for (const json& r : results) {
    const bool revkv = At(r, "system") == "revkv";
    const std::string full = revkv ? "threads/pauses/major" : "threads/pauses/full";
    std::fprintf(out, "%-8s %-36s %9.1f %-32s %6s %-34s %6s %-34s %-34s\n",
                 (std::to_string(static_cast<int>(Num(r, "live_mib"))) + "MiB").c_str(), HeapName(r).c_str(),
                 Num(r, "threads/ns_per_alloc"), revkv ? Quad(r, "threads/pauses/minor", kMs).c_str() : "-",
                 Count(r, full).c_str(), Quad(r, full, kMs).c_str(),
                 revkv ? "-" : Count(r, "threads/pauses/world_stops").c_str(),
                 revkv ? "-" : Quad(r, "threads/pauses/world_stops", kMs).c_str(),
                 Quad(r, "threads/time_to_safepoint", kUs).c_str());
  }

  std::fprintf(out, "\nRatios revkv / Boehm at the same live set (below 1: revkv better)\n");
  std::fprintf(out, "%-8s %-36s %14s %16s %18s\n", "live", "against", "ns/alloc", "full pause avg",
               "full pause max");
  for (const json& r : results) {
    if (At(r, "system") != "revkv") continue;
    for (const json& b : results) {
      if (At(b, "system") != "boehm" || Num(b, "live_mib") != Num(r, "live_mib")) continue;
      const auto ratio = [](double a, double c) { return c > 0 ? a / c : 0.0; };
      std::fprintf(out, "%-8s %-36s %14.2f %16.2f %18.2f\n",
                   (std::to_string(static_cast<int>(Num(r, "live_mib"))) + "MiB").c_str(),
                   HeapName(b).c_str(), ratio(Num(r, "stream/ns_per_alloc"), Num(b, "stream/ns_per_alloc")),
                   ratio(Num(r, "forced/pause/avg_ns"), Num(b, "forced/pause/avg_ns")),
                   ratio(Num(r, "forced/pause/max_ns"), Num(b, "forced/pause/max_ns")));
    }
  }
  std::fprintf(out, "\n");
}

}  // namespace revkv::bench::gc
