// The global time, the inevitable marker, snapshot publication and the snapshot horizon, and the
// table of transaction descriptors.
//
// Horizon protocol (DESIGN 2.3 "Snapshot reads"). A snapshot reader publishes its time T in its
// descriptor with a seq_cst store and then re-reads the last committed time (seq_cst); if that moved,
// it publishes the new value and checks again. Whoever computes the horizon reads the last committed
// time and the retained time first, then every published snapshot time (all seq_cst). If it misses a
// reader's store, that store comes later in the single order of seq_cst operations than its own
// reads, so its clock value is at most the one the reader re-read and kept: the horizon is at most T
// either way, and no chain is ever collapsed past a revision a live snapshot still needs.
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

void SetRetainedTime(uint64_t time) {
  // Chains may already have been collapsed up to a horizon: older states are gone whatever we retain.
  time = std::max(time, g_horizon_used.load(std::memory_order_seq_cst));
  uint64_t seen = g_retained.load(std::memory_order_seq_cst);
  while (time > seen && !g_retained.compare_exchange_weak(seen, time, std::memory_order_seq_cst)) {
  }
}

uint64_t RetainedTime() { return g_retained.load(std::memory_order_seq_cst); }

uint64_t SnapshotHorizon() {
  uint64_t h = LastCommittedTime();
  const uint64_t retained = g_retained.load(std::memory_order_seq_cst);
  if (retained != 0) h = std::min(h, retained);
  const size_t limit = g_descriptor_limit.load(std::memory_order_acquire);
  for (size_t i = 0; i < limit; ++i) {
    TxDescriptor* d = g_descriptors[i].load(std::memory_order_acquire);
    if (d == nullptr) continue;
    const uint64_t t = d->snapshot_time.load(std::memory_order_seq_cst);
    if (t != 0) h = std::min(h, t);
  }
  uint64_t used = g_horizon_used.load(std::memory_order_relaxed);
  while (h > used && !g_horizon_used.compare_exchange_weak(used, h, std::memory_order_seq_cst)) {
  }
  return h;
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
    g_descriptors[index].store(d, std::memory_order_release);
    if (g_descriptor_limit.load(std::memory_order_relaxed) <= index) {
      g_descriptor_limit.store(static_cast<size_t>(index) + 1, std::memory_order_release);
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
