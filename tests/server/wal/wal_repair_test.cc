// RepairWal, the operator's repair of a log recovery refuses: it moves the damaged part aside (never
// deletes it), leaves a log that opens and continues after the last good record, and says what was lost.
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

using testing::AppendOne;
using testing::OpenWal;
using testing::PayloadFor;
using testing::ScratchDir;
using testing::SegmentFiles;

void WriteLog(const WalOptions& options, int64_t first, int64_t last) {
  testing::OpenedWal opened = OpenWal(options, first - 1);
  ASSERT_NE(opened.wal, nullptr);
  WalLsn lsn = 0;
  for (int64_t rev = first; rev <= last; ++rev) lsn = AppendOne(*opened.wal, rev, PayloadFor(rev, 100));
  ASSERT_TRUE(opened.wal->WaitDurable(lsn).ok());
  ASSERT_TRUE(opened.wal->Close().ok());
}

bool OpenRefused(const WalOptions& options) {
  return !Wal::Open(
              options, 0, [](int64_t, std::string_view) { return absl::OkStatus(); }, nullptr)
              .ok();
}

TEST(WalRepair, MovesTheDamagedPartAsideAndTheLogOpensAgain) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path(), .segment_bytes = 2048};
  WriteLog(options, 1, 100);
  const std::vector<std::string> files = SegmentFiles(dir.path());
  ASSERT_GE(files.size(), 4u);
  const std::map<std::string, std::string> before = testing::SnapshotDir(dir.path());
  const std::string victim = files[1];
  std::string contents = testing::ReadWholeFile(victim);
  const testing::RecordSpan bad = testing::ParseSegment(contents)[3];
  contents[bad.offset + 20] ^= 0x01;
  testing::WriteWholeFile(victim, contents);
  ASSERT_TRUE(OpenRefused(options));

  absl::StatusOr<WalRepairReport> repair = RepairWal(nullptr, dir.path(), 0);
  ASSERT_TRUE(repair.ok()) << repair.status();
  const std::string text = repair->ToString();
  std::cout << text << std::endl;
  ASSERT_TRUE(repair->damage.has_value());
  EXPECT_EQ(repair->damage->segment, victim);
  EXPECT_EQ(repair->damage->offset, bad.offset);
  EXPECT_EQ(repair->last_good_revision, bad.revision - 1);
  EXPECT_EQ(repair->first_lost_revision, bad.revision);
  EXPECT_EQ(repair->last_lost_revision, 100);
  EXPECT_NE(text.find(absl::StrCat("revisions ", bad.revision, "..100")), std::string::npos) << text;
  EXPECT_NE(text.find(victim), std::string::npos) << text;

  // Nothing was deleted: the damaged segment whole, and every later one, are kept beside the log.
  ASSERT_EQ(repair->moved.size(), files.size() - 1);
  EXPECT_EQ(testing::ReadWholeFile(victim + ".damaged"), contents);
  for (size_t i = 2; i < files.size(); ++i) {
    EXPECT_FALSE(std::filesystem::exists(files[i]));
    EXPECT_EQ(testing::ReadWholeFile(files[i] + ".damaged"),
              before.at(std::filesystem::path(files[i]).filename()));
  }
  EXPECT_EQ(std::filesystem::file_size(victim), bad.offset);

  // The log opens with everything before the damage and continues after it.
  {
    testing::OpenedWal opened = OpenWal(options);
    ASSERT_NE(opened.wal, nullptr);
    EXPECT_FALSE(opened.report.corruption.has_value());
    ASSERT_EQ(opened.records.size(), static_cast<size_t>(bad.revision - 1));
    EXPECT_EQ(opened.report.next_revision, bad.revision);
    ASSERT_TRUE(opened.wal->WaitDurable(AppendOne(*opened.wal, bad.revision, "after repair")).ok());
  }
  testing::OpenedWal reopened = OpenWal(options);
  ASSERT_NE(reopened.wal, nullptr);
  EXPECT_EQ(reopened.records.back(), std::make_pair(bad.revision, std::string("after repair")));

  // A second repair finds nothing to do and, with .damaged taken, would pick another name.
  absl::StatusOr<WalRepairReport> again = RepairWal(nullptr, dir.path(), 0);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->damage.has_value());
}

TEST(WalRepair, DamagedSegmentHeaderMovesTheWholeSegmentAside) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path(), .segment_bytes = 2048};
  WriteLog(options, 1, 60);
  const std::vector<std::string> files = SegmentFiles(dir.path());
  ASSERT_GE(files.size(), 3u);
  std::string contents = testing::ReadWholeFile(files[1]);
  contents[0] = 'X';
  testing::WriteWholeFile(files[1], contents);
  ASSERT_TRUE(OpenRefused(options));
  absl::StatusOr<WalRepairReport> repair = RepairWal(nullptr, dir.path(), 0);
  ASSERT_TRUE(repair.ok()) << repair.status();
  EXPECT_EQ(repair->damage->offset, 0u);
  EXPECT_FALSE(std::filesystem::exists(files[1]));
  EXPECT_EQ(testing::ReadWholeFile(files[1] + ".damaged"), contents);
  testing::OpenedWal opened = OpenWal(options);
  ASSERT_NE(opened.wal, nullptr);
  EXPECT_EQ(opened.report.next_revision, repair->last_good_revision + 1);
  EXPECT_EQ(opened.records.size(), static_cast<size_t>(repair->last_good_revision));
}

// Found by tests/fuzz (corpus/wal_recovery/repair_uncovers_a_damaged_covered_segment): with a checkpoint,
// Open starts at the segment holding the revision after it and never reads the older ones. When repair
// moved that segment aside whole (its header was the damage), the older one became the segment Open starts
// at, unread by the repair; damaged too, it made the repaired log refuse to open.
TEST(WalRepair, MovingTheFirstSegmentReadAsideDoesNotUncoverADamagedOlderOne) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path(), .segment_bytes = 2048};
  WriteLog(options, 1, 60);
  const std::vector<std::string> files = SegmentFiles(dir.path());
  ASSERT_GE(files.size(), 3u);
  const int64_t after_revision = testing::ParseSegment(testing::ReadWholeFile(files[1]))[0].revision;
  for (const std::string& file : {files[0], files[1]}) {
    std::string contents = testing::ReadWholeFile(file);
    contents[0] = 'X';
    testing::WriteWholeFile(file, contents);
  }
  // Open reads from files[1]: files[0] is wholly covered by the checkpoint.
  ASSERT_FALSE(
      Wal::Open(
          options, after_revision, [](int64_t, std::string_view) { return absl::OkStatus(); }, nullptr)
          .ok());

  absl::StatusOr<WalRepairReport> repair = RepairWal(nullptr, dir.path(), after_revision);
  ASSERT_TRUE(repair.ok()) << repair.status();
  std::cout << repair->ToString() << std::endl;
  testing::OpenedWal opened = OpenWal(options, after_revision);
  ASSERT_NE(opened.wal, nullptr) << repair->ToString();
  EXPECT_TRUE(opened.records.empty());
  EXPECT_EQ(opened.report.next_revision, after_revision + 1);
  ASSERT_TRUE(opened.wal->WaitDurable(AppendOne(*opened.wal, after_revision + 1, "after repair")).ok());
  // Nothing was deleted.
  for (const std::string& file : files) {
    EXPECT_FALSE(std::filesystem::exists(file)) << file;
    EXPECT_TRUE(std::filesystem::exists(file + ".damaged")) << file;
  }
  // A second repair finds nothing more to do.
  opened.wal.reset();
  absl::StatusOr<WalRepairReport> again = RepairWal(nullptr, dir.path(), after_revision);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->damage.has_value()) << again->ToString();
}

TEST(WalRepair, IntactLogIsLeftAlone) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  WriteLog(options, 1, 10);
  const std::map<std::string, std::string> before = testing::SnapshotDir(dir.path());
  absl::StatusOr<WalRepairReport> repair = RepairWal(nullptr, dir.path(), 0);
  ASSERT_TRUE(repair.ok()) << repair.status();
  EXPECT_FALSE(repair->damage.has_value());
  EXPECT_EQ(repair->last_good_revision, 10);
  EXPECT_EQ(testing::SnapshotDir(dir.path()), before);
}

TEST(WalRepair, DamageTheCheckpointCoversIsNotRepaired) {
  ScratchDir dir;
  const WalOptions options{.dir = dir.path()};
  WriteLog(options, 1, 50);
  const std::string segment = SegmentFiles(dir.path()).back();
  std::string contents = testing::ReadWholeFile(segment);
  contents[testing::ParseSegment(contents)[9].offset + 30] ^= 0x01;
  testing::WriteWholeFile(segment, contents);
  absl::StatusOr<WalRepairReport> repair = RepairWal(nullptr, dir.path(), /*after_revision=*/40);
  ASSERT_TRUE(repair.ok()) << repair.status();
  EXPECT_FALSE(repair->damage.has_value()) << repair->ToString();
  EXPECT_EQ(testing::ReadWholeFile(segment), contents);
}

}  // namespace
}  // namespace revkv::server
