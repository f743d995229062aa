// The GC benchmark on revkv's heap (heaps.h). Nodes are heap objects with two Field<> references; the
// long-lived tree and each thread's ring are held by Root<>s; every minor and major collection is
// observed through a collection listener, which files its record under the phase that was running.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "bench/gc/heaps.h"
#include "runtime/gc/gc.h"
#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"

namespace revkv::bench::gc {

namespace {

using runtime::CollectionKind;
using runtime::Field;

// The benchmark node: header (16 bytes), two references, 16 bytes of payload.
struct BenchNode : runtime::Object {
  Field<BenchNode> left;
  Field<BenchNode> right;
  int64_t value;
  int64_t check;
  static runtime::TypeDescriptor Describe() {
    return runtime::TypeDescriptor::Fixed<BenchNode>("bench.Node", &BenchNode::left, &BenchNode::right);
  }
};

// A thread's ring of temporary trees: a fixed tail of kRingSlots references.
struct BenchRing : runtime::Object {
  uint64_t slots;
  static runtime::TypeDescriptor Describe() {
    runtime::TypeDescriptor d;
    d.name = "bench.Ring";
    d.fixed_size = sizeof(BenchRing);
    d.tail = runtime::TypeDescriptor::Tail::kRefs;
    d.tail_offset = sizeof(BenchRing);
    return d;
  }
  Field<BenchNode>& at(size_t i) { return reinterpret_cast<Field<BenchNode>*>(this + 1)[i]; }
};

[[noreturn]] void Die(const absl::Status& status) {
  std::fprintf(stderr, "revkv-bench-gc: revkv allocation failed: %s\n", status.ToString().c_str());
  std::abort();
}

// The Mutator of workload.h. Owner thread only; lives on a registered thread's stack and must be
// destroyed before that thread's ThreadRegistration (it owns a Root<>).
class RevkvMutator {
 public:
  using Node = BenchNode;

  RevkvMutator() : ring_(NewRing()) {}

  Node* NewNode(int64_t value, Node* left, Node* right) {
    absl::StatusOr<Node*> n = runtime::New<Node>();
    if (!n.ok()) Die(n.status());
    Node* node = *n;
    node->value = value;
    node->check = value ^ kCheckMix;
    node->left.Store(left);
    node->right.Store(right);
    return node;
  }
  void Keep(size_t slot, Node* tree) { ring_->at(slot).Store(tree); }
  static const Node* Left(const Node* n) { return n->left.Load(); }
  static const Node* Right(const Node* n) { return n->right.Load(); }

 private:
  static BenchRing* NewRing() {
    absl::StatusOr<BenchRing*> r = runtime::NewWithTail<BenchRing>(kRingSlots * sizeof(void*));
    if (!r.ok()) Die(r.status());
    (*r)->slots = kRingSlots;
    return *r;
  }
  runtime::Root<BenchRing> ring_;
};

// ----- collection records, filed by the listener -----------------------------------------------------

struct Record {
  CollectionKind kind;
  Phase phase;
  uint32_t threads;
  uint64_t pause_ns;
  uint64_t tts_ns;
  uint64_t bytes_before;
  uint64_t bytes_after;
  uint64_t bytes_copied;
  uint64_t pinned_bytes;
};

constexpr size_t kMaxRecords = size_t{1} << 16;
// On the malloc heap rather than in .bss, which a Boehm child would scan as a root area.
Record* const g_records = new Record[kMaxRecords];
std::atomic<size_t> g_record_count{0};
std::atomic<int> g_phase{0};
std::atomic<uint64_t> g_peak_heap{0};

void NotePeak(uint64_t bytes) {
  uint64_t seen = g_peak_heap.load(std::memory_order_relaxed);
  while (bytes > seen && !g_peak_heap.compare_exchange_weak(seen, bytes, std::memory_order_relaxed)) {
  }
}

// The heap the page space holds mapped: the pages in use (committed_bytes) and the free pages it keeps
// for reuse (retained_bytes), the same thing as Boehm's GC_get_heap_size() (boehm_heap.cc). Pages
// go back to the OS only in a major collection, so the peak is sampled after each collection, with
// the chunks in use before it (a lower bound of the pages then), before each forced one and at each
// phase change.
void NotePeakHeap() {
  const runtime::HeapUsage u = runtime::GetHeapUsage();
  NotePeak(u.committed_bytes + u.retained_bytes);
}

// Runs on the collecting thread after the world resumed; minor collections of two threads may run it
// at once, hence the atomic index.
void OnCollection(const runtime::CollectionRecord& r) {
  const size_t i = g_record_count.fetch_add(1, std::memory_order_relaxed);
  if (i < kMaxRecords) {
    g_records[i] = Record{r.kind,
                          static_cast<Phase>(g_phase.load(std::memory_order_relaxed)),
                          r.threads,
                          r.pause_nanos,
                          r.time_to_safepoint_nanos,
                          r.heap_bytes_before,
                          r.heap_bytes_after,
                          r.bytes_copied,
                          r.pinned_bytes};
  }
  NotePeak(r.heap_bytes_before);
  NotePeakHeap();
}

void SetPhase(Phase p) {
  NotePeakHeap();
  g_phase.store(static_cast<int>(p), std::memory_order_relaxed);
}

// The records of one phase and kind. Call only while no collection can run (the listener's writes are
// ordered before by the joins and by the collections' own synchronization).
std::vector<Record> RecordsOf(Phase phase, CollectionKind kind) {
  std::vector<Record> out;
  const size_t n = std::min(g_record_count.load(std::memory_order_acquire), kMaxRecords);
  for (size_t i = 0; i < n; ++i) {
    if (g_records[i].phase == phase && g_records[i].kind == kind) out.push_back(g_records[i]);
  }
  return out;
}

template <class F>
Summary SummarizeField(const std::vector<Record>& records, F field) {
  std::vector<uint64_t> v;
  for (const Record& r : records) v.push_back(field(r));
  return Summarize(std::move(v));
}

nlohmann::json PausesOf(Phase phase) {
  auto pause = [](const Record& r) { return r.pause_ns; };
  return {{"minor", ToJson(SummarizeField(RecordsOf(phase, CollectionKind::kMinor), pause))},
          {"major", ToJson(SummarizeField(RecordsOf(phase, CollectionKind::kMajor), pause))}};
}

uint64_t PauseTotal(Phase phase) {
  uint64_t total = 0;
  for (CollectionKind k : {CollectionKind::kMinor, CollectionKind::kMajor}) {
    for (const Record& r : RecordsOf(phase, k)) total += r.pause_ns;
  }
  return total;
}

// Everything that holds heap references (Root<>s, mutators) lives in this frame, inside the caller's
// ThreadRegistration.
nlohmann::json RunRegistered(const WorkloadConfig& c) {
  nlohmann::json out;
  RevkvMutator m;

  const runtime::MajorMode mode =
      c.revkv_compact ? runtime::MajorMode::kCompactEverything : runtime::MajorMode::kSelective;
  SetPhase(Phase::kBuild);
  uint64_t t0 = NowNanos();
  runtime::Root<BenchNode> tree(BuildTree(m, 0, static_cast<int64_t>(c.live_nodes)));
  runtime::CollectMajor(mode);
  out["build_seconds"] = static_cast<double>(NowNanos() - t0) / 1e9;

  SetPhase(Phase::kStream);
  t0 = NowNanos();
  const uint64_t allocations = StreamSteps(m, 0, c.stream_steps);
  const uint64_t stream_ns = NowNanos() - t0;
  const uint64_t stream_pauses = PauseTotal(Phase::kStream);
  out["stream"] = {
      {"allocations", allocations},
      {"seconds", static_cast<double>(stream_ns) / 1e9},
      {"ns_per_alloc", static_cast<double>(stream_ns) / static_cast<double>(allocations)},
      {"ns_per_alloc_outside_pauses", static_cast<double>(stream_ns - std::min(stream_ns, stream_pauses)) /
                                          static_cast<double>(allocations)},
      {"pauses", PausesOf(Phase::kStream)}};

  SetPhase(Phase::kThreads);
  TimedStream worker_stream;
  std::thread worker([&] {
    runtime::ThreadRegistration registration("bench-gc-worker");
    RevkvMutator wm;
    worker_stream = StreamFor(wm, c.two_thread_seconds, 0, [] {});
  });
  const TimedStream main_stream = StreamFor(m, c.two_thread_seconds, c.force_interval_ms, [mode] {
    NotePeakHeap();
    runtime::CollectMajor(mode);
  });
  {
    runtime::SafeRegion blocked;  // a collection the worker starts must not wait for us
    worker.join();
  }
  const std::vector<Record> thread_majors = RecordsOf(Phase::kThreads, CollectionKind::kMajor);
  const double thread_ns = static_cast<double>(main_stream.nanos + worker_stream.nanos);
  out["threads"] = {
      {"threads", 2},
      {"allocations", main_stream.allocations + worker_stream.allocations},
      {"ns_per_alloc", thread_ns / static_cast<double>(main_stream.allocations + worker_stream.allocations)},
      {"forced", main_stream.forced},
      {"pauses", PausesOf(Phase::kThreads)},
      {"time_to_safepoint", ToJson(SummarizeField(thread_majors, [](const Record& r) { return r.tts_ns; }))}};

  SetPhase(Phase::kForced);
  std::vector<uint64_t> walls;
  for (int i = 0; i < c.forced_collections; ++i) {
    StreamSteps(m, static_cast<uint64_t>(i) * c.garbage_steps_between_forced, c.garbage_steps_between_forced);
    NotePeakHeap();
    t0 = NowNanos();
    runtime::CollectMajor(mode);
    walls.push_back(NowNanos() - t0);
  }
  const std::vector<Record> forced = RecordsOf(Phase::kForced, CollectionKind::kMajor);
  out["forced"] = {
      {"pause", ToJson(SummarizeField(forced, [](const Record& r) { return r.pause_ns; }))},
      {"world_stopped", ToJson(SummarizeField(forced, [](const Record& r) { return r.pause_ns; }))},
      {"wall", ToJson(Summarize(walls))},
      {"bytes_copied_avg",
       forced.empty() ? 0 : SummarizeField(forced, [](const Record& r) { return r.bytes_copied; }).avg_ns},
      {"pinned_bytes_max",
       forced.empty() ? 0 : SummarizeField(forced, [](const Record& r) { return r.pinned_bytes; }).max_ns}};
  out["in_use_after_full_bytes"] = forced.empty() ? 0 : forced.back().bytes_after;
  out["verified"] = CountTree<RevkvMutator>(tree.get()) == static_cast<int64_t>(c.live_nodes);
  NotePeakHeap();
  return out;
}

}  // namespace

size_t RevkvNodeBytes() { return sizeof(BenchNode); }

double RevkvMajorGrowthFactor() { return runtime::HeapOptions{}.major_growth_factor; }

nlohmann::json RunRevkv(const WorkloadConfig& config) {
  runtime::HeapOptions requested;
  if (config.revkv_nursery_bytes > 0) requested.nursery_bytes = config.revkv_nursery_bytes;
  requested.retain_evacuation_reserve = config.revkv_evacuation_reserve;
  const runtime::HeapOptions& options = runtime::InitializeRuntime(requested);
  const int listener = runtime::AddCollectionListener(OnCollection);
  nlohmann::json out;
  {
    runtime::ThreadRegistration registration("bench-gc-main");
    out = RunRegistered(config);
    out["node_bytes"] = runtime::DescribeType(runtime::TypeIdOf<BenchNode>()).fixed_size;
  }
  runtime::RemoveCollectionListener(listener);
  const runtime::HistogramSnapshot tts = runtime::TimeToSafepointHistogram();
  const runtime::GcStatistics stats = runtime::GetGcStatistics(0);
  out["system"] = "revkv";
  out["variant"] = "revkv";
  out["live_mib"] = config.live_mib;
  out["live_nodes"] = config.live_nodes;
  out["tree_bytes"] = config.live_nodes * out["node_bytes"].get<uint64_t>();
  out["heap_options"] = {{"max_heap_bytes", options.max_heap_bytes},
                         {"nursery_bytes", options.nursery_bytes},
                         {"retain_evacuation_reserve", options.retain_evacuation_reserve},
                         {"min_major_trigger_bytes", options.min_major_trigger_bytes},
                         {"major_growth_factor", options.major_growth_factor}};
  out["collections"] = {{"minor", stats.collections[static_cast<int>(CollectionKind::kMinor)]},
                        {"major", stats.collections[static_cast<int>(CollectionKind::kMajor)]}};
  out["runtime_time_to_safepoint"] = {{"count", tts.count},
                                      {"p50_ns", tts.Quantile(0.5)},
                                      {"p99_ns", tts.Quantile(0.99)},
                                      {"max_ns", tts.max}};
  out["peak_heap_bytes"] = g_peak_heap.load();
  const runtime::HeapUsage usage = runtime::GetHeapUsage();
  out["committed_bytes"] = usage.committed_bytes;  // at the end, after the last forced collection
  out["retained_bytes"] = usage.retained_bytes;
  out["peak_rss_bytes"] = PeakRssBytes();
  return out;
}

}  // namespace revkv::bench::gc
