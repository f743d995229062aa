// The heap verifier (DESIGN 2.2 "Self-checks"): after a collection, checks the invariants every later
// collection relies on, and aborts the process with a message naming the object and the slot when one
// is broken. On in test and sanitizer builds (REVKV_DEBUG_CHECKS) and wherever REVKV_VERIFY_HEAP=1 is
// in the environment when the runtime starts; off otherwise, since it costs about as much as the
// collection it checks.
//
//  - After a major collection (world stopped) it walks every object of the heap: every old and
//    nursery chunk parsed to its fringe and every large object. After that collection the heap holds
//    no garbage outside the nurseries (condemned chunks were freed or reduced to their pinned objects,
//    unmarked large objects freed) and nursery objects were all scanned in place, so this is every
//    reachable object, conservatively. For each: no collector flag is left (kForwarded, kPinned,
//    kMarked, kCopying); h_revision is not a lock value and, if it is a pointer, points at an object start;
//    every non-null reference slot points at an object start; a slot outside a nursery that points
//    into one is in the remembered set of that nursery's owner.
//  - After a minor or local collection (thread-local; other threads run) it checks the collection's
//    survivors only: none of their slots may point into the nursery just emptied (the remembered set is
//    empty now, so such a slot would be an unremembered old-to-nursery pointer, and dangling), and no
//    h_revision is a lock value.
//  - Mark-region (runtime/heap/mark_bits.h): after a major collection, the mark bits of every old chunk
//    equal its object starts (every object left in an old chunk was marked, pinned or copied by this
//    collection: no dead object was left unswept), a chunk of any other kind has no mark bit, and an
//    old chunk's live bytes (the next collection's measure) are the bytes of the objects it holds.
//  - The object-start map (runtime/heap/object_starts.h) agrees with a linear parse: after a major
//    collection in every chunk of every small-object page (CheckObjectStartMaps); after a minor or local
//    collection in the chunks it promoted in place, in the emptied nursery (no bit left) and at every
//    survivor's start.
//  - Global objects are immutable (seed 000): once a local collection has made an object global, only
//    its header (flags, h_revision) and its reference slots (the container fix-ups the seed allows)
//    may change, and a versioned object's commit time is written once, at its commit. The verifier
//    samples every 8th object a local collection makes global (up to 4 KiB each, 64 at a time) with a
//    checksum of the rest of its bytes; each write commit re-checks one sample in turn, and a major
//    collection re-checks all of them while the world is stopped, before anything moves, and then
//    forgets them. The table holds raw pointers outside the heap, which the collector neither traces
//    nor updates: that is sound only because no global object moves or is freed except by a major
//    collection, and the table is emptied at its start.
#include <algorithm>
#include <atomic>
#include <bitset>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "runtime/gc/collector.h"
#include "runtime/heap/mark_bits.h"
#include "runtime/heap/object_format.h"
#include "runtime/heap/object_starts.h"
#include "runtime/heap/page_space.h"
#include "runtime/port/diagnostics.h"
#include "runtime/safepoint/thread_context.h"

namespace revkv::runtime {

namespace {
// Written once by InitializeRuntime (under its once flag), read by collections afterwards: relaxed
// suffices, since every thread that collects has registered, which happens after start-up, and the
// registry mutex orders the two.
std::atomic<bool> g_verify_heap{false};

[[noreturn]] void Fail(const char* what, const void* object, const void* slot, uintptr_t value) {
  port::Fatal("revkv heap verifier: %s (object %p, type %u, slot %p, value 0x%zx)", what, object,
              object != nullptr ? static_cast<const Object*>(object)->type() : 0u, slot,
              static_cast<size_t>(value));
}

// A skip hint names a newer global revision of the same object (an object start), on a revision that
// has a newer one (a head has none).
template <class IsStart>
void CheckSkipHint(VersionedObject* o, const IsStart& is_start) {
  // Acquire: the verifier runs with the world stopped, but this keeps the check sound anywhere.
  Object* hint = o->h_newest.load(std::memory_order_acquire);
  if (hint == nullptr) return;
  const auto value = reinterpret_cast<uintptr_t>(hint);
  if (!IsRevisionPointer(o->h_revision.load(std::memory_order_relaxed))) {
    Fail("a head has a skip hint", o, &o->h_newest, value);
  }
  if (!is_start(value)) Fail("a skip hint points at no object start", o, &o->h_newest, value);
  if (hint->type() != o->type() || !hint->HasFlag(kGlobal)) {
    Fail("a skip hint names a local object or one of another type", o, &o->h_newest, value);
  }
  if (static_cast<VersionedObject*>(hint)->h_commit_time.load(std::memory_order_relaxed) <=
      o->h_commit_time.load(std::memory_order_relaxed)) {
    Fail("a skip hint names a revision no newer than its own", o, &o->h_newest, value);
  }
}

void CheckHeader(const Object* o) {
  if (o->flags() & (kForwarded | kPinned | kMarked | kCopying)) {
    Fail("a collector flag survived the collection", o, nullptr, o->flags());
  }
  if (IsLockValue(o->h_revision.load(std::memory_order_relaxed))) {
    Fail("locked header after a collection", o, &o->h_revision,
         o->h_revision.load(std::memory_order_relaxed));
  }
}

template <class F>
void ForEachObjectInChunk(char* chunk, char* fringe, F&& f) {
  for (char* p = chunk; p < fringe;) {
    const uint32_t n = SizeAt(p);
    if (n == 0 || p + n > chunk + kChunkSize) Fail("unparseable chunk", p, chunk, n);
    if (!IsFiller(p)) f(reinterpret_cast<Object*>(p));
    p += n;
  }
}
// "" if the object-start map of the chunk at `chunk` (parseable up to `fringe`) notes exactly the
// objects a linear parse finds there, else what differs. A free chunk passes `fringe == chunk`.
std::string CheckChunkObjectStarts(char* chunk, char* fringe) {
  uint64_t expected[kStartWordsPerChunk] = {};
  for (char* p = chunk; p < fringe;) {
    const uint32_t n = SizeAt(p);
    if (n == 0 || p + n > chunk + kChunkSize) {
      return absl::StrFormat("chunk %p is unparseable at %p (size %u)", chunk, p, n);
    }
    if (!IsFiller(p)) {
      const size_t bit = static_cast<size_t>(p - chunk) / kObjectAlignment;
      expected[bit / 64] |= uint64_t{1} << (bit % 64);
    }
    p += n;
  }
  const uint64_t* words = ChunkStartWords(chunk);
  for (size_t w = 0; w < kStartWordsPerChunk; ++w) {
    if (words[w] == expected[w]) continue;
    const uint64_t diff = words[w] ^ expected[w];
    const size_t bit = w * 64 + static_cast<size_t>(__builtin_ctzll(diff));
    const void* at = chunk + bit * kObjectAlignment;
    return absl::StrFormat(
        "object-start map of chunk %p (kind %d, fringe %p) %s %p", chunk,
        static_cast<int>(ChunkKindOf(chunk)), fringe,
        (words[w] >> (bit % 64)) & 1 ? "notes a start where no object starts, at" : "misses the object at",
        at);
  }
  return "";
}
}  // namespace

std::string CheckObjectStartMaps() {
  if (ThreadContext* self = CurrentThread(); self != nullptr) self->heap.RetireRegions();
  for (PageHeader* page : PageSpace::Get().SmallPages()) {
    for (size_t i = 1; i < kChunksPerPage; ++i) {
      const ChunkKind kind = page->chunk_kind[i].load(std::memory_order_relaxed);
      char* chunk = page->ChunkStart(i);
      const bool holds_objects = kind == ChunkKind::kOld || kind == ChunkKind::kNursery;
      std::string error = CheckChunkObjectStarts(chunk, holds_objects ? page->chunk[i].fringe : chunk);
      if (!error.empty()) return error;
    }
  }
  return "";
}

void InitHeapVerification() {
#ifdef REVKV_DEBUG_CHECKS
  bool on = true;
#else
  bool on = false;
#endif
  if (const char* env = std::getenv("REVKV_VERIFY_HEAP"); env != nullptr) on = std::strcmp(env, "0") != 0;
  g_verify_heap.store(on, std::memory_order_relaxed);
}

bool HeapVerificationEnabled() { return g_verify_heap.load(std::memory_order_relaxed); }

namespace {
// The mark-region invariants after a major collection (file comment); run after CheckObjectStartMaps,
// so an old chunk's starts are its parsed objects.
void CheckMarkRegion() {
  for (PageHeader* page : PageSpace::Get().SmallPages()) {
    for (size_t i = 1; i < kChunksPerPage; ++i) {
      char* chunk = page->ChunkStart(i);
      const uint64_t* marks = ChunkMarkWords(chunk);
      if (page->chunk_kind[i].load(std::memory_order_relaxed) != ChunkKind::kOld) {
        if (ChunkHasMarks(chunk)) Fail("a chunk that is not old has mark bits", nullptr, chunk, 0);
        continue;
      }
      const uint64_t* starts = ChunkStartWords(chunk);
      for (size_t w = 0; w < kStartWordsPerChunk; ++w) {
        if (marks[w] == starts[w]) continue;
        const uint64_t diff = marks[w] ^ starts[w];
        const size_t bit = w * 64 + static_cast<size_t>(__builtin_ctzll(diff));
        char* at = chunk + bit * kObjectAlignment;
        Fail((starts[w] >> (bit % 64)) & 1 ? "an unmarked object is left in an old chunk after the sweep"
                                           : "a mark bit where no object starts",
             at, chunk, 0);
      }
      size_t bytes = 0;
      ForEachObjectInChunk(chunk, page->chunk[i].fringe, [&](Object* o) { bytes += o->size(); });
      if (page->chunk[i].live_bytes != bytes) {
        Fail("an old chunk's live bytes are not the bytes of its objects", nullptr, chunk,
             page->chunk[i].live_bytes);
      }
    }
  }
}
}  // namespace

void VerifyHeapAfterMajorCollection(const std::vector<ThreadContext*>& threads) {
  PageSpace& space = PageSpace::Get();
  // Kept between collections (the world is stopped and collections are serialized, so one user at a
  // time): the memory is faulted in once, not at every collection whose page faults tests count.
  static std::vector<Object*>& objects = *new std::vector<Object*>();
  static std::vector<const std::atomic<Object*>*>& remembered =
      *new std::vector<const std::atomic<Object*>*>();
  objects.clear();
  remembered.clear();
  for (PageHeader* page : space.SmallPages()) {
    for (size_t i = 1; i < kChunksPerPage; ++i) {
      const ChunkKind kind = page->chunk_kind[i].load(std::memory_order_relaxed);
      if (kind != ChunkKind::kOld && kind != ChunkKind::kNursery) continue;
      ForEachObjectInChunk(page->ChunkStart(i), page->chunk[i].fringe,
                           [&](Object* o) { objects.push_back(o); });
    }
  }
  for (PageHeader* page : space.LargePages()) {
    for (size_t i = 1; i < kChunksPerPage; ++i) {
      if (page->chunk_kind[i].load(std::memory_order_relaxed) == ChunkKind::kLargeHead) {
        objects.push_back(reinterpret_cast<Object*>(page->ChunkStart(i)));
      }
    }
  }
  if (const std::string error = CheckObjectStartMaps(); !error.empty()) {
    Fail(error.c_str(), nullptr, nullptr, 0);
  }
  CheckMarkRegion();
  std::sort(objects.begin(), objects.end());  // the set of object starts, for binary search
  for (ThreadContext* t : threads) {
    remembered.insert(remembered.end(), t->heap.remembered().begin(), t->heap.remembered().end());
  }
  std::sort(remembered.begin(), remembered.end());
  auto is_start = [&](uintptr_t v) {
    return std::binary_search(objects.begin(), objects.end(), reinterpret_cast<Object*>(v));
  };
  for (Object* o : objects) {
    CheckHeader(o);
    const uintptr_t h = o->h_revision.load(std::memory_order_relaxed);
    if (IsRevisionPointer(h) && h != 0 && !is_start(h)) {
      Fail("h_revision points at no object start", o, &o->h_revision, h);
    }
    if (LayoutOf(o->type()).versioned && o->HasFlag(kGlobal))
      CheckSkipHint(static_cast<VersionedObject*>(o), is_start);
    const bool in_nursery = ChunkKindOf(o) == ChunkKind::kNursery;
    ForEachReferenceSlot(o, [&](std::atomic<Object*>* slot) {
      Object* v = slot->load(std::memory_order_relaxed);
      if (v == nullptr) return;
      const auto value = reinterpret_cast<uintptr_t>(v);
      if (!is_start(value)) Fail("a slot points at no object start", o, slot, value);
      if (!in_nursery && ChunkKindOf(v) == ChunkKind::kNursery &&
          !std::binary_search(remembered.begin(), remembered.end(), slot)) {
        Fail("an old-to-nursery slot is not remembered", o, slot, value);
      }
    });
  }
}

void VerifySurvivorsOfNurseryCollection(ThreadContext* self, const std::vector<Object*>& survivors,
                                        const std::vector<char*>& promoted_chunks) {
  const std::vector<char*>& nursery = self->heap.SortedNurseryChunks();
  self->heap.RetireRegions();  // what the next collection does first; makes every chunk of ours parse
  for (char* chunk : nursery) {
    if (std::string error = CheckChunkObjectStarts(chunk, chunk); !error.empty()) {
      Fail(error.c_str(), nullptr, chunk, 0);
    }
  }
  for (char* chunk : promoted_chunks) {
    if (std::string error = CheckChunkObjectStarts(chunk, ChunkInfoOf(chunk).fringe); !error.empty()) {
      Fail(error.c_str(), nullptr, chunk, 0);
    }
  }
  auto in_nursery = [&](const void* p) {
    return ChunkKindOf(p) == ChunkKind::kNursery &&
           std::binary_search(nursery.begin(), nursery.end(), ChunkBaseOf(p));
  };
  for (Object* o : survivors) {
    if (IsLockValue(o->h_revision.load(std::memory_order_relaxed))) {
      Fail("locked header after a collection", o, &o->h_revision,
           o->h_revision.load(std::memory_order_relaxed));
    }
    if (in_nursery(o)) Fail("a survivor is still in the emptied nursery", o, nullptr, 0);
    const ChunkKind kind = ChunkKindOf(o);
    if (kind != ChunkKind::kLargeHead && !IsNotedObjectStart(o)) {
      Fail("a survivor's start is missing from the object-start map", o, nullptr, 0);
    }
    ForEachReferenceSlot(o, [&](std::atomic<Object*>* slot) {
      Object* v = slot->load(std::memory_order_relaxed);
      if (v != nullptr && in_nursery(v)) {
        Fail("a survivor points into the emptied nursery", o, slot, reinterpret_cast<uintptr_t>(v));
      }
    });
  }
}

// ----- Immutability of global objects (sampled; see the top of this file) -----

namespace {
constexpr size_t kImmutabilitySamples = 64;
constexpr uint32_t kSampleEvery = 8;
constexpr uint32_t kMaxSampledBytes = 4096;

struct ImmutabilitySample {
  const Object* object = nullptr;
  uint64_t checksum = 0;
};

struct ImmutabilitySamples {
  std::mutex mu;                                     // never held across a poll, a block or an allocation
  ImmutabilitySample samples[kImmutabilitySamples];  // guarded by mu
  size_t count = 0;                                  // guarded by mu
  size_t next_slot = 0;                              // guarded by mu
  size_t next_check = 0;                             // guarded by mu
  // Objects offered since start; relaxed: only picks which ones are sampled.
  std::atomic<uint32_t> offered{0};
};

ImmutabilitySamples& Samples() {
  static ImmutabilitySamples& s = *new ImmutabilitySamples();
  return s;
}

// FNV-1a over the object's words past its header (and a versioned object's commit time), skipping
// its reference slots.
uint64_t PayloadChecksum(const Object* o) {
  std::bitset<kMaxSampledBytes / sizeof(uintptr_t)> refs;
  ForEachReferenceSlot(const_cast<Object*>(o), [&](std::atomic<Object*>* slot) {
    refs.set((reinterpret_cast<const char*>(slot) - reinterpret_cast<const char*>(o)) / sizeof(uintptr_t));
  });
  const size_t first = (LayoutOf(o->type()).versioned ? sizeof(VersionedObject) : sizeof(Object));
  const char* base = reinterpret_cast<const char*>(o);
  uint64_t h = 1469598103934665603ull;
  for (size_t off = first; off + sizeof(uintptr_t) <= o->size(); off += sizeof(uintptr_t)) {
    if (refs.test(off / sizeof(uintptr_t))) continue;
    uintptr_t word;
    std::memcpy(&word, base + off, sizeof word);
    h = (h ^ word) * 1099511628211ull;
  }
  return h;
}

void CheckSampleLocked(const ImmutabilitySample& sample) {
  const uint64_t now = PayloadChecksum(sample.object);
  if (now != sample.checksum) {
    Fail("a global object's bytes changed after it was published", sample.object, nullptr, now);
  }
}
}  // namespace

void SampleGlobalObjects(const std::vector<Object*>& published) {
  if (!HeapVerificationEnabled()) return;
  ImmutabilitySamples& s = Samples();
  for (Object* o : published) {
    if (s.offered.fetch_add(1, std::memory_order_relaxed) % kSampleEvery != 0) continue;
    if (!o->HasFlag(kGlobal) || o->size() > kMaxSampledBytes) continue;
    const uint64_t checksum = PayloadChecksum(o);
    std::lock_guard<std::mutex> lock(s.mu);
    s.samples[s.next_slot] = ImmutabilitySample{o, checksum};
    s.next_slot = (s.next_slot + 1) % kImmutabilitySamples;
    s.count = std::min(s.count + 1, kImmutabilitySamples);
  }
}

void CheckOneGlobalObjectSample() {
  if (!HeapVerificationEnabled()) return;
  ImmutabilitySamples& s = Samples();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.count == 0) return;
  s.next_check = (s.next_check + 1) % s.count;
  CheckSampleLocked(s.samples[s.next_check]);
}

void CheckAndForgetGlobalObjectSamples() {
  if (!HeapVerificationEnabled()) return;
  ImmutabilitySamples& s = Samples();
  std::lock_guard<std::mutex> lock(s.mu);
  for (size_t i = 0; i < s.count; ++i) CheckSampleLocked(s.samples[i]);
  s.count = 0;
  s.next_slot = 0;
  s.next_check = 0;
}

}  // namespace revkv::runtime
