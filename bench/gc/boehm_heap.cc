// The GC benchmark on Boehm GC (heaps.h). Nodes are GC_MALLOC'ed structs with two plain pointers; the
// long-lived tree is held by a static root, each thread's ring by its stack. Every collection is timed
// by the collector's own event callback (GC_set_on_collection_event), which runs on the collecting
// thread with the allocation lock held: GC_EVENT_START / GC_EVENT_END bound the collection as the
// collecting thread sees it, PRE_STOP_WORLD .. POST_START_WORLD the time every thread is stopped, and
// PRE_STOP_WORLD .. POST_STOP_WORLD the time it takes to stop them (Boehm's time-to-safepoint: it
// suspends threads with signals wherever they are).
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

struct Collection {
  Phase phase;
  uint64_t start;        // GC_EVENT_START
  uint64_t stop_begin;   // GC_EVENT_PRE_STOP_WORLD
  uint64_t stop_end;     // GC_EVENT_POST_STOP_WORLD
  uint64_t restart_end;  // GC_EVENT_POST_START_WORLD
  uint64_t end;          // GC_EVENT_END
  uint64_t heap_after;   // GC_get_heap_size() at GC_EVENT_END
};

constexpr size_t kMaxCollections = size_t{1} << 14;
// Written only by the callback, under the allocation lock; read after the threads joined. On the
// malloc heap, which the collector does not scan (a static array would be a root area it scans).
Collection* const g_collections = new Collection[kMaxCollections];
size_t g_count = 0;
bool g_open = false;
std::atomic<int> g_phase{0};
uint64_t g_peak_heap = 0;

void GC_CALLBACK OnEvent(GC_EventType event) {
  const uint64_t now = NowNanos();
  if (g_count >= kMaxCollections) return;
  if (!g_open && (event == GC_EVENT_START || event == GC_EVENT_PRE_STOP_WORLD)) {
    g_collections[g_count] =
        Collection{static_cast<Phase>(g_phase.load(std::memory_order_relaxed)), now, 0, 0, 0, 0, 0};
    g_open = true;
  }
  if (!g_open) return;
  Collection& c = g_collections[g_count];
  switch (event) {
    case GC_EVENT_PRE_STOP_WORLD:
      if (c.stop_begin == 0) c.stop_begin = now;
      break;
    case GC_EVENT_POST_STOP_WORLD:
      c.stop_end = now;
      break;
    case GC_EVENT_POST_START_WORLD:
      c.restart_end = now;
      break;
    case GC_EVENT_END:
      c.end = now;
      c.heap_after = GC_get_heap_size();  // unsynchronized getter: callable with the lock held
      g_peak_heap = std::max<uint64_t>(g_peak_heap, c.heap_after);
      c.phase = static_cast<Phase>(g_phase.load(std::memory_order_relaxed));
      ++g_count;
      g_open = false;
      break;
    default:
      break;
  }
}

void SetPhase(Phase p) {
  g_peak_heap = std::max<uint64_t>(g_peak_heap, GC_get_heap_size());
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
uint64_t WorldStoppedNs(const Collection& c) {
  return c.restart_end > c.stop_begin ? c.restart_end - c.stop_begin : 0;
}
uint64_t StopNs(const Collection& c) { return c.stop_end > c.stop_begin ? c.stop_end - c.stop_begin : 0; }

template <class F>
Summary SummarizeField(const std::vector<Collection>& cs, F field) {
  std::vector<uint64_t> v;
  for (const Collection& c : cs) v.push_back(field(c));
  return Summarize(std::move(v));
}

nlohmann::json PausesOf(Phase phase) {
  const std::vector<Collection> cs = CollectionsOf(phase);
  return {{"full", ToJson(SummarizeField(cs, CollectionNs))},
          {"full_world_stopped", ToJson(SummarizeField(cs, WorldStoppedNs))}};
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

size_t BoehmNodeBytes() { return sizeof(BoehmNode); }

nlohmann::json RunBoehm(const WorkloadConfig& c, unsigned markers) {
  if (markers > 0) GC_set_markers_count(markers);
  GC_INIT();
  GC_allow_register_threads();  // also starts the marker threads
  GC_set_on_collection_event(OnEvent);
  nlohmann::json out;
  BoehmMutator m;

  SetPhase(Phase::kBuild);
  uint64_t t0 = NowNanos();
  g_tree = BuildTree(m, 0, static_cast<int64_t>(c.live_nodes));
  GC_gcollect();
  out["build_seconds"] = static_cast<double>(NowNanos() - t0) / 1e9;

  SetPhase(Phase::kStream);
  t0 = NowNanos();
  const uint64_t allocations = StreamSteps(m, 0, c.stream_steps);
  const uint64_t stream_ns = NowNanos() - t0;
  const Summary stream_full = SummarizeField(CollectionsOf(Phase::kStream), CollectionNs);
  out["stream"] = {{"allocations", allocations},
                   {"seconds", static_cast<double>(stream_ns) / 1e9},
                   {"ns_per_alloc", static_cast<double>(stream_ns) / static_cast<double>(allocations)},
                   {"ns_per_alloc_outside_pauses",
                    static_cast<double>(stream_ns - std::min(stream_ns, stream_full.total_ns)) /
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
      {"time_to_safepoint", ToJson(SummarizeField(CollectionsOf(Phase::kThreads), StopNs))}};

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

  BoehmNode* probe = m.NewNode(0, nullptr, nullptr);
  out["node_bytes"] = GC_size(probe);
  out["system"] = "boehm";
  out["variant"] = markers == 0 ? "boehm-default" : "boehm-" + std::to_string(markers) + "-marker";
  out["markers"] = GC_get_parallel() + 1;
  out["live_mib"] = c.live_mib;
  out["live_nodes"] = c.live_nodes;
  out["tree_bytes"] = c.live_nodes * out["node_bytes"].get<uint64_t>();
  out["collections"] = {{"full", g_count}};
  out["peak_heap_bytes"] = g_peak_heap;
  out["peak_rss_bytes"] = PeakRssBytes();
  return out;
}

}  // namespace revkv::bench::gc
