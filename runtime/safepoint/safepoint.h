// revkv runtime — threads and safepoints (public header).
//
// Every thread that touches the heap registers (ThreadRegistration, an RAII scope). A registered
// thread is in one of three states:
//   running       — it may touch the heap; the collector waits for it to reach a safepoint;
//   safe region   — it is blocked or busy outside the heap (I/O, waiting for work, an OS mutex); its
//                   registers are saved and its stack top published; the collector does not wait for
//                   it, and if it leaves the region while a collection runs it blocks until the end;
//   at safepoint  — it stopped at a Poll() because a collection asked it to.
// Poll() is one relaxed load. Polls sit at transaction begin and commit, in allocation slow paths and
// in long loops; never between acquiring and releasing STM header locks.
//
// Stacks are scanned conservatively, so a heap pointer held in a local variable at a safepoint is safe:
// its object is pinned. Code inside a safe region must not touch the heap.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace revkv::runtime {

// Registers the calling thread with the runtime for the lifetime of the object (which must live on
// that thread's stack). Starts the runtime with default options if nobody did. May block while a
// collection runs. Registering a thread twice aborts.
//
// On a thread a HeapVisit registered (below), a ThreadRegistration is a visit: the thread runs for the
// object's lifetime and goes back to its safe region afterwards.
class ThreadRegistration {
 public:
  explicit ThreadRegistration(std::string_view name = "");
  ~ThreadRegistration();
  ThreadRegistration(const ThreadRegistration&) = delete;
  ThreadRegistration& operator=(const ThreadRegistration&) = delete;

 private:
  int visit_depth_ = -1;  // >= 0: a visit on a visiting thread (the safe-region depth to go back to)
};

// A visit to the heap by a thread the runtime does not own: gRPC's callback threads, which run request
// handlers between work of their own. For the object's lifetime the calling thread may touch the heap.
// - On an unregistered thread, the first visit registers it for the rest of its life (a visiting
//   thread, unregistered when it exits). Between visits it stays in a safe region: collections never
//   wait for it, and its stack is scanned from where its last visit ended.
// - On a thread in a safe region (a visiting thread between visits, or a registered thread whose
//   blocking call runs the handler inline), the thread leaves the region for the visit and goes back
//   to it, at the same depth, afterwards. The code that entered that region must hold no transaction.
// - On a running registered thread, nothing.
// Visits nest. The object must live on the visiting thread's stack.
class HeapVisit {
 public:
  explicit HeapVisit(std::string_view name);
  ~HeapVisit();
  HeapVisit(const HeapVisit&) = delete;
  HeapVisit& operator=(const HeapVisit&) = delete;

 private:
  int depth_;  // the safe-region depth to go back to (0: the thread was running)
};

// True if the calling thread was registered by a HeapVisit.
bool IsVisitingThread();

// True if the calling thread is registered.
bool IsThreadRegistered();

namespace internal {
// Bit 0: a stop-the-world is requested. Bit 1: a major collection is wanted (some thread will run it
// at its next poll). Read with relaxed order by Poll(); the slow path re-reads with stronger order.
inline constexpr uint32_t kStopRequested = 1u << 0;
inline constexpr uint32_t kMajorWanted = 1u << 1;
extern std::atomic<uint32_t> g_poll_word;
void PollSlow();
// Debug builds: aborts, naming `what`, if the calling thread holds STM header locks (see
// ThreadContext::holds_commit_locks). A no-op on an unregistered thread.
void CheckNoCommitLocks(const char* what);
// Debug builds: aborts, naming `what`, if the calling thread may not touch the heap now: it is in a
// safe region (a collection may be running and moving what it would touch) or inside a collection
// listener (which runs on the collecting thread and must not allocate). A no-op on an unregistered
// thread.
void CheckHeapAccess(const char* what);
}  // namespace internal

// A safepoint poll: stops here if a collection asked all threads to stop, or runs a wanted major
// collection. The calling thread must be registered and must not hold STM header locks.
inline void Poll() {
#ifdef REVKV_DEBUG_CHECKS
  internal::CheckNoCommitLocks("Poll()");
  internal::CheckHeapAccess("Poll()");
#endif
  if (internal::g_poll_word.load(std::memory_order_relaxed) != 0) [[unlikely]] {
    internal::PollSlow();
  }
}

// Marks the calling thread as being in a safe region for the lifetime of the object: use around
// blocking calls. The code inside must not touch the heap. Nests. Leaving blocks while a collection
// runs. No-op on an unregistered thread.
class SafeRegion {
 public:
  SafeRegion();
  ~SafeRegion();
  SafeRegion(const SafeRegion&) = delete;
  SafeRegion& operator=(const SafeRegion&) = delete;

 private:
  bool active_;
};

// The time-to-safepoint watchdog: a stop-the-world that has waited `nanos` (default 50 ms) for a
// thread still running logs that thread's name and state to stderr and counts it in
// GcStatistics::late_safepoints, then goes on waiting. 0 turns the watchdog off. Thread-safe.
void SetSafepointWatchdogNanos(uint64_t nanos);

// Number of registered threads. Thread-safe.
int RegisteredThreadCount();

}  // namespace revkv::runtime
