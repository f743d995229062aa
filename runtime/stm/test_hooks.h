// Test-only hooks into the STM, compiled only where REVKV_TEST_HOOKS is defined: the runtime library the
// runtime tests link (revkv_runtime_test_hooks in runtime/CMakeLists.txt) and the mutation builds of
// scripts/mutate. The server's library (revkv_runtime) has neither the declarations' definitions nor the
// calls, so a hook costs nothing there.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/heap/heap.h"

#ifdef REVKV_TEST_HOOKS
namespace revkv::runtime::stm::testing {

// Called by chain compression (PossiblyUpdateChain) in the compressing thread, once per link, after it
// loaded `loaded` from `link->h_revision` and decided to redirect the link to `target`, and before its
// store (a compare-and-swap from `loaded`). A hook may block (the test then changes the chain under the
// paused compressor) or throw (the exception ends the transaction attempt and leaves Atomically). It must
// not allocate on the heap or reach a safepoint: the compressor is inside a transaction and is not parked.
using CompressionHook = void (*)(const Object* link, uintptr_t loaded, const Object* target);

// Installs `hook` (nullptr: none) for every thread. Not synchronised with running compressors: install
// it before starting them and remove it after joining them.
void SetCompressionHook(CompressionHook hook);

// Called by a committing transaction in AcquireLocks, in the committing thread, right after it locked
// `head` (the `index`-th lock it takes in this attempt). A hook may block for a while (a test then lets
// another committer run against the locks already held) but must return, and must not allocate on the
// heap or reach a safepoint: the committer holds header locks and is not parked.
using LockHook = void (*)(const Object* head, size_t index);

// Installs `hook` (nullptr: none) for every thread, under the same rule as SetCompressionHook.
void SetLockHook(LockHook hook);

}  // namespace revkv::runtime::stm::testing
#endif  // REVKV_TEST_HOOKS
