// The global time, the inevitable marker, snapshot publication and the snapshot horizon, and the
// table of transaction descriptors.
//
// Horizon protocol (DESIGN 2.3 "Snapshot reads"; docs/runtime-stm.md section 8 has the argument at
// length). Every access below is seq_cst, so all of them lie in one total order S.
//  - A reader at the newest time publishes T in its descriptor's slot, then re-reads the last committed
//    time; if that moved it publishes the new value and checks again (PublishLatest).
//  - A reader at an explicit past time T publishes T, then reads the retained time and g_horizon_used,
//    and gives up (FailedPrecondition) if T is below either (RunSnapshot).
//  - SnapshotHorizon computes h = min(clock, retained, every slot), raises g_horizon_used to h, and
//    only then reads the retained time and every slot once more, returning the minimum of all: the
//    horizon is published before anyone may act on it.
//  - SetRetainedTime raises g_retained, then reads g_horizon_used and raises g_retained to it if that is
//    higher (those states may be gone).
// Why no live snapshot at T ever sees a reference redirected past its revision (h > T):
//  (a) Reader at the newest time: if the first scan misses its slot store, that store follows the scan's
//      clock read in S, so the reader's re-read sees a clock >= h (the clock only grows) and keeps it.
//  (b) Reader at a past time: if its read of g_horizon_used follows the raise in S, it sees >= h and
//      gives up when T < h; otherwise its slot store precedes the raise, which precedes the second scan,
//      which then sees T.
//  (c) Retention: if SetRetainedTime's raise of g_retained precedes the second scan, the scan sees it;
//      otherwise the raise of g_horizon_used precedes it, and SetRetainedTime's later read of
//      g_horizon_used lifts the retained time to at least h, so readers are told the state is gone.
// The descriptor table's limit and entries are stored and loaded seq_cst too: a reader's slot store
// follows its descriptor's publication in S, so a scan that must see the slot (by the cases above) also
// sees the descriptor holding it. With acquire loads a scan could read a stale limit and skip a new
// thread's first snapshot although it follows that snapshot's publication in S.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "runtime/port/port.h"
#include "runtime/safepoint/safepoint.h"
#include "runtime/safepoint/thread_context.h"
#include "runtime/stm/descriptor.h"

namespace revkv::runtime::stm {

namespace {
std::atomic<uint64_t> g_global_cur_time{2};  // even; store revision = time / 2
std::atomic<uint64_t> g_inevitable_start{
    2};                               // the last committed time while g_global_cur_time == kInevitable
std::atomic<uint64_t> g_retained{0};  // 0: no history is kept
std::atomic<uint64_t> g_revisions_superseded{0};
std::atomic<uint64_t> g_horizon_used{0};  // the highest horizon ever handed out for collapsing
// How far writers may point skip hints (SetSkipHorizon); UINT64_MAX: no limit.
std::atomic<uint64_t> g_skip_horizon{UINT64_MAX};

std::mutex g_descriptors_mu;  // guards creation and ForEachDescriptor
std::atomic<TxDescriptor*> g_descriptors[kMaxThreadIndex];
std::atomic<size_t> g_descriptor_limit{0};  // 1 + the highest index with a descriptor
}  // namespace

std::atomic<uint64_t>& GlobalCurTime() { return g_global_cur_time; }
std::atomic<uint64_t>& InevitableStartTime() { return g_inevitable_start; }
std::atomic<uint64_t>& RevisionsSuperseded() { return g_revisions_superseded; }

std::mutex& InevitableMutex() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}

uint64_t LastCommittedTime() {
  const uint64_t t = g_global_cur_time.load(std::memory_order_seq_cst);
  if (t != kInevitable) return t;
  // The inevitable transaction stored its start time before it swapped in the marker (seq_cst), and
  // one inevitable transaction at a time means the value is a committed time either way.
  return g_inevitable_start.load(std::memory_order_seq_cst);
}

namespace {
// Raises g_retained to at least `time` (seq_cst: the horizon protocol above).
void RaiseRetained(uint64_t time) {
  uint64_t seen = g_retained.load(std::memory_order_seq_cst);
  while (time > seen && !g_retained.compare_exchange_weak(seen, time, std::memory_order_seq_cst)) {
  }
}
}  // namespace

void SetRetainedTime(uint64_t time) {
  // Chains may already have been collapsed up to a horizon: older states are gone whatever we retain.
  RaiseRetained(std::max(time, g_horizon_used.load(std::memory_order_seq_cst)));
  // A horizon computed before our raise may have been published since (case (c) above): read it again
  // after the raise, in S, and give up what it may already have collapsed.
  RaiseRetained(g_horizon_used.load(std::memory_order_seq_cst));
}

uint64_t HorizonUsed() { return g_horizon_used.load(std::memory_order_seq_cst); }

// Relaxed, both ways: the value only decides how far a hint points, never whether a read is correct (a
// reader checks the commit time of any hint it takes), so no other memory is ordered by it.
void SetSkipHorizon(uint64_t time) {
  g_skip_horizon.store(time == 0 ? UINT64_MAX : time, std::memory_order_relaxed);
}
uint64_t SkipHorizon() { return g_skip_horizon.load(std::memory_order_relaxed); }

uint64_t RetainedTime() { return g_retained.load(std::memory_order_seq_cst); }

namespace {
// min(h, the retained time if set, every published snapshot time): seq_cst loads throughout, the
// table's limit and entries included (the protocol above needs them in S).
uint64_t MinWithRetainedAndSnapshots(uint64_t h) {
#ifdef REVKV_MUTATION_NO_SNAPSHOT_HORIZON  // mutation switch: compression and collapse ignore readers
  return h;
#endif
  const uint64_t retained = g_retained.load(std::memory_order_seq_cst);
  if (retained != 0) h = std::min(h, retained);
  const size_t limit = g_descriptor_limit.load(std::memory_order_seq_cst);
  for (size_t i = 0; i < limit; ++i) {
    TxDescriptor* d = g_descriptors[i].load(std::memory_order_seq_cst);
    if (d == nullptr) continue;
    const uint64_t t = d->snapshot_time.load(std::memory_order_seq_cst);
    if (t != 0) h = std::min(h, t);
  }
  return h;
}
}  // namespace

uint64_t SnapshotHorizon() {
  uint64_t h = MinWithRetainedAndSnapshots(LastCommittedTime());
  // Publish before handing out (cases (b) and (c) above); seq_cst so the raise lies in S.
  uint64_t used = g_horizon_used.load(std::memory_order_seq_cst);
  while (h > used && !g_horizon_used.compare_exchange_weak(used, h, std::memory_order_seq_cst)) {
  }
  // The second scan, after the raise in S: a snapshot or retention that the raise did not turn away
  // is seen here.
  return MinWithRetainedAndSnapshots(h);
}

// ----- descriptors ------------------------------------------------------------------------------------

TxDescriptor::TxDescriptor(uint16_t index) : my_lock(kLocked + 2 * uintptr_t{index}), thread_index(index) {
  list_of_read_objects.reserve(64);
  gcroots.reserve(16);
}

void TxDescriptor::ClearTransactionState() {
  for (Object* r : list_of_read_objects) recent_reads_cache[HashSlot(r)] = RecentRead{nullptr, 0};
  list_of_read_objects.clear();
  if (!global_to_local.empty()) global_to_local.clear();
  gcroots.clear();
  new_versioned.clear();
  publish_at_commit.clear();
  commit_action = nullptr;
  doomed = false;
  will_write = false;
  pending_hint_count = 0;
  is_inevitable = false;
  inevitable_by_escalation = false;
}

TxDescriptor* DescriptorByIndex(uint16_t index) {
  return g_descriptors[index].load(std::memory_order_acquire);
}

TxDescriptor* Descriptor() {
  void*& slot = ThreadClientState();
  if (slot != nullptr) [[likely]] {
    return static_cast<TxDescriptor*>(slot);
  }
  InitializeStm();
  // Descriptors are kept per thread index and reused by the next thread with that index: a snapshot
  // reader may still look one up through a lock value it has just read.
  const uint16_t index = CurrentThread()->index;  // the index lock values carry
  std::lock_guard<std::mutex> lock(g_descriptors_mu);
  TxDescriptor* d = g_descriptors[index].load(std::memory_order_relaxed);
  if (d == nullptr) {
    d = new TxDescriptor(index);
    // seq_cst (not release): the horizon scan must see this descriptor whenever it must see a slot
    // store the thread makes later (the protocol above). Under g_descriptors_mu, so the limit only grows.
    g_descriptors[index].store(d, std::memory_order_seq_cst);
    if (g_descriptor_limit.load(std::memory_order_relaxed) <= index) {
      g_descriptor_limit.store(static_cast<size_t>(index) + 1, std::memory_order_seq_cst);
    }
  }
  slot = d;
  return d;
}

void ForEachDescriptor(const std::function<void(TxDescriptor&)>& f) {
  std::lock_guard<std::mutex> lock(g_descriptors_mu);
  const size_t limit = g_descriptor_limit.load(std::memory_order_acquire);
  for (size_t i = 0; i < limit; ++i) {
    if (TxDescriptor* d = g_descriptors[i].load(std::memory_order_acquire)) f(*d);
  }
}

void AdvanceGlobalTime(uint64_t time) {
  time &= ~uint64_t{1};
  uint64_t seen = g_global_cur_time.load(std::memory_order_seq_cst);
  while (seen != kInevitable && time > seen &&
         !g_global_cur_time.compare_exchange_weak(seen, time, std::memory_order_seq_cst)) {
  }
}

}  // namespace revkv::runtime::stm
