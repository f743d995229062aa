// Implementation of the per-thread heap (see thread_heap.h).
#include "runtime/heap/thread_heap.h"

#include <algorithm>
#include <cstring>

#include "runtime/heap/object_format.h"
#include "runtime/heap/page_space.h"

namespace revkv::runtime {

std::atomic<uint64_t> g_bytes_allocated{0};

namespace {
// Debug builds fill a reset nursery with this byte, so a stale pointer into it fails loudly.
constexpr int kPoisonByte = 0xDB;
}  // namespace

void BumpRegion::Retire() {
  if (cursor == nullptr) return;
  if (to_chunk_end) {
    ChunkInfoOf(cursor == limit ? cursor - 1 : cursor).fringe = cursor;
  } else if (cursor < limit) {
    HeaderAccess::InitFiller(cursor, static_cast<size_t>(limit - cursor));
  }
  cursor = limit = nullptr;
  to_chunk_end = false;
}

bool ThreadHeap::FillNursery(size_t bytes, uint16_t owner) {
  nursery_target_chunks_ = std::max<size_t>(1, bytes / kChunkSize);
  while (nursery_chunks_.size() < nursery_target_chunks_) {
    char* chunk = PageSpace::Get().AcquireChunk(ChunkKind::kNursery, owner);
    if (chunk == nullptr) break;
    nursery_chunks_.push_back(chunk);
    sorted_nursery_stale_ = true;
  }
  if (nursery_chunks_.empty()) return false;
  if (nursery_.cursor == nullptr) {
    nursery_index_ = 0;
    nursery_.cursor = nursery_chunks_[0];
    nursery_.limit = nursery_chunks_[0] + kChunkSize;
    nursery_.to_chunk_end = true;
  }
  return true;
}

char* ThreadHeap::NextNurseryChunk(size_t size) {
  if (nursery_.cursor == nullptr) return nullptr;  // no nursery yet
  while (nursery_index_ + 1 < nursery_chunks_.size()) {
    ChunkInfoOf(nursery_chunks_[nursery_index_]).fringe = nursery_.cursor;
    g_bytes_allocated.fetch_add(static_cast<size_t>(nursery_.cursor - nursery_chunks_[nursery_index_]),
                                std::memory_order_relaxed);
    ++nursery_index_;
    char* chunk = nursery_chunks_[nursery_index_];
    nursery_.cursor = chunk;
    nursery_.limit = chunk + kChunkSize;
    if (size <= kChunkSize) {
      nursery_.cursor += size;
      return chunk;
    }
  }
  return nullptr;
}

size_t ThreadHeap::NurseryUsedBytes() const {
  if (nursery_chunks_.empty() || nursery_.cursor == nullptr) return 0;
  // The bytes used in the cursor's chunk come from the region (its limit is that chunk's end), not from
  // nursery_chunks_[nursery_index_]: a minor or local collection may have promoted the cursor's chunk in
  // place and put a replacement in its slot, or removed the slot, before ResetNursery asks.
  return nursery_index_ * kChunkSize + (kChunkSize - nursery_.Available());
}

void ThreadHeap::RetireRegions() {
  if (nursery_.cursor != nullptr && !nursery_chunks_.empty()) {
    ChunkInfoOf(nursery_chunks_[nursery_index_]).fringe = nursery_.cursor;
  }
  // The old region stays usable after a minor or local collection, so write its filler / fringe but
  // keep allocating where it left off.
  if (old_.cursor != nullptr) {
    BumpRegion saved = old_;
    old_.Retire();
    old_ = saved;
  }
}

void ThreadHeap::DropOldRegion() {
  old_ = BumpRegion();
  hole_chunk_ = nullptr;
  hole_scan_ = nullptr;
}

void ThreadHeap::ForgetSlotsIntoNursery() {
  const std::vector<char*>& chunks = SortedNurseryChunks();
  for (std::atomic<Object*>* slot : remembered_) {
    // Relaxed: the slot belongs to a local object of this thread (or of nobody, once it is dead), and
    // only this thread, or the collector with the world stopped, reads it.
    Object* v = slot->load(std::memory_order_relaxed);
    if (v != nullptr && ChunkKindOf(v) == ChunkKind::kNursery &&
        std::binary_search(chunks.begin(), chunks.end(), ChunkBaseOf(v))) {
      slot->store(nullptr, std::memory_order_relaxed);
    }
  }
  remembered_.clear();
}

void ThreadHeap::ResetNursery() {
  if (nursery_chunks_.empty()) return;
  // Before the chunks are reused: a slot still pointing into them would soon point into other bytes.
  ForgetSlotsIntoNursery();
  const size_t used = NurseryUsedBytes();
  if (used > nursery_index_ * kChunkSize) {
    g_bytes_allocated.fetch_add(used - nursery_index_ * kChunkSize, std::memory_order_relaxed);
  }
  for (size_t i = 0; i <= nursery_index_ && i < nursery_chunks_.size(); ++i) {
    ChunkInfo& info = ChunkInfoOf(nursery_chunks_[i]);
#ifdef REVKV_DEBUG_CHECKS
    std::memset(nursery_chunks_[i], kPoisonByte, kChunkSize);
#endif
    info.fringe = nursery_chunks_[i];
    ClearChunkObjectStarts(nursery_chunks_[i]);
  }
  // Top the nursery back up if promotions in place shrank it.
  if (nursery_chunks_.size() < nursery_target_chunks_) {
    const uint16_t owner = ChunkInfoOf(nursery_chunks_[0]).owner;
    while (nursery_chunks_.size() < nursery_target_chunks_) {
      char* chunk = PageSpace::Get().AcquireChunk(ChunkKind::kNursery, owner);
      if (chunk == nullptr) break;
      nursery_chunks_.push_back(chunk);
      sorted_nursery_stale_ = true;
    }
  }
  nursery_index_ = 0;
  if (nursery_chunks_.empty()) {  // the heap is exhausted; allocation will report it
    nursery_ = BumpRegion();
    return;
  }
  nursery_.cursor = nursery_chunks_[0];
  nursery_.limit = nursery_chunks_[0] + kChunkSize;
  nursery_.to_chunk_end = true;
}

void ThreadHeap::ReturnUnusedNurseryChunks() {
  if (nursery_.cursor == nullptr || nursery_chunks_.empty()) return;
  while (nursery_chunks_.size() > nursery_index_ + 1) {
    char* chunk = nursery_chunks_.back();
    nursery_chunks_.pop_back();
    // Nothing was allocated in it since the reset that cleared its fringe and its object starts.
    PageSpace::Get().SetChunkKind(chunk, ChunkKind::kFree);
    sorted_nursery_stale_ = true;
  }
}

void ThreadHeap::TopUpNurseryLow() {
  if (nursery_.cursor == nullptr || nursery_chunks_.empty()) return;
  const uint16_t owner = ChunkInfoOf(nursery_chunks_[0]).owner;
  while (nursery_chunks_.size() < nursery_target_chunks_) {
    char* chunk = PageSpace::Get().AcquireLowChunk(ChunkKind::kNursery, owner);
    if (chunk == nullptr) break;
    nursery_chunks_.push_back(chunk);
    sorted_nursery_stale_ = true;
  }
}

const std::vector<char*>& ThreadHeap::SortedNurseryChunks() {
  if (sorted_nursery_stale_) {
    sorted_nursery_chunks_ = nursery_chunks_;
    std::sort(sorted_nursery_chunks_.begin(), sorted_nursery_chunks_.end());
    sorted_nursery_stale_ = false;
  }
  return sorted_nursery_chunks_;
}

void ThreadHeap::PromoteNurseryChunk(char* chunk, uint16_t owner) {
  auto it = std::find(nursery_chunks_.begin(), nursery_chunks_.end(), chunk);
  if (it == nursery_chunks_.end()) return;
  const size_t pos = static_cast<size_t>(it - nursery_chunks_.begin());
  PageSpace::Get().SetChunkKind(chunk, ChunkKind::kOld);
  ChunkInfoOf(chunk).owner = 0;
  char* replacement = PageSpace::Get().AcquireChunk(ChunkKind::kNursery, owner);
  sorted_nursery_stale_ = true;
  if (replacement != nullptr) {
    *it = replacement;
  } else {
    nursery_chunks_.erase(it);
    if (nursery_index_ > pos || nursery_index_ >= nursery_chunks_.size()) {
      nursery_index_ = nursery_index_ > 0 ? nursery_index_ - 1 : 0;
    }
  }
}

void ThreadHeap::ReleaseNursery() {
  ForgetSlotsIntoNursery();  // while the chunks are still this nursery's
  for (char* chunk : nursery_chunks_) PageSpace::Get().ReleaseChunk(chunk);
  nursery_chunks_.clear();
  sorted_nursery_stale_ = true;
  nursery_ = BumpRegion();
  nursery_index_ = 0;
  old_.Retire();
  DropOldRegion();
}

// The chunk's live bytes (ChunkInfo::live_bytes, measured by the last major collection) grow by the
// whole hole about to be filled: the next major collection chooses its candidates by them, and a chunk
// whose holes were filled is no longer as sparse as it was measured. Counting the whole hole is an upper
// bound (what is left of it becomes filler), so a filled chunk is never evacuated for holes it no
// longer has.
void ThreadHeap::CountHoleAsLive(size_t bytes) {
  ChunkInfo& info = ChunkInfoOf(hole_chunk_);
  if (info.live_bytes != kNoLiveStats) info.live_bytes += static_cast<uint32_t>(bytes);
}

bool ThreadHeap::NextHole(size_t size) {
  char* chunk_end = hole_chunk_ + kChunkSize;
  char* fringe = ChunkInfoOf(hole_chunk_).fringe;
  while (hole_scan_ < fringe) {
    char* p = hole_scan_;
    const size_t n = SizeAt(p);
    hole_scan_ += n;
    // Any filler the object fits: the sweep of a chunk marked in place leaves holes of one dead object,
    // which an object of the same size fills exactly (refusing holes under 64 bytes left a heap of
    // 48-byte nodes at 1.6 times its live data, MarkRegionMemoryTest).
    if (IsFiller(p) && n >= size) {
      old_.cursor = p;
      old_.limit = p + n;
      old_.to_chunk_end = false;
      CountHoleAsLive(n);
      return true;
    }
  }
  if (hole_scan_ == fringe && static_cast<size_t>(chunk_end - fringe) >= size) {
    CountHoleAsLive(static_cast<size_t>(chunk_end - fringe));
    hole_scan_ = chunk_end;
    old_.cursor = fringe;
    old_.limit = chunk_end;
    old_.to_chunk_end = true;
    return true;
  }
  hole_chunk_ = nullptr;
  return false;
}

char* ThreadHeap::AllocateOldSlow(size_t size, uint16_t owner) {
  old_.Retire();
  for (;;) {
    if (hole_chunk_ != nullptr && NextHole(size)) break;
    if (char* chunk = PageSpace::Get().TakeHoleChunk(owner)) {
      hole_chunk_ = chunk;
      hole_scan_ = chunk;
      continue;
    }
    char* chunk = PageSpace::Get().AcquireChunk(ChunkKind::kOld, owner);
    if (chunk == nullptr) return nullptr;
    old_.cursor = chunk;
    old_.limit = chunk + kChunkSize;
    old_.to_chunk_end = true;
    break;
  }
  char* p = old_.cursor;
  old_.cursor += size;
  return p;
}

}  // namespace revkv::runtime
