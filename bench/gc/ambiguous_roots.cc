// revkv-bench-ambiguous-roots: what resolving an ambiguous word (a conservative stack root or interior
// pointer) costs with the object-start map against the linear parse of its chunk that it replaced, and
// what that does to the pause of a major collection with many stack roots (docs/benchmarks.md,
// "Runtime: resolving ambiguous roots"). Both code paths are measured in the same process on the same
// heap, in alternating rounds (SetObjectStartMapResolution), and reported as medians and ratios.
//
//   revkv-bench-ambiguous-roots [--live-mib N] [--stack-roots N] [--rounds N] [--lookups N]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "runtime/gc/collector.h"
#include "runtime/gc/gc.h"
#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"

namespace revkv::runtime {
namespace {

struct Cell : Object {
  Field<Cell> next;
  Field<Bytes> payload;
  int64_t value;
  static TypeDescriptor Describe() {
    return TypeDescriptor::Fixed<Cell>("bench.Cell", &Cell::next, &Cell::payload);
  }
};

struct Args {
  size_t live_mib = 64;
  size_t stack_roots = 100000;
  int rounds = 5;
  size_t lookups = 2000000;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// CPU time of the calling thread: on a shared, loaded machine, wall time would mostly measure the wait
// for a core.
double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// A list of cells, each with a Bytes payload of 0..200 bytes: a live set of mixed object sizes, so the
// chunks hold ~100 objects each and a parse walks half of them on average.
void BuildLiveSet(Root<Cell>& head, size_t bytes) {
  std::mt19937_64 rng(42);
  size_t total = 0;
  while (total < bytes) {
    absl::StatusOr<Cell*> c = New<Cell>();
    absl::StatusOr<Bytes*> b = NewBytes(std::string(rng() % 200, 'p'));
    if (!c.ok() || !b.ok()) {
      std::fprintf(stderr, "allocation failed\n");
      std::exit(1);
    }
    (*c)->payload.Store(*b);
    (*c)->next.Store(head.get());
    (*c)->value = static_cast<int64_t>(total);
    head.set(*c);
    total += (*c)->size() + (*b)->size();
  }
}

// Interior words of random live objects: every `stride`-th cell of the list, at a random offset into
// the cell or its payload.
std::vector<uintptr_t> SampleWords(Root<Cell>& head, size_t count) {
  std::vector<Object*> objects;
  for (Cell* c = head.get(); c != nullptr; c = c->next.Load()) {
    objects.push_back(c);
    objects.push_back(c->payload.Load());
  }
  std::mt19937_64 rng(7);
  std::vector<uintptr_t> words(count);
  for (uintptr_t& w : words) {
    Object* o = objects[rng() % objects.size()];
    w = reinterpret_cast<uintptr_t>(o) + rng() % o->size();
  }
  return words;
}

// CPU ns per ResolveAmbiguousReferents over `words` (the heap does not change meanwhile).
double ResolveNanos(const std::vector<uintptr_t>& words, size_t lookups) {
  uintptr_t sink = 0;
  const double t0 = ThreadCpuSeconds();
  for (size_t i = 0; i < lookups; ++i) {
    const AmbiguousReferents r = ResolveAmbiguousReferents(words[i % words.size()]);
    sink += reinterpret_cast<uintptr_t>(r.into) ^ reinterpret_cast<uintptr_t>(r.ending);
  }
  const double t1 = ThreadCpuSeconds();
  if (sink == 1) std::printf(" ");
  return (t1 - t0) * 1e9 / static_cast<double>(lookups);
}

// Runs one major collection with `words` on this frame's stack (ambiguous roots); returns its pause
// (wall time, as the collector records it).
__attribute__((noinline)) double MajorPauseWithStackRoots(const std::vector<uintptr_t>& words) {
  std::vector<uintptr_t> frame_words(words);  // heap copy, then onto the stack below
  const size_t n = frame_words.size();
  auto* stack = static_cast<volatile uintptr_t*>(__builtin_alloca(n * sizeof(uintptr_t)));
  for (size_t i = 0; i < n; ++i) stack[i] = frame_words[i];
  frame_words.clear();
  frame_words.shrink_to_fit();
  CollectMajor();
  const GcStatistics s = GetGcStatistics(1);
  const double pause_ms = s.recent.empty() ? 0 : static_cast<double>(s.recent.back().pause_nanos) / 1e6;
  for (size_t i = 0; i < n; ++i) stack[i] = 0;
  return pause_ms;
}

int Main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const unsigned long long v = std::strtoull(argv[i + 1], nullptr, 10);
    if (k == "--live-mib")
      a.live_mib = v;
    else if (k == "--stack-roots")
      a.stack_roots = v;
    else if (k == "--rounds")
      a.rounds = static_cast<int>(v);
    else if (k == "--lookups")
      a.lookups = v;
    else {
      std::fprintf(stderr, "usage: %s [--live-mib N] [--stack-roots N] [--rounds N] [--lookups N]\n",
                   argv[0]);
      return 2;
    }
  }
  HeapOptions options;
  options.max_heap_bytes = std::max<size_t>(size_t{1} << 30, a.live_mib * 4 << 20);
  options.min_major_trigger_bytes = options.max_heap_bytes;  // only the collections asked for below
  InitializeRuntime(options);
  ThreadRegistration registration("bench");
  Root<Cell> head;
  BuildLiveSet(head, a.live_mib << 20);
  CollectMajor();  // the live set is old now, in dense chunks
  CollectMajor();
  // Every root word pins the object it points into, so these stay valid across the collections below;
  // the lookup words are drawn again after each collection (unpinned objects move).
  const std::vector<uintptr_t> root_words = SampleWords(head, a.stack_roots);
  std::printf("live set %zu MiB, %zu stack roots, %d alternating rounds per code path\n", a.live_mib,
              a.stack_roots, a.rounds);

  for (const bool use_map : {true, false}) {  // warm-up, not counted: faults in the map and the stack
    SetObjectStartMapResolution(use_map);
    (void)ResolveNanos(SampleWords(head, 1 << 16), a.lookups / 10 + 1);
    (void)MajorPauseWithStackRoots(root_words);
  }
  std::vector<double> map_ns, parse_ns, map_pause, parse_pause;
  for (int r = 0; r < a.rounds; ++r) {
    for (const bool use_map : {r % 2 == 0, r % 2 != 0}) {
      SetObjectStartMapResolution(use_map);
      (use_map ? map_ns : parse_ns).push_back(ResolveNanos(SampleWords(head, 1 << 16), a.lookups));
      (use_map ? map_pause : parse_pause).push_back(MajorPauseWithStackRoots(root_words));
    }
  }
  SetObjectStartMapResolution(true);
  auto list = [](const std::vector<double>& v) {
    std::string s;
    for (double x : v) s += (s.empty() ? "" : " ") + std::to_string(x).substr(0, 7);
    return s;
  };
  std::printf("resolve cpu ns/word map   median %8.1f  [%s]\n", Median(map_ns), list(map_ns).c_str());
  std::printf("resolve cpu ns/word parse median %8.1f  [%s]\n", Median(parse_ns), list(parse_ns).c_str());
  std::printf("resolve ratio parse/map        %8.1fx\n", Median(parse_ns) / Median(map_ns));
  std::printf("major pause ms    map   median %8.2f  [%s]\n", Median(map_pause), list(map_pause).c_str());
  std::printf("major pause ms    parse median %8.2f  [%s]\n", Median(parse_pause), list(parse_pause).c_str());
  std::printf("major pause ratio parse/map    %8.2fx\n", Median(parse_pause) / Median(map_pause));
  head.set(nullptr);
  return 0;
}

}  // namespace
}  // namespace revkv::runtime

int main(int argc, char** argv) { return revkv::runtime::Main(argc, argv); }
