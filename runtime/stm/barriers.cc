// Seed 000's read and write barriers: Allocate, LatestGlobalRevision with PossiblyUpdateChain,
// DirectReadBarrier, RepeatReadBarrier, Localize, WriteBarrier, WriteBarrierFromReadReady,
// AddInReadSet with auto-localization, ReadGlobalToLocal with the container fix-up.
//
// Departures from the seed's pseudo-code (docs/runtime-stm.md lists them all):
//  - The fast path of DirectReadBarrier also checks the head's time: a reference reached through a
//    compressed chain or a collapsed field may name a revision newer than the start time, and a
//    read-only transaction commits without validation, so such a read must go the slow way.
//  - PossiblyUpdateChain runs only in a transaction that has written (a read-only one writes no shared
//    memory), and compresses with compare-and-swap, hop by hop, only while the value it
//    replaces is a pointer to an older revision than the target, and only to a target whose commit time
//    is at most the snapshot horizon; it stops at the first odd h_revision (a head or a lock). Besides
//    the seed's "rarely", it always compresses after a walk of two hops or more, or of one hop from a
//    field.
//  - Localize copies the body word by word with relaxed atomic loads: a concurrent container fix-up
//    may store into a global object's reference field while we copy it (seed 000's benign race).
//  - Skip hints (VersionedObject::h_newest, an addition to the seed): while history is retained the
//    horizon keeps references on old revisions, so a walk to the newest revision would follow every
//    retained revision. LatestGlobalRevision and SnapshotRead jump along a revision's hint when it has
//    one, and a writer's walk moves the hints of where it started (and of its compression target)
//    forward to the newest revision it passed that is at most the skip horizon (SetSkipHorizon).
#include <cstring>
#include <thread>

#include "runtime/gc/collector.h"
#include "runtime/heap/object_format.h"
#include "runtime/port/port.h"
#include "runtime/safepoint/safepoint.h"
#include "runtime/stm/descriptor.h"
#include "runtime/stm/test_hooks.h"

namespace revkv::runtime::stm {

namespace {
thread_local TxDescriptor* t_desc = nullptr;

#ifdef REVKV_TEST_HOOKS
std::atomic<testing::CompressionHook> g_compression_hook{nullptr};
// Between a compressor's load of a link and its store (test_hooks.h). Relaxed: the hook is installed
// before the threads that call it start and removed after they are joined.
void BeforeCompressionStore(const Object* link, uintptr_t loaded, const Object* target) {
  if (testing::CompressionHook hook = g_compression_hook.load(std::memory_order_relaxed)) {
    hook(link, loaded, target);
  }
}
#else
inline void BeforeCompressionStore(const Object*, uintptr_t, const Object*) {}
#endif

uint64_t CommitTimeOf(Object* o) {
  return static_cast<VersionedObject*>(o)->h_commit_time.load(std::memory_order_relaxed);
}

// Moves `x`'s skip hint forward to `s`, a newer revision on x's chain reached by the caller's walk, unless
// it already names one at least as new. Release on success publishes s (whose header, body and commit
// time the caller saw through its acquire loads of the chain) to readers that load the hint with
// acquire. The loads of the hint, the failure order included, are acquire: we read the commit time of
// the revision found there, which another writer's release published.
void AdvanceSkipHint(TxDescriptor* d, Object* x, Object* s) {
#ifdef REVKV_MUTATION_NO_SKIP_HINTS
  return;  // mutation switch (commit.cc lists them): no hint is ever set
#endif
  auto& hint = static_cast<VersionedObject*>(x)->h_newest;
  const uint64_t s_time = CommitTimeOf(s);
  Object* h = hint.load(std::memory_order_acquire);
  while (h == nullptr || CommitTimeOf(h) < s_time) {
    if (hint.compare_exchange_weak(h, s, std::memory_order_acq_rel, std::memory_order_acquire)) {
      d->counters.skip_hints_set.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
}

// A reader waiting for a header lock: the holder is running and will release it soon (it never blocks
// while holding header locks). We hold none, so we may stop for a collection.
void WaitForLockHolder(int& spins) {
  if (++spins < 64) {
    port::CpuRelax();
  } else {
    Poll();
    std::this_thread::yield();
  }
}

// seed 000 AddInReadSet.
Object* AddInReadSet(TxDescriptor* d, Object* r) {
  TxDescriptor::RecentRead& e = d->recent_reads_cache[TxDescriptor::HashSlot(r)];
  if (e.object != r) {
    d->list_of_read_objects.push_back(r);
    e = TxDescriptor::RecentRead{r, 1};
    return r;
  }
  if (++e.count < kLocalizeThreshold) return r;
  if (e.count == kLocalizeThreshold) d->counters.auto_localizations.fetch_add(1, std::memory_order_relaxed);
  return Localize(d, r);
}

// seed 000 ReadGlobalToLocal: `l` is global_to_local[r]; a local container's field is fixed in place.
Object* ReadGlobalToLocal(Object* l, Object* container, std::atomic<Object*>* slot) {
  if (container != nullptr && !container->HasFlag(kGlobal)) {
    slot->store(l, std::memory_order_relaxed);
    if (IsInNursery(l) && !IsInNursery(slot)) revkv::runtime::internal::RememberSlot(slot);
  }
  return l;
}

// seed 000 PossiblyUpdateChain, with the compare-and-swap discipline of DESIGN 2.3. "Rarely" is the
// seed's thread-local counter, except that a walk of more than kLongWalk hops always compresses, and so
// does a walk of one hop from a field (the fix-up of the field alone then makes the next read hop-free):
// the seed's worry is write traffic on shared headers, but every hop is a likely cache miss for every
// later reader, and this costs about one CAS per write to the object (docs/benchmarks.md: with walks of
// up to 8 hops, revkv-bench-stm's write1 spent half its time walking chains).
// The target is the newest revision on the walked path whose commit time is at most the snapshot
// horizon (which may be older than r when a snapshot is live).
constexpr int kLongWalk = 1;
// `stable` is the newest revision the walk passed (r included) whose commit time is at most the skip
// horizon, or g.
void PossiblyUpdateChain(TxDescriptor* d, Object* g, Object* r, int hops, std::atomic<Object*>* slot,
                         Object* stable) {
  if (r == g) return;
  // A transaction that has not written may commit read-only, and then it must have written no shared
  // memory (DESIGN 2.3): compression is the writers' job (and the major collector's).
  if (!d->will_write) return;
  // One hop from a field: fixing the field alone makes the next read hop-free.
  const bool long_walk = hops > kLongWalk || slot != nullptr;
  if (!long_walk && (++d->rarely_counter % kRarelyPeriod) != 0) return;
  if (!LayoutOf(r->type()).versioned) return;
  const uint64_t horizon = SnapshotHorizon();
  Object* target = g;
  for (Object* cur = g; cur != r;) {
    const uintptr_t v = cur->h_revision.load(std::memory_order_acquire);
    if (!IsRevisionPointer(v)) break;
    cur = reinterpret_cast<Object*>(v);
    if (CommitTimeOf(cur) > horizon) break;
    target = cur;
  }
  // The hints may go further than the horizon: a reader older than a hint's revision ignores it.
  if (stable != g) {
    AdvanceSkipHint(d, g, stable);
    if (target != g && CommitTimeOf(stable) > CommitTimeOf(target)) AdvanceSkipHint(d, target, stable);
  }
  if (target == g) return;  // a live snapshot may still need every revision we would skip
#ifdef REVKV_MUTATION_BLIND_COMPRESSION
  // Mutation switch (commit.cc lists them): seed 000's blind loop, without the CAS discipline.
  for (Object* cur = g; cur != target;) {
    const uintptr_t next = cur->h_revision.load(std::memory_order_acquire);
    BeforeCompressionStore(cur, next, target);
    cur->h_revision.store(reinterpret_cast<uintptr_t>(target), std::memory_order_release);
    d->counters.chains_compressed.fetch_add(1, std::memory_order_relaxed);
    cur = reinterpret_cast<Object*>(next);
  }
#else
  const uint64_t target_time = CommitTimeOf(target);
  Object* cur = g;
  while (cur != target) {
    uintptr_t next = cur->h_revision.load(std::memory_order_acquire);
    if (!IsRevisionPointer(next)) break;  // a head or a lock: not ours to touch
    auto* next_obj = reinterpret_cast<Object*>(next);
    if (next_obj != target) {
      if (CommitTimeOf(next_obj) >= target_time) break;  // already points at least as far
      BeforeCompressionStore(cur, next, target);
      if (!cur->h_revision.compare_exchange_strong(next, reinterpret_cast<uintptr_t>(target),
                                                   std::memory_order_acq_rel, std::memory_order_relaxed)) {
        break;  // someone else moved it: leave the rest to them
      }
      d->counters.chains_compressed.fetch_add(1, std::memory_order_relaxed);
    }
    cur = next_obj;
  }
#endif
  // The container's field, if it still holds g, now names the target directly. Relaxed: a fix-up is
  // only an optimisation; readers check the time of what they find (DirectReadBarrier), and any value
  // a reader sees, old or new, names a revision of the same object it may legitimately reach.
  if (slot != nullptr) {
#ifdef REVKV_MUTATION_BLIND_COMPRESSION
    slot->store(target, std::memory_order_relaxed);
    if (true) {
#else
    Object* expected = g;
    if (slot->compare_exchange_strong(expected, target, std::memory_order_relaxed,
                                      std::memory_order_relaxed)) {
#endif
      d->counters.chains_compressed.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

// True if global `p`, whose h_revision was `v`, can be read as is: a head committed at or before the
// start time.
bool ReadableAsIs(const TxDescriptor* d, uintptr_t v, uint16_t flags) {
  if (flags & kPossiblyOutdated) return false;
  return !IsRevisionPointer(v) && v <= d->start_time;
}
}  // namespace

#ifdef REVKV_TEST_HOOKS
void testing::SetCompressionHook(testing::CompressionHook hook) {
  g_compression_hook.store(hook, std::memory_order_relaxed);
}
#endif

namespace internal {
TxDescriptor* CurrentDescriptor() { return t_desc; }
void SetCurrentDescriptor(TxDescriptor* d) { t_desc = d; }

// seed 000 RepeatReadBarrier, slow half (the caller saw kPossiblyOutdated).
Object* RepeatReadBarrier(Object* o) {
  TxDescriptor* d = t_desc;
  if (d == nullptr || d->mode != TxMode::kReadWrite || !o->HasFlag(kGlobal)) return o;
  auto it = d->global_to_local.find(o);
  return it == d->global_to_local.end() ? o : it->second;
}
}  // namespace internal

// The count and the flag share one atomic word and change together in one CAS, so a transaction that
// holds a copy always finds the flag set (its RepeatReadBarrier depends on it) whatever other writers
// add or drop. Relaxed: only atomicity matters; the owner of a copy reads its own increment or a later
// value in the word's modification order, and every later value still counts its copy. Other threads
// use the flag only to leave the fast path, and check the head with an acquire load anyway.
constexpr uint16_t kLocalCopyUnit = 1u << 3;
static_assert((kLocalCopies & (kGlobal | kPossiblyOutdated | kWritten | kForwarded | kPinned | kMarked)) ==
              0);

void AddWrittenCopy(Object* r) {
  uint16_t f = r->flags();
  for (;;) {
    const uint16_t count = f & kLocalCopies;
    const uint16_t next =
        static_cast<uint16_t>(f | kPossiblyOutdated) + (count == kLocalCopies ? 0 : kLocalCopyUnit);
    if (r->CompareExchangeFlags(f, next, std::memory_order_relaxed)) return;
  }
}

void DropWrittenCopy(Object* r) {
  uint16_t f = r->flags();
  for (;;) {
    const uint16_t count = f & kLocalCopies;
    if (count == kLocalCopies) return;  // saturated: the flag stays until a commit supersedes r
    if (count == 0) return;             // not counted (a copy set by the collector's rebuild): leave it
    uint16_t next = static_cast<uint16_t>(f - kLocalCopyUnit);
    if (count == kLocalCopyUnit) next = static_cast<uint16_t>(next & ~kPossiblyOutdated);
    if (r->CompareExchangeFlags(f, next, std::memory_order_relaxed)) return;
  }
}

// seed 000 LatestGlobalRevision.
// Departure: a revision's skip hint, when it has one, replaces its h_revision link (both lead to the same
// head, the hint in fewer hops).
Object* LatestGlobalRevision(TxDescriptor* d, Object* g, Object* /*container*/, std::atomic<Object*>* slot) {
  Object* r = g;
  Object* stable = g;  // the newest revision passed whose commit time is at most the skip horizon
  const uint64_t skip_horizon = SkipHorizon();
  int spins = 0;
  int hops = 0;
  int skips = 0;
  for (;;) {
    const uintptr_t v = r->h_revision.load(std::memory_order_acquire);
    if (IsRevisionPointer(v)) {  // has a more recent revision
      // Acquire (SkipHintOf): pairs with AdvanceSkipHint's release, so the hinted revision is visible.
      if (Object* hint = SkipHintOf(r)) {
        r = hint;
        ++skips;
      } else {
        r = reinterpret_cast<Object*>(v);
      }
      ++hops;
      if (CommitTimeOf(r) <= skip_horizon) stable = r;
      continue;
    }
    if (v > d->start_time) {  // too recent, or locked
      if (IsLockValue(v)) {
        WaitForLockHolder(spins);
        continue;
      }
      ValidateDuringTransaction(d);  // move start_time forward, or abort
      continue;
    }
    break;
  }
  if (hops != 0) CountChainWalk(d, hops, skips);
  if (!d->will_write && hops > 1 && stable != g && d->pending_hint_count < TxDescriptor::kPendingHints) {
    d->pending_hints[d->pending_hint_count++] = {g, stable};  // moved if this attempt comes to write
  }
  PossiblyUpdateChain(d, g, r, hops, slot, stable);
  return r;
}

void MarkWillWrite(TxDescriptor* d) {
  if (d->will_write) return;
  d->will_write = true;
  for (int i = 0; i < d->pending_hint_count; ++i) {
    AdvanceSkipHint(d, d->pending_hints[i].first, d->pending_hints[i].second);
  }
  d->pending_hint_count = 0;
}

// seed 000 Localize: a local copy of global `r` (the same copy if one exists).
Object* Localize(TxDescriptor* d, Object* r) {
  auto it = d->global_to_local.find(r);
  if (it != d->global_to_local.end()) return it->second;
  const size_t size = r->size();
  absl::StatusOr<Object*> copy = Allocate(r->type(), size);  // may collect; r is pinned by our stack
  if (!copy.ok()) throw TxFailSignal{copy.status()};
  Object* l = *copy;
  const auto* src =
      reinterpret_cast<const std::atomic<uint64_t>*>(reinterpret_cast<const char*>(r) + sizeof(Object));
  auto* dst = reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(l) + sizeof(Object));
  for (size_t i = 0; i < (size - sizeof(Object)) / sizeof(uint64_t); ++i) {
    dst[i] = src[i].load(std::memory_order_relaxed);
  }
  l->SetFlagsExclusive(0);
  l->h_revision.store(reinterpret_cast<uintptr_t>(r), std::memory_order_relaxed);  // back-reference
  // The copy becomes a head if it commits, and a head has no hint (r's hint names a revision of r's).
  if (LayoutOf(l->type()).versioned)
    static_cast<VersionedObject*>(l)->h_newest.store(nullptr, std::memory_order_relaxed);
  d->global_to_local.emplace(r, l);
  return l;
}

// ----- Tx: the barriers as the handle types call them -----------------------------------------------

// seed 000 DirectReadBarrier.
Object* Tx::ReadBarrier(Object* p, Object* container, std::atomic<Object*>* slot) {
#ifdef REVKV_DEBUG_CHECKS
  revkv::runtime::internal::CheckHeapAccess("a barrier");
#endif
  if (p == nullptr) return p;
  // First an acquire load of h_revision: it pairs with the release store that published p (a reference
  // found in a fixed-up field was stored with relaxed order), so p's header and body are visible.
  const uintptr_t v = p->h_revision.load(std::memory_order_acquire);
  const uint16_t flags = p->flags();
  if (!(flags & kGlobal)) return p;  // local: fast path
  // Immutable (non-versioned) objects never get a newer revision: nothing to validate or record.
  if (!LayoutOf(p->type()).versioned) return p;
  TxDescriptor* d = d_;
  if (d->doomed) [[unlikely]]
    AbortTransaction(d, AbortCause::kDoomedByGc);
  Object* r = p;
  if (!ReadableAsIs(d, v, flags)) {
    r = LatestGlobalRevision(d, p, container, slot);
    if (r->HasFlag(kPossiblyOutdated)) {
      auto it = d->global_to_local.find(r);
      if (it != d->global_to_local.end()) return ReadGlobalToLocal(it->second, container, slot);
    }
  }
  return AddInReadSet(d, r);
}

// seed 000 WriteBarrier.
Object* Tx::WriteBarrier(Object* p) {
#ifdef REVKV_DEBUG_CHECKS
  revkv::runtime::internal::CheckHeapAccess("a barrier");
#endif
  if (p->HasFlag(kWritten)) return p;  // fast path
  TxDescriptor* d = d_;
  MarkWillWrite(d);
  Object* w;
  Object* r = nullptr;
  if (!p->HasFlag(kGlobal)) {
    w = p;
    const uintptr_t original = w->h_revision.load(std::memory_order_relaxed);
    if (IsRevisionPointer(original)) r = reinterpret_cast<Object*>(original);
  } else {
    if (d->doomed) [[unlikely]]
      AbortTransaction(d, AbortCause::kDoomedByGc);
    r = ReadableAsIs(d, p->h_revision.load(std::memory_order_acquire), p->flags())
            ? p
            : LatestGlobalRevision(d, p, nullptr, nullptr);
    w = Localize(d, r);
  }
  // Benign race (seed 000): other threads set and read this flag on the same global header; a relaxed
  // RMW suffices because our commit's clock CAS (seq_cst) publishes it before any revision we make.
  if (r != nullptr && !w->HasFlag(kWritten)) AddWrittenCopy(r);
  w->SetFlagsExclusive(w->flags() | kWritten);
  return w;
}

// seed 000 WriteBarrierFromReadReady.
Object* Tx::WriteBarrierFromReadReady(Object* ready) {
#ifdef REVKV_DEBUG_CHECKS
  revkv::runtime::internal::CheckHeapAccess("a barrier");
#endif
  if (ready->HasFlag(kWritten)) return ready;
  TxDescriptor* d = d_;
  MarkWillWrite(d);
  Object* w;
  Object* r = nullptr;
  if (!ready->HasFlag(kGlobal)) {
    w = ready;
    const uintptr_t original = w->h_revision.load(std::memory_order_relaxed);
    if (IsRevisionPointer(original)) r = reinterpret_cast<Object*>(original);
  } else {
    r = ready;
    w = Localize(d, r);
  }
  if (r != nullptr && !w->HasFlag(kWritten)) AddWrittenCopy(r);  // benign race, as above
  w->SetFlagsExclusive(w->flags() | kWritten);
  return w;
}

// seed 000 Allocate.
Object* Tx::AllocateLocal(TypeId type, size_t size) {
  absl::StatusOr<Object*> o = Allocate(type, size);
  if (!o.ok()) throw TxFailSignal{o.status()};
  (*o)->SetFlagsExclusive(kWritten);  // h_global false, h_possibly_outdated false, h_revision 1
  return *o;
}

Ref<Bytes> Tx::NewBytes(std::string_view data) {
  absl::StatusOr<Bytes*> b = revkv::runtime::NewBytes(data);
  if (!b.ok()) throw TxFailSignal{b.status()};
  return Ref<Bytes>::FromRaw(*b);
}

void Tx::PublishAtCommitRaw(GlobalRoot& root, Object* object) {
  MarkWillWrite(d_);
  d_->publish_at_commit.emplace_back(&root, object);
}
void Tx::SetCommitAction(std::function<void(uint64_t)> action) {
  MarkWillWrite(d_);
  d_->commit_action = std::move(action);
}
void Tx::BecomeInevitable() { stm::BecomeInevitable(d_); }
bool Tx::inevitable() const { return d_->is_inevitable; }
uint64_t Tx::start_time() const { return d_->start_time; }
void Tx::Poll() { revkv::runtime::Poll(); }
void Tx::Retry() { AbortTransaction(d_, AbortCause::kExplicit); }
void Tx::Fail(absl::Status status) { throw TxFailSignal{std::move(status)}; }

}  // namespace revkv::runtime::stm
