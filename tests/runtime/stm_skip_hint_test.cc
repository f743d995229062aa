// Skip hints (VersionedObject::h_newest; docs/runtime-stm.md, "Skip hints"). While history is retained,
// no reference may be redirected past the retained time, so the reference to an object written N times
// names a revision N links away from the newest. A read of the newest state must still not walk them
// all, and a read at any retained time must still find exactly the revision of its time. Its own
// binary: the retained time is process-wide and only moves forward, so it would hold back compression
// in every later test of a shared process.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "runtime/gc/gc.h"
#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "runtime/stm/stm.h"
#include "tests/runtime/test_support.h"

namespace revkv::runtime::testing {
namespace {

using stm::Ref;
using stm::SnapshotTx;
using stm::Tx;

struct Counter : VersionedObject {
  int64_t value;
  static TypeDescriptor Describe() { return TypeDescriptor::Fixed<Counter>("test.SkipHintCounter"); }
};

// An immutable object holding a reference to the counter. Reads go through Ref(field), which never
// fixes the field up, so every read starts at the revision the field names.
struct Holder : Object {
  Field<Counter> counter;
  static TypeDescriptor Describe() {
    return TypeDescriptor::Fixed<Holder>("test.SkipHintHolder", &Holder::counter);
  }
};

class SkipHintTest : public RuntimeTest {
 protected:
  HeapOptions Options() override { return SmallHeapOptions(size_t{1} << 30); }

  void SetUp() override {
    RuntimeTest::SetUp();
    ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                  auto h = tx.New<Holder>();
                  auto c = tx.New<Counter>();
                  c->value = 0;
                  h.Set(&Holder::counter, Ref<Counter>(c));
                  tx.PublishAtCommit(holder_, Ref<Holder>(h));
                }).ok());
    // Keep every state from here on: the field keeps naming the counter's first revision.
    stm::SetRetainedTime(stm::LastCommittedTime());
  }
  void TearDown() override {
    stm::SetSkipHorizon(0);
    RuntimeTest::TearDown();
  }

  Ref<Holder> holder() const { return Ref<Holder>::FromRaw(static_cast<Holder*>(holder_.Load())); }

  // Writes value+1 over the counter `n` times; returns the commit time of each write (index i: the
  // write of value i+1).
  std::vector<uint64_t> Increment(int n) {
    std::vector<uint64_t> times;
    for (int i = 0; i < n; ++i) {
      EXPECT_TRUE(stm::Atomically([&](Tx& tx) {
                    auto h = tx.Read(holder());
                    auto c = tx.Write(tx.Read(Ref<Counter>(h->counter)));
                    c->value = c->value + 1;
                  }).ok());
      times.push_back(stm::ThisThreadLastCommitTime());
    }
    return times;
  }

  // The links from the revision the field names to the newest one.
  size_t ChainLength() {
    size_t links = 0;
    for (Object* o = RawReference(holder().unsafe_raw()->counter);
         IsRevisionPointerForTest(o->h_revision.load());
         o = reinterpret_cast<Object*>(o->h_revision.load())) {
      ++links;
    }
    return links;
  }

  // The counter read in a read-write transaction, and the revisions that read passed.
  std::pair<int64_t, uint64_t> ReadNewest() {
    const uint64_t before = stm::GetStmStatistics().chain_hops;
    absl::StatusOr<int64_t> v = stm::Atomically([&](Tx& tx) {
      auto h = tx.Read(holder());
      return tx.Read(Ref<Counter>(h->counter))->value;
    });
    EXPECT_TRUE(v.ok());
    return {v.value_or(-1), stm::GetStmStatistics().chain_hops - before};
  }

  // The counter read in a snapshot at `time` (0: the newest), and the revisions that read passed.
  std::pair<int64_t, uint64_t> ReadAt(uint64_t time) {
    const uint64_t before = stm::GetStmStatistics().chain_hops;
    absl::StatusOr<int64_t> v = stm::ReadOnlyAt(time, [&](SnapshotTx& tx) {
      auto h = tx.Read(holder());
      return tx.Read(Ref<Counter>(h->counter))->value;
    });
    EXPECT_TRUE(v.ok()) << v.status();
    return {v.value_or(-1), stm::GetStmStatistics().chain_hops - before};
  }

  static bool IsRevisionPointerForTest(uintptr_t v) { return (v & 1) == 0; }

  GlobalRoot holder_;
};

constexpr int kWrites = 2000;
// A read may pass the hinted revision and the few written after the writer that set the hint.
constexpr uint64_t kFewHops = 4;

TEST_F(SkipHintTest, AReadOfTheNewestRevisionDoesNotWalkTheRetainedHistory) {
  Increment(kWrites);
  ASSERT_GE(ChainLength(), static_cast<size_t>(kWrites)) << "the retention was to keep the chain whole";
  const auto [newest, newest_hops] = ReadNewest();
  EXPECT_EQ(newest, kWrites);
  EXPECT_LE(newest_hops, kFewHops) << "a read-write transaction walked the retained history";
  const auto [snapshot, snapshot_hops] = ReadAt(0);
  EXPECT_EQ(snapshot, kWrites);
  EXPECT_LE(snapshot_hops, kFewHops) << "a snapshot of the newest state walked the retained history";
  EXPECT_GT(stm::GetStmStatistics().skip_hints_taken, 0u);
}

TEST_F(SkipHintTest, ASnapshotAtEveryRetainedTimeReadsTheRevisionOfItsTimeBeforeAndAfterAMajorCollection) {
  const std::vector<uint64_t> times = Increment(kWrites);
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < kWrites; i += 7) {
      EXPECT_EQ(ReadAt(times[i]).first, i + 1)
          << "snapshot at the time of write " << i << ", round " << round;
      // Between two commits: the state after the earlier one.
      if (i + 1 < kWrites) {
        EXPECT_EQ(ReadAt(times[i + 1] - 1).first, i + 1);
      }
    }
    CollectMajor();  // moves the revisions and the hints (the verifier checks every hint)
  }
  const auto [newest, hops] = ReadNewest();
  EXPECT_EQ(newest, kWrites);
  EXPECT_LE(hops, kFewHops) << "the hints did not survive the major collections";
}

// When the retained time moves on, a major collection redirects the field past the revision whose hint
// every read used (each write started its walk there) to a revision that had none of its own: the hint
// must come along, or reads walk the rest of the window again.
TEST_F(SkipHintTest, AMajorCollectionThatCollapsesTheFieldCarriesTheHintAlong) {
  const std::vector<uint64_t> times = Increment(kWrites);
  stm::SetRetainedTime(times[kWrites / 2 - 1]);  // keep the states from the write of kWrites / 2 on
  CollectMajor();
  ASSERT_LE(ChainLength(), static_cast<size_t>(kWrites / 2)) << "the collection was to collapse the field";
  const auto [newest, hops] = ReadNewest();
  EXPECT_EQ(newest, kWrites);
  EXPECT_LE(hops, kFewHops) << "the collapse left the hint behind";
  const auto [snapshot, snapshot_hops] = ReadAt(0);
  EXPECT_EQ(snapshot, kWrites);
  EXPECT_LE(snapshot_hops, kFewHops);
  EXPECT_EQ(ReadAt(times[kWrites / 2 + 100]).first, kWrites / 2 + 101)
      << "a retained state after the collection";
}

// Reads of the newest state may be made at a time behind the newest commit (the store reads at its
// durable revision). A hint past a reader's time is of no use to it, so writers point hints no further
// than the skip horizon.
TEST_F(SkipHintTest, HintsPointNoFurtherThanTheSkipHorizonSoReadersAtItTakeThem) {
  std::vector<uint64_t> times = Increment(kWrites / 2);
  const uint64_t horizon = times.back();
  stm::SetSkipHorizon(horizon);
  Increment(kWrites / 2);
  const auto [value, hops] = ReadAt(horizon);
  EXPECT_EQ(value, kWrites / 2);
  EXPECT_LE(hops, kFewHops) << "a reader at the skip horizon walked the chain";
  const auto [newest, newest_hops] = ReadNewest();
  EXPECT_EQ(newest, kWrites);
  // From the hint at the horizon, a read of the newest revision walks the writes after it.
  EXPECT_LE(newest_hops, static_cast<uint64_t>(kWrites / 2) + kFewHops);
}

}  // namespace
}  // namespace revkv::runtime::testing
