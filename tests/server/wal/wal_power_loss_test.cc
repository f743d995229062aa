// Power loss: what a machine crash keeps is what was fsync'ed, not what write(2) handed to the kernel.
// A SIGKILL keeps the page cache, so the crash tests cannot see a missing fsync; these tests can. The
// fault-injecting file system tracks, per file, the bytes a Sync covered, whether the directory entry is
// durable and the renames and removals not yet durable; SimulatePowerLoss(seed) keeps a random part of
// what was not durable: unsynced bytes cut at any byte, 512-byte sectors of them lost out of order (read
// back as zeros), entries, renames and removals kept or undone.
//
//  - fsync=always: when a durable callback fires, nothing of the log is unsynced (so the record lies in
//    the synced prefix), and after a power loss at a random moment every acknowledged record is
//    recovered with its bytes, revisions consecutive, recovery never refusing what a crash left.
//  - SyncThrough makes records durable in every mode (kInterval and kNone included), with the segments
//    that rotation closed and their directory entries; without it, a power loss in kNone does lose
//    records (the model bites).
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/wal/crc32c.h"
#include "server/wal/fault_injecting_file_system.h"
#include "server/wal/wal.h"
#include "tests/server/wal/test_util.h"
#include "tests/server/wal/wal_test_helpers.h"

namespace revkv::server {
namespace {

using testing::AppendOne;
using testing::OpenWal;
using testing::PayloadFor;
using testing::ScratchDir;

// Every record of the log in `dir`, recovered through a fresh (fault-free) file system.
std::map<int64_t, std::string> Recover(const std::string& dir, WalRecoveryReport* report) {
  std::map<int64_t, std::string> records;
  int64_t expected = 1;
  absl::StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(
      {.dir = dir}, 0,
      [&](int64_t revision, std::string_view payload) {
        EXPECT_EQ(revision, expected) << "revisions are not consecutive";
        expected = revision + 1;
        records[revision] = std::string(payload);
        return absl::OkStatus();
      },
      report);
  EXPECT_TRUE(wal.ok()) << wal.status();
  if (wal.ok()) {
    EXPECT_TRUE((*wal)->Close().ok());
  }
  return records;
}

TEST(WalPowerLoss, FsyncAlwaysAcknowledgesOnlySyncedRecordsAndAPowerLossLosesNoneOfThem) {
  const uint64_t seed = testing::TestSeed();
  std::mt19937_64 rng(seed);
  ScratchDir dir;
  std::map<int64_t, uint32_t> acked;  // every revision acknowledged in any round, with its payload CRC
  const int rounds = std::max(4, static_cast<int>(40 * testing::Scale()));
  int torn_tails = 0;
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE(::testing::Message() << "round " << round << " (REVKV_TEST_SEED=" << seed << ")");
    FaultInjectingFileSystem faulty(DefaultFileSystem());
    WalOptions options{.dir = dir.path(),
                       .file_system = &faulty,
                       .fsync_mode = FsyncMode::kAlways,
                       .segment_bytes = 8 * 1024,
                       .buffer_bytes = 1 << 20};
    testing::OpenedWal opened = OpenWal(options);
    ASSERT_NE(opened.wal, nullptr);
    if (opened.report.corruption) ++torn_tails;
    for (size_t i = 1; i < opened.records.size(); ++i) {
      ASSERT_EQ(opened.records[i].first, opened.records[i - 1].first + 1) << "a gap was replayed";
    }
    Wal& wal = *opened.wal;
    // Everything acknowledged before the last power loss came back.
    std::map<int64_t, std::string> recovered(opened.records.begin(), opened.records.end());
    for (const auto& [revision, crc] : acked) {
      auto it = recovered.find(revision);
      ASSERT_NE(it, recovered.end()) << "acknowledged revision " << revision << " lost; "
                                     << opened.report.ToString();
      ASSERT_EQ(Crc32c(it->second), crc) << "revision " << revision << " came back with other bytes";
    }

    std::mutex mu;  // guards acked and next_revision; stands in for the inevitable section in Append
    int64_t next_revision = opened.report.next_revision;
    std::atomic<int> unsynced_at_ack{0};
    std::atomic<bool> stop{false};
    std::vector<std::thread> writers;
    for (int t = 0; t < 3; ++t) {
      writers.emplace_back([&, thread_seed = rng()] {
        std::mt19937_64 local(thread_seed);
        while (!stop.load()) {
          std::string payload(1 + local() % 700, '\0');
          for (char& c : payload) c = static_cast<char>(local());
          auto revision_cell = std::make_shared<int64_t>(0);
          const uint32_t crc = Crc32c(payload);
          absl::StatusOr<WalReservation> r = wal.Reserve(payload, [&, revision_cell, crc](absl::Status s) {
            if (!s.ok()) return;
            // On the flusher, right after the pass that acknowledged the record: in kAlways that pass
            // synced everything it wrote, segment headers and directory entries included.
            if (faulty.UnsyncedBytes(dir.path()) != 0) unsynced_at_ack.fetch_add(1);
            std::lock_guard<std::mutex> lock(mu);
            acked[*revision_cell] = crc;
          });
          if (!r.ok()) return;  // the power is gone
          WalLsn lsn;
          {
            std::lock_guard<std::mutex> lock(mu);
            *revision_cell = next_revision;
            lsn = wal.Append(*r, next_revision++, payload);
          }
          wal.Notify();
          if (local() % 3 == 0) (void)wal.WaitDurable(lsn);  // some wait, some pipeline
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2 + rng() % 25));
    ASSERT_TRUE(faulty.SimulatePowerLoss(rng()).ok());
    stop.store(true);
    for (std::thread& t : writers) t.join();
    (void)wal.Close();  // fails if the flusher tried to write after the power went
    opened.wal.reset();
    EXPECT_EQ(unsynced_at_ack.load(), 0) << "a record was acknowledged while log bytes were unsynced";
  }
  WalRecoveryReport report;
  const std::map<int64_t, std::string> recovered = Recover(dir.path(), &report);
  for (const auto& [revision, crc] : acked) {
    auto it = recovered.find(revision);
    ASSERT_NE(it, recovered.end()) << "acknowledged revision " << revision << " lost; " << report.ToString();
    ASSERT_EQ(Crc32c(it->second), crc);
  }
  std::cout << rounds << " power losses, " << torn_tails << " torn tails cut, " << acked.size()
            << " records acknowledged, " << recovered.size() << " recovered" << std::endl;
  EXPECT_GT(acked.size(), 0u);
}

// Appends revisions [first, last] and returns the LSN of the last one.
WalLsn AppendRange(Wal& wal, int64_t first, int64_t last) {
  WalLsn lsn = 0;
  for (int64_t r = first; r <= last; ++r) lsn = AppendOne(wal, r, PayloadFor(r, 300));
  return lsn;
}

TEST(WalPowerLoss, SyncThroughMakesRecordsDurableInEveryMode) {
  for (FsyncMode mode : {FsyncMode::kAlways, FsyncMode::kInterval, FsyncMode::kNone}) {
    SCOPED_TRACE(FsyncModeName(mode));
    ScratchDir dir;
    {
      FaultInjectingFileSystem faulty(DefaultFileSystem());
      WalOptions options{.dir = dir.path(),
                         .file_system = &faulty,
                         .fsync_mode = mode,
                         .fsync_interval = std::chrono::hours(1),
                         .segment_bytes = 4096};
      testing::OpenedWal opened = OpenWal(options);
      ASSERT_NE(opened.wal, nullptr);
      Wal& wal = *opened.wal;
      // 60 records of ~316 bytes: about four segments, rotated while running.
      ASSERT_TRUE(wal.WaitDurable(AppendRange(wal, 1, 60)).ok());
      EXPECT_TRUE(wal.SyncThrough(60).ok());
      EXPECT_EQ(faulty.UnsyncedBytes(dir.path()), 0u);
      EXPECT_GE(wal.stats().synced_revision, 60);
      EXPECT_GE(wal.stats().segments, 4u);
      EXPECT_TRUE(wal.SyncThrough(30).ok());  // already synced: at once
      // Ten more, acknowledged but (in kInterval and kNone) not synced: a power loss may take them.
      ASSERT_TRUE(wal.WaitDurable(AppendRange(wal, 61, 70)).ok());
      if (mode != FsyncMode::kAlways) {
        EXPECT_GT(faulty.UnsyncedBytes(dir.path()), 0u);
      }
      // Without a seed everything unsynced is lost: the case the assertions below need.
      ASSERT_TRUE(faulty.SimulatePowerLoss().ok());
    }
    WalRecoveryReport report;
    const std::map<int64_t, std::string> recovered = Recover(dir.path(), &report);
    for (int64_t r = 1; r <= 60; ++r) {
      auto it = recovered.find(r);
      ASSERT_NE(it, recovered.end()) << "synced revision " << r << " lost; " << report.ToString();
      EXPECT_EQ(it->second, PayloadFor(r, 300));
    }
    if (mode == FsyncMode::kAlways) {
      EXPECT_EQ(report.last_revision, 70) << report.ToString();
    } else {
      // Rotation may have synced a few of 61..70 (kInterval syncs a segment it closes), never the last.
      EXPECT_LT(report.last_revision, 70)
          << "the model should drop what was never synced; " << report.ToString();
    }
  }
}

// The model itself: what a seeded power loss may leave of unsynced data, renames and removals.
TEST(WalPowerLoss, TheModelLosesUnsyncedBytesAtAnyOffsetAndOutOfOrderAndUndoesUnsyncedRenamesAndRemovals) {
  const uint64_t seed = testing::TestSeed();
  std::mt19937_64 rng(seed);
  bool cut_inside_a_sector = false, later_sector_kept_after_a_lost_one = false, rename_undone = false,
       rename_kept = false, removal_undone = false, removal_kept = false;
  for (int round = 0; round < 64; ++round) {
    SCOPED_TRACE(::testing::Message() << "round " << round << " (REVKV_TEST_SEED=" << seed << ")");
    ScratchDir dir;
    const std::string synced(1000, 's'), unsynced(4000, 'u');
    {
      FaultInjectingFileSystem faulty(DefaultFileSystem());
      for (const char* name : {"data", "doomed", "from"}) {
        absl::StatusOr<std::unique_ptr<WritableFile>> f =
            faulty.OpenWritable(dir.File(name), OpenMode::kTruncate);
        ASSERT_TRUE(f.ok());
        ASSERT_TRUE((*f)->Append(synced).ok());
        ASSERT_TRUE((*f)->Sync().ok());
        if (std::string(name) == "data") {
          ASSERT_TRUE((*f)->Append(unsynced).ok());
        }
        ASSERT_TRUE((*f)->Close().ok());
      }
      ASSERT_TRUE(faulty.SyncDirectory(dir.path()).ok());
      ASSERT_TRUE(faulty.Remove(dir.File("doomed")).ok());
      ASSERT_TRUE(faulty.Rename(dir.File("from"), dir.File("to")).ok());
      ASSERT_TRUE(faulty.SimulatePowerLoss(rng()).ok());
    }
    const std::string data = testing::ReadWholeFile(dir.File("data"));
    ASSERT_GE(data.size(), synced.size());
    ASSERT_LE(data.size(), synced.size() + unsynced.size());
    ASSERT_EQ(data.substr(0, synced.size()), synced) << "synced bytes were lost";
    bool lost_sector = false;
    for (size_t i = synced.size(); i < data.size(); ++i) {
      ASSERT_TRUE(data[i] == 'u' || data[i] == '\0') << "byte " << i << " is neither written nor zero";
      if (data[i] == '\0' && i % 512 == 511) lost_sector = true;
      if (data[i] == 'u' && lost_sector) later_sector_kept_after_a_lost_one = true;
    }
    if (data.size() % 512 != 0 && data.size() != synced.size()) cut_inside_a_sector = true;
    const bool doomed = std::filesystem::exists(dir.File("doomed"));
    if (doomed) {
      EXPECT_EQ(testing::ReadWholeFile(dir.File("doomed")), synced);
    }
    (doomed ? removal_undone : removal_kept) = true;
    const bool from = std::filesystem::exists(dir.File("from"));
    EXPECT_NE(from, std::filesystem::exists(dir.File("to"))) << "a rename leaves exactly one name";
    EXPECT_EQ(testing::ReadWholeFile(dir.File(from ? "from" : "to")), synced);
    (from ? rename_undone : rename_kept) = true;
  }
  EXPECT_TRUE(cut_inside_a_sector);
  EXPECT_TRUE(later_sector_kept_after_a_lost_one);
  EXPECT_TRUE(rename_undone && rename_kept);
  EXPECT_TRUE(removal_undone && removal_kept);
}

TEST(WalPowerLoss, SyncThroughFailsWithTheLogsFailure) {
  ScratchDir dir;
  FaultInjectingFileSystem faulty(DefaultFileSystem());
  WalOptions options{.dir = dir.path(), .file_system = &faulty, .fsync_mode = FsyncMode::kNone};
  testing::OpenedWal opened = OpenWal(options);
  ASSERT_NE(opened.wal, nullptr);
  Wal& wal = *opened.wal;
  ASSERT_TRUE(wal.WaitDurable(AppendRange(wal, 1, 5)).ok());
  faulty.FailNthSync(1, EIO);
  const absl::Status s = wal.SyncThrough(5);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s, wal.failed_status());
  EXPECT_TRUE(testing::MessageHas(s, "fdatasync")) << s;
  EXPECT_EQ(ErrnoOf(s), EIO) << "the failure keeps the errno of its cause";
}

}  // namespace
}  // namespace revkv::server
