// Soundness tests of the collectors against the ways an ambiguous root can reach memory it should not:
// slots of dead local objects left pointing into a discarded nursery, pointers one past the end of an
// object, and pointers held only in a parked thread's callee-saved registers. Each builds the exact
// sequence that once corrupted the heap or lost an object.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

#include "runtime/gc/collector.h"
#include "runtime/gc/gc.h"
#include "runtime/heap/heap.h"
#include "runtime/port/port.h"
#include "tests/runtime/test_support.h"

namespace revkv::runtime::testing {
namespace {

class GcSoundnessTest : public RuntimeTest {};

// ----- A discarded nursery leaves no slot pointing into it -----
//
// The sequence: a local object X lives outside the nursery (a minor collection promoted it, or it is
// large); the transaction stores a young object into a field of X (the write barrier remembers the
// slot); the transaction aborts and its nursery is discarded untraced. If X's field still pointed into
// the nursery, the next transaction's value bytes would lie under it; a stale stack word pinning X in
// a major collection would re-remember the field, and the next minor collection would "forward" the
// header that those bytes happen to spell.

constexpr size_t kPadBytes = 64;     // a Bytes of 40 payload bytes: the young node lies 64 bytes in
constexpr size_t kValueBytes = 256;  // the next transaction's value, covering the young node's place

// Allocates a 64-byte pad and then a young node, and stores the node into `slot`. Call on an empty
// nursery: the node lies kPadBytes past the nursery's first byte.
template <class T>
__attribute__((noinline)) void StoreYoungNodeAfterAPad(Field<T>& slot) {
  ASSERT_TRUE(NewBytes(std::string(kPadBytes - sizeof(Bytes), 'p')).ok());
  slot.Store(NewNode(2));
}

// The header of a Node as raw bytes, as a value might contain them by chance.
struct FakeNode {
  uint32_t size;
  uint16_t type;
  uint16_t flags;
  uint64_t h_revision;
  uint64_t left;
  uint64_t right;
  uint64_t value;
  uint64_t check;
};
static_assert(sizeof(FakeNode) == sizeof(Node));

// The next transaction's value: allocated first in the emptied nursery, so its payload covers the place
// of the discarded young node; a Node header is written into the payload right there. `expected`
// receives the payload. Returns nullptr (with a test failure) if the layout is not as planned.
__attribute__((noinline)) Bytes* NewValueOverTheDiscardedNode(std::string* expected) {
  absl::StatusOr<Bytes*> b = NewBytes(std::string(kValueBytes, 'v'));
  if (!b.ok()) {
    ADD_FAILURE() << b.status();
    return nullptr;
  }
  const size_t offset = kPadBytes - sizeof(Bytes);  // the node's place inside the payload
  FakeNode fake{};
  fake.size = sizeof(Node);
  fake.type = TypeIdOf<Node>();
  fake.h_revision = 1;
  std::memcpy((*b)->mutable_data() + offset, &fake, sizeof(fake));
  *expected = std::string((*b)->view());
  return *b;
}

__attribute__((noinline)) bool IsNullOrAnObjectStart(const Object* v) {
  return v == nullptr || ResolveAmbiguousWord(reinterpret_cast<uintptr_t>(v)) == v;
}

TEST_F(GcSoundnessTest, AnAbortedTransactionLeavesNoOldSlotPointingIntoItsNursery) {
  Node* volatile holder = NewNode(1);
  CollectMinor();  // pinned by `holder`: promoted in place, still local, outside the nursery
  ASSERT_FALSE(IsInNursery(holder));
  StoreYoungNodeAfterAPad(holder->left);  // the nursery was emptied by the minor collection
  ResetNursery();                         // the transaction aborts
  std::string expected;
  Bytes* volatile value = NewValueOverTheDiscardedNode(&expected);
  ASSERT_NE(value, nullptr);
  EXPECT_TRUE(IsNullOrAnObjectStart(holder->left.Load()))
      << "the discarded node's slot points into the next transaction's value";
  ScrubStack();
  CollectMajor();  // `holder` is pinned by its stack word and scanned
  ScrubStack();
  CollectMinor();  // `value` is pinned by its stack word
  EXPECT_EQ(std::string(value->view()), expected) << "a minor collection wrote into the value's bytes";
  EXPECT_TRUE(IsNullOrAnObjectStart(holder->left.Load()));
  EXPECT_EQ(holder->value, 1);
}

TEST_F(GcSoundnessTest, AnAbortedTransactionLeavesNoLargeObjectSlotPointingIntoItsNursery) {
  const size_t slots = 2 * kLargeObjectThreshold / sizeof(void*);
  absl::StatusOr<Fan*> fan = NewWithTail<Fan>(slots * sizeof(void*));
  ASSERT_TRUE(fan.ok()) << fan.status();
  Fan* volatile holder = *fan;  // large, local, never in a nursery
  holder->count = slots;
  fan = absl::StatusOr<Fan*>(nullptr);
  ResetNursery();  // an empty nursery: the pad and the node go to its start
  StoreYoungNodeAfterAPad(holder->slots()[0]);
  ResetNursery();  // the transaction aborts
  std::string expected;
  Bytes* volatile value = NewValueOverTheDiscardedNode(&expected);
  ASSERT_NE(value, nullptr);
  EXPECT_TRUE(IsNullOrAnObjectStart(RawReference(holder->slots()[0])))
      << "the discarded node's slot points into the next transaction's value";
  ScrubStack();
  CollectMajor();  // `holder` is marked by its stack word and scanned
  ScrubStack();
  CollectMinor();  // `value` is pinned by its stack word
  EXPECT_EQ(std::string(value->view()), expected) << "a minor collection wrote into the value's bytes";
  EXPECT_TRUE(IsNullOrAnObjectStart(RawReference(holder->slots()[0])));
}

TEST_F(GcSoundnessTest, AnExitingThreadLeavesNoOldSlotPointingIntoItsNursery) {
  HiddenAddress holder_at;
  std::thread t([&] {
    ThreadRegistration registration("exiting");
    Node* volatile holder = NewNode(1);
    CollectMinor();  // pinned: promoted in place, outside the nursery
    holder->left.Store(NewNode(2));
    holder_at = HiddenAddress(holder);
  });  // the thread exits: its nursery goes back to the page space untraced
  Join(t);
  Node* volatile holder = reinterpret_cast<Node*>(holder_at.get());  // a stale stack word
  ScrubStack();
  CollectMajor();  // `holder` is pinned by it and scanned
  EXPECT_TRUE(IsNullOrAnObjectStart(holder->left.Load()))
      << "the exited thread's node is gone, but a slot still points where it was";
  ScrubStack();
  CollectMinor();
  EXPECT_TRUE(IsNullOrAnObjectStart(holder->left.Load()));
  EXPECT_EQ(holder->value, 1);
}

// ----- A pointer one past the end of an object belongs to that object -----
//
// A loop over an object's fields or bytes ends with a pointer just past its last byte, which is also
// the first byte of the next object, or of the next chunk (seed 001: a derived pointer belongs to its
// base object). If the scanner read it as a pointer to the next object only, it would pin that one and
// let the object the pointer was derived from move or die.

// Pads the nursery so that the next allocation of `bytes` (<= kLargeObjectThreshold) ends exactly at
// the end of a nursery chunk. Pads are Bytes objects (garbage); a probe finds the cursor.
__attribute__((noinline)) void PadNurseryChunkBefore(size_t bytes) {
  for (;;) {
    absl::StatusOr<Bytes*> probe = NewBytes("");
    ASSERT_TRUE(probe.ok());
    const uintptr_t cursor = reinterpret_cast<uintptr_t>(*probe) + sizeof(Bytes);
    const size_t remaining = kChunkSize - (cursor & (kChunkSize - 1));  // whole chunk at a boundary
    if (remaining == bytes) return;
    size_t pad;
    if (remaining >= bytes + sizeof(Bytes)) {
      pad = std::min(remaining - bytes, kLargeObjectThreshold);
    } else if (remaining >= sizeof(Bytes)) {
      pad = remaining;  // fill this chunk and start over in the next one
    } else {
      continue;  // the next probe does not fit: it opens the next chunk
    }
    ASSERT_TRUE(NewBytes(std::string(pad - sizeof(Bytes), 'x')).ok());
    if (pad == remaining - bytes) return;
  }
}

// Allocates a node of `value` with a child of `value + 1` and returns the address one past the node's
// end; the node's start goes back hidden. With `at_chunk_end`, the node is the last object of its
// chunk; otherwise its child starts where it ends.
__attribute__((noinline)) char* NewNodeSeenFromItsEnd(int64_t value, bool at_chunk_end,
                                                      HiddenAddress* start) {
  if (at_chunk_end) PadNurseryChunkBefore(sizeof(Node));
  Node* n = NewNode(value);
  n->left.Store(NewNode(value + 1));
  *start = HiddenAddress(n);
  return reinterpret_cast<char*>(n) + sizeof(Node);
}

// True if `node` still resolves to itself and holds its value and its child's.
__attribute__((noinline)) bool IsIntactWithChild(HiddenAddress node, int64_t value) {
  if (!(HiddenAddress(ResolveAmbiguousWord(node.get())) == node)) return false;
  const auto* n = reinterpret_cast<const Node*>(node.get());
  const Node* child = n->left.Load();
  return n->value == value && n->check == value * 7919 + 13 && !n->HasFlag(kForwarded) && child != nullptr &&
         child->value == value + 1 && child->check == (value + 1) * 7919 + 13;
}

TEST_F(GcSoundnessTest, APointerOnePastTheEndOfAnObjectPinsThatObject) {
  for (const bool at_chunk_end : {false, true}) {
    SCOPED_TRACE(at_chunk_end ? "the node is its chunk's last object" : "the node's child follows it");
    HiddenAddress start;
    char* volatile end = NewNodeSeenFromItsEnd(7, at_chunk_end, &start);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(end) % kChunkSize == 0, at_chunk_end);
    ScrubStack();
    CollectMinor();
    EXPECT_TRUE(IsIntactWithChild(start, 7)) << "minor collection: the node moved or died";
    ScrubStack();
    CollectMajor();
    EXPECT_TRUE(IsIntactWithChild(start, 7)) << "major collection: the node moved or died";
    EXPECT_EQ(reinterpret_cast<uintptr_t>(end), start.get() + sizeof(Node));
    end = nullptr;
  }
}

// ----- Callee-saved registers are roots -----
//
// A pointer a function keeps in a callee-saved register across a call that parks (or blocks in a safe
// region) may be nowhere on the stack. port::CaptureCalleeSavedRegisters must copy every such register:
// on x86-64 rbx, r12-r15 (and rbp when it is not the frame pointer); on AArch64 x19-x28, x29 and
// d8-d15 (AAPCS64 preserves the low 64 bits of v8-v15).

constexpr uintptr_t kRegisterMark = 0x5EED'0000'0000'0000ull;

bool Captured(const port::SavedRegisters& saved, uintptr_t value) {
  return std::find(std::begin(saved.words), std::end(saved.words), value) != std::end(saved.words);
}

// Puts kRegisterMark + i into callee-saved register i, captures, and reports the registers whose
// value is missing from the capture. The explicit register variables and the empty asm statements that
// take them as operands are what makes the compiler hold each value in its register at the call.
__attribute__((noinline)) std::string RegistersMissingFromACapture() {
  port::SavedRegisters saved;
  std::string missing;
#if defined(__x86_64__)
  register uintptr_t rbx asm("rbx") = kRegisterMark + 1;
  register uintptr_t r12 asm("r12") = kRegisterMark + 2;
  register uintptr_t r13 asm("r13") = kRegisterMark + 3;
  register uintptr_t r14 asm("r14") = kRegisterMark + 4;
  register uintptr_t r15 asm("r15") = kRegisterMark + 5;
  asm volatile("" : "+r"(rbx), "+r"(r12), "+r"(r13), "+r"(r14), "+r"(r15));
  port::CaptureCalleeSavedRegisters(&saved);
  asm volatile("" : "+r"(rbx), "+r"(r12), "+r"(r13), "+r"(r14), "+r"(r15));
  const char* names[] = {"", "rbx", "r12", "r13", "r14", "r15"};
  for (int i = 1; i <= 5; ++i) {
    if (!Captured(saved, kRegisterMark + i)) missing += std::string(" ") + names[i];
  }
#elif defined(__aarch64__)
  register uintptr_t x19 asm("x19") = kRegisterMark + 1;
  register uintptr_t x20 asm("x20") = kRegisterMark + 2;
  register uintptr_t x27 asm("x27") = kRegisterMark + 3;
  register uintptr_t x28 asm("x28") = kRegisterMark + 4;
  register double d8 asm("d8") = std::bit_cast<double>(kRegisterMark + 5);
  register double d15 asm("d15") = std::bit_cast<double>(kRegisterMark + 6);
  asm volatile("" : "+r"(x19), "+r"(x20), "+r"(x27), "+r"(x28), "+w"(d8), "+w"(d15));
  port::CaptureCalleeSavedRegisters(&saved);
  asm volatile("" : "+r"(x19), "+r"(x20), "+r"(x27), "+r"(x28), "+w"(d8), "+w"(d15));
  const char* names[] = {"", "x19", "x20", "x27", "x28", "d8", "d15"};
  for (int i = 1; i <= 6; ++i) {
    if (!Captured(saved, kRegisterMark + i)) missing += std::string(" ") + names[i];
  }
#endif
  return missing;
}

TEST(RegisterCapture, EveryCalleeSavedRegisterIsCaptured) { EXPECT_EQ(RegistersMissingFromACapture(), ""); }

// The collector's side of the same: a parked thread's registers pin. Whether the frames between the
// holder and the capture (Poll, Park) spill these registers to the stack is the compiler's choice, so
// this test may pass without the capture; RegisterCapture above is the one that fails without it.
//
// Moves the node held by `root` out of the root into callee-saved registers, then polls until `release`
// is set, parking at every stop-the-world; reports the node's address as it finds it afterwards.
__attribute__((noinline)) uintptr_t HoldInRegistersWhileParked(HiddenAddress node, std::atomic<bool>* parked,
                                                               std::atomic<bool>* release) {
#if defined(__x86_64__)
  register uintptr_t r12 asm("r12") = node.get();
  register uintptr_t r13 asm("r13") = node.get() + 8;  // an interior pointer too
  asm volatile("" : "+r"(r12), "+r"(r13));
#elif defined(__aarch64__)
  register uintptr_t x19 asm("x19") = node.get();
  register double d8 asm("d8") = std::bit_cast<double>(node.get() + 8);
  asm volatile("" : "+r"(x19), "+w"(d8));
#endif
  ScrubStack();  // no stack copy of the address: the registers are all that hold the node
  parked->store(true, std::memory_order_release);
  while (!release->load(std::memory_order_acquire)) Poll();
#if defined(__x86_64__)
  asm volatile("" : "+r"(r12), "+r"(r13));
  return r12;
#elif defined(__aarch64__)
  asm volatile("" : "+r"(x19), "+w"(d8));
  return x19;
#else
  return node.get();
#endif
}

__attribute__((noinline)) HiddenAddress NewOldNode(int64_t value) {
  Root<Node> root(NewNode(value, NewNode(value + 1)));
  CollectMinor();  // both copied out of the nursery: old, movable by a major collection
  return HiddenAddress(root.get());
}

TEST_F(GcSoundnessTest, AnObjectHeldOnlyInAParkedThreadsRegistersDoesNotMove) {
  std::atomic<bool> parked{false};
  std::atomic<bool> release{false};
  HiddenAddress before;
  uintptr_t after = 0;
  std::thread t([&] {
    ThreadRegistration registration("holder");
    before = NewOldNode(21);
    ScrubStack();
    after = HoldInRegistersWhileParked(before, &parked, &release);
    EXPECT_TRUE(IsIntactWithChild(HiddenAddress(reinterpret_cast<void*>(after)), 21));
  });
  while (!parked.load(std::memory_order_acquire)) std::this_thread::yield();
  ScrubStack();
  CollectMajor();  // the node is in a condemned chunk: only the register copy keeps it in place
  CollectMajor();
  release.store(true, std::memory_order_release);
  Join(t);
  EXPECT_EQ(after, before.get()) << "the node moved (or died) under the registers that held it";
}

// ----- The remembered set across a major collection -----
//
// A major collection moves old objects, so the remembered slot addresses go stale; it rebuilds the set
// from the slots it scans. Without that, the next minor collection would not see the moved slot, and
// the young node would be left behind in the emptied nursery.

__attribute__((noinline)) void StoreYoungNode(Root<Node>& holder, int64_t value) {
  holder->left.Store(NewNode(value, NewNode(value + 1)));
}

__attribute__((noinline)) bool HoldsYoungNodeOutsideTheNursery(Root<Node>& holder, int64_t value) {
  const Node* n = holder->left.Load();
  return n != nullptr && !IsInNursery(n) && n->value == value && n->check == value * 7919 + 13 &&
         n->left.Load() != nullptr && !IsInNursery(n->left.Load()) && n->left.Load()->value == value + 1;
}

TEST_F(GcSoundnessTest, AMajorCollectionRebuildsTheRememberedSetOfTheSlotsItMoves) {
  Root<Node> holder(NewNode(1));
  ScrubStack();
  CollectMinor();  // the holder is old: a major collection moves it
  StoreYoungNode(holder, 30);
  ScrubStack();
  CollectMajor();  // moves the holder; its slot is remembered again at its new address
  ScrubStack();
  CollectMinor();              // copies the young nodes through that slot only
  AllocateGarbage(64 * 1024);  // reuses the emptied nursery
  EXPECT_TRUE(HoldsYoungNodeOutsideTheNursery(holder, 30));
}

// ----- The heap verifier -----

TEST_F(GcSoundnessTest, TheHeapVerifierIsOnInTests) { EXPECT_TRUE(HeapVerificationEnabled()); }

// Points a field of an old node into the second chunk of a large object (a word no collection moves or
// traces through, so the collection itself survives it, but not an object start), then collects.
__attribute__((noinline)) void CorruptASlotAndCollect() {
  Root<Node> holder(NewNode(1));
  absl::StatusOr<Bytes*> bytes = NewBytes(std::string(64 * 1024, 'c'));
  ASSERT_TRUE(bytes.ok());
  Root<Bytes> large(*bytes);
  CollectMinor();
  holder->left.unsafe_slot()->store(
      reinterpret_cast<Object*>(reinterpret_cast<char*>(large.get()) + kChunkSize + 64),
      std::memory_order_relaxed);
  CollectMajor();
}

TEST_F(GcSoundnessTest, TheHeapVerifierCatchesASlotThatPointsAtNoObjectStart) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(CorruptASlotAndCollect(), "heap verifier: a slot points at no object start");
}

}  // namespace
}  // namespace revkv::runtime::testing
