// Internal interface between the heap, the safepoint module and the collectors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/gc/gc.h"
#include "runtime/heap/heap.h"
#include "runtime/port/port.h"

namespace revkv::runtime {

struct ThreadContext;

// The options the runtime was started with.
const HeapOptions& RuntimeOptions();

// Allocation slow paths (heap.cc calls them). Both may reach a safepoint and collect; they return
// nullptr when the heap is exhausted even after a major collection.
char* AllocateSmallSlow(ThreadContext* self, size_t size);
char* AllocateLargeSlow(ThreadContext* self, size_t size);

// Runs the major collection the page space asked for (poll bit kMajorWanted), unless another thread
// already is. Called from Poll().
void RunWantedMajorCollection();

// The ambiguous roots of the thread that runs a collection: its callee-saved registers and the top of
// its stack, captured when it asks for the collection, before any frame of the collector exists. A scan
// starting inside the collector would also cover the collector's own frames, and the words its work
// leaves there (chunk addresses, copies of object pointers) would pin what they point to. The entry
// points capture these, then collect in a frame of their own below `top` (a function not inlined).
struct MutatorStack {
  port::SavedRegisters registers;
  uintptr_t top;
};
// Captures the calling thread's callee-saved registers and a stack top below the caller's frame.
void CaptureMutatorStack(MutatorStack* out);

// Runs a major collection on behalf of `self` (registered, running, not collecting). If
// `unless_generation_past` is not kAlwaysCollect and a major collection completed after that generation
// (while we waited for the collector mutex), returns without collecting again.
inline constexpr uint64_t kAlwaysCollect = ~uint64_t{0};
void RunMajorCollection(ThreadContext* self, const char* reason,
                        uint64_t unless_generation_past = kAlwaysCollect,
                        MajorMode mode = MajorMode::kSelective);
// Major collections completed so far.
uint64_t MajorGeneration();
// Runs a minor collection of `self`'s nursery.
void RunMinorCollection(ThreadContext* self, const char* reason);

// Returns the thread's nursery and allocation regions to the page space (thread exit).
void ReleaseThreadHeap(ThreadContext* self);

// The object in [chunk, fringe) containing `word`, or nullptr (heap.cc).
Object* FindObjectInChunk(char* chunk, char* fringe, uintptr_t word);
// Both referents of `word` among the objects of [chunk, fringe): the object it points into, and the
// object it points one past the end of (at `fringe`, the chunk's last object). Reads the chunk's
// object-start map (runtime/heap/object_starts.h): the caller must own the chunk or have its owner
// stopped.
AmbiguousReferents FindReferentsInChunk(char* chunk, char* fringe, uintptr_t word);
// The same answer from a linear parse of the chunk from its start: what FindReferentsInChunk did before
// the object-start map, kept as the verifier's reference and the benchmarks' baseline.
AmbiguousReferents ParseReferentsInChunk(char* chunk, char* fringe, uintptr_t word);
// Benchmarks and tests: false makes every resolution of an ambiguous word parse its chunk
// (ParseReferentsInChunk) instead of reading the object-start map; true (the default) reads the map.
// Only while no collection runs. The map is kept up to date either way.
void SetObjectStartMapResolution(bool on);
// Cross-checks the object-start map of every small-object page against a linear parse of its chunks
// (the invariant in object_starts.h). Returns "" if they agree, else a description of the first
// disagreement. The heap must not change meanwhile (world stopped, or no other registered thread), and
// every thread's allocation regions must be retired (as after a collection).
std::string CheckObjectStartMaps();

// The installed collector client, or nullptr.
CollectorClient* Client();

// Records a finished collection in the cumulative statistics and notifies listeners (statistics.cc).
void RecordCollection(const CollectionRecord& record);
// Adds one local collection to the calling thread's shard of the figures (cheap: every commit calls it).
void RecordLocalCollection(uint64_t pause_nanos, uint64_t bytes_promoted);
void RecordTimeToSafepoint(uint64_t nanos);
void RecordAllocationFailure();
void RecordLateSafepoint();
uint64_t NextSequence(CollectionKind kind);
uint64_t WallClockNanos();

// Test hook: called by the major collector while the world is stopped, before it collects. Setting it
// waits for a running major collection to finish (inside a safe region on a registered thread).
void SetStoppedWorldHookForTesting(std::function<void()> hook);
void RunStoppedWorldHookForTesting();

// ----- The heap verifier (verifier.cc) -----
// Reads REVKV_VERIFY_HEAP (on by default where REVKV_DEBUG_CHECKS is defined); InitializeRuntime calls it.
void InitHeapVerification();
// Whether collections verify the heap after they finish. Thread-safe.
bool HeapVerificationEnabled();
// Checks every object of the heap after a major collection; aborts with a message on a broken
// invariant. World stopped.
void VerifyHeapAfterMajorCollection(const std::vector<ThreadContext*>& threads);
// Checks the survivors of `self`'s minor or local collection after its nursery was reset; aborts with a
// message on a broken invariant. Owner thread, inside the collection.
// `promoted_chunks` are the nursery chunks it promoted in place (their object-start maps are checked).
void VerifySurvivorsOfNurseryCollection(ThreadContext* self, const std::vector<Object*>& survivors,
                                        const std::vector<char*>& promoted_chunks);
// The immutability check of global objects (verifier.cc): samples some of `published` (objects a local
// collection just made global); checks one sample (a write commit, after publishing); checks every sample
// and forgets them all (a major collection, world stopped, before anything moves). Each aborts with a
// message if a sampled object's bytes other than its header and reference slots changed. No-ops unless
// HeapVerificationEnabled(). Thread-safe; never polls, blocks on the heap or allocates on it.
void SampleGlobalObjects(const std::vector<Object*>& published);
void CheckOneGlobalObjectSample();
void CheckAndForgetGlobalObjectSamples();

// Serializes major collections (and explicit minor ones requested while one runs).
std::mutex& CollectorMutex();

}  // namespace revkv::runtime
