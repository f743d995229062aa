// Tests of the heap: allocation, headers, type descriptors, resolution of ambiguous words, the
// large-object space and heap accounting.
#include "runtime/heap/heap.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "runtime/heap/object_format.h"
#include "tests/runtime/test_support.h"

namespace revkv::runtime::testing {
namespace {

class HeapTest : public RuntimeTest {};

TEST_F(HeapTest, NewObjectsAreZeroedLocalAndUnrevisioned) {
  Node* n = MustNew<Node>();
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->type(), TypeIdOf<Node>());
  EXPECT_EQ(n->size(), DescribeType(TypeIdOf<Node>()).fixed_size);
  EXPECT_EQ(n->size() % kObjectAlignment, 0u);
  EXPECT_EQ(n->flags(), 0);
  EXPECT_EQ(n->h_revision.load(), 1u);
  EXPECT_EQ(n->left.Load(), nullptr);
  EXPECT_EQ(n->value, 0);
  EXPECT_TRUE(IsInNursery(n));
  EXPECT_TRUE(IsHeapAddress(n));
}

// A filler covers a gap between objects in a chunk. The smallest gap is 8 bytes, so a filler must be
// written within its first 8 bytes: the word that holds size, type and flags comes first in every
// header, and h_revision second. (With h_revision first, an 8-byte filler wrote the next object's
// h_revision, and a chunk with such a hole held a head whose h_revision read as a pointer to 8.)
TEST_F(HeapTest, AnEightByteFillerDoesNotTouchTheObjectAfterIt) {
  alignas(16) unsigned char buffer[32];
  std::memset(buffer, 0xAB, sizeof buffer);
  HeaderAccess::InitFiller(buffer, 8);
  EXPECT_TRUE(IsFiller(buffer));
  EXPECT_EQ(SizeAt(buffer), 8u);
  for (size_t i = 8; i < sizeof buffer; ++i) EXPECT_EQ(buffer[i], 0xAB) << "byte " << i << " overwritten";

  Node* n = MustNew<Node>();
  const auto* base = reinterpret_cast<const unsigned char*>(n);
  EXPECT_EQ(reinterpret_cast<const unsigned char*>(&n->h_revision) - base, 8)
      << "h_revision must follow the size/type/flags word";
}

TEST_F(HeapTest, TypeDescriptorListsReferenceOffsets) {
  const TypeDescriptor& d = DescribeType(TypeIdOf<Node>());
  EXPECT_EQ(d.name, "test.Node");
  ASSERT_EQ(d.ref_offsets.size(), 2u);
  Node* n = MustNew<Node>();
  const auto* base = reinterpret_cast<const char*>(n);
  EXPECT_EQ(d.ref_offsets[0], reinterpret_cast<const char*>(&n->left) - base);
  EXPECT_EQ(d.ref_offsets[1], reinterpret_cast<const char*>(&n->right) - base);
  EXPECT_FALSE(d.versioned);
}

TEST_F(HeapTest, BytesHoldACopyAndAreNeverScanned) {
  absl::StatusOr<Bytes*> b = NewBytes("hello, heap");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)->view(), "hello, heap");
  EXPECT_EQ((*b)->type(), kBytesTypeId);
  EXPECT_EQ(DescribeType(kBytesTypeId).tail, TypeDescriptor::Tail::kBytes);
  EXPECT_TRUE(DescribeType(kBytesTypeId).ref_offsets.empty());
}

TEST_F(HeapTest, AmbiguousWordsResolveToTheObjectTheyPointInto) {
  std::vector<Node*> nodes;
  for (int i = 0; i < 100; ++i) nodes.push_back(MustNew<Node>());
  for (Node* n : nodes) {
    const auto base = reinterpret_cast<uintptr_t>(n);
    EXPECT_EQ(ResolveAmbiguousWord(base), n);
    EXPECT_EQ(ResolveAmbiguousWord(base + 8), n);              // interior: h_revision
    EXPECT_EQ(ResolveAmbiguousWord(base + n->size() - 1), n);  // last byte
  }
  int on_stack = 0;
  EXPECT_EQ(ResolveAmbiguousWord(reinterpret_cast<uintptr_t>(&on_stack)), nullptr);
  EXPECT_EQ(ResolveAmbiguousWord(0), nullptr);
  EXPECT_EQ(ResolveAmbiguousWord(~uintptr_t{0}), nullptr);
  // Past the last allocation of the current chunk there is no object.
  Node* last = nodes.back();
  EXPECT_EQ(ResolveAmbiguousWord(reinterpret_cast<uintptr_t>(last) + last->size() + 4096), nullptr);
}

TEST_F(HeapTest, LargeObjectsLiveOutsideTheNurseryAndResolve) {
  absl::StatusOr<Bytes*> big = NewBytes(std::string(100 * 1024, 'x'));
  ASSERT_TRUE(big.ok());
  EXPECT_FALSE(IsInNursery(*big));
  const auto base = reinterpret_cast<uintptr_t>(*big);
  EXPECT_EQ(base % kChunkSize, 0u);
  EXPECT_EQ(ResolveAmbiguousWord(base + 70 * 1024), *big);  // in a later chunk of its run
  EXPECT_GE(GetHeapUsage().large_bytes, 100u * 1024);
}

TEST_F(HeapTest, OversizedObjectIsAnInvalidArgument) {
  absl::StatusOr<Object*> o = Allocate(kBytesTypeId, kMaxObjectSize + 8);
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(HeapTest, UsageCountsNurseryChunks) {
  (void)MustNew<Node>();
  const HeapUsage u = GetHeapUsage();
  EXPECT_GE(u.nursery_bytes, kChunkSize);
  EXPECT_GE(u.committed_bytes, kPageSize);
  EXPECT_EQ(u.max_bytes, Options().max_heap_bytes);
}

}  // namespace
}  // namespace revkv::runtime::testing
