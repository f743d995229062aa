// Pages and chunks: the metadata at the head of every 8 MiB page (seed 003).
//
// A page is kPageSize bytes aligned at kPageSize, so the header of the page holding any heap address
// is `addr & ~(kPageSize - 1)`. Chunk 0 of a page holds this header; chunks 1..511 hold objects.
// A small-object page hands out single 16 KiB chunks; a large-object page hands out runs of chunks,
// each run holding one object that never moves.
//
// Invariants:
//  1. Objects in a chunk are contiguous from the chunk start up to the chunk's fringe, each beginning
//     with an Object header or a filler word, so a chunk can be parsed linearly ("parseable"). For a
//     chunk a thread is bump-allocating into, the fringe is the thread's cursor, published into the
//     chunk only when the chunk is retired (every thread's chunks are retired at a major collection).
//  2. chunk_kind[i] is written only by the thread that owns chunk i (it took the chunk from the page
//     space) or by the collector while the world is stopped; other threads read it with relaxed order
//     (the generational write barrier) and only care whether their own nursery owns the chunk.
//  3. Everything in ChunkInfo other than chunk_kind is owner-thread-only, or collector-only while the
//     world is stopped or while the collection is thread-local (minor, local).
#pragma once

#include <atomic>
#include <cstdint>

#include "runtime/heap/heap.h"

namespace revkv::runtime {

enum class ChunkKind : uint8_t {
  kFree = 0,                          // unused; may be handed out
  kHeader = 1,                        // chunk 0 of a page
  kNursery = internal::kNurseryKind,  // part of a thread's nursery (local objects only)
  kOld = 3,                           // old space: objects that survived a collection or were committed
  kLargeHead = 4,                     // first chunk of a large object's run
  kLargeTail = 5,                     // later chunk of a large object's run
};

enum class PageKind : uint8_t { kSmall, kLarge };

// Collector-private per-chunk state (invariant 3).
enum ChunkGcFlag : uint8_t {
  kChunkCondemned = 1u << 0,     // from-space of the running major collection
  kChunkHasPinned = 1u << 1,     // holds objects that stay in place in the running collection
  kChunkQueuedPinned = 1u << 2,  // already on the running collection's list of such chunks
  kChunkMarkInPlace = 1u << 3,   // old chunk the running major collection marks in place and sweeps
};

// ChunkInfo::live_bytes of a chunk no major collection has measured yet (taken since the last one).
inline constexpr uint32_t kNoLiveStats = ~uint32_t{0};

struct ChunkInfo {
  char* fringe;           // end of parseable data (invariant 1)
  uint32_t run_chunks;    // kLargeHead: chunks in the run; kLargeTail: index of the head chunk
  uint32_t pinned_bytes;  // bytes of objects kept in place here by the last collection
  uint16_t owner;         // thread index of the owner (nursery and allocation chunks)
  uint8_t gc_flags;       // ChunkGcFlag
  uint8_t has_holes;      // a kOld chunk with filler holes that allocation may reuse
  // kOld: bytes of the objects the last major collection left here (marked, pinned or copied), the
  // figure the next one chooses its evacuation candidates by; kNoLiveStats if the chunk was taken or
  // reused for allocation since (no measure yet: never a candidate).
  uint32_t live_bytes;
};

struct PageHeader {
  // Must stay the first member: heap.h's internal::InNursery reads it at offset 0.
  std::atomic<ChunkKind> chunk_kind[kChunksPerPage];
  ChunkInfo chunk[kChunksPerPage];
  // Chunks [next_fresh_chunk, kChunksPerPage) of a small page have never been handed out since the
  // page was last reset; threads take them with one fetch_add (no lock on this path).
  std::atomic<uint32_t> next_fresh_chunk;
  PageKind kind;
  bool in_use;
  uint32_t live_chunks;  // chunks not kFree (page space lock or stopped world)
  // This page's part of its segment's object-start map (runtime/heap/object_starts.h); set whenever
  // the page is taken into use, before any chunk of it is handed out.
  uint64_t* object_starts;

  char* base() { return reinterpret_cast<char*>(this); }
  char* ChunkStart(size_t index) { return base() + index * kChunkSize; }
  char* ChunkEnd(size_t index) { return base() + (index + 1) * kChunkSize; }
};
static_assert(sizeof(PageHeader) <= kChunkSize, "the page header must fit in chunk 0");

inline PageHeader* PageOf(const void* p) {
  return reinterpret_cast<PageHeader*>(reinterpret_cast<uintptr_t>(p) & ~(kPageSize - 1));
}
inline size_t ChunkIndexOf(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & (kPageSize - 1)) >> kChunkShift;
}
inline char* ChunkBaseOf(const void* p) {
  return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(p) & ~(kChunkSize - 1));
}
inline ChunkInfo& ChunkInfoOf(const void* p) { return PageOf(p)->chunk[ChunkIndexOf(p)]; }
inline ChunkKind ChunkKindOf(const void* p) {
  return PageOf(p)->chunk_kind[ChunkIndexOf(p)].load(std::memory_order_relaxed);
}

}  // namespace revkv::runtime
