// Thread-local collections of one thread's nursery: the minor collection (when the nursery fills) and
// the local collection (at STM commit, seed 000 "Local garbage collection").
//
// Both copy what survives out of the nursery into the thread's old-space region and leave a forwarding
// address behind (kForwarded, new address in h_revision); both then reset the whole nursery. They
// differ in their roots and in what survivors become:
//  - minor: the thread's own stack and saved registers are ambiguous roots; nursery objects they point
//    into are pinned (kPinned) and their chunk leaves the nursery as an old chunk ("promoted in
//    place", seed 003); precise roots are the thread's Root<T>s, its remembered set and its
//    transaction state. Survivors keep their flags: a local object stays local.
//  - local: precise roots only (the committing transaction's written copies, plus Root<T>s); every
//    local object reached becomes global; a reference to a local copy that was never written goes
//    back to its global original. No stack scan: no heap pointer outlives a transaction body.
// Only the owner thread takes part; nothing else can reach its nursery (global objects never point
// into a nursery, and other threads never hold its local objects). Neither reaches a safepoint, and
// neither fails: an object that cannot be copied (no chunk left) stays in place like a pinned one.
#include <algorithm>
#include <cstring>

#include "runtime/gc/collector.h"
#include "runtime/gc/scan_queue.h"
#include "runtime/heap/object_format.h"
#include "runtime/heap/object_starts.h"
#include "runtime/heap/page_space.h"
#include "runtime/safepoint/thread_context.h"

namespace revkv::runtime {

namespace {

constexpr size_t kMinHoleBytes = 64;
constexpr uint16_t kMadeGlobalClears = kWritten | kPossiblyOutdated;

class NurseryCollector final : public Relocator {
 public:
  NurseryCollector(ThreadContext* self, CollectionKind kind, std::vector<Object*>* new_versioned = nullptr)
      : self_(self),
        kind_(kind),
        new_versioned_(new_versioned),
        sorted_nursery_(self->heap.SortedNurseryChunks()),
        verify_(HeapVerificationEnabled()) {}

  Object* Relocate(Object* o) override { return Forward(o); }

  void RunMinor(const MutatorStack& stack) {
    self_->heap.RetireRegions();
    PinFromOwnStack(stack);
    for (internal::RootNode* n = self_->roots.next; n != &self_->roots; n = n->next)
      n->Set(Forward(n->Get()));
    for (std::atomic<Object*>* slot : self_->heap.remembered()) {
      Object* v = slot->load(std::memory_order_relaxed);
      if (v != nullptr && InMyNursery(v)) slot->store(Forward(v), std::memory_order_relaxed);
    }
    if (CollectorClient* client = Client(); client != nullptr && self_->client_state != nullptr) {
      client->RelocateThreadState(self_->client_state, *this, CollectionKind::kMinor);
    }
    Drain();
    FinishInPlaceChunks();
    self_->heap.ResetNursery();
    if (verify_) VerifySurvivorsOfNurseryCollection(self_, survivors_, in_place_chunks_);
  }

  void RunLocal(std::span<Object*> roots) {
    self_->heap.RetireRegions();
    for (Object*& root : roots) root = Forward(root);
    for (internal::RootNode* n = self_->roots.next; n != &self_->roots; n = n->next)
      n->Set(Forward(n->Get()));
    Drain();
    FinishInPlaceChunks();
    self_->heap.ResetNursery();
    if (verify_) {
      VerifySurvivorsOfNurseryCollection(self_, survivors_, in_place_chunks_);
      SampleGlobalObjects(survivors_);  // every survivor of a local collection is global now
    }
  }

  uint64_t bytes_copied = 0;
  uint64_t bytes_promoted = 0;
  uint64_t objects_copied = 0;
  uint64_t pinned_objects = 0;
  uint64_t pinned_bytes = 0;
  uint64_t pinned_chunks = 0;

 private:
  bool InMyNursery(const void* p) const {
    return ChunkKindOf(p) == ChunkKind::kNursery &&
           std::binary_search(sorted_nursery_.begin(), sorted_nursery_.end(), ChunkBaseOf(p));
  }

  // Keeps a nursery object where it is for this collection; its chunk will leave the nursery.
  void KeepInPlace(Object* o, uint16_t flags) {
    o->SetFlagsExclusive(flags | kPinned);
    queue_.PushInPlace(o);
    if (verify_) survivors_.push_back(o);
    char* chunk = ChunkBaseOf(o);
    ChunkInfo& info = ChunkInfoOf(chunk);
    if (!(info.gc_flags & kChunkQueuedPinned)) {
      info.gc_flags |= kChunkQueuedPinned;
      in_place_chunks_.push_back(chunk);
    }
    ++pinned_objects;
  }

  Object* Copy(Object* o, uint16_t new_flags) {
    const size_t size = o->size();
#ifdef REVKV_MUTATION_NO_MOVING
    KeepInPlace(o, new_flags);  // mutation test: survivors are never copied
    return o;
#endif
    char* to = self_->heap.AllocateOld(size, self_->index);
    if (to == nullptr) {
      KeepInPlace(o, new_flags);
      return o;
    }
    std::memcpy(to, static_cast<void*>(o), size);
    auto* copy = reinterpret_cast<Object*>(to);
    copy->SetFlagsExclusive(new_flags);
    o->SetFlagsExclusive(o->flags() | kForwarded);
    o->h_revision.store(reinterpret_cast<uintptr_t>(copy), std::memory_order_relaxed);
    queue_.NoteCopy(to, size);
    if (verify_) survivors_.push_back(copy);
    bytes_copied += size;
    ++objects_copied;
    return copy;
  }

  Object* Forward(Object* o) {
    if (o == nullptr) return o;
    if (kind_ == CollectionKind::kMinor) {
      if (!InMyNursery(o)) return o;
      const uint16_t f = o->flags();
      if (f & kForwarded) return reinterpret_cast<Object*>(o->h_revision.load(std::memory_order_relaxed));
      if (f & kPinned) return o;
      return Copy(o, f);
    }
    // Local collection. Flags of a global object may change under us (another thread's write barrier
    // sets kPossiblyOutdated with a relaxed RMW); we only test kGlobal, which never changes on it.
    const uint16_t f = o->flags();
    if (f & kForwarded) return reinterpret_cast<Object*>(o->h_revision.load(std::memory_order_relaxed));
    if (f & kGlobal) return o;
    if (!(f & kWritten)) {
      const uintptr_t original = o->h_revision.load(std::memory_order_relaxed);
      if (IsRevisionPointer(original)) return reinterpret_cast<Object*>(original);  // never written
    }
    const uint16_t global_flags = static_cast<uint16_t>((f | kGlobal) & ~kMadeGlobalClears);
    Object* survivor;
    if (InMyNursery(o)) {
      if (f & kPinned) return o;
      survivor = Copy(o, global_flags);
    } else {
      // A local object outside the nursery (promoted by a minor collection, or large): it becomes
      // global where it is; the flag doubles as this collection's mark.
      o->SetFlagsExclusive(global_flags);
      queue_.PushInPlace(o);
      if (verify_) survivors_.push_back(o);
      bytes_promoted += o->size();
      survivor = o;
    }
    if (new_versioned_ != nullptr && survivor->h_revision.load(std::memory_order_relaxed) == 1 &&
        LayoutOf(survivor->type()).versioned) {
      new_versioned_->push_back(survivor);
    }
    return survivor;
  }

  void Scan(Object* o) {
    ForEachReferenceSlot(o, [this](std::atomic<Object*>* slot) {
      Object* v = slot->load(std::memory_order_relaxed);
      if (v == nullptr) return;
      Object* n = Forward(v);
      if (n != v) slot->store(n, std::memory_order_relaxed);
    });
  }

  void Drain() {
    queue_.Drain([this](Object* o) { Scan(o); });
  }

  // Ambiguous roots of a minor collection: the calling thread's callee-saved registers and its stack
  // from the mutator's top to its base, both captured before the collection began. Only words pointing
  // into this thread's nursery matter.
  REVKV_NO_SANITIZE_STACK_SCAN void PinFromOwnStack(const MutatorStack& stack) {
    for (uintptr_t w : stack.registers.words) PinWord(w);
    const uintptr_t top = stack.top & ~uintptr_t{7};
    for (uintptr_t a = top; a < self_->stack_high; a += sizeof(uintptr_t)) {
      PinWord(*reinterpret_cast<const uintptr_t*>(a));
    }
  }

  // A word pins the object it points into and the object it points one past the end of, when they
  // are in this nursery. Only this thread is stopped, so only its own nursery chunks are parsed: a
  // neighbouring chunk may be another thread's nursery, or an old chunk its collection is copying
  // into, with a fringe and headers being written as we would read them. A word at a chunk boundary
  // is resolved in the chunk it starts (if ours) for the object it points into, and in the chunk it
  // ends (if ours) for an object ending exactly there. RetireRegions has published the fringe of the
  // current chunk, so every chunk of ours ends at its ChunkInfo::fringe.
  void PinWord(uintptr_t w) {
#ifdef REVKV_MUTATION_NO_STACK_ROOTS
    return;  // mutation test: ambiguous roots keep nothing alive
#endif
    PageSpace& space = PageSpace::Get();
    AmbiguousReferents r{nullptr, nullptr};
    const void* at = reinterpret_cast<const void*>(w);
    if (space.Contains(at) && InMyNursery(at)) {
      char* chunk = ChunkBaseOf(at);
      r = FindReferentsInChunk(chunk, ChunkInfoOf(chunk).fringe, w);
    }
    if ((w & (kChunkSize - 1)) == 0 && w != 0) {
      const void* before = reinterpret_cast<const void*>(w - 1);
      if (space.Contains(before) && InMyNursery(before)) {
        char* chunk = ChunkBaseOf(before);
        r.ending = FindReferentsInChunk(chunk, ChunkInfoOf(chunk).fringe, w).ending;  // ends at w or null
      }
    }
    for (Object* o : {r.into, r.ending}) {
#ifdef REVKV_MUTATION_NO_PINNING
      // mutation test: an ambiguous root keeps its object alive like a precise one, but it moves (the
      // word itself, which may not be a pointer, cannot be updated)
      if (o != nullptr) (void)Forward(o);
      continue;
#endif
      if (o != nullptr && !(o->flags() & kPinned)) KeepInPlace(o, o->flags());
    }
  }

  // Chunks holding objects kept in place leave the nursery: the kept objects stay, everything else in
  // the chunk becomes filler, and the chunk is an old chunk from now on.
  void FinishInPlaceChunks() {
    for (char* chunk : in_place_chunks_) {
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
        if (!IsFiller(p) && (o->flags() & kPinned) && !(o->flags() & kForwarded)) {
          o->ClearFlags(kPinned);
          NoteObjectStart(p);
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
      info.has_holes = has_holes;
      info.gc_flags = 0;
      pinned_bytes += kept;
      bytes_promoted += kept;
      ++pinned_chunks;
      self_->heap.PromoteNurseryChunk(chunk, self_->index);
    }
  }

  ThreadContext* self_;
  CollectionKind kind_;
  std::vector<Object*>* new_versioned_;
  // The nursery as it was when the collection started (promotions in place change the heap's list only
  // after the last Forward; the cached sort is redone at the next collection).
  const std::vector<char*>& sorted_nursery_;
  ScanQueue queue_;
  std::vector<char*> in_place_chunks_;
  const bool verify_;               // HeapVerificationEnabled(), read once
  std::vector<Object*> survivors_;  // every object this collection kept, when verifying
};

}  // namespace

namespace {
__attribute__((noinline)) void CollectMinorFrom(ThreadContext* self, const char* reason,
                                                const MutatorStack& stack) {
  const uint64_t start = port::NowNanos();
  const uint64_t start_wall = WallClockNanos();
  const size_t before = PageSpace::Get().InUseBytes();
  self->in_collection = true;
  NurseryCollector collector(self, CollectionKind::kMinor);
  collector.RunMinor(stack);
  self->in_collection = false;
  CollectionRecord r{};
  r.kind = CollectionKind::kMinor;
  r.sequence = NextSequence(CollectionKind::kMinor);
  r.start_unix_nanos = start_wall;
  r.pause_nanos = port::NowNanos() - start;
  r.heap_bytes_before = before;
  r.heap_bytes_after = PageSpace::Get().InUseBytes();
  r.bytes_copied = collector.bytes_copied;
  r.bytes_promoted = collector.bytes_copied + collector.bytes_promoted;
  r.objects_copied = collector.objects_copied;
  r.pinned_objects = collector.pinned_objects;
  r.pinned_chunks = collector.pinned_chunks;
  r.pinned_bytes = collector.pinned_bytes;
  r.threads = 1;
  r.reason = reason;
  RecordCollection(r);
}
}  // namespace

// Captures the mutator's roots before any frame of the collector exists (see MutatorStack).
void RunMinorCollection(ThreadContext* self, const char* reason) {
  MutatorStack stack;
  CaptureMutatorStack(&stack);
  CollectMinorFrom(self, reason, stack);  // not inlined: its frames lie below stack.top
}

size_t LocalCollect(std::span<Object*> roots, std::vector<Object*>* new_versioned) {
  ThreadContext* self = CurrentThread();
  const uint64_t start = port::NowNanos();
  self->in_collection = true;
  NurseryCollector collector(self, CollectionKind::kLocal, new_versioned);
  collector.RunLocal(roots);
  self->in_collection = false;
  const size_t promoted = collector.bytes_copied + collector.bytes_promoted;
  RecordLocalCollection(port::NowNanos() - start, promoted);
  return promoted;
}

void ResetNursery() {
  ThreadContext* self = CurrentThread();
  self->heap.ResetNursery();
}

}  // namespace revkv::runtime
