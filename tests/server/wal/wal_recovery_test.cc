// WAL recovery: torn tails at every byte, corruption in the middle of the log, revision gaps, and the
// relation between the log and the checkpoint revision.
#include <filesystem>
#include <random>

#include "gtest/gtest.h"
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

// Writes revisions [first, last] and closes the log.
void WriteLog(const WalOptions& options, int64_t first, int64_t last, size_t payload_bytes = 100) {
  testing::OpenedWal opened = OpenWal(options, first - 1);
  ASSERT_NE(opened.wal, nullptr);
  ASSERT_EQ(opened.report.next_revision, first);
  WalLsn lsn = 0;
  for (int64_t rev = first; rev <= last; ++rev)
    lsn = AppendOne(*opened.wal, rev, PayloadFor(rev, payload_bytes));
  ASSERT_TRUE(opened.wal->WaitDurable(lsn).ok());
  ASSERT_TRUE(opened.wal->Close().ok());
}

TEST(WalRecovery, TornTailAtEveryByteOfTheLastRecordIsCutAndAppendingContinues) {
  ScratchDir dir;
  const WalOptions options{
      .dir = dir.path(), .fsync_mode = FsyncMode::kNone, .segment_bytes = 2048, .buffer_bytes = 64 << 10};
  constexpr int64_t kLast = 40;
  WriteLog(options, 1, kLast, 90);
  const std::map<std::string, std::string> pristine = testing::SnapshotDir(dir.path());
  const std::string last_segment = SegmentFiles(dir.path()).back();
  const std::string contents = testing::ReadWholeFile(last_segment);
  const std::vector<testing::RecordSpan> spans = testing::ParseSegment(contents);
  ASSERT_GE(spans.size(), 2u);
  const testing::RecordSpan last = spans.back();
  ASSERT_EQ(last.revision, kLast);
  ASSERT_EQ(last.offset + last.size, contents.size());

  for (uint64_t cut = last.offset + 1; cut < last.offset + last.size; ++cut) {
    SCOPED_TRACE(::testing::Message() << "cut at byte " << cut);
    testing::RestoreDir(dir.path(), pristine);
    std::filesystem::resize_file(last_segment, cut);
    {
      testing::OpenedWal opened = OpenWal(options);
      ASSERT_NE(opened.wal, nullptr);
      const WalRecoveryReport& report = opened.report;
      ASSERT_TRUE(report.corruption.has_value());
      EXPECT_EQ(report.corruption->segment, last_segment);
      EXPECT_EQ(report.corruption->offset, last.offset);
      EXPECT_EQ(report.bytes_truncated, cut - last.offset);
      EXPECT_TRUE(report.removed_segments.empty());
      EXPECT_EQ(report.last_revision, kLast - 1);
      EXPECT_EQ(report.next_revision, kLast);
      ASSERT_EQ(opened.records.size(), static_cast<size_t>(kLast - 1));
      EXPECT_EQ(opened.records.back().first, kLast - 1);
      EXPECT_EQ(std::filesystem::file_size(last_segment), last.offset) << "truncated at the record";
      EXPECT_NE(report.ToString().find(last_segment), std::string::npos);
      ASSERT_TRUE(opened.wal->WaitDurable(AppendOne(*opened.wal, kLast, "rewritten")).ok());
      ASSERT_TRUE(opened.wal->Close().ok());
    }
    testing::OpenedWal reopened = OpenWal(options);
    ASSERT_NE(reopened.wal, nullptr);
    EXPECT_FALSE(reopened.report.corruption.has_value());
    ASSERT_EQ(reopened.records.size(), static_cast<size_t>(kLast));
    EXPECT_EQ(reopened.records.back(), std::make_pair(kLast, std::string("rewritten")));
  }

  // A cut exactly at the record boundary is a clean end, not damage.
  testing::RestoreDir(dir.path(), pristine);
  std::filesystem::resize_file(last_segment, last.offset);
  testing::OpenedWal opened = OpenWal(options);
  EXPECT_FALSE(opened.report.corruption.has_value());
  EXPECT_EQ(opened.report.next_revision, kLast);
}

TEST(WalRecovery, TornSegmentHeaderIsRemoved) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  WriteLog(options, 1, 10);
  // A crash right after a rotation created the next segment: only part of its header reached the disk.
  const std::string torn = dir.File(testing::SegmentName(11));
  testing::WriteWholeFile(torn, "revkv");
  testing::OpenedWal opened = OpenWal(options);
  ASSERT_NE(opened.wal, nullptr);
  ASSERT_TRUE(opened.report.corruption.has_value());
  EXPECT_EQ(opened.report.corruption->segment, torn);
  EXPECT_EQ(opened.report.corruption->offset, 0u);
  EXPECT_EQ(opened.report.removed_segments, std::vector<std::string>{torn});
  EXPECT_EQ(opened.report.next_revision, 11);
  EXPECT_EQ(opened.records.size(), 10u);
  ASSERT_TRUE(opened.wal->WaitDurable(AppendOne(*opened.wal, 11, "eleven")).ok());
}

TEST(WalRecovery, CorruptByteInTheMiddleOfAnEarlierSegmentCutsThereAndDeletesLaterSegments) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path(), .fsync_mode = FsyncMode::kNone, .segment_bytes = 2048};
  WriteLog(options, 1, 100);
  const std::vector<std::string> files = SegmentFiles(dir.path());
  ASSERT_GE(files.size(), 4u);
  const std::string victim = files[1];
  std::string contents = testing::ReadWholeFile(victim);
  const std::vector<testing::RecordSpan> spans = testing::ParseSegment(contents);
  ASSERT_GE(spans.size(), 3u);
  const testing::RecordSpan bad = spans[spans.size() / 2];
  contents[bad.offset + 16 + 10] ^= 0x20;  // one payload byte
  testing::WriteWholeFile(victim, contents);

  testing::OpenedWal opened = OpenWal(options);
  ASSERT_NE(opened.wal, nullptr);
  const WalRecoveryReport& report = opened.report;
  ASSERT_TRUE(report.corruption.has_value());
  EXPECT_EQ(report.corruption->segment, victim);
  EXPECT_EQ(report.corruption->offset, bad.offset);
  EXPECT_NE(report.corruption->reason.find("CRC"), std::string::npos) << report.corruption->reason;
  EXPECT_EQ(report.removed_segments, std::vector<std::string>(files.begin() + 2, files.end()));
  EXPECT_EQ(report.last_revision, bad.revision - 1);
  EXPECT_EQ(report.next_revision, bad.revision);
  EXPECT_EQ(SegmentFiles(dir.path()), std::vector<std::string>(files.begin(), files.begin() + 2));
  EXPECT_EQ(std::filesystem::file_size(victim), bad.offset);
  ASSERT_EQ(opened.records.size(), static_cast<size_t>(bad.revision - 1));

  // Appending continues right after the last good record, in the truncated segment.
  WalLsn lsn = 0;
  for (int64_t rev = bad.revision; rev < bad.revision + 5; ++rev) lsn = AppendOne(*opened.wal, rev, "new");
  ASSERT_TRUE(opened.wal->WaitDurable(lsn).ok());
  ASSERT_TRUE(opened.wal->Close().ok());
  opened.wal.reset();
  testing::OpenedWal reopened = OpenWal(options);
  EXPECT_FALSE(reopened.report.corruption.has_value());
  ASSERT_EQ(reopened.records.size(), static_cast<size_t>(bad.revision + 4));
  for (size_t i = 0; i < reopened.records.size(); ++i)
    ASSERT_EQ(reopened.records[i].first, static_cast<int64_t>(i + 1));
}

TEST(WalRecovery, RandomCorruptionNeverYieldsAGapOrADamagedRecord) {
  ScratchDir dir;
  const WalOptions options{
      .dir = dir.path(), .fsync_mode = FsyncMode::kNone, .segment_bytes = 1500, .buffer_bytes = 64 << 10};
  WriteLog(options, 1, 60, 70);
  const std::map<std::string, std::string> pristine = testing::SnapshotDir(dir.path());
  std::map<int64_t, std::string> expected;
  for (int64_t rev = 1; rev <= 60; ++rev) expected[rev] = PayloadFor(rev, 70);
  const uint64_t seed = testing::TestSeed();
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 60; ++round) {
    testing::RestoreDir(dir.path(), pristine);
    const std::vector<std::string> files = SegmentFiles(dir.path());
    const std::string& victim = files[rng() % files.size()];
    std::string contents = testing::ReadWholeFile(victim);
    size_t at = rng() % contents.size();
    if (at >= 8 && at < 12) at += 4;  // not the format version: that is an error, not damage
    contents[at] = static_cast<char>(contents[at] ^ (1 + rng() % 255));
    testing::WriteWholeFile(victim, contents);
    SCOPED_TRACE(::testing::Message() << "round " << round << ": byte " << at << " of " << victim);
    testing::OpenedWal opened = OpenWal(options);
    ASSERT_NE(opened.wal, nullptr);
    EXPECT_TRUE(opened.report.corruption.has_value());
    for (size_t i = 0; i < opened.records.size(); ++i) {
      ASSERT_EQ(opened.records[i].first, static_cast<int64_t>(i + 1));
      ASSERT_EQ(opened.records[i].second, expected[opened.records[i].first]);
    }
    EXPECT_EQ(opened.report.next_revision, static_cast<int64_t>(opened.records.size() + 1));
  }
}

TEST(WalRecovery, NonConsecutiveRevisionOnDiskEndsTheLog) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  WriteLog(options, 1, 5);
  const std::string segment = SegmentFiles(dir.path()).back();
  const uint64_t good_end = std::filesystem::file_size(segment);
  // A well-formed record (valid CRC) whose revision skips 6, then a valid 8.
  std::string contents = testing::ReadWholeFile(segment);
  contents += testing::EncodeRecord(7, "seven") + testing::EncodeRecord(8, "eight");
  testing::WriteWholeFile(segment, contents);

  testing::OpenedWal opened = OpenWal(options);
  ASSERT_NE(opened.wal, nullptr);
  ASSERT_TRUE(opened.report.corruption.has_value());
  EXPECT_EQ(opened.report.corruption->offset, good_end);
  EXPECT_NE(opened.report.corruption->reason.find("revision 7 where revision 6"), std::string::npos)
      << opened.report.corruption->reason;
  EXPECT_EQ(opened.report.next_revision, 6);
  EXPECT_EQ(opened.records.size(), 5u);
}

TEST(WalRecovery, SegmentNameThatDoesNotContinueTheLogEndsIt) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path(), .segment_bytes = 600};
  WriteLog(options, 1, 30);
  std::vector<std::string> files = SegmentFiles(dir.path());
  ASSERT_GE(files.size(), 3u);
  // Drop the second segment: the third no longer continues the first.
  std::filesystem::remove(files[1]);
  testing::OpenedWal opened = OpenWal(options);
  ASSERT_NE(opened.wal, nullptr);
  ASSERT_TRUE(opened.report.corruption.has_value());
  EXPECT_EQ(opened.report.corruption->segment, files[2]);
  EXPECT_EQ(opened.report.corruption->offset, 0u);
  const int64_t first_missing = testing::ParseSegment(testing::ReadWholeFile(files[0])).back().revision + 1;
  EXPECT_EQ(opened.report.next_revision, first_missing);
  EXPECT_EQ(SegmentFiles(dir.path()), std::vector<std::string>{files[0]});
}

TEST(WalRecovery, MissingRecordsAfterTheCheckpointAreDataLoss) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path(), .segment_bytes = 600};
  WriteLog(options, 1, 30);
  const std::vector<std::string> files = SegmentFiles(dir.path());
  std::filesystem::remove(files[0]);
  absl::StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(
      options, /*after_revision=*/0, [](int64_t, std::string_view) { return absl::OkStatus(); }, nullptr);
  EXPECT_EQ(wal.status().code(), absl::StatusCode::kDataLoss) << wal.status();
  EXPECT_TRUE(testing::MessageHas(wal.status(), "missing")) << wal.status();
  // From a checkpoint that covers the removed segment, the rest of the log is complete.
  const int64_t second_first = testing::ParseSegment(testing::ReadWholeFile(files[1])).front().revision;
  testing::OpenedWal opened = OpenWal(options, second_first - 1);
  ASSERT_NE(opened.wal, nullptr);
  EXPECT_EQ(opened.records.size(), static_cast<size_t>(30 - second_first + 1));
}

TEST(WalRecovery, SegmentsBeforeTheCheckpointAreNotRead) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path(), .segment_bytes = 600};
  WriteLog(options, 1, 30);
  const std::vector<std::string> files = SegmentFiles(dir.path());
  // Damage the first segment: a recovery from a checkpoint past it never looks at it.
  testing::WriteWholeFile(files[0], "garbage");
  const int64_t third_first = testing::ParseSegment(testing::ReadWholeFile(files[2])).front().revision;
  testing::OpenedWal opened = OpenWal(options, third_first - 1);
  ASSERT_NE(opened.wal, nullptr);
  EXPECT_FALSE(opened.report.corruption.has_value());
  EXPECT_EQ(opened.records.front().first, third_first);
  EXPECT_EQ(opened.report.next_revision, 31);
}

TEST(WalRecovery, LogEndingBeforeTheCheckpointContinuesAfterTheCheckpoint) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  WriteLog(options, 1, 10);
  // E.g. interval mode: the checkpoint at 20 was synced, the log's records 11..20 were lost in a crash.
  {
    testing::OpenedWal opened = OpenWal(options, /*after_revision=*/20);
    ASSERT_NE(opened.wal, nullptr);
    EXPECT_TRUE(opened.records.empty());
    EXPECT_EQ(opened.report.next_revision, 21);
    EXPECT_EQ(opened.report.segment, dir.File(testing::SegmentName(21)));
    ASSERT_TRUE(opened.wal->WaitDurable(AppendOne(*opened.wal, 21, "twenty-one")).ok());
    // The old segment is wholly covered by the checkpoint.
    absl::StatusOr<std::vector<std::string>> removed = opened.wal->RemoveSegmentsUpTo(20);
    ASSERT_TRUE(removed.ok());
    EXPECT_EQ(removed->size(), 1u);
  }
  testing::OpenedWal reopened = OpenWal(options, 20);
  ASSERT_NE(reopened.wal, nullptr);
  ASSERT_EQ(reopened.records.size(), 1u);
  EXPECT_EQ(reopened.records[0].first, 21);
}

TEST(WalRecovery, UnknownFormatVersionIsAnErrorNotDamage) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  WriteLog(options, 1, 3);
  const std::string segment = SegmentFiles(dir.path()).back();
  std::string contents = testing::ReadWholeFile(segment);
  contents[8] = 9;  // format version 9
  testing::WriteWholeFile(segment, contents);
  absl::StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(
      options, 0, [](int64_t, std::string_view) { return absl::OkStatus(); }, nullptr);
  EXPECT_EQ(wal.status().code(), absl::StatusCode::kFailedPrecondition) << wal.status();
  EXPECT_EQ(testing::ReadWholeFile(segment), contents) << "nothing was cut";
}

TEST(WalRecovery, VisitorErrorStopsOpen) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  WriteLog(options, 1, 3);
  absl::StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(
      options, 0,
      [](int64_t revision, std::string_view) {
        return revision == 2 ? absl::InternalError("store refused") : absl::OkStatus();
      },
      nullptr);
  EXPECT_EQ(wal.status().message(), "store refused");
}

}  // namespace
}  // namespace revkv::server
