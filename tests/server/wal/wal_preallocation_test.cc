// Segment preallocation: a new segment's blocks are reserved (fallocate, FALLOC_FL_KEEP_SIZE) while its
// size stays what was written, so recovery reads exactly what it read without it; and the flusher's
// fsync latency with and without it (printed from the log's own histogram).
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "gtest/gtest.h"
#include "server/wal/latency_histogram.h"
#include "server/wal/wal.h"
#include "tests/server/wal/test_util.h"
#include "tests/server/wal/wal_test_helpers.h"

namespace revkv::server {
namespace {

using testing::AppendOne;
using testing::OpenWal;
using testing::PayloadFor;
using testing::ScratchDir;
using testing::SegmentFiles;

struct FileSpace {
  uint64_t size = 0;
  uint64_t allocated = 0;  // bytes of disk blocks
};

FileSpace SpaceOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return {static_cast<uint64_t>(st.st_size), static_cast<uint64_t>(st.st_blocks) * 512};
}

TEST(WalPreallocation, NewSegmentsHaveTheirBlocksReservedAndTheirSizeUnchanged) {
  for (const bool preallocate : {true, false}) {
    SCOPED_TRACE(preallocate ? "preallocated" : "not preallocated");
    ScratchDir dir;
    const WalOptions options{.dir = dir.path(),
                             .fsync_mode = FsyncMode::kAlways,
                             .segment_bytes = uint64_t{4} << 20,
                             .preallocate_segments = preallocate};
    testing::OpenedWal opened = OpenWal(options);
    ASSERT_NE(opened.wal, nullptr);
    const FileSpace fresh = SpaceOf(SegmentFiles(dir.path()).back());
    EXPECT_EQ(fresh.size, 16u) << "the size is what was written: the segment header";
    if (preallocate) {
      EXPECT_GE(fresh.allocated, uint64_t{4} << 20) << "the segment's blocks are not reserved";
    } else {
      EXPECT_LT(fresh.allocated, uint64_t{1} << 20);
    }
    // Records go in, the size follows them, and recovery reads them and nothing more.
    WalLsn lsn = 0;
    for (int64_t rev = 1; rev <= 100; ++rev) lsn = AppendOne(*opened.wal, rev, PayloadFor(rev, 1000));
    ASSERT_TRUE(opened.wal->WaitDurable(lsn).ok());
    ASSERT_TRUE(opened.wal->Close().ok());
    opened.wal.reset();
    EXPECT_EQ(SpaceOf(SegmentFiles(dir.path()).back()).size, 16u + 100 * (16 + 1000));
    testing::OpenedWal again = OpenWal(options);
    ASSERT_NE(again.wal, nullptr);
    EXPECT_EQ(again.records.size(), 100u);
    EXPECT_FALSE(again.report.corruption.has_value());
    EXPECT_EQ(again.report.next_revision, 101);
  }
}

// The upper bound of the histogram bucket holding the q-quantile of the observations.
double QuantileBound(const LatencySnapshot& s, double q) {
  const auto rank = static_cast<uint64_t>(q * static_cast<double>(s.count));
  for (size_t i = 0; i < kLatencyBucketBounds.size(); ++i) {
    if (s.cumulative_counts[i] > rank) return kLatencyBucketBounds[i];
  }
  return s.max_seconds;
}

// Figures, not a check: one writer, each 4 KiB record waited for (one fdatasync each) in `always` mode,
// 64 MiB segments; the flusher's fsync latency from Wal::stats(), p50 and p99 as histogram bucket
// bounds, mean and max. REVKV_TEST_SCALE multiplies the record count (300 per run at scale 1).
TEST(WalPreallocation, FsyncLatencyWithAndWithoutPreallocation) {
  const int records = std::max(100, static_cast<int>(300 * testing::Scale()));
  for (int pass = 0; pass < 2; ++pass) {
    for (const bool preallocate : {false, true}) {
      ScratchDir dir;
      const WalOptions options{
          .dir = dir.path(), .fsync_mode = FsyncMode::kAlways, .preallocate_segments = preallocate};
      testing::OpenedWal opened = OpenWal(options);
      ASSERT_NE(opened.wal, nullptr);
      const LatencySnapshot before = opened.wal->stats().fsync_latency;
      const auto start = std::chrono::steady_clock::now();
      for (int64_t rev = 1; rev <= records; ++rev) {
        ASSERT_TRUE(opened.wal->WaitDurable(AppendOne(*opened.wal, rev, PayloadFor(rev, 4096))).ok());
      }
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      LatencySnapshot s = opened.wal->stats().fsync_latency;
      for (size_t i = 0; i < s.cumulative_counts.size(); ++i)
        s.cumulative_counts[i] -= before.cumulative_counts[i];
      s.count -= before.count;
      s.sum_seconds -= before.sum_seconds;
      std::printf(
          "fsync latency, %s, pass %d: %llu fsyncs, p50 <= %.0f us, p99 <= %.0f us, mean %.0f us, max %.0f "
          "us; "
          "%.0f records/s\n",
          preallocate ? "preallocated" : "not preallocated", pass + 1,
          static_cast<unsigned long long>(s.count), QuantileBound(s, 0.5) * 1e6, QuantileBound(s, 0.99) * 1e6,
          s.sum_seconds / static_cast<double>(s.count) * 1e6, s.max_seconds * 1e6, records / seconds);
      ASSERT_TRUE(opened.wal->Close().ok());
    }
  }
}

}  // namespace
}  // namespace revkv::server
