// Tests of the mark-region major collection (docs/runtime-heap-gc.md 7.3): old chunks are marked in
// place and swept, and only the chunks the previous collection measured as sparse are evacuated; a
// chunk taken since has no measure and stays; the dead objects of a kept chunk become filler that no
// ambiguous word resolves to and that later promotions reuse; resident memory stays within 1.5 times the
// live data while a live set is rewritten piece by piece; MajorMode::kCompactEverything still compacts.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "runtime/gc/collector.h"
#include "runtime/gc/gc.h"
#include "runtime/heap/heap.h"
#include "runtime/heap/object_format.h"
#include "runtime/heap/page_space.h"
#include "tests/runtime/test_support.h"

namespace revkv::runtime::testing {
namespace {

using MarkRegionTest = RuntimeTest;

constexpr size_t kFanNodes = 1000;  // 48 KiB of nodes: the middle chunk holds nothing else

// Slot `i` of a fan, read without a barrier.
Object* SlotOf(Fan* fan, size_t i) { return RawReference(fan->slots()[i]); }
Object* SlotOf(Root<Fan>& fan, size_t i) { return SlotOf(fan.get(), i); }

// Where slot `i` of the fan points now (hidden: holding it pins nothing).
__attribute__((noinline)) HiddenAddress SlotAddress(Root<Fan>& fan, size_t i) {
  return HiddenAddress(SlotOf(fan, i));
}
__attribute__((noinline)) ChunkKind KindOfChunkAt(HiddenAddress a) {
  return ChunkKindOf(reinterpret_cast<const void*>(a.get()));
}
__attribute__((noinline)) uintptr_t ChunkOf(HiddenAddress a) { return a.get() & ~(kChunkSize - 1); }
__attribute__((noinline)) bool ResolvesTo(HiddenAddress word, HiddenAddress object) {
  return HiddenAddress(ResolveAmbiguousWord(word.get())) == object;
}
__attribute__((noinline)) bool ResolvesToNothing(HiddenAddress word) {
  return ResolveAmbiguousWord(word.get()) == nullptr;
}
__attribute__((noinline)) bool IsFillerAt(HiddenAddress a) {
  return IsFiller(reinterpret_cast<const void*>(a.get()));
}

// Clears every slot of the fan whose index `keep` rejects: those nodes become garbage.
template <class Keep>
__attribute__((noinline)) void DropSlots(Root<Fan>& fan, Keep keep) {
  for (size_t i = 0; i < fan->count; ++i) {
    if (!keep(i)) fan->slots()[i].Store(nullptr);
  }
}

// Slot i of the fan holds node i (FillFanOfNodes) wherever the slot was kept.
template <class Keep>
__attribute__((noinline)) bool FanHoldsItsNodes(Root<Fan>& fan, Keep keep) {
  for (size_t i = 0; i < fan->count; ++i) {
    const Node* n = static_cast<const Node*>(SlotOf(fan, i));
    if (!keep(i)) {
      if (n != nullptr) return false;
      continue;
    }
    if (n == nullptr || n->value != static_cast<int64_t>(i) || n->check != n->value * 7919 + 13) return false;
  }
  return true;
}

// Two fans of nodes, promoted into old space by a minor collection, their nodes side by side in slot
// order: `dense` stays whole, `sparse` keeps one node in ten.
__attribute__((noinline)) void MakeDenseAndSparse(Root<Fan>& dense, Root<Fan>& sparse) {
  FillFanOfNodes(dense, kFanNodes);
  FillFanOfNodes(sparse, kFanNodes);
  ScrubStack();
  CollectMinor();
  DropSlots(sparse, [](size_t i) { return i % 10 == 0; });
}

TEST_F(MarkRegionTest, ADenseChunkIsMarkedInPlaceWhileASparseOneIsEvacuated) {
  auto one_in_ten = [](size_t i) { return i % 10 == 0; };
  auto all = [](size_t) { return true; };
  Root<Fan> dense;
  Root<Fan> sparse;
  MakeDenseAndSparse(dense, sparse);
  const HiddenAddress dense_node = SlotAddress(dense, kFanNodes / 2);
  const HiddenAddress sparse_node = SlotAddress(sparse, kFanNodes / 2);
  ASSERT_EQ(KindOfChunkAt(sparse_node), ChunkKind::kOld);
  ASSERT_NE(ChunkOf(dense_node), ChunkOf(sparse_node));

  // The chunks were taken since the last major collection: no measure yet, so nothing moves.
  ScrubStack();
  CollectMajor();
  const CollectionRecord first = LastRecord();
  EXPECT_EQ(first.chunks_evacuated, 0u);
  EXPECT_TRUE(SlotAddress(sparse, kFanNodes / 2) == sparse_node) << "a chunk without a measure stays";
  EXPECT_TRUE(SlotAddress(dense, kFanNodes / 2) == dense_node);
  EXPECT_GE(first.objects_marked, kFanNodes + kFanNodes / 10);

  // Now the sparse fan's middle chunk is measured at about a tenth live: it is evacuated, the dense
  // one is marked where it is.
  ScrubStack();
  CollectMajor();
  const CollectionRecord second = LastRecord();
  EXPECT_GE(second.chunks_evacuated, 1u);
  EXPECT_GT(second.bytes_copied, 0u);
  EXPECT_TRUE(SlotAddress(dense, kFanNodes / 2) == dense_node) << "a dense chunk is marked in place";
  EXPECT_FALSE(SlotAddress(sparse, kFanNodes / 2) == sparse_node)
      << "a sparse chunk is evacuated and the slots naming its objects are updated";
  // Freed, unless a stale word on the stack pinned one of its objects (it then keeps only those).
  if (second.pinned_objects == 0) {
    EXPECT_EQ(KindOfChunkAt(sparse_node), ChunkKind::kFree) << "the evacuated chunk was freed";
  }
  EXPECT_TRUE(ResolvesToNothing(sparse_node));
  EXPECT_TRUE(FanHoldsItsNodes(dense, all));
  EXPECT_TRUE(FanHoldsItsNodes(sparse, one_in_ten));
}

TEST_F(MarkRegionTest, DeadObjectsOfAKeptChunkBecomeFillerThatNoAmbiguousWordResolvesTo) {
  auto three_in_four = [](size_t i) { return i % 4 != 1; };
  Root<Fan> fan;
  FillFanOfNodes(fan, kFanNodes);
  ScrubStack();
  CollectMinor();
  ScrubStack();
  CollectMajor();                     // measures the chunks: full
  const size_t kept = kFanNodes / 2;  // i % 4 == 0
  const HiddenAddress kept_node = SlotAddress(fan, kept);
  const HiddenAddress dead_node = SlotAddress(fan, kept + 1);
  DropSlots(fan, three_in_four);
  ScrubStack();
  CollectMajor();
  EXPECT_TRUE(SlotAddress(fan, kept) == kept_node) << "marked in place";
  EXPECT_TRUE(FanHoldsItsNodes(fan, three_in_four));
  EXPECT_EQ(KindOfChunkAt(dead_node), ChunkKind::kOld);
  EXPECT_TRUE(IsFillerAt(dead_node)) << "the dead node between two live ones became filler";
  for (size_t offset : {size_t{0}, size_t{8}, size_t{16}, sizeof(Node) - 8}) {
    EXPECT_TRUE(ResolvesToNothing(HiddenAddress(reinterpret_cast<void*>(dead_node.get() + offset))))
        << "a word " << offset << " bytes into the dead node";
  }
  EXPECT_TRUE(ResolvesTo(kept_node, kept_node));
  // A third collection finds only the live nodes there (the verifier checks marks against starts).
  ScrubStack();
  CollectMajor();
  EXPECT_TRUE(FanHoldsItsNodes(fan, three_in_four));
}

// A list of `count` new nodes (values 0, 1, ...; node i links to node i + 1 by `left`) promoted by a
// minor collection: 48-byte objects, each of which fits a hole of two dead nodes.
__attribute__((noinline)) void PromoteNewList(Root<Node>& head, size_t count) {
  Node* n = nullptr;
  for (size_t i = count; i-- > 0;) n = NewNode(static_cast<int64_t>(i), n);
  head.set(n);
  n = nullptr;
  ScrubStack();
  CollectMinor();
}

__attribute__((noinline)) bool ListIsIntact(Root<Node>& head, size_t count) {
  size_t i = 0;
  for (const Node* n = head.get(); n != nullptr; n = n->left.Load(), ++i) {
    if (n->value != static_cast<int64_t>(i) || n->check != n->value * 7919 + 13) return false;
  }
  return i == count;
}

// How many nodes of the list lie in a chunk of `old`'s nodes, below the last node `old` still holds
// there: in the holes the sweep left, not in the chunk's free tail.
__attribute__((noinline)) size_t NodesInHolesOf(Root<Node>& head, Root<Fan>& old) {
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;  // [chunk, last live end) per chunk of `old`
  for (size_t i = 0; i < old->count; ++i) {
    const auto a = reinterpret_cast<uintptr_t>(SlotOf(old, i));
    if (a == 0) continue;
    const uintptr_t chunk = a & ~(kChunkSize - 1);
    if (ranges.empty() || ranges.back().first != chunk) ranges.push_back({chunk, 0});
    ranges.back().second = std::max(ranges.back().second, a + sizeof(Node));
  }
  size_t n = 0;
  for (const Node* node = head.get(); node != nullptr; node = node->left.Load()) {
    const auto a = reinterpret_cast<uintptr_t>(node);
    for (const auto& [chunk, end] : ranges) {
      if (a >= chunk && a < end) ++n;
    }
  }
  return n;
}

TEST_F(MarkRegionTest, TheHolesOfASweptChunkAreReusedByLaterPromotions) {
  auto two_of_four = [](size_t i) { return i % 4 == 0 || i % 4 == 3; };  // 96-byte holes between
  Root<Fan> old;
  FillFanOfNodes(old, kFanNodes);
  ScrubStack();
  CollectMinor();
  ScrubStack();
  CollectMajor();  // measured full: kept in place by the next one
  DropSlots(old, two_of_four);
  ScrubStack();
  CollectMajor();  // the dropped nodes become 96-byte holes
  Root<Node> young;
  PromoteNewList(young, 200);
  // A node a stale stack word pins in the nursery is promoted with its chunk, not copied: the rest are.
  const uint64_t pinned = LastRecord().pinned_objects;
  const size_t in_holes = NodesInHolesOf(young, old);
  std::printf("%zu of 200 promoted nodes in the holes (%llu pinned in the nursery)\n", in_holes,
              static_cast<unsigned long long>(pinned));
  EXPECT_GE(in_holes + pinned, 200u) << "every copied node went into a hole of a swept chunk";
  EXPECT_GE(in_holes, 150u);
  EXPECT_TRUE(FanHoldsItsNodes(old, two_of_four));
  EXPECT_TRUE(ListIsIntact(young, 200));
}

__attribute__((noinline)) size_t FanNodesInChunk(Root<Fan>& fan, uintptr_t chunk) {
  size_t n = 0;
  for (size_t i = 0; i < fan->count; ++i) {
    const auto a = reinterpret_cast<uintptr_t>(SlotOf(fan, i));
    if (a >= chunk && a < chunk + kChunkSize) ++n;
  }
  return n;
}
__attribute__((noinline)) size_t ListNodesInChunk(Root<Node>& head, uintptr_t chunk) {
  size_t n = 0;
  for (const Node* node = head.get(); node != nullptr; node = node->left.Load()) {
    const auto a = reinterpret_cast<uintptr_t>(node);
    if (a >= chunk && a < chunk + kChunkSize) ++n;
  }
  return n;
}

// A chunk measured sparse whose holes later promotions filled counts as full again (each hole filled is
// added to its live bytes), so the next collection does not evacuate it for holes it no longer has.
TEST_F(MarkRegionTest, AChunkWhoseHolesWereFilledIsNotEvacuated) {
  auto one_in_four = [](size_t i) { return i % 4 == 0; };  // 144-byte holes: three nodes each
  Root<Fan> old;
  FillFanOfNodes(old, kFanNodes);
  ScrubStack();
  CollectMinor();
  ScrubStack();
  CollectMajor();  // measured full
  DropSlots(old, one_in_four);
  ScrubStack();
  CollectMajor();  // swept: a quarter live, a candidate for the next collection as it stands
  const HiddenAddress node = SlotAddress(old, kFanNodes / 2);
  Root<Node> young;
  PromoteNewList(young, 4 * kFanNodes);
  const uintptr_t chunk = ChunkOf(node);
  const size_t kept_there = FanNodesInChunk(old, chunk);
  ASSERT_GE(kept_there, 50u);
  ASSERT_GE(ListNodesInChunk(young, chunk), 3 * kept_there - 3)
      << "the holes of the node's chunk were filled";
  ScrubStack();
  CollectMajor();
  EXPECT_TRUE(SlotAddress(old, kFanNodes / 2) == node) << "the refilled chunk was not evacuated";
  EXPECT_TRUE(FanHoldsItsNodes(old, one_in_four));
  EXPECT_TRUE(ListIsIntact(young, 4 * kFanNodes));
}

TEST_F(MarkRegionTest, CompactEverythingEvacuatesChunksASelectiveCollectionKeeps) {
  auto three_in_four = [](size_t i) { return i % 4 != 1; };
  Root<Fan> fan;
  FillFanOfNodes(fan, kFanNodes);
  ScrubStack();
  CollectMinor();
  ScrubStack();
  CollectMajor();
  DropSlots(fan, three_in_four);
  const HiddenAddress node = SlotAddress(fan, kFanNodes / 2);
  ScrubStack();
  CollectMajor();  // three quarters live: marked in place
  ASSERT_TRUE(SlotAddress(fan, kFanNodes / 2) == node);
  ScrubStack();
  CollectMajor(MajorMode::kCompactEverything);
  const CollectionRecord r = LastRecord();
  EXPECT_FALSE(SlotAddress(fan, kFanNodes / 2) == node) << "compacting moves every unpinned object";
  EXPECT_GE(r.chunks_evacuated, 3u);
  EXPECT_GE(r.bytes_copied, kFanNodes * 3 / 4 * sizeof(Node));
  EXPECT_EQ(r.bytes_marked, 0u) << "no old chunk is marked in place";
  EXPECT_EQ(KindOfChunkAt(node), ChunkKind::kFree);
  EXPECT_TRUE(FanHoldsItsNodes(fan, three_in_four));
}

// A live set of `fans` fans of kFanNodes nodes under `top`, rewritten piece by piece: at each round a
// fifth of the nodes, chosen at random, is replaced by a new node (the old one becomes garbage, mostly
// one node at a time: holes too small to reuse), then a major collection runs.
class Churn {
 public:
  explicit Churn(size_t fans) : rng_(TestSeed()) {
    absl::StatusOr<Fan*> top = NewWithTail<Fan>(fans * sizeof(void*));
    if (!top.ok()) std::abort();
    (*top)->count = fans;
    top_.set(*top);
    for (size_t f = 0; f < fans; ++f) {
      Root<Fan> fan;
      FillFanOfNodes(fan, kFanNodes);
      top_->slots()[f].Store(fan.get());
    }
  }
  size_t LiveBytes() {
    return top_->size() + top_->count * (sizeof(Fan) + kFanNodes * sizeof(void*) + kFanNodes * sizeof(Node));
  }
  __attribute__((noinline)) void Round() {
    const size_t fans = top_->count;
    std::uniform_int_distribution<size_t> fan(0, fans - 1), slot(0, kFanNodes - 1);
    for (size_t k = 0; k < fans * kFanNodes / 5; ++k) {
      auto* f = static_cast<Fan*>(SlotOf(top_, fan(rng_)));
      const size_t i = slot(rng_);
      f->slots()[i].Store(NewNode(static_cast<int64_t>(i)));
    }
  }
  __attribute__((noinline)) bool Intact() {
    for (size_t f = 0; f < top_->count; ++f) {
      auto* fan = static_cast<Fan*>(SlotOf(top_, f));
      for (size_t i = 0; i < kFanNodes; ++i) {
        const Node* n = static_cast<const Node*>(SlotOf(fan, i));
        if (n == nullptr || n->value != static_cast<int64_t>(i)) return false;
      }
    }
    return true;
  }

 private:
  Root<Fan> top_;
  std::mt19937_64 rng_;
};

class MarkRegionMemoryTest : public RuntimeTest {
 protected:
  HeapOptions Options() override {
    HeapOptions o = SmallHeapOptions(size_t{512} << 20);
    o.retained_free_pages = 1;
    return o;
  }
};

// Resident memory (the committed pages in use and the free pages kept committed, HeapUsage) stays within
// 1.5 times the live data at steady state, with no evacuation reserve. Without evacuation the holes
// left one node at a time are too small to reuse, and the heap grows round after round.
TEST_F(MarkRegionMemoryTest, ResidentMemoryStaysWithinOneAndAHalfTimesTheLiveData) {
  Churn churn(Scaled(1200));  // about 64 MiB live at scale 1
  const double live = static_cast<double>(churn.LiveBytes());
  ScrubStack();
  CollectMajor();
  double worst = 0;
  for (int round = 0; round < 12; ++round) {
    churn.Round();
    ScrubStack();
    CollectMajor();
    const HeapUsage u = GetHeapUsage();
    const double ratio = static_cast<double>(u.committed_bytes + u.retained_bytes) / live;
    const CollectionRecord r = LastRecord();
    std::printf(
        "round %d: %lu chunks evacuated, committed %zu MiB, retained %zu MiB, old %zu MiB, live %.1f MiB: "
        "%.2fx\n",
        round, static_cast<unsigned long>(r.chunks_evacuated), u.committed_bytes >> 20,
        u.retained_bytes >> 20, u.old_bytes >> 20, live / (1 << 20), ratio);
    if (round >= 4) worst = std::max(worst, ratio);
  }
  EXPECT_TRUE(churn.Intact());
  EXPECT_LE(worst, 1.5) << "resident memory over live data at steady state (rounds 5 to 12)";
}

}  // namespace
}  // namespace revkv::runtime::testing
