// revkv runtime — the garbage collector (public header).
//
// A generational, mostly-copying conservative collector (seed 003, adapted to seed 000's split of
// objects into thread-local and global):
//  - Minor collection, per thread, when its nursery fills: the thread's own stack and saved registers
//    are ambiguous roots; nursery objects they point into are pinned and promoted in place (their
//    chunk leaves the nursery), the rest are copied to old space; precise roots are updated.
//  - Local collection, per thread, at STM commit (seed 000 "Local garbage collection"): precise roots
//    only (the transaction's written local copies); survivors become global and non-movable by minor
//    collections; references to local copies that were never written go back to their global original.
//  - Major collection, stop-the-world: the stacks of all registered threads pin; precise roots are
//    the root table, every Root<T>, every nursery (scanned in place) and every thread's transaction
//    state; everything else is evacuated into fresh chunks; pinned chunks are kept and reused around
//    their objects; revision chains are collapsed up to the snapshot horizon; pages are recycled.
// None of them fails half-way: when to-space cannot be had, an object stays where it is.
//
// Sections: 1. roots  2. collections  3. local collection (the STM's entry point)
//           4. statistics and events  5. the collector's client (the STM)
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "runtime/heap/heap.h"
#include "runtime/histogram/histogram.h"

namespace revkv::runtime {

// ---------------------------------------------------------------------------------------------------
// 1. Roots
// ---------------------------------------------------------------------------------------------------

namespace internal {
// The value is stored masked so that a Root<T> living on the stack does not look like a pointer to
// the conservative scanner: the object a precise root holds may move.
struct RootNode {
  static constexpr uintptr_t kMask = 0xA5A5'0000'0000'A5A5ull;
  RootNode* prev;
  RootNode* next;
  uintptr_t masked;
  Object* Get() const { return reinterpret_cast<Object*>(masked ^ kMask); }
  void Set(Object* o) { masked = reinterpret_cast<uintptr_t>(o) ^ kMask; }
};
void LinkRoot(RootNode* node);  // into the calling thread's root list
void UnlinkRoot(RootNode* node);
}  // namespace internal

// A precise root owned by the calling (registered) thread: every collection keeps the object alive
// and updates the root when the object moves. Owner thread only; must be destroyed by its owner.
template <class T>
class Root {
 public:
  explicit Root(T* value = nullptr) : node_{nullptr, nullptr, 0} {
    node_.Set(value);
    internal::LinkRoot(&node_);
  }
  ~Root() { internal::UnlinkRoot(&node_); }
  Root(const Root&) = delete;
  Root& operator=(const Root&) = delete;

  T* get() const { return static_cast<T*>(node_.Get()); }
  void set(T* value) { node_.Set(value); }
  T* operator->() const { return get(); }

 private:
  internal::RootNode node_;
};

// A precise root in the global root table, shared by all threads. It may hold only objects outside any
// nursery (global objects, or objects promoted by a collection); storing a nursery object aborts.
// A reference to a revisioned object is collapsed along its chain like any heap reference. Unlike
// Root<T>, the word is not masked: a GlobalRoot on a thread's stack also pins its object, so long-lived
// owners keep it in static or malloc'd storage. Thread-safe.
class GlobalRoot {
 public:
  GlobalRoot();
  ~GlobalRoot();
  GlobalRoot(const GlobalRoot&) = delete;
  GlobalRoot& operator=(const GlobalRoot&) = delete;

  Object* Load() const { return value_.load(std::memory_order_acquire); }
  void Store(Object* value);

 private:
  friend class MajorCollector;
  std::atomic<Object*> value_{nullptr};
};

// ---------------------------------------------------------------------------------------------------
// 2. Collections
// ---------------------------------------------------------------------------------------------------

enum class CollectionKind : uint8_t { kMinor = 0, kLocal = 1, kMajor = 2 };
inline constexpr int kCollectionKinds = 3;
const char* CollectionKindName(CollectionKind kind);

// What a major collection moves (docs/runtime-heap-gc.md section 7.3).
enum class MajorMode : uint8_t {
  // Mark-region: live objects are marked in place; only the old chunks the previous major collection
  // measured as sparse (live fraction below a threshold), sparsest first and within a copy budget of the
  // free chunks, are evacuated and freed. What every collection the runtime starts by itself does.
  kSelective,
  // Every old chunk is evacuated (only pinned objects stay): afterwards the live data sits in as few
  // chunks as it can, and whole pages go back to the page space. What Maintenance/Defragment asks for.
  kCompactEverything,
};

// Runs a major (stop-the-world) collection now. Blocks until it is done; if another thread is already
// collecting, waits for that collection and then runs one. Reaches a safepoint. The calling thread
// must be registered and must not hold STM header locks.
void CollectMajor(MajorMode mode = MajorMode::kSelective);

// Collector threads of the major collection (docs/runtime-heap-gc.md 7.3, "Parallel tracing"): the
// collecting thread plus n - 1 helpers trace and evacuate in parallel, with work stealing. 0 (the
// default) restores the configured number: HeapOptions::collector_threads, else REVKV_GC_THREADS from the
// environment, else one per core. Takes effect at the next major collection. Thread-safe.
inline constexpr size_t kMaxCollectorThreads = 64;
void SetCollectorThreads(size_t n);

// Runs a minor collection of the calling thread's nursery now. Reaches a safepoint first.
void CollectMinor();

// While an instance lives, the heap's growth triggers no major collection below 7/8 of the heap
// maximum; explicit collections and exhaustion still collect. For bulk loads (recovery), whose objects
// nearly all stay live: each collection in the middle would copy the growing live set for nothing.
// Garbage made meanwhile waits for the first collection after the scope. Thread-safe; scopes nest.
class MajorCollectionDeferral {
 public:
  MajorCollectionDeferral();
  ~MajorCollectionDeferral();
  MajorCollectionDeferral(const MajorCollectionDeferral&) = delete;
  MajorCollectionDeferral& operator=(const MajorCollectionDeferral&) = delete;
};

// ---------------------------------------------------------------------------------------------------
// 3. Local collection (the STM's commit-time entry point)
// ---------------------------------------------------------------------------------------------------

// Seed 000's PerformLocalCollect. `roots` are exact slots holding local objects that must survive
// (the transaction's written local copies); each is updated to the object's new address. Every local
// object reachable from them becomes global (kGlobal set, kWritten and kPossiblyOutdated cleared) and
// leaves the nursery; a reference to a local copy that was never written (kWritten clear, h_revision
// pointing to its original) is replaced by that original. Afterwards the nursery is empty.
// Thread-local: no stop-the-world, no stack scan, no safepoint, never fails (an object that cannot be
// copied is promoted in place). If `new_versioned` is not null, the new (after-collection) address of
// every surviving versioned object the transaction created (h_revision 1, not a copy) is appended to
// it, so the commit can stamp its commit time. Returns the bytes made global.
size_t LocalCollect(std::span<Object*> roots, std::vector<Object*>* new_versioned = nullptr);

// Discards the calling thread's nursery without tracing anything (an aborted or read-only
// transaction): every object in it is garbage. No safepoint.
void ResetNursery();

// ---------------------------------------------------------------------------------------------------
// 4. Statistics and events
// ---------------------------------------------------------------------------------------------------

// Pause and time-to-safepoint histograms are runtime::Histogram (runtime/histogram/histogram.h) in
// nanoseconds, 8 buckets per power of two; their snapshots are HistogramSnapshot.

// What one collection did.
struct CollectionRecord {
  CollectionKind kind;
  uint64_t sequence;                 // 1, 2, ... per kind
  uint64_t start_unix_nanos;         // wall clock at the start
  uint64_t pause_nanos;              // stopped world (major) or the collecting thread's pause
  uint64_t time_to_safepoint_nanos;  // major: from the request until every thread stopped
  uint64_t heap_bytes_before;        // committed chunks in use before / after
  uint64_t heap_bytes_after;
  uint64_t bytes_copied;    // moved by evacuation
  uint64_t bytes_promoted;  // left the nursery (copied or promoted in place)
  uint64_t objects_copied;
  uint64_t pinned_objects;
  uint64_t pinned_chunks;
  uint64_t pinned_bytes;
  uint64_t revisions_freed;   // major: old revisions that did not survive
  uint64_t chains_collapsed;  // major: references redirected to a newer revision (one per reference)
  uint64_t chunks_evacuated;  // major: old chunks chosen for evacuation (bytes_copied is what left them)
  uint64_t bytes_marked;      // major: bytes of old objects found live and kept where they are
  uint64_t objects_marked;    // major: old objects found live and kept where they are
  uint32_t threads;           // registered threads (major)
  // Major: the collector threads that traced (docs/runtime-heap-gc.md 7.3), the objects each scanned
  // (old objects marked in place or copied, large objects, nursery objects scanned as roots; each
  // exactly once), and how many objects they took from another thread's deque.
  uint32_t collector_threads;
  std::vector<uint64_t> objects_scanned_by_thread;
  uint64_t objects_scanned;
  uint64_t steals;
  std::string reason;
};

// Cumulative statistics; reading them stops nothing.
struct GcStatistics {
  std::array<uint64_t, kCollectionKinds> collections{};
  std::array<uint64_t, kCollectionKinds> pause_nanos_total{};
  uint64_t bytes_allocated = 0;  // by all threads (nursery and large), at chunk granularity
  uint64_t bytes_copied = 0;
  uint64_t bytes_promoted = 0;
  uint64_t revisions_freed = 0;
  uint64_t chains_collapsed = 0;
  uint64_t allocation_failures = 0;
  uint64_t safepoints = 0;  // stop-the-world operations
  // Threads a stop-the-world waited for longer than the watchdog threshold (SetSafepointWatchdogNanos),
  // one per late thread per stop; each was also logged to stderr with its name and state.
  uint64_t late_safepoints = 0;
  HeapUsage heap;
  std::vector<CollectionRecord> recent;  // newest last; minor and major collections only
};
GcStatistics GetGcStatistics(size_t recent_limit = 64);

// Pause histograms by kind and the time-to-safepoint histogram, as of now. Thread-safe.
HistogramSnapshot PauseHistogram(CollectionKind kind);
HistogramSnapshot TimeToSafepointHistogram();

// Registers a callback run after every collection of a kind in `kinds_mask` (bit 1 << kind), on the
// collecting thread after the world has resumed and the collector's lock is released. Listeners run
// one at a time under the listener lock: a listener must be quick and must not allocate on the heap,
// poll, collect, or add or remove listeners. Returns an id for RemoveCollectionListener, after which
// the listener is never called again. Thread-safe.
int AddCollectionListener(std::function<void(const CollectionRecord&)> listener,
                          unsigned kinds_mask = (1u << 0) | (1u << 2));
void RemoveCollectionListener(int id);

// ---------------------------------------------------------------------------------------------------
// 5. The collector's client (the STM)
// ---------------------------------------------------------------------------------------------------

// Keeps objects alive and tells where they are after the running collection.
class Relocator {
 public:
  // Keeps `object` (nullptr allowed) alive as exactly this object — the same revision, never a newer
  // one — and returns its address after the collection.
  virtual Object* Relocate(Object* object) = 0;

 protected:
  ~Relocator() = default;
};

// What the STM tells the collector. All calls happen on the collecting thread, with the world stopped
// (major) or on the owner thread (minor, local).
class CollectorClient {
 public:
  virtual ~CollectorClient() = default;
  // The oldest time any live snapshot may still read at, or the current time when there is none.
  // A heap reference may be redirected from revision B to a newer C only if C's commit time is at
  // most this horizon.
  virtual uint64_t SnapshotHorizon() = 0;
  // Passes every object held by the transaction state `thread_state` (the value the thread stored in
  // ThreadClientState()) to `relocator`, stores the results and rehashes what is keyed by address.
  virtual void RelocateThreadState(void* thread_state, Relocator& relocator, CollectionKind kind) = 0;
  // Revisions superseded (made non-head) since the process started; used for "revisions freed".
  virtual uint64_t RevisionsSuperseded() = 0;
};

// Installs the client. Call once, before transactions start. Thread-safe.
void SetCollectorClient(CollectorClient* client);

// The calling thread's slot for its client state (its STM transaction descriptor). Owner thread only.
void*& ThreadClientState();

}  // namespace revkv::runtime
