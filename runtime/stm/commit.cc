// Validation, commit and abort (seed 000 "Validation", "Local garbage collection", "Committing",
// "Inevitable transactions"), and the transaction driver RunAtomically.
//
// The commit, in order:
//  1. FindRootsForLocalCollect: the written local copies are the roots; a transaction with none (and
//     nothing to publish) is read-only and ends here, writing no shared memory.
//  2. A safepoint poll, then PerformLocalCollect (runtime/gc LocalCollect): survivors become global.
//  3. If the transaction has a commit action, it becomes inevitable (validating once more).
//  4. AcquireLocks in address order; the global time advanced by 2 with a CAS; validation only if the
//     time moved since the start; UpdateChainHeads publishes the new revisions and releases the locks.
// From the first lock to the last release this thread neither allocates, nor blocks, nor polls: a
// collection therefore never sees a locked header, and a thread spinning on our lock waits for a
// thread that is running. The one wait in between (another transaction is inevitable) first cancels
// the locks and then blocks inside a safe region.
//
// Mutation switches (off in every real build; tests/runtime must fail with each, docs/runtime-stm.md
// section 14): REVKV_MUTATION_NO_READ_VALIDATION, REVKV_MUTATION_NO_WRITE_SET_VALIDATION,
// REVKV_MUTATION_NO_LOCK_ORDER (here and in gc_client.cc); REVKV_MUTATION_NO_DOOM is in gc_client.cc,
// REVKV_MUTATION_BLIND_COMPRESSION in barriers.cc, REVKV_MUTATION_NO_SNAPSHOT_HORIZON in clock.cc,
// REVKV_MUTATION_NO_SKIP_HINTS in barriers.cc and descriptor.h.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>

#include "runtime/gc/collector.h"
#include "runtime/heap/object_format.h"
#include "runtime/port/diagnostics.h"
#include "runtime/port/port.h"
#include "runtime/safepoint/safepoint.h"
#include "runtime/safepoint/thread_context.h"
#include "runtime/stm/descriptor.h"
#include "runtime/stm/test_hooks.h"

namespace revkv::runtime::stm {

namespace internal {
void SetCurrentDescriptor(TxDescriptor* d);
}  // namespace internal

namespace {

void Check(bool condition, const char* what) {
  if (!condition) {
    port::Fatal("revkv stm: invariant violated: %s", what);
  }
}

// Records whether this thread holds header locks, for the debug builds' check of the rule above
// (Poll, SafeRegion and Allocate abort on a thread that holds them).
inline void MarkCommitLocksHeld([[maybe_unused]] bool held) {
#ifdef REVKV_DEBUG_CHECKS
  CurrentThread()->holds_commit_locks = held;
#endif
}

// seed 000 CancelLocks.
void CancelLocks(TxDescriptor* d) {
  MarkCommitLocksHeld(false);
  for (GcRoot& g : d->gcroots) {
    if (g.saved != 0) {
      g.r->h_revision.store(g.saved, std::memory_order_release);
      g.saved = 0;
    }
  }
}

#ifdef REVKV_TEST_HOOKS
std::atomic<testing::LockHook> g_lock_hook{nullptr};
// After each lock AcquireLocks takes (test_hooks.h). Relaxed: the hook is installed before the threads
// that call it start and removed after they are joined.
void AfterLockTaken(const Object* head, size_t index) {
  if (testing::LockHook hook = g_lock_hook.load(std::memory_order_relaxed)) hook(head, index);
}
#else
inline void AfterLockTaken(const Object*, size_t) {}
#endif

// seed 000 AcquireLocks: in address order (gcroots is sorted), by CAS; spins on another committer's
// lock without polling (that committer is running and will finish).
void AcquireLocks(TxDescriptor* d) {
  MarkCommitLocksHeld(true);  // from the first CAS on: an abort below releases them (CancelLocks)
#ifndef REVKV_MUTATION_NO_LOCK_ORDER
  Object* previous = nullptr;
#endif
  for (GcRoot& g : d->gcroots) {
#ifndef REVKV_MUTATION_NO_LOCK_ORDER
    Check(previous < g.r, "AcquireLocks: gcroots out of address order");
    previous = g.r;
#endif
    int spins = 0;
    for (;;) {
      uintptr_t v = g.r->h_revision.load(std::memory_order_acquire);
      if (IsRevisionPointer(v)) AbortTransaction(d, AbortCause::kLock);  // has a more recent revision
      if (IsLockValue(v)) {  // locked by someone else, who is running and will finish
        if (++spins < 128) {
          port::CpuRelax();
        } else {
          std::this_thread::yield();  // not a safepoint: we may hold locks ourselves
        }
        continue;
      }
      if (g.r->h_revision.compare_exchange_weak(v, d->my_lock, std::memory_order_acq_rel,
                                                std::memory_order_relaxed)) {
        g.saved = v;
        AfterLockTaken(g.r, static_cast<size_t>(&g - d->gcroots.data()));
        break;
      }
    }
  }
}

// Waits until no transaction is inevitable, in a safe region (the collector need not wait for us).
void WaitForInevitable(TxDescriptor* d) {
  const uint64_t t0 = port::NowNanos();
  {
    SafeRegion region;
    std::lock_guard<std::mutex> lock(InevitableMutex());
  }
  d->counters.inevitable_wait_nanos.fetch_add(port::NowNanos() - t0, std::memory_order_relaxed);
}

// seed 000 GetGlobalCurTimeInCommit. Called with the locks held; if another transaction is
// inevitable it cancels them, waits, and takes them again.
uint64_t GetGlobalCurTimeInCommit(TxDescriptor* d) {
  for (;;) {
    const uint64_t t = GlobalCurTime().load(std::memory_order_seq_cst);
    if (t != kInevitable) return t;
    CancelLocks(d);
    d->commit_time_in_progress.store(0, std::memory_order_release);
    WaitForInevitable(d);  // a safe region: a collection may relocate (and re-sort) gcroots
    if (d->doomed) AbortTransaction(d, AbortCause::kDoomedByGc);
    d->commit_time_in_progress.store(kCommitPending, std::memory_order_seq_cst);
    AcquireLocks(d);
  }
}

// True if every write-set head is still the newest revision and not locked by another thread. The
// write set is gcroots once the commit has built it, else the written entries of global_to_local.
bool ValidateWriteSet(TxDescriptor* d) {
#ifdef REVKV_MUTATION_NO_WRITE_SET_VALIDATION
  return true;
#endif
  auto head_ok = [d](Object* r) {
    const uintptr_t v = r->h_revision.load(std::memory_order_acquire);
    return !IsRevisionPointer(v) && (!IsLockValue(v) || v == d->my_lock);
  };
  if (!d->gcroots.empty()) {
    for (const GcRoot& g : d->gcroots) {
      if (!head_ok(g.r)) return false;
    }
    return true;
  }
  for (const auto& [r, l] : d->global_to_local) {
    if (l->HasFlag(kWritten) && !head_ok(r)) return false;
  }
  return true;
}

// seed 000 UpdateChainHeads: each new revision (and each versioned object the transaction created)
// gets the odd time cur_time + 1, then becomes the head
// (R->h_revision = L, a release store: L's body, header and commit time are visible to whoever follows
// the pointer with an acquire load). Also releases the locks.
void UpdateChainHeads(TxDescriptor* d, uint64_t cur_time) {
  const uint64_t new_revision = cur_time + 1;
  // Objects the transaction created: not reachable before the release stores below.
  for (Object* o : d->new_versioned) {
    static_cast<VersionedObject*>(o)->h_commit_time.store(new_revision, std::memory_order_relaxed);
  }
  for (GcRoot& g : d->gcroots) {
    static_cast<VersionedObject*>(g.l)->h_commit_time.store(new_revision, std::memory_order_relaxed);
    g.l->h_revision.store(new_revision, std::memory_order_release);
  }
  for (GcRoot& g : d->gcroots) {
    g.r->h_revision.store(reinterpret_cast<uintptr_t>(g.l), std::memory_order_release);
    g.saved = 0;
  }
  MarkCommitLocksHeld(false);
  RevisionsSuperseded().fetch_add(d->gcroots.size(), std::memory_order_relaxed);
}

void ReleaseInevitable(TxDescriptor* d, uint64_t new_time) {
  uint64_t expected = kInevitable;
  Check(GlobalCurTime().compare_exchange_strong(expected, new_time, std::memory_order_seq_cst),
        "the inevitable marker changed under the inevitable transaction");
  d->is_inevitable = false;
  InevitableMutex().unlock();
}

void Backoff(int aborts_in_row) {
  thread_local std::minstd_rand rng(static_cast<unsigned>(port::NowNanos()));
  const int shift = std::min(aborts_in_row, 10);
  const unsigned spins = rng() % (16u << shift);
  if (aborts_in_row > 6) {
    std::this_thread::yield();
    return;
  }
  for (unsigned i = 0; i < spins; ++i) port::CpuRelax();
}

// Ends the transaction attempt: forgets its state and discards its local objects.
void EndAttempt(TxDescriptor* d, bool committed) {
  if (!committed) {
    CancelLocks(d);
    // The written copies die with the attempt. gcroots, once built, lists them (global_to_local may
    // already be cleared); otherwise the written entries of global_to_local do.
    if (!d->gcroots.empty()) {
      for (const GcRoot& g : d->gcroots) DropWrittenCopy(g.r);
    } else {
      for (const auto& [r, l] : d->global_to_local) {
        if (l->HasFlag(kWritten)) DropWrittenCopy(r);
      }
    }
    d->commit_time_in_progress.store(0, std::memory_order_release);
    if (d->is_inevitable) ReleaseInevitable(d, d->start_time);  // a body threw while inevitable
  }
  d->ClearTransactionState();
  ResetNursery();
  d->mode = TxMode::kNone;
}

}  // namespace

#ifdef REVKV_TEST_HOOKS
void testing::SetLockHook(testing::LockHook hook) { g_lock_hook.store(hook, std::memory_order_relaxed); }
#endif

[[noreturn]] void AbortTransaction(TxDescriptor* d, AbortCause cause) {
  // The one exception: an attempt the progress guarantee made inevitable, whose body calls Retry(). It
  // has no irrevocable effects yet (the body did not ask for inevitability), so EndAttempt can give the
  // marker back (restoring the time it started at) and the body runs again.
  Check(!d->is_inevitable || (cause == AbortCause::kExplicit && d->inevitable_by_escalation),
        "an inevitable transaction cannot abort");
  CancelLocks(d);
  d->commit_time_in_progress.store(0, std::memory_order_release);
  throw TxAbortSignal{cause};
}

// seed 000 ValidateDuringTransaction. The new start time is the last committed time, without waiting
// for an inevitable transaction (DESIGN 3.2: others run while one is inevitable; they wait only to
// commit).
void ValidateDuringTransaction(TxDescriptor* d) {
  Check(!d->is_inevitable, "an inevitable transaction never needs to move its start time");
  d->start_time = LastCommittedTime();
#ifndef REVKV_MUTATION_NO_READ_VALIDATION
  for (size_t i = 0; i < d->list_of_read_objects.size(); ++i) {
    int spins = 0;
    for (;;) {
      Object* r = d->list_of_read_objects[i];  // re-read: a collection may relocate the read set
      const uintptr_t v = r->h_revision.load(std::memory_order_acquire);
      if (IsRevisionPointer(v)) AbortTransaction(d, AbortCause::kReadConflict);
      if (IsLockValue(v)) {
        if (++spins > 64) {
          Poll();
          std::this_thread::yield();
        }
        if (d->doomed) AbortTransaction(d, AbortCause::kDoomedByGc);
        continue;
      }
      break;
    }
  }
#endif
  // The write set too: a blind write does not read its object, but once the start time moves past a
  // newer revision of it, reads of that object would find the newer revision instead of our own copy.
#ifndef REVKV_MUTATION_NO_WRITE_SET_VALIDATION
  for (const auto& [r, l] : d->global_to_local) {
    if (!l->HasFlag(kWritten)) continue;
    int spins = 0;
    for (;;) {
      const uintptr_t v = r->h_revision.load(std::memory_order_acquire);
      if (IsRevisionPointer(v)) AbortTransaction(d, AbortCause::kReadConflict);
      if (IsLockValue(v)) {
        if (++spins > 64) std::this_thread::yield();  // no Poll: it could rehash the map we iterate
        continue;
      }
      break;
    }
  }
#endif
}

// seed 000 ValidateDuringCommit.
bool ValidateDuringCommit(TxDescriptor* d) {
#ifdef REVKV_MUTATION_NO_READ_VALIDATION
  return true;
#endif
  for (Object* r : d->list_of_read_objects) {
    const uintptr_t v = r->h_revision.load(std::memory_order_acquire);
    if (IsRevisionPointer(v)) return false;
    if (IsLockValue(v) && v != d->my_lock) return false;
  }
  return true;
}

// seed 000 BecomeInevitable, plus a check of the write set: after this no commit can replace a head
// we will lock, so AcquireLocks cannot fail for an inevitable transaction.
void BecomeInevitable(TxDescriptor* d) {
  if (d->is_inevitable) {
    // Asked for by the body itself: from here on it may have had irrevocable effects.
    d->inevitable_by_escalation = false;
    return;
  }
  Check(d->mode == TxMode::kReadWrite, "BecomeInevitable outside a read-write transaction");
  const uint64_t t0 = port::NowNanos();
  {
    SafeRegion region;  // a blocking wait: the collector need not wait for us
    InevitableMutex().lock();
  }
  d->counters.inevitable_wait_nanos.fetch_add(port::NowNanos() - t0, std::memory_order_relaxed);
  uint64_t cur;
  for (;;) {
    cur = GlobalCurTime().load(std::memory_order_seq_cst);
    InevitableStartTime().store(cur, std::memory_order_seq_cst);
    if (GlobalCurTime().compare_exchange_weak(cur, kInevitable, std::memory_order_seq_cst)) break;
  }
  if (d->start_time != cur) {
    d->start_time = cur;
    if (!ValidateDuringCommit(d) || !ValidateWriteSet(d)) {
      GlobalCurTime().store(cur, std::memory_order_seq_cst);  // must restore the value
      InevitableMutex().unlock();
      AbortTransaction(d, AbortCause::kValidation);
    }
  }
  d->is_inevitable = true;
  d->counters.inevitable.fetch_add(1, std::memory_order_relaxed);
}

// seed 000 FinishTransaction = FindRootsForLocalCollect + PerformLocalCollect + CommitTransaction.
void CommitTransaction(TxDescriptor* d) {
  // The body is over: an escalated attempt may give its inevitability back only from the body (a Retry()
  // that waits for a condition). From here a commit action may have begun an irrevocable effect, so an
  // abort is fatal again, as for any inevitable transaction.
  d->inevitable_by_escalation = false;
  if (d->doomed) AbortTransaction(d, AbortCause::kDoomedByGc);
  d->gcroots.clear();
  for (const auto& [r, l] : d->global_to_local) {
    if (l->HasFlag(kWritten)) d->gcroots.push_back(GcRoot{r, l, 0});
  }
  const size_t reads = d->list_of_read_objects.size();
  const size_t writes = d->gcroots.size();
  if (writes == 0 && d->publish_at_commit.empty() && !d->commit_action) {
    // Read-only: its reads are consistent as of start_time; nothing to publish, nothing to write.
    if (d->is_inevitable) ReleaseInevitable(d, d->start_time);
    d->last_commit_time = d->start_time;
    d->counters.commits.fetch_add(1, std::memory_order_relaxed);
    d->counters.read_set_sizes.Record(reads);
    return;
  }

  Poll();  // commit is a safepoint; the transaction state survives a collection here
  if (d->doomed) AbortTransaction(d, AbortCause::kDoomedByGc);

  // PerformLocalCollect: roots are the written copies and the objects to publish.
  std::vector<Object*> roots;
  roots.reserve(writes + d->publish_at_commit.size());
#ifdef REVKV_MUTATION_NO_LOCK_ORDER
  // Lock in the order of the writes (nursery copies are allocated in that order), not of the heads.
  std::sort(d->gcroots.begin(), d->gcroots.end(), [](const GcRoot& a, const GcRoot& b) { return a.l < b.l; });
#endif
  for (const GcRoot& g : d->gcroots) roots.push_back(g.l);
  for (const auto& [root, object] : d->publish_at_commit) roots.push_back(object);
  LocalCollect(std::span<Object*>(roots), &d->new_versioned);
  for (size_t i = 0; i < writes; ++i) d->gcroots[i].l = roots[i];
  for (size_t i = 0; i < d->publish_at_commit.size(); ++i) d->publish_at_commit[i].second = roots[writes + i];
  // global_to_local now names objects of the reset nursery; from here on the commit uses gcroots.
  d->global_to_local.clear();
#ifndef REVKV_MUTATION_NO_LOCK_ORDER
  std::sort(d->gcroots.begin(), d->gcroots.end(), [](const GcRoot& a, const GcRoot& b) { return a.r < b.r; });
#endif

  if (d->commit_action && !d->is_inevitable) BecomeInevitable(d);  // may abort (validation)

  // From here to UpdateChainHeads: no allocation, no blocking (but the inevitable wait, after
  // CancelLocks), no safepoint.
  d->commit_time_in_progress.store(kCommitPending, std::memory_order_seq_cst);
  AcquireLocks(d);
  uint64_t cur_time;
  if (d->is_inevitable) {
    cur_time = d->start_time;
    d->commit_time_in_progress.store(cur_time + 1, std::memory_order_release);
    if (d->commit_action) d->commit_action(cur_time + 1);
    ReleaseInevitable(d, cur_time + 2);
  } else {
    cur_time = GetGlobalCurTimeInCommit(d);
    while (!GlobalCurTime().compare_exchange_weak(cur_time, cur_time + 2, std::memory_order_seq_cst)) {
      cur_time = GetGlobalCurTimeInCommit(d);
    }
    d->commit_time_in_progress.store(cur_time + 1, std::memory_order_release);
    if (cur_time != d->start_time && !ValidateDuringCommit(d)) {
      AbortTransaction(d, AbortCause::kValidation);  // the last abort point
    }
  }
  UpdateChainHeads(d, cur_time);
  d->commit_time_in_progress.store(0, std::memory_order_release);
  d->last_commit_time = cur_time + 1;
  for (const auto& [root, object] : d->publish_at_commit) root->Store(object);

  CheckOneGlobalObjectSample();  // heap verification only: no global object's bytes changed
  d->counters.commits.fetch_add(1, std::memory_order_relaxed);
  d->counters.write_commits.fetch_add(1, std::memory_order_relaxed);
  d->counters.read_set_sizes.Record(reads);
  d->counters.write_set_sizes.Record(writes);
}

uint64_t ThisThreadLastCommitTime() { return Descriptor()->last_commit_time; }

namespace internal {

absl::Status RunAtomically(const std::function<void(Tx&)>& body) {
  TxDescriptor* d = Descriptor();
  Check(d->mode == TxMode::kNone, "Atomically inside a transaction");
  SetCurrentDescriptor(d);
  int aborts_in_row = 0;
  for (;;) {
    Poll();
    d->mode = TxMode::kReadWrite;
    d->start_time = LastCommittedTime();
    try {
      if (aborts_in_row >= kInevitableAfterAborts) {  // progress guarantee
        BecomeInevitable(d);
        d->inevitable_by_escalation = true;
      }
      body(d->tx);
      CommitTransaction(d);
      EndAttempt(d, /*committed=*/true);
      SetCurrentDescriptor(nullptr);
      return absl::OkStatus();
    } catch (const TxAbortSignal& abort) {
      d->counters.aborts[static_cast<int>(abort.cause)].fetch_add(1, std::memory_order_relaxed);
      d->counters.retries.fetch_add(1, std::memory_order_relaxed);
      const bool escalated = d->inevitable_by_escalation;
      EndAttempt(d, /*committed=*/false);  // gives an escalated attempt's inevitability up
      // An explicit Retry waits for other commits and must stay abortable: it does not count towards
      // the progress guarantee (which makes the attempt inevitable). An escalated attempt that retried
      // shows the body waits for a condition: the next attempts run as ordinary transactions again.
      if (abort.cause != AbortCause::kExplicit) {
        ++aborts_in_row;
      } else if (escalated) {
        aborts_in_row = 0;
      }
      Backoff(std::max(aborts_in_row, 1));
    } catch (TxFailSignal& fail) {
      EndAttempt(d, /*committed=*/false);
      SetCurrentDescriptor(nullptr);
      return std::move(fail.status);
    } catch (...) {
      EndAttempt(d, /*committed=*/false);
      SetCurrentDescriptor(nullptr);
      throw;
    }
  }
}

}  // namespace internal

}  // namespace revkv::runtime::stm
