// The mark bitmap of the major collection: one bit per 8-byte granule of a small-object page, set at
// the start of every object the running major collection found live in an old chunk (issue 16 step 1,
// "mark in place"). It lets the collector keep live objects where they are and sweep the rest without
// touching object headers.
//
// Where the bits live: beside the page's part of the object-start map (object_starts.h), in the same
// side area reserved with each segment: a page's side area is kSideBytesPerPage = 256 KiB, the first
// half its object starts, the second half its mark bits, so a chunk's mark words are found by the same
// address arithmetic as its start words (ChunkMarkWords = ChunkStartWords + kStartWordsPerPage).
//
// Invariant (checked by the heap verifier after every major collection, verifier.cc):
//   - outside a major collection, a chunk that is not kOld has no mark bit set;
//   - right after a major collection, the mark bits of every kOld chunk equal its object starts: every
//     object left in an old chunk was found live (marked in place, kept by a pin, or copied there), and
//     nothing else is left (the dead objects of chunks kept in place became filler);
//   - between major collections minor and local collections add objects to old chunks without marks;
//     the next major collection clears the marks of every old chunk before it traces (Condemn).
// Who keeps it: the major collector (world stopped) sets and clears bits; a chunk that becomes free
// clears its bits (PageSpace::SetChunkKind), so a chunk handed out again starts with none.
// Thread-safety: written and read only by the major collector with the world stopped, and by the page
// space for chunks no other thread can reach. The collector's threads trace in parallel: while they do,
// every access to a mark word goes through SetMarkAtomic (an atomic fetch_or: two threads reaching the
// same object, or two objects of one 512-byte stretch, never lose a bit and exactly one of them wins the
// object); before and after, with one thread, plain accesses.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "runtime/heap/object_starts.h"
#include "runtime/heap/page.h"

namespace revkv::runtime {

// Bytes of side area per page: object starts, then mark bits.
inline constexpr size_t kSideBytesPerPage = 2 * kStartBytesPerPage;  // 256 KiB
inline constexpr size_t kSideWordsPerPage = 2 * kStartWordsPerPage;

// The first of the 32 mark words of the chunk holding `p`.
inline uint64_t* ChunkMarkWords(const void* p) { return ChunkStartWords(p) + kStartWordsPerPage; }

// Sets the mark bit of the object at `p` (an object start in a small-object page); returns true if it
// was clear.
inline bool SetMark(const void* p) {
  const size_t g = PageGranuleOf(p);
  uint64_t& w = PageOf(p)->object_starts[kStartWordsPerPage + g / 64];
  const uint64_t bit = uint64_t{1} << (g % 64);
  if (w & bit) return false;
  w |= bit;
  return true;
}

// SetMark for the parallel trace: the first thread to set the bit gets true, and scans the object.
inline bool SetMarkAtomic(const void* p) {
  const size_t g = PageGranuleOf(p);
  std::atomic_ref<uint64_t> w(PageOf(p)->object_starts[kStartWordsPerPage + g / 64]);
  const uint64_t bit = uint64_t{1} << (g % 64);
  // Relaxed: the bit only decides which thread scans the object. The object's contents were written
  // before the world stopped (ordered by the stop-the-world handshake), and the winner hands the object
  // to other threads only through its deque, which orders what it wrote. The plain load first spares
  // the read-modify-write for an object already marked (most references to it).
  if (w.load(std::memory_order_relaxed) & bit) return false;
  return (w.fetch_or(bit, std::memory_order_relaxed) & bit) == 0;
}

inline bool IsMarked(const void* p) {
  const size_t g = PageGranuleOf(p);
  return (PageOf(p)->object_starts[kStartWordsPerPage + g / 64] >> (g % 64)) & 1;
}

inline void ClearChunkMarks(char* chunk) {
  std::memset(ChunkMarkWords(chunk), 0, kStartWordsPerChunk * sizeof(uint64_t));
}

inline bool ChunkHasMarks(const char* chunk) {
  const uint64_t* m = ChunkMarkWords(chunk);
  for (size_t i = 0; i < kStartWordsPerChunk; ++i) {
    if (m[i] != 0) return true;
  }
  return false;
}

}  // namespace revkv::runtime
