// Tests of the object-start map (runtime/heap/object_starts.h): it notes exactly the objects a linear
// parse of each chunk finds, after allocation, minor, local and major collections, promotion in place,
// evacuation around pinned objects, reuse of holes and freeing; and resolving an ambiguous word from it
// gives the same referents as the parse (interior words, one past the end, chunk ends). A stale map
// (REVKV_MUTATION_STALE_OBJECT_STARTS: bits of dead or overwritten objects are never cleared) fails the
// first three tests by their own assertions, heap verifier off or on.
#include "runtime/heap/object_starts.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/gc/collector.h"
#include "runtime/gc/gc.h"
#include "runtime/heap/heap.h"
#include "runtime/heap/object_format.h"
#include "runtime/heap/page_space.h"
#include "runtime/safepoint/thread_context.h"
#include "tests/runtime/test_support.h"

namespace revkv::runtime::testing {
namespace {

class ObjectStartsTest : public RuntimeTest {};

uintptr_t ChunkBaseOfForTest(const void* p) { return reinterpret_cast<uintptr_t>(p) & ~(kChunkSize - 1); }

bool SameReferents(const AmbiguousReferents& a, const AmbiguousReferents& b) {
  return a.into == b.into && a.ending == b.ending;
}

// Every granule of every chunk that holds objects (and each chunk's fringe): the referents from the map
// equal those from a parse. Returns "" or the first difference. Retires the caller's regions first
// (CheckObjectStartMaps does), so every chunk parses up to its fringe.
std::string ResolutionDisagreement() {
  if (std::string e = CheckObjectStartMaps(); !e.empty()) return e;
  for (PageHeader* page : PageSpace::Get().SmallPages()) {
    for (size_t i = 1; i < kChunksPerPage; ++i) {
      const ChunkKind kind = page->chunk_kind[i].load(std::memory_order_relaxed);
      if (kind != ChunkKind::kOld && kind != ChunkKind::kNursery) continue;
      char* chunk = page->ChunkStart(i);
      char* fringe = page->chunk[i].fringe;
      for (uintptr_t w = reinterpret_cast<uintptr_t>(chunk); w <= reinterpret_cast<uintptr_t>(fringe);
           w += kObjectAlignment / 2) {  // aligned words and words between them
        if (w == reinterpret_cast<uintptr_t>(chunk) + kChunkSize) break;
        const AmbiguousReferents parsed = ParseReferentsInChunk(chunk, fringe, w);
        const AmbiguousReferents mapped = ReferentsFromObjectStarts(chunk, fringe, w);
        if (!SameReferents(parsed, mapped)) {
          return "chunk " + std::to_string(reinterpret_cast<uintptr_t>(chunk)) + " word +" +
                 std::to_string(w - reinterpret_cast<uintptr_t>(chunk)) + ": the map and the parse disagree";
        }
      }
      if (fringe == chunk + kChunkSize) {  // one past the chunk's last object
        const uintptr_t end = reinterpret_cast<uintptr_t>(fringe);
        if (!SameReferents(ParseReferentsInChunk(chunk, fringe, end),
                           ReferentsFromObjectStarts(chunk, fringe, end))) {
          return "chunk " + std::to_string(reinterpret_cast<uintptr_t>(chunk)) + ": disagreement at its end";
        }
      }
    }
  }
  return "";
}

// Objects of sizes that do not repeat in step, so that starts fall on every granule over time.
__attribute__((noinline)) void AllocateMixed(size_t count, int64_t seed) {
  for (size_t i = 0; i < count; ++i) {
    const size_t tail = static_cast<size_t>((seed + static_cast<int64_t>(i) * 7) % 97) * 8;
    ASSERT_TRUE(NewBytes(std::string(tail, 'm')).ok());
    if (i % 3 == 0) (void)NewNode(static_cast<int64_t>(i));
  }
}

// Keeps a scattered set of nodes alive through precise roots, some of them only through a stack word
// (pinned), while garbage is allocated around them.
__attribute__((noinline)) void BuildScatteredSurvivors(Root<Node>& keep, std::vector<HiddenAddress>* pinned) {
  Node* list = nullptr;
  for (int i = 0; i < 300; ++i) {
    AllocateMixed(5, i);
    list = NewNode(i, list);
    keep.set(list);
    list = keep.get();
    if (i % 50 == 0) pinned->push_back(HiddenAddress(NewNode(1000 + i)));
  }
}

TEST_F(ObjectStartsTest, TheMapMatchesALinearParseThroughEveryKindOfCollection) {
  Root<Node> keep;
  std::vector<HiddenAddress> pinned;
  AllocateMixed(500, 1);
  ASSERT_EQ(ResolutionDisagreement(), "") << "after nursery allocation";
  BuildScatteredSurvivors(keep, &pinned);
  ASSERT_EQ(ResolutionDisagreement(), "") << "after minor collections (promotions in place included)";
  CollectMinor();
  ASSERT_EQ(ResolutionDisagreement(), "") << "after an explicit minor collection";
  {
    // Stack words into nodes of the list pin them through the major collection: their chunks keep
    // them and turn the rest into holes.
    Node* volatile a = keep.get();
    Node* volatile b = keep.get()->left.Load()->left.Load();
    CollectMajor();
    ASSERT_EQ(ResolutionDisagreement(), "") << "after a major collection with pinned chunks";
    EXPECT_NE(a, nullptr);
    EXPECT_NE(b, nullptr);
  }
  AllocateMixed(3000, 2);  // minor collections copy survivors into the holes left around pinned nodes
  ASSERT_EQ(ResolutionDisagreement(), "") << "after allocation into holes";
  keep.set(nullptr);
  ScrubStack();
  CollectMajor();
  ASSERT_EQ(ResolutionDisagreement(), "") << "after a major collection that freed most chunks";
  AllocateMixed(1000, 3);
  CollectMajor();
  ASSERT_EQ(ResolutionDisagreement(), "") << "after reusing freed chunks";
}

// Two nodes pinned in a nursery chunk with a dead node between them: the minor collection keeps the
// chunk (promoted in place) and turns the dead node into a filler below the chunk's fringe. A spacer
// follows the dead node: the word naming `second`'s start also pins the object that ends there.
__attribute__((noinline)) Node* NewPinnedNodesAroundADeadOne(Node* volatile* second, HiddenAddress* dead) {
  Node* first = NewNode(1);
  *dead = HiddenAddress(NewNode(2));
  (void)NewNode(4);  // spacer
  *second = NewNode(3);
  return first;
}

TEST_F(ObjectStartsTest, AWordIntoADeadObjectOfAChunkPromotedInPlaceResolvesToNothing) {
  HiddenAddress dead;
  Node* volatile second = nullptr;
  Node* volatile first = NewPinnedNodesAroundADeadOne(&second, &dead);
  ScrubStack();
  CollectMinor();
  ASSERT_FALSE(IsInNursery(first));
  ASSERT_EQ(ChunkBaseOfForTest(first), ChunkBaseOfForTest(second)) << "the nodes share a chunk";
  ASSERT_LT(dead.get(), reinterpret_cast<uintptr_t>(second));
  EXPECT_EQ(ResolveAmbiguousWord(reinterpret_cast<uintptr_t>(first) + 8), first);
  EXPECT_EQ(ResolveAmbiguousWord(reinterpret_cast<uintptr_t>(second) + 8), second);
  for (size_t offset = 0; offset < sizeof(Node); offset += 8) {
    EXPECT_EQ(ResolveAmbiguousWord(dead.get() + offset), nullptr) << "offset " << offset;
  }
}

// Allocates `count` Bytes objects with `tail` payload bytes each (garbage).
__attribute__((noinline)) void FillWithBytesOf(size_t tail, size_t count) {
  for (size_t i = 0; i < count; ++i) ASSERT_TRUE(NewBytes(std::string(tail, 'a')).ok());
}

// Allocates `count` Bytes objects with `tail` payload bytes each; true if every word of each resolves
// to it.
__attribute__((noinline)) bool EveryWordOfTheNextObjectsResolvesToThem(size_t tail, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    absl::StatusOr<Bytes*> b = NewBytes(std::string(tail, 'b'));
    if (!b.ok()) return false;
    const auto base = reinterpret_cast<uintptr_t>(*b);
    for (uintptr_t w = base; w < base + (*b)->size(); w += 8) {
      if (ResolveAmbiguousWord(w) != *b) return false;
    }
  }
  return true;
}

TEST_F(ObjectStartsTest, ANurseryReusedAfterACollectionResolvesOnlyItsNewObjects) {
  FillWithBytesOf(8, 2000);  // 32-byte objects over about four chunks
  ScrubStack();
  CollectMinor();  // nothing survives: the nursery starts again from its first chunk
  EXPECT_TRUE(EveryWordOfTheNextObjectsResolvesToThem(40, 1000));  // 64-byte objects over the same bytes
  EXPECT_EQ(ResolutionDisagreement(), "");
}

TEST_F(ObjectStartsTest, ParsingInsteadOfTheMapGivesTheSameAnswers) {
  Root<Node> keep;
  std::vector<HiddenAddress> pinned;
  BuildScatteredSurvivors(keep, &pinned);
  std::vector<uintptr_t> words;
  for (Node* n = keep.get(); n != nullptr; n = n->left.Load()) {
    const auto base = reinterpret_cast<uintptr_t>(n);
    for (uintptr_t w = base; w <= base + n->size(); w += 4) words.push_back(w);
  }
  std::vector<AmbiguousReferents> mapped;
  for (uintptr_t w : words) mapped.push_back(ResolveAmbiguousReferents(w));
  SetObjectStartMapResolution(false);
  for (size_t i = 0; i < words.size(); ++i) {
    EXPECT_TRUE(SameReferents(mapped[i], ResolveAmbiguousReferents(words[i]))) << "word " << i;
  }
  SetObjectStartMapResolution(true);
  keep.set(nullptr);
}

}  // namespace
}  // namespace revkv::runtime::testing
