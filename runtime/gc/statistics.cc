// Cumulative collector statistics, pause histograms and collection listeners (gc.h section 4).
//
// Everything here is readable while collections run: counters and histogram buckets are relaxed
// atomics (each value is exact; a reader may see one collection's figures partly added), the ring of
// recent records and the listener list are under their own mutexes, taken only outside the stopped
// world (RecordCollection runs after the world resumes).
//
// Local collections happen at every committing write transaction, on every worker thread at once, so
// their figures go to per-thread shards (one cache line apart) that readers add up; minor and major
// collections are rare and share one set.
#include <algorithm>
#include <bit>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>

#include "runtime/gc/collector.h"
#include "runtime/heap/page_space.h"
#include "runtime/heap/thread_heap.h"
#include "runtime/safepoint/thread_context.h"

namespace revkv::runtime {

// ----- cumulative statistics ------------------------------------------------------------------------

namespace {
constexpr size_t kRecentRecords = 1024;
constexpr size_t kLocalShards = 16;

struct alignas(64) LocalShard {
  std::atomic<uint64_t> collections{0};
  std::atomic<uint64_t> pause_nanos{0};
  std::atomic<uint64_t> bytes_promoted{0};
  Histogram pauses;
};

struct Cumulative {
  std::array<std::atomic<uint64_t>, kCollectionKinds> collections{};
  std::array<std::atomic<uint64_t>, kCollectionKinds> pause_nanos{};
  std::array<std::atomic<uint64_t>, kCollectionKinds> sequence{};
  std::atomic<uint64_t> bytes_copied{0};
  std::atomic<uint64_t> bytes_promoted{0};
  std::atomic<uint64_t> revisions_freed{0};
  std::atomic<uint64_t> chains_collapsed{0};
  std::atomic<uint64_t> allocation_failures{0};
  std::atomic<uint64_t> safepoints{0};
  std::atomic<uint64_t> late_safepoints{0};
  std::array<Histogram, kCollectionKinds> pauses;
  Histogram time_to_safepoint;
  std::array<LocalShard, kLocalShards> local;

  std::mutex recent_mu;
  std::deque<CollectionRecord> recent;  // guarded by recent_mu

  std::mutex listeners_mu;
  std::map<int, std::pair<unsigned, std::function<void(const CollectionRecord&)>>> listeners;  // guarded
  std::atomic<unsigned> listened_kinds{0};  // union of the listeners' masks
  int next_listener = 1;                    // guarded by listeners_mu
};

Cumulative& Stats() {
  static Cumulative* c = new Cumulative();
  return *c;
}

LocalShard& ShardOfCurrentThread() {
  ThreadContext* self = CurrentThread();
  return Stats().local[(self != nullptr ? self->index : 0) % kLocalShards];
}

void Notify(const CollectionRecord& record) {
  Cumulative& s = Stats();
  const unsigned bit = 1u << static_cast<int>(record.kind);
  if ((s.listened_kinds.load(std::memory_order_relaxed) & bit) == 0) return;
  std::lock_guard<std::mutex> lock(s.listeners_mu);
  ThreadContext* self = CurrentThread();
  if (self != nullptr) self->in_collection_listener = true;  // debug builds: no heap access inside
  for (auto& [id, entry] : s.listeners) {
    if (entry.first & bit) entry.second(record);
  }
  if (self != nullptr) self->in_collection_listener = false;
}
}  // namespace

uint64_t WallClockNanos() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

uint64_t NextSequence(CollectionKind kind) {
  return Stats().sequence[static_cast<int>(kind)].fetch_add(1, std::memory_order_relaxed) + 1;
}

void RecordTimeToSafepoint(uint64_t nanos) {
  Stats().time_to_safepoint.Record(nanos);
  Stats().safepoints.fetch_add(1, std::memory_order_relaxed);
}

void RecordLateSafepoint() { Stats().late_safepoints.fetch_add(1, std::memory_order_relaxed); }

void RecordAllocationFailure() { Stats().allocation_failures.fetch_add(1, std::memory_order_relaxed); }

void RecordLocalCollection(uint64_t pause_nanos, uint64_t bytes_promoted) {
  LocalShard& shard = ShardOfCurrentThread();
  shard.collections.fetch_add(1, std::memory_order_relaxed);
  shard.pause_nanos.fetch_add(pause_nanos, std::memory_order_relaxed);
  shard.bytes_promoted.fetch_add(bytes_promoted, std::memory_order_relaxed);
  shard.pauses.Record(pause_nanos);
  if (Stats().listened_kinds.load(std::memory_order_relaxed) &
      (1u << static_cast<int>(CollectionKind::kLocal))) {
    CollectionRecord record{};
    record.kind = CollectionKind::kLocal;
    record.pause_nanos = pause_nanos;
    record.bytes_promoted = bytes_promoted;
    Notify(record);
  }
}

void RecordCollection(const CollectionRecord& record) {
  Cumulative& s = Stats();
  const int k = static_cast<int>(record.kind);
  s.collections[k].fetch_add(1, std::memory_order_relaxed);
  s.pause_nanos[k].fetch_add(record.pause_nanos, std::memory_order_relaxed);
  s.pauses[k].Record(record.pause_nanos);
  s.bytes_copied.fetch_add(record.bytes_copied, std::memory_order_relaxed);
  s.bytes_promoted.fetch_add(record.bytes_promoted, std::memory_order_relaxed);
  s.revisions_freed.fetch_add(record.revisions_freed, std::memory_order_relaxed);
  s.chains_collapsed.fetch_add(record.chains_collapsed, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(s.recent_mu);
    s.recent.push_back(record);
    if (s.recent.size() > kRecentRecords) s.recent.pop_front();
  }
  Notify(record);
}

const char* CollectionKindName(CollectionKind kind) {
  switch (kind) {
    case CollectionKind::kMinor:
      return "minor";
    case CollectionKind::kLocal:
      return "local";
    case CollectionKind::kMajor:
      return "major";
  }
  return "unknown";
}

GcStatistics GetGcStatistics(size_t recent_limit) {
  Cumulative& s = Stats();
  GcStatistics out;
  for (int k = 0; k < kCollectionKinds; ++k) {
    out.collections[k] = s.collections[k].load(std::memory_order_relaxed);
    out.pause_nanos_total[k] = s.pause_nanos[k].load(std::memory_order_relaxed);
  }
  out.bytes_promoted = s.bytes_promoted.load(std::memory_order_relaxed);
  const int local = static_cast<int>(CollectionKind::kLocal);
  for (const LocalShard& shard : s.local) {
    out.collections[local] += shard.collections.load(std::memory_order_relaxed);
    out.pause_nanos_total[local] += shard.pause_nanos.load(std::memory_order_relaxed);
    out.bytes_promoted += shard.bytes_promoted.load(std::memory_order_relaxed);
  }
  out.bytes_allocated = g_bytes_allocated.load(std::memory_order_relaxed);
  out.bytes_copied = s.bytes_copied.load(std::memory_order_relaxed);
  out.revisions_freed = s.revisions_freed.load(std::memory_order_relaxed);
  out.chains_collapsed = s.chains_collapsed.load(std::memory_order_relaxed);
  out.allocation_failures = s.allocation_failures.load(std::memory_order_relaxed);
  out.safepoints = s.safepoints.load(std::memory_order_relaxed);
  out.late_safepoints = s.late_safepoints.load(std::memory_order_relaxed);
  out.heap = PageSpace::Get().Usage();
  std::lock_guard<std::mutex> lock(s.recent_mu);
  const size_t n = std::min(recent_limit, s.recent.size());
  out.recent.assign(s.recent.end() - static_cast<std::ptrdiff_t>(n), s.recent.end());
  return out;
}

HistogramSnapshot PauseHistogram(CollectionKind kind) {
  Cumulative& s = Stats();
  HistogramSnapshot h = s.pauses[static_cast<int>(kind)].Snapshot();
  if (kind == CollectionKind::kLocal) {
    for (const LocalShard& shard : s.local) h.Merge(shard.pauses.Snapshot());
  }
  return h;
}

HistogramSnapshot TimeToSafepointHistogram() { return Stats().time_to_safepoint.Snapshot(); }

int AddCollectionListener(std::function<void(const CollectionRecord&)> listener, unsigned kinds_mask) {
  Cumulative& s = Stats();
  std::lock_guard<std::mutex> lock(s.listeners_mu);
  const int id = s.next_listener++;
  s.listeners.emplace(id, std::make_pair(kinds_mask, std::move(listener)));
  s.listened_kinds.fetch_or(kinds_mask, std::memory_order_relaxed);
  return id;
}

void RemoveCollectionListener(int id) {
  Cumulative& s = Stats();
  std::lock_guard<std::mutex> lock(s.listeners_mu);
  s.listeners.erase(id);
  unsigned mask = 0;
  for (auto& [_, entry] : s.listeners) mask |= entry.first;
  s.listened_kinds.store(mask, std::memory_order_relaxed);
}

}  // namespace revkv::runtime
