// Tests of the collectors' statistics: the figures of each collection record, the cumulative counters
// that add them up, bytes allocated, pinned objects, chunks and bytes, and reading all of it from another
// thread while collections run.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "runtime/gc/collector.h"
#include "runtime/gc/gc.h"
#include "runtime/heap/heap.h"
#include "tests/runtime/test_support.h"

namespace revkv::runtime::testing {
namespace {

class GcStatisticsTest : public RuntimeTest {};

// Every nursery byte is counted once in bytes_allocated, also when a minor collection promotes the
// chunk the thread is allocating in: that chunk leaves the nursery and another takes its place.
TEST_F(GcStatisticsTest, BytesAllocatedCountsEachNurseryByteOnceWhenTheCurrentChunkIsPromoted) {
  CollectMinor();  // an empty nursery
  const uint64_t before = GetGcStatistics(0).bytes_allocated;
  const size_t count = 1000;  // about three chunks
  Node* volatile last = nullptr;
  for (size_t i = 0; i < count; ++i) last = NewNode(static_cast<int64_t>(i));
  CollectMinor();  // `last` pins the current chunk
  const uint64_t after = GetGcStatistics(0).bytes_allocated;
  EXPECT_FALSE(IsInNursery(last)) << "the current chunk was promoted in place";
  EXPECT_EQ(last->value, static_cast<int64_t>(count - 1));
  EXPECT_EQ(after - before, count * DescribeType(TypeIdOf<Node>()).fixed_size);
}

size_t InUseBytes(const HeapUsage& u) { return u.nursery_bytes + u.old_bytes + u.large_bytes; }

// The body of CollectionRecordsHoldExactFigures, in a frame of its own below a scrubbed stretch of stack
// (see the test).
__attribute__((noinline)) void CheckThatCollectionRecordsHoldExactFigures() {
  const size_t count = 1000;
  const size_t node_bytes = DescribeType(TypeIdOf<Node>()).fixed_size;
  const size_t fan_bytes = sizeof(Fan) + count * sizeof(void*);  // small: under kLargeObjectThreshold
  const size_t live = fan_bytes + count * node_bytes;
  const size_t garbage = size_t{256} << 10;
  const size_t garbage_allocated = garbage / node_bytes * node_bytes;  // what AllocateGarbage allocates
  ScrubStack();
  CollectMajor();  // nothing old is left from before but what is live
  const GcStatistics s0 = GetGcStatistics(0);
  const uint64_t wall_start = WallClockNanos();

  // Minor collection 1: the live set is copied to old space, the garbage is not.
  Root<Fan> fan;
  FillFanOfNodes(fan, count);
  AllocateGarbage(garbage);
  ScrubStack();
  CollectMinor();
  const CollectionRecord minor = LastRecord();
  const HeapUsage after_minor = GetHeapUsage();
  // Minor collection 2: the same again, then dropped: old garbage for the major collection.
  {
    Root<Fan> dropped;
    FillFanOfNodes(dropped, count);
    AllocateGarbage(garbage);
    ScrubStack();
    CollectMinor();
  }
  const CollectionRecord minor2 = LastRecord();
  ScrubStack();
  CollectMajor();
  const CollectionRecord major = LastRecord();
  const HeapUsage after_major = GetHeapUsage();
  const uint64_t wall_end = WallClockNanos();
  const GcStatistics s1 = GetGcStatistics(0);

  for (const CollectionRecord* r : {&minor, &minor2, &major}) {
    SCOPED_TRACE(CollectionKindName(r->kind));
    ASSERT_EQ(r->pinned_objects, 0u) << "nothing on the stack may pin: the figures below are exact";
    EXPECT_EQ(r->reason, "requested");
    EXPECT_GE(r->start_unix_nanos, wall_start);
    EXPECT_LE(r->start_unix_nanos, wall_end);
    EXPECT_GT(r->pause_nanos, 0u);
    EXPECT_EQ(r->heap_bytes_before % kChunkSize, 0u);
    EXPECT_EQ(r->heap_bytes_after % kChunkSize, 0u);
    EXPECT_GE(r->heap_bytes_before, SmallHeapOptions().nursery_bytes) << "the nursery is in use";
    EXPECT_LE(r->heap_bytes_after, after_minor.max_bytes);
    EXPECT_EQ(r->pinned_bytes, 0u);
    EXPECT_EQ(r->pinned_chunks, 0u);
  }
  for (const CollectionRecord* r : {&minor, &minor2}) {
    SCOPED_TRACE(CollectionKindName(r->kind));
    EXPECT_EQ(r->bytes_copied, live) << "exactly the live set is copied";
    EXPECT_EQ(r->objects_copied, count + 1);
  }
  // The major collection found the live set in chunks taken since the last one (by minor collection
  // 1): no measure, so no candidate; it marked exactly the live set where it is.
  EXPECT_EQ(major.chunks_evacuated, 0u);
  EXPECT_EQ(major.bytes_copied, 0u);
  EXPECT_EQ(major.objects_copied, 0u);
  EXPECT_EQ(major.bytes_marked, live) << "exactly the live set is marked in place";
  EXPECT_EQ(major.objects_marked, count + 1);
  EXPECT_EQ(minor.kind, CollectionKind::kMinor);
  EXPECT_EQ(minor.sequence, s0.collections[0] + 1);
  EXPECT_EQ(minor2.sequence, s0.collections[0] + 2);
  EXPECT_EQ(minor.bytes_promoted, minor.bytes_copied + minor.pinned_bytes);
  EXPECT_EQ(minor.heap_bytes_after, InUseBytes(after_minor));
  EXPECT_EQ(major.kind, CollectionKind::kMajor);
  EXPECT_EQ(major.sequence, s0.collections[2] + 1);
  EXPECT_EQ(major.threads, static_cast<uint32_t>(RegisteredThreadCount()));
  EXPECT_LE(major.time_to_safepoint_nanos, major.pause_nanos);
  EXPECT_EQ(major.heap_bytes_after, InUseBytes(after_major));
  EXPECT_EQ(major.pinned_bytes, after_major.pinned_bytes);
  EXPECT_EQ(major.pinned_chunks, after_major.pinned_chunks);
  // The chunks that held only the dropped set (about 56 KiB) were freed; the live set stayed in its.
  EXPECT_GE(major.heap_bytes_before, major.heap_bytes_after + 2 * kChunkSize);

  // The cumulative figures add up the records.
  EXPECT_EQ(s1.collections[0] - s0.collections[0], 2u);
  EXPECT_EQ(s1.collections[2] - s0.collections[2], 1u);
  EXPECT_EQ(s1.pause_nanos_total[0] - s0.pause_nanos_total[0], minor.pause_nanos + minor2.pause_nanos);
  EXPECT_EQ(s1.pause_nanos_total[2] - s0.pause_nanos_total[2], major.pause_nanos);
  EXPECT_EQ(s1.bytes_copied - s0.bytes_copied, minor.bytes_copied + minor2.bytes_copied + major.bytes_copied);
  EXPECT_EQ(s1.bytes_promoted - s0.bytes_promoted, minor.bytes_promoted + minor2.bytes_promoted);
  EXPECT_EQ(s1.safepoints - s0.safepoints, 1u);
  EXPECT_EQ(s1.bytes_allocated - s0.bytes_allocated, 2 * (live + garbage_allocated));
}

// The figures are exact only if nothing on the stack pins. ScrubStack clears the stack below its caller,
// not the caller's own frame, and a frame's slots that its code never writes keep whatever an earlier,
// deeper call left there. Under AddressSanitizer the checks below need a frame of several KiB (redzones
// around every local), and when the whole binary runs in one process, that frame lies where the previous
// test's frames held pointers into the nursery (`last` in the test above): two such words pinned two of
// this test's nursery objects, at addresses the nursery reuses. So the checks run in a frame of their
// own, laid over stack this test has just scrubbed; this frame has no locals left to go stale.
TEST_F(GcStatisticsTest, CollectionRecordsHoldExactFigures) {
  ScrubStack();
  CheckThatCollectionRecordsHoldExactFigures();
}

// Holds 64 nodes in this frame across a minor and a major collection; returns their records and the
// heap usage after the major one.
__attribute__((noinline)) void CollectWhileHoldingNodes(CollectionRecord* minor, CollectionRecord* major,
                                                        HeapUsage* usage) {
  Node* volatile held[64];
  for (auto& h : held) h = NewNode(3);
  CollectMinor();
  *minor = LastRecord();
  CollectMajor(MajorMode::kCompactEverything);  // pinning is what keeps an object of a candidate chunk
  *major = LastRecord();
  *usage = GetHeapUsage();
  for (auto& h : held) EXPECT_EQ(h->value, 3);
  for (auto& h : held) h = nullptr;
}

TEST_F(GcStatisticsTest, CollectionRecordsCountPinnedObjectsChunksAndBytes) {
  CollectionRecord minor{};
  CollectionRecord major{};
  HeapUsage usage{};
  CollectWhileHoldingNodes(&minor, &major, &usage);
  const size_t node_bytes = DescribeType(TypeIdOf<Node>()).fixed_size;
  for (const CollectionRecord* r : {&minor, &major}) {
    SCOPED_TRACE(CollectionKindName(r->kind));
    EXPECT_GE(r->pinned_objects, 64u);
    EXPECT_GE(r->pinned_bytes, 64 * node_bytes);
    EXPECT_GE(r->pinned_bytes, r->pinned_objects * sizeof(Object));
    EXPECT_GE(r->pinned_chunks, 1u);
    EXPECT_LE(r->pinned_chunks, r->pinned_objects);
    EXPECT_LE(r->pinned_bytes, r->pinned_chunks * kChunkSize);
  }
  EXPECT_EQ(minor.bytes_promoted, minor.bytes_copied + minor.pinned_bytes) << "promoted: copied + kept";
  EXPECT_EQ(usage.pinned_bytes, major.pinned_bytes);
  EXPECT_EQ(usage.pinned_chunks, major.pinned_chunks);
}

// Clears the stopped-world hook when the test leaves, even through a failed assertion.
class StoppedWorldHook {
 public:
  explicit StoppedWorldHook(std::function<void()> hook) { SetStoppedWorldHookForTesting(std::move(hook)); }
  ~StoppedWorldHook() { SetStoppedWorldHookForTesting(nullptr); }
  StoppedWorldHook(const StoppedWorldHook&) = delete;
  StoppedWorldHook& operator=(const StoppedWorldHook&) = delete;
};

// Minor collections, and a major one every fourth round, with a live set and garbage in between.
void CollectInRounds(size_t rounds, size_t major_phase) {
  Root<Fan> live;
  FillFanOfNodes(live, 200);
  for (size_t i = 0; i < rounds; ++i) {
    AllocateGarbage(64 << 10);
    CollectMinor();
    if (i % 4 == major_phase) CollectMajor();
  }
}

// An operator's reader (not a registered thread) polls the statistics while two threads collect. Every
// read completes, also while the world is stopped (the collector waits for reads in its stopped-world
// hook), and what it reads is consistent: counters never go back, and major records come in order.
TEST_F(GcStatisticsTest, StatisticsAreReadableWhileCollectionsRun) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0};
  std::atomic<uint64_t> inconsistent_reads{0};
  std::thread reader([&] {
    std::array<uint64_t, kCollectionKinds> collections{};
    uint64_t copied = 0;
    uint64_t safepoints = 0;
    uint64_t major_pauses = 0;
    uint64_t stops = 0;
    while (!stop.load()) {
      const GcStatistics s = GetGcStatistics(64);
      const HistogramSnapshot pauses = PauseHistogram(CollectionKind::kMajor);
      const HistogramSnapshot tts = TimeToSafepointHistogram();
      const HeapUsage usage = GetHeapUsage();
      bool ok = s.recent.size() <= 64 && usage.committed_bytes <= usage.reserved_bytes;
      for (int k = 0; k < kCollectionKinds; ++k) {
        ok = ok && s.collections[k] >= collections[k];
        collections[k] = s.collections[k];
      }
      ok = ok && s.bytes_copied >= copied && s.safepoints >= safepoints && pauses.count >= major_pauses &&
           tts.count >= stops;
      copied = s.bytes_copied;
      safepoints = s.safepoints;
      major_pauses = pauses.count;
      stops = tts.count;
      uint64_t last_major = 0;
      for (const CollectionRecord& r : s.recent) {
        ok = ok && r.heap_bytes_before % kChunkSize == 0;
        if (r.kind != CollectionKind::kMajor) continue;
        ok = ok && r.sequence > last_major;
        last_major = r.sequence;
      }
      if (!ok) inconsistent_reads.fetch_add(1);
      reads.fetch_add(1);
    }
  });

  std::atomic<uint64_t> stops{0};
  std::atomic<uint64_t> stops_with_reads{0};
  std::atomic<bool> reader_stalled{false};
  const GcStatistics before = GetGcStatistics(0);
  const size_t rounds = Scaled(100);
  {
    StoppedWorldHook hook([&] {
      stops.fetch_add(1);
      if (reader_stalled.load()) return;
      const uint64_t start = reads.load();
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (reads.load() < start + 2 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
      if (reads.load() >= start + 2) {
        stops_with_reads.fetch_add(1);
      } else {
        reader_stalled.store(true);
      }
    });
    std::thread other([&] {
      ThreadRegistration registration("collector");
      CollectInRounds(rounds, 0);
    });
    CollectInRounds(rounds, 2);
    Join(other);
  }
  stop.store(true);
  Join(reader);
  const GcStatistics after = GetGcStatistics(0);
  EXPECT_EQ(inconsistent_reads.load(), 0u);
  EXPECT_GT(reads.load(), stops.load());
  EXPECT_FALSE(reader_stalled.load()) << "a read did not complete while the world was stopped";
  EXPECT_EQ(stops_with_reads.load(), stops.load());
  EXPECT_EQ(after.collections[0] - before.collections[0], 2 * rounds);
  size_t requested_majors = 0;
  for (size_t i = 0; i < rounds; ++i) requested_majors += (i % 4 == 0) + (i % 4 == 2);
  EXPECT_GE(after.collections[2] - before.collections[2], requested_majors);
  EXPECT_EQ(stops.load(), after.collections[2] - before.collections[2]);
}

}  // namespace
}  // namespace revkv::runtime::testing
