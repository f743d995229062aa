// The page space: segments of reserved address space, the pages in them, and the hand-out of chunks
// and large-object runs (seed 003's segment / page / chunk hierarchy).
//
// Address space is reserved in up to kMaxSegments segments, each a run of pages aligned at kPageSize;
// a new segment is reserved only when every page of the existing ones is in use and the configured
// maximum allows more. Pages are committed lazily by the OS. A free page stays committed ("warm") while
// fewer than the retention limit are: `retained_free_pages`, or after a major collection (with
// `retain_evacuation_reserve`) as many pages as the live small-object pages, so that the next
// evacuation copies into pages that are already mapped. Beyond the limit, free pages are decommitted.
//
// Taking a chunk is one fetch_add on the current page's fresh-chunk counter; only when that page is
// exhausted does a thread take the lock, to reuse a free chunk of a partly used page or to start a
// new page. Large objects take a run of chunks in a large-object page under the lock.
//
// Thread-safety: thread-safe, except the methods marked "stopped world", which the major collector
// calls while every other thread is stopped.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "runtime/heap/heap.h"
#include "runtime/heap/page.h"

namespace revkv::runtime {

class PageSpace {
 public:
  static constexpr int kMaxSegments = 16;

  static PageSpace& Get();

  void Configure(const HeapOptions& options);
  void SetMaxBytes(size_t bytes);
  // HeapOptions::retained_free_pages and retain_evacuation_reserve; effective from the next rebuild.
  void SetPageRetention(size_t retained_free_pages, bool retain_evacuation_reserve);
  size_t MaxBytes() const { return max_pages_.load(std::memory_order_relaxed) * kPageSize; }

  // Takes a free chunk of a small-object page and gives it `kind` and `owner`; its fringe is its start.
  // Returns nullptr when the heap is at its maximum. May set the "major collection wanted" poll bit.
  char* AcquireChunk(ChunkKind kind, uint16_t owner);
  // AcquireChunk, but the lowest free chunk of a page in use first, before the current page's fresh
  // ones: for chunks that will not move for long (a nursery's), kept beside the live data so that they
  // do not hold emptier pages in use.
  char* AcquireLowChunk(ChunkKind kind, uint16_t owner);
  // Changes the kind of a chunk the caller owns (or any chunk, with the world stopped).
  void SetChunkKind(char* chunk, ChunkKind kind);
  // Gives back a chunk the caller owns and nothing references.
  void ReleaseChunk(char* chunk);
  // Takes an old-space chunk with reusable holes (left around pinned objects by a major collection)
  // for the caller to allocate into; nullptr if there is none.
  char* TakeHoleChunk(uint16_t owner);

  // Allocates a run of chunks for one large object of `bytes` bytes (<= kMaxObjectSize); returns its
  // start (chunk-aligned) or nullptr when the heap is at its maximum.
  char* AllocateLarge(size_t bytes);

  // True if p lies in reserved heap address space. Lock-free.
  bool Contains(const void* p) const;

  // The free pages: those kept committed (the retained ones, counted by HeapUsage::retained_bytes) and
  // those decommitted or never touched, which hold no memory of the process. Copies taken under the
  // lock. Thread-safe.
  std::vector<PageHeader*> WarmPages() const;
  std::vector<PageHeader*> ColdPages() const;

  // Bytes in chunks that are in use (nursery, old, large).
  size_t InUseBytes() const;
  HeapUsage Usage() const;

  // ----- stopped world (major collection) -----
  // In-use pages of each kind.
  std::vector<PageHeader*> SmallPages() const { return small_pages_; }
  std::vector<PageHeader*> LargePages() const { return large_pages_; }
  // Frees the run of the large object starting at chunk `head` of `page`.
  void FreeLargeRun(PageHeader* page, size_t head);
  // Recomputes the free-chunk and hole lists and the counters from the chunk kinds, returns empty
  // pages (decommitting beyond the retention limit, which it first sets from the live small-object
  // pages) and resets the current page.
  void RebuildAfterCollection();
  void SetPinnedFigures(size_t pinned_bytes, size_t pinned_chunks);
  // Chunks a major collection could still take for its to-space: the free chunks of in-use small pages,
  // the fresh ones of the current page, and every chunk of the pages the maximum still allows.
  size_t FreeChunkCapacity() const;
  void SetNextMajorTrigger(size_t in_use_bytes) { next_major_trigger_.store(in_use_bytes); }
  // While deferred (a count > 0), growth triggers a major collection only at 7/8 of the maximum.
  // Thread-safe.
  void DeferMajorTrigger(int delta) { trigger_deferrals_.fetch_add(delta, std::memory_order_relaxed); }
  // Asks for a major collection (at the next poll) if the bytes in use reached the trigger. Thread-safe.
  void CheckMajorTrigger();
  size_t NextMajorTrigger() const { return next_major_trigger_.load(std::memory_order_relaxed); }

 private:
  PageSpace() = default;
  char* AcquireChunkSlow(ChunkKind kind, uint16_t owner);
  void InitChunk(PageHeader* page, size_t index, ChunkKind kind, uint16_t owner);
  PageHeader* TakePageLocked(PageKind kind);  // nullptr at the maximum
  bool ReserveSegmentLocked();
  void ReturnPageLocked(PageHeader* page);
  size_t RetentionLimitLocked() const { return std::max(retained_free_pages_, evacuation_reserve_pages_); }

  struct Segment {
    std::atomic<uintptr_t> base{0};
    std::atomic<uintptr_t> end{0};
    uint64_t* object_starts = nullptr;  // kStartBytesPerPage per page (object_starts.h); under mu_
  };
  // The part of its segment's object-start map that belongs to `page`.
  uint64_t* ObjectStartsOfLocked(const PageHeader* page) const;

  mutable std::mutex mu_;  // guards everything below that is not atomic
  std::array<Segment, kMaxSegments> segments_;
  std::atomic<int> segment_count_{0};
  size_t segment_pages_ = 64;
  size_t retained_free_pages_ = 4;
  bool retain_evacuation_reserve_ = true;
  size_t evacuation_reserve_pages_ = 0;     // set by RebuildAfterCollection
  std::atomic<size_t> warm_page_count_{0};  // warm_pages_.size(), for Usage() without the lock
  std::vector<PageHeader*> warm_pages_;     // free and still committed (content is stale)
  std::vector<PageHeader*> cold_pages_;     // free and decommitted or never touched (zero)
  std::vector<PageHeader*> small_pages_;
  std::vector<PageHeader*> large_pages_;
  std::vector<char*> free_chunks_;             // free chunks of in-use small pages
  std::vector<char*> hole_chunks_;             // old chunks with holes
  std::atomic<PageHeader*> current_{nullptr};  // small page with fresh chunks
  std::atomic<size_t> max_pages_{256};
  std::atomic<size_t> pages_in_use_{0};
  std::atomic<size_t> reserved_bytes_{0};
  std::array<std::atomic<int64_t>, 6> chunks_by_kind_{};  // indexed by ChunkKind
  std::atomic<size_t> pinned_bytes_{0};
  std::atomic<size_t> pinned_chunks_{0};
  std::atomic<size_t> next_major_trigger_{size_t{64} << 20};
  std::atomic<int> trigger_deferrals_{0};  // MajorCollectionDeferral scopes alive
};

}  // namespace revkv::runtime
