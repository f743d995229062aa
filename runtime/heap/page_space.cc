// Implementation of the page space (see page_space.h).
#include "runtime/heap/page_space.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/heap/mark_bits.h"
#include "runtime/heap/object_starts.h"
#include "runtime/port/diagnostics.h"
#include "runtime/port/port.h"
#include "runtime/safepoint/safepoint.h"

namespace revkv::runtime {

namespace {
size_t KindIndex(ChunkKind k) { return static_cast<size_t>(k); }
}  // namespace

PageSpace& PageSpace::Get() {
  static PageSpace* space = new PageSpace();  // never destroyed: threads may outlive main
  return *space;
}

void PageSpace::Configure(const HeapOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t max_pages = std::max<size_t>(2, options.max_heap_bytes / kPageSize);
  max_pages_.store(max_pages, std::memory_order_relaxed);
  // Segments of at least 64 pages, large enough that kMaxSegments of them cover the maximum.
  segment_pages_ = std::max<size_t>(64, (max_pages + kMaxSegments - 1) / kMaxSegments);
  retained_free_pages_ = options.retained_free_pages;
  retain_evacuation_reserve_ = options.retain_evacuation_reserve;
  next_major_trigger_.store(std::min(options.min_major_trigger_bytes, max_pages * kPageSize));
}

void PageSpace::SetMaxBytes(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t max_pages = std::max<size_t>(2, bytes / kPageSize);
  max_pages_.store(max_pages, std::memory_order_relaxed);
  // A trigger at or above the maximum would only fire on exhaustion.
  const size_t ceiling = max_pages * kPageSize - max_pages * kPageSize / 8;
  if (next_major_trigger_.load(std::memory_order_relaxed) > ceiling) next_major_trigger_.store(ceiling);
}

void PageSpace::SetPageRetention(size_t retained_free_pages, bool retain_evacuation_reserve) {
  std::lock_guard<std::mutex> lock(mu_);
  retained_free_pages_ = retained_free_pages;
  retain_evacuation_reserve_ = retain_evacuation_reserve;
}

bool PageSpace::Contains(const void* p) const {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const int n = segment_count_.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    if (a >= segments_[i].base.load(std::memory_order_relaxed) &&
        a < segments_[i].end.load(std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

bool PageSpace::ReserveSegmentLocked() {
  const int n = segment_count_.load(std::memory_order_relaxed);
  if (n == kMaxSegments) return false;
  const size_t bytes = segment_pages_ * kPageSize;
  void* base = port::ReserveAligned(bytes, kPageSize);
  if (base == nullptr) return false;
  // Zero until touched, like the pages; a page's part (object starts and mark bits, mark_bits.h) is
  // touched as objects are noted and marked in it.
  void* starts = port::ReserveAligned(segment_pages_ * kSideBytesPerPage, 4096);
  if (starts == nullptr) {
    port::ReleaseReservation(base, bytes);
    return false;
  }
  segments_[n].object_starts = static_cast<uint64_t*>(starts);
  segments_[n].base.store(reinterpret_cast<uintptr_t>(base), std::memory_order_relaxed);
  segments_[n].end.store(reinterpret_cast<uintptr_t>(base) + bytes, std::memory_order_relaxed);
  segment_count_.store(n + 1, std::memory_order_release);
  reserved_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  // Lowest address last, so pages are handed out in address order.
  for (size_t i = segment_pages_; i-- > 0;) {
    cold_pages_.push_back(reinterpret_cast<PageHeader*>(static_cast<char*>(base) + i * kPageSize));
  }
  return true;
}

PageHeader* PageSpace::TakePageLocked(PageKind kind) {
  if (pages_in_use_.load(std::memory_order_relaxed) >= max_pages_.load(std::memory_order_relaxed)) {
    return nullptr;
  }
  PageHeader* page = nullptr;
  if (!warm_pages_.empty()) {
    page = warm_pages_.back();
    warm_pages_.pop_back();
    warm_page_count_.store(warm_pages_.size(), std::memory_order_relaxed);
    std::memset(static_cast<void*>(page), 0, sizeof(PageHeader));  // stale header of an earlier use
  } else {
    if (cold_pages_.empty() && !ReserveSegmentLocked()) return nullptr;
    page = cold_pages_.back();  // zero-filled by the OS
    cold_pages_.pop_back();
  }
  page->chunk_kind[0].store(ChunkKind::kHeader, std::memory_order_relaxed);
  // Every chunk of a page being taken is free, so its map part is all clear (object_starts.h).
  page->object_starts = ObjectStartsOfLocked(page);
  page->next_fresh_chunk.store(kind == PageKind::kSmall ? 1 : kChunksPerPage, std::memory_order_relaxed);
  page->kind = kind;
  page->in_use = true;
  pages_in_use_.fetch_add(1, std::memory_order_relaxed);
  (kind == PageKind::kSmall ? small_pages_ : large_pages_).push_back(page);
  return page;
}

void PageSpace::ReturnPageLocked(PageHeader* page) {
  page->in_use = false;
  for (size_t i = 1; i < kChunksPerPage; ++i)
    page->chunk_kind[i].store(ChunkKind::kFree, std::memory_order_relaxed);
  pages_in_use_.fetch_sub(1, std::memory_order_relaxed);
  if (warm_pages_.size() < RetentionLimitLocked()) {
    warm_pages_.push_back(page);
    warm_page_count_.store(warm_pages_.size(), std::memory_order_relaxed);
  } else {
    port::Decommit(page->object_starts, kSideBytesPerPage);  // all clear: every chunk is free
    port::Decommit(page, kPageSize);
    cold_pages_.push_back(page);
  }
}

uint64_t* PageSpace::ObjectStartsOfLocked(const PageHeader* page) const {
  const uintptr_t a = reinterpret_cast<uintptr_t>(page);
  const int n = segment_count_.load(std::memory_order_relaxed);
  for (int i = 0; i < n; ++i) {
    const uintptr_t base = segments_[i].base.load(std::memory_order_relaxed);
    if (a >= base && a < segments_[i].end.load(std::memory_order_relaxed)) {
      return segments_[i].object_starts + (a - base) / kPageSize * kSideWordsPerPage;
    }
  }
  port::Fatal("revkv runtime: page %p is in no segment", static_cast<const void*>(page));
}

void PageSpace::InitChunk(PageHeader* page, size_t index, ChunkKind kind, uint16_t owner) {
  ChunkInfo& info = page->chunk[index];
  info.fringe = page->ChunkStart(index);
  info.run_chunks = 0;
  info.pinned_bytes = 0;
  info.owner = owner;
  info.gc_flags = 0;
  info.has_holes = 0;
  info.live_bytes = kNoLiveStats;
  page->chunk_kind[index].store(kind, std::memory_order_relaxed);
  chunks_by_kind_[KindIndex(kind)].fetch_add(1, std::memory_order_relaxed);
}

char* PageSpace::AcquireChunk(ChunkKind kind, uint16_t owner) {
  PageHeader* page = current_.load(std::memory_order_acquire);
  if (page != nullptr) {
    const uint32_t index = page->next_fresh_chunk.fetch_add(1, std::memory_order_relaxed);
    if (index < kChunksPerPage) {
      InitChunk(page, index, kind, owner);
      return page->ChunkStart(index);
    }
  }
  return AcquireChunkSlow(kind, owner);
}

char* PageSpace::AcquireChunkSlow(ChunkKind kind, uint16_t owner) {
  std::lock_guard<std::mutex> lock(mu_);
  CheckMajorTrigger();
  for (;;) {
    // Another thread may have installed a fresh page while we waited for the lock.
    PageHeader* page = current_.load(std::memory_order_relaxed);
    if (page != nullptr) {
      const uint32_t index = page->next_fresh_chunk.fetch_add(1, std::memory_order_relaxed);
      if (index < kChunksPerPage) {
        InitChunk(page, index, kind, owner);
        return page->ChunkStart(index);
      }
    }
    if (!free_chunks_.empty()) {
      char* chunk = free_chunks_.back();
      free_chunks_.pop_back();
      InitChunk(PageOf(chunk), ChunkIndexOf(chunk), kind, owner);
      return chunk;
    }
    PageHeader* fresh = TakePageLocked(PageKind::kSmall);
    if (fresh == nullptr) return nullptr;
    current_.store(fresh, std::memory_order_release);
  }
}

char* PageSpace::AcquireLowChunk(ChunkKind kind, uint16_t owner) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_chunks_.empty()) {  // sorted highest first: the back is the lowest
      char* chunk = free_chunks_.back();
      free_chunks_.pop_back();
      InitChunk(PageOf(chunk), ChunkIndexOf(chunk), kind, owner);
      return chunk;
    }
  }
  return AcquireChunk(kind, owner);
}

void PageSpace::SetChunkKind(char* chunk, ChunkKind kind) {
  PageHeader* page = PageOf(chunk);
  const size_t index = ChunkIndexOf(chunk);
  const ChunkKind old = page->chunk_kind[index].load(std::memory_order_relaxed);
  // A chunk becoming free holds no object any more (object_starts.h) and no mark (mark_bits.h).
  if (kind == ChunkKind::kFree && page->kind == PageKind::kSmall) {
    ClearChunkObjectStarts(chunk);
    ClearChunkMarks(chunk);
  }
  chunks_by_kind_[KindIndex(old)].fetch_sub(1, std::memory_order_relaxed);
  chunks_by_kind_[KindIndex(kind)].fetch_add(1, std::memory_order_relaxed);
  page->chunk_kind[index].store(kind, std::memory_order_relaxed);
}

void PageSpace::ReleaseChunk(char* chunk) {
  std::lock_guard<std::mutex> lock(mu_);
  SetChunkKind(chunk, ChunkKind::kFree);
  free_chunks_.push_back(chunk);
}

char* PageSpace::TakeHoleChunk(uint16_t owner) {
  std::lock_guard<std::mutex> lock(mu_);
  if (hole_chunks_.empty()) return nullptr;
  char* chunk = hole_chunks_.back();
  hole_chunks_.pop_back();
  ChunkInfo& info = ChunkInfoOf(chunk);
  info.owner = owner;
  info.has_holes = 0;  // live_bytes stays: ThreadHeap adds each hole it fills (CountHoleAsLive)
  return chunk;
}

char* PageSpace::AllocateLarge(size_t bytes) {
  const size_t need = (bytes + kChunkSize - 1) / kChunkSize;
  std::lock_guard<std::mutex> lock(mu_);
  CheckMajorTrigger();
  auto place = [&](PageHeader* page) -> char* {
    size_t run = 0;
    for (size_t i = 1; i < kChunksPerPage; ++i) {
      if (page->chunk_kind[i].load(std::memory_order_relaxed) != ChunkKind::kFree) {
        run = 0;
        continue;
      }
      if (++run == need) {
        const size_t head = i + 1 - need;
        InitChunk(page, head, ChunkKind::kLargeHead, 0);
        page->chunk[head].run_chunks = static_cast<uint32_t>(need);
        for (size_t j = head + 1; j <= i; ++j) {
          InitChunk(page, j, ChunkKind::kLargeTail, 0);
          page->chunk[j].run_chunks = static_cast<uint32_t>(head);
        }
        return page->ChunkStart(head);
      }
    }
    return nullptr;
  };
  for (PageHeader* page : large_pages_) {
    if (char* p = place(page)) return p;
  }
  PageHeader* page = TakePageLocked(PageKind::kLarge);
  if (page == nullptr) return nullptr;
  return place(page);
}

void PageSpace::FreeLargeRun(PageHeader* page, size_t head) {
  const size_t n = page->chunk[head].run_chunks;
  for (size_t j = head; j < head + n; ++j) SetChunkKind(page->ChunkStart(j), ChunkKind::kFree);
}

void PageSpace::CheckMajorTrigger() {
  size_t trigger = next_major_trigger_.load(std::memory_order_relaxed);
  // Relaxed: a deferral is a hint about the allocation to come; a late view only moves one trigger.
  if (trigger_deferrals_.load(std::memory_order_relaxed) > 0) {
    const size_t max = max_pages_.load(std::memory_order_relaxed) * kPageSize;
    trigger = std::max(trigger, max - max / 8);
  }
  if (InUseBytes() >= trigger) {
    internal::g_poll_word.fetch_or(internal::kMajorWanted, std::memory_order_relaxed);
  }
}

size_t PageSpace::InUseBytes() const {
  int64_t chunks = 0;
  for (ChunkKind k : {ChunkKind::kNursery, ChunkKind::kOld, ChunkKind::kLargeHead, ChunkKind::kLargeTail}) {
    chunks += chunks_by_kind_[KindIndex(k)].load(std::memory_order_relaxed);
  }
  return static_cast<size_t>(std::max<int64_t>(chunks, 0)) * kChunkSize;
}

void PageSpace::RebuildAfterCollection() {
  std::lock_guard<std::mutex> lock(mu_);
  free_chunks_.clear();
  hole_chunks_.clear();
  current_.store(nullptr, std::memory_order_relaxed);
  std::array<int64_t, 6> counts{};
  std::vector<PageHeader*> emptied;  // returned once the retention limit is known
  auto rebuild = [&](std::vector<PageHeader*>& pages) {
    std::vector<PageHeader*> kept;
    for (PageHeader* page : pages) {
      size_t live = 0;
      size_t highest = 0;
      const size_t fresh =
          std::min<size_t>(page->next_fresh_chunk.load(std::memory_order_relaxed), kChunksPerPage);
      for (size_t i = 1; i < kChunksPerPage; ++i) {
        const ChunkKind k = page->chunk_kind[i].load(std::memory_order_relaxed);
        if (k == ChunkKind::kFree) continue;
        ++counts[KindIndex(k)];
        ++live;
        highest = i;
        if (k == ChunkKind::kOld && page->chunk[i].has_holes) hole_chunks_.push_back(page->ChunkStart(i));
      }
      page->live_chunks = static_cast<uint32_t>(live);
      if (live == 0) {
        emptied.push_back(page);
        continue;
      }
      kept.push_back(page);
      if (page->kind == PageKind::kSmall) {
        // Chunks above the highest live one become fresh again; free ones below go on the list.
        const size_t new_fresh = std::max(highest + 1, size_t{1});
        for (size_t i = 1; i < std::min(new_fresh, fresh); ++i) {
          if (page->chunk_kind[i].load(std::memory_order_relaxed) == ChunkKind::kFree) {
            free_chunks_.push_back(page->ChunkStart(i));
          }
        }
        page->next_fresh_chunk.store(static_cast<uint32_t>(new_fresh), std::memory_order_relaxed);
      }
    }
    pages.swap(kept);
  };
  rebuild(small_pages_);
  rebuild(large_pages_);
  // The next major collection evacuates about as many small pages as are live now.
  const size_t in_use = small_pages_.size() + large_pages_.size();
  const size_t max_pages = max_pages_.load(std::memory_order_relaxed);
  evacuation_reserve_pages_ = retain_evacuation_reserve_
                                  ? std::min(small_pages_.size(), max_pages > in_use ? max_pages - in_use : 0)
                                  : 0;
  for (PageHeader* page : emptied) ReturnPageLocked(page);
  while (warm_pages_.size() > RetentionLimitLocked()) {  // the live set shrank
    PageHeader* page = warm_pages_.back();
    warm_pages_.pop_back();
    port::Decommit(page->object_starts, kSideBytesPerPage);
    port::Decommit(page, kPageSize);
    cold_pages_.push_back(page);
  }
  warm_page_count_.store(warm_pages_.size(), std::memory_order_relaxed);
  for (size_t k = 0; k < counts.size(); ++k) chunks_by_kind_[k].store(counts[k], std::memory_order_relaxed);
  // Prefer the emptiest page's fresh chunks first.
  PageHeader* best = nullptr;
  for (PageHeader* page : small_pages_) {
    if (best == nullptr || page->next_fresh_chunk.load(std::memory_order_relaxed) <
                               best->next_fresh_chunk.load(std::memory_order_relaxed)) {
      best = page;
    }
  }
  if (best != nullptr && best->next_fresh_chunk.load(std::memory_order_relaxed) < kChunksPerPage) {
    current_.store(best, std::memory_order_release);
  }
  // The fresh tails of the other pages go on the free list, or no one could take them until the next
  // major collection.
  for (PageHeader* page : small_pages_) {
    if (page == best) continue;
    for (size_t i = page->next_fresh_chunk.load(std::memory_order_relaxed); i < kChunksPerPage; ++i) {
      free_chunks_.push_back(page->ChunkStart(i));
    }
    page->next_fresh_chunk.store(kChunksPerPage, std::memory_order_relaxed);
  }
  // Reuse low addresses first.
  std::sort(free_chunks_.begin(), free_chunks_.end(), std::greater<>());
}

size_t PageSpace::FreeChunkCapacity() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t chunks = free_chunks_.size();
  if (PageHeader* page = current_.load(std::memory_order_relaxed)) {
    const size_t fresh = page->next_fresh_chunk.load(std::memory_order_relaxed);
    if (fresh < kChunksPerPage) chunks += kChunksPerPage - fresh;
  }
  const size_t max_pages = max_pages_.load(std::memory_order_relaxed);
  const size_t in_use = pages_in_use_.load(std::memory_order_relaxed);
  if (max_pages > in_use) chunks += (max_pages - in_use) * (kChunksPerPage - 1);
  return chunks;
}

void PageSpace::SetPinnedFigures(size_t pinned_bytes, size_t pinned_chunks) {
  pinned_bytes_.store(pinned_bytes, std::memory_order_relaxed);
  pinned_chunks_.store(pinned_chunks, std::memory_order_relaxed);
}

std::vector<PageHeader*> PageSpace::WarmPages() const {
  std::lock_guard<std::mutex> lock(mu_);
  return warm_pages_;
}

std::vector<PageHeader*> PageSpace::ColdPages() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cold_pages_;
}

HeapUsage PageSpace::Usage() const {
  HeapUsage u{};
  auto chunks = [&](ChunkKind k) {
    return static_cast<size_t>(
        std::max<int64_t>(0, chunks_by_kind_[KindIndex(k)].load(std::memory_order_relaxed)));
  };
  u.max_bytes = MaxBytes();
  u.committed_bytes = pages_in_use_.load(std::memory_order_relaxed) * kPageSize;
  u.nursery_bytes = chunks(ChunkKind::kNursery) * kChunkSize;
  u.old_bytes = chunks(ChunkKind::kOld) * kChunkSize;
  u.large_bytes = (chunks(ChunkKind::kLargeHead) + chunks(ChunkKind::kLargeTail)) * kChunkSize;
  u.pinned_bytes = pinned_bytes_.load(std::memory_order_relaxed);
  u.pinned_chunks = pinned_chunks_.load(std::memory_order_relaxed);
  const size_t used = u.nursery_bytes + u.old_bytes + u.large_bytes;
  const size_t usable = pages_in_use_.load(std::memory_order_relaxed) * (kPageSize - kChunkSize);
  u.free_bytes = usable > used ? usable - used : 0;
  u.reserved_bytes = reserved_bytes_.load(std::memory_order_relaxed);
  u.retained_bytes = warm_page_count_.load(std::memory_order_relaxed) * kPageSize;
  return u;
}

}  // namespace revkv::runtime
