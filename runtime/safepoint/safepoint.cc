// Thread registration and the stop-the-world protocol (DESIGN 2.4).
//
// The protocol, in terms of the sequentially consistent order of g_poll_word and each thread's state:
//  - The collector sets kStopRequested (a seq_cst RMW), then reads each thread's state (seq_cst) and
//    waits while it is kRunning.
//  - A thread leaving a safe region stores kRunning (seq_cst), then reads g_poll_word (seq_cst). Either
//    the collector saw kRunning and waits for it, or the thread sees the request, goes back to the
//    safe region and waits for the world to resume. There is no third outcome (Dekker's argument).
//  - A thread parks at a safepoint by publishing its stack top and registers, reading the epoch, and
//    storing kAtSafepoint; it waits until the epoch moves or the request is gone, so a stale request
//    bit read by Poll() cannot make it wait forever.
//  - The collector, before it releases the world, sets every parked thread back to kRunning itself:
//    a parked thread that has not yet woken up must not count as stopped for the next collection.
// The collector holds the registry mutex from StopTheWorld to ResumeTheWorld, so the set of threads
// is stable while it runs; a thread registering or unregistering waits (unregistering in a safe
// region, since the collector may be waiting for it).
#include "runtime/safepoint/safepoint.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "runtime/gc/collector.h"
#include "runtime/port/diagnostics.h"
#include "runtime/safepoint/thread_context.h"

namespace revkv::runtime {

namespace internal {
std::atomic<uint32_t> g_poll_word{0};

void PollSlow() {
  ThreadContext* self = CurrentThread();
  if (self == nullptr) {
    port::Fatal("revkv runtime: Poll() on an unregistered thread");
  }
  const uint32_t word = g_poll_word.load(std::memory_order_acquire);
  if (word & kStopRequested) {
    ThreadRegistry::Get().Park(self);
  } else if ((word & kMajorWanted) && !self->in_collection) {
    RunWantedMajorCollection();
  }
}
}  // namespace internal

namespace {
thread_local ThreadContext* t_current = nullptr;
}  // namespace

void internal::CheckNoCommitLocks(const char* what) {
  if (t_current != nullptr && t_current->holds_commit_locks) {
    port::Fatal("revkv runtime: %s on thread '%s', which holds STM header locks", what,
                t_current->name.c_str());
  }
}

void internal::CheckHeapAccess(const char* what) {
  if (t_current == nullptr) return;
  const char* why = t_current->safe_region_depth > 0    ? "which is in a safe region"
                    : t_current->in_collection_listener ? "inside a collection listener"
                                                        : nullptr;
  if (why != nullptr) {
    port::Fatal("revkv runtime: %s on thread '%s', %s", what, t_current->name.c_str(), why);
  }
}

namespace {

// How long the collector spins on a running thread before sleeping on its state word. Threads poll
// every few microseconds, so most stops complete within the spin.
constexpr uint64_t kStopSpinNanos = 50'000;

// Once the watchdog has spoken, the collector blocks on a late thread's state word in slices of this
// length; a wake-up, not the slice, ends the wait.
constexpr uint64_t kStopBlockNanos = 1'000'000'000;

// The collector blocks on a thread's state word with a futex wait (port::WaitOnWord), which reads the
// word as a plain 32-bit integer.
static_assert(sizeof(std::atomic<ThreadState>) == sizeof(uint32_t) &&
              std::atomic<ThreadState>::is_always_lock_free);

// The watchdog threshold. Relaxed: a plain setting, read once per stop; no other memory hangs on it.
std::atomic<uint64_t> g_watchdog_nanos{50'000'000};

const char* StateName(ThreadState state) {
  switch (state) {
    case ThreadState::kRunning:
      return "running";
    case ThreadState::kSafeRegion:
      return "in a safe region";
    case ThreadState::kAtSafepoint:
      return "at a safepoint";
  }
  return "unknown";
}

// Logs a thread the stop has waited for past the threshold: its name (immutable after registration)
// and its state (relaxed: for the message only; the wait loop reads it with the order that matters).
void ReportLateThread(const ThreadContext* t, uint64_t waited_nanos) {
  RecordLateSafepoint();
  port::Warn(
      "revkv runtime: stop-the-world has waited %.1f ms for thread '%s' (index %u), which is %s and has "
      "not polled",
      static_cast<double>(waited_nanos) / 1e6, t->name.c_str(), static_cast<unsigned>(t->index),
      StateName(t->state.load(std::memory_order_relaxed)));
}
}  // namespace

void SetSafepointWatchdogNanos(uint64_t nanos) { g_watchdog_nanos.store(nanos, std::memory_order_relaxed); }

ThreadContext* CurrentThread() { return t_current; }

ThreadRegistry& ThreadRegistry::Get() {
  static ThreadRegistry* registry = new ThreadRegistry();  // never destroyed: threads may outlive main
  return *registry;
}

void PublishStackAndRegisters(ThreadContext* self) {
  port::CaptureCalleeSavedRegisters(&self->registers);
  // Relaxed: the state store that follows (release or seq_cst) publishes it to the collector.
  self->stack_top.store(port::ApproximateStackPointer(), std::memory_order_relaxed);
}

ThreadContext* ThreadRegistry::Register(std::string_view name) {
  auto* tc = new ThreadContext();
  tc->name = std::string(name);
  const port::StackBounds bounds = port::CurrentThreadStackBounds();
  tc->stack_low = bounds.low;
  tc->stack_high = bounds.high;
  std::lock_guard<std::mutex> lock(mu_);  // a running collection holds it: we are not yet counted
  auto free_index = std::find(index_in_use_.begin(), index_in_use_.end(), false);
  size_t index = static_cast<size_t>(free_index - index_in_use_.begin());
  if (free_index == index_in_use_.end())
    index_in_use_.push_back(true);
  else
    *free_index = true;
  if (index >= 0xFFFF) {
    port::Fatal("revkv runtime: too many registered threads");
  }
  tc->index = static_cast<uint16_t>(index + 1);  // 0 means "no owner"
  tc->state.store(ThreadState::kRunning, std::memory_order_relaxed);
  threads_.push_back(tc);
  count_.store(static_cast<int>(threads_.size()), std::memory_order_relaxed);
  return tc;
}

void ThreadRegistry::Unregister(ThreadContext* self) {
  EnterSafeRegion(self);
  {
    std::lock_guard<std::mutex> lock(mu_);
    threads_.erase(std::find(threads_.begin(), threads_.end(), self));
    index_in_use_[self->index - 1] = false;
    count_.store(static_cast<int>(threads_.size()), std::memory_order_relaxed);
  }
  delete self;
}

// Without mu_: a registered thread blocking on it would hold up a stop-the-world.
int ThreadRegistry::Count() { return count_.load(std::memory_order_relaxed); }

uint64_t ThreadRegistry::StopTheWorld(ThreadContext* self) {
  mu_.lock();
  const uint64_t t0 = port::NowNanos();
  internal::g_poll_word.fetch_or(internal::kStopRequested, std::memory_order_seq_cst);
  const uint64_t watchdog = g_watchdog_nanos.load(std::memory_order_relaxed);
  for (ThreadContext* t : threads_) {
    if (t == self) continue;
    // The collector waits for one thread at a time, so a thread's lateness runs from when the collector
    // turns to it (never before the stop's start): a thread queued behind a late one is not blamed for
    // that one's delay, and is reported only if it alone holds the stop up past the threshold.
    const uint64_t since = port::NowNanos();
    bool watching = watchdog != 0;  // until this thread is reported
    while (t->state.load(std::memory_order_seq_cst) == ThreadState::kRunning) {
      const uint64_t waited = port::NowNanos() - since;
      if (waited < kStopSpinNanos) {
        port::CpuRelax();
        continue;
      }
      if (watching && waited >= watchdog) {
        ReportLateThread(t, waited);
        watching = false;
      }
      // Block on the state word itself: Park and EnterSafeRegion wake us the moment they store, so the
      // stop ends as soon as the thread parks. The timeout only gives the watchdog its turn; the kernel
      // returns at once if the word no longer holds kRunning, and the loop re-reads it (seq_cst).
      port::WaitOnWord(&t->state, static_cast<uint32_t>(ThreadState::kRunning),
                       watching ? watchdog - waited : kStopBlockNanos);
    }
  }
  return port::NowNanos() - t0;
}

void ThreadRegistry::ResumeTheWorld() {
  // Parked threads are handed back to kRunning here, by the collector, before the next collector can
  // take mu_. Otherwise a thread still asleep from this stop would look stopped to the next collector
  // while it wakes up and runs. Threads in safe regions stay there.
  for (ThreadContext* t : threads_) {
    ThreadState parked = ThreadState::kAtSafepoint;
    t->state.compare_exchange_strong(parked, ThreadState::kRunning, std::memory_order_seq_cst);
  }
  internal::g_poll_word.fetch_and(~internal::kStopRequested, std::memory_order_seq_cst);
  epoch_.fetch_add(1, std::memory_order_release);
  epoch_.notify_all();
  mu_.unlock();
}

void ThreadRegistry::WaitForWorldToResume(uint32_t epoch) {
  while ((internal::g_poll_word.load(std::memory_order_seq_cst) & internal::kStopRequested) &&
         epoch_.load(std::memory_order_acquire) == epoch) {
    epoch_.wait(epoch, std::memory_order_acquire);
  }
}

void ThreadRegistry::Park(ThreadContext* self) {
  PublishStackAndRegisters(self);
  const uint32_t epoch = epoch_.load(std::memory_order_acquire);
  self->state.store(ThreadState::kAtSafepoint, std::memory_order_seq_cst);
  port::WakeAllWaiters(&self->state);  // the collector may be blocked on our state
  WaitForWorldToResume(epoch);
  self->state.store(ThreadState::kRunning, std::memory_order_seq_cst);
}

void ThreadRegistry::EnterSafeRegion(ThreadContext* self) {
  if (self->safe_region_depth++ > 0) return;
  PublishStackAndRegisters(self);
  self->state.store(ThreadState::kSafeRegion, std::memory_order_seq_cst);
  // Only a collector waiting for us needs a wake-up; skip the system call otherwise.
  if (internal::g_poll_word.load(std::memory_order_seq_cst) & internal::kStopRequested) {
    port::WakeAllWaiters(&self->state);
  }
}

void ThreadRegistry::LeaveSafeRegion(ThreadContext* self) {
  if (--self->safe_region_depth > 0) return;
  for (;;) {
    self->state.store(ThreadState::kRunning, std::memory_order_seq_cst);
    if (!(internal::g_poll_word.load(std::memory_order_seq_cst) & internal::kStopRequested)) return;
    // A collection is stopping or has stopped the world: go back and wait for it to end.
    const uint32_t epoch = epoch_.load(std::memory_order_acquire);
    self->state.store(ThreadState::kSafeRegion, std::memory_order_seq_cst);
    port::WakeAllWaiters(&self->state);
    WaitForWorldToResume(epoch);
  }
}

// ----- public API -----------------------------------------------------------------------------------

namespace {

void UnregisterCurrentThread() {
  ThreadContext* self = t_current;
  if (self->roots.next != &self->roots) {
    port::Fatal("revkv runtime: thread '%s' unregistered with live Root<> objects", self->name.c_str());
  }
  ReleaseThreadHeap(self);
  t_current = nullptr;
  ThreadRegistry::Get().Unregister(self);
}

// A visiting thread's registration (HeapVisit): made by its first visit, undone when the thread exits
// (thread_local destruction runs on the exiting thread, between visits: in its safe region).
struct VisitorRegistration {
  ThreadContext* context = nullptr;
  ~VisitorRegistration() {
    if (context == nullptr || t_current != context) return;
    context->safe_region_depth = 1;
    ThreadRegistry::Get().LeaveSafeRegion(context);  // may wait for a collection to end
    UnregisterCurrentThread();
  }
};
thread_local VisitorRegistration t_visitor;

// Leaves the calling thread's safe region, however deeply nested, and returns the depth it had; the
// thread then runs (LeaveSafeRegion waits for a collection in progress to end).
int LeaveSafeRegionFully(ThreadContext* self) {
  const int depth = self->safe_region_depth;
  self->safe_region_depth = 1;
  ThreadRegistry::Get().LeaveSafeRegion(self);
  return depth;
}

// Goes back into a safe region at `depth`, publishing the stack as it is now.
void ReenterSafeRegion(ThreadContext* self, int depth) {
  ThreadRegistry::Get().EnterSafeRegion(self);
  self->safe_region_depth = depth;
}

}  // namespace

ThreadRegistration::ThreadRegistration(std::string_view name) {
  if (t_current != nullptr) {
    if (t_current == t_visitor.context && t_current->safe_region_depth > 0) {
      visit_depth_ = LeaveSafeRegionFully(t_current);
      return;
    }
    port::Fatal("revkv runtime: thread registered twice");
  }
  InitializeRuntime();
  t_current = ThreadRegistry::Get().Register(name);
}

ThreadRegistration::~ThreadRegistration() {
  if (visit_depth_ >= 0) {
    ReenterSafeRegion(t_current, visit_depth_);
    return;
  }
  UnregisterCurrentThread();
}

HeapVisit::HeapVisit(std::string_view name) : depth_(0) {
  if (t_current == nullptr) {
    InitializeRuntime();
    t_current = ThreadRegistry::Get().Register(name);
    t_visitor.context = t_current;
    depth_ = 1;  // afterwards, in the safe region it stays in between visits
    return;
  }
  if (t_current->safe_region_depth > 0) depth_ = LeaveSafeRegionFully(t_current);
}

HeapVisit::~HeapVisit() {
#ifdef REVKV_MUTATION_VISIT_STAYS_RUNNING
  return;  // mutation test: a visiting thread stays running after a visit, outside any safe region
#endif
  if (depth_ > 0) ReenterSafeRegion(t_current, depth_);
}

bool IsVisitingThread() { return t_current != nullptr && t_current == t_visitor.context; }

bool IsThreadRegistered() { return t_current != nullptr; }

int RegisteredThreadCount() { return ThreadRegistry::Get().Count(); }

SafeRegion::SafeRegion() : active_(t_current != nullptr) {
#ifdef REVKV_DEBUG_CHECKS
  internal::CheckNoCommitLocks("entering a safe region");
#endif
  if (active_) ThreadRegistry::Get().EnterSafeRegion(t_current);
}

SafeRegion::~SafeRegion() {
  if (active_) ThreadRegistry::Get().LeaveSafeRegion(t_current);
}

}  // namespace revkv::runtime
