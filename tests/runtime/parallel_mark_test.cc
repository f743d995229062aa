// Tests of the parallel major collection (docs/runtime-heap-gc.md 7.3, "Parallel tracing"): collector
// threads with work-stealing deques mark and evacuate one graph; every reachable object is scanned
// exactly once whatever the number of threads; an object reachable along many paths is copied once and
// every reference to it names the copy; the work is shared (stealing) on a wide graph, and a deep list
// beside it is traced whole; termination never leaves work behind (the heap verifier runs after every
// collection of these tests, as of every runtime test). The STM side (chains collapsed by two threads
// at once) is in stm_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

#include "runtime/gc/collector.h"
#include "runtime/gc/gc.h"
#include "runtime/heap/heap.h"
#include "tests/runtime/test_support.h"

namespace revkv::runtime::testing {
namespace {

class ParallelMarkTest : public RuntimeTest {
 protected:
  HeapOptions Options() override { return SmallHeapOptions(size_t{1} << 30); }
  void TearDown() override {
    SetCollectorThreads(0);  // back to the configured number for the next test of this process
    RuntimeTest::TearDown();
  }
};

// A complete binary tree of `depth` levels; node values are their heap-order index from `first`.
__attribute__((noinline)) Node* BuildTree(int depth, int64_t first = 1) {
  if (depth == 0) return nullptr;
  Root<Node> left(BuildTree(depth - 1, 2 * first));
  Node* right = BuildTree(depth - 1, 2 * first + 1);
  return NewNode(first, left.get(), right);
}

// Nodes of the tree under `n` whose value and check are intact (values from `first`, as BuildTree).
size_t CountIntactTree(const Node* n, int64_t first = 1) {
  if (n == nullptr) return 0;
  if (n->value != first || n->check != first * 7919 + 13) return 0;
  return 1 + CountIntactTree(RawReference(n->left), 2 * first) +
         CountIntactTree(RawReference(n->right), 2 * first + 1);
}

// A list of `n` nodes, values n-1 down to 0 from the head.
__attribute__((noinline)) Node* BuildList(size_t n) {
  Root<Node> head;
  for (size_t i = 0; i < n; ++i) head.set(NewNode(static_cast<int64_t>(i), head.get()));
  return head.get();
}

size_t CountIntactList(const Node* n) {
  size_t count = 0;
  for (; n != nullptr; n = RawReference(n->left)) {
    if (n->check != n->value * 7919 + 13) return 0;
    ++count;
  }
  return count;
}

// One major collection with `threads` collector threads, the stack scrubbed first; its record.
__attribute__((noinline)) CollectionRecord CollectWith(size_t threads, MajorMode mode) {
  SetCollectorThreads(threads);
  ScrubStack();
  CollectMajor(mode);
  return LastRecord();
}

// The shared graph: one binary tree per mutator thread, built by that thread and promoted to old space
// by its own minor collection, held by a slot of the fan; then every leaf's left child is set to the
// root of the next thread's tree, so every tree root is reachable along many paths, from work that
// collector threads trace at the same time.
constexpr int kMutators = 4;
__attribute__((noinline)) void BuildSharedGraph(Root<Fan>& fan, int depth) {
  absl::StatusOr<Fan*> f = NewWithTail<Fan>(kMutators * sizeof(void*));
  ASSERT_TRUE(f.ok());
  (*f)->count = kMutators;
  fan.set(*f);
  CollectMinor();  // the fan is old: the mutators store into it
  std::vector<std::thread> threads;
  for (int t = 0; t < kMutators; ++t) {
    threads.emplace_back([&fan, t, depth] {
      ThreadRegistration r("builder");
      Root<Node> tree(BuildTree(depth));
      CollectMinor();
      fan->slots()[t].Store(tree.get());
    });
  }
  {
    SafeRegion wait;  // the builders' minor collections and any major one they start go on meanwhile
    JoinAll(threads);
  }
  for (int t = 0; t < kMutators; ++t) {
    Node* next_root = static_cast<Node*>(RawReference(fan->slots()[(t + 1) % kMutators]));
    std::vector<Node*> stack{static_cast<Node*>(RawReference(fan->slots()[t]))};
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      Node* l = RawReference(n->left);
      Node* r = RawReference(n->right);
      if (l == nullptr && r == nullptr) {
        n->left.Store(next_root);
        continue;
      }
      if (l != nullptr) stack.push_back(l);
      if (r != nullptr) stack.push_back(r);
    }
  }
}

// Every leaf of tree `t` names the current root of tree t+1 (one copy, every reference updated), and
// every node is intact. Returns the number of leaves checked.
__attribute__((noinline)) size_t CheckSharedGraph(Root<Fan>& fan, int t, int depth) {
  const Node* root = static_cast<const Node*>(RawReference(fan->slots()[t]));
  const Node* next_root = static_cast<const Node*>(RawReference(fan->slots()[(t + 1) % kMutators]));
  size_t leaves = 0;
  std::vector<std::pair<const Node*, int64_t>> stack{{root, 1}};
  const int64_t first_leaf = int64_t{1} << (depth - 1);
  while (!stack.empty()) {
    auto [n, v] = stack.back();
    stack.pop_back();
    if (n == nullptr || n->value != v || n->check != v * 7919 + 13) {
      ADD_FAILURE() << "tree " << t << ": node " << v << " lost or damaged";
      return 0;
    }
    if (v >= first_leaf) {
      if (RawReference(n->left) != next_root) {
        ADD_FAILURE() << "tree " << t << ": leaf " << v << " names another copy of the next root";
        return 0;
      }
      ++leaves;
      continue;
    }
    stack.push_back({RawReference(n->left), 2 * v});
    stack.push_back({RawReference(n->right), 2 * v + 1});
  }
  return leaves;
}

// Old objects this collection found live: marked in place, copied or pinned (each once).
uint64_t OldObjectsFound(const CollectionRecord& r) {
  return r.objects_marked + r.objects_copied + r.pinned_objects;
}

TEST_F(ParallelMarkTest, EveryReachableObjectIsScannedOnceWhateverTheNumberOfCollectorThreads) {
  const int depth = Scale() < 1 ? 13 : 15;  // 4 trees of 2^15 - 1 nodes: 6 MiB
  Root<Fan> fan;
  BuildSharedGraph(fan, depth);
  // Compacting collections evacuate every object: each tree root, named by the 2^(depth-1) leaves of
  // another tree, is a copy race every time. Then selective ones mark most objects in place.
  for (MajorMode mode : {MajorMode::kCompactEverything, MajorMode::kSelective}) {
    std::vector<CollectionRecord> records;
    for (size_t threads : {1, 2, 4, 1, 2, 4}) records.push_back(CollectWith(threads, mode));
    for (size_t i = 0; i < records.size(); ++i) {
      const CollectionRecord& r = records[i];
      SCOPED_TRACE(::testing::Message()
                   << "collection " << i << ", collector threads " << r.collector_threads);
      EXPECT_EQ(r.objects_scanned_by_thread.size(), r.collector_threads);
      uint64_t sum = 0;
      for (uint64_t n : r.objects_scanned_by_thread) sum += n;
      EXPECT_EQ(sum, r.objects_scanned);
      EXPECT_GE(OldObjectsFound(r), uint64_t{kMutators} * ((uint64_t{1} << depth) - 1) + 1);
      // The first collection may still find garbage a stale word pinned while the graph was built;
      // from then on each one traces the same graph: the same count with 1, 2 or 4 threads.
      if (i == 0) continue;
      EXPECT_EQ(OldObjectsFound(r), OldObjectsFound(records.back()))
          << "an object was found live twice or missed";
      EXPECT_EQ(r.objects_scanned, records.back().objects_scanned);
    }
    for (int t = 0; t < kMutators; ++t) EXPECT_EQ(CheckSharedGraph(fan, t, depth), size_t{1} << (depth - 1));
  }
  EXPECT_EQ(LastRecord().collector_threads, 4u);
}

TEST_F(ParallelMarkTest, EveryCollectorThreadTracesAShareOfAWideGraphAndADeepListBesideIt) {
  const int depth = Scale() < 1 ? 15 : 17;  // 128k nodes, 6 MiB
  const size_t list_length = Scaled(100'000);
  Root<Node> tree(BuildTree(depth));
  Root<Node> list(BuildList(list_length));
  // Everything old (the nursery empty) and measured dense, so the collections below mark it in place
  // from the two roots, which the collecting thread finds alone (its deque): the other thread gets work
  // only by stealing it. On a loaded machine either thread may lose its core for longer than a whole
  // trace (the other then does it all, which is correct), so one of several collections must show the
  // share: both threads scanned a twentieth or more, and objects were stolen.
  CollectMinor();
  CollectWith(1, MajorMode::kCompactEverything);
  bool shared = false;
  for (int attempt = 0; attempt < 20 && !shared; ++attempt) {
    const CollectionRecord r = CollectWith(2, MajorMode::kSelective);
    ASSERT_EQ(r.objects_scanned_by_thread.size(), 2u);
    EXPECT_EQ(r.objects_scanned_by_thread[0] + r.objects_scanned_by_thread[1], r.objects_scanned);
    const uint64_t least = std::min(r.objects_scanned_by_thread[0], r.objects_scanned_by_thread[1]);
    std::printf("objects scanned by thread: %llu, %llu; steals %llu\n",
                static_cast<unsigned long long>(r.objects_scanned_by_thread[0]),
                static_cast<unsigned long long>(r.objects_scanned_by_thread[1]),
                static_cast<unsigned long long>(r.steals));
    shared = least >= r.objects_scanned / 20 && r.steals > 0;
  }
  EXPECT_TRUE(shared) << "in 20 collections the second collector thread never stole a twentieth of the work";
  EXPECT_EQ(CountIntactTree(tree.get()), (size_t{1} << depth) - 1);
  EXPECT_EQ(CountIntactList(list.get()), list_length);
}

TEST_F(ParallelMarkTest, CollectorThreadsAreNotMutatorThreads) {
  CollectWith(4, MajorMode::kSelective);  // the pool has three helpers now, parked
  const CollectionRecord r = CollectWith(4, MajorMode::kSelective);
  EXPECT_EQ(r.collector_threads, 4u);
  EXPECT_EQ(r.threads, 1u) << "collector threads are registered as mutators (only test-main is)";
}

}  // namespace
}  // namespace revkv::runtime::testing
