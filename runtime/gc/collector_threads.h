// The collector threads of the major collection (docs/runtime-heap-gc.md 7.3 "Parallel tracing" and
// section 9): a small pool of helper threads, started on first use and kept parked on a condition
// variable between collections, that run one job in parallel with the collecting thread.
//
// The helpers are not mutator threads: they never register with the ThreadRegistry (so the safepoint
// protocol neither waits for them nor scans them), never allocate on the heap and never run anything but
// the job the collector hands them, while the world is stopped. A process that forks (death tests)
// leaves its helpers behind: the child starts a fresh pool on its first collection.
#pragma once

#include <cstddef>
#include <functional>

namespace revkv::runtime {

// Runs job(0) on the calling thread and job(1) ... job(workers - 1) on helper threads, and returns when
// all have returned. Everything the caller wrote before the call happens-before each job; everything the
// jobs wrote happens-before the return. One caller at a time (the collector mutex serializes them).
void RunOnCollectorThreads(size_t workers, const std::function<void(size_t worker)>& job);

// The number of collector threads major collections use: SetCollectorThreads' value if it was called,
// else HeapOptions::collector_threads, else REVKV_GC_THREADS from the environment, else one per core
// (std::thread::hardware_concurrency). At least 1, at most kMaxCollectorThreads.
size_t CollectorThreads();

}  // namespace revkv::runtime
