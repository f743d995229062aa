// Entry points of the collector: explicit collections, allocation slow paths, the client hook.
#include "runtime/gc/collector.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "runtime/heap/page_space.h"
#include "runtime/port/diagnostics.h"
#include "runtime/safepoint/safepoint.h"
#include "runtime/safepoint/thread_context.h"

namespace revkv::runtime {

namespace {
std::atomic<CollectorClient*> g_client{nullptr};

ThreadContext* RequireRunningThread(const char* what) {
  ThreadContext* self = CurrentThread();
  if (self == nullptr || self->in_collection) {
    port::Fatal("revkv runtime: %s on an unregistered or collecting thread", what);
  }
  return self;
}
}  // namespace

namespace {
std::function<void()>* g_stopped_world_hook = nullptr;  // collector mutex
}  // namespace

void SetStoppedWorldHookForTesting(std::function<void()> hook) {
  // Waits for the mutex as RunMajorCollection does: a registered thread blocking on it while running
  // would hold up the stop-the-world of the collection that holds it.
  std::unique_lock<std::mutex> lock(CollectorMutex(), std::try_to_lock);
  if (!lock.owns_lock()) {
    SafeRegion waiting;  // a no-op on an unregistered thread
    lock.lock();
  }
  delete g_stopped_world_hook;
  g_stopped_world_hook = hook ? new std::function<void()>(std::move(hook)) : nullptr;
}

void RunStoppedWorldHookForTesting() {
  if (g_stopped_world_hook != nullptr) (*g_stopped_world_hook)();
}

__attribute__((noinline)) void CaptureMutatorStack(MutatorStack* out) {
  port::CaptureCalleeSavedRegisters(&out->registers);
  out->top = port::ApproximateStackPointer();  // below this frame: every frame of the caller is above it
}

std::mutex& CollectorMutex() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}

CollectorClient* Client() { return g_client.load(std::memory_order_acquire); }
void SetCollectorClient(CollectorClient* client) { g_client.store(client, std::memory_order_release); }
void*& ThreadClientState() { return RequireRunningThread("ThreadClientState")->client_state; }

void CollectMajor(MajorMode mode) {
  ThreadContext* self = RequireRunningThread("CollectMajor");
  RunMajorCollection(self, "requested", kAlwaysCollect, mode);
}

void CollectMinor() {
  ThreadContext* self = RequireRunningThread("CollectMinor");
  Poll();
  RunMinorCollection(self, "requested");
}

MajorCollectionDeferral::MajorCollectionDeferral() { PageSpace::Get().DeferMajorTrigger(1); }
MajorCollectionDeferral::~MajorCollectionDeferral() {
  PageSpace::Get().DeferMajorTrigger(-1);
  PageSpace::Get().CheckMajorTrigger();  // what growth deferred is wanted at the next poll
}

void RunWantedMajorCollection() {
  ThreadContext* self = CurrentThread();
  const uint64_t generation = MajorGeneration();
  if (internal::g_poll_word.load(std::memory_order_acquire) & internal::kMajorWanted) {
    RunMajorCollection(self, "heap growth", generation);  // one collection however many threads ask
  }
}

char* AllocateSmallSlow(ThreadContext* self, size_t size) {
  if (self->in_collection) {
    port::Fatal("revkv runtime: allocation during a collection");
  }
  Poll();  // once per nursery chunk: what bounds the time an allocating thread takes to a safepoint
  ThreadHeap& heap = self->heap;
  if (char* p = heap.TryAllocateNursery(size)) return p;  // the nursery's next chunk
  const size_t nursery_bytes = RuntimeOptions().nursery_bytes;
  if (heap.nursery_chunks().empty()) {
    if (!heap.FillNursery(nursery_bytes, self->index)) {
      RunMajorCollection(self, "heap exhausted", MajorGeneration());
      if (!heap.FillNursery(nursery_bytes, self->index)) {
        RecordAllocationFailure();
        return nullptr;
      }
    }
    if (char* p = heap.TryAllocateNursery(size)) return p;
  }
  RunMinorCollection(self, "nursery full");
  if (char* p = heap.TryAllocateNursery(size)) return p;
  // Promotions in place took nursery chunks and the heap had none to give back.
  RunMajorCollection(self, "heap exhausted", MajorGeneration());
  heap.FillNursery(nursery_bytes, self->index);
  heap.ResetNursery();
  if (char* p = heap.TryAllocateNursery(size)) return p;
  RecordAllocationFailure();
  return nullptr;
}

char* AllocateLargeSlow(ThreadContext* self, size_t size) {
  Poll();
  if (char* p = PageSpace::Get().AllocateLarge(size)) return p;
  RunMajorCollection(self, "heap exhausted", MajorGeneration());
  if (char* p = PageSpace::Get().AllocateLarge(size)) return p;
  RecordAllocationFailure();
  return nullptr;
}

void ReleaseThreadHeap(ThreadContext* self) { self->heap.ReleaseNursery(); }

}  // namespace revkv::runtime
