// The per-thread half of the heap: a nursery and an old-space allocation region, both bump-allocated
// with no lock, and the remembered set of the generational write barrier.
//
// The nursery is a list of chunks the thread owns (ChunkKind::kNursery), used in order and reset as a
// whole by a minor or local collection. The old-space region is where collections of this thread copy
// survivors (and where committed objects end up); it fills fresh chunks or the holes that a major
// collection left around pinned objects.
//
// Thread-safety: owner thread only, except that the collector reads and resets it while the world is
// stopped (every thread is then at a safepoint or in a safe region, which orders its writes before).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/heap/heap.h"
#include "runtime/heap/object_starts.h"
#include "runtime/heap/page.h"

namespace revkv::runtime {

// Bytes allocated by all threads, counted at nursery chunk switches and resets and for large objects.
extern std::atomic<uint64_t> g_bytes_allocated;

// A bump-allocation region [cursor, limit) inside one chunk.
struct BumpRegion {
  char* cursor = nullptr;
  char* limit = nullptr;
  bool to_chunk_end = false;  // limit is the chunk's end: retiring moves the chunk's fringe

  size_t Available() const { return static_cast<size_t>(limit - cursor); }
  // Makes the chunk parseable again: a filler over [cursor, limit), or the fringe at the cursor.
  void Retire();
};

class ThreadHeap {
 public:
  ThreadHeap() = default;
  ThreadHeap(const ThreadHeap&) = delete;
  ThreadHeap& operator=(const ThreadHeap&) = delete;

  // Takes nursery chunks from the page space until the nursery holds `bytes`; false if the heap could
  // not supply a single chunk.
  bool FillNursery(size_t bytes, uint16_t owner);
  // Bump allocation in the nursery chunk the cursor is in: nullptr at the chunk's end. The allocator's
  // fast path; its slow path polls for a safepoint once per chunk before moving to the next one, so
  // an allocating thread reaches a safepoint every 16 KiB of allocation.
  char* TryBumpNursery(size_t size) {
    if (size <= static_cast<size_t>(nursery_.limit - nursery_.cursor)) [[likely]] {
      char* p = nursery_.cursor;
      nursery_.cursor += size;
      return p;
    }
    return nullptr;
  }
  // Bump allocation in the nursery, moving to its next chunk if needed: nullptr when the nursery is
  // full (the caller collects).
  char* TryAllocateNursery(size_t size) {
    if (size <= static_cast<size_t>(nursery_.limit - nursery_.cursor)) [[likely]] {
      char* p = nursery_.cursor;
      nursery_.cursor += size;
      return p;
    }
    return NextNurseryChunk(size);
  }
  // Old-space allocation (collections and promotion), noted in the object-start map. nullptr when no
  // chunk can be had.
  char* AllocateOld(size_t size, uint16_t owner) {
    char* p;
    if (size <= old_.Available()) [[likely]] {
      p = old_.cursor;
      old_.cursor += size;
    } else {
      p = AllocateOldSlow(size, owner);
      if (p == nullptr) return nullptr;
    }
    NoteObjectStart(p);
    return p;
  }

  // Publishes the fringe of every chunk this thread is filling, making them parseable.
  void RetireRegions();
  // Forgets the old-space region (after a major collection has condemned its chunk).
  void DropOldRegion();
  // Empties the nursery: every chunk is reusable from its start. Debug builds poison the old content.
  // Every remembered slot that still points into the nursery is set to null first (see
  // ForgetSlotsIntoNursery), so no object outside it keeps a pointer into memory about to be reused.
  void ResetNursery();
  // Removes nursery chunk `chunk` from the nursery (it now holds objects promoted in place) and takes
  // a replacement if the heap has one.
  void PromoteNurseryChunk(char* chunk, uint16_t owner);
  // Returns the nursery chunks to the page space (thread exit; the nursery must hold nothing live).
  void ReleaseNursery();
  // Major collection (world stopped): gives the chunks after the cursor's chunk, which hold nothing
  // since the last reset, back to the page space, and after the page space's rebuild takes as many
  // again, the lowest free chunks first (PageSpace::AcquireLowChunk). A nursery chunk never moves while
  // it holds objects, so without this the chunks promotions took as replacements stay wherever they
  // were taken and keep otherwise empty pages in use.
  void ReturnUnusedNurseryChunks();
  void TopUpNurseryLow();

  const std::vector<char*>& nursery_chunks() const { return nursery_chunks_; }
  // The same chunks sorted by address, for membership tests by binary search. Cached: sorted again
  // only after the set of nursery chunks changed (a promotion in place, a top-up), not at every
  // collection. The reference stays valid until the next call.
  const std::vector<char*>& SortedNurseryChunks();
  // The chunk the nursery cursor is in (nullptr if none) and the cursor: that chunk's real fringe.
  char* CurrentNurseryChunk() const {
    return nursery_.cursor == nullptr || nursery_chunks_.empty() ? nullptr : nursery_chunks_[nursery_index_];
  }
  char* nursery_cursor() const { return nursery_.cursor; }
  // Bytes allocated in the nursery since its last reset.
  size_t NurseryUsedBytes() const;
  bool NurseryEmpty() const { return nursery_index_ == 0 && nursery_.cursor == FirstNurseryStart(); }

  std::vector<std::atomic<Object*>*>& remembered() { return remembered_; }

 private:
  // Nulls every remembered slot that points into this nursery, then clears the set. The nursery is
  // being discarded untraced (an aborted or read-only transaction, the end of a collection, thread
  // exit), so what those slots point to is garbage; only dead local objects outside the nursery can
  // still hold such a slot (a collection forwards the slots of live ones first). Left as they were,
  // the slots would point into the bytes of whatever the nursery holds next; a stale stack word that
  // pins the dead holder in a major collection would make that collection re-remember the slot, and
  // the next minor collection would "forward" whatever header those bytes spell.
  void ForgetSlotsIntoNursery();
  char* NextNurseryChunk(size_t size);
  char* AllocateOldSlow(size_t size, uint16_t owner);
  bool NextHole(size_t size);
  void CountHoleAsLive(size_t bytes);
  char* FirstNurseryStart() const { return nursery_chunks_.empty() ? nullptr : nursery_chunks_[0]; }

  std::vector<char*> nursery_chunks_;         // chunk bases, in allocation order
  std::vector<char*> sorted_nursery_chunks_;  // nursery_chunks_ by address, unless stale
  bool sorted_nursery_stale_ = true;          // nursery_chunks_ changed since the last sort
  size_t nursery_index_ = 0;                  // chunk the cursor is in
  size_t nursery_target_chunks_ = 0;
  BumpRegion nursery_;  // to_chunk_end always true
  BumpRegion old_;
  char* hole_chunk_ = nullptr;                     // a reused chunk whose holes old_ is filling
  char* hole_scan_ = nullptr;                      // where the search for the next hole in it resumes
  std::vector<std::atomic<Object*>*> remembered_;  // slots outside the nursery pointing into it
};

}  // namespace revkv::runtime
