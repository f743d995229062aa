// Test-only hooks into the major collection, compiled only where REVKV_TEST_HOOKS is defined (as
// runtime/stm/test_hooks.h: the runtime tests' library revkv_runtime_test_hooks and the mutation builds;
// the server's library has neither the definitions nor the calls).
#pragma once

#include "runtime/heap/heap.h"

#ifdef REVKV_TEST_HOOKS
namespace revkv::runtime::gc_testing {

// Called by a collector thread in EvacuateCandidate (major_collection.cc, docs/runtime-heap-gc.md 7.3
// "Parallel tracing") after it found `o`, an object of a candidate chunk, neither forwarded, pinned nor
// claimed, and before its compare-and-swap that claims it. A hook may block for a while (a test then
// lets another collector thread claim and copy `o`, so that this thread's claim fails) but must return,
// and must not allocate on the heap, take a lock the collector takes or reach a safepoint: the world is
// stopped and the caller may be a helper thread. It may read `o`'s header and `h_commit_time`.
using ClaimHook = void (*)(const Object* o);

// Installs `hook` (nullptr: none). Install it before the collection and remove it after.
void SetClaimHook(ClaimHook hook);

}  // namespace revkv::runtime::gc_testing
#endif  // REVKV_TEST_HOOKS
