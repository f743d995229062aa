// The object-start map: one bit per 8-byte granule of a small-object page, set exactly at the start of
// every object (never at a filler), so that an ambiguous word finds the object it points into, and the
// object it points one past the end of, by looking back through at most one chunk's 32 bitmap words
// instead of parsing the chunk from its start (issue "Major collection", step 4).
//
// Where the bits live: a side table reserved with each segment (128 KiB per 8 MiB page, committed by the
// OS as it is touched); PageHeader::object_starts points at the page's part of it. A chunk's bits are
// the 32 words [ChunkIndexOf * 32, +32) of its page's part: no two chunks share a word.
//
// Invariant (checked against a linear parse by the heap verifier, CheckObjectStartMaps below):
//   in a kOld or kNursery chunk, bit g is set iff an object (not a filler) starts at granule g and lies
//   below the chunk's fringe — for a thread's current nursery chunk, below its allocation cursor; in
//   every other chunk of a small page (free, never handed out) no bit is set.
// Who keeps it:
//   - allocation sets the bit of each object it hands out: the nursery (Allocate), the old-space region
//     of a minor or local collection (ThreadHeap::AllocateOld, holes included) and the major
//     collection's to-space (its AllocateToSpace);
//   - a chunk whose objects all die clears its bits: a reset nursery chunk (ThreadHeap::ResetNursery),
//     a chunk that becomes free (PageSpace::SetChunkKind to kFree);
//   - a chunk where some objects stay and the rest become filler rebuilds its bits from the kept ones: a
//     nursery chunk promoted in place (minor collection), a pinned chunk after a major collection.
// Thread-safety: the words of a chunk are written like its objects: by the thread that owns the chunk
// (its nursery, its old-space region), or by the collector while the world is stopped. They are read
// under the same conditions as the chunk's objects (ResolveAmbiguousWord's: the caller's own nursery,
// or a stopped world), so plain words suffice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "runtime/heap/heap.h"
#include "runtime/heap/page.h"

namespace revkv::runtime {

inline constexpr size_t kStartBitsPerChunk = kChunkSize / kObjectAlignment;  // 2048
inline constexpr size_t kStartWordsPerChunk = kStartBitsPerChunk / 64;       // 32
inline constexpr size_t kStartWordsPerPage = kStartWordsPerChunk * kChunksPerPage;
inline constexpr size_t kStartBytesPerPage = kStartWordsPerPage * sizeof(uint64_t);  // 128 KiB

// The first of the 32 words of the chunk holding `p`.
inline uint64_t* ChunkStartWords(const void* p) {
  return PageOf(p)->object_starts + ChunkIndexOf(p) * kStartWordsPerChunk;
}
// The granule of `p` within its page: the bit index in the page's part of the map.
inline size_t PageGranuleOf(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & (kPageSize - 1)) / kObjectAlignment;
}

// Records that an object starts at `p` (8-aligned, in a small-object page).
inline void NoteObjectStart(const void* p) {
  const size_t g = PageGranuleOf(p);
  PageOf(p)->object_starts[g / 64] |= uint64_t{1} << (g % 64);
}

inline bool IsNotedObjectStart(const void* p) {
  const size_t g = PageGranuleOf(p);
  return (PageOf(p)->object_starts[g / 64] >> (g % 64)) & 1;
}

// Forgets every object start in the chunk at `chunk` (its objects are dead, or are about to be noted
// again).
inline void ClearChunkObjectStarts(char* chunk) {
#ifdef REVKV_MUTATION_STALE_OBJECT_STARTS
  return;  // mutation test: the map keeps the starts of objects that died or were overwritten
#endif
  std::memset(ChunkStartWords(chunk), 0, kStartWordsPerChunk * sizeof(uint64_t));
}

// Keeps only the object starts of the chunk at `chunk` whose bit is set in `keep` (the chunk's 32 words
// of another map, e.g. its mark bits): the objects left out died and lie under filler now.
inline void RetainChunkObjectStarts(char* chunk, const uint64_t* keep) {
#ifdef REVKV_MUTATION_STALE_OBJECT_STARTS
  return;  // mutation test: the map keeps the starts of objects that died or were overwritten
#endif
  uint64_t* words = ChunkStartWords(chunk);
  for (size_t i = 0; i < kStartWordsPerChunk; ++i) words[i] &= keep[i];
}

// The start of the last object noted at or before `addr` in the chunk holding `addr`, or nullptr if
// none is. Looks at no more than the chunk's 32 words.
inline char* LastObjectStartAtOrBefore(uintptr_t addr) {
  const void* a = reinterpret_cast<const void*>(addr);
  const uint64_t* words = ChunkStartWords(a);
  const size_t bit = (addr & (kChunkSize - 1)) / kObjectAlignment;  // within the chunk
  size_t w = bit / 64;
  uint64_t m = words[w] & (~uint64_t{0} >> (63 - bit % 64));
  while (m == 0) {
    if (w == 0) return nullptr;
    m = words[--w];
  }
  const size_t found = w * 64 + 63 - static_cast<size_t>(__builtin_clzll(m));
  return ChunkBaseOf(a) + found * kObjectAlignment;
}

// Both referents of `word` among the objects of the chunk at `chunk` whose parseable data ends at
// `fringe`, from the map: the same answer as a linear parse of the chunk (FindReferentsInChunk with the
// map off), without the parse.
inline AmbiguousReferents ReferentsFromObjectStarts(char* chunk, char* fringe, uintptr_t word) {
  const uintptr_t f = reinterpret_cast<uintptr_t>(fringe);
  const uintptr_t c = reinterpret_cast<uintptr_t>(chunk);
  if (word > f || word < c || f == c) return {nullptr, nullptr};
  // The fringe may be the chunk's end: look it up as the last byte's granule (still in this chunk).
  char* s = LastObjectStartAtOrBefore(word == f ? word - 1 : word & ~uintptr_t{kObjectAlignment - 1});
  if (s == nullptr) return {nullptr, nullptr};
  auto* o = reinterpret_cast<Object*>(s);
  const uintptr_t start = reinterpret_cast<uintptr_t>(s);
  const uintptr_t end = start + o->size();
  if (word < end && word < f) {
    // Into `o`; when `word` is its very start it also ends the object before (if one ends there).
    Object* ending = nullptr;
    if (word == start && start > c) {
      if (char* b = LastObjectStartAtOrBefore(start - kObjectAlignment)) {
        auto* before = reinterpret_cast<Object*>(b);
        if (reinterpret_cast<uintptr_t>(b) + before->size() == word) ending = before;
      }
    }
    return {o, ending};
  }
  return {nullptr, word == end ? o : nullptr};
}

}  // namespace revkv::runtime
