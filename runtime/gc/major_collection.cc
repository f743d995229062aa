// The major collection: stop-the-world mark-region with selective evacuation (Immix-style
// defragmentation over seed 003's mostly-copying collector, with seed 000's global/local split and
// DESIGN 2.3's revision chains).
//
//  1. Stop the world; retire every thread's allocation regions so all chunks parse. Choose the
//     evacuation candidates among the old chunks (Condemn): the chunks the previous major collection
//     left sparse (live bytes below kEvacuateBelowLiveBytes), sparsest first, as long as their live
//     bytes fit in the free chunks (the copy budget). Chunks taken since the previous collection have
//     no measure and are never candidates. In MajorMode::kCompactEverything every old chunk is a
//     candidate. Every other old chunk is marked in place; its mark bits (mark_bits.h) are cleared.
//  2. Ambiguous roots: each registered thread's stack from its published top to its base, and its
//     saved registers. An ambiguous word into a candidate chunk pins the object it points into
//     (interior pointers included); into a chunk marked in place or a large object, marks it. Nothing
//     it points to moves.
//  3. Precise roots: the global root table, every Root<T>, every nursery (scanned in place: objects
//     in a nursery never move during a major collection), and every thread's transaction state
//     through the CollectorClient — relocated *exactly*, never along a chain.
//  4. One trace: an unpinned object of a candidate chunk is copied into a fresh chunk, leaving a
//     forwarding address; an object of a chunk marked in place gets its mark bit and adds its size to
//     its chunk's live bytes. To-space is scanned in allocation order (Cheney), objects that stay
//     from a stack. Heap references to a revisioned object are first collapsed along its chain to the
//     newest revision whose commit time is at most the snapshot horizon (CollapseChain below: the one
//     place where revision chains are shortened by the collector).
//  5. Sweep (in the pause): candidate chunks without pinned objects are freed; pinned chunks keep
//     their pinned objects; a chunk marked in place keeps its marked objects, the gaps between them
//     become filler and the object-start map forgets the dead ones (or the chunk is freed if nothing
//     in it was marked); chunks with holes go to the hole list that old-space allocation reuses;
//     unmarked large objects are freed; empty pages go back to the page space. Every kept old chunk
//     records its live bytes, the next collection's measure.
// The remembered sets (old-to-nursery slots) are rebuilt while scanning, since the slots move.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "runtime/gc/collector.h"
#include "runtime/gc/collector_threads.h"
#include "runtime/gc/roots.h"
#include "runtime/gc/test_hooks.h"
#include "runtime/gc/work_stealing_deque.h"
#include "runtime/heap/mark_bits.h"
#include "runtime/heap/object_format.h"
#include "runtime/heap/object_starts.h"
#include "runtime/heap/page_space.h"
#include "runtime/port/diagnostics.h"
#include "runtime/safepoint/safepoint.h"
#include "runtime/safepoint/thread_context.h"

namespace revkv::runtime {

namespace {
constexpr size_t kMinHoleBytes = 64;
// A chunk whose last measured live bytes are below this (half a chunk) is an evacuation candidate.
// Sparser chunks cost less to copy and give more back; a chunk just above it stays in place with its
// holes reused by old-space allocation, so at steady state an old chunk holds at least about half a
// chunk of live data or is about to be evacuated.
constexpr uint32_t kEvacuateBelowLiveBytes = kChunkSize / 2;
// A collector thread's private stack of grey objects longer than this shares its older half.
constexpr size_t kPublishAbove = 256;
uint64_t g_nonhead_survivors = 0;   // collector mutex
uint64_t g_superseded_at_last = 0;  // collector mutex

#ifdef REVKV_TEST_HOOKS
std::atomic<gc_testing::ClaimHook> g_claim_hook{nullptr};
// Before a collector thread's claim of an object (test_hooks.h). Relaxed: the hook is installed before
// the collection starts the collector threads and removed after they are done.
void BeforeClaim(const Object* o) {
  if (gc_testing::ClaimHook hook = g_claim_hook.load(std::memory_order_relaxed)) hook(o);
}
#else
inline void BeforeClaim(const Object*) {}
#endif

// A chunk's gc_flags while the collector threads trace: kChunkHasPinned may be set by any of them
// (PinClaimed) while others read the flags, so every access then is atomic. Relaxed: the flags that
// decide where an object goes (kChunkCondemned, kChunkMarkInPlace) were written by Condemn before the
// threads started; kChunkHasPinned only routes the chunk to the pinned list, read after they finish.
uint8_t GcFlagsOf(ChunkInfo& info) {
  return std::atomic_ref<uint8_t>(info.gc_flags).load(std::memory_order_relaxed);
}

// The per-thread share of the chunks' live bytes (ChunkInfo::live_bytes), summed without an atomic per
// object: a small direct-mapped table of (chunk, bytes) entries; an entry evicted by another chunk, and
// every entry at the end of the trace, is added to its chunk with one atomic fetch_add. Relaxed: the
// sums are read by the sweep, after RunOnCollectorThreads returned (which orders every thread's adds
// before it).
class LiveBytesCache {
 public:
  void Add(char* chunk, uint32_t bytes) {
    Entry& e = entries_[(reinterpret_cast<uintptr_t>(chunk) / kChunkSize) % kEntries];
    if (e.chunk != chunk) {
      Flush(e);
      e.chunk = chunk;
    }
    e.bytes += bytes;
  }
  void FlushAll() {
    for (Entry& e : entries_) Flush(e);
  }

 private:
  static constexpr size_t kEntries = 1024;
  struct Entry {
    char* chunk = nullptr;
    uint32_t bytes = 0;
  };
  static void Flush(Entry& e) {
    if (e.bytes != 0) {
      std::atomic_ref<uint32_t>(ChunkInfoOf(e.chunk).live_bytes)
          .fetch_add(e.bytes, std::memory_order_relaxed);
    }
    e.bytes = 0;
  }
  Entry entries_[kEntries];
};

// What one collector thread owns while tracing: its deque of grey objects, its to-space allocation
// buffer (TLAB: a chunk only it copies into), its share of the live bytes, the remembered-set entries it
// found, and its counters. Summed or merged by the collecting thread after the trace.
struct Worker {
  std::vector<Object*> local;  // private grey objects (MajorCollector::Push)
  WorkStealingDeque<Object*> deque;
  char* to_cursor = nullptr;
  char* to_limit = nullptr;
  LiveBytesCache live;
  std::vector<std::pair<ThreadContext*, std::atomic<Object*>*>> remembered;
  size_t next_victim = 0;
  uint64_t bytes_copied = 0;
  uint64_t objects_copied = 0;
  uint64_t pinned_objects = 0;
  uint64_t chains_collapsed = 0;
  uint64_t bytes_marked = 0;
  uint64_t objects_marked = 0;
  uint64_t nonhead_survivors = 0;
  uint64_t objects_scanned = 0;
  uint64_t steals = 0;
};
}  // namespace

class MajorCollector final : public Relocator {
 public:
  MajorCollector(ThreadContext* self, const char* reason, MajorMode mode)
      : self_(self), reason_(reason), mode_(mode) {}

  // Collects; `stack` holds the collecting thread's own ambiguous roots (see MutatorStack). Returns what
  // the collection did (recorded by the caller once the collector mutex is released, so listeners never
  // run under it; they still run under the listener lock, see gc.h).
  CollectionRecord Run(const MutatorStack& stack) {
    const uint64_t requested = port::NowNanos();
    const uint64_t start_wall = WallClockNanos();
    self_->registers = stack.registers;  // the owner's own fields: no other thread reads them now
    self_->stack_top.store(stack.top, std::memory_order_relaxed);
    ThreadRegistry& registry = ThreadRegistry::Get();
    const uint64_t tts = registry.StopTheWorld(self_);
    internal::g_poll_word.fetch_and(~internal::kMajorWanted, std::memory_order_relaxed);
    RecordTimeToSafepoint(tts);
    const size_t before = PageSpace::Get().InUseBytes();

    RunStoppedWorldHookForTesting();
    CheckAndForgetGlobalObjectSamples();  // before anything moves or is freed
    client_ = Client();
    horizon_ = client_ != nullptr ? client_->SnapshotHorizon() : 0;
    for (ThreadContext* t : registry.threads()) {
      threads_by_index_[t->index] = t;
      t->heap.RetireRegions();
      t->heap.DropOldRegion();
      t->heap.remembered().clear();
    }
    workers_.resize(CollectorThreads());
    for (auto& w : workers_) w = std::make_unique<Worker>();
    single_ = workers_.size() == 1;
    Condemn();
    // Steps 2 and 3 (but the nurseries) run on this thread, as worker 0: what they find goes to its deque.
    Worker& w0 = *workers_[0];
    for (ThreadContext* t : registry.threads()) ScanStackConservatively(w0, t);
    ScanPreciseRoots(w0, registry);
    if (!single_) Publish(w0);  // the roots' work, for the helpers to steal as soon as they start
    RunOnCollectorThreads(workers_.size(), [this](size_t i) { Trace(*workers_[i]); });
    for (auto& w : workers_) {
      for (auto& [t, slot] : w->remembered) t->heap.remembered().push_back(slot);
    }
    Sweep();
    for (ThreadContext* t : registry.threads()) t->heap.ReturnUnusedNurseryChunks();
    PageSpace::Get().RebuildAfterCollection();
    for (ThreadContext* t : registry.threads()) t->heap.TopUpNurseryLow();
    if (HeapVerificationEnabled()) VerifyHeapAfterMajorCollection(registry.threads());
    PageSpace::Get().SetPinnedFigures(pinned_bytes_, pinned_chunks_.size());
    const size_t after = PageSpace::Get().InUseBytes();
    SetNextTrigger(after);
    // Taking to-space chunks may have asked for another major collection: this one has just run.
    internal::g_poll_word.fetch_and(~internal::kMajorWanted, std::memory_order_relaxed);

    CollectionRecord r{};
    r.kind = CollectionKind::kMajor;
    r.sequence = NextSequence(CollectionKind::kMajor);
    r.start_unix_nanos = start_wall;
    r.time_to_safepoint_nanos = tts;
    r.heap_bytes_before = before;
    r.heap_bytes_after = after;
    r.pinned_chunks = pinned_chunks_.size();
    r.pinned_bytes = pinned_bytes_;
    r.chunks_evacuated = chunks_evacuated_;
    r.collector_threads = static_cast<uint32_t>(workers_.size());
    for (auto& w : workers_) {
      r.bytes_copied += w->bytes_copied;
      r.objects_copied += w->objects_copied;
      r.pinned_objects += w->pinned_objects;
      r.chains_collapsed += w->chains_collapsed;
      r.bytes_marked += w->bytes_marked;
      r.objects_marked += w->objects_marked;
      r.objects_scanned += w->objects_scanned;
      r.steals += w->steals;
      r.objects_scanned_by_thread.push_back(w->objects_scanned);
      nonhead_survivors_ += w->nonhead_survivors;
    }
    r.revisions_freed = RevisionsFreed();
    r.threads = static_cast<uint32_t>(registry.threads().size());
    r.reason = reason_;
    registry.ResumeTheWorld();
    r.pause_nanos = port::NowNanos() - requested;
    return r;
  }

  // The client's transaction state, relocated exactly (step 3, on the collecting thread only).
  Object* Relocate(Object* o) override { return o == nullptr ? o : Evacuate(*workers_[0], o); }

 private:
  // ----- step 1 -----
  // Chooses the candidates (kChunkCondemned) and the chunks marked in place (kChunkMarkInPlace) among
  // the old chunks; see the file comment.
  void Condemn() {
    struct Measured {
      uint32_t live;
      char* chunk;
    };
    std::vector<Measured> sparse;
    for (PageHeader* page : PageSpace::Get().SmallPages()) {
      const size_t fresh =
          std::min<size_t>(page->next_fresh_chunk.load(std::memory_order_relaxed), kChunksPerPage);
      for (size_t i = 1; i < fresh; ++i) {
        ChunkInfo& info = page->chunk[i];
        info.gc_flags = 0;
        if (page->chunk_kind[i].load(std::memory_order_relaxed) != ChunkKind::kOld) continue;
        info.has_holes = 0;
        info.pinned_bytes = 0;
        info.gc_flags = kChunkMarkInPlace;
        ClearChunkMarks(page->ChunkStart(i));
        if (mode_ == MajorMode::kCompactEverything) {
          sparse.push_back({0, page->ChunkStart(i)});
        } else if (info.live_bytes != kNoLiveStats && info.live_bytes < kEvacuateBelowLiveBytes) {
          sparse.push_back({info.live_bytes, page->ChunkStart(i)});
        }
        info.live_bytes = 0;  // counted again while marking
      }
    }
#ifdef REVKV_MUTATION_NO_EVACUATION
    sparse.clear();  // mutation test: every old chunk is marked in place, nothing is evacuated
#endif
    // Sparsest first, within the copy budget: the free chunks the heap still has. Copies fill their
    // to-space chunks up to the last object that fits, so the budget keeps an eighth in hand, less one
    // chunk per collector thread (each has a to-space chunk of its own, which it may leave part empty);
    // an object that finds no to-space after all is pinned (AllocateToSpace), never lost.
    std::sort(sparse.begin(), sparse.end(), [](const Measured& a, const Measured& b) {
      return a.live != b.live ? a.live < b.live : a.chunk < b.chunk;
    });
    const size_t capacity = PageSpace::Get().FreeChunkCapacity() * kChunkSize;
    const size_t tlabs = workers_.size() * kChunkSize;
    const size_t budget = mode_ == MajorMode::kCompactEverything ? SIZE_MAX
                          : capacity - capacity / 8 > tlabs      ? capacity - capacity / 8 - tlabs
                                                                 : 0;
    size_t planned = 0;
    for (const Measured& m : sparse) {
      if (planned + m.live > budget) break;
      planned += m.live;
      ChunkInfoOf(m.chunk).gc_flags = kChunkCondemned;
      ++chunks_evacuated_;
    }
  }

  // ----- step 2 (collecting thread only, before any object moves) -----
  REVKV_NO_SANITIZE_STACK_SCAN void ScanStackConservatively(Worker& w, ThreadContext* t) {
    for (uintptr_t word : t->registers.words) PinWord(w, word);
    const uintptr_t top = t->stack_top.load(std::memory_order_relaxed) & ~uintptr_t{7};
    for (uintptr_t a = top; a < t->stack_high; a += sizeof(uintptr_t)) {
      PinWord(w, *reinterpret_cast<const uintptr_t*>(a));
    }
  }

  // A word pins (or marks) the object it points into and the object it points one past the end of
  // (ResolveAmbiguousReferents).
  void PinWord(Worker& w, uintptr_t word) {
#ifdef REVKV_MUTATION_NO_STACK_ROOTS
    return;  // mutation test: ambiguous roots keep nothing alive
#endif
    const AmbiguousReferents r = ResolveAmbiguousReferents(word);
    if (r.into != nullptr) PinReferent(w, r.into);
    if (r.ending != nullptr) PinReferent(w, r.ending);
  }

  void PinReferent(Worker& w, Object* o) {
    const ChunkKind kind = ChunkKindOf(o);
    if (kind == ChunkKind::kLargeHead) {
      MarkLarge(w, o);
    } else if (kind == ChunkKind::kOld && (ChunkInfoOf(o).gc_flags & kChunkMarkInPlace)) {
      MarkInPlace(w, o, ChunkInfoOf(o));  // stays where it is anyway
    } else if (kind == ChunkKind::kOld && (ChunkInfoOf(o).gc_flags & kChunkCondemned)) {
#ifdef REVKV_MUTATION_NO_PINNING
      // mutation test: an ambiguous root keeps its object alive like a precise one, but it moves
      (void)Evacuate(w, o);
      return;
#endif
      const uint16_t f = o->flags();
      if (!(f & (kPinned | kForwarded))) PinClaimed(w, o, f);
    }
  }

  // Keeps `o` (of a candidate chunk) where it is. The calling thread owns o's header: it is the
  // collecting thread before the trace, or the thread that claimed o (kCopying) during it; `f` is o's
  // flags before the claim. The release store ends the claim: threads waiting on kCopying see kPinned.
  void PinClaimed(Worker& w, Object* o, uint16_t f) {
    o->StoreFlags(static_cast<uint16_t>(f | kPinned), std::memory_order_release);
    ++w.pinned_objects;
    Push(w, o);
    ChunkInfo& info = ChunkInfoOf(o);
    if (!(std::atomic_ref<uint8_t>(info.gc_flags).fetch_or(kChunkHasPinned, std::memory_order_relaxed) &
          kChunkHasPinned)) {
      std::lock_guard<std::mutex> lock(pinned_chunks_mu_);
      pinned_chunks_.push_back(ChunkBaseOf(o));
    }
  }

  // An object of a chunk marked in place: found live once (the thread that sets its mark bit), scanned
  // once, by that thread or a thief.
  void MarkInPlace(Worker& w, Object* o, ChunkInfo& info) {
#ifdef REVKV_MUTATION_MARK_RACE
    // mutation test: a plain test-then-set of the mark bit; two threads may both win an object (and
    // scan it twice), and a bit another thread set in the same word between the read and the write is
    // lost (a live object left unmarked, then swept)
    {
      const size_t g = PageGranuleOf(o);
      uint64_t& word = PageOf(o)->object_starts[kStartWordsPerPage + g / 64];
      const uint64_t bit = uint64_t{1} << (g % 64);
      const uint64_t old = word;
      if (old & bit) return;
      for (volatile int i = 0; i < 16; ++i) {
      }
      word = old | bit;
    }
#else
    // One collector thread: no other thread can race for the bit.
    if (!(single_ ? SetMark(o) : SetMarkAtomic(o))) return;
#endif
    (void)info;
    const uint32_t size = o->size();
    w.live.Add(ChunkBaseOf(o), size);
    w.bytes_marked += size;
    ++w.objects_marked;
    Push(w, o);
  }

  // A large object: the thread whose CAS sets kMarked scans it. Relaxed, as SetMarkAtomic.
  void MarkLarge(Worker& w, Object* o) {
    uint16_t f = o->flags();
    do {
      if (f & kMarked) return;
    } while (!o->CompareExchangeFlags(f, static_cast<uint16_t>(f | kMarked), std::memory_order_relaxed));
    Push(w, o);
  }

  // ----- step 3 (collecting thread; nurseries in the trace) -----
  void ScanPreciseRoots(Worker& w, ThreadRegistry& registry) {
    {
      GlobalRootTable& table = GlobalRootTable::Get();
      std::lock_guard<std::mutex> lock(table.mutex());
      for (GlobalRoot* root : table.roots()) {
        Object* v = root->value_.load(std::memory_order_relaxed);
        if (v == nullptr) continue;
        root->value_.store(EvacuateCollapsed(w, v), std::memory_order_relaxed);
      }
    }
    for (ThreadContext* t : registry.threads()) {
      for (internal::RootNode* n = t->roots.next; n != &t->roots; n = n->next) {
        if (n->Get() != nullptr) n->Set(Evacuate(w, n->Get()));
      }
      for (char* chunk : t->heap.nursery_chunks()) nursery_chunks_.push_back(chunk);
      if (client_ != nullptr && t->client_state != nullptr) {
        client_->RelocateThreadState(t->client_state, *this, CollectionKind::kMajor);
      }
    }
  }

  // Scans the nursery chunks this thread claims (one fetch_add each: the chunks are the unit of
  // sharing here, the objects found go to the claiming thread's deque).
  void ScanNurseries(Worker& w) {
    for (;;) {
      const size_t i = next_nursery_chunk_.fetch_add(1, std::memory_order_relaxed);
      if (i >= nursery_chunks_.size()) return;
      char* chunk = nursery_chunks_[i];
      char* fringe = ChunkInfoOf(chunk).fringe;
      for (char* p = chunk; p < fringe; p += SizeAt(p)) {
        if (!IsFiller(p)) Scan(w, reinterpret_cast<Object*>(p));
      }
    }
  }

  // ----- step 4: the parallel trace -----
  // Every collector thread: its share of the nurseries, then its own deque (LIFO), then other threads'
  // deques (stealing), until termination: all threads idle with every deque empty (FindWork).
  void Trace(Worker& w) {
    ScanNurseries(w);
    Object* o;
    for (;;) {
      while (Pop(w, &o)) Scan(w, o);
      if (!FindWork(w, &o)) break;
      Scan(w, o);
    }
    if (w.to_cursor != nullptr) ChunkInfoOf(w.to_cursor - 1).fringe = w.to_cursor;
    w.live.FlushAll();
  }

  // Termination (the classic idle-count protocol, e.g. Flood, Detlefs, Shavit and Zhang, "Parallel
  // Garbage Collection for Shared Memory Multiprocessors", JVM 2001): a thread with an empty deque
  // counts itself idle, and while idle only looks for work; to steal it first counts itself busy again.
  // A thread pushes only while busy and goes idle only with an empty deque and private stack (Pop),
  // and a stolen object is held only by a busy thread; so when the count reaches the number of threads,
  // every deque is empty, no object is being scanned, and none can appear: the trace is over, and every
  // thread that sees the count at its maximum may return. The count is seq_cst, so an idle thread's decrement
  // and a finishing thread's read are in one order.
  bool FindWork(Worker& w, Object** out) {
    if (TrySteal(w, out)) return true;
    idle_.fetch_add(1, std::memory_order_seq_cst);
    for (int spins = 0;; ++spins) {
      if (idle_.load(std::memory_order_seq_cst) == workers_.size()) return false;
      if (AnyDequeMaybeNonEmpty(w)) {
        idle_.fetch_sub(1, std::memory_order_seq_cst);
        if (TrySteal(w, out)) return true;
        idle_.fetch_add(1, std::memory_order_seq_cst);
      }
      // docs/locks.md: a spin-wait bounded by the other threads' remaining work. Spinning, not
      // yielding, at first: a thread that yields on a loaded machine may lose its core for a whole
      // time slice, longer than most traces, while the thread it waits for pushes work it could steal.
      if (spins < 4096) {
        port::CpuRelax();
      } else {
        std::this_thread::yield();
      }
    }
  }

  // A grey object goes on the thread's private stack first (no synchronisation at all), and the
  // older half of that stack moves to the thread's deque, where others can steal it, when another
  // thread is idle (a relaxed read of the idle count on each push: a stale answer only delays the
  // sharing by a push) or the private stack is long. The deque's pop costs a store-load fence; most
  // objects never pay it. Termination is unchanged: a thread with a private object is not idle.
  // With one thread nothing is shared; a deque that still holds work needs no more for now.
  void Push(Worker& w, Object* o) {
    w.local.push_back(o);
    if (single_) return;
    const size_t n = w.local.size();
    if ((n >= kPublishAbove || (n >= 2 && idle_.load(std::memory_order_relaxed) != 0)) &&
        !w.deque.MaybeNonEmpty()) {
      Publish(w);
    }
  }

  void Publish(Worker& w) {
    const size_t half = w.local.size() / 2;
    for (size_t i = 0; i < half; ++i) w.deque.Push(w.local[i]);  // the oldest: the widest work
    w.local.erase(w.local.begin(), w.local.begin() + static_cast<ptrdiff_t>(half));
  }

  bool Pop(Worker& w, Object** out) {
    if (!w.local.empty()) {
      *out = w.local.back();
      w.local.pop_back();
      return true;
    }
    return w.deque.Pop(out);
  }

  bool TrySteal(Worker& w, Object** out) {
#ifdef REVKV_MUTATION_NO_STEALING
    return false;  // mutation test: each thread traces only what it found itself
#endif
    const size_t n = workers_.size();
    for (size_t k = 0; k < n; ++k) {
      w.next_victim = (w.next_victim + 1) % n;
      Worker& victim = *workers_[w.next_victim];
      if (&victim == &w) continue;
      if (victim.deque.Steal(out)) {
        ++w.steals;
        return true;
      }
    }
    return false;
  }

  bool AnyDequeMaybeNonEmpty(const Worker& w) const {
#ifdef REVKV_MUTATION_NO_STEALING
    return false;
#endif
    for (const auto& v : workers_) {
      if (v.get() != &w && v->deque.MaybeNonEmpty()) return true;
    }
    return false;
  }

  // The address of `o` after this collection: copied if it is in a candidate chunk and not pinned,
  // marked where it is if its chunk is marked in place.
  Object* Evacuate(Worker& w, Object* o) {
    ChunkInfo& info = ChunkInfoOf(o);
    const uint8_t gc = GcFlagsOf(info);
    if (gc & kChunkMarkInPlace) {
      MarkInPlace(w, o, info);
      return o;
    }
    if (gc & kChunkCondemned) return EvacuateCandidate(w, o);
    if (ChunkKindOf(o) == ChunkKind::kLargeHead) MarkLarge(w, o);
    return o;  // in a nursery (scanned as a root), in to-space, or large
  }

  // An object of a candidate chunk is copied by exactly one thread: the one whose CAS sets kCopying on
  // its flags (the claim). The others wait for the claim to end (a copy is at most 8 KiB of memcpy,
  // never a wait for anything else) and take the winner's answer: kForwarded (h_revision holds the
  // copy's address) or kPinned (to-space ran out; it stays).
  Object* EvacuateCandidate(Worker& w, Object* o) {
    // Acquire: pairs with the winner's release store of kForwarded, so the copy's bytes and the
    // forwarding address are visible.
    uint16_t f = o->flags(std::memory_order_acquire);
    for (;;) {
      if (f & kForwarded) return reinterpret_cast<Object*>(o->h_revision.load(std::memory_order_relaxed));
      if (f & kPinned) return o;
      if (f & kCopying) {
        port::CpuRelax();
        f = o->flags(std::memory_order_acquire);
        continue;
      }
      BeforeClaim(o);
      // Relaxed: the claim only excludes; what the winner reads of o was written before the trace.
      if (o->CompareExchangeFlags(f, static_cast<uint16_t>(f | kCopying), std::memory_order_relaxed)) break;
      // Lost (or a spurious failure): the flags are read again with acquire and the loop decides again.
      // They may be another thread's kForwarded (its release store), and the loop then reads the
      // forwarding address and hands out the copy, which must be visible whole, as after the acquire
      // loads above. The failed CAS's own reload is relaxed (GCC allows no failure order stronger than
      // the success order); stm_test's
      // ACollectorThreadThatLosesTheClaimOfARevisionUsesTheWinnersCompleteCopy.
      f = o->flags(std::memory_order_acquire);
    }
    const size_t size = o->size();
#ifdef REVKV_MUTATION_NO_MOVING
    PinClaimed(w, o, f);  // mutation test: survivors are never copied
    return o;
#endif
    char* to = AllocateToSpace(w, size);
    if (to == nullptr) {  // no chunk left: it stays where it is, like a pinned object
      PinClaimed(w, o, f);
      return o;
    }
    // The header is rebuilt, not copied: another thread may still be failing a CAS on o's flags (an
    // atomic access the memcpy's plain read would race with). The rest of o is read by others only
    // (h_commit_time, h_newest: never written in an original during the trace).
    HeaderAccess::Init(to, o->type(), static_cast<uint32_t>(size));
    auto* copy = reinterpret_cast<Object*>(to);
    copy->SetFlagsExclusive(f);  // without the claim
    copy->h_revision.store(o->h_revision.load(std::memory_order_relaxed), std::memory_order_relaxed);
    std::memcpy(to + sizeof(Object), reinterpret_cast<char*>(o) + sizeof(Object), size - sizeof(Object));
    // Release (both): a thread that reads the forwarding address in h_revision (ReadLink) also sees
    // the claim; one that sees kForwarded also sees the address and the copy.
    o->h_revision.store(reinterpret_cast<uintptr_t>(to), std::memory_order_release);
    o->StoreFlags(static_cast<uint16_t>(f | kForwarded), std::memory_order_release);
    Push(w, reinterpret_cast<Object*>(to));
    w.bytes_copied += size;
    ++w.objects_copied;
    return reinterpret_cast<Object*>(to);
  }

  // Where `o` is now if it has already moved, else `o`; waits for a claim in progress to end.
  static Object* Current(Object* o) {
    if (!(GcFlagsOf(ChunkInfoOf(o)) & kChunkCondemned)) return o;
    uint16_t f = o->flags(std::memory_order_acquire);
    while (f & kCopying) {
      port::CpuRelax();
      f = o->flags(std::memory_order_acquire);
    }
    if (f & kForwarded) return reinterpret_cast<Object*>(o->h_revision.load(std::memory_order_relaxed));
    return o;
  }

  // The h_revision word of `o`'s current copy (and `o` set to that copy). An object of a candidate
  // chunk that is neither forwarded nor claimed may be claimed by another thread at any moment, and its
  // h_revision then becomes a forwarding address: if the value read is that address (stored with
  // release after the claim's CAS), the acquire load makes the claim visible to the flags read after
  // it, and the read is retried on the copy. If that flags read shows no claim, the value read was the
  // object's own word.
  static uintptr_t ReadLink(Object*& o) {
    for (;;) {
      o = Current(o);
      const uintptr_t v = o->h_revision.load(std::memory_order_acquire);
      if (!(GcFlagsOf(ChunkInfoOf(o)) & kChunkCondemned)) return v;
      if (!(o->flags(std::memory_order_relaxed) & (kCopying | kForwarded))) return v;
    }
  }

  // A heap reference collapsed along its chain (CollapseChain), evacuated, and given the skip hint it
  // passed (CarryHint).
  Object* EvacuateCollapsed(Worker& w, Object* v) {
    Object* hint = nullptr;
    Object* n = Evacuate(w, CollapseChain(w, v, &hint));
    if (hint != nullptr) CarryHint(w, n, hint);
    return n;
  }

  // DESIGN 2.3 "Collapsing chains in a major collection": a heap reference to revision `o` may be
  // redirected to a newer revision C of the same object only if C's commit time is at most the
  // horizon (the oldest live snapshot, or the clock), so that no live snapshot loses the revision it
  // reads. Returns the newest such revision on o's chain (o itself if none). Applies only to global
  // revisioned objects; transaction state never goes through here.
  // `*passed_hint` is set to the newest skip hint of the revisions passed (nullptr if none), which the
  // caller hands to the target (CarryHint).
  //
  // Two collector threads may walk the same chain at once, and a third may be scanning (and so
  // rewriting the h_revision of) a revision on it. The walk reads each revision's link through its
  // current copy (ReadLink): the original's link, or the copy's, which its scanner may already have
  // replaced by a collapsed and evacuated one. A collapsed link skips only revisions whose commit time
  // is at most the horizon, and commit times grow along a chain, so every walk ends at the same
  // revision: the newest on the chain with a commit time at most the horizon. Which hints a walk
  // passes may differ; any of them is a valid hint (see CarryHint).
  Object* CollapseChain(Worker& w, Object* o, Object** passed_hint) {
    if (horizon_ == 0 || !LayoutOf(o->type()).versioned) return o;
    Object* cur = o;
    for (;;) {
      Object* c = cur;
      const uintptr_t v = ReadLink(c);
      if (!(c->flags() & kGlobal)) break;
      if (!IsRevisionPointer(v) || v == 0) break;
      auto* next = reinterpret_cast<Object*>(v);
      const uint64_t t = CommitTimeAt(next);
      if (t > horizon_) break;
      // Acquire: pairs with CarryHint's and ScanSkipHint's release CAS (the hint's copy is visible).
      if (Object* h = static_cast<VersionedObject*>(c)->h_newest.load(std::memory_order_acquire);
          h != nullptr && (*passed_hint == nullptr || CommitTimeAt(h) > CommitTimeAt(*passed_hint))) {
        *passed_hint = h;
      }
      cur = next;
    }
    if (cur != o) ++w.chains_collapsed;  // one reference redirected, however many revisions it skips
    return cur;
  }

  // h_commit_time is written once, before the revision is published, and a copy carries it: the
  // original's word and the copy's are the same.
  static uint64_t CommitTimeAt(const Object* o) {
    return static_cast<const VersionedObject*>(o)->h_commit_time.load(std::memory_order_relaxed);
  }

  // A reference collapsed past the revisions whose skip hints readers used would send them down the
  // retained chain again (the collapse target has no hint of its own while every write started its walk
  // at the old revision). So the newest hint passed becomes the target's, if it is newer than the target
  // and than the target's own hint. Its revision lies after the target, on the part of the chain every
  // revision of which stays (their times are above the horizon): tracing it keeps nothing alive the
  // chain does not, and no collapse of this collection can drop it, whatever order threads work in. A
  // head never gets one: no hint is newer than the head of its chain. `target` is where the target
  // stays after this collection (its copy, or itself if it does not move), so no later copy can lose
  // the store; another thread may be installing a hint there too (CarryHint) or evacuating the
  // target's own (ScanSkipHint): all of them CAS, and a newer hint is never replaced by an older one.
  void CarryHint(Worker& w, Object* target, Object* hint) {
    auto* t = static_cast<VersionedObject*>(target);
    const uint64_t hint_time = CommitTimeAt(hint);
    if (hint_time <= t->h_commit_time.load(std::memory_order_relaxed)) return;
    Object* own = t->h_newest.load(std::memory_order_acquire);
    Object* n = nullptr;
    for (;;) {
      if (own != nullptr && CommitTimeAt(own) >= hint_time) return;
      if (n == nullptr) n = Evacuate(w, hint);
      // Release: a thread that reads this hint (CollapseChain, ScanSkipHint) sees the copy behind it.
      if (t->h_newest.compare_exchange_weak(own, n, std::memory_order_release, std::memory_order_acquire))
        return;
    }
  }

  void Scan(Worker& w, Object* o) {
    ++w.objects_scanned;
    const bool in_nursery = ChunkKindOf(o) == ChunkKind::kNursery;
    // The slots of `o` are read and written only by the thread scanning it (each object is scanned
    // once): relaxed.
    ForEachReferenceSlot(o, [&](std::atomic<Object*>* slot) {
      Object* v = slot->load(std::memory_order_relaxed);
      if (v == nullptr) return;
      Object* n = EvacuateCollapsed(w, v);
      if (n != v) slot->store(n, std::memory_order_relaxed);
      if (!in_nursery && ChunkKindOf(n) == ChunkKind::kNursery) Remember(w, slot, n);
    });
    // h_revision: a pointer on a global object is a chain link (a heap reference, collapsed like
    // one); on a local object it names the original this copy was made from (transaction state:
    // exact). Odd values are timestamps; a lock value here would mean a thread reached a safepoint
    // while holding header locks, which the STM never does. Only this thread writes o's h_revision
    // now; others read it (ReadLink), hence the release store of the new link.
    const uintptr_t v = o->h_revision.load(std::memory_order_relaxed);
    if (IsRevisionPointer(v) && v != 0) {
      auto* target = reinterpret_cast<Object*>(v);
      const bool global = (o->flags() & kGlobal) != 0;
      Object* hint = nullptr;
      Object* successor = global ? CollapseChain(w, target, &hint) : target;
      Object* n = Evacuate(w, successor);
      if (hint != nullptr) CarryHint(w, n, hint);
      if (n != target) o->h_revision.store(reinterpret_cast<uintptr_t>(n), std::memory_order_release);
      if (global && LayoutOf(o->type()).versioned) {
        ++w.nonhead_survivors;
        ScanSkipHint(w, static_cast<VersionedObject*>(o), n);
      }
    } else if (IsLockValue(v)) {
      port::Fatal("revkv runtime: major collection found a locked header (%p)", static_cast<void*>(o));
    }
  }

  // A global revision's skip hint (VersionedObject::h_newest) names a newer revision on its chain. If
  // that revision is newer than `successor` (the revision o's link now names, collapsed), it is traced
  // like any reference (Evacuate), so it stays valid; it is also on o's kept chain, since every revision
  // after a collapse target has a commit time above this collection's horizon. A hint at or behind the
  // successor could name a revision the collapse dropped: it is cleared. A head never has a hint.
  // Another thread may CAS a carried hint into o meanwhile (CarryHint): then the loop judges that one.
  void ScanSkipHint(Worker& w, VersionedObject* o, const Object* successor) {
    const uint64_t successor_time = CommitTimeAt(successor);
    Object* hint = o->h_newest.load(std::memory_order_acquire);
    for (;;) {
      if (hint == nullptr) return;
      Object* n = CommitTimeAt(hint) > successor_time ? Evacuate(w, hint) : nullptr;
      if (n == hint) return;
      if (o->h_newest.compare_exchange_weak(hint, n, std::memory_order_release, std::memory_order_acquire)) {
        return;
      }
    }
  }

  void Remember(Worker& w, std::atomic<Object*>* slot, Object* target) {
#ifdef REVKV_MUTATION_NO_REMEMBERED_SET_REBUILD
    return;  // mutation test: the major collection does not rebuild the remembered sets
#endif
    auto it = threads_by_index_.find(ChunkInfoOf(target).owner);
    if (it != threads_by_index_.end()) w.remembered.emplace_back(it->second, slot);
  }

  // The thread's TLAB: copies go to a to-space chunk only this thread allocates in (its object-start
  // and mark words, fringe and live bytes are this thread's alone until the trace ends).
  char* AllocateToSpace(Worker& w, size_t size) {
    if (size > static_cast<size_t>(w.to_limit - w.to_cursor)) {
      if (w.to_cursor != nullptr) ChunkInfoOf(w.to_cursor - 1).fringe = w.to_cursor;
      char* chunk = PageSpace::Get().AcquireChunk(ChunkKind::kOld, 0);
      if (chunk == nullptr) {
        w.to_cursor = w.to_limit = nullptr;
        return nullptr;
      }
      ChunkInfoOf(chunk).live_bytes = 0;  // counted as copies arrive: this collection's measure
      w.to_cursor = chunk;
      w.to_limit = chunk + kChunkSize;
    }
    char* p = w.to_cursor;
    w.to_cursor += size;
    NoteObjectStart(p);
    SetMarkAtomic(p);  // a copy is live: after the collection every old chunk's marks equal its starts
    ChunkInfoOf(p).live_bytes += static_cast<uint32_t>(size);
    return p;
  }

  // ----- step 5 -----
  void Sweep() {
    PageSpace& space = PageSpace::Get();
    for (char* chunk : pinned_chunks_) KeepPinnedObjects(chunk);
    for (PageHeader* page : space.SmallPages()) {
      for (size_t i = 1; i < kChunksPerPage; ++i) {
        ChunkInfo& info = page->chunk[i];
        if ((info.gc_flags & kChunkCondemned) && !(info.gc_flags & kChunkHasPinned)) {
#ifndef REVKV_MUTATION_NO_FREEING  // mutation test: evacuated chunks and dead large objects stay
          space.SetChunkKind(page->ChunkStart(i), ChunkKind::kFree);
#endif
        } else if (info.gc_flags & kChunkMarkInPlace) {
          SweepInPlace(page->ChunkStart(i));
        }
        info.gc_flags = 0;
      }
    }
    for (PageHeader* page : space.LargePages()) {
      for (size_t i = 1; i < kChunksPerPage; ++i) {
        if (page->chunk_kind[i].load(std::memory_order_relaxed) != ChunkKind::kLargeHead) continue;
        auto* o = reinterpret_cast<Object*>(page->ChunkStart(i));
        if (o->flags() & kMarked) {
          o->ClearFlags(kMarked);
        } else {
#ifndef REVKV_MUTATION_NO_FREEING
          space.FreeLargeRun(page, i);
#endif
        }
      }
    }
  }

  // A chunk marked in place keeps its marked objects where they are; each gap between them (dead
  // objects and old fillers) becomes one filler, the fringe moves back to the end of the last marked
  // object, and the object-start map keeps only the marked starts. A chunk with nothing marked is freed.
  // Reads the headers of the marked objects only.
  void SweepInPlace(char* chunk) {
    ChunkInfo& info = ChunkInfoOf(chunk);
    if (info.live_bytes == 0) {
#ifndef REVKV_MUTATION_NO_FREEING
      PageSpace::Get().SetChunkKind(chunk, ChunkKind::kFree);
#endif
      return;
    }
    const uint64_t* marks = ChunkMarkWords(chunk);
#ifndef REVKV_MUTATION_NO_SWEEP  // mutation test: dead objects of kept chunks stay as they are
    if (std::memcmp(marks, ChunkStartWords(chunk), kStartWordsPerChunk * sizeof(uint64_t)) != 0) {
      char* live_end = chunk;
      for (size_t w = 0; w < kStartWordsPerChunk; ++w) {
        for (uint64_t m = marks[w]; m != 0; m &= m - 1) {
          char* p = chunk + (w * 64 + static_cast<size_t>(__builtin_ctzll(m))) * kObjectAlignment;
          if (p > live_end) HeaderAccess::InitFiller(live_end, static_cast<size_t>(p - live_end));
          live_end = p + SizeAt(p);
        }
      }
      info.fringe = live_end;
      RetainChunkObjectStarts(chunk, marks);
    }
#endif
    const size_t used = static_cast<size_t>(info.fringe - chunk);
    info.has_holes = used - info.live_bytes >= kMinHoleBytes || kChunkSize - used >= kMinHoleBytes;
  }

  // A pinned chunk keeps its pinned objects where they are; everything between them becomes filler
  // (seed 003 step 8: "pinned chunks ... so that future allocation can work around them").
  void KeepPinnedObjects(char* chunk) {
    ChunkInfo& info = ChunkInfoOf(chunk);
    char* p = chunk;
    char* hole = nullptr;
    char* live_end = chunk;
    bool has_holes = false;
    uint32_t kept = 0;
    ClearChunkObjectStarts(chunk);  // noted again for the objects that stay
    while (p < info.fringe) {
      auto* o = reinterpret_cast<Object*>(p);
      const uint32_t n = o->size();
      if (!IsFiller(p) && (o->flags() & kPinned)) {
        o->ClearFlags(kPinned);
        NoteObjectStart(p);
        SetMark(p);
        if (hole != nullptr) {
          HeaderAccess::InitFiller(hole, static_cast<size_t>(p - hole));
          has_holes |= static_cast<size_t>(p - hole) >= kMinHoleBytes;
          hole = nullptr;
        }
        kept += n;
        live_end = p + n;
      } else if (hole == nullptr) {
        hole = p;
      }
      p += n;
    }
    info.fringe = live_end;
    info.pinned_bytes = kept;
    info.live_bytes = kept;
    info.has_holes = has_holes || (chunk + kChunkSize - live_end) >= static_cast<ptrdiff_t>(kMinHoleBytes);
    pinned_bytes_ += kept;
  }

  uint64_t RevisionsFreed() {
    if (client_ == nullptr) return 0;
    const uint64_t superseded = client_->RevisionsSuperseded();
    const uint64_t candidates = g_nonhead_survivors + (superseded - g_superseded_at_last);
    g_superseded_at_last = superseded;
    g_nonhead_survivors = nonhead_survivors_;
    return candidates > nonhead_survivors_ ? candidates - nonhead_survivors_ : 0;
  }

  void SetNextTrigger(size_t after) {
    const HeapOptions& o = RuntimeOptions();
    const size_t max = PageSpace::Get().MaxBytes();
    size_t next = std::max(o.min_major_trigger_bytes,
                           static_cast<size_t>(static_cast<double>(after) * o.major_growth_factor));
    const size_t ceiling = max - max / 8;
    if (next > ceiling) next = std::max(ceiling, after + (max > after ? (max - after) / 2 : 0));
    PageSpace::Get().SetNextMajorTrigger(next);
  }

  ThreadContext* self_;
  const char* reason_;
  const MajorMode mode_;
  CollectorClient* client_ = nullptr;
  uint64_t horizon_ = 0;
  std::unordered_map<uint16_t, ThreadContext*> threads_by_index_;  // read-only while tracing
  std::vector<std::unique_ptr<Worker>> workers_;                   // [0]: the collecting thread
  std::vector<char*> nursery_chunks_;                              // every thread's, scanned as roots
  std::atomic<size_t> next_nursery_chunk_{0};                      // the next one to claim
  bool single_ = false;                                            // one collector thread
  std::atomic<size_t> idle_{0};                                    // collector threads idle (FindWork)
  std::mutex pinned_chunks_mu_;                                    // guards pinned_chunks_ while tracing
  std::vector<char*> pinned_chunks_;
  uint64_t pinned_bytes_ = 0;
  uint64_t chunks_evacuated_ = 0;
  uint64_t nonhead_survivors_ = 0;
};

#ifdef REVKV_TEST_HOOKS
void gc_testing::SetClaimHook(gc_testing::ClaimHook hook) {
  g_claim_hook.store(hook, std::memory_order_relaxed);
}
#endif

namespace {
std::atomic<uint64_t> g_major_generation{0};  // completed major collections
}  // namespace

uint64_t MajorGeneration() { return g_major_generation.load(std::memory_order_acquire); }

namespace {
__attribute__((noinline)) void CollectMajorFrom(ThreadContext* self, const char* reason,
                                                uint64_t unless_generation_past, MajorMode mode,
                                                const MutatorStack& stack) {
  std::mutex& mu = CollectorMutex();
  if (!mu.try_lock()) {
    // Another thread is collecting: wait for it without holding up its stop-the-world.
    ThreadRegistry::Get().EnterSafeRegion(self);
    mu.lock();
    ThreadRegistry::Get().LeaveSafeRegion(self);
  }
  if (unless_generation_past != kAlwaysCollect && MajorGeneration() > unless_generation_past) {
    mu.unlock();  // someone collected while we waited: that is the collection we wanted
    return;
  }
  MajorCollector collector(self, reason, mode);
  const CollectionRecord record = collector.Run(stack);
  g_major_generation.fetch_add(1, std::memory_order_release);
  mu.unlock();
  RecordCollection(record);
}
}  // namespace

// Captures the collecting thread's roots before any frame of the collector exists (see MutatorStack).
// Waiting for the collector mutex in a safe region publishes a deeper stack top; Run puts this one back.
void RunMajorCollection(ThreadContext* self, const char* reason, uint64_t unless_generation_past,
                        MajorMode mode) {
  MutatorStack stack;
  CaptureMutatorStack(&stack);
  CollectMajorFrom(self, reason, unless_generation_past, mode, stack);  // not inlined: its frames lie below
}

}  // namespace revkv::runtime
