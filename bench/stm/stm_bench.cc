// revkv-bench-stm: transactions per second of revkv's STM against two lock-based maps doing the same
// work, at 1 and 2 threads (Google Benchmark; docs/benchmarks.md, "Runtime: STM vs lock-based maps").
//
// Benchmarks are named <workload>/<keys>/<store>/real_time/threads:<n>:
//   workload  read1 (one key), read10 (ten keys in one transaction / one lock hold), write1 (one
//             read-modify-write), mix90 (90% read1, 10% write1, chosen per operation)
//   keys      uniform or zipfian (theta 0.99, scrambled) over kKeys keys; precomputed sequences
//   store     stm-snapshot (reads: stm::ReadOnly), stm-atomically (reads: stm::Atomically), stm (write1:
//             stm::Atomically), mutex-map (std::mutex + std::map), shared-mutex-umap (std::shared_mutex
//             + std::unordered_map)
// items_per_second counts operations (transactions) of all threads together.
//
// Each STM benchmark starts with a major collection (thread 0, before the timed loop), so that it
// starts from collapsed revision chains whatever ran before it in this process.
//
// Heap rule: a benchmark thread that touches revkv's heap registers in the benchmark body and leaves
// before the body returns. Google Benchmark's threads wait for each other on a barrier inside
// KeepRunningBatch (at the first and the last call); a registered thread blocked there would stall a
// collection started by the other thread, so every KeepRunningBatch call runs in a SafeRegion.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "bench/stm/key_sequence.h"
#include "bench/stm/lock_maps.h"
#include "bench/stm/stm_table.h"
#include "runtime/gc/gc.h"
#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "runtime/stm/stm.h"

namespace revkv::bench::stm {
namespace {

constexpr uint64_t kKeys = 100'000;
constexpr int kManyKeys = 10;
constexpr benchmark::IterationCount kBatch = 64;

enum class Workload { kRead1, kRead10, kWrite1, kMix90 };

const char* WorkloadName(Workload w) {
  switch (w) {
    case Workload::kRead1:
      return "read1";
    case Workload::kRead10:
      return "read10";
    case Workload::kWrite1:
      return "write1";
    case Workload::kMix90:
      return "mix90";
  }
  return "?";
}

bool KeepRunningBatch(benchmark::State& state) {
  runtime::SafeRegion waiting;  // may wait on the other benchmark threads; a no-op when unregistered
  return state.KeepRunningBatch(kBatch);
}

// STM and collector counters sampled around a run by thread 0.
struct Counters {
  uint64_t transactions = 0;
  uint64_t aborts = 0;
  uint64_t majors = 0;
  uint64_t major_pause_ns = 0;
  static Counters Now() {
    const runtime::stm::StmStatistics s = runtime::stm::GetStmStatistics();
    const runtime::GcStatistics g = runtime::GetGcStatistics(0);
    Counters c;
    c.transactions = s.commits + s.snapshot_reads;
    for (uint64_t a : s.aborts) c.aborts += a;
    c.majors = g.collections[static_cast<int>(runtime::CollectionKind::kMajor)];
    c.major_pause_ns = g.pause_nanos_total[static_cast<int>(runtime::CollectionKind::kMajor)];
    return c;
  }
};

template <Workload W, class Store>
int64_t RunBatch(Store& store, const KeySequence& keys, uint64_t& pos) {
  int64_t sink = 0;
  for (benchmark::IterationCount i = 0; i < kBatch; ++i) {
    if constexpr (W == Workload::kRead1) {
      sink += store.Get(keys.At(pos++));
    } else if constexpr (W == Workload::kRead10) {
      uint32_t many[kManyKeys];
      for (int k = 0; k < kManyKeys; ++k) many[k] = keys.At(pos++);
      sink += store.GetMany(many, kManyKeys);
    } else if constexpr (W == Workload::kWrite1) {
      store.Add(keys.At(pos++), 1);
    } else {
      const uint32_t key = keys.At(pos);
      if (keys.IsWrite(pos)) {
        store.Add(key, 1);
      } else {
        sink += store.Get(key);
      }
      ++pos;
    }
  }
  return sink;
}

template <Workload W, class Store>
void Run(benchmark::State& state, Store store, Distribution d) {
  std::optional<runtime::ThreadRegistration> registration;
  if constexpr (Store::kNeedsRegistration) registration.emplace("bench-stm");
  const KeySequence& keys = Sequence(d, kKeys);
  uint64_t pos = KeySequence::StartOf(state.thread_index());
  const bool reporter = state.thread_index() == 0 && Store::kNeedsRegistration;
  // Every STM benchmark starts from collapsed revision chains, whatever ran before it in this process
  // (the other threads wait in a SafeRegion inside KeepRunningBatch, or will enter one).
  if (reporter) runtime::CollectMajor();
  const Counters before = reporter ? Counters::Now() : Counters();
  int64_t sink = 0;
  while (KeepRunningBatch(state)) sink += RunBatch<W>(store, keys, pos);
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(state.iterations());
  if (reporter) {
    const Counters after = Counters::Now();
    const double tx = static_cast<double>(std::max<uint64_t>(1, after.transactions - before.transactions));
    state.counters["aborts/tx"] = static_cast<double>(after.aborts - before.aborts) / tx;
    state.counters["majors"] = static_cast<double>(after.majors - before.majors);
    state.counters["major_ms"] = static_cast<double>(after.major_pause_ns - before.major_pause_ns) / 1e6;
  }
}

template <class Store>
void Register(const std::string& store_name, Store store, Workload w, Distribution d) {
  const std::string name = std::string(WorkloadName(w)) + "/" + DistributionName(d) + "/" + store_name;
  benchmark::internal::Benchmark* b = nullptr;
  switch (w) {
    case Workload::kRead1:
      b = benchmark::RegisterBenchmark(name.c_str(),
                                       [=](benchmark::State& s) { Run<Workload::kRead1>(s, store, d); });
      break;
    case Workload::kRead10:
      b = benchmark::RegisterBenchmark(name.c_str(),
                                       [=](benchmark::State& s) { Run<Workload::kRead10>(s, store, d); });
      break;
    case Workload::kWrite1:
      b = benchmark::RegisterBenchmark(name.c_str(),
                                       [=](benchmark::State& s) { Run<Workload::kWrite1>(s, store, d); });
      break;
    case Workload::kMix90:
      b = benchmark::RegisterBenchmark(name.c_str(),
                                       [=](benchmark::State& s) { Run<Workload::kMix90>(s, store, d); });
      break;
  }
  b->Threads(1)->Threads(2)->UseRealTime();
}

// Pointers handed to the benchmark lambdas; the stores live until main returns.
template <class Map>
struct Borrowed {
  static constexpr bool kNeedsRegistration = Map::kNeedsRegistration;
  Map* map;
  int64_t Get(uint32_t key) const { return map->Get(key); }
  int64_t GetMany(const uint32_t* keys, int n) const { return map->GetMany(keys, n); }
  void Add(uint32_t key, int64_t delta) const { map->Add(key, delta); }
};

int Main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  runtime::InitializeRuntime(runtime::HeapOptions());
  std::unique_ptr<StmTable> table;
  {
    runtime::ThreadRegistration registration("bench-stm-setup");
    table = std::make_unique<StmTable>(kKeys);
  }
  MutexMap mutex_map(kKeys);
  SharedMutexHashMap shared_map(kKeys);
  for (Distribution d : {Distribution::kUniform, Distribution::kZipfian}) (void)Sequence(d, kKeys);

  for (Workload w : {Workload::kRead1, Workload::kRead10, Workload::kWrite1, Workload::kMix90}) {
    for (Distribution d : {Distribution::kUniform, Distribution::kZipfian}) {
      if (w == Workload::kWrite1) {
        Register("stm", StmAtomicReads{table.get()}, w, d);
      } else {
        Register("stm-snapshot", StmSnapshotReads{table.get()}, w, d);
        Register("stm-atomically", StmAtomicReads{table.get()}, w, d);
      }
      Register("mutex-map", Borrowed<MutexMap>{&mutex_map}, w, d);
      Register("shared-mutex-umap", Borrowed<SharedMutexHashMap>{&shared_map}, w, d);
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace
}  // namespace revkv::bench::stm

int main(int argc, char** argv) { return revkv::bench::stm::Main(argc, argv); }
