// Checkpoints: round trips, fallback from a corrupt newest checkpoint, crash leftovers, disk errors and
// housekeeping.
#include "server/checkpoint/checkpoint.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/checkpoint/checkpoint_format.h"
#include "server/wal/crc32c.h"
#include "server/wal/fault_injecting_file_system.h"
#include "tests/server/wal/test_util.h"

namespace revkv::server {
namespace {

using testing::ScratchDir;

struct Entry {
  std::string key;
  std::string value;
  int64_t create_revision;
  int64_t mod_revision;
  int64_t version;
  int64_t lease;

  bool operator==(const Entry&) const = default;
};

std::vector<Entry> RandomEntries(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::vector<Entry> entries;
  entries.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    Entry e;
    e.key = "key/" + std::to_string(i) + "/" + std::string(rng() % 20, 'k');
    e.value = std::string(rng() % 200, '\0');
    for (char& c : e.value) c = static_cast<char>(rng());
    e.create_revision = static_cast<int64_t>(rng() % 1000) + 1;
    e.mod_revision = e.create_revision + static_cast<int64_t>(rng() % 1000);
    e.version = static_cast<int64_t>(rng() % 50) + 1;
    e.lease = (rng() % 4 == 0) ? static_cast<int64_t>(rng()) : 0;
    entries.push_back(std::move(e));
  }
  return entries;
}

CheckpointInfo WriteCheckpoint(const std::string& dir, int64_t revision, const std::vector<Entry>& entries,
                               FileSystem* fs = DefaultFileSystem()) {
  absl::StatusOr<std::unique_ptr<CheckpointWriter>> writer =
      CheckpointWriter::Open(fs, dir, revision, /*compact_revision=*/revision / 2);
  EXPECT_TRUE(writer.ok()) << writer.status();
  for (const Entry& e : entries) {
    EXPECT_TRUE((*writer)->Add({e.key, e.value, e.create_revision, e.mod_revision, e.version, e.lease}).ok());
  }
  absl::StatusOr<CheckpointInfo> info = (*writer)->Finish();
  EXPECT_TRUE(info.ok()) << info.status();
  return info.ok() ? *info : CheckpointInfo{};
}

struct Loaded {
  absl::StatusOr<CheckpointLoadResult> result;
  std::vector<Entry> entries;
};

Loaded Load(const std::string& dir) {
  Loaded loaded;
  loaded.result = LoadNewestValidCheckpoint(DefaultFileSystem(), dir, [&](const CheckpointEntry& e) {
    loaded.entries.push_back(
        {std::string(e.key), std::string(e.value), e.create_revision, e.mod_revision, e.version, e.lease});
    return absl::OkStatus();
  });
  return loaded;
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(Checkpoint, RoundTripOfOneHundredThousandEntries) {
  ScratchDir dir;
  const uint64_t seed = testing::TestSeed();
  const std::vector<Entry> entries = RandomEntries(seed, 100'000);
  const CheckpointInfo written = WriteCheckpoint(dir.path(), 123456, entries);
  EXPECT_EQ(written.path, dir.File("checkpoint-000000000001e240.ckpt"));
  EXPECT_EQ(written.entry_count, 100'000u);
  EXPECT_EQ(written.bytes, std::filesystem::file_size(written.path));
  EXPECT_FALSE(std::filesystem::exists(dir.File("checkpoint-000000000001e240.tmp")));

  Loaded loaded = Load(dir.path());
  ASSERT_TRUE(loaded.result.ok()) << loaded.result.status();
  ASSERT_TRUE(loaded.result->loaded.has_value());
  EXPECT_EQ(loaded.result->loaded->revision, 123456);
  EXPECT_EQ(loaded.result->loaded->compact_revision, 123456 / 2);
  EXPECT_EQ(loaded.result->loaded->entry_count, 100'000u);
  EXPECT_TRUE(loaded.result->skipped.empty());
  ASSERT_EQ(loaded.entries.size(), entries.size());
  for (size_t i = 0; i < entries.size(); ++i) ASSERT_EQ(loaded.entries[i], entries[i]) << "entry " << i;
  EXPECT_TRUE(VerifyCheckpoint(DefaultFileSystem(), written.path).ok());
}

TEST(Checkpoint, TheBaseRevisionRoundTripsAndIsChecked) {
  ScratchDir dir;
  auto writer = CheckpointWriter::Open(DefaultFileSystem(), dir.path(), 50, 10, 30);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Add({"k", "v", 3, 30, 2, 0}).ok());
  absl::StatusOr<CheckpointInfo> written = (*writer)->Finish();
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(written->path, dir.File("checkpoint-0000000000000032.ckpt"));
  Loaded loaded = Load(dir.path());
  ASSERT_TRUE(loaded.result.ok() && loaded.result->loaded.has_value()) << loaded.result.status();
  EXPECT_EQ(loaded.result->loaded->revision, 50);
  EXPECT_EQ(loaded.result->loaded->base_revision, 30);
  EXPECT_EQ(loaded.result->loaded->compact_revision, 10);
  absl::StatusOr<CheckpointInfo> header = ReadCheckpointHeader(DefaultFileSystem(), written->path);
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->base_revision, 30);
  // The compaction cannot be after the base, nor the base after the revision.
  EXPECT_EQ(CheckpointWriter::Open(DefaultFileSystem(), dir.path(), 50, 31, 30).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckpointWriter::Open(DefaultFileSystem(), dir.path(), 50, 10, 51).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Files written before the base revision existed (format version 1: a 40-byte header) still load, as
// checkpoints holding their own revision.
TEST(Checkpoint, VersionOneFilesStillLoad) {
  ScratchDir dir;
  namespace format = checkpoint_format;
  std::string bytes = format::EncodeHeader({20, 5, 2, 20}).substr(0, format::kHeaderBytesV1);
  const uint32_t version = 1;
  std::memcpy(bytes.data() + 8, &version, 4);
  format::AppendEntry({"a", "1", 2, 4, 1, 0}, &bytes);
  format::AppendEntry({"b", "2", 3, 20, 5, 0}, &bytes);
  bytes += format::EncodeFooter(Crc32c(bytes));
  testing::WriteWholeFile(dir.File("checkpoint-0000000000000014.ckpt"), bytes);
  Loaded loaded = Load(dir.path());
  ASSERT_TRUE(loaded.result.ok() && loaded.result->loaded.has_value()) << loaded.result.status();
  EXPECT_EQ(loaded.result->loaded->revision, 20);
  EXPECT_EQ(loaded.result->loaded->base_revision, 20);
  EXPECT_EQ(loaded.result->loaded->compact_revision, 5);
  ASSERT_EQ(loaded.entries.size(), 2u);
  EXPECT_EQ(loaded.entries[1], (Entry{"b", "2", 3, 20, 5, 0}));
}

// Format 3: the leases follow the entries, covered by the CRC, and come back in order after them.
TEST(Checkpoint, LeasesRoundTripAfterTheEntries) {
  ScratchDir dir;
  absl::StatusOr<std::unique_ptr<CheckpointWriter>> writer =
      CheckpointWriter::Open(DefaultFileSystem(), dir.path(), 30, 10, 20);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Add({"a", "1", 2, 4, 1, 7}).ok());
  ASSERT_TRUE((*writer)->AddLease({-3, 5}).ok());
  ASSERT_TRUE((*writer)->AddLease({7, 9000000000}).ok());
  absl::StatusOr<CheckpointInfo> info = (*writer)->Finish();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->lease_count, 2u);
  std::vector<std::string> order;
  std::vector<CheckpointLease> leases;
  auto on_lease = [&](const CheckpointLease& l) {
    order.push_back("lease");
    leases.push_back(l);
    return absl::OkStatus();
  };
  CheckpointLeaseVisitor visit_lease = on_lease;  // a FunctionRef: the lambda must outlive it
  absl::StatusOr<CheckpointLoadResult> result = LoadNewestValidCheckpoint(
      DefaultFileSystem(), dir.path(),
      [&](const CheckpointEntry&) {
        order.push_back("entry");
        return absl::OkStatus();
      },
      &visit_lease);
  ASSERT_TRUE(result.ok() && result->loaded.has_value()) << result.status();
  EXPECT_EQ(result->loaded->lease_count, 2u);
  EXPECT_EQ(order, (std::vector<std::string>{"entry", "lease", "lease"}));
  ASSERT_EQ(leases.size(), 2u);
  EXPECT_EQ(leases[0].id, -3);
  EXPECT_EQ(leases[0].ttl, 5);
  EXPECT_EQ(leases[1].id, 7);
  EXPECT_EQ(leases[1].ttl, 9000000000);
  // A damaged lease is damage like any other: the CRC covers it.
  std::string bytes = testing::ReadWholeFile(info->path);
  bytes[bytes.size() - 16 - 3] ^= 1;
  testing::WriteWholeFile(info->path, bytes);
  EXPECT_EQ(VerifyCheckpoint(DefaultFileSystem(), info->path).status().code(), absl::StatusCode::kDataLoss);
}

// Format 4: the store's state records follow the leases, covered by the CRC, and come back in order.
TEST(Checkpoint, StateRecordsRoundTripAfterTheLeases) {
  ScratchDir dir;
  absl::StatusOr<std::unique_ptr<CheckpointWriter>> writer =
      CheckpointWriter::Open(DefaultFileSystem(), dir.path(), 30, 10, 20);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Add({"a", "1", 2, 4, 1, 7}).ok());
  ASSERT_TRUE((*writer)->AddLease({7, 5}).ok());
  ASSERT_TRUE((*writer)->AddState({1, std::string("alarms\0bytes", 12)}).ok());
  ASSERT_TRUE((*writer)->AddState({2, ""}).ok());
  EXPECT_EQ((*writer)->AddLease({8, 5}).code(), absl::StatusCode::kFailedPrecondition);
  // The refused lease is sticky, as every writer error is: write the checkpoint again without it (the
  // first writer, destroyed, removes its temporary file first).
  writer->reset();
  writer = CheckpointWriter::Open(DefaultFileSystem(), dir.path(), 30, 10, 20);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Add({"a", "1", 2, 4, 1, 7}).ok());
  ASSERT_TRUE((*writer)->AddLease({7, 5}).ok());
  ASSERT_TRUE((*writer)->AddState({1, std::string("alarms\0bytes", 12)}).ok());
  ASSERT_TRUE((*writer)->AddState({2, ""}).ok());
  absl::StatusOr<CheckpointInfo> info = (*writer)->Finish();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->state_count, 2u);
  std::vector<std::string> order;
  std::vector<std::pair<uint32_t, std::string>> states;
  auto on_lease = [&](const CheckpointLease&) {
    order.push_back("lease");
    return absl::OkStatus();
  };
  auto on_state = [&](const CheckpointStateRecord& r) {
    order.push_back("state");
    states.emplace_back(r.kind, std::string(r.bytes));
    return absl::OkStatus();
  };
  CheckpointLeaseVisitor visit_lease = on_lease;
  CheckpointStateVisitor visit_state = on_state;
  absl::StatusOr<CheckpointLoadResult> result = LoadNewestValidCheckpoint(
      DefaultFileSystem(), dir.path(),
      [&](const CheckpointEntry&) {
        order.push_back("entry");
        return absl::OkStatus();
      },
      &visit_lease, &visit_state);
  ASSERT_TRUE(result.ok() && result->loaded.has_value()) << result.status();
  EXPECT_EQ(result->loaded->state_count, 2u);
  EXPECT_EQ(order, (std::vector<std::string>{"entry", "lease", "state", "state"}));
  ASSERT_EQ(states.size(), 2u);
  EXPECT_EQ(states[0], (std::pair<uint32_t, std::string>{1, std::string("alarms\0bytes", 12)}));
  EXPECT_EQ(states[1], (std::pair<uint32_t, std::string>{2, ""}));
  // A damaged state record is damage like any other: the CRC covers it.
  std::string bytes = testing::ReadWholeFile(info->path);
  bytes[bytes.size() - 16 - 8 - 3] ^= 1;
  testing::WriteWholeFile(info->path, bytes);
  EXPECT_EQ(VerifyCheckpoint(DefaultFileSystem(), info->path).status().code(), absl::StatusCode::kDataLoss);
}

// Files written before state records existed (format version 3: a 56-byte header) still load, with none.
TEST(Checkpoint, VersionThreeFilesStillLoadWithoutStateRecords) {
  ScratchDir dir;
  namespace format = checkpoint_format;
  std::string bytes = format::EncodeHeader({20, 5, 1, 10, 1}).substr(0, format::kHeaderBytesV3);
  const uint32_t version = 3;
  std::memcpy(bytes.data() + 8, &version, 4);
  format::AppendEntry({"a", "1", 2, 4, 1, 9}, &bytes);
  format::AppendLease({9, 30}, &bytes);
  bytes += format::EncodeFooter(Crc32c(bytes));
  testing::WriteWholeFile(dir.File("checkpoint-0000000000000014.ckpt"), bytes);
  int leases = 0;
  int states = 0;
  auto on_lease = [&](const CheckpointLease&) {
    ++leases;
    return absl::OkStatus();
  };
  auto on_state = [&](const CheckpointStateRecord&) {
    ++states;
    return absl::OkStatus();
  };
  CheckpointLeaseVisitor visit_lease = on_lease;
  CheckpointStateVisitor visit_state = on_state;
  absl::StatusOr<CheckpointLoadResult> result = LoadNewestValidCheckpoint(
      DefaultFileSystem(), dir.path(), [&](const CheckpointEntry&) { return absl::OkStatus(); }, &visit_lease,
      &visit_state);
  ASSERT_TRUE(result.ok() && result->loaded.has_value()) << result.status();
  EXPECT_EQ(result->loaded->lease_count, 1u);
  EXPECT_EQ(result->loaded->state_count, 0u);
  EXPECT_EQ(leases, 1);
  EXPECT_EQ(states, 0);
}

TEST(Checkpoint, AnEntryAfterALeaseIsRefused) {
  ScratchDir dir;
  auto writer = CheckpointWriter::Open(DefaultFileSystem(), dir.path(), 3, 0);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->AddLease({1, 5}).ok());
  EXPECT_EQ((*writer)->Add({"a", "1", 1, 1, 1, 1}).code(), absl::StatusCode::kFailedPrecondition);
}

// Files written before leases existed (format version 2: a 48-byte header) still load, with no leases.
TEST(Checkpoint, VersionTwoFilesStillLoadWithoutLeases) {
  ScratchDir dir;
  namespace format = checkpoint_format;
  std::string bytes = format::EncodeHeader({20, 5, 1, 10, 0}).substr(0, format::kHeaderBytesV2);
  const uint32_t version = 2;
  std::memcpy(bytes.data() + 8, &version, 4);
  format::AppendEntry({"a", "1", 2, 4, 1, 0}, &bytes);
  bytes += format::EncodeFooter(Crc32c(bytes));
  testing::WriteWholeFile(dir.File("checkpoint-0000000000000014.ckpt"), bytes);
  int leases = 0;
  auto on_lease = [&](const CheckpointLease&) {
    ++leases;
    return absl::OkStatus();
  };
  CheckpointLeaseVisitor visit_lease = on_lease;
  int entries = 0;
  absl::StatusOr<CheckpointLoadResult> result = LoadNewestValidCheckpoint(
      DefaultFileSystem(), dir.path(),
      [&](const CheckpointEntry&) {
        ++entries;
        return absl::OkStatus();
      },
      &visit_lease);
  ASSERT_TRUE(result.ok() && result->loaded.has_value()) << result.status();
  EXPECT_EQ(result->loaded->base_revision, 10);
  EXPECT_EQ(result->loaded->lease_count, 0u);
  EXPECT_EQ(entries, 1);
  EXPECT_EQ(leases, 0);
}

TEST(Checkpoint, EmptyStoreRoundTrips) {
  ScratchDir dir;
  WriteCheckpoint(dir.path(), 7, {});
  Loaded loaded = Load(dir.path());
  ASSERT_TRUE(loaded.result.ok());
  ASSERT_TRUE(loaded.result->loaded.has_value());
  EXPECT_EQ(loaded.result->loaded->revision, 7);
  EXPECT_TRUE(loaded.entries.empty());
}

TEST(Checkpoint, NoCheckpointOrNoDirectoryLoadsNothing) {
  ScratchDir dir;
  Loaded none = Load(dir.path());
  ASSERT_TRUE(none.result.ok());
  EXPECT_FALSE(none.result->loaded.has_value());
  Loaded missing = Load(dir.File("absent"));
  ASSERT_TRUE(missing.result.ok()) << missing.result.status();
  EXPECT_FALSE(missing.result->loaded.has_value());
}

TEST(Checkpoint, CorruptNewestFallsBackToThePreviousOne) {
  ScratchDir dir;
  const std::vector<Entry> older = RandomEntries(1, 500);
  const std::vector<Entry> newer = RandomEntries(2, 700);
  WriteCheckpoint(dir.path(), 10, older);
  const CheckpointInfo newest = WriteCheckpoint(dir.path(), 20, newer);
  std::string bytes = testing::ReadWholeFile(newest.path);
  bytes[bytes.size() / 2] ^= 0x01;
  testing::WriteWholeFile(newest.path, bytes);

  Loaded loaded = Load(dir.path());
  ASSERT_TRUE(loaded.result.ok()) << loaded.result.status();
  ASSERT_TRUE(loaded.result->loaded.has_value());
  EXPECT_EQ(loaded.result->loaded->revision, 10);
  EXPECT_EQ(loaded.entries, older) << "the visitor saw only the valid checkpoint's entries";
  ASSERT_EQ(loaded.result->skipped.size(), 1u);
  const SkippedCheckpoint& skip = loaded.result->skipped[0];
  EXPECT_EQ(skip.path, newest.path);
  EXPECT_TRUE(Contains(skip.reason, "CRC mismatch")) << skip.reason;
  EXPECT_EQ(skip.renamed_to, dir.File("checkpoint-0000000000000014.corrupt"));
  EXPECT_TRUE(std::filesystem::exists(skip.renamed_to));
  EXPECT_FALSE(std::filesystem::exists(newest.path));
  EXPECT_TRUE(Contains(loaded.result->ToString(), newest.path));

  // The next load goes straight to the valid one.
  Loaded again = Load(dir.path());
  ASSERT_TRUE(again.result.ok());
  EXPECT_EQ(again.result->loaded->revision, 10);
  EXPECT_TRUE(again.result->skipped.empty());
}

TEST(Checkpoint, TruncatedOrMisnamedCheckpointsAreSkipped) {
  ScratchDir dir;
  WriteCheckpoint(dir.path(), 10, RandomEntries(3, 100));
  const CheckpointInfo truncated = WriteCheckpoint(dir.path(), 30, RandomEntries(4, 100));
  std::filesystem::resize_file(truncated.path, truncated.bytes - 100);
  const CheckpointInfo misnamed = WriteCheckpoint(dir.path(), 40, RandomEntries(5, 10));
  std::filesystem::rename(misnamed.path, dir.File(CheckpointFileName(50)));
  const CheckpointInfo tiny = WriteCheckpoint(dir.path(), 60, {});
  std::filesystem::resize_file(tiny.path, 20);

  Loaded loaded = Load(dir.path());
  ASSERT_TRUE(loaded.result.ok()) << loaded.result.status();
  EXPECT_EQ(loaded.result->loaded->revision, 10);
  ASSERT_EQ(loaded.result->skipped.size(), 3u);
  EXPECT_TRUE(Contains(loaded.result->skipped[0].reason, "less than an empty checkpoint"))
      << loaded.result->skipped[0].reason;
  EXPECT_TRUE(Contains(loaded.result->skipped[1].reason, "header says revision 40, the name 50"))
      << loaded.result->skipped[1].reason;
  EXPECT_EQ(loaded.result->skipped[2].path, truncated.path);
}

TEST(Checkpoint, TemporaryFileLeftByACrashIsIgnoredAndRemoved) {
  ScratchDir dir;
  const std::vector<Entry> entries = RandomEntries(6, 50);
  WriteCheckpoint(dir.path(), 10, entries);
  // A writer that died mid-way: a valid prefix of a newer checkpoint under its temporary name.
  const CheckpointInfo newer = WriteCheckpoint(dir.path(), 20, RandomEntries(7, 50));
  const std::string tmp = dir.File("checkpoint-0000000000000014.tmp");
  testing::WriteWholeFile(tmp, testing::ReadWholeFile(newer.path).substr(0, 300));
  std::filesystem::remove(newer.path);

  Loaded loaded = Load(dir.path());
  ASSERT_TRUE(loaded.result.ok());
  EXPECT_EQ(loaded.result->loaded->revision, 10);
  EXPECT_EQ(loaded.entries, entries);
  EXPECT_EQ(loaded.result->removed_temporary_files, std::vector<std::string>{tmp});
  EXPECT_FALSE(std::filesystem::exists(tmp));
}

TEST(CheckpointWriter, AbortOrDestructionWithoutFinishLeavesNothing) {
  ScratchDir dir;
  {
    auto writer = CheckpointWriter::Open(DefaultFileSystem(), dir.path(), 5, 0);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Add({"k", "v", 1, 1, 1, 0}).ok());
    EXPECT_TRUE(std::filesystem::exists(dir.File("checkpoint-0000000000000005.tmp")));
    (*writer)->Abort();
    EXPECT_FALSE(std::filesystem::exists(dir.File("checkpoint-0000000000000005.tmp")));
    EXPECT_FALSE((*writer)->Add({"k", "v", 1, 1, 1, 0}).ok());
    EXPECT_FALSE((*writer)->Finish().ok());
  }
  {
    auto writer = CheckpointWriter::Open(DefaultFileSystem(), dir.path(), 6, 0);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Add({"k", "v", 1, 1, 1, 0}).ok());
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(CheckpointWriter, BadRevisionsAreRejected) {
  ScratchDir dir;
  EXPECT_EQ(CheckpointWriter::Open(DefaultFileSystem(), dir.path(), 5, 6).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckpointWriter::Open(DefaultFileSystem(), dir.path(), -1, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CheckpointWriter, FullDiskFailsTheCheckpointAndLeavesNoFile) {
  ScratchDir dir;
  FaultInjectingFileSystem fs(DefaultFileSystem());
  fs.FailWritesAfterBytes(3 << 20, ENOSPC);  // fails in the middle of a buffer flush
  auto writer = CheckpointWriter::Open(&fs, dir.path(), 9, 0);
  ASSERT_TRUE(writer.ok());
  absl::Status status;
  const std::string value(1000, 'v');
  for (int i = 0; i < 10'000 && status.ok(); ++i)
    status = (*writer)->Add({std::to_string(i), value, 1, 1, 1, 0});
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_TRUE(Contains(std::string(status.message()), "No space left on device")) << status;
  EXPECT_EQ((*writer)->Finish().status(), status) << "the first error sticks";
  writer->reset();
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(CheckpointWriter, FsyncFailureFailsFinishAndLeavesNoFile) {
  ScratchDir dir;
  FaultInjectingFileSystem fs(DefaultFileSystem());
  auto writer = CheckpointWriter::Open(&fs, dir.path(), 9, 0);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Add({"k", "v", 1, 1, 1, 0}).ok());
  fs.FailNthSync(1, EIO);
  absl::StatusOr<CheckpointInfo> info = (*writer)->Finish();
  EXPECT_EQ(info.status().code(), absl::StatusCode::kDataLoss) << info.status();
  EXPECT_TRUE(Contains(std::string(info.status().message()), "Input/output error"));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(Checkpoint, UnknownFormatVersionIsAnErrorNotAFallback) {
  ScratchDir dir;
  WriteCheckpoint(dir.path(), 10, RandomEntries(8, 10));
  const CheckpointInfo newest = WriteCheckpoint(dir.path(), 20, RandomEntries(9, 10));
  std::string bytes = testing::ReadWholeFile(newest.path);
  bytes[8] = 5;  // versions 1 to 4 are read
  testing::WriteWholeFile(newest.path, bytes);
  Loaded loaded = Load(dir.path());
  EXPECT_EQ(loaded.result.status().code(), absl::StatusCode::kFailedPrecondition) << loaded.result.status();
  EXPECT_TRUE(std::filesystem::exists(newest.path));
}

TEST(Checkpoint, VisitorErrorStopsTheLoad) {
  ScratchDir dir;
  WriteCheckpoint(dir.path(), 10, RandomEntries(10, 10));
  int seen = 0;
  absl::StatusOr<CheckpointLoadResult> result =
      LoadNewestValidCheckpoint(DefaultFileSystem(), dir.path(), [&](const CheckpointEntry&) {
        return ++seen == 3 ? absl::InternalError("store is full") : absl::OkStatus();
      });
  EXPECT_EQ(result.status(), absl::InternalError("store is full"));
}

TEST(Checkpoint, RemoveOldCheckpointsKeepsTheNewest) {
  ScratchDir dir;
  for (int64_t rev : {10, 20, 30, 40, 50}) WriteCheckpoint(dir.path(), rev, RandomEntries(rev, 3));
  testing::WriteWholeFile(dir.File("checkpoint-0000000000000005.corrupt"), "old corrupt");
  testing::WriteWholeFile(dir.File("checkpoint-0000000000000063.corrupt"), "newer corrupt");
  testing::WriteWholeFile(dir.File("checkpoint-0000000000000064.tmp"), "being written");

  absl::StatusOr<std::vector<std::string>> removed = RemoveOldCheckpoints(DefaultFileSystem(), dir.path());
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(removed->size(), 4u);  // 10, 20, 30 and the corrupt file older than 40
  absl::StatusOr<std::vector<CheckpointFile>> left = ListCheckpoints(DefaultFileSystem(), dir.path());
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->size(), 2u);
  EXPECT_EQ((*left)[0].revision, 40);
  EXPECT_EQ((*left)[1].revision, 50);
  EXPECT_TRUE(std::filesystem::exists(dir.File("checkpoint-0000000000000063.corrupt")));
  EXPECT_TRUE(std::filesystem::exists(dir.File("checkpoint-0000000000000064.tmp")));
  EXPECT_FALSE(std::filesystem::exists(dir.File("checkpoint-0000000000000005.corrupt")));
  EXPECT_EQ(RemoveOldCheckpoints(DefaultFileSystem(), dir.path(), 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace revkv::server
