// The GC benchmark on Boehm GC (heaps.h). Nodes are GC_MALLOC'ed structs with two plain pointers; the
// long-lived tree is held by a static root, each thread's ring by its stack. Every collection is timed
// by the collector's own event callback (GC_set_on_collection_event), which runs on the collecting
// thread with the allocation lock held: GC_EVENT_START / GC_EVENT_END bound a collection the
// collecting thread runs to its end, PRE_STOP_WORLD .. POST_START_WORLD each stop of the world, and
// PRE_STOP_WORLD .. POST_STOP_WORLD the time it takes to stop the other threads (Boehm's
// time-to-safepoint: it suspends threads with signals wherever they are). Every stop of the world is
// filed on its own: in incremental mode (GC_enable_incremental) a collection stops the world to mark
// from the roots for as long as its time limit allows, goes on marking in steps between allocations
// while the mutators run (virtual dirty bits record what they write), and stops the world again to
// finish from the roots and the dirty pages; the stops are what the other threads wait for.
#define GC_THREADS 1
#define GC_NO_THREAD_REDIRECTS 1  // threads register explicitly (GC_register_my_thread)
#include <gc/gc.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "bench/gc/heaps.h"

namespace revkv::bench::gc {

namespace {

// The benchmark node: two references and 16 bytes of payload, no header of its own.
struct BoehmNode {
  BoehmNode* left;
  BoehmNode* right;
  int64_t value;
  int64_t check;
};

// The long-lived tree: a static root, scanned by the collector with the data segment.
BoehmNode* volatile g_tree = nullptr;

// The Mutator of workload.h. Owner thread only; lives on a registered thread's stack, which the
// collector scans, so the ring stays reachable.
class BoehmMutator {
 public:
  using Node = BoehmNode;

  BoehmMutator() : ring_(static_cast<BoehmNode**>(GC_MALLOC(kRingSlots * sizeof(BoehmNode*)))) {
    if (ring_ == nullptr) Die();
  }
  Node* NewNode(int64_t value, Node* left, Node* right) {
    auto* n = static_cast<BoehmNode*>(GC_MALLOC(sizeof(BoehmNode)));
    if (n == nullptr) Die();
    n->value = value;
    n->check = value ^ kCheckMix;
    n->left = left;
    n->right = right;
    return n;
  }
  void Keep(size_t slot, Node* tree) { ring_[slot] = tree; }
  static const Node* Left(const Node* n) { return n->left; }
  static const Node* Right(const Node* n) { return n->right; }

 private:
  [[noreturn]] static void Die() {
    std::fprintf(stderr, "revkv-bench-gc: GC_MALLOC returned null\n");
    std::abort();
  }
  BoehmNode** volatile ring_;
};

// ----- collection records, filed by the event callback ------------------------------------------------

// A collection the collecting thread runs from GC_EVENT_START to GC_EVENT_END: every collection in
// stop-the-world mode, and GC_gcollect (always full) in incremental mode. The collections incremental
// mode starts by itself have no START/END events (libgc's GC_maybe_gc marks them with GC_stopped_mark
// and then in steps between allocations): they appear only as world stops, and their marking steps
// in the allocation time of the thread that runs them.
struct Collection {
  Phase phase;
  uint64_t start;       // GC_EVENT_START
  uint64_t stopped_ns;  // the world stops inside it, summed (finishing an incremental cycle adds one)
  uint64_t end;         // GC_EVENT_END
  uint64_t heap_after;  // GC_get_heap_size() at GC_EVENT_END
};

// One stop of the world, filed under the phase running when it ended.
struct WorldStop {
  Phase phase;
  uint64_t begin;      // GC_EVENT_PRE_STOP_WORLD
  uint64_t stopped;    // GC_EVENT_POST_STOP_WORLD: every other thread suspended (time-to-safepoint)
  uint64_t end;        // GC_EVENT_POST_START_WORLD
  bool in_collection;  // inside a START..END collection (whose time already counts it)
};

constexpr size_t kMaxCollections = size_t{1} << 14;
// Written only by the callback, under the allocation lock; read after the threads joined. On the
// malloc heap, which the collector does not scan (a static array would be a root area it scans).
Collection* const g_collections = new Collection[kMaxCollections];
size_t g_count = 0;
bool g_open = false;
WorldStop* const g_stops = new WorldStop[kMaxCollections];
size_t g_stop_count = 0;
WorldStop g_stop{};  // the stop in progress
std::atomic<int> g_phase{0};
uint64_t g_peak_heap = 0;

// The heap the collector holds mapped: GC_get_heap_size() counts every block it has from the OS,
// in use or free (its retained blocks), and excludes what it unmapped (returned to the OS,
// GC_get_unmapped_bytes()). Unsynchronized getter: called with the allocation lock held or from the
// only running thread.
void NotePeakHeap() { g_peak_heap = std::max<uint64_t>(g_peak_heap, GC_get_heap_size()); }

Phase CurrentPhase() { return static_cast<Phase>(g_phase.load(std::memory_order_relaxed)); }

void GC_CALLBACK OnEvent(GC_EventType event) {
  const uint64_t now = NowNanos();
  switch (event) {
    case GC_EVENT_START:
      NotePeakHeap();  // before the collection can unmap anything
      if (g_count < kMaxCollections) {
        g_collections[g_count] = Collection{CurrentPhase(), now, 0, 0, 0};
        g_open = true;
      }
      break;
    case GC_EVENT_PRE_STOP_WORLD:
      g_stop = WorldStop{CurrentPhase(), now, 0, 0, g_open};
      break;
    case GC_EVENT_POST_STOP_WORLD:
      g_stop.stopped = now;
      break;
    case GC_EVENT_POST_START_WORLD:
      if (g_stop.begin == 0) break;
      g_stop.end = now;
      g_stop.phase = CurrentPhase();
      if (g_stop_count < kMaxCollections) g_stops[g_stop_count++] = g_stop;
      if (g_open) g_collections[g_count].stopped_ns += now - g_stop.begin;
      g_stop = WorldStop{};
      break;
    case GC_EVENT_END:
      if (!g_open) break;
      g_collections[g_count].end = now;
      g_collections[g_count].heap_after = GC_get_heap_size();  // unsynchronized: the lock is held
      g_collections[g_count].phase = CurrentPhase();
      NotePeakHeap();
      ++g_count;
      g_open = false;
      break;
    default:
      break;
  }
}

void SetPhase(Phase p) {
  NotePeakHeap();
  g_phase.store(static_cast<int>(p), std::memory_order_relaxed);
}

std::vector<Collection> CollectionsOf(Phase phase) {
  std::vector<Collection> out;
  for (size_t i = 0; i < g_count; ++i) {
    if (g_collections[i].phase == phase) out.push_back(g_collections[i]);
  }
  return out;
}

uint64_t CollectionNs(const Collection& c) { return c.end - c.start; }
uint64_t WorldStoppedNs(const Collection& c) { return c.stopped_ns; }

template <class F>
Summary SummarizeField(const std::vector<Collection>& cs, F field) {
  std::vector<uint64_t> v;
  for (const Collection& c : cs) v.push_back(field(c));
  return Summarize(std::move(v));
}

// The world stops of `phase`: how long each kept the world stopped, or (time_to_safepoint) how long
// suspending the other threads took.
Summary StopsOf(Phase phase, bool time_to_safepoint = false) {
  std::vector<uint64_t> v;
  for (size_t i = 0; i < g_stop_count; ++i) {
    const WorldStop& s = g_stops[i];
    if (s.phase != phase) continue;
    v.push_back(time_to_safepoint ? (s.stopped > s.begin ? s.stopped - s.begin : 0) : s.end - s.begin);
  }
  return Summarize(std::move(v));
}

nlohmann::json PausesOf(Phase phase) {
  const std::vector<Collection> cs = CollectionsOf(phase);
  return {{"full", ToJson(SummarizeField(cs, CollectionNs))},
          {"full_world_stopped", ToJson(SummarizeField(cs, WorldStoppedNs))},
          {"world_stops", ToJson(StopsOf(phase))}};
}

void StreamOnWorker(const WorkloadConfig& c, TimedStream* result) {
  GC_stack_base base;
  if (GC_get_stack_base(&base) != GC_SUCCESS || GC_register_my_thread(&base) != GC_SUCCESS) {
    std::fprintf(stderr, "revkv-bench-gc: GC_register_my_thread failed\n");
    std::abort();
  }
  {
    BoehmMutator wm;
    *result = StreamFor(wm, c.two_thread_seconds, 0, [] {});
  }
  GC_unregister_my_thread();
}

}  // namespace

nlohmann::json RunBoehm(const WorkloadConfig& config, const BoehmOptions& options) {
  WorkloadConfig c = config;
  if (options.markers > 0) GC_set_markers_count(options.markers);
  if (options.free_space_divisor > 0) GC_set_free_space_divisor(options.free_space_divisor);
  // Before the first allocation (it initializes the collector itself); GC_INIT after it is a no-op
  // apart from registering the data segments.
  if (options.incremental) GC_enable_incremental();
  GC_INIT();
  if (options.incremental && !GC_is_incremental_mode()) {
    std::fprintf(stderr, "revkv-bench-gc: GC_enable_incremental did not take (no virtual dirty bits?)\n");
    std::exit(3);
  }
  GC_allow_register_threads();  // also starts the marker threads
  GC_set_on_collection_event(OnEvent);
  const GC_word gc_no_at_start = GC_get_gc_no();  // GC_INIT's own first collection, before the callback
  nlohmann::json out;
  BoehmMutator m;
  // What a node occupies: 32 requested bytes, plus the extra byte of the default all-interior-pointers
  // mode, rounded up to the 16-byte granule: 48, as much as a revkv node with its header.
  const size_t node_bytes = GC_size(m.NewNode(0, nullptr, nullptr));
  if (c.live_bytes > 0) c.live_nodes = c.live_bytes / node_bytes;

  SetPhase(Phase::kBuild);
  uint64_t t0 = NowNanos();
  g_tree = BuildTree(m, 0, static_cast<int64_t>(c.live_nodes));
  GC_gcollect();
  out["build_seconds"] = static_cast<double>(NowNanos() - t0) / 1e9;

  SetPhase(Phase::kStream);
  t0 = NowNanos();
  const uint64_t allocations = StreamSteps(m, 0, c.stream_steps);
  const uint64_t stream_ns = NowNanos() - t0;
  // Time in collections: START..END ones, and the stops of incremental ones outside them (their
  // marking steps between stops are not told apart from allocation).
  uint64_t stream_pauses = SummarizeField(CollectionsOf(Phase::kStream), CollectionNs).total_ns;
  for (size_t i = 0; i < g_stop_count; ++i) {
    const WorldStop& s = g_stops[i];
    if (s.phase == Phase::kStream && !s.in_collection) stream_pauses += s.end - s.begin;
  }
  out["stream"] = {
      {"allocations", allocations},
      {"seconds", static_cast<double>(stream_ns) / 1e9},
      {"ns_per_alloc", static_cast<double>(stream_ns) / static_cast<double>(allocations)},
      {"ns_per_alloc_outside_pauses", static_cast<double>(stream_ns - std::min(stream_ns, stream_pauses)) /
                                          static_cast<double>(allocations)},
      {"pauses", PausesOf(Phase::kStream)}};

  SetPhase(Phase::kThreads);
  TimedStream worker_stream;
  std::thread worker(StreamOnWorker, std::cref(c), &worker_stream);
  const TimedStream main_stream =
      StreamFor(m, c.two_thread_seconds, c.force_interval_ms, [] { GC_gcollect(); });
  worker.join();
  const double thread_ns = static_cast<double>(main_stream.nanos + worker_stream.nanos);
  out["threads"] = {
      {"threads", 2},
      {"allocations", main_stream.allocations + worker_stream.allocations},
      {"ns_per_alloc", thread_ns / static_cast<double>(main_stream.allocations + worker_stream.allocations)},
      {"forced", main_stream.forced},
      {"pauses", PausesOf(Phase::kThreads)},
      {"time_to_safepoint", ToJson(StopsOf(Phase::kThreads, /*time_to_safepoint=*/true))}};

  SetPhase(Phase::kForced);
  std::vector<uint64_t> walls;
  for (int i = 0; i < c.forced_collections; ++i) {
    StreamSteps(m, static_cast<uint64_t>(i) * c.garbage_steps_between_forced, c.garbage_steps_between_forced);
    t0 = NowNanos();
    GC_gcollect();
    walls.push_back(NowNanos() - t0);
  }
  const std::vector<Collection> forced = CollectionsOf(Phase::kForced);
  out["forced"] = {{"pause", ToJson(SummarizeField(forced, CollectionNs))},
                   {"world_stopped", ToJson(SummarizeField(forced, WorldStoppedNs))},
                   {"wall", ToJson(Summarize(walls))}};
  GC_word heap = 0;
  GC_word free_bytes = 0;
  GC_word unmapped = 0;
  GC_get_heap_usage_safe(&heap, &free_bytes, &unmapped, nullptr, nullptr);
  out["in_use_after_full_bytes"] = heap - free_bytes;
  out["verified"] = CountTree<BoehmMutator>(g_tree) == static_cast<int64_t>(c.live_nodes);
  SetPhase(Phase::kForced);

  out["node_bytes"] = node_bytes;
  out["requested_node_bytes"] = sizeof(BoehmNode);
  out["system"] = "boehm";
  out["variant"] = options.variant;
  out["markers"] = GC_get_parallel() + 1;
  out["incremental"] = GC_is_incremental_mode() != 0;
  // What the dirty bits cost the mutator: GC_PROTECTS_POINTER_HEAP when pages are write-protected
  // (mprotect), 0 with soft-dirty bits read from /proc.
  out["incremental_protection"] = GC_incremental_protection_needs();
  out["free_space_divisor"] = GC_get_free_space_divisor();
  out["live_mib"] = c.live_mib;
  out["live_nodes"] = c.live_nodes;
  out["tree_bytes"] = c.live_nodes * out["node_bytes"].get<uint64_t>();
  // completed: every collection the collector completed (GC_get_gc_no), incremental ones included.
  out["collections"] = {{"full", g_count}, {"completed", GC_get_gc_no() - gc_no_at_start}};
  NotePeakHeap();
  out["peak_heap_bytes"] = g_peak_heap;
  out["unmapped_bytes"] = GC_get_unmapped_bytes();
  out["peak_rss_bytes"] = PeakRssBytes();
  return out;
}

}  // namespace revkv::bench::gc
