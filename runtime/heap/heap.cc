// Start-up, allocation and inspection of the heap (heap.h sections 6-8).
#include "runtime/heap/heap.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "absl/strings/str_format.h"
#include "runtime/gc/collector.h"
#include "runtime/heap/object_format.h"
#include "runtime/heap/object_starts.h"
#include "runtime/heap/page_space.h"
#include "runtime/port/diagnostics.h"
#include "runtime/safepoint/safepoint.h"
#include "runtime/safepoint/thread_context.h"

namespace revkv::runtime {

namespace {
HeapOptions g_options;
std::once_flag g_init_once;

ThreadContext* RequireThread() {
  ThreadContext* self = CurrentThread();
  if (self == nullptr) {
    port::Fatal("revkv runtime: allocation on an unregistered thread");
  }
  return self;
}

Object* InitObject(char* p, TypeId type, size_t size) {
  HeaderAccess::Init(p, type, static_cast<uint32_t>(size));
  std::memset(p + sizeof(Object), 0, size - sizeof(Object));
  return reinterpret_cast<Object*>(p);
}

absl::Status Exhausted(size_t size) {
  const HeapUsage u = PageSpace::Get().Usage();
  return absl::ResourceExhaustedError(absl::StrFormat(
      "heap exhausted: cannot allocate %u bytes (in use %u of a %u-byte maximum after a full collection)",
      size, u.nursery_bytes + u.old_bytes + u.large_bytes, u.max_bytes));
}
}  // namespace

const HeapOptions& InitializeRuntime(const HeapOptions& options) {
  std::call_once(g_init_once, [&] {
    g_options = options;
    PageSpace::Get().Configure(options);
    InitHeapVerification();
    (void)DescribeType(kBytesTypeId);  // registers the built-in types
  });
  return g_options;
}

const HeapOptions& RuntimeOptions() { return g_options; }

void SetMaxHeapBytes(size_t bytes) {
  InitializeRuntime();
  PageSpace::Get().SetMaxBytes(bytes);
}

void SetPageRetention(size_t retained_free_pages, bool retain_evacuation_reserve) {
  InitializeRuntime();
  PageSpace::Get().SetPageRetention(retained_free_pages, retain_evacuation_reserve);
}

absl::StatusOr<Object*> Allocate(TypeId type, size_t size) {
  if (size > kMaxObjectSize) {  // before aligning: a size near SIZE_MAX would wrap
    return absl::InvalidArgumentError(absl::StrFormat(
        "object of %u bytes exceeds the heap's largest object (%u bytes)", size, kMaxObjectSize));
  }
  size = AlignObjectSize(std::max(size, kMinObjectSize));
  ThreadContext* self = RequireThread();
#ifdef REVKV_DEBUG_CHECKS
  internal::CheckNoCommitLocks("an allocation");
  internal::CheckHeapAccess("an allocation");
#endif
  if (size <= kLargeObjectThreshold) {
    char* p = self->heap.TryBumpNursery(size);
    if (p == nullptr) [[unlikely]] {
      p = AllocateSmallSlow(self, size);
      if (p == nullptr) return Exhausted(size);
    }
    NoteObjectStart(p);
    return InitObject(p, type, size);
  }
  if (size > kMaxObjectSize) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "object of %u bytes exceeds the heap's largest object (%u bytes)", size, kMaxObjectSize));
  }
  char* p = AllocateLargeSlow(self, size);
  if (p == nullptr) return Exhausted(size);
  g_bytes_allocated.fetch_add(size, std::memory_order_relaxed);
  return InitObject(p, type, size);
}

absl::StatusOr<Bytes*> NewBytes(std::string_view data) {
  absl::StatusOr<Object*> o = Allocate(kBytesTypeId, sizeof(Bytes) + data.size());
  if (!o.ok()) return o.status();
  auto* b = static_cast<Bytes*>(*o);
  HeaderAccess::SetBytesLength(b, data.size());
  if (!data.empty()) std::memcpy(b->mutable_data(), data.data(), data.size());
  return b;
}

HeapUsage GetHeapUsage() { return PageSpace::Get().Usage(); }

bool IsHeapAddress(const void* p) { return PageSpace::Get().Contains(p); }

namespace {
// Relaxed: a switch for benchmarks and tests, flipped while no collection runs.
std::atomic<bool> g_use_object_starts{true};
}  // namespace

void SetObjectStartMapResolution(bool on) { g_use_object_starts.store(on, std::memory_order_relaxed); }

AmbiguousReferents FindReferentsInChunk(char* chunk, char* fringe, uintptr_t word) {
  if (g_use_object_starts.load(std::memory_order_relaxed)) [[likely]] {
    return ReferentsFromObjectStarts(chunk, fringe, word);
  }
  return ParseReferentsInChunk(chunk, fringe, word);
}

AmbiguousReferents ParseReferentsInChunk(char* chunk, char* fringe, uintptr_t word) {
  char* p = chunk;
  char* previous = nullptr;  // the object or filler that ends at p
  auto object = [](char* o) { return o == nullptr || IsFiller(o) ? nullptr : reinterpret_cast<Object*>(o); };
  while (p < fringe) {
    const uint32_t n = SizeAt(p);
    if (n == 0) return {nullptr, nullptr};  // unparseable: never expected; treat as "no object"
    if (word < reinterpret_cast<uintptr_t>(p) + n) {
      return {object(p), word == reinterpret_cast<uintptr_t>(p) ? object(previous) : nullptr};
    }
    previous = p;
    p += n;
  }
  // At or past the fringe: only the fringe itself is the end of an object (the chunk's last).
  return {nullptr, word == reinterpret_cast<uintptr_t>(p) ? object(previous) : nullptr};
}

Object* FindObjectInChunk(char* chunk, char* fringe, uintptr_t word) {
  return FindReferentsInChunk(chunk, fringe, word).into;
}

namespace {
// Both referents of `word` found inside its own chunk (or large run); an object that ends exactly at
// the chunk's end, and so at `word` when `word` starts the next chunk, is the caller's to find.
AmbiguousReferents ResolveInChunk(uintptr_t word) {
  const void* addr = reinterpret_cast<const void*>(word);
  if (!PageSpace::Get().Contains(addr)) return {nullptr, nullptr};
  PageHeader* page = PageOf(addr);
  const size_t index = ChunkIndexOf(addr);
  if (index == 0 || !page->in_use) return {nullptr, nullptr};
  switch (page->chunk_kind[index].load(std::memory_order_relaxed)) {
    case ChunkKind::kFree:
    case ChunkKind::kHeader:
      return {nullptr, nullptr};
    case ChunkKind::kLargeHead:
    case ChunkKind::kLargeTail: {
      const size_t head = page->chunk_kind[index].load(std::memory_order_relaxed) == ChunkKind::kLargeHead
                              ? index
                              : page->chunk[index].run_chunks;
      auto* o = reinterpret_cast<Object*>(page->ChunkStart(head));
      const uintptr_t end = reinterpret_cast<uintptr_t>(o) + o->size();
      if (word < end) return {o, nullptr};
      return {nullptr, word == end ? o : nullptr};
    }
    case ChunkKind::kNursery: {
      // The calling thread's current nursery chunk ends at its cursor, not at its published fringe.
      char* chunk = page->ChunkStart(index);
      ThreadContext* self = CurrentThread();
      char* fringe = self != nullptr && self->heap.CurrentNurseryChunk() == chunk
                         ? self->heap.nursery_cursor()
                         : page->chunk[index].fringe;
      return FindReferentsInChunk(chunk, fringe, word);
    }
    case ChunkKind::kOld:
      return FindReferentsInChunk(page->ChunkStart(index), page->chunk[index].fringe, word);
  }
  return {nullptr, nullptr};
}
}  // namespace

Object* ResolveAmbiguousWord(uintptr_t word) { return ResolveInChunk(word).into; }

AmbiguousReferents ResolveAmbiguousReferents(uintptr_t word) {
  AmbiguousReferents r = ResolveInChunk(word);
  // A word at a chunk boundary is also one past the end of the previous chunk's last object, when
  // that object fills its chunk (or its large run) to the end.
  if (r.ending == nullptr && (word & (kChunkSize - 1)) == 0 && word != 0) {
    Object* before = ResolveInChunk(word - 1).into;
    if (before != nullptr && reinterpret_cast<uintptr_t>(before) + before->size() == word) r.ending = before;
  }
  return r;
}

namespace internal {
void RememberSlot(std::atomic<Object*>* slot) {
#ifdef REVKV_MUTATION_NO_WRITE_BARRIER
  return;  // mutation test: the write barrier forgets old-to-young slots
#endif
  std::vector<std::atomic<Object*>*>& set = RequireThread()->heap.remembered();
  if (!set.empty() && set.back() == slot) return;  // the common case of a slot written in a loop
  set.push_back(slot);
  if (set.size() >= (size_t{1} << 20) && (set.size() & (set.size() - 1)) == 0) {
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
  }
}
}  // namespace internal

}  // namespace revkv::runtime
