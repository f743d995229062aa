// The runtime's record of one registered thread, and the registry of all of them.
//
// A ThreadContext is created by ThreadRegistration and lives until the thread unregisters. Its owner
// thread writes it freely while running; the collector reads and updates it (stack bounds, saved
// registers, heap regions, roots, client state) only while the owner is stopped at a safepoint or in a
// safe region. The owner's release store of `state` and the collector's acquire load of it order the
// two; the collector's release of the world (the epoch) orders its writes before the owner runs on.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/gc/gc.h"
#include "runtime/heap/thread_heap.h"
#include "runtime/port/port.h"

namespace revkv::runtime {

enum class ThreadState : uint32_t {
  kRunning = 0,      // may touch the heap
  kSafeRegion = 1,   // outside the heap; stack top and registers published
  kAtSafepoint = 2,  // stopped in Poll() for a collection; stack top and registers published
};

struct ThreadContext {
  uint16_t index = 0;  // small id: chunk owner, STM lock values
  std::string name;
  std::atomic<ThreadState> state{ThreadState::kRunning};  // written by the owner, read by the collector
  uintptr_t stack_high = 0;                               // base of the stack (immutable)
  uintptr_t stack_low = 0;                                // lowest address of the stack (immutable)
  std::atomic<uintptr_t> stack_top{0};                    // published at safepoints and safe-region entry
  port::SavedRegisters registers{};                       // captured with stack_top
  int safe_region_depth = 0;                              // owner only
  bool in_collection = false;  // owner only: a minor or local collection is running
  // Owner only: the STM holds header locks (from AcquireLocks to their release). Debug builds
  // (REVKV_DEBUG_CHECKS) abort when such a thread polls, enters a safe region or allocates: a collection
  // must never find a locked header, and a thread spinning on the lock must never wait for a stop.
  bool holds_commit_locks = false;
  // Owner only: collection listeners are running on this thread (statistics.cc). Debug builds abort when
  // such a thread touches the heap (internal::CheckHeapAccess): a listener must not allocate.
  bool in_collection_listener = false;
  ThreadHeap heap;
  internal::RootNode roots{&roots, &roots,
                           internal::RootNode::kMask};  // sentinel of the thread's Root<T> list
  void* client_state = nullptr;                         // the STM's per-thread transaction state
};

// The calling thread's context, or nullptr if it is not registered.
ThreadContext* CurrentThread();

// All registered threads and the stop-the-world protocol.
// Lock order: the collector's mutex (gc) before `mu`.
class ThreadRegistry {
 public:
  static ThreadRegistry& Get();

  // Adds/removes the calling thread. Remove enters a safe region while it waits for `mu`.
  ThreadContext* Register(std::string_view name);
  void Unregister(ThreadContext* self);

  // Stops every registered thread other than `self` (which must hold no lock another thread needs to
  // reach a safepoint). On return every other thread is at a safepoint or in a safe region, `mu` is
  // held, and `threads()` is stable. Returns the time-to-safepoint in nanoseconds.
  uint64_t StopTheWorld(ThreadContext* self);
  // Lets the threads go. Requires a preceding StopTheWorld by the calling thread.
  void ResumeTheWorld();

  const std::vector<ThreadContext*>& threads() const { return threads_; }  // stopped world only
  int Count();

  // Parks the calling thread at a safepoint until the current stop-the-world ends.
  void Park(ThreadContext* self);
  void EnterSafeRegion(ThreadContext* self);
  void LeaveSafeRegion(ThreadContext* self);

 private:
  ThreadRegistry() = default;
  void WaitForWorldToResume(uint32_t epoch);

  std::mutex mu_;
  std::vector<ThreadContext*> threads_;  // guarded by mu_
  std::vector<bool> index_in_use_;       // guarded by mu_
  std::atomic<int> count_{0};            // threads_.size(), readable without mu_
  std::atomic<uint32_t> epoch_{0};       // bumped each time a stopped world resumes (32 bits: futex)
};

// Publishes the calling thread's stack top and callee-saved registers for the scanner.
void PublishStackAndRegisters(ThreadContext* self);

}  // namespace revkv::runtime
