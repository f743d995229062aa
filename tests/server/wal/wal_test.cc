// The WAL's normal operation: round trips across segment rotations, group commit, the fsync modes,
// callbacks, buffer back-pressure, statistics, segment removal and Close.
#include "server/wal/wal.h"

#include <atomic>
#include <filesystem>
#include <future>
#include <mutex>
#include <random>
#include <thread>

#include "gtest/gtest.h"
#include "server/wal/fault_injecting_file_system.h"
#include "tests/server/wal/test_util.h"
#include "tests/server/wal/wal_test_helpers.h"

namespace revkv::server {
namespace {

using testing::AppendOne;
using testing::OpenWal;
using testing::PayloadFor;
using testing::ScratchDir;
using testing::SegmentFiles;

TEST(WalRoundTrip, RecordsSurviveReopenAcrossSegmentRotations) {
  ScratchDir dir;
  WalOptions options{.dir = dir.path(), .segment_bytes = 2048};
  const uint64_t seed = testing::TestSeed();
  std::mt19937_64 rng(seed);
  std::vector<std::string> payloads(1, "");  // payloads[revision]
  {
    testing::OpenedWal opened = OpenWal(options);
    ASSERT_NE(opened.wal, nullptr);
    EXPECT_EQ(opened.report.next_revision, 1);
    WalLsn last = 0;
    for (int64_t rev = 1; rev <= 600; ++rev) {
      payloads.push_back(PayloadFor(rev, rng() % 300));
      last = AppendOne(*opened.wal, rev, payloads.back());
    }
    ASSERT_TRUE(opened.wal->WaitDurable(last).ok());
    EXPECT_EQ(opened.wal->durable_lsn(), 600u);
    ASSERT_TRUE(opened.wal->Close().ok());
  }
  const std::vector<std::string> files = SegmentFiles(dir.path());
  EXPECT_GE(files.size(), 20u) << "expected many rotations";
  // Each segment is named after its first record and is closed once it reaches segment_bytes.
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string contents = testing::ReadWholeFile(files[i]);
    const std::vector<testing::RecordSpan> spans = testing::ParseSegment(contents);
    ASSERT_FALSE(spans.empty()) << files[i];
    EXPECT_EQ(std::filesystem::path(files[i]).filename().string(), testing::SegmentName(spans[0].revision));
    if (i + 1 < files.size()) {
      EXPECT_LT(contents.size() - spans.back().size, options.segment_bytes) << "rotated late: " << files[i];
      EXPECT_GE(contents.size(), options.segment_bytes) << "rotated early: " << files[i];
    }
  }

  testing::OpenedWal reopened = OpenWal(options);
  ASSERT_NE(reopened.wal, nullptr);
  ASSERT_EQ(reopened.records.size(), 600u);
  for (int64_t rev = 1; rev <= 600; ++rev) {
    ASSERT_EQ(reopened.records[rev - 1].first, rev);
    ASSERT_EQ(reopened.records[rev - 1].second, payloads[rev]);
  }
  EXPECT_FALSE(reopened.report.corruption.has_value());
  EXPECT_EQ(reopened.report.next_revision, 601);
  EXPECT_EQ(reopened.report.segment, files.back()) << "appends continue in the last segment";
  for (int64_t rev = 601; rev <= 610; ++rev) AppendOne(*reopened.wal, rev, PayloadFor(rev, 50));
  ASSERT_TRUE(reopened.wal->WaitDurable(10).ok());
  ASSERT_TRUE(reopened.wal->Close().ok());
  reopened.wal.reset();

  testing::OpenedWal again = OpenWal(options, /*after_revision=*/595);
  ASSERT_NE(again.wal, nullptr);
  ASSERT_EQ(again.records.size(), 15u) << "only records after the checkpoint revision are replayed";
  EXPECT_EQ(again.records.front().first, 596);
  EXPECT_EQ(again.records.back().first, 610);
  EXPECT_EQ(again.records.back().second, PayloadFor(610, 50));
}

TEST(WalRoundTrip, EmptyLogStartsAfterTheCheckpointRevision) {
  ScratchDir dir;
  WalOptions options{.dir = dir.path() + "/wal"};  // created by Open
  testing::OpenedWal opened = OpenWal(options, /*after_revision=*/41);
  ASSERT_NE(opened.wal, nullptr);
  EXPECT_EQ(opened.report.next_revision, 42);
  EXPECT_EQ(opened.report.segment, options.dir + "/" + testing::SegmentName(42));
  ASSERT_TRUE(opened.wal->WaitDurable(AppendOne(*opened.wal, 42, "x")).ok());
}

TEST(WalRoundTrip, RecordLargerThanASegmentGetsItsOwnSegment) {
  ScratchDir dir;
  WalOptions options{.dir = dir.path(), .segment_bytes = 1024};
  testing::OpenedWal opened = OpenWal(options);
  const std::string big(10000, 'b');
  AppendOne(*opened.wal, 1, "small");
  AppendOne(*opened.wal, 2, big);
  ASSERT_TRUE(opened.wal->WaitDurable(AppendOne(*opened.wal, 3, "after")).ok());
  ASSERT_TRUE(opened.wal->Close().ok());
  opened.wal.reset();
  EXPECT_EQ(SegmentFiles(dir.path()).size(), 2u);  // {1, 2} then {3}
  testing::OpenedWal reopened = OpenWal(options);
  ASSERT_EQ(reopened.records.size(), 3u);
  EXPECT_EQ(reopened.records[1].second, big);
}

TEST(WalRoundTrip, RecordLargerThanTheBufferIsRefused) {
  ScratchDir dir;
  testing::OpenedWal opened = OpenWal({.dir = dir.path(), .buffer_bytes = 4096});
  absl::StatusOr<WalReservation> r = opened.wal->Reserve(std::string(5000, 'x'));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  // max_payload_bytes() is the exact bound: one byte more is refused, the bound itself fits the ring.
  ASSERT_EQ(opened.wal->max_payload_bytes(), 4096u - 16);
  const std::string largest(opened.wal->max_payload_bytes(), 'y');
  EXPECT_EQ(opened.wal->Reserve(largest + "y").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(opened.wal->appended_lsn(), 0u);
  AppendOne(*opened.wal, 1, largest);
  EXPECT_TRUE(opened.wal->WaitDurable(1).ok());
}

// Four threads append through a mutex that stands in for the inevitable section, without waiting for
// their records, each with a callback. One fsync must cover many records; every callback runs once, on
// the flusher thread, in LSN order.
TEST(GroupCommit, ConcurrentAppendersShareFsyncsAndCallbacksRunOnceInLsnOrder) {
  ScratchDir dir;
  FaultInjectingFileSystem fs(DefaultFileSystem());
  fs.SetSyncDelay(std::chrono::milliseconds(2));  // a disk with a 2 ms flush
  testing::OpenedWal opened = OpenWal({.dir = dir.path(), .file_system = &fs});
  Wal& wal = *opened.wal;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  constexpr int kRecords = kThreads * kPerThread;
  std::vector<WalLsn> callback_order;  // written by the flusher only
  callback_order.reserve(kRecords);
  std::vector<int> calls(kRecords + 1, 0);
  std::atomic<std::thread::id> callback_thread{};
  std::mutex section;
  int64_t next_revision = 1;
  std::vector<std::thread> threads;
  std::vector<WalLsn> last_lsn(kThreads, 0);
  const std::thread::id test_thread = std::this_thread::get_id();
  bool callback_on_writer_thread = false;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const std::string payload = PayloadFor(t * kPerThread + i, 100);
        auto lsn_cell = std::make_shared<WalLsn>(0);
        absl::StatusOr<WalReservation> r = wal.Reserve(payload, [&, lsn_cell](absl::Status s) {
          ASSERT_TRUE(s.ok()) << s;
          callback_order.push_back(*lsn_cell);
          ++calls[*lsn_cell];
          if (std::this_thread::get_id() == test_thread) callback_on_writer_thread = true;
          callback_thread.store(std::this_thread::get_id(), std::memory_order_relaxed);
        });
        ASSERT_TRUE(r.ok()) << r.status();
        {
          std::lock_guard<std::mutex> lock(section);
          // The cell is written before Append registers the callback, which publishes it to the flusher.
          *lsn_cell = wal.appended_lsn() + 1;
          last_lsn[t] = wal.Append(*r, next_revision++, payload);
          EXPECT_EQ(*lsn_cell, last_lsn[t]);
        }
        wal.Notify();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) ASSERT_TRUE(wal.WaitDurable(last_lsn[t]).ok());
  const WalStats stats = wal.stats();
  ASSERT_TRUE(wal.Close().ok());  // joins the flusher: its writes to callback_order happen before this

  ASSERT_EQ(callback_order.size(), static_cast<size_t>(kRecords));
  for (int i = 0; i < kRecords; ++i) ASSERT_EQ(callback_order[i], static_cast<WalLsn>(i + 1));
  for (int lsn = 1; lsn <= kRecords; ++lsn) ASSERT_EQ(calls[lsn], 1) << "lsn " << lsn;
  EXPECT_FALSE(callback_on_writer_thread);
  EXPECT_EQ(stats.records_written, static_cast<uint64_t>(kRecords));
  std::cout << "records " << kRecords << ", fsyncs " << stats.fsyncs << ", write calls " << stats.write_calls
            << std::endl;
  EXPECT_LT(stats.fsyncs * 10, static_cast<uint64_t>(kRecords)) << "fsyncs are not grouped";
  EXPECT_LT(stats.write_calls * 10, static_cast<uint64_t>(kRecords)) << "writes are not grouped";
}

// Writers that each wait for their own record (the unary gRPC case) still share fsyncs.
TEST(GroupCommit, WaitingWritersShareFsyncs) {
  ScratchDir dir;
  FaultInjectingFileSystem fs(DefaultFileSystem());
  fs.SetSyncDelay(std::chrono::milliseconds(2));
  testing::OpenedWal opened = OpenWal({.dir = dir.path(), .file_system = &fs});
  Wal& wal = *opened.wal;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 150;
  std::mutex section;
  int64_t next_revision = 1;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        const std::string payload(64, 'w');
        absl::StatusOr<WalReservation> r = wal.Reserve(payload);
        ASSERT_TRUE(r.ok());
        WalLsn lsn;
        {
          std::lock_guard<std::mutex> lock(section);
          lsn = wal.Append(*r, next_revision++, payload);
        }
        wal.Notify();
        ASSERT_TRUE(wal.WaitDurable(lsn).ok());
        ASSERT_GE(wal.durable_lsn(), lsn);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const uint64_t fsyncs = wal.stats().fsyncs;
  std::cout << "records " << kThreads * kPerThread << ", fsyncs " << fsyncs << std::endl;
  EXPECT_LE(fsyncs * 2, static_cast<uint64_t>(kThreads * kPerThread));
}

TEST(FsyncMode, AlwaysAcknowledgesOnlyAfterTheFsyncThatCoversTheRecord) {
  ScratchDir dir;
  FaultInjectingFileSystem fs(DefaultFileSystem());
  fs.SetSyncDelay(std::chrono::milliseconds(1));
  testing::OpenedWal opened =
      OpenWal({.dir = dir.path(), .file_system = &fs, .fsync_mode = FsyncMode::kAlways});
  Wal& wal = *opened.wal;
  std::vector<std::pair<int64_t, int64_t>> seen;  // (revision, synced revision at its callback)
  for (int64_t rev = 1; rev <= 50; ++rev) {
    AppendOne(wal, rev, PayloadFor(rev, 30), [&wal, &seen, rev](absl::Status s) {
      EXPECT_TRUE(s.ok());
      seen.emplace_back(rev, wal.stats().synced_revision);
    });
  }
  ASSERT_TRUE(wal.WaitDurable(50).ok());
  EXPECT_GE(wal.stats().synced_revision, 50);
  ASSERT_TRUE(wal.Close().ok());
  ASSERT_EQ(seen.size(), 50u);
  for (const auto& [rev, synced] : seen) EXPECT_GE(synced, rev) << "acknowledged before its fsync";
}

TEST(FsyncMode, IntervalAcknowledgesAfterWriteAndSyncsOnTheTimer) {
  ScratchDir dir;
  FaultInjectingFileSystem fs(DefaultFileSystem());
  {
    // A timer that never fires during the test: acknowledgment needs no fsync at all.
    testing::OpenedWal opened = OpenWal({.dir = dir.path(),
                                         .file_system = &fs,
                                         .fsync_mode = FsyncMode::kInterval,
                                         .fsync_interval = std::chrono::hours(1)});
    const int64_t syncs_before = fs.syncs();
    WalLsn lsn = 0;
    for (int64_t rev = 1; rev <= 20; ++rev) lsn = AppendOne(*opened.wal, rev, PayloadFor(rev, 40));
    ASSERT_TRUE(opened.wal->WaitDurable(lsn).ok());
    EXPECT_EQ(fs.syncs(), syncs_before);
    EXPECT_EQ(opened.wal->stats().durable_revision, 20);
    EXPECT_LT(opened.wal->stats().synced_revision, 20);
    // Written, so a crash of the process alone loses nothing: the bytes are in the file already.
    const std::vector<std::string> files = SegmentFiles(dir.path());
    EXPECT_EQ(testing::ParseSegment(testing::ReadWholeFile(files.back())).size(), 20u);
    ASSERT_TRUE(opened.wal->Close().ok());
    EXPECT_GT(fs.syncs(), syncs_before) << "Close syncs in every mode";
  }
  {
    testing::OpenedWal opened = OpenWal({.dir = dir.path(),
                                         .file_system = &fs,
                                         .fsync_mode = FsyncMode::kInterval,
                                         .fsync_interval = std::chrono::milliseconds(20)});
    WalLsn lsn = 0;
    for (int64_t rev = 21; rev <= 40; ++rev) lsn = AppendOne(*opened.wal, rev, PayloadFor(rev, 40));
    ASSERT_TRUE(opened.wal->WaitDurable(lsn).ok());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (opened.wal->stats().synced_revision < 40 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(opened.wal->stats().synced_revision, 40) << "the interval fsync never came";
    // With nothing new written, the timer does not fsync again.
    const int64_t syncs = fs.syncs();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(fs.syncs(), syncs);
  }
}

TEST(FsyncMode, NoneNeverSyncsWhileRunningButSyncsOnClose) {
  ScratchDir dir;
  FaultInjectingFileSystem fs(DefaultFileSystem());
  testing::OpenedWal opened =
      OpenWal({.dir = dir.path(), .file_system = &fs, .fsync_mode = FsyncMode::kNone, .segment_bytes = 1024});
  const int64_t syncs_before = fs.syncs();
  const int64_t directory_syncs_before = fs.directory_syncs();
  WalLsn lsn = 0;
  for (int64_t rev = 1; rev <= 100; ++rev) lsn = AppendOne(*opened.wal, rev, PayloadFor(rev, 60));
  ASSERT_TRUE(opened.wal->WaitDurable(lsn).ok());
  EXPECT_GT(SegmentFiles(dir.path()).size(), 3u);
  EXPECT_EQ(fs.syncs(), syncs_before);
  EXPECT_EQ(fs.directory_syncs(), directory_syncs_before);
  EXPECT_EQ(opened.wal->stats().fsyncs, 0u);
  ASSERT_TRUE(opened.wal->Close().ok());
  EXPECT_EQ(fs.syncs(), syncs_before + static_cast<int64_t>(SegmentFiles(dir.path()).size()))
      << "Close syncs every segment written";
  EXPECT_EQ(fs.directory_syncs(), directory_syncs_before + 1);
  testing::OpenedWal reopened = OpenWal({.dir = dir.path()});
  EXPECT_EQ(reopened.records.size(), 100u);
}

TEST(FsyncModeNames, ParseAndPrint) {
  for (FsyncMode mode : {FsyncMode::kAlways, FsyncMode::kInterval, FsyncMode::kNone}) {
    EXPECT_EQ(*ParseFsyncMode(FsyncModeName(mode)), mode);
  }
  EXPECT_EQ(ParseFsyncMode("sometimes").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(WalCallbacks, LateRegistrationRunsOnTheFlusherThread) {
  ScratchDir dir;
  testing::OpenedWal opened = OpenWal({.dir = dir.path()});
  const WalLsn lsn = AppendOne(*opened.wal, 1, "one");
  ASSERT_TRUE(opened.wal->WaitDurable(lsn).ok());
  std::promise<std::thread::id> ran_on;
  opened.wal->OnDurable(lsn, [&](absl::Status s) {
    EXPECT_TRUE(s.ok());
    ran_on.set_value(std::this_thread::get_id());
  });
  std::future<std::thread::id> flusher_thread = ran_on.get_future();
  ASSERT_EQ(flusher_thread.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_NE(flusher_thread.get(), std::this_thread::get_id());
  // Registered before durability, from several threads, in mixed order: all run, each once.
  std::atomic<int> ran{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i)
        opened.wal->OnDurable(1, [&](absl::Status s) {
          EXPECT_TRUE(s.ok());
          ran.fetch_add(1);
        });
      (void)t;
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(opened.wal->Close().ok());
  EXPECT_EQ(ran.load(), 200);
}

TEST(WalCallbacks, UnusedReservationDropsItsCallbackAndSpace) {
  ScratchDir dir;
  testing::OpenedWal opened = OpenWal({.dir = dir.path(), .buffer_bytes = 4096});
  bool ran = false;
  for (int i = 0; i < 100; ++i) {  // would exhaust the buffer if space leaked
    absl::StatusOr<WalReservation> r =
        opened.wal->Reserve(std::string(1000, 'x'), [&](absl::Status) { ran = true; });
    ASSERT_TRUE(r.ok());
  }
  ASSERT_TRUE(opened.wal->WaitDurable(AppendOne(*opened.wal, 1, "kept")).ok());
  ASSERT_TRUE(opened.wal->Close().ok());
  EXPECT_FALSE(ran);
}

TEST(WalBackPressure, ReserveWaitsForSpaceAndResumesWhenReleased) {
  ScratchDir dir;
  testing::OpenedWal opened = OpenWal({.dir = dir.path(), .buffer_bytes = 4096});
  Wal& wal = *opened.wal;
  const std::string payload(1000, 'p');  // 1016 bytes framed: four fit in 4096
  std::vector<WalReservation> held;
  for (int i = 0; i < 4; ++i) held.push_back(*wal.Reserve(payload));
  std::atomic<bool> granted{false};
  std::thread blocked([&] {
    absl::StatusOr<WalReservation> r = wal.Reserve(payload);
    EXPECT_TRUE(r.ok());
    granted = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(granted.load()) << "the buffer is full; Reserve must wait";
  // Appending one held reservation lets the flusher write it and give the space back.
  wal.Append(held[0], 1, payload);
  wal.Notify();
  blocked.join();
  EXPECT_TRUE(granted.load());
}

TEST(WalBackPressure, BlockedReserveFailsWhenTheWalCloses) {
  ScratchDir dir;
  testing::OpenedWal opened = OpenWal({.dir = dir.path(), .buffer_bytes = 4096});
  Wal& wal = *opened.wal;
  const std::string payload(2000, 'p');
  absl::StatusOr<WalReservation> a = wal.Reserve(payload);
  absl::StatusOr<WalReservation> b = wal.Reserve(payload);
  ASSERT_TRUE(a.ok() && b.ok());
  absl::Status blocked_status;
  std::thread blocked([&] { blocked_status = wal.Reserve(payload).status(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  ASSERT_TRUE(wal.Close().ok());
  blocked.join();
  EXPECT_EQ(blocked_status.code(), absl::StatusCode::kFailedPrecondition) << blocked_status;
}

TEST(WalStatistics, CountWritesFsyncsAndProgress) {
  ScratchDir dir;
  testing::OpenedWal opened = OpenWal({.dir = dir.path(), .segment_bytes = 4096});
  Wal& wal = *opened.wal;
  WalLsn lsn = 0;
  for (int64_t rev = 1; rev <= 100; ++rev) lsn = AppendOne(wal, rev, std::string(84, 's'));  // 100 B framed
  ASSERT_TRUE(wal.WaitDurable(lsn).ok());
  const WalStats s = wal.stats();
  EXPECT_EQ(s.records_written, 100u);
  EXPECT_EQ(s.appended_lsn, 100u);
  EXPECT_EQ(s.durable_lsn, 100u);
  EXPECT_EQ(s.durable_revision, 100);
  EXPECT_EQ(s.synced_revision, 100);
  EXPECT_GE(s.bytes_written, 100u * 100u);
  EXPECT_GE(s.fsyncs, 1u);
  EXPECT_EQ(s.fsync_latency.count, s.fsyncs);
  EXPECT_GE(s.fsync_latency.max_seconds, 0.0);
  EXPECT_LE(s.fsync_latency.cumulative_counts.front(), s.fsync_latency.cumulative_counts.back());
  EXPECT_EQ(s.segments, SegmentFiles(dir.path()).size());
  EXPECT_EQ(s.current_segment, SegmentFiles(dir.path()).back());
  EXPECT_TRUE(std::filesystem::exists(s.current_segment));
  EXPECT_FALSE(s.failed);
}

TEST(WalSegments, RemoveSegmentsUpToDeletesOnlyWhollyCoveredSegments) {
  ScratchDir dir;
  WalOptions options{.dir = dir.path(), .segment_bytes = 1024};
  testing::OpenedWal opened = OpenWal(options);
  Wal& wal = *opened.wal;
  WalLsn lsn = 0;
  for (int64_t rev = 1; rev <= 200; ++rev) lsn = AppendOne(wal, rev, PayloadFor(rev, 80));
  ASSERT_TRUE(wal.WaitDurable(lsn).ok());
  const std::vector<std::string> before = SegmentFiles(dir.path());
  ASSERT_GT(before.size(), 5u);
  // First revision of each segment, from its name.
  std::vector<int64_t> firsts;
  for (const std::string& f : before) {
    firsts.push_back(testing::ParseSegment(testing::ReadWholeFile(f)).front().revision);
  }
  const int64_t cut = firsts[3] + 1;  // inside segment 3: segments 0..2 are wholly <= cut
  absl::StatusOr<std::vector<std::string>> removed = wal.RemoveSegmentsUpTo(cut);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(*removed, std::vector<std::string>(before.begin(), before.begin() + 3));
  EXPECT_EQ(SegmentFiles(dir.path()), std::vector<std::string>(before.begin() + 3, before.end()));
  // Exactly at a segment's last revision: that segment goes too.
  removed = wal.RemoveSegmentsUpTo(firsts[5] - 1);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(removed->size(), 2u);
  // Everything: the current segment stays.
  removed = wal.RemoveSegmentsUpTo(1'000'000);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(SegmentFiles(dir.path()), std::vector<std::string>{before.back()});
  EXPECT_EQ(wal.stats().segments, 1u);
  // The log still appends and recovers from a checkpoint at the cut.
  ASSERT_TRUE(wal.WaitDurable(AppendOne(wal, 201, "after removal")).ok());
  ASSERT_TRUE(wal.Close().ok());
  opened.wal.reset();
  testing::OpenedWal reopened = OpenWal(options, /*after_revision=*/200);
  ASSERT_EQ(reopened.records.size(), 1u);
  EXPECT_EQ(reopened.records[0].first, 201);
}

TEST(WalClose, ReserveAfterCloseFailsAndLateCallbacksRunInline) {
  ScratchDir dir;
  testing::OpenedWal opened = OpenWal({.dir = dir.path()});
  const WalLsn lsn = AppendOne(*opened.wal, 1, "one");
  ASSERT_TRUE(opened.wal->Close().ok());
  ASSERT_TRUE(opened.wal->Close().ok()) << "idempotent";
  EXPECT_EQ(opened.wal->durable_lsn(), lsn) << "Close writes what was appended";
  EXPECT_EQ(opened.wal->Reserve("x").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(opened.wal->WaitDurable(lsn).ok());
  bool ran = false;
  opened.wal->OnDurable(lsn, [&](absl::Status s) {
    EXPECT_TRUE(s.ok());
    ran = true;
  });
  EXPECT_TRUE(ran);
}

TEST(WalAppendDeathTest, NonConsecutiveRevisionAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ScratchDir dir;
  testing::OpenedWal opened = OpenWal({.dir = dir.path()});
  AppendOne(*opened.wal, 1, "one");
  absl::StatusOr<WalReservation> r = opened.wal->Reserve("three");
  ASSERT_TRUE(r.ok());
  // The death-test child runs this body in a process of its own, with a directory of its own; it removes
  // that directory before it aborts, since its destructors never run.
  const std::string child_dir = dir.path();
  EXPECT_DEATH(
      {
        std::filesystem::remove_all(child_dir);
        opened.wal->Append(*r, 3, "three");
      },
      "revisions must be consecutive");
  EXPECT_DEATH(
      {
        std::filesystem::remove_all(child_dir);
        opened.wal->Append(*r, 2, "other size");
      },
      "payload size differs");
}

}  // namespace
}  // namespace revkv::server
