// Disk errors: a full disk in the middle of a write, an fsync that fails, a segment that cannot be
// created. Each puts the WAL into its permanent failed state: waiters and callbacks get the error,
// nothing after the failure point is acknowledged, Reserve fails, and a restart recovers exactly the
// acknowledged records.
#include <cerrno>
#include <thread>

#include "gtest/gtest.h"
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

// Checks the permanent failed state after a failure that hit record `first_failed_lsn`.
void ExpectFailedState(Wal& wal, WalLsn first_failed_lsn, absl::StatusCode code, std::string_view errno_text,
                       std::string_view operation) {
  const absl::Status waited = wal.WaitDurable(first_failed_lsn);  // returns once the flusher has failed
  const absl::Status failure = wal.failed_status();
  EXPECT_FALSE(waited.ok());
  EXPECT_EQ(waited, failure);
  EXPECT_TRUE(wal.failed());
  EXPECT_EQ(failure.code(), code) << failure;
  EXPECT_TRUE(testing::MessageHas(failure, "wal: ")) << failure;
  EXPECT_TRUE(testing::MessageHas(failure, operation)) << failure;
  EXPECT_TRUE(testing::MessageHas(failure, errno_text)) << failure;
  EXPECT_TRUE(testing::MessageHas(failure, "wal-")) << "names the file: " << failure;
  EXPECT_TRUE(testing::MessageHas(failure, "writes are disabled until restart")) << failure;
  EXPECT_LT(wal.durable_lsn(), first_failed_lsn);
  EXPECT_TRUE(wal.stats().failed);
  // Earlier records stay acknowledged.
  if (first_failed_lsn > 1) {
    EXPECT_TRUE(wal.WaitDurable(first_failed_lsn - 1).ok());
  }
  // Reserve fails, now and later.
  EXPECT_EQ(wal.Reserve("more").status(), failure);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(wal.Reserve("more").status(), failure);
}

TEST(WalFailure, NoSpaceInTheMiddleOfAWriteFailsThePendingAndEveryLaterRecord) {
  ScratchDir dir;
  FaultInjectingFileSystem fs(DefaultFileSystem());
  const WalOptions options{.dir = dir.path(), .file_system = &fs};
  testing::OpenedWal opened = OpenWal(options);
  Wal& wal = *opened.wal;
  WalLsn lsn = 0;
  for (int64_t rev = 1; rev <= 10; ++rev) lsn = AppendOne(wal, rev, PayloadFor(rev, 100));
  ASSERT_TRUE(wal.WaitDurable(lsn).ok());

  // A reservation taken before the failure is still accepted by Append, but never acknowledged.
  absl::StatusOr<WalReservation> early = wal.Reserve("reserved before the failure");
  ASSERT_TRUE(early.ok());

  fs.FailWritesAfterBytes(50, ENOSPC);  // record 11 is torn after 50 bytes
  absl::Status callback_status;
  int callback_calls = 0;
  const WalLsn failed_lsn = AppendOne(wal, 11, PayloadFor(11, 300), [&](absl::Status s) {
    callback_status = s;
    ++callback_calls;
  });
  EXPECT_EQ(failed_lsn, 11u);
  ExpectFailedState(wal, failed_lsn, absl::StatusCode::kResourceExhausted, "No space left on device",
                    "write of");

  absl::Status late_status;
  const WalLsn late = wal.Append(*early, 12, "reserved before the failure");
  wal.Notify();
  wal.OnDurable(late, [&](absl::Status s) { late_status = s; });
  bool old_ok = false;
  wal.OnDurable(5, [&](absl::Status s) { old_ok = s.ok(); });
  EXPECT_EQ(wal.WaitDurable(late), wal.failed_status());

  // Permanent: the disk has space again, the log stays failed.
  fs.ClearFaults();
  EXPECT_EQ(wal.Reserve("x").status(), wal.failed_status());
  const absl::Status failure = wal.failed_status();
  EXPECT_EQ(wal.Close(), failure);
  EXPECT_EQ(callback_calls, 1);
  EXPECT_EQ(callback_status, failure);
  EXPECT_EQ(late_status, failure);
  EXPECT_TRUE(old_ok);
  EXPECT_EQ(wal.durable_lsn(), 10u);
  opened.wal.reset();

  // Restart: the torn record is cut, the ten acknowledged ones are there, appending continues at 11.
  testing::OpenedWal reopened = OpenWal({.dir = dir.path()});
  ASSERT_NE(reopened.wal, nullptr);
  EXPECT_TRUE(reopened.report.corruption.has_value());
  ASSERT_EQ(reopened.records.size(), 10u);
  EXPECT_EQ(reopened.report.next_revision, 11);
  ASSERT_TRUE(reopened.wal->WaitDurable(AppendOne(*reopened.wal, 11, "again")).ok());
}

TEST(WalFailure, NoSpaceOnTheWholeWriteLeavesNoTrace) {
  ScratchDir dir;
  FaultInjectingFileSystem fs(DefaultFileSystem());
  testing::OpenedWal opened = OpenWal({.dir = dir.path(), .file_system = &fs});
  ASSERT_TRUE(opened.wal->WaitDurable(AppendOne(*opened.wal, 1, "one")).ok());
  fs.FailNthWrite(1, ENOSPC);
  const WalLsn lsn = AppendOne(*opened.wal, 2, "two");
  ExpectFailedState(*opened.wal, lsn, absl::StatusCode::kResourceExhausted, "No space left on device",
                    "write of");
  opened.wal.reset();
  testing::OpenedWal reopened = OpenWal({.dir = dir.path()});
  EXPECT_FALSE(reopened.report.corruption.has_value());
  EXPECT_EQ(reopened.records.size(), 1u);
}

TEST(WalFailure, FsyncErrorIsPermanentAndNothingAfterItIsAcknowledged) {
  ScratchDir dir;
  FaultInjectingFileSystem fs(DefaultFileSystem());
  testing::OpenedWal opened = OpenWal({.dir = dir.path(), .file_system = &fs});
  Wal& wal = *opened.wal;
  WalLsn lsn = 0;
  for (int64_t rev = 1; rev <= 5; ++rev) lsn = AppendOne(wal, rev, PayloadFor(rev, 64));
  ASSERT_TRUE(wal.WaitDurable(lsn).ok());

  fs.FailNthSync(1, EIO);
  std::vector<absl::Status> statuses;        // written by the flusher only; read after Close
  std::vector<WalReservation> reservations;  // all taken before the failure, appended one by one
  for (int64_t rev = 6; rev <= 30; ++rev) {
    reservations.push_back(
        *wal.Reserve(PayloadFor(rev, 64), [&statuses](absl::Status s) { statuses.push_back(s); }));
  }
  for (int64_t rev = 6; rev <= 30; ++rev) {
    wal.Append(reservations[rev - 6], rev, PayloadFor(rev, 64));
    wal.Notify();
  }
  ExpectFailedState(wal, 6, absl::StatusCode::kDataLoss, "Input/output error", "fdatasync of");
  // Later syncs would succeed: the log must not retry and then claim durability.
  EXPECT_EQ(wal.Close(), wal.failed_status());
  ASSERT_EQ(statuses.size(), 25u);
  for (const absl::Status& s : statuses) EXPECT_EQ(s, wal.failed_status());
  EXPECT_EQ(wal.durable_lsn(), 5u);
  EXPECT_EQ(wal.stats().durable_revision, 5);
}

TEST(WalFailure, ReserveBlockedOnAFullBufferFailsWhenTheLogFails) {
  ScratchDir dir;
  FaultInjectingFileSystem fs(DefaultFileSystem());
  testing::OpenedWal opened = OpenWal({.dir = dir.path(), .file_system = &fs, .buffer_bytes = 4096});
  Wal& wal = *opened.wal;
  const std::string payload(1000, 'f');
  // Hold all the space so the next Reserve must wait, then make the log fail.
  std::vector<WalReservation> held;
  for (int i = 0; i < 4; ++i) held.push_back(*wal.Reserve(payload));
  absl::Status blocked_status;
  std::thread blocked([&] { blocked_status = wal.Reserve(payload).status(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  fs.FailNthWrite(1, EIO);
  wal.Append(held[0], 1, payload);
  wal.Notify();
  blocked.join();
  EXPECT_EQ(blocked_status, wal.failed_status());
  EXPECT_TRUE(wal.failed());
}

TEST(WalFailure, SegmentThatCannotBeCreatedFailsTheLog) {
  ScratchDir dir;
  FaultInjectingFileSystem fs(DefaultFileSystem());
  testing::OpenedWal opened = OpenWal({.dir = dir.path(), .file_system = &fs, .segment_bytes = 256});
  Wal& wal = *opened.wal;
  WalLsn lsn = 0;
  for (int64_t rev = 1; rev <= 3; ++rev) lsn = AppendOne(wal, rev, PayloadFor(rev, 100));
  ASSERT_TRUE(wal.WaitDurable(lsn).ok());
  fs.FailNthOpenWritable(1, EMFILE);
  lsn = AppendOne(wal, 4, PayloadFor(4, 100));  // the segment is full: record 4 needs a new one
  const absl::Status s = wal.WaitDurable(lsn);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(testing::MessageHas(s, "open of")) << s;
  EXPECT_TRUE(testing::MessageHas(s, "Too many open files")) << s;
  EXPECT_TRUE(wal.failed());
  EXPECT_EQ(wal.durable_lsn(), 3u);
}

}  // namespace
}  // namespace revkv::server
