// The GC benchmark's workload, written once for both heaps.
//
// A long-lived binary tree of small nodes (two references and 16 bytes of payload) held by one root,
// plus a stream of short-lived allocations: each step builds a temporary tree of kTempTreeNodes nodes
// and stores it in slot (step % kRingSlots) of a per-thread ring, so a temporary tree dies
// kRingSlots steps later (about 46 KiB of allocation on revkv). The phases, in order:
//   build      the long-lived tree, then one full collection to start from a settled heap;
//   stream     one thread runs `stream_steps` steps: ns per allocation and the collections it causes;
//   threads    two threads (no more than the cores) stream for `two_thread_seconds`; thread 0 forces
//              a full collection every `force_interval_ms`: time-to-safepoint and pauses under load;
//   forced     one thread runs `forced_collections` full collections with the live set in place,
//              each after `garbage_steps_between_forced` stream steps.
//
// A heap plugs in as a Mutator, one per thread, living on that thread's stack:
//   using Node = ...;                         // left, right (pointers or Field<>), value, check
//   Node* NewNode(int64_t value, Node* left, Node* right);
//   void Keep(size_t slot, Node* tree);       // stores into the ring
//   static Node* Left(const Node*), Right(const Node*);
#pragma once

#include <cstddef>
#include <cstdint>

#include "bench/gc/summary.h"

namespace revkv::bench::gc {

inline constexpr int kTempTreeDepth = 3;  // levels 0..3: 15 nodes
inline constexpr uint64_t kTempTreeNodes = (uint64_t{1} << (kTempTreeDepth + 1)) - 1;
inline constexpr size_t kRingSlots = 64;
inline constexpr int64_t kCheckMix = 0x5bd1e995;

// Collections are attributed to the phase that was running when they ended.
enum class Phase : int { kBuild = 0, kStream = 1, kThreads = 2, kForced = 3 };

struct WorkloadConfig {
  size_t live_mib = 64;     // live-set label: the revkv tree's size in MiB
  uint64_t live_nodes = 0;  // nodes in the long-lived tree (the same for both heaps)
  // --live-basis bytes, Boehm only: if > 0, the run sizes its tree to this many bytes of nodes as the
  // collector stores them (GC_size, known only once it runs) and replaces live_nodes.
  uint64_t live_bytes = 0;
  uint64_t stream_steps = 0;      // phase stream
  double two_thread_seconds = 0;  // phase threads
  double force_interval_ms = 0;   // phase threads: 0 disables forced collections
  int forced_collections = 0;     // phase forced
  uint64_t garbage_steps_between_forced = 0;
  size_t revkv_nursery_bytes = 0;         // 0: HeapOptions' default
  bool revkv_evacuation_reserve = false;  // HeapOptions::retain_evacuation_reserve
  bool revkv_compact = false;             // major collections in MajorMode::kCompactEverything
};

// The long-lived tree of `count` nodes numbered from `first`, built bottom-up (depth ~log2(count)).
template <class M>
typename M::Node* BuildTree(M& m, int64_t first, int64_t count) {
  if (count <= 0) return nullptr;
  const int64_t left_count = (count - 1) / 2;
  typename M::Node* left = BuildTree(m, first + 1, left_count);
  typename M::Node* right = BuildTree(m, first + 1 + left_count, count - 1 - left_count);
  return m.NewNode(first, left, right);
}

// Counts the nodes under `n` and checks each node's redundant payload word; -1 on a mismatch.
template <class M>
int64_t CountTree(const typename M::Node* n) {
  if (n == nullptr) return 0;
  if (n->check != (n->value ^ kCheckMix)) return -1;
  const int64_t l = CountTree<M>(M::Left(n));
  const int64_t r = CountTree<M>(M::Right(n));
  return l < 0 || r < 0 ? -1 : 1 + l + r;
}

template <class M>
__attribute__((noinline)) typename M::Node* BuildTempTree(M& m, int depth, int64_t value) {
  if (depth < 0) return nullptr;
  typename M::Node* l = BuildTempTree(m, depth - 1, 2 * value);
  typename M::Node* r = BuildTempTree(m, depth - 1, 2 * value + 1);
  return m.NewNode(value, l, r);
}

// Runs stream steps [first, first + steps); returns the nodes allocated.
template <class M>
uint64_t StreamSteps(M& m, uint64_t first, uint64_t steps) {
  for (uint64_t i = first; i < first + steps; ++i) {
    m.Keep(i % kRingSlots, BuildTempTree(m, kTempTreeDepth, static_cast<int64_t>(i)));
  }
  return steps * kTempTreeNodes;
}

struct TimedStream {
  uint64_t allocations = 0;
  uint64_t nanos = 0;
  uint64_t forced = 0;
};

// Streams for `seconds`; if `force_interval_ms` > 0, calls `force()` each time that long has passed
// since the end of the previous forced collection.
template <class M, class Force>
TimedStream StreamFor(M& m, double seconds, double force_interval_ms, Force force) {
  constexpr uint64_t kStepsPerCheck = 64;
  TimedStream t;
  const uint64_t start = NowNanos();
  const uint64_t end = start + static_cast<uint64_t>(seconds * 1e9);
  const uint64_t interval = static_cast<uint64_t>(force_interval_ms * 1e6);
  uint64_t next_force = start + interval;
  for (uint64_t step = 0;; step += kStepsPerCheck) {
    t.allocations += StreamSteps(m, step, kStepsPerCheck);
    const uint64_t now = NowNanos();
    if (now >= end) {
      t.nanos = now - start;
      return t;
    }
    if (interval > 0 && now >= next_force) {
      force();
      ++t.forced;
      next_force = NowNanos() + interval;
    }
  }
}

}  // namespace revkv::bench::gc
