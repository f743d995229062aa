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
#include <unordered_map>

#include "runtime/gc/collector.h"
#include "runtime/gc/roots.h"
#include "runtime/gc/scan_queue.h"
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
uint64_t g_nonhead_survivors = 0;   // collector mutex
uint64_t g_superseded_at_last = 0;  // collector mutex
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
    Condemn();
    for (ThreadContext* t : registry.threads()) ScanStackConservatively(t);
    ScanPreciseRoots(registry);
    queue_.Drain([this](Object* o) { Scan(o); });
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
    r.bytes_copied = bytes_copied_;
    r.objects_copied = objects_copied_;
    r.pinned_objects = pinned_objects_;
    r.pinned_chunks = pinned_chunks_.size();
    r.pinned_bytes = pinned_bytes_;
    r.chains_collapsed = chains_collapsed_;
    r.chunks_evacuated = chunks_evacuated_;
    r.bytes_marked = bytes_marked_;
    r.objects_marked = objects_marked_;
    r.revisions_freed = RevisionsFreed();
    r.threads = static_cast<uint32_t>(registry.threads().size());
    r.reason = reason_;
    registry.ResumeTheWorld();
    r.pause_nanos = port::NowNanos() - requested;
    return r;
  }

  Object* Relocate(Object* o) override { return o == nullptr ? o : Evacuate(o); }

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
    // to-space chunks up to the last object that fits, so the budget keeps an eighth in hand; an object
    // that finds no to-space after all is pinned (AllocateToSpace), never lost.
    std::sort(sparse.begin(), sparse.end(), [](const Measured& a, const Measured& b) {
      return a.live != b.live ? a.live < b.live : a.chunk < b.chunk;
    });
    const size_t capacity = PageSpace::Get().FreeChunkCapacity() * kChunkSize;
    const size_t budget = mode_ == MajorMode::kCompactEverything ? SIZE_MAX : capacity - capacity / 8;
    size_t planned = 0;
    for (const Measured& m : sparse) {
      if (planned + m.live > budget) break;
      planned += m.live;
      ChunkInfoOf(m.chunk).gc_flags = kChunkCondemned;
      ++chunks_evacuated_;
    }
  }

  // ----- step 2 -----
  REVKV_NO_SANITIZE_STACK_SCAN void ScanStackConservatively(ThreadContext* t) {
    for (uintptr_t w : t->registers.words) PinWord(w);
    const uintptr_t top = t->stack_top.load(std::memory_order_relaxed) & ~uintptr_t{7};
    for (uintptr_t a = top; a < t->stack_high; a += sizeof(uintptr_t)) {
      PinWord(*reinterpret_cast<const uintptr_t*>(a));
    }
  }

  // A word pins (or marks) the object it points into and the object it points one past the end of
  // (ResolveAmbiguousReferents).
  void PinWord(uintptr_t w) {
#ifdef REVKV_MUTATION_NO_STACK_ROOTS
    return;  // mutation test: ambiguous roots keep nothing alive
#endif
    const AmbiguousReferents r = ResolveAmbiguousReferents(w);
    if (r.into != nullptr) PinReferent(r.into);
    if (r.ending != nullptr) PinReferent(r.ending);
  }

  void PinReferent(Object* o) {
    const ChunkKind kind = ChunkKindOf(o);
    if (kind == ChunkKind::kLargeHead) {
      MarkLarge(o);
    } else if (kind == ChunkKind::kOld && (ChunkInfoOf(o).gc_flags & kChunkMarkInPlace)) {
      MarkInPlace(o, ChunkInfoOf(o));  // stays where it is anyway
    } else if (kind == ChunkKind::kOld && (ChunkInfoOf(o).gc_flags & kChunkCondemned)) {
#ifdef REVKV_MUTATION_NO_PINNING
      // mutation test: an ambiguous root keeps its object alive like a precise one, but it moves
      (void)Evacuate(o);
      return;
#endif
      Pin(o);
    }
  }

  void Pin(Object* o) {
    if (o->flags() & kPinned) return;
    o->SetFlagsExclusive(o->flags() | kPinned);
    ++pinned_objects_;
    queue_.PushInPlace(o);
    char* chunk = ChunkBaseOf(o);
    ChunkInfo& info = ChunkInfoOf(chunk);
    if (!(info.gc_flags & kChunkHasPinned)) {
      info.gc_flags |= kChunkHasPinned;
      pinned_chunks_.push_back(chunk);
    }
  }

  // An object of a chunk marked in place: found live once, scanned once.
  void MarkInPlace(Object* o, ChunkInfo& info) {
    if (!SetMark(o)) return;
    const uint32_t size = o->size();
    info.live_bytes += size;
    bytes_marked_ += size;
    ++objects_marked_;
    queue_.PushInPlace(o);
  }

  void MarkLarge(Object* o) {
    if (o->flags() & kMarked) return;
    o->SetFlagsExclusive(o->flags() | kMarked);
    queue_.PushInPlace(o);
  }

  // ----- step 3 -----
  void ScanPreciseRoots(ThreadRegistry& registry) {
    {
      GlobalRootTable& table = GlobalRootTable::Get();
      std::lock_guard<std::mutex> lock(table.mutex());
      for (GlobalRoot* root : table.roots()) {
        Object* v = root->value_.load(std::memory_order_relaxed);
        if (v == nullptr) continue;
        root->value_.store(Evacuate(CollapseChain(v)), std::memory_order_relaxed);
      }
    }
    for (ThreadContext* t : registry.threads()) {
      for (internal::RootNode* n = t->roots.next; n != &t->roots; n = n->next) {
        if (n->Get() != nullptr) n->Set(Evacuate(n->Get()));
      }
      for (char* chunk : t->heap.nursery_chunks()) {
        char* fringe = ChunkInfoOf(chunk).fringe;
        for (char* p = chunk; p < fringe; p += SizeAt(p)) {
          if (!IsFiller(p)) Scan(reinterpret_cast<Object*>(p));
        }
      }
      if (client_ != nullptr && t->client_state != nullptr) {
        client_->RelocateThreadState(t->client_state, *this, CollectionKind::kMajor);
      }
    }
  }

  // ----- step 4 -----
  // The address of `o` after this collection: copied if it is in a candidate chunk and not pinned,
  // marked where it is if its chunk is marked in place.
  Object* Evacuate(Object* o) {
    ChunkInfo& info = ChunkInfoOf(o);
    if (info.gc_flags & kChunkMarkInPlace) {
      MarkInPlace(o, info);
      return o;
    }
    if (info.gc_flags & kChunkCondemned) {
      const uint16_t f = o->flags();
      if (f & kForwarded) return reinterpret_cast<Object*>(o->h_revision.load(std::memory_order_relaxed));
      if (f & kPinned) return o;
      const size_t size = o->size();
#ifdef REVKV_MUTATION_NO_MOVING
      Pin(o);  // mutation test: survivors are never copied
      return o;
#endif
      char* to = AllocateToSpace(size);
      if (to == nullptr) {  // no chunk left: it stays where it is, like a pinned object
        Pin(o);
        return o;
      }
      std::memcpy(to, static_cast<void*>(o), size);
      o->SetFlagsExclusive(f | kForwarded);
      o->h_revision.store(reinterpret_cast<uintptr_t>(to), std::memory_order_relaxed);
      queue_.NoteCopy(to, size);
      bytes_copied_ += size;
      ++objects_copied_;
      return reinterpret_cast<Object*>(to);
    }
    if (ChunkKindOf(o) == ChunkKind::kLargeHead) MarkLarge(o);
    return o;  // in a nursery (scanned as a root), in to-space, or large
  }

  // Where `o` is now if it has already moved, else `o`.
  static Object* Current(Object* o) {
    if ((ChunkInfoOf(o).gc_flags & kChunkCondemned) && (o->flags() & kForwarded)) {
      return reinterpret_cast<Object*>(o->h_revision.load(std::memory_order_relaxed));
    }
    return o;
  }

  // DESIGN 2.3 "Collapsing chains in a major collection": a heap reference to revision `o` may be
  // redirected to a newer revision C of the same object only if C's commit time is at most the
  // horizon (the oldest live snapshot, or the clock), so that no live snapshot loses the revision it
  // reads. Returns the newest such revision on o's chain (o itself if none). Applies only to global
  // revisioned objects; transaction state never goes through here.
  // The skip hints of the revisions passed go with the reference: the newest of them becomes the
  // target's (CarryHint).
  Object* CollapseChain(Object* o) {
    if (horizon_ == 0 || !LayoutOf(o->type()).versioned) return o;
    Object* cur = o;
    Object* passed_hint = nullptr;  // the newest skip hint of the revisions passed
    for (;;) {
      Object* c = Current(cur);
      if (!(c->flags() & kGlobal)) break;
      const uintptr_t v = c->h_revision.load(std::memory_order_relaxed);
      if (!IsRevisionPointer(v) || v == 0) break;
      auto* next = reinterpret_cast<Object*>(v);
      const uint64_t t = CommitTimeAt(next);
      if (t > horizon_) break;
      if (Object* h = static_cast<VersionedObject*>(c)->h_newest.load(std::memory_order_relaxed);
          h != nullptr && (passed_hint == nullptr || CommitTimeAt(h) > CommitTimeAt(passed_hint))) {
        passed_hint = h;
      }
      cur = next;
      if (cur != o) ++chains_collapsed_;
    }
    if (passed_hint != nullptr) CarryHint(cur, passed_hint);
    return cur;
  }

  static uint64_t CommitTimeAt(Object* o) {
    return static_cast<VersionedObject*>(Current(o))->h_commit_time.load(std::memory_order_relaxed);
  }

  // A reference collapsed past the revisions whose skip hints readers used would send them down the
  // retained chain again (the collapse target has no hint of its own while every write started its walk
  // at the old revision). So the newest hint passed becomes the target's, if it is newer than the target
  // and than the target's own hint. Its revision lies after the target, on the part of the chain every
  // revision of which stays (their times are above the horizon): tracing it keeps nothing alive the
  // chain does not. A head never gets one: no hint is newer than the head of its chain. The hint is
  // stored as its revision's address after this collection, into the target's current copy (a later
  // copy carries it; Evacuate of an address after this collection returns it unchanged).
  void CarryHint(Object* target, Object* hint) {
    auto* t = static_cast<VersionedObject*>(Current(target));
    const uint64_t hint_time = CommitTimeAt(hint);
    if (hint_time <= t->h_commit_time.load(std::memory_order_relaxed)) return;
    Object* own = t->h_newest.load(std::memory_order_relaxed);
    if (own != nullptr && CommitTimeAt(own) >= hint_time) return;
    t->h_newest.store(Evacuate(hint), std::memory_order_relaxed);
  }

  void Scan(Object* o) {
    const bool in_nursery = ChunkKindOf(o) == ChunkKind::kNursery;
    ForEachReferenceSlot(o, [&](std::atomic<Object*>* slot) {
      Object* v = slot->load(std::memory_order_relaxed);
      if (v == nullptr) return;
      Object* n = Evacuate(CollapseChain(v));
      if (n != v) slot->store(n, std::memory_order_relaxed);
      if (!in_nursery && ChunkKindOf(n) == ChunkKind::kNursery) Remember(slot, n);
    });
    // h_revision: a pointer on a global object is a chain link (a heap reference, collapsed like
    // one); on a local object it names the original this copy was made from (transaction state:
    // exact). Odd values are timestamps; a lock value here would mean a thread reached a safepoint
    // while holding header locks, which the STM never does.
    const uintptr_t v = o->h_revision.load(std::memory_order_relaxed);
    if (IsRevisionPointer(v) && v != 0) {
      auto* target = reinterpret_cast<Object*>(v);
      const bool global = (o->flags() & kGlobal) != 0;
      const Object* successor = global ? CollapseChain(target) : target;
      Object* n = Evacuate(const_cast<Object*>(successor));
      if (n != target) o->h_revision.store(reinterpret_cast<uintptr_t>(n), std::memory_order_relaxed);
      if (global && LayoutOf(o->type()).versioned) {
        ++nonhead_survivors_;
        ScanSkipHint(static_cast<VersionedObject*>(o), successor);
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
  void ScanSkipHint(VersionedObject* o, const Object* successor) {
    Object* hint = o->h_newest.load(std::memory_order_relaxed);
    if (hint == nullptr) return;
    const uint64_t hint_time =
        static_cast<VersionedObject*>(Current(hint))->h_commit_time.load(std::memory_order_relaxed);
    const uint64_t successor_time =
        static_cast<const VersionedObject*>(Current(const_cast<Object*>(successor)))
            ->h_commit_time.load(std::memory_order_relaxed);
    Object* n = hint_time > successor_time ? Evacuate(hint) : nullptr;
    if (n != hint) o->h_newest.store(n, std::memory_order_relaxed);
  }

  void Remember(std::atomic<Object*>* slot, Object* target) {
#ifdef REVKV_MUTATION_NO_REMEMBERED_SET_REBUILD
    return;  // mutation test: the major collection does not rebuild the remembered sets
#endif
    auto it = threads_by_index_.find(ChunkInfoOf(target).owner);
    if (it != threads_by_index_.end()) it->second->heap.remembered().push_back(slot);
  }

  char* AllocateToSpace(size_t size) {
    if (size > static_cast<size_t>(to_limit_ - to_cursor_)) {
      if (to_cursor_ != nullptr) ChunkInfoOf(to_cursor_ - 1).fringe = to_cursor_;
      char* chunk = PageSpace::Get().AcquireChunk(ChunkKind::kOld, 0);
      if (chunk == nullptr) {
        to_cursor_ = to_limit_ = nullptr;
        return nullptr;
      }
      ChunkInfoOf(chunk).live_bytes = 0;  // counted as copies arrive: this collection's measure
      to_cursor_ = chunk;
      to_limit_ = chunk + kChunkSize;
    }
    char* p = to_cursor_;
    to_cursor_ += size;
    NoteObjectStart(p);
    SetMark(p);  // a copy is live: after the collection every old chunk's marks equal its starts
    ChunkInfoOf(p).live_bytes += static_cast<uint32_t>(size);
    return p;
  }

  // ----- step 5 -----
  void Sweep() {
    if (to_cursor_ != nullptr) ChunkInfoOf(to_cursor_ - 1).fringe = to_cursor_;
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
  ScanQueue queue_;
  std::unordered_map<uint16_t, ThreadContext*> threads_by_index_;
  std::vector<char*> pinned_chunks_;
  char* to_cursor_ = nullptr;
  char* to_limit_ = nullptr;
  uint64_t bytes_copied_ = 0;
  uint64_t objects_copied_ = 0;
  uint64_t pinned_objects_ = 0;
  uint64_t pinned_bytes_ = 0;
  uint64_t chains_collapsed_ = 0;
  uint64_t chunks_evacuated_ = 0;
  uint64_t bytes_marked_ = 0;
  uint64_t objects_marked_ = 0;
  uint64_t nonhead_survivors_ = 0;
};

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
