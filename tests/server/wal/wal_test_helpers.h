// Helpers shared by the WAL tests: opening with a collecting visitor, appending one record, payloads
// that can be told apart, and reading segment files by hand (per the format in docs/durability.md).
#ifndef REVKV_TESTS_SERVER_WAL_WAL_TEST_HELPERS_H_
#define REVKV_TESTS_SERVER_WAL_WAL_TEST_HELPERS_H_

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "server/wal/crc32c.h"
#include "server/wal/wal.h"
#include "tests/server/wal/test_util.h"

namespace revkv::server::testing {

struct OpenedWal {
  std::unique_ptr<Wal> wal;
  WalRecoveryReport report;
  std::vector<std::pair<int64_t, std::string>> records;  // replayed, in order
};

// True if the status message contains `text`.
inline bool MessageHas(const absl::Status& status, std::string_view text) {
  return std::string(status.message()).find(text) != std::string::npos;
}

// Opens the WAL, collecting every replayed record. Fails the test (and returns no Wal) on error.
inline OpenedWal OpenWal(const WalOptions& options, int64_t after_revision = 0) {
  OpenedWal opened;
  absl::StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(
      options, after_revision,
      [&](int64_t revision, std::string_view payload) {
        opened.records.emplace_back(revision, std::string(payload));
        return absl::OkStatus();
      },
      &opened.report);
  EXPECT_TRUE(wal.ok()) << wal.status();
  if (wal.ok()) opened.wal = *std::move(wal);
  return opened;
}

// The payload of revision `revision`: recognizable and of a size that varies with the revision.
inline std::string PayloadFor(int64_t revision, size_t size) {
  std::string s = absl::StrCat("rev=", revision, ";");
  while (s.size() < size) s += static_cast<char>('a' + (s.size() + static_cast<size_t>(revision)) % 26);
  s.resize(std::max(size, s.size()));
  return s;
}

// Reserve + Append + Notify from one thread (tests that append from one thread need no lock).
inline WalLsn AppendOne(Wal& wal, int64_t revision, const std::string& payload,
                        DurableCallback on_durable = nullptr) {
  absl::StatusOr<WalReservation> reservation = wal.Reserve(payload, std::move(on_durable));
  EXPECT_TRUE(reservation.ok()) << reservation.status();
  if (!reservation.ok()) return 0;
  const WalLsn lsn = wal.Append(*reservation, revision, payload);
  wal.Notify();
  return lsn;
}

// Segment files in `dir`, sorted by name (= by first revision).
inline std::vector<std::string> SegmentFiles(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("wal-", 0) == 0 && name.size() == 24) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

inline std::string SegmentName(int64_t first_revision) {
  return absl::StrFormat("wal-%016x.log", first_revision);
}

// A record as found in a segment file.
struct RecordSpan {
  uint64_t offset;  // of its header
  uint64_t size;    // header + payload
  int64_t revision;
};

// Parses a segment's records by hand; stops at the first record that does not fit.
inline std::vector<RecordSpan> ParseSegment(const std::string& contents) {
  std::vector<RecordSpan> spans;
  uint64_t offset = 16;
  while (offset + 16 <= contents.size()) {
    uint32_t length;
    int64_t revision;
    std::memcpy(&length, contents.data() + offset, 4);
    std::memcpy(&revision, contents.data() + offset + 8, 8);
    if (offset + 16 + length > contents.size()) break;
    spans.push_back({offset, 16 + uint64_t{length}, revision});
    offset += 16 + length;
  }
  return spans;
}

// Encodes a record per the documented format: u32 length | u32 CRC-32C(revision bytes + payload) | i64
// revision | payload.
inline std::string EncodeRecord(int64_t revision, const std::string& payload) {
  std::string record(16, '\0');
  const uint32_t length = static_cast<uint32_t>(payload.size());
  char revision_bytes[8];
  std::memcpy(revision_bytes, &revision, 8);
  const uint32_t crc = Crc32cExtend(Crc32cExtend(0, revision_bytes, 8), payload.data(), payload.size());
  std::memcpy(record.data(), &length, 4);
  std::memcpy(record.data() + 4, &crc, 4);
  std::memcpy(record.data() + 8, &revision, 8);
  return record + payload;
}

// Every file of a directory, by name, to restore a state between variations of a test.
inline std::map<std::string, std::string> SnapshotDir(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    files[entry.path().filename().string()] = ReadWholeFile(entry.path().string());
  }
  return files;
}

inline void RestoreDir(const std::string& dir, const std::map<std::string, std::string>& files) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) std::filesystem::remove(entry.path());
  for (const auto& [name, contents] : files) WriteWholeFile(dir + "/" + name, contents);
}

}  // namespace revkv::server::testing

#endif  // REVKV_TESTS_SERVER_WAL_WAL_TEST_HELPERS_H_
