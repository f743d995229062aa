// Snapshot transactions (DESIGN 2.3 "Snapshot reads", beyond seed 000): a read-only transaction with
// snapshot time T reads, for every object, the newest revision whose commit time is at most T. It
// never validates, never aborts, never waits for an inevitable transaction, and writes no shared
// memory other than its own descriptor's published snapshot time.
#include <algorithm>
#include <thread>

#include "absl/strings/str_format.h"
#include "runtime/heap/object_format.h"
#include "runtime/port/port.h"
#include "runtime/safepoint/safepoint.h"
#include "runtime/stm/descriptor.h"

namespace revkv::runtime::stm {

namespace internal {
void SetCurrentDescriptor(TxDescriptor* d);
}  // namespace internal

namespace {

// Publishes a snapshot at the newest committed time (the horizon protocol in clock.cc).
uint64_t PublishLatest(TxDescriptor* d) {
  uint64_t t = LastCommittedTime();
  for (;;) {
    d->snapshot_time.store(t, std::memory_order_seq_cst);
    const uint64_t again = LastCommittedTime();
    if (again == t) return t;
    t = again;
  }
}

// True if a reader at `time` must wait for the commit holding lock `v` on `r`: that commit's time is not
// yet known, or it is at most `time` (the reader's snapshot includes it). The holder may finish and
// start another commit between our two loads, so the header is read again afterwards: if it no longer
// holds the same lock, the time we read may belong to a later commit, and we look again.
bool MustWaitForLock(const Object* r, uintptr_t v, uint64_t time) {
  const uint16_t holder = static_cast<uint16_t>((v - kLocked) / 2);
  TxDescriptor* d = DescriptorByIndex(holder);
  if (d == nullptr) return true;
  const uint64_t t = d->commit_time_in_progress.load(std::memory_order_seq_cst);
  if (r->h_revision.load(std::memory_order_seq_cst) != v) return true;  // changed: look again
  if (t == 0) return true;  // released meanwhile: look at the header again
  return t == kCommitPending || t <= time;
}

}  // namespace

Object* SnapshotTx::SnapshotRead(Object* p) {
#ifdef REVKV_DEBUG_CHECKS
  revkv::runtime::internal::CheckHeapAccess("a snapshot read");
#endif
  if (p == nullptr) return p;
  Object* r = p;
  int spins = 0;
  int hops = 0;
  int skips = 0;
  for (;;) {
    const uintptr_t v = r->h_revision.load(std::memory_order_acquire);
    if (IsRevisionPointer(v)) {
      // A skip hint at or before our time: the revision we want is that one or a newer one, so jump.
      // SkipHintOf's acquire load pairs with the release that set the hint: its commit time is visible.
      if (Object* hint = SkipHintOf(r);
          hint != nullptr &&
          static_cast<VersionedObject*>(hint)->h_commit_time.load(std::memory_order_relaxed) <= time_) {
        r = hint;
        ++hops;
        ++skips;
        continue;
      }
      auto* next = reinterpret_cast<Object*>(v);
      // The acquire load above pairs with UpdateChainHeads' release store: next's commit time, header
      // and body are visible.
      if (static_cast<VersionedObject*>(next)->h_commit_time.load(std::memory_order_relaxed) <= time_) {
        r = next;
        ++hops;
        continue;
      }
      if (hops != 0) CountChainWalk(Descriptor(), hops, skips);
      return r;
    }
    if (IsLockValue(v) && MustWaitForLock(r, v, time_)) {
      if (++spins < 64) {
        port::CpuRelax();
      } else {
        revkv::runtime::Poll();
        std::this_thread::yield();
      }
      continue;
    }
    if (hops != 0) CountChainWalk(Descriptor(), hops, skips);
    return r;  // a head (time <= ours, since we reached it), or a lock for a commit after our time
  }
}

void SnapshotTx::Poll() { revkv::runtime::Poll(); }

namespace internal {

absl::Status RunSnapshot(uint64_t time, const std::function<void(SnapshotTx&)>& body) {
  TxDescriptor* d = Descriptor();
  if (d->mode != TxMode::kNone) {
    return absl::FailedPreconditionError("a snapshot transaction cannot start inside another transaction");
  }
  revkv::runtime::Poll();
  uint64_t t;
  if (time == 0) {
    t = PublishLatest(d);
  } else {
    // Publish, then check (seq_cst, case (b) of the horizon protocol in clock.cc): a horizon above
    // `time` published before our check is seen here; one published after it sees our slot.
    d->snapshot_time.store(time, std::memory_order_seq_cst);
    const uint64_t retained = RetainedTime();
    const uint64_t collapsed = HorizonUsed();
    const uint64_t latest = LastCommittedTime();
    if (time > latest) {
      d->snapshot_time.store(0, std::memory_order_release);
      return absl::OutOfRangeError(absl::StrFormat("time %d is in the future (latest %d)", time, latest));
    }
    if (time < latest && (retained == 0 || time < retained || time < collapsed)) {
      d->snapshot_time.store(0, std::memory_order_release);
      return absl::FailedPreconditionError(
          absl::StrFormat("time %d is no longer retained (oldest retained %d)", time,
                          retained == 0 ? latest : std::max(retained, collapsed)));
    }
    t = time;
  }
  d->snapshot_start_nanos.store(port::NowNanos(), std::memory_order_relaxed);
  d->mode = TxMode::kSnapshot;
  SetCurrentDescriptor(d);
  SnapshotTx tx(t);
  auto finish = [d] {
    d->mode = TxMode::kNone;
    d->snapshot_time.store(0, std::memory_order_release);
    SetCurrentDescriptor(nullptr);
    d->counters.snapshot_reads.fetch_add(1, std::memory_order_relaxed);
  };
  try {
    body(tx);
  } catch (...) {
    finish();
    throw;
  }
  finish();
  return absl::OkStatus();
}

}  // namespace internal

}  // namespace revkv::runtime::stm
