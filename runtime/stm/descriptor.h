// The per-thread transaction descriptor (seed 000 "Transaction details") and the global STM state.
//
// One TxDescriptor per registered thread that has run a transaction; it lives in the thread's
// ThreadClientState() slot and in the descriptor table (by thread index), so a snapshot reader that
// finds a head locked by thread i can ask thread i's descriptor for its commit time.
//
// Invariants:
//  1. Everything not atomic is owner-thread only, except that the collector reads and rewrites the
//     transaction state (global_to_local, read set, recent-reads cache, gcroots) while the owner is
//     stopped or is the collector (RelocateThreadState).
//  2. `commit_time_in_progress` is kCommitPending from before the first header lock is taken until the
//     commit's time is known, then that time, then 0 once every lock is released.
//  3. `snapshot_time` is non-zero exactly while a snapshot transaction runs, and is published before
//     the transaction's first read (the horizon protocol in clock.cc).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "runtime/gc/gc.h"
#include "runtime/heap/object_format.h"
#include "runtime/stm/stm.h"

namespace revkv::runtime::stm {

inline constexpr uint64_t kInevitable = ~uint64_t{0};     // seed 000 INEVITABLE: odd, never a time
inline constexpr uint64_t kCommitPending = ~uint64_t{0};  // invariant 2
inline constexpr size_t kMaxThreadIndex = 1 << 16;
inline constexpr uint32_t kLocalizeThreshold = 8;    // AddInReadSet: reads before localizing
inline constexpr uint32_t kRecentReadsSlots = 1024;  // recent_reads_cache size (power of two)
inline constexpr uint32_t kRarelyPeriod = 64;        // PossiblyUpdateChain: one in this many
inline constexpr int kInevitableAfterAborts = 32;    // progress guarantee in RunAtomically

// The private abort signal: thrown by AbortTransaction, caught only by RunAtomically.
struct TxAbortSignal {
  AbortCause cause;
};
// Thrown by Tx::Fail and heap exhaustion: ends the transaction with `status`.
struct TxFailSignal {
  absl::Status status;
};

// One entry of the commit's gcroots (seed 000 FindRootsForLocalCollect): the global revision R being
// replaced, its written local copy L, and the value R's h_revision held before we locked it (0 while
// not locked).
struct GcRoot {
  Object* r;
  Object* l;
  uintptr_t saved;
};

enum class TxMode : uint8_t { kNone, kReadWrite, kSnapshot };

struct alignas(64) TxCounters {
  std::atomic<uint64_t> commits{0};
  std::atomic<uint64_t> write_commits{0};
  std::atomic<uint64_t> snapshot_reads{0};
  std::atomic<uint64_t> aborts[kAbortCauses] = {};
  std::atomic<uint64_t> retries{0};
  std::atomic<uint64_t> inevitable{0};
  std::atomic<uint64_t> inevitable_wait_nanos{0};
  std::atomic<uint64_t> chains_compressed{0};
  std::atomic<uint64_t> chain_hops{0};
  std::atomic<uint64_t> skip_hints_taken{0};
  std::atomic<uint64_t> skip_hints_set{0};
  std::atomic<uint64_t> auto_localizations{0};
  Histogram read_set_sizes;
  Histogram write_set_sizes;
};

struct TxDescriptor {
  explicit TxDescriptor(uint16_t thread_index);

  // ----- seed 000 transaction-local data -----
  uint64_t start_time = 0;
  bool is_inevitable = false;
  // The attempt was made inevitable by the progress guarantee, not by the body (BecomeInevitable or a
  // commit action): it may still give inevitability up when the body calls Retry().
  bool inevitable_by_escalation = false;
  absl::flat_hash_map<Object*, Object*> global_to_local;  // R -> L
  std::vector<Object*> list_of_read_objects;
  struct RecentRead {
    Object* object;
    uint32_t count;
  };
  RecentRead recent_reads_cache[kRecentReadsSlots] = {};
  const uintptr_t my_lock;  // kLocked + 2 * thread index: odd, >= kLocked
  std::vector<GcRoot> gcroots;
  std::vector<Object*> new_versioned;  // objects the committing transaction created (LocalCollect)

  // ----- revkv additions -----
  TxMode mode = TxMode::kNone;
  uint16_t thread_index;
  uint32_t rarely_counter = 0;
  bool doomed = false;  // a collection found the read set outdated
  // The attempt has written (a write barrier), or registered an object to publish or a commit action:
  // it will commit as a writer, so it may also compress chains (PossiblyUpdateChain). Until then it may
  // turn out read-only, and a read-only transaction writes no shared memory (DESIGN 2.3).
  bool will_write = false;
  // Skip hints that walks made before the attempt wrote would have moved (holder, hinted revision):
  // moved at its first write (MarkWillWrite), since until then it may turn out read-only; forgotten by a
  // major collection, which moves revisions (a hint is only a shortcut).
  static constexpr int kPendingHints = 8;
  std::pair<Object*, Object*> pending_hints[kPendingHints];
  uint8_t pending_hint_count = 0;
  uint64_t last_commit_time = 0;  // ThisThreadLastCommitTime
  std::function<void(uint64_t)> commit_action;
  std::vector<std::pair<GlobalRoot*, Object*>> publish_at_commit;
  std::atomic<uint64_t> commit_time_in_progress{0};  // invariant 2
  std::atomic<uint64_t> snapshot_time{0};            // invariant 3
  std::atomic<uint64_t> snapshot_start_nanos{0};
  TxCounters counters;

  // The Tx handle given to bodies.
  Tx tx{this};

  static size_t HashSlot(const Object* o) {
    return (reinterpret_cast<uintptr_t>(o) >> 4) * 0x9E3779B97F4A7C15ull >> (64 - 10);
  }
  void ClearTransactionState();
};
static_assert(kRecentReadsSlots == 1u << 10, "HashSlot assumes 1024 slots");

// The calling thread's descriptor, created on first use. The thread must be registered.
TxDescriptor* Descriptor();
// Descriptor of a thread by index (nullptr if it has none). Thread-safe.
TxDescriptor* DescriptorByIndex(uint16_t index);
// Runs f(TxDescriptor&) for every descriptor. Thread-safe (takes the descriptor table's mutex).
void ForEachDescriptor(const std::function<void(TxDescriptor&)>& f);

// ----- the global time (clock.cc) -----
std::atomic<uint64_t>& GlobalCurTime();
std::atomic<uint64_t>& InevitableStartTime();
std::mutex& InevitableMutex();
// The oldest time a live snapshot or the retention may still read at; the last committed time when
// there is none. Thread-safe (seq_cst protocol with snapshot publication).
uint64_t SnapshotHorizon();
// The highest horizon SnapshotHorizon ever published: states older than it may be gone. seq_cst.
uint64_t HorizonUsed();
// SetSkipHorizon's time (UINT64_MAX when unlimited). Relaxed.
uint64_t SkipHorizon();
std::atomic<uint64_t>& RevisionsSuperseded();

// ----- commit.cc -----
[[noreturn]] void AbortTransaction(TxDescriptor* d, AbortCause cause);
void ValidateDuringTransaction(TxDescriptor* d);
bool ValidateDuringCommit(TxDescriptor* d);
void CommitTransaction(TxDescriptor* d);
void BecomeInevitable(TxDescriptor* d);

// ----- barriers.cc -----
// kPossiblyOutdated on a head with a count of the transactions holding a written copy of it (the
// kLocalCopies bits): AddWrittenCopy when a copy becomes written, DropWrittenCopy when an attempt that
// wrote it ends without committing. The flag is cleared when the count drops to 0, so an aborted writer
// does not leave the head on every reader's slow path; a saturated count never drops (the flag stays).
void AddWrittenCopy(Object* r);
void DropWrittenCopy(Object* r);
Object* LatestGlobalRevision(TxDescriptor* d, Object* g, Object* container, std::atomic<Object*>* slot);
// The skip hint of `r`, a global revision that has a newer one, or nullptr. Acquire: pairs with the
// release of the compare-and-swap that set it, so the hinted revision's header, body and commit time
// are visible.
inline Object* SkipHintOf(Object* r) {
#ifdef REVKV_MUTATION_NO_SKIP_HINTS
  return nullptr;  // mutation switch (commit.cc lists them): reads never jump
#endif
  return static_cast<VersionedObject*>(r)->h_newest.load(std::memory_order_acquire);
}
// Counts a read's walk along a chain: `hops` revisions passed, `skips` of them through a hint. Owner
// thread only (relaxed: statistics).
inline void CountChainWalk(TxDescriptor* d, int hops, int skips) {
  d->counters.chain_hops.fetch_add(static_cast<uint64_t>(hops), std::memory_order_relaxed);
  if (skips != 0)
    d->counters.skip_hints_taken.fetch_add(static_cast<uint64_t>(skips), std::memory_order_relaxed);
}
Object* Localize(TxDescriptor* d, Object* r);
// The attempt will commit as a writer (a write barrier, an object to publish, a commit action): from
// now on it may compress chains and move skip hints, and it moves the ones its earlier walks deferred.
void MarkWillWrite(TxDescriptor* d);

}  // namespace revkv::runtime::stm
