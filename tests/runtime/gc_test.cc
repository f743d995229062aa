// Tests of the collectors: pinning by ambiguous roots (interior pointers included, never by the
// collector's own frames), moving and updating precise and global roots, deep structures across many
// collections, reclamation under a heap maximum, exhaustion, the local collection's promotion rules,
// remembered sets, pinned chunks and the reuse of their holes, the large-object space, and Bytes
// payloads that are never scanned. Statistics are in gc_statistics_test.cc.
#include "runtime/gc/gc.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/gc/collector.h"
#include "runtime/heap/heap.h"
#include "runtime/heap/page_space.h"
#include "tests/runtime/test_support.h"

namespace revkv::runtime::testing {
namespace {

class GcTest : public RuntimeTest {};

TEST_F(GcTest, ObjectReachableOnlyFromALocalSurvivesMinorAndMajorWithoutMoving) {
  Node* volatile local = NewNode(42);
  const auto address = reinterpret_cast<uintptr_t>(local);
  CollectMinor();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(local), address);
  EXPECT_FALSE(IsInNursery(local)) << "a pinned nursery object is promoted in place";
  AllocateGarbage(4 << 20);
  CollectMajor();
  AllocateGarbage(4 << 20);
  CollectMajor();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(local), address);
  EXPECT_EQ(local->value, 42);
  EXPECT_EQ(local->check, 42 * 7919 + 13);
  EXPECT_EQ(ResolveAmbiguousWord(address), local);
}

// Helpers for objects the caller knows only by a hidden address. Each works in its own frame, below the
// caller's (ScrubStack clears it before the next collection), so the caller never holds the object's
// start in a local or a register and cannot pin it by accident.
__attribute__((noinline)) bool ResolvesTo(uintptr_t word, HiddenAddress object) {
  return HiddenAddress(ResolveAmbiguousWord(word)) == object;
}
// Whether the word `offset` bytes into the object at `object` resolves to that object; never leaves
// the object's address in the caller's frame.
__attribute__((noinline)) bool ResolvesInside(HiddenAddress object, size_t offset) {
  return HiddenAddress(ResolveAmbiguousWord(object.get() + offset)) == object;
}
__attribute__((noinline)) bool ResolvesToNothing(HiddenAddress object, size_t offset) {
  return ResolveAmbiguousWord(object.get() + offset) == nullptr;
}

__attribute__((noinline)) bool IsIntactNode(HiddenAddress node, int64_t value) {
  const auto* n = reinterpret_cast<const Node*>(node.get());
  return n->value == value && n->check == value * 7919 + 13 && !n->HasFlag(kForwarded);
}

// Allocates a node and returns the address of its `check` field; the node's start goes back hidden, so
// the caller holds nothing but an interior address.
__attribute__((noinline)) char* NewNodeSeenFromInside(int64_t value, HiddenAddress* start) {
  Node* n = NewNode(value);
  *start = HiddenAddress(n);
  return reinterpret_cast<char*>(&n->check);
}

TEST_F(GcTest, InteriorPointerPinsItsObject) {
  HiddenAddress base;
  char* volatile interior = NewNodeSeenFromInside(7, &base);
  ScrubStack();
  CollectMinor();
  EXPECT_FALSE(IsInNursery(interior))
      << "pinned through the interior pointer, its chunk was promoted in place";
  EXPECT_TRUE(ResolvesTo(reinterpret_cast<uintptr_t>(interior), base)) << "the node did not move";
  EXPECT_TRUE(IsIntactNode(base, 7));
  AllocateGarbage(4 << 20);
  ScrubStack();
  CollectMajor();
  AllocateGarbage(4 << 20);
  ScrubStack();
  CollectMajor();
  EXPECT_TRUE(ResolvesTo(reinterpret_cast<uintptr_t>(interior), base)) << "the node did not move";
  EXPECT_NE(reinterpret_cast<uintptr_t>(interior), base.get()) << "the pin came from an interior pointer";
  int64_t check;
  std::memcpy(&check, interior, sizeof(check));
  EXPECT_EQ(check, 7 * 7919 + 13);
  EXPECT_TRUE(IsIntactNode(base, 7));
}

// The test bodies below never hold the root's object in a local or a register of their own, so the
// only references to it are the precise root (whose stack copy is masked) and nothing pins it.
__attribute__((noinline)) HiddenAddress FillRoot(Root<Node>& root, int64_t value) {
  root.set(NewNode(value, NewNode(value + 1)));
  return HiddenAddress(root.get());
}
template <class T>
__attribute__((noinline)) HiddenAddress AddressOf(Root<T>& root) {
  return HiddenAddress(root.get());
}
__attribute__((noinline)) bool HoldsValues(Root<Node>& root, int64_t value) {
  return root->value == value && root->left.Load()->value == value + 1 &&
         root->left.Load()->check == (value + 1) * 7919 + 13;
}

TEST_F(GcTest, ObjectsReachableOnlyFromPreciseRootsMoveAndRootsAreUpdated) {
  Root<Node> root;
  const HiddenAddress in_nursery = FillRoot(root, 5);
  ScrubStack();
  CollectMinor();
  const HiddenAddress in_old = AddressOf(root);
  EXPECT_FALSE(in_old == in_nursery) << "a minor collection copies what only precise roots reach";
  EXPECT_TRUE(HoldsValues(root, 5));
  ScrubStack();
  CollectMajor(MajorMode::kCompactEverything);
  EXPECT_FALSE(AddressOf(root) == in_old) << "a major collection evacuates it again";
  EXPECT_TRUE(HoldsValues(root, 5));
}

// Moves the object of `from` into `to` and clears `from`: afterwards only the global root holds it.
__attribute__((noinline)) HiddenAddress MoveIntoGlobalRoot(Root<Node>& from, GlobalRoot& to) {
  to.Store(from.get());
  from.set(nullptr);
  return HiddenAddress(to.Load());
}
__attribute__((noinline)) HiddenAddress AddressIn(const GlobalRoot& root) {
  return HiddenAddress(root.Load());
}
__attribute__((noinline)) bool HoldsValues(const GlobalRoot& root, int64_t value) {
  const auto* n = static_cast<const Node*>(root.Load());
  return n != nullptr && n->value == value && n->check == value * 7919 + 13 && n->left.Load() != nullptr &&
         n->left.Load()->value == value + 1 && n->left.Load()->check == (value + 1) * 7919 + 13;
}

TEST_F(GcTest, ObjectHeldOnlyByAGlobalRootMovesInAMajorCollectionAndTheRootIsUpdated) {
  // In malloc'd memory, like the store's: a GlobalRoot's word is not masked, so one on the stack would
  // pin its object as any stack word does.
  const auto global_root = std::make_unique<GlobalRoot>();
  GlobalRoot& global = *global_root;
  HiddenAddress before;
  {
    Root<Node> local;
    (void)FillRoot(local, 21);  // node 21 -> node 22
    ScrubStack();
    CollectMinor();  // out of the nursery: a GlobalRoot may not hold a nursery object
    before = MoveIntoGlobalRoot(local, global);
  }
  ASSERT_TRUE(HoldsValues(global, 21));
  for (int i = 0; i < 2; ++i) {
    ScrubStack();
    CollectMajor(MajorMode::kCompactEverything);
    const HiddenAddress after = AddressIn(global);
    EXPECT_FALSE(after == before) << "major collection " << i << " evacuates it and updates the root";
    EXPECT_TRUE(HoldsValues(global, 21)) << "major collection " << i;
    EXPECT_TRUE(ResolvesToNothing(before, 0)) << "the chunk it was evacuated from was freed";
    before = after;
  }
}

Node* BuildTree(int64_t first, int64_t count) {
  if (count <= 0) return nullptr;
  const int64_t left_count = (count - 1) / 2;
  Node* left = BuildTree(first + 1, left_count);
  Node* right = BuildTree(first + 1 + left_count, count - 1 - left_count);
  return NewNode(first, left, right);
}

// Sum of values and a count, checking every node's redundant field; iterative (no deep recursion).
std::pair<int64_t, int64_t> CheckTree(Node* root) {
  int64_t sum = 0;
  int64_t count = 0;
  std::vector<Node*> stack;  // transient: no collection can run while it is alive
  if (root != nullptr) stack.push_back(root);
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    EXPECT_EQ(n->check, n->value * 7919 + 13);
    sum += n->value;
    ++count;
    if (Node* l = n->left.Load()) stack.push_back(l);
    if (Node* r = n->right.Load()) stack.push_back(r);
  }
  return {sum, count};
}

TEST_F(GcTest, DeepTreeOf100kNodesIsIntactAfter50Collections) {
  const int64_t n = 100'000;
  Root<Node> root(BuildTree(0, n));
  const int64_t expected_sum = n * (n - 1) / 2;
  for (int i = 0; i < 50; ++i) {
    AllocateGarbage(1 << 20);
    if (i % 3 == 0) {
      CollectMinor();
    } else {
      CollectMajor();
    }
    const auto [sum, count] = CheckTree(root.get());
    ASSERT_EQ(count, n) << "after collection " << i;
    ASSERT_EQ(sum, expected_sum) << "after collection " << i;
  }
  EXPECT_GE(GetGcStatistics().collections[static_cast<int>(CollectionKind::kMajor)], 33u);
}

TEST_F(GcTest, GarbageIsReclaimedWithinTheHeapMaximum) {
  const size_t max = size_t{32} << 20;
  SetMaxHeapBytes(max);
  // A small live set, part of which is replaced all the time so that garbage also ages into old space.
  absl::StatusOr<Fan*> fan_or = NewWithTail<Fan>(1000 * sizeof(void*));
  ASSERT_TRUE(fan_or.ok());
  Root<Fan> fan(*fan_or);
  fan->count = 1000;
  for (int i = 0; i < 1000; ++i) fan->slots()[i].Store(NewNode(i));
  std::mt19937_64 rng(TestSeed());
  const size_t total = 50 * max;  // not scaled: the point is many times the maximum
  size_t allocated = 0;
  size_t peak_committed = 0;
  while (allocated < total) {
    for (int i = 0; i < 1000; ++i) (void)NewNode(i);  // young garbage
    const size_t slot = rng() % 1000;
    fan->slots()[slot].Store(
        NewNode(static_cast<int64_t>(slot), NewNode(1), NewNode(2)));  // old garbage later
    allocated += 1003 * sizeof(Node);
    peak_committed = std::max(peak_committed, GetHeapUsage().committed_bytes);
  }
  for (int i = 0; i < 1000; ++i) {
    auto* node = static_cast<Node*>(RawReference(fan->slots()[i]));
    ASSERT_EQ(node->value, i);
  }
  const GcStatistics stats = GetGcStatistics();
  EXPECT_EQ(AllocationFailuresInThisTest(), 0u);
  EXPECT_LE(peak_committed, max);
  EXPECT_GT(stats.collections[static_cast<int>(CollectionKind::kMajor)], 0u);
  EXPECT_GT(stats.collections[static_cast<int>(CollectionKind::kMinor)], 10u);
}

constexpr int64_t kReserveTreeNodes = 1'400'000;  // about 64 MiB: eight 8 MiB pages of old space

// The evacuation reserve (HeapOptions::retain_evacuation_reserve): a major collection keeps as many
// free pages committed as there are live small pages, and the next one copies into them instead of
// faulting in fresh pages. Without it every collection faults in much of its to-space again. Both
// fixtures keep a single free page otherwise, so that the fixed retention does not hide the difference.
template <bool kReserve>
class ReserveFixture : public RuntimeTest {
 protected:
  HeapOptions Options() override {
    HeapOptions o = SmallHeapOptions();
    o.retain_evacuation_reserve = kReserve;
    o.retained_free_pages = 1;
    return o;
  }
};
using EvacuationReserveTest = ReserveFixture<true>;
using NoEvacuationReserveTest = ReserveFixture<false>;

size_t ResidentObjectBytes(PageHeader* page);

// Bytes of the heap's small pages that the OS maps in while `collect` runs: for each page in use
// afterwards, its resident object bytes (mincore) less what it had before. Counted per page of the heap
// rather than as the process's page faults, which under ThreadSanitizer are mostly the sanitizer's own
// shadow and synchronisation memory.
template <typename F>
size_t HeapBytesFaultedInBy(F&& collect) {
  std::vector<std::pair<PageHeader*, size_t>> before;
  for (const auto& pages :
       {PageSpace::Get().SmallPages(), PageSpace::Get().WarmPages(), PageSpace::Get().ColdPages()}) {
    for (PageHeader* page : pages) before.emplace_back(page, ResidentObjectBytes(page));
  }
  collect();
  size_t faulted = 0;
  for (PageHeader* page : PageSpace::Get().SmallPages()) {
    const auto it =
        std::find_if(before.begin(), before.end(), [page](const auto& entry) { return entry.first == page; });
    const size_t was = it == before.end() ? 0 : it->second;
    const size_t now = ResidentObjectBytes(page);
    if (now > was) faulted += now - was;
  }
  return faulted;
}

TEST_F(EvacuationReserveTest, TheNextMajorCollectionEvacuatesIntoPagesTheLastOneKept) {
  Root<Node> root(BuildTree(0, kReserveTreeNodes));  // promoted by minor collections as it grows
  ASSERT_EQ(GetHeapUsage().retained_bytes, 0u) << "no page has been freed yet";
  const size_t tree_bytes = kReserveTreeNodes * sizeof(Node);
  // Copies the tree, in part into pages never touched before.
  const size_t first = HeapBytesFaultedInBy([] { CollectMajor(MajorMode::kCompactEverything); });
  EXPECT_GT(first, tree_bytes / 4) << "the first evacuation should fault in much of its to-space";
  EXPECT_GT(GetHeapUsage().retained_bytes, 0u);
  size_t total = 0;
  for (int i = 0; i < 3; ++i) {
    const size_t faulted = HeapBytesFaultedInBy([] { CollectMajor(MajorMode::kCompactEverything); });
    total += faulted;
    EXPECT_LT(faulted, first / 4) << "collection " << i + 2 << ": " << faulted
                                  << " bytes faulted in, the first " << first;
    const HeapUsage usage = GetHeapUsage();
    EXPECT_LE(usage.retained_bytes + usage.committed_bytes, Options().max_heap_bytes);
  }
  // Together, too: without the reserve some collections fault in little (they copy into free chunks of
  // pages still in use) and the next makes up for it.
  EXPECT_LT(total, first / 4) << "the three collections after the first faulted in " << total << " bytes";
  const auto [sum, count] = CheckTree(root.get());
  EXPECT_EQ(count, kReserveTreeNodes);
  EXPECT_EQ(sum, kReserveTreeNodes * (kReserveTreeNodes - 1) / 2);
}

TEST_F(EvacuationReserveTest, TheEvacuationReserveShrinksWithTheLiveSet) {
  {
    Root<Node> root(BuildTree(0, kReserveTreeNodes));
    CollectMajor(MajorMode::kCompactEverything);
    ASSERT_GE(GetHeapUsage().retained_bytes, 2 * kPageSize);
  }
  ResetNursery();
  CollectMajor(MajorMode::kCompactEverything);  // the tree is garbage: almost no small page stays live
  const HeapUsage usage = GetHeapUsage();
  EXPECT_LE(usage.retained_bytes, usage.committed_bytes + Options().retained_free_pages * kPageSize);
  EXPECT_LE(usage.retained_bytes + usage.committed_bytes, Options().max_heap_bytes);
}

// Bytes of the OS pages that mincore(2) reports resident in the object chunks (1..511) of `page`. The
// header chunk is left out: a conservative scan reads the in_use flag of any page a stack word points
// into, and that read maps the shared zero page there without committing memory.
size_t ResidentObjectBytes(PageHeader* page) {
  const size_t os_page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t bytes = kPageSize - kChunkSize;
  std::vector<unsigned char> vec(bytes / os_page);
  if (mincore(page->ChunkStart(1), bytes, vec.data()) != 0) {
    ADD_FAILURE() << "mincore: " << std::strerror(errno);
    return bytes;
  }
  return os_page * static_cast<size_t>(
                       std::count_if(vec.begin(), vec.end(), [](unsigned char v) { return (v & 1) != 0; }));
}

// The small pages in use now that `pages` does not hold yet are added to it.
void NoteSmallPages(std::vector<PageHeader*>& pages) {
  for (PageHeader* page : PageSpace::Get().SmallPages()) {
    if (std::find(pages.begin(), pages.end(), page) == pages.end()) pages.push_back(page);
  }
}

// Checks the free pages against the OS after a major collection without the evacuation reserve: at most
// `retained` stay committed (and HeapUsage reports them), every other free page holds no memory, and
// so neither does any page of `used` that is free now. Returns how many pages of `used` are free.
size_t CheckFreePagesAreDecommitted(const std::vector<PageHeader*>& used, size_t retained) {
  const std::vector<PageHeader*> in_use = PageSpace::Get().SmallPages();
  const std::vector<PageHeader*> warm = PageSpace::Get().WarmPages();
  const std::vector<PageHeader*> cold = PageSpace::Get().ColdPages();
  EXPECT_LE(warm.size(), retained);
  EXPECT_EQ(GetHeapUsage().retained_bytes, warm.size() * kPageSize);
  size_t freed = 0;
  for (PageHeader* page : used) {
    if (std::find(in_use.begin(), in_use.end(), page) != in_use.end()) continue;
    ++freed;
    if (std::find(warm.begin(), warm.end(), page) != warm.end()) continue;
    EXPECT_NE(std::find(cold.begin(), cold.end(), page), cold.end()) << "page " << page << " is lost";
    EXPECT_EQ(ResidentObjectBytes(page), 0u) << "page " << page << ", freed and not retained";
  }
  // The heap's own accounting against the OS: no decommitted or untouched page holds memory.
  size_t resident_cold = 0;
  for (PageHeader* page : cold) resident_cold += ResidentObjectBytes(page);
  EXPECT_EQ(resident_cold, 0u) << "in " << cold.size() << " free pages the heap counts as decommitted";
  return freed;
}

// Checked against the OS (mincore) rather than by counting the page faults of the next evacuation:
// to-space fills the free chunks of pages still in use and the retained page first, which are resident
// and rightly so, and how much of it that is depends on where earlier collections (and earlier tests in
// this process) left live chunks. For the same reason an evacuation need not empty a page; a dead tree
// empties most of the pages it filled.
//
// The tree lives in its own frame (EvacuateTreeTwice), and the stack is scrubbed before the collection
// that must find it dead: at -O1 (the sanitizer builds) a copy of a pointer into the tree otherwise stays
// in this frame and pins part of it.
__attribute__((noinline)) void EvacuateTreeTwice(std::vector<PageHeader*>& used, size_t retained) {
  Root<Node> root(BuildTree(0, kReserveTreeNodes));
  NoteSmallPages(used);
  CollectMajor(MajorMode::kCompactEverything);  // evacuates the tree
  NoteSmallPages(used);
  CheckFreePagesAreDecommitted(used, retained);
  CollectMajor(MajorMode::kCompactEverything);  // and again, out of the pages the last one copied it into
  NoteSmallPages(used);
  CheckFreePagesAreDecommitted(used, retained);
  EXPECT_EQ(CheckTree(root.get()).second, kReserveTreeNodes);
}

TEST_F(NoEvacuationReserveTest, FreePagesBeyondTheRetainedNumberGoBackToTheOs) {
  const size_t retained = Options().retained_free_pages;
  std::vector<PageHeader*> used;
  EvacuateTreeTwice(used, retained);
  ResetNursery();
  ScrubStack();
  CollectMajor(MajorMode::kCompactEverything);  // the tree is garbage
  const size_t freed = CheckFreePagesAreDecommitted(used, retained);
  const size_t tree_pages = kReserveTreeNodes * sizeof(Node) / kPageSize;
  EXPECT_GE(freed, tree_pages) << "of " << used.size() << " pages that held the tree, " << freed
                               << " are free";
}

uint64_t MajorCollections() {
  return GetGcStatistics(0).collections[static_cast<int>(CollectionKind::kMajor)];
}

// Grows a list of live nodes from `head` by `bytes`.
void GrowLiveList(Root<Node>& head, size_t bytes) {
  for (size_t done = 0; done < bytes; done += sizeof(Node)) head.set(NewNode(1, head.get()));
}

// Bytes of allocation that take the heap past its next major trigger.
size_t BytesPastTheMajorTrigger() {
  const size_t in_use = PageSpace::Get().InUseBytes();
  const size_t trigger = PageSpace::Get().NextMajorTrigger();
  return (trigger > in_use ? trigger - in_use : 0) + (size_t{8} << 20);
}

// A bulk load of live objects: growth past the major trigger collects (the control)...
TEST_F(GcTest, GrowthPastTheMajorTriggerCollects) {
  Root<Node> head;
  const uint64_t before = MajorCollections();
  GrowLiveList(head, BytesPastTheMajorTrigger());
  EXPECT_GT(MajorCollections(), before);
}

// ... but not while a deferral lives; once the scope ends, the deferred collection comes at the next
// poll.
TEST_F(GcTest, ADeferralHoldsOffMajorCollectionsThatGrowthWouldTrigger) {
  Root<Node> head;
  const uint64_t before = MajorCollections();
  const size_t grown = BytesPastTheMajorTrigger();
  {
    MajorCollectionDeferral deferral;
    GrowLiveList(head, grown);
    EXPECT_EQ(MajorCollections(), before) << "a deferred trigger collected";
  }
  GrowLiveList(head, 4 * Options().nursery_bytes);  // polls at every nursery chunk
  EXPECT_GT(MajorCollections(), before) << "the deferred collection did not come after the scope";
  size_t n = 0;
  for (Node* p = head.get(); p != nullptr; p = static_cast<Node*>(p->left.Load())) ++n;
  EXPECT_EQ(n, (grown + sizeof(Node) - 1) / sizeof(Node) +
                   (4 * Options().nursery_bytes + sizeof(Node) - 1) / sizeof(Node));
}

// A deferral never makes the heap run out: near the maximum, growth collects anyway.
TEST_F(GcTest, ADeferralStillCollectsNearTheHeapMaximum) {
  MajorCollectionDeferral deferral;
  const size_t max = Options().max_heap_bytes;
  const size_t kSlots = 16384;  // most of a nursery survives each minor collection
  // Old garbage: nodes that live through a minor collection in the slots of a fan, then are replaced.
  absl::StatusOr<Fan*> fan_or = NewWithTail<Fan>(kSlots * sizeof(void*));
  ASSERT_TRUE(fan_or.ok());
  Root<Fan> fan(*fan_or);
  fan->count = kSlots;
  const uint64_t before = MajorCollections();
  std::mutex mu;
  std::vector<std::string> reasons;
  const int listener = AddCollectionListener(
      [&](const CollectionRecord& r) {
        std::lock_guard<std::mutex> lock(mu);
        reasons.push_back(r.reason);
      },
      1u << static_cast<int>(CollectionKind::kMajor));
  size_t peak = 0;
  for (size_t allocated = 0, i = 0; allocated < 4 * max; allocated += sizeof(Node), ++i) {
    absl::StatusOr<Node*> n = New<Node>();
    ASSERT_TRUE(n.ok()) << "after " << allocated << " bytes: " << n.status();
    fan->slots()[i % kSlots].Store(*n);
    peak = std::max(peak, GetHeapUsage().committed_bytes);
  }
  EXPECT_GT(MajorCollections(), before) << "old garbage near the maximum was to be collected";
  RemoveCollectionListener(listener);
  // By the trigger at 7/8 of the maximum, before the heap ran out.
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_NE(std::count(reasons.begin(), reasons.end(), "heap growth"), 0) << "only exhaustion collected";
  EXPECT_LE(peak, max);
  EXPECT_EQ(AllocationFailuresInThisTest(), 0u);
}

// Grows a list from `head` until allocation fails; returns the failure. Runs in its own frame so the
// caller can scrub the stack copies of list pointers it leaves behind.
__attribute__((noinline)) absl::Status GrowUntilExhausted(Root<Node>& head) {
  for (;;) {
    absl::StatusOr<Node*> n = New<Node>();
    if (!n.ok()) return n.status();
    (*n)->left.Store(head.get());
    head.set(*n);
  }
}

TEST_F(GcTest, LiveSetLargerThanTheMaximumYieldsTheNamedErrorAndTheHeapStaysUsable) {
  SetMaxHeapBytes(size_t{32} << 20);
  Root<Node> head;
  const absl::Status failure = GrowUntilExhausted(head);
  EXPECT_EQ(failure.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(failure.message().find("heap exhausted"), std::string::npos) << failure;
  EXPECT_GT(AllocationFailuresInThisTest(), 0u);
  head.set(nullptr);
  ScrubStack();
  CollectMajor();
  Root<Node> tree(BuildTree(0, 10'000));
  EXPECT_EQ(CheckTree(tree.get()).second, 10'000);
}

TEST_F(GcTest, RememberedSetKeepsNurseryObjectsWrittenIntoOldObjects) {
  Root<Node> old_node(NewNode(1));
  CollectMinor();  // old_node is now outside the nursery
  ASSERT_FALSE(IsInNursery(old_node.get()));
  old_node->left.Store(NewNode(2, NewNode(3)));  // old -> nursery: the write barrier remembers the slot
  ScrubStack();
  CollectMinor();
  ASSERT_NE(old_node->left.Load(), nullptr);
  EXPECT_FALSE(IsInNursery(old_node->left.Load()));
  EXPECT_EQ(old_node->left.Load()->value, 2);
  EXPECT_EQ(old_node->left.Load()->left.Load()->value, 3);
  // The same across a major collection, which rebuilds the remembered sets.
  old_node->right.Store(NewNode(4));
  CollectMajor();
  ScrubStack();
  CollectMinor();
  EXPECT_EQ(old_node->right.Load()->value, 4);
}

TEST_F(GcTest, MajorCollectionScansNurseriesInPlace) {
  Root<Node> old_node(NewNode(10));
  CollectMinor();
  Node* volatile young = NewNode(11, old_node.get());
  const auto young_address = reinterpret_cast<uintptr_t>(young);
  ScrubStack();
  CollectMajor();  // old_node moves; the nursery object that points to it does not, but is updated
  EXPECT_EQ(reinterpret_cast<uintptr_t>(young), young_address);
  EXPECT_TRUE(IsInNursery(young));
  EXPECT_EQ(young->left.Load(), old_node.get());
  EXPECT_EQ(young->left.Load()->value, 10);
}

__attribute__((noinline)) void HoldPinnedObjectsAcrossCollections(size_t* pinned_while_held) {
  Node* volatile held[64];
  for (auto& h : held) h = NewNode(1);
  CollectMinor();                               // pinned in the nursery: their chunks are promoted in place
  CollectMajor(MajorMode::kCompactEverything);  // pinned again in old space
  *pinned_while_held = GetHeapUsage().pinned_bytes;
  for (auto& h : held) EXPECT_EQ(h->value, 1);
  for (auto& h : held) h = nullptr;
}

TEST_F(GcTest, PinnedBytesAreReportedAndFallToZeroWhenTheRootsAreGone) {
  size_t pinned_while_held = 0;
  HoldPinnedObjectsAcrossCollections(&pinned_while_held);
  EXPECT_GE(pinned_while_held, 64 * sizeof(Node));
  ScrubStack();
  CollectMajor(MajorMode::kCompactEverything);
  EXPECT_EQ(GetHeapUsage().pinned_bytes, 0u);
  EXPECT_EQ(GetHeapUsage().pinned_chunks, 0u);
}

// Allocates, from the start of a nursery chunk: a node for `*first`, about 4 KiB of garbage, a node
// for `*second`, then garbage past the end of the chunk. The caller's two slots pin the nodes.
__attribute__((noinline)) void AllocateTwoNodesWithAGapBetween(Node* volatile* first,
                                                               Node* volatile* second) {
  *first = NewNode(99);
  AllocateGarbage(4 << 10);
  *second = NewNode(98);
  AllocateGarbage(16 << 10);
}

__attribute__((noinline)) void FillTree(Root<Node>& root, int64_t count) { root.set(BuildTree(0, count)); }

// The number of nodes of the tree in `root` whose address is in [begin, end).
__attribute__((noinline)) size_t NodesWithin(Root<Node>& root, uintptr_t begin, uintptr_t end) {
  size_t n = 0;
  std::vector<Node*> stack;  // transient: no collection can run while it is alive
  if (root.get() != nullptr) stack.push_back(root.get());
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    const auto a = reinterpret_cast<uintptr_t>(node);
    if (a >= begin && a < end) ++n;
    if (Node* l = node->left.Load()) stack.push_back(l);
    if (Node* r = node->right.Load()) stack.push_back(r);
  }
  return n;
}

TEST_F(GcTest, PinnedChunksAreReusedAroundTheirObjects) {
  // Pin two objects of one chunk with a gap between them and drop everything else: the major
  // collection keeps the chunk with a hole between them and a free tail after them, and the next
  // promotions fill both before any fresh chunk is taken (seed 003: pinned chunks are kept and reused
  // around their objects).
  CollectMinor();  // an empty nursery: the next allocation starts a chunk
  Node* volatile pinned = nullptr;
  Node* volatile second = nullptr;
  AllocateTwoNodesWithAGapBetween(&pinned, &second);
  ScrubStack();
  CollectMinor();  // pinned in the nursery: the chunk is promoted in place
  ScrubStack();
  CollectMajor(MajorMode::kCompactEverything);  // pinned again in old space: the gaps become holes
  const HeapUsage before = GetHeapUsage();
  EXPECT_GT(before.pinned_bytes, 0u);
  const uintptr_t chunk = reinterpret_cast<uintptr_t>(pinned) & ~(kChunkSize - 1);
  const uintptr_t first_end = reinterpret_cast<uintptr_t>(pinned) + pinned->size();
  const auto second_start = reinterpret_cast<uintptr_t>(second);
  ASSERT_EQ(second_start & ~(kChunkSize - 1), chunk) << "both pinned nodes share a chunk";
  ASSERT_GE(second_start - first_end, size_t{2} << 10) << "garbage lay between them";

  // Promotions now go into the holes of the pinned chunk before taking fresh chunks.
  Root<Node> keep;
  FillTree(keep, 200);  // 200 nodes: more than the hole between the pinned nodes holds
  ScrubStack();
  CollectMinor();
  EXPECT_EQ(CheckTree(keep.get()).second, 200);
  EXPECT_EQ(pinned->value, 99);
  EXPECT_EQ(second->value, 98);
  EXPECT_EQ(NodesWithin(keep, chunk, chunk + kChunkSize), 200u)
      << "every survivor went into the pinned chunk";
  EXPECT_GT(NodesWithin(keep, first_end, second_start), 0u) << "the hole between the pinned nodes was reused";
  EXPECT_GT(NodesWithin(keep, second_start + second->size(), chunk + kChunkSize), 0u)
      << "and so was the free tail after them";
  EXPECT_EQ(GetHeapUsage().old_bytes, before.old_bytes) << "no fresh old chunk was taken";
}

TEST_F(GcTest, LocalCollectionMakesSurvivorsGlobalAndSendsUnwrittenCopiesBackToTheirOriginal) {
  // A global object to make a local copy of.
  Object* global = NewNode(1);
  LocalCollect(std::span<Object*>(&global, 1));
  ASSERT_TRUE(global->HasFlag(kGlobal));
  ASSERT_FALSE(IsInNursery(global));

  // A written local copy (the root), a new object it points to, and an unwritten copy of `global`.
  Node* copy = NewNode(1);
  copy->h_revision.store(reinterpret_cast<uintptr_t>(global));  // "comes from global", never written
  Node* fresh = NewNode(2, NewNode(3));
  Node* written = NewNode(4, fresh, copy);
  written->SetFlagsExclusive(kWritten);
  Object* root = written;
  const size_t promoted = LocalCollect(std::span<Object*>(&root, 1));
  auto* w = static_cast<Node*>(root);
  EXPECT_GT(promoted, 0u);
  EXPECT_FALSE(IsInNursery(w));
  EXPECT_TRUE(w->HasFlag(kGlobal));
  EXPECT_FALSE(w->HasFlag(kWritten));
  EXPECT_EQ(w->value, 4);
  EXPECT_EQ(w->right.Load(), global) << "references to unwritten copies go back to the original";
  Node* f = w->left.Load();
  EXPECT_TRUE(f->HasFlag(kGlobal));
  EXPECT_FALSE(IsInNursery(f));
  EXPECT_EQ(f->value, 2);
  EXPECT_TRUE(f->left.Load()->HasFlag(kGlobal));
  EXPECT_EQ(f->left.Load()->value, 3);
  EXPECT_EQ(GetHeapUsage().nursery_bytes % kChunkSize, 0u);
}

TEST_F(GcTest, LocalCollectionPromotesMinorSurvivorsInPlace) {
  Root<Node> survivor(NewNode(5));
  CollectMinor();  // survivor is local, outside the nursery
  ASSERT_FALSE(survivor->HasFlag(kGlobal));
  const HiddenAddress where(survivor.get());
  Node* written = NewNode(6, survivor.get());
  written->SetFlagsExclusive(kWritten);
  Object* root = written;
  survivor.set(nullptr);
  LocalCollect(std::span<Object*>(&root, 1));
  Node* s = static_cast<Node*>(root)->left.Load();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(s), where.get()) << "outside the nursery: made global where it is";
  EXPECT_TRUE(s->HasFlag(kGlobal));
  EXPECT_EQ(s->value, 5);
}

// ----- The large-object space under collection -----

// A large Fan (its slots alone take more than kLargeObjectThreshold) whose slot i points to a new
// nursery node of value i; the write barrier remembers each slot.
__attribute__((noinline)) HiddenAddress FillLargeFan(Root<Fan>& root, size_t slots) {
  absl::StatusOr<Fan*> fan = NewWithTail<Fan>(slots * sizeof(void*));
  if (!fan.ok()) {
    ADD_FAILURE() << fan.status();
    std::abort();
  }
  (*fan)->count = slots;
  for (size_t i = 0; i < slots; ++i) (*fan)->slots()[i].Store(NewNode(static_cast<int64_t>(i)));
  root.set(*fan);
  return HiddenAddress(*fan);
}

// True if slot i of the fan holds an intact node of value i that is outside the nursery, for every i.
__attribute__((noinline)) bool FanHoldsItsNodes(Root<Fan>& root) {
  for (size_t i = 0; i < root->count; ++i) {
    const auto* n = static_cast<const Node*>(RawReference(root->slots()[i]));
    if (n == nullptr || IsInNursery(n) || n->value != static_cast<int64_t>(i) ||
        n->check != n->value * 7919 + 13) {
      return false;
    }
  }
  return true;
}

__attribute__((noinline)) HiddenAddress SlotTarget(Root<Fan>& root, size_t i) {
  return HiddenAddress(RawReference(root->slots()[i]));
}

char PatternByte(size_t i, char seed) { return static_cast<char>(seed + static_cast<char>(i * 31)); }

__attribute__((noinline)) HiddenAddress FillBytes(Root<Bytes>& root, size_t length, char seed) {
  std::string data(length, '\0');
  for (size_t i = 0; i < length; ++i) data[i] = PatternByte(i, seed);
  absl::StatusOr<Bytes*> b = NewBytes(data);
  if (!b.ok()) {
    ADD_FAILURE() << b.status();
    std::abort();
  }
  root.set(*b);
  return HiddenAddress(*b);
}

__attribute__((noinline)) bool HoldsPattern(Root<Bytes>& root, size_t length, char seed) {
  if (root->length() != length) return false;
  for (size_t i = 0; i < length; ++i) {
    if (root->data()[i] != PatternByte(i, seed)) return false;
  }
  return true;
}

size_t LargeRunBytes(size_t object_bytes) {
  return (object_bytes + kChunkSize - 1) / kChunkSize * kChunkSize;
}

TEST_F(GcTest, RootedLargeObjectsKeepTheirAddressAndContentsAcrossCollections) {
  const size_t slots = 2048;  // 16 KiB of slots: a run of two chunks
  const size_t length = 100 * 1024;
  ScrubStack();
  CollectMajor();  // no large garbage left from earlier tests: the large-object figures are exact
  const size_t large_before = GetHeapUsage().large_bytes;
  Root<Fan> fan;
  Root<Bytes> bytes;
  const HiddenAddress fan_at = FillLargeFan(fan, slots);
  const HiddenAddress bytes_at = FillBytes(bytes, length, 'a');
  const size_t large_bytes = GetHeapUsage().large_bytes;
  EXPECT_EQ(large_bytes - large_before,
            LargeRunBytes(sizeof(Fan) + slots * sizeof(void*)) + LargeRunBytes(sizeof(Bytes) + length));
  const HiddenAddress node_in_nursery = SlotTarget(fan, 0);

  ScrubStack();
  CollectMinor();
  EXPECT_TRUE(AddressOf(fan) == fan_at) << "a minor collection does not move a large object";
  EXPECT_TRUE(FanHoldsItsNodes(fan)) << "its remembered slots now point to the nodes' copies";
  const HiddenAddress node_in_old = SlotTarget(fan, 0);
  EXPECT_FALSE(node_in_old == node_in_nursery);

  for (int i = 0; i < 2; ++i) {
    ScrubStack();
    CollectMajor(MajorMode::kCompactEverything);
    EXPECT_TRUE(AddressOf(fan) == fan_at) << "major collection " << i << " does not move a large object";
    EXPECT_TRUE(AddressOf(bytes) == bytes_at) << "major collection " << i;
    EXPECT_TRUE(ResolvesInside(fan_at, 12 * 1024)) << "its run is still allocated";
    EXPECT_TRUE(ResolvesInside(bytes_at, 70 * 1024)) << "its run is still allocated";
    EXPECT_TRUE(FanHoldsItsNodes(fan)) << "major collection " << i;
    EXPECT_TRUE(HoldsPattern(bytes, length, 'a')) << "major collection " << i;
    EXPECT_EQ(GetHeapUsage().large_bytes, large_bytes);
  }
  EXPECT_FALSE(SlotTarget(fan, 0) == node_in_old)
      << "the nodes it points to were evacuated, its slots updated";
}

// Allocates a large Bytes object that nothing references; returns where it is.
__attribute__((noinline)) HiddenAddress NewLargeGarbage(size_t length) {
  absl::StatusOr<Bytes*> b = NewBytes(std::string(length, 'g'));
  if (!b.ok()) {
    ADD_FAILURE() << b.status();
    std::abort();
  }
  return HiddenAddress(*b);
}

TEST_F(GcTest, UnreachableLargeObjectIsFreedByAMajorCollection) {
  ScrubStack();
  CollectMajor();  // no large garbage left from earlier tests: the large-object figures are exact
  Root<Bytes> kept;
  (void)FillBytes(kept, 50 * 1024, 'k');  // a live large object beside it stays
  const size_t before = GetHeapUsage().large_bytes;
  const size_t length = 200 * 1024;
  const size_t run = LargeRunBytes(sizeof(Bytes) + length);
  const HiddenAddress garbage = NewLargeGarbage(length);
  EXPECT_EQ(GetHeapUsage().large_bytes, before + run);
  ScrubStack();
  CollectMinor();
  EXPECT_EQ(GetHeapUsage().large_bytes, before + run) << "minor collections leave large objects alone";
  ScrubStack();
  CollectMajor();
  EXPECT_EQ(GetHeapUsage().large_bytes, before) << "its run was freed";
  EXPECT_TRUE(ResolvesToNothing(garbage, 0));
  EXPECT_TRUE(ResolvesToNothing(garbage, 150 * 1024));
  const GcStatistics stats = GetGcStatistics(1);
  ASSERT_FALSE(stats.recent.empty());
  EXPECT_EQ(stats.recent.back().kind, CollectionKind::kMajor);
  EXPECT_GE(stats.recent.back().heap_bytes_before, stats.recent.back().heap_bytes_after + run);
  EXPECT_TRUE(HoldsPattern(kept, 50 * 1024, 'k'));
}

// Builds a list of `node_bytes` of nodes and a large object of `large_bytes`, promotes the list into old
// space, and drops both: old and large garbage for the next major collection.
__attribute__((noinline)) void MakeOldAndLargeGarbage(size_t node_bytes, size_t large_bytes) {
  Root<Node> list(NewNode(0));
  for (size_t i = 1; i < node_bytes / sizeof(Node); ++i)
    list.set(NewNode(static_cast<int64_t>(i), list.get()));
  (void)NewLargeGarbage(large_bytes);
  CollectMinor();  // the list survives it into old space
  list.set(nullptr);
}

// Freeing on its own (the verifier aside): each major collection gives back the old chunks it evacuated
// and the large objects nobody reaches, so across many rounds of old and large garbage, old and large
// space stay where the first round left them. Without freeing they grow by a round's garbage every round
// (REVKV_MUTATION_NO_FREEING: 4 MiB of old space and a 256 KiB large run per round). The slack allows for
// one round's list kept alive by a stale stack word.
TEST_F(GcTest, EveryMajorCollectionFreesTheOldAndLargeGarbageOfTheRoundBefore) {
  constexpr size_t kListBytes = size_t{4} << 20;
  constexpr size_t kLargeBytes = size_t{256} << 10;
  constexpr int kRounds = 24;
  // The statistics count from the start of the process: an earlier test's failures are not this one's.
  const uint64_t failures_before = GetGcStatistics().allocation_failures;
  ScrubStack();
  CollectMajor();
  HeapUsage first{};
  for (int round = 0; round < kRounds; ++round) {
    MakeOldAndLargeGarbage(kListBytes, kLargeBytes);
    const HeapUsage before = GetHeapUsage();
    ScrubStack();
    CollectMajor();
    const HeapUsage after = GetHeapUsage();
    if (round == 0) {
      first = after;
      EXPECT_GE(before.old_bytes, after.old_bytes + kListBytes / 2) << "the first round's list was not freed";
      EXPECT_GE(before.large_bytes, after.large_bytes + kLargeBytes)
          << "the first round's large object was not freed";
    }
  }
  const HeapUsage last = GetHeapUsage();
  EXPECT_LE(last.old_bytes, first.old_bytes + 2 * kListBytes)
      << "old space grew by " << (last.old_bytes - first.old_bytes) << " bytes over " << kRounds << " rounds";
  EXPECT_LE(last.large_bytes, first.large_bytes + 2 * LargeRunBytes(sizeof(Bytes) + kLargeBytes))
      << "large space grew by " << (last.large_bytes - first.large_bytes) << " bytes over " << kRounds
      << " rounds";
  EXPECT_EQ(GetGcStatistics().allocation_failures, failures_before);
}

// Allocates 1 MiB objects into the slots of `holder` until allocation fails or the slots run out;
// returns the failure, and in `count` how many it allocated.
__attribute__((noinline)) absl::Status FillWithLargeObjects(Root<Fan>& holder, size_t* count) {
  for (*count = 0; *count < holder->count; ++*count) {
    absl::StatusOr<Object*> o = Allocate(kBytesTypeId, size_t{1} << 20);
    if (!o.ok()) return o.status();
    holder->slots()[*count].Store(*o);
  }
  return absl::OkStatus();
}

__attribute__((noinline)) void ClearSlots(Root<Fan>& holder) {
  for (size_t i = 0; i < holder->count; ++i) holder->slots()[i].Store(nullptr);
}

TEST_F(GcTest, LargeObjectExhaustionYieldsTheNamedErrorAndTheHeapStaysUsable) {
  const size_t max = size_t{32} << 20;
  SetMaxHeapBytes(max);
  ScrubStack();
  CollectMajor();  // no large garbage left from earlier tests: the large-object figures are exact
  absl::StatusOr<Fan*> holder_or = NewWithTail<Fan>(64 * sizeof(void*));
  ASSERT_TRUE(holder_or.ok());
  Root<Fan> holder(*holder_or);
  holder->count = 64;
  const uint64_t failures_before = GetGcStatistics(0).allocation_failures;
  size_t count = 0;
  const absl::Status failure = FillWithLargeObjects(holder, &count);
  EXPECT_EQ(failure.code(), absl::StatusCode::kResourceExhausted) << failure;
  EXPECT_NE(failure.message().find("heap exhausted"), std::string::npos) << failure;
  EXPECT_GT(count, 0u);
  EXPECT_LT(count, max >> 20);
  EXPECT_EQ(GetGcStatistics(0).allocation_failures, failures_before + 1);
  EXPECT_LE(GetHeapUsage().committed_bytes, max);

  ClearSlots(holder);
  ScrubStack();
  CollectMajor();
  EXPECT_EQ(GetHeapUsage().large_bytes, 0u) << "the dropped large objects were freed";
  size_t again = 0;
  EXPECT_EQ(FillWithLargeObjects(holder, &again).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(again, count) << "the freed space is allocated again";
  ClearSlots(holder);
  ScrubStack();
  CollectMajor();
  Root<Node> tree(BuildTree(0, 10'000));
  EXPECT_EQ(CheckTree(tree.get()).second, 10'000);
}

// ----- Bytes payloads are never scanned -----
// Each test below writes an object's address into Bytes payloads and nowhere else. A collector that
// scanned payloads would keep the object alive, copy it, and rewrite the payload words to the copy;
// one that does not leaves the words as they were and reclaims the object.

// Writes `target`'s address into every word of the payload of a new Bytes object held by `bytes`.
__attribute__((noinline)) void NewBytesNaming(Root<Bytes>& bytes, const Object* target, size_t words) {
  std::string payload(words * sizeof(uintptr_t), '\0');
  const auto address = reinterpret_cast<uintptr_t>(target);
  for (size_t i = 0; i < words; ++i) std::memcpy(&payload[i * sizeof(address)], &address, sizeof(address));
  absl::StatusOr<Bytes*> b = NewBytes(payload);
  if (!b.ok()) {
    ADD_FAILURE() << b.status();
    std::abort();
  }
  bytes.set(*b);
}

// A new nursery node whose address is written only into the payload of a new Bytes held by `bytes`.
__attribute__((noinline)) HiddenAddress NewNodeNamedOnlyByBytes(Root<Bytes>& bytes, size_t words) {
  Node* n = NewNode(77);
  NewBytesNaming(bytes, n, words);
  EXPECT_TRUE(IsInNursery(n) && IsInNursery(bytes.get()));
  return HiddenAddress(n);
}

// True if every payload word of `bytes` holds the address `expected`.
__attribute__((noinline)) bool PayloadWordsAre(Root<Bytes>& bytes, HiddenAddress expected) {
  const size_t words = bytes->length() / sizeof(uintptr_t);
  for (size_t i = 0; i < words; ++i) {
    uintptr_t w;
    std::memcpy(&w, bytes->data() + i * sizeof(w), sizeof(w));
    if (!(HiddenAddress(reinterpret_cast<const void*>(w)) == expected)) return false;
  }
  return words > 0;
}

TEST_F(GcTest, ABytesPayloadDoesNotKeepANurseryObjectAlive) {
  const size_t words = 8;
  Root<Bytes> bytes;
  const HiddenAddress node = NewNodeNamedOnlyByBytes(bytes, words);
  ScrubStack();
  CollectMinor();
  const CollectionRecord r = LastRecord();
  EXPECT_EQ(r.kind, CollectionKind::kMinor);
  ASSERT_EQ(r.pinned_objects, 0u) << "nothing on the stack may pin the node, or the test proves nothing";
  EXPECT_TRUE(PayloadWordsAre(bytes, node)) << "the payload was not rewritten: the node was not copied";
  EXPECT_EQ(r.objects_copied, 1u) << "only the Bytes object survived";
  EXPECT_EQ(r.bytes_copied, sizeof(Bytes) + words * sizeof(uintptr_t));
  EXPECT_TRUE(ResolvesToNothing(node, 0)) << "the node went with the nursery";
}

// Moves a new node and two new Bytes (one small, one large) out of the nursery, then writes the node's
// address into both payloads and drops the node's root: the payloads are all that name it.
__attribute__((noinline)) HiddenAddress OldNodeNamedOnlyByBytes(Root<Bytes>& small, Root<Bytes>& large) {
  Root<Node> node(NewNode(88));
  NewBytesNaming(small, nullptr, 8);
  NewBytesNaming(large, nullptr, 2048);  // 16 KiB: the large-object space
  CollectMinor();
  EXPECT_FALSE(IsInNursery(node.get()) || IsInNursery(small.get()));
  NewBytesNaming(small, node.get(), 8);  // small again, old again after the next minor collection
  for (size_t i = 0; i < 256; ++i) std::memcpy(large->mutable_data() + i * 64, small->data(), 64);
  CollectMinor();
  const HiddenAddress at(node.get());
  node.set(nullptr);
  return at;
}

TEST_F(GcTest, ABytesPayloadDoesNotKeepAnOldObjectAlive) {
  Root<Bytes> small;
  Root<Bytes> large;
  const HiddenAddress node = OldNodeNamedOnlyByBytes(small, large);
  ScrubStack();
  CollectMajor(MajorMode::kCompactEverything);
  const CollectionRecord r = LastRecord();
  EXPECT_EQ(r.kind, CollectionKind::kMajor);
  ASSERT_EQ(r.pinned_objects, 0u) << "nothing on the stack may pin the node, or the test proves nothing";
  EXPECT_TRUE(PayloadWordsAre(small, node)) << "the payload was not rewritten: the node was not evacuated";
  EXPECT_TRUE(PayloadWordsAre(large, node)) << "nor was the large payload";
  EXPECT_EQ(r.objects_copied, 1u) << "only the small Bytes object was evacuated";
  EXPECT_TRUE(ResolvesToNothing(node, 0)) << "the node's chunk was freed";
}

// The collector's own frames must not act as ambiguous roots: a minor collection of a nursery that holds
// only garbage pins nothing and promotes no chunk, wherever the allocation cursor stands.
TEST_F(GcTest, MinorCollectionOfGarbagePinsNothing) {
  ScrubStack();
  CollectMinor();
  const size_t old_bytes = GetHeapUsage().old_bytes;
  for (size_t round = 0; round < 40; ++round) {
    AllocateGarbage((round * 37 % 61 + 1) * (16 << 10) +
                    round * 48);  // the cursor in a different chunk each time
    ScrubStack();
    CollectMinor();
    const CollectionRecord r = LastRecord();
    ASSERT_EQ(r.pinned_objects, 0u) << "round " << round;
    ASSERT_EQ(r.objects_copied, 0u) << "round " << round;
  }
  EXPECT_EQ(GetHeapUsage().old_bytes, old_bytes) << "no chunk was promoted in place";
}

// Likewise for a major collection: the collecting thread's roots are its frames as they were when it
// asked, not the collector's. Old-space garbage only, the first object of each chunk included.
TEST_F(GcTest, MajorCollectionOfGarbagePinsNothing) {
  ScrubStack();
  CollectMajor();
  for (size_t round = 0; round < 10; ++round) {
    {
      Root<Fan> dropped;
      FillFanOfNodes(dropped, 500 + round * 50);
      ScrubStack();
      CollectMinor();  // to old space
    }
    ScrubStack();
    CollectMajor();
    const CollectionRecord r = LastRecord();
    ASSERT_EQ(r.pinned_objects, 0u) << "round " << round;
    ASSERT_EQ(r.objects_copied, 0u) << "round " << round;
  }
}

TEST_F(GcTest, StatisticsAndListenersReportEachCollection) {
  std::atomic<int> majors{0};
  std::atomic<int> minors{0};
  const int id = AddCollectionListener(
      [&](const CollectionRecord& r) { (r.kind == CollectionKind::kMajor ? majors : minors).fetch_add(1); });
  const GcStatistics before = GetGcStatistics();
  const uint64_t pauses_before = PauseHistogram(CollectionKind::kMajor).count;
  CollectMinor();
  CollectMajor();
  RemoveCollectionListener(id);
  CollectMajor();
  EXPECT_EQ(majors.load(), 1);
  EXPECT_EQ(minors.load(), 1);
  const GcStatistics after = GetGcStatistics(8);
  EXPECT_EQ(after.collections[2], before.collections[2] + 2);
  EXPECT_EQ(PauseHistogram(CollectionKind::kMajor).count, pauses_before + 2);
  ASSERT_FALSE(after.recent.empty());
  EXPECT_EQ(after.recent.back().kind, CollectionKind::kMajor);
  EXPECT_GT(after.recent.back().pause_nanos, 0u);
  EXPECT_EQ(after.recent.back().reason, "requested");
  EXPECT_GE(TimeToSafepointHistogram().count, 2u);
}

}  // namespace
}  // namespace revkv::runtime::testing
