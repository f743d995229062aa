// Recovery past damage the checkpoint covers (the search for the record after a damaged covered record:
// exact revision, planted records, its cost on a full segment; a damaged last record the checkpoint
// holds), and the zero-sector rule of a record whose length runs past the end of the file.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/wal/wal.h"
#include "tests/server/wal/test_util.h"
#include "tests/server/wal/wal_test_helpers.h"

namespace revkv::server {
namespace {

using testing::EncodeRecord;
using testing::OpenWal;
using testing::ParseSegment;
using testing::PayloadFor;
using testing::ReadWholeFile;
using testing::RecordSpan;
using testing::ScratchDir;
using testing::SegmentFiles;
using testing::SegmentName;
using testing::WriteWholeFile;

constexpr char kSegmentHeader[] = "revkvWAL\x01\x00\x00\x00\x00\x00\x00\x00";

// A segment holding `records` (revision, payload), starting at the first one's revision.
std::string SegmentWith(const std::vector<std::pair<int64_t, std::string>>& records) {
  std::string contents(kSegmentHeader, 16);
  for (const auto& [revision, payload] : records) contents += EncodeRecord(revision, payload);
  return contents;
}

// Opens expecting a refusal; returns the status.
absl::Status OpenFails(const WalOptions& options, int64_t after_revision, int64_t durable_through = 0) {
  absl::StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(
      options, after_revision, [](int64_t, std::string_view) { return absl::OkStatus(); }, nullptr,
      durable_through);
  EXPECT_FALSE(wal.ok()) << "recovery accepted a damaged log";
  return wal.ok() ? absl::OkStatus() : wal.status();
}

// Records 1..50 of 100-byte payloads, record `host`'s payload replaced by `host_payload`.
std::vector<std::pair<int64_t, std::string>> LogWithHost(int64_t host, const std::string& host_payload) {
  std::vector<std::pair<int64_t, std::string>> records;
  for (int64_t rev = 1; rev <= 50; ++rev)
    records.emplace_back(rev, rev == host ? host_payload : PayloadFor(rev, 100));
  return records;
}

void ExpectRealRecords41To50(const testing::OpenedWal& opened) {
  ASSERT_EQ(opened.records.size(), 10u);
  for (size_t i = 0; i < opened.records.size(); ++i) {
    EXPECT_EQ(opened.records[i].first, 41 + static_cast<int64_t>(i));
    EXPECT_EQ(opened.records[i].second, PayloadFor(41 + static_cast<int64_t>(i), 100))
        << "a planted record was replayed";
  }
  EXPECT_EQ(opened.report.next_revision, 51);
  EXPECT_FALSE(opened.report.corruption.has_value());
}

// The value of covered record 10 holds a well-formed record of revision 41 (the first one the checkpoint
// at 40 needs). Record 10's CRC is damaged: the search must take the record that really follows record 10
// (revision 11), never the one planted inside its value. (Before, any record with a revision in
// (10, 41] was taken: the planted 41 was replayed in place of the real one.)
TEST(WalCoveredDamage, ARecordPlantedInACoveredValueIsNotTakenForTheNextRecord) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  const std::string planted = EncodeRecord(41, "planted value of 41");
  const std::string path = dir.path() + "/" + SegmentName(1);
  std::string contents = SegmentWith(LogWithHost(10, "prefix " + planted + " suffix"));
  const RecordSpan host = ParseSegment(contents)[9];
  ASSERT_EQ(host.revision, 10);
  contents[host.offset + 4] ^= 0x01;  // record 10's CRC
  WriteWholeFile(path, contents);
  testing::OpenedWal opened = OpenWal(options, /*after_revision=*/40);
  ASSERT_NE(opened.wal, nullptr);
  ExpectRealRecords41To50(opened);
  EXPECT_EQ(opened.report.covered_records_skipped, 1u);
  ASSERT_TRUE(opened.report.covered_damage.has_value());
  EXPECT_EQ(opened.report.covered_damage->offset, host.offset);
}

// The planted record ends the damaged record's value, right before the real record 41, and the damaged
// record is 40 with a damaged length (so the search cannot start where its length says): the planted
// 41 passes its CRC but is followed by a record of 41, not 42, so it is not the log's 41. (Before, the
// planted 41 was replayed and recovery then refused the real 41 as out of sequence.)
TEST(WalCoveredDamage, APlantedRecordNotFollowedByTheNextRevisionIsRejected) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  const std::string planted = EncodeRecord(41, "planted value of 41");
  const std::string path = dir.path() + "/" + SegmentName(1);
  std::string contents = SegmentWith(LogWithHost(40, "prefix " + planted));
  const RecordSpan host = ParseSegment(contents)[39];
  ASSERT_EQ(host.revision, 40);
  contents[host.offset] ^= 0x07;  // record 40's length
  WriteWholeFile(path, contents);
  testing::OpenedWal opened = OpenWal(options, /*after_revision=*/40);
  ASSERT_NE(opened.wal, nullptr);
  ExpectRealRecords41To50(opened);
}

// Two damaged covered records in a row (10's length, 11's payload): no record 11 passes its CRC, so
// the search takes record 12 (followed by 13), and the records the checkpoint does not cover come back
// whole. (Before, only the record of exactly the next revision was looked for: the log was refused, and
// the repair then moved records 41..50 aside — covered damage decided the fate of uncovered records.)
TEST(WalCoveredDamage, TwoDamagedCoveredRecordsInARowArePassedOver) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  const std::string path = dir.path() + "/" + SegmentName(1);
  std::string contents = SegmentWith(LogWithHost(0, ""));
  const std::vector<RecordSpan> spans = ParseSegment(contents);
  contents[spans[9].offset] ^= 0x07;             // record 10's length
  contents[spans[10].offset + 16 + 20] ^= 0x20;  // record 11's payload
  WriteWholeFile(path, contents);
  testing::OpenedWal opened = OpenWal(options, /*after_revision=*/40);
  ASSERT_NE(opened.wal, nullptr) << "the checkpoint covers both damaged records";
  ExpectRealRecords41To50(opened);
  EXPECT_EQ(opened.report.covered_records_skipped, 2u);
  EXPECT_EQ(ReadWholeFile(path), contents);
}

// The search takes the nearest revision it can find: record 10's length damaged and its value holding a
// well-formed pair of records 12 and 13 — the real record 11 (followed by the real 12) is taken, not the
// planted 12, which comes first in the file.
TEST(WalCoveredDamage, TheRealNextRecordIsPreferredToAPlantedLaterOne) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  const std::string planted = EncodeRecord(12, "planted 12") + EncodeRecord(13, "planted 13");
  const std::string path = dir.path() + "/" + SegmentName(1);
  std::string contents = SegmentWith(LogWithHost(10, "prefix " + planted + " suffix"));
  const RecordSpan host = ParseSegment(contents)[9];
  contents[host.offset] ^= 0x07;  // record 10's length
  WriteWholeFile(path, contents);
  testing::OpenedWal opened = OpenWal(options, /*after_revision=*/11);
  ASSERT_NE(opened.wal, nullptr);
  ASSERT_EQ(opened.records.size(), 39u);
  EXPECT_EQ(opened.records.front().first, 12);
  EXPECT_EQ(opened.records.front().second, PayloadFor(12, 100)) << "the planted 12 was replayed";
  EXPECT_EQ(opened.report.covered_records_skipped, 1u);
}

// More damaged covered records in a row than the search passes over (17): refused, nothing changed.
TEST(WalCoveredDamage, ARunOfDamagedCoveredRecordsLongerThanTheBoundIsRefused) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  const std::string path = dir.path() + "/" + SegmentName(1);
  std::string contents = SegmentWith(LogWithHost(0, ""));
  const std::vector<RecordSpan> spans = ParseSegment(contents);
  contents[spans[9].offset] ^= 0x07;  // record 10's length
  for (size_t i = 10; i < 26; ++i) contents[spans[i].offset + 16 + 20] ^= 0x20;  // records 11..26
  WriteWholeFile(path, contents);
  const absl::Status status = OpenFails(options, /*after_revision=*/40);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_EQ(ReadWholeFile(path), contents);
}

// What the search costs on a full 64 MiB segment with the damage at its start (record 1's length, so
// the length cannot say where record 2 is; every record up to the last is covered): found at once;
// records 2..17 damaged too (nothing to find: sixteen passes over the whole segment, then refused); and values
// crafted to be full of headers naming revision 2 with huge lengths (every one a candidate whose CRC
// would cover a quarter of the segment; before, each was checksummed). Each is timed and printed.
TEST(WalCoveredDamage, TheSearchOnAFull64MiBSegmentIsBounded) {
#if defined(REVKV_SANITIZER)
  // A figure of the search's cost: under ThreadSanitizer the 64 MiB scans take many minutes and say
  // nothing about the code. The search's correctness is the other WalCoveredDamage tests, which run here.
  GTEST_SKIP() << "a cost figure: measured in the main build only";
#endif
  ScratchDir dir;
  const WalOptions options{.dir = dir.path(), .segment_bytes = uint64_t{64} << 20};
  const std::string path = dir.path() + "/" + SegmentName(1);
  constexpr size_t kPayload = 4096;
  // Records until the segment holds 64 MiB; with `crafted`, record 1's value is 32 MiB of 16-byte
  // headers naming revision 2 with a 16 MiB length (each fits the segment and would need a 16 MiB CRC).
  int64_t last = 0;
  auto build = [&](bool crafted) {
    std::string contents(kSegmentHeader, 16);
    contents.reserve((uint64_t{64} << 20) + 4096);
    std::string fake(16, '\0');
    const uint32_t length = 16u << 20;
    const int64_t two = 2;
    std::memcpy(fake.data(), &length, 4);
    std::memcpy(fake.data() + 8, &two, 8);
    for (last = 1; contents.size() < (uint64_t{64} << 20); ++last) {
      std::string payload;
      if (crafted && last == 1) {
        payload.reserve(uint64_t{32} << 20);
        while (payload.size() < (uint64_t{32} << 20)) payload += fake;
      } else {
        payload = PayloadFor(last, kPayload);
      }
      contents += EncodeRecord(last, payload);
    }
    --last;
    return contents;
  };
  struct Case {
    const char* name;
    bool crafted;
    bool damage_record_1;
    int damaged_after_1;  // records 2..1 + damaged_after_1 damaged too
    bool opens;
  };
  for (const Case& c : {Case{"no damage (for comparison)", false, false, 0, true},
                        Case{"next record found", false, true, 0, true},
                        Case{"record 2 damaged too (record 3 found)", false, true, 1, true},
                        Case{"nothing to find (records 2..17 damaged too)", false, true, 16, false},
                        Case{"values full of candidate headers", true, true, 0, true}}) {
    SCOPED_TRACE(c.name);
    std::string contents = build(c.crafted);
    ASSERT_GE(contents.size(), uint64_t{63} << 20);
    const std::vector<RecordSpan> spans = ParseSegment(contents);
    if (c.damage_record_1) contents[spans[0].offset] ^= 0x07;  // record 1's length
    for (int i = 1; i <= c.damaged_after_1; ++i) contents[spans[i].offset + 16 + 100] ^= 0x20;
    WriteWholeFile(path, contents);
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(
        options, last, [](int64_t, std::string_view) { return absl::OkStatus(); }, nullptr);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("covered-damage search, 64 MiB segment, %s: %.3f s (%s)\n", c.name, seconds,
                wal.ok() ? "opened" : "refused");
    EXPECT_EQ(wal.ok(), c.opens) << wal.status();
#if !defined(REVKV_SANITIZER)
    EXPECT_LT(seconds, 10.0);  // a sanitizer build only prints it
#endif
    if (wal.ok()) {
      ASSERT_TRUE((*wal)->Close().ok());
    }
    std::filesystem::remove_all(dir.path());
    std::filesystem::create_directories(dir.path());
  }
}

// An idle log whose last record is R, a checkpoint at R, and R's bytes damaged: the checkpoint holds
// everything R held and nothing follows R, so recovery starts with nothing lost, names the damage in its
// report, appends in a new segment and leaves the damaged one as it is. (Before, it refused the log.)
TEST(WalCoveredDamage, ADamagedLastRecordTheCheckpointHoldsCostsNothing) {
  for (const bool length : {false, true}) {
    SCOPED_TRACE(length ? "length field damaged" : "payload damaged");
    ScratchDir dir;
    const WalOptions options{.dir = dir.path()};
    {
      testing::OpenedWal opened = OpenWal(options, 0);
      ASSERT_NE(opened.wal, nullptr);
      WalLsn lsn = 0;
      for (int64_t rev = 1; rev <= 50; ++rev)
        lsn = testing::AppendOne(*opened.wal, rev, PayloadFor(rev, 100));
      ASSERT_TRUE(opened.wal->WaitDurable(lsn).ok());
      ASSERT_TRUE(opened.wal->Close().ok());
    }
    const std::string segment = SegmentFiles(dir.path()).back();
    std::string contents = ReadWholeFile(segment);
    const RecordSpan last = ParseSegment(contents).back();
    ASSERT_EQ(last.revision, 50);
    contents[length ? last.offset + 1 : last.offset + 16 + 50] ^= 0x10;
    WriteWholeFile(segment, contents);
    {
      absl::StatusOr<std::unique_ptr<Wal>> wal;
      WalRecoveryReport report;
      wal = Wal::Open(
          options, 50, [](int64_t, std::string_view) { return absl::OkStatus(); }, &report,
          /*durable_through=*/50);
      ASSERT_TRUE(wal.ok()) << wal.status();
      EXPECT_EQ(report.next_revision, 51);
      ASSERT_TRUE(report.covered_damage.has_value());
      EXPECT_EQ(report.covered_damage->segment, segment);
      EXPECT_EQ(report.covered_damage->offset, last.offset);
      EXPECT_NE(report.ToString().find(absl::StrCat("offset ", last.offset)), std::string::npos)
          << report.ToString();
      EXPECT_FALSE(report.corruption.has_value());
      EXPECT_EQ(report.segment, dir.path() + "/" + SegmentName(51));
      ASSERT_TRUE((*wal)->WaitDurable(testing::AppendOne(**wal, 51, PayloadFor(51, 100))).ok());
      ASSERT_TRUE((*wal)->Close().ok());
    }
    EXPECT_EQ(ReadWholeFile(segment), contents) << "the damaged segment must be left as it is";
    testing::OpenedWal again = OpenWal(options, 50);
    ASSERT_NE(again.wal, nullptr);
    ASSERT_EQ(again.records.size(), 1u);
    EXPECT_EQ(again.records[0].second, PayloadFor(51, 100));
  }
}

// A damaged last record the checkpoint holds (revision 50, checkpoint 50) in a segment followed by one
// whose header is damaged: Open refuses; RepairWal moves the later segment aside and says the log now
// ends at 50, and Open then continues at 51 — where the log ends is the damaged covered record's revision,
// though the last intact record read is 49. (Found by the wal_recovery fuzzer, whose check compared the
// repair with the last intact record read.)
TEST(WalCoveredDamage, RepairAndOpenAgreeWhereALogEndingInCoveredDamageEnds) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  std::string first = SegmentWith(LogWithHost(0, ""));
  const RecordSpan last = ParseSegment(first).back();
  ASSERT_EQ(last.revision, 50);
  first[last.offset + 16 + 50] ^= 0x10;
  WriteWholeFile(dir.path() + "/" + SegmentName(1), first);
  std::string second = SegmentWith({{51, PayloadFor(51, 100)}});
  second[0] = 'X';  // the magic
  const std::string second_path = dir.path() + "/" + SegmentName(51);
  WriteWholeFile(second_path, second);

  const absl::Status refused = OpenFails(options, /*after_revision=*/50);
  EXPECT_EQ(refused.code(), absl::StatusCode::kDataLoss) << refused;
  absl::StatusOr<WalRepairReport> repair = RepairWal(nullptr, dir.path(), 50);
  ASSERT_TRUE(repair.ok()) << repair.status();
  EXPECT_EQ(repair->last_good_revision, 50);
  ASSERT_TRUE(repair->damage.has_value());
  EXPECT_EQ(repair->damage->segment, second_path);

  testing::OpenedWal opened = OpenWal(options, 50);
  ASSERT_NE(opened.wal, nullptr);
  EXPECT_TRUE(opened.records.empty());
  EXPECT_EQ(opened.report.next_revision, repair->last_good_revision + 1);
  EXPECT_EQ(opened.report.last_revision, 49) << "the last intact record read";
  EXPECT_EQ(opened.report.covered_records_skipped, 1u);
}

// The same damage when the checkpoint is at R - 1: record R is not covered, and it is damage (a byte
// changed, no unwritten sector), so recovery refuses and changes nothing.
TEST(WalCoveredDamage, ADamagedLastRecordTheCheckpointDoesNotHoldIsRefused) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  const std::string path = dir.path() + "/" + SegmentName(1);
  std::string contents = SegmentWith(LogWithHost(0, ""));
  const RecordSpan last = ParseSegment(contents).back();
  contents[last.offset + 16 + 50] ^= 0x10;
  WriteWholeFile(path, contents);
  const std::map<std::string, std::string> before = testing::SnapshotDir(dir.path());
  const absl::Status status = OpenFails(options, /*after_revision=*/49, /*durable_through=*/49);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_TRUE(testing::MessageHas(status, "revision 50")) << status;
  EXPECT_EQ(testing::SnapshotDir(dir.path()), before);
}

// A log of records 1..10, then record 11 sized so that record 12 (the last) starts at byte
// `in_sector` of a 512-byte sector, with a payload of `last_payload` bytes.
std::string LogWithLastRecordAt(uint64_t in_sector, size_t last_payload) {
  std::vector<std::pair<int64_t, std::string>> records;
  for (int64_t rev = 1; rev <= 10; ++rev) records.emplace_back(rev, PayloadFor(rev, 100));
  const uint64_t end = SegmentWith(records).size();
  uint64_t target = (end + 16 + 100) / 512 * 512 + 512 + in_sector;
  records.emplace_back(11, PayloadFor(11, target - end - 16));
  records.emplace_back(12, PayloadFor(12, last_payload));
  return SegmentWith(records);
}

// The last record's length runs past the end of the file and its header names another revision. Its
// header straddles a sector boundary; the part in the second sector is the high bytes of the revision,
// zeros as data, and the value follows in the same sector, so that sector was written. With a payload
// byte damaged too, nothing completes the record: it is damage, not a torn tail. (Before, any all-zero
// part of the header counted as an unwritten sector and the record was cut as a torn tail.)
TEST(WalCoveredDamage, ZeroHeaderBytesInAWrittenSectorAreNotAnUnwrittenSector) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  const std::string path = dir.path() + "/" + SegmentName(1);
  std::string contents = LogWithLastRecordAt(500, 300);
  const RecordSpan last = ParseSegment(contents).back();
  ASSERT_EQ(last.revision, 12);
  ASSERT_EQ(last.offset % 512, 500u);
  contents[last.offset + 2] = 0x40;         // the length runs past the end
  contents[last.offset + 8] ^= 0x01;        // the revision's low byte: another revision
  contents[last.offset + 16 + 40] ^= 0x20;  // and a value byte
  ASSERT_EQ(contents.substr(last.offset + 12, 4), std::string(4, '\0'));
  WriteWholeFile(path, contents);
  const std::map<std::string, std::string> before = testing::SnapshotDir(dir.path());
  const absl::Status status = OpenFails(options, 0);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_TRUE(testing::MessageHas(status, absl::StrCat("offset ", last.offset))) << status;
  EXPECT_EQ(testing::SnapshotDir(dir.path()), before) << "damage was cut as a torn tail";
}

// What a crash does leave: the header's second sector never written, as a zero tail to the end of the
// file or as a whole zero sector with bytes after it; the length runs past the end. A torn tail: cut.
TEST(WalCoveredDamage, AnUnwrittenSectorUnderTheHeaderOfARecordPastTheEndIsATornTail) {
  for (const bool tail : {true, false}) {
    SCOPED_TRACE(tail ? "zero tail to the end of the file" : "whole zero sector, bytes after it");
    ScratchDir dir;
    const WalOptions options{.dir = dir.path()};
    const std::string path = dir.path() + "/" + SegmentName(1);
    std::string contents = LogWithLastRecordAt(504, 2000);
    const RecordSpan last = ParseSegment(contents).back();
    ASSERT_EQ(last.offset % 512, 504u);
    const uint64_t sector = last.offset + 8;                    // the revision starts the next sector
    contents.resize(tail ? sector + 200 : sector + 512 + 300);  // the length now runs past the end
    std::fill(contents.begin() + static_cast<std::ptrdiff_t>(sector),
              contents.begin() + static_cast<std::ptrdiff_t>(tail ? contents.size() : sector + 512), '\0');
    WriteWholeFile(path, contents);
    testing::OpenedWal opened = OpenWal(options, 0);
    ASSERT_NE(opened.wal, nullptr);
    ASSERT_TRUE(opened.report.corruption.has_value());
    EXPECT_EQ(opened.report.corruption->offset, last.offset);
    EXPECT_EQ(opened.report.next_revision, 12);
    EXPECT_EQ(opened.records.size(), 11u);
  }
}

// A record whose last part shares its sector only with zeros (the rest of that sector, and everything
// after it to the end of the file, never reached the disk; the file's size did): that sector is unwritten
// even though the record's own part of it is not a whole sector. A torn tail, cut, as a power loss in
// `interval` mode leaves it. (Before, only the record's own bytes were looked at, the part was not a
// whole sector and did not run to the end of the file, and recovery refused the log as damaged:
// WalPowerLossModes.IntervalLosesAtMostTheLastIntervalsAcknowledgedRecordsAndOnlyASuffix found it.)
TEST(WalCoveredDamage, ARecordWhoseLastSectorIsZeroBeyondItIsATornTail) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  const std::string path = dir.path() + "/" + SegmentName(1);
  std::string contents = LogWithLastRecordAt(100, 300);  // record 12 at 100 bytes into a sector
  contents += EncodeRecord(13, PayloadFor(13, 700));
  const std::vector<RecordSpan> spans = ParseSegment(contents);
  const RecordSpan torn = spans[10];  // record 11 ends 100 bytes into the sector record 12 starts in
  ASSERT_EQ(torn.revision, 11);
  const uint64_t sector = (torn.offset + torn.size) / 512 * 512;
  ASSERT_GT(torn.offset + torn.size, sector);
  ASSERT_LT(torn.offset, sector);
  std::fill(contents.begin() + static_cast<std::ptrdiff_t>(sector), contents.end(), '\0');
  WriteWholeFile(path, contents);
  testing::OpenedWal opened = OpenWal(options, 0);
  ASSERT_NE(opened.wal, nullptr);
  ASSERT_TRUE(opened.report.corruption.has_value());
  EXPECT_EQ(opened.report.corruption->offset, torn.offset);
  EXPECT_EQ(opened.report.next_revision, 11);
}

// A record that starts inside a sector after the record before it, and whose part of that sector reads
// as zeros while later sectors (its own and the next record's) reached the disk: the sector holds the
// earlier record's bytes from an earlier fdatasync and never received this record's (a disk writes a
// sector whole). A torn tail, cut with what follows. (Before, a zero first part sharing its sector with
// the record before it counted as written data, and recovery refused the log after a power loss in
// `interval` mode: WalPowerLossModes.IntervalLosesAtMostTheLastIntervalsAcknowledgedRecordsAndOnlyASuffix
// found it in about one run in eight.)
TEST(WalCoveredDamage, AZeroFirstPartAfterTheRecordBeforeItIsAnUnwrittenSector) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  const std::string path = dir.path() + "/" + SegmentName(1);
  std::string contents = LogWithLastRecordAt(100, 1200);  // record 12 at 100 bytes into a sector
  contents += EncodeRecord(13, PayloadFor(13, 300));
  const std::vector<RecordSpan> spans = ParseSegment(contents);
  const RecordSpan torn = spans[11];
  ASSERT_EQ(torn.revision, 12);
  const uint64_t sector_end = (torn.offset / 512 + 1) * 512;
  std::fill(contents.begin() + static_cast<std::ptrdiff_t>(torn.offset),
            contents.begin() + static_cast<std::ptrdiff_t>(sector_end), '\0');
  WriteWholeFile(path, contents);
  testing::OpenedWal opened = OpenWal(options, 0);
  ASSERT_NE(opened.wal, nullptr);
  ASSERT_TRUE(opened.report.corruption.has_value());
  EXPECT_EQ(opened.report.corruption->offset, torn.offset);
  EXPECT_EQ(opened.report.next_revision, 12);
  EXPECT_EQ(opened.records.size(), 11u);
}

}  // namespace
}  // namespace revkv::server
