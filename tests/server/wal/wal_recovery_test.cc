// WAL recovery: torn tails at every byte, corruption in the middle of the log, revision gaps, and the
// relation between the log and the checkpoint revision.
#include <algorithm>
#include <filesystem>
#include <map>
#include <random>

#include "absl/strings/str_cat.h"
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
      // What was cut is kept: the segment as recovery found it, in <segment>.broken.
      ASSERT_FALSE(report.broken_copy.empty());
      EXPECT_EQ(report.broken_copy.rfind(last_segment + ".broken", 0), 0u) << report.broken_copy;
      EXPECT_EQ(testing::ReadWholeFile(report.broken_copy), contents.substr(0, cut));
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
  EXPECT_EQ(opened.report.broken_copy, torn + ".broken");
  EXPECT_EQ(testing::ReadWholeFile(torn + ".broken"), "revkv") << "kept, not deleted";
  EXPECT_EQ(opened.report.next_revision, 11);
  EXPECT_EQ(opened.records.size(), 10u);
  ASSERT_TRUE(opened.wal->WaitDurable(AppendOne(*opened.wal, 11, "eleven")).ok());
}

// Opens the log expecting recovery to refuse it; returns the error.
absl::Status OpenFails(const WalOptions& options, int64_t after_revision = 0) {
  absl::StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(
      options, after_revision, [](int64_t, std::string_view) { return absl::OkStatus(); }, nullptr);
  EXPECT_FALSE(wal.ok()) << "recovery accepted a damaged log";
  return wal.ok() ? absl::OkStatus() : wal.status();
}

// Expects recovery to refuse the damaged log in `dir` as damage at byte `offset` of a segment, and to leave
// every file of it as it was.
void ExpectRefusedAsDamageAt(const WalOptions& options, const std::string& dir, uint64_t offset) {
  const std::map<std::string, std::string> damaged = testing::SnapshotDir(dir);
  const absl::Status status = OpenFails(options);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_TRUE(testing::MessageHas(status, absl::StrCat("offset ", offset))) << status;
  EXPECT_EQ(testing::SnapshotDir(dir), damaged) << "recovery changed the damaged log";
}

// Flips one payload byte of the record `index` of `segment` (a complete record, so only its CRC fails);
// returns that record.
testing::RecordSpan FlipPayloadByte(const std::string& segment, size_t index) {
  std::string contents = testing::ReadWholeFile(segment);
  const std::vector<testing::RecordSpan> spans = testing::ParseSegment(contents);
  EXPECT_LT(index, spans.size());
  const testing::RecordSpan bad = spans[index];
  contents[bad.offset + 16 + 10] ^= 0x20;
  testing::WriteWholeFile(segment, contents);
  return bad;
}

TEST(WalRecovery, CorruptByteInAnEarlierSegmentStopsRecoveryAndChangesNothing) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path(), .fsync_mode = FsyncMode::kNone, .segment_bytes = 2048};
  WriteLog(options, 1, 100);
  const std::vector<std::string> files = SegmentFiles(dir.path());
  ASSERT_GE(files.size(), 4u);
  const std::string victim = files[1];
  const testing::RecordSpan bad =
      FlipPayloadByte(victim, testing::ParseSegment(testing::ReadWholeFile(victim)).size() / 2);
  const std::map<std::string, std::string> damaged = testing::SnapshotDir(dir.path());

  const absl::Status status = OpenFails(options);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_TRUE(testing::MessageHas(status, victim)) << status;
  EXPECT_TRUE(testing::MessageHas(status, absl::StrCat("offset ", bad.offset))) << status;
  EXPECT_TRUE(testing::MessageHas(status, absl::StrCat("revision ", bad.revision))) << status;
  EXPECT_TRUE(testing::MessageHas(status, "CRC")) << status;
  EXPECT_TRUE(testing::MessageHas(status, "--repair-wal")) << status;
  EXPECT_EQ(testing::SnapshotDir(dir.path()), damaged) << "recovery changed the damaged log";
}

TEST(WalRecovery, CorruptRecordFollowedByMoreInTheNewestSegmentStopsRecovery) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  WriteLog(options, 1, 20);
  const std::string segment = SegmentFiles(dir.path()).back();
  const testing::RecordSpan bad = FlipPayloadByte(segment, 9);
  const std::map<std::string, std::string> damaged = testing::SnapshotDir(dir.path());
  const absl::Status status = OpenFails(options);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_TRUE(testing::MessageHas(status, absl::StrCat("offset ", bad.offset))) << status;
  EXPECT_TRUE(testing::MessageHas(status, "revision 10")) << status;
  EXPECT_EQ(testing::SnapshotDir(dir.path()), damaged) << "recovery changed the damaged log";
}

TEST(WalRecovery, CorruptLastRecordWithoutUnwrittenSectorsStopsRecovery) {
  // A complete record whose bytes are all present but wrong is damage, even at the very end: a crash
  // leaves unwritten (zero) sectors, not other bytes.
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  WriteLog(options, 1, 20);
  const std::string segment = SegmentFiles(dir.path()).back();
  FlipPayloadByte(segment, 19);
  const std::map<std::string, std::string> damaged = testing::SnapshotDir(dir.path());
  const absl::Status status = OpenFails(options);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_TRUE(testing::MessageHas(status, "revision 20")) << status;
  EXPECT_EQ(testing::SnapshotDir(dir.path()), damaged);
}

TEST(WalRecovery, AZeroByteInASectorTheNextRecordContinuesIsNotAnUnwrittenSector) {
  // A record whose last payload byte is 0x00 and falls alone into a sector that the next record, which
  // passes its CRC, continues: that sector was written, so the zero byte is data, not an unwritten
  // sector. A byte flipped elsewhere in the record is damage, not a torn tail to cut.
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  WriteLog(options, 1, 10, 100);
  const std::string segment = SegmentFiles(dir.path()).back();
  const uint64_t end = testing::ReadWholeFile(segment).size();
  // Revision 11 ends one byte into the sector after the one it starts in, or the one after that.
  const uint64_t record_end = (end / 512 + 2) * 512 + 1;
  std::string payload = PayloadFor(11, record_end - end - 16);
  payload.back() = '\0';
  {
    testing::OpenedWal opened = OpenWal(options, 10);
    ASSERT_NE(opened.wal, nullptr);
    AppendOne(*opened.wal, 11, payload);
    ASSERT_TRUE(opened.wal->WaitDurable(AppendOne(*opened.wal, 12, PayloadFor(12, 100))).ok());
    ASSERT_TRUE(opened.wal->Close().ok());
  }
  const testing::RecordSpan bad = FlipPayloadByte(segment, 10);
  ASSERT_EQ(bad.revision, 11);
  ASSERT_EQ(bad.offset + bad.size, record_end);
  ASSERT_EQ(testing::ReadWholeFile(segment)[record_end - 1], '\0');
  const std::map<std::string, std::string> damaged = testing::SnapshotDir(dir.path());
  const absl::Status status = OpenFails(options);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_TRUE(testing::MessageHas(status, segment)) << status;
  EXPECT_TRUE(testing::MessageHas(status, absl::StrCat("offset ", bad.offset))) << status;
  EXPECT_TRUE(testing::MessageHas(status, "revision 11")) << status;
  EXPECT_EQ(testing::SnapshotDir(dir.path()), damaged) << "recovery cut a damaged record as a torn tail";
}

TEST(WalRecovery, LastRecordWithAnUnwrittenSectorIsATornTail) {
  // The file reached its full length but a sector of the last record never did (the size was written
  // back before the data, or the space was preallocated): a torn tail, cut.
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  WriteLog(options, 1, 10, 100);
  WriteLog(options, 11, 11, 2000);
  const std::string segment = SegmentFiles(dir.path()).back();
  std::string contents = testing::ReadWholeFile(segment);
  const testing::RecordSpan last = testing::ParseSegment(contents).back();
  ASSERT_EQ(last.revision, 11);
  const uint64_t sector = (last.offset / 512 + 2) * 512;  // a whole sector inside the record
  ASSERT_LE(sector + 512, last.offset + last.size);
  std::fill(contents.begin() + static_cast<std::ptrdiff_t>(sector),
            contents.begin() + static_cast<std::ptrdiff_t>(sector + 512), '\0');
  testing::WriteWholeFile(segment, contents);
  testing::OpenedWal opened = OpenWal(options);
  ASSERT_NE(opened.wal, nullptr);
  ASSERT_TRUE(opened.report.corruption.has_value());
  EXPECT_EQ(opened.report.corruption->offset, last.offset);
  EXPECT_EQ(opened.report.next_revision, 11);
  EXPECT_EQ(opened.records.size(), 10u);
  EXPECT_EQ(std::filesystem::file_size(segment), last.offset);
}

TEST(WalRecovery, TornRecordFollowedByRecordsWrittenOutOfOrderIsATornTail) {
  // A power loss may keep later unsynced pages and lose earlier ones: a record with an unwritten sector
  // followed by complete records. None of them was synced, so the tail is cut at the torn record.
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  WriteLog(options, 1, 10, 100);
  WriteLog(options, 11, 14, 1500);
  const std::string segment = SegmentFiles(dir.path()).back();
  std::string contents = testing::ReadWholeFile(segment);
  const std::vector<testing::RecordSpan> spans = testing::ParseSegment(contents);
  const testing::RecordSpan torn = spans[10];
  ASSERT_EQ(torn.revision, 11);
  const uint64_t sector = (torn.offset / 512 + 1) * 512;
  std::fill(contents.begin() + static_cast<std::ptrdiff_t>(sector),
            contents.begin() + static_cast<std::ptrdiff_t>(sector + 512), '\0');
  testing::WriteWholeFile(segment, contents);
  testing::OpenedWal opened = OpenWal(options);
  ASSERT_NE(opened.wal, nullptr);
  ASSERT_TRUE(opened.report.corruption.has_value());
  EXPECT_EQ(opened.report.corruption->offset, torn.offset);
  EXPECT_EQ(opened.report.next_revision, 11);
  EXPECT_EQ(std::filesystem::file_size(segment), torn.offset);
}

TEST(WalRecovery, DamagedLengthRunningPastTheEndIsNotATornTailWhenRecordsFollow) {
  // A damaged length field makes a record in the middle of the newest segment look cut short; the
  // complete records after it show that it is damage, not a crash.
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  WriteLog(options, 1, 20);
  const std::string segment = SegmentFiles(dir.path()).back();
  std::string contents = testing::ReadWholeFile(segment);
  const testing::RecordSpan bad = testing::ParseSegment(contents)[4];
  contents[bad.offset + 3] = 0x01;  // length + 16 MiB: past the end of the file
  testing::WriteWholeFile(segment, contents);
  ExpectRefusedAsDamageAt(options, dir.path(), bad.offset);
}

TEST(WalRecovery, DamagedLengthRunningPastTheEndIsNotATornTailWhenOnlyDamagedRecordsFollow) {
  // The second-to-last record's length is damaged and the last record is damaged too: no intact record
  // follows, but the damaged record itself is complete (a prefix of what follows passes its CRC), and a
  // crash does not rewrite a length. Both records were synced; cutting them would lose them silently.
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  WriteLog(options, 1, 20);
  const std::string segment = SegmentFiles(dir.path()).back();
  std::string contents = testing::ReadWholeFile(segment);
  const std::vector<testing::RecordSpan> records = testing::ParseSegment(contents);
  const testing::RecordSpan bad = records[records.size() - 2];
  contents[bad.offset + 3] = 0x26;               // length + 608 MiB: past the end of the file
  contents[records.back().offset + 40] ^= 0x10;  // and the last record's payload
  testing::WriteWholeFile(segment, contents);
  ExpectRefusedAsDamageAt(options, dir.path(), bad.offset);
}

TEST(WalRecovery, ALengthNoRecordCanHaveIsNotATornTailEvenWhenNothingAfterItIsIntact) {
  // The second-to-last record's length field says more than any record can hold (above
  // kMaxPayloadBytes), its payload is damaged too (so no prefix of what follows completes it) and so is
  // the last record: nothing intact follows. A crash leaves header bytes as written or zero, and no
  // writer wrote that length: it is damage, and both records were synced. (Cut as a torn tail, they
  // were lost silently: EngineBitRot found it with REVKV_TEST_SEED=4015310976.)
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  WriteLog(options, 1, 20);
  const std::string segment = SegmentFiles(dir.path()).back();
  std::string contents = testing::ReadWholeFile(segment);
  const std::vector<testing::RecordSpan> records = testing::ParseSegment(contents);
  const testing::RecordSpan bad = records[records.size() - 2];
  contents[bad.offset + 3] = 0x66;               // length + 1.6 GiB: more than kMaxPayloadBytes
  contents[bad.offset + 26] ^= 0x5a;             // its payload
  contents[records.back().offset + 40] ^= 0x10;  // and the last record's payload
  testing::WriteWholeFile(segment, contents);
  ExpectRefusedAsDamageAt(options, dir.path(), bad.offset);
}

TEST(WalRecovery, RecordHeaderNamingAnotherRevisionPastTheEndIsNotATornTail) {
  // A crash leaves a header's bytes as written or zero; one naming another revision, with a length past
  // the end, is damage even in the last record.
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  WriteLog(options, 1, 20);
  const std::string segment = SegmentFiles(dir.path()).back();
  std::string contents = testing::ReadWholeFile(segment);
  const testing::RecordSpan last = testing::ParseSegment(contents).back();
  contents[last.offset + 2] = 0x40;   // length past the end
  contents[last.offset + 9] ^= 0x01;  // and the revision
  testing::WriteWholeFile(segment, contents);
  ExpectRefusedAsDamageAt(options, dir.path(), last.offset);
}

TEST(WalRecovery, DamagedSegmentHeaderStopsRecovery) {
  for (const bool newest : {false, true}) {
    SCOPED_TRACE(newest ? "newest segment" : "earlier segment");
    ScratchDir dir;
    const WalOptions options{.dir = dir.path(), .segment_bytes = 600};
    WriteLog(options, 1, 30);
    const std::vector<std::string> files = SegmentFiles(dir.path());
    ASSERT_GE(files.size(), 3u);
    const std::string victim = newest ? files.back() : files[1];
    std::string contents = testing::ReadWholeFile(victim);
    contents[2] ^= 0x01;  // the magic
    testing::WriteWholeFile(victim, contents);
    const std::map<std::string, std::string> damaged = testing::SnapshotDir(dir.path());
    const absl::Status status = OpenFails(options);
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
    EXPECT_TRUE(testing::MessageHas(status, victim)) << status;
    EXPECT_EQ(testing::SnapshotDir(dir.path()), damaged);
  }
}

TEST(WalRecovery, DamagedRecordTheCheckpointCoversDoesNotCostTheRecordsAfterIt) {
  // Checkpoint at 40, one bad byte in record 10 of the same segment: records 41..50 are replayed.
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  WriteLog(options, 1, 50);
  ASSERT_EQ(SegmentFiles(dir.path()).size(), 1u);
  const std::string segment = SegmentFiles(dir.path()).back();
  FlipPayloadByte(segment, 9);
  const std::string damaged = testing::ReadWholeFile(segment);
  testing::OpenedWal opened = OpenWal(options, /*after_revision=*/40);
  ASSERT_NE(opened.wal, nullptr);
  ASSERT_EQ(opened.records.size(), 10u);
  EXPECT_EQ(opened.records.front().first, 41);
  EXPECT_EQ(opened.records.back().first, 50);
  EXPECT_EQ(opened.report.next_revision, 51);
  EXPECT_FALSE(opened.report.corruption.has_value());
  EXPECT_EQ(opened.report.covered_records_skipped, 1u);
  EXPECT_EQ(testing::ReadWholeFile(segment), damaged) << "a covered record is skipped, not cut";
}

TEST(WalRecovery, DamagedFramingOfACoveredRecordIsSkippedByFindingTheNextRecord) {
  // The framing of covered record 10 is broken (its length runs elsewhere): recovery finds record 41,
  // the first one it needs, by its CRC and revision.
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  WriteLog(options, 1, 50);
  const std::string segment = SegmentFiles(dir.path()).back();
  std::string contents = testing::ReadWholeFile(segment);
  const testing::RecordSpan bad = testing::ParseSegment(contents)[9];
  contents[bad.offset] ^= 0x07;
  testing::WriteWholeFile(segment, contents);
  testing::OpenedWal opened = OpenWal(options, /*after_revision=*/40);
  ASSERT_NE(opened.wal, nullptr);
  ASSERT_EQ(opened.records.size(), 10u);
  EXPECT_EQ(opened.records.front().first, 41);
  EXPECT_EQ(opened.records.front().second, PayloadFor(41, 100));
  // Without the checkpoint the same damage is an error.
  const absl::Status status = OpenFails(options, /*after_revision=*/0);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
}

TEST(WalRecovery, RandomCorruptionEitherFailsOrRecoversEverything) {
  ScratchDir dir;
  const WalOptions options{
      .dir = dir.path(), .fsync_mode = FsyncMode::kNone, .segment_bytes = 1500, .buffer_bytes = 64 << 10};
  WriteLog(options, 1, 60, 70);
  const std::map<std::string, std::string> pristine = testing::SnapshotDir(dir.path());
  std::map<int64_t, std::string> expected;
  for (int64_t rev = 1; rev <= 60; ++rev) expected[rev] = PayloadFor(rev, 70);
  const uint64_t seed = testing::TestSeed();
  std::mt19937_64 rng(seed);
  int failed = 0;
  for (int round = 0; round < 60; ++round) {
    testing::RestoreDir(dir.path(), pristine);
    const std::vector<std::string> files = SegmentFiles(dir.path());
    const std::string& victim = files[rng() % files.size()];
    std::string contents = testing::ReadWholeFile(victim);
    size_t at = rng() % contents.size();
    if (at >= 8 && at < 12) at += 4;  // not the format version: that is an error, not damage
    contents[at] = static_cast<char>(contents[at] ^ (1 + rng() % 255));
    testing::WriteWholeFile(victim, contents);
    SCOPED_TRACE(::testing::Message() << "round " << round << ": byte " << at << " of " << victim
                                      << " (REVKV_TEST_SEED=" << seed << ")");
    const std::map<std::string, std::string> damaged = testing::SnapshotDir(dir.path());
    WalRecoveryReport report;
    std::vector<std::pair<int64_t, std::string>> records;
    absl::StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(
        options, 0,
        [&](int64_t revision, std::string_view payload) {
          records.emplace_back(revision, std::string(payload));
          return absl::OkStatus();
        },
        &report);
    if (!wal.ok()) {
      ++failed;
      EXPECT_EQ(wal.status().code(), absl::StatusCode::kDataLoss) << wal.status();
      EXPECT_TRUE(testing::MessageHas(wal.status(), victim)) << wal.status();
      EXPECT_EQ(testing::SnapshotDir(dir.path()), damaged) << "a refused log was changed";
      continue;
    }
    // A flip is never a torn tail (a crash leaves zeros, not other bytes), so nothing may be missing.
    EXPECT_FALSE(report.corruption.has_value()) << report.ToString();
    ASSERT_EQ(records.size(), expected.size()) << report.ToString();
    for (size_t i = 0; i < records.size(); ++i) {
      ASSERT_EQ(records[i].first, static_cast<int64_t>(i + 1));
      ASSERT_EQ(records[i].second, expected[records[i].first]);
    }
  }
  EXPECT_GT(failed, 0) << "no flipped byte was noticed";
}

TEST(WalRecovery, NonConsecutiveRevisionOnDiskStopsRecovery) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  WriteLog(options, 1, 5);
  const std::string segment = SegmentFiles(dir.path()).back();
  const uint64_t good_end = std::filesystem::file_size(segment);
  // A well-formed record (valid CRC) whose revision skips 6, then a valid 8.
  std::string contents = testing::ReadWholeFile(segment);
  contents += testing::EncodeRecord(7, "seven") + testing::EncodeRecord(8, "eight");
  testing::WriteWholeFile(segment, contents);

  const absl::Status status = OpenFails(options);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_TRUE(testing::MessageHas(status, absl::StrCat("offset ", good_end))) << status;
  EXPECT_TRUE(testing::MessageHas(status, "revision 7 where revision 6")) << status;
  EXPECT_EQ(testing::ReadWholeFile(segment), contents) << "nothing was cut";
}

TEST(WalRecovery, SegmentNameThatDoesNotContinueTheLogStopsRecovery) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path(), .segment_bytes = 600};
  WriteLog(options, 1, 30);
  std::vector<std::string> files = SegmentFiles(dir.path());
  ASSERT_GE(files.size(), 3u);
  // Drop the second segment: the third no longer continues the first.
  std::filesystem::remove(files[1]);
  const std::map<std::string, std::string> damaged = testing::SnapshotDir(dir.path());
  const absl::Status status = OpenFails(options);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_TRUE(testing::MessageHas(status, files[2])) << status;
  EXPECT_EQ(testing::SnapshotDir(dir.path()), damaged);
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
