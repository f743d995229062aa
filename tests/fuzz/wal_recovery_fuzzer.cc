// Fuzz target: recovery of the write-ahead log (Wal::Open, as the engine calls it, and RepairWal).
//
// Input: one control byte, then the bytes of one or two segment files.
//   control bit 0:     two segments; the next two bytes (little-endian) choose where the first one ends
//   control bits 1..4: the checkpoint revision recovery starts after (0..15)
// Each segment is named after the revision its first record claims (bytes 24..31), as the writer names
// it, so mutated records still form a log; a file too short for that, or claiming a revision < 1, is
// named after revision 1 (the second one: the first one's name + 1).
//
// Checks: no crash, leak or undefined behaviour; Open either succeeds or fails with DataLoss or
// FailedPrecondition and then leaves every file as it was; the visitor sees consecutive revisions from
// the checkpoint's + 1 and the report agrees with it; after a successful Open the log takes the next
// revision, and a second Open replays the same records plus that one without cutting anything; after a
// refused Open, a successful RepairWal leaves a log that Open accepts and continues where the repair
// says the log now ends.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "server/wal/file_system.h"
#include "server/wal/wal.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/memory_file_system.h"

namespace revkv::server::fuzz {
namespace {

constexpr char kDir[] = "/wal";

int64_t NameRevision(std::string_view segment, int64_t fallback) {
  if (segment.size() < 32) return fallback;
  int64_t revision;
  std::memcpy(&revision, segment.data() + 24, sizeof revision);
  return revision >= 1 ? revision : fallback;
}

struct Replay {
  absl::Status status;
  WalRecoveryReport report;
  std::vector<std::string> payloads;
  std::unique_ptr<Wal> wal;
};

// Wal::Open over `fs`, checking what the visitor sees.
Replay Open(MemoryFileSystem& fs, int64_t after_revision) {
  WalOptions options;
  options.dir = kDir;
  options.file_system = &fs;
  options.buffer_bytes = size_t{1} << 16;
  Replay replay;
  int64_t expected = after_revision + 1;
  absl::StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(
      options, after_revision,
      [&](int64_t revision, std::string_view payload) {
        FUZZ_CHECK(revision == expected, "visited revision %lld, expected %lld",
                   static_cast<long long>(revision), static_cast<long long>(expected));
        ++expected;
        replay.payloads.emplace_back(payload);
        return absl::OkStatus();
      },
      &replay.report);
  replay.status = wal.status();
  if (wal.ok()) replay.wal = std::move(*wal);
  return replay;
}

void CheckRefusal(const absl::Status& status) {
  FUZZ_CHECK(
      status.code() == absl::StatusCode::kDataLoss || status.code() == absl::StatusCode::kFailedPrecondition,
      "unexpected error: %s", status.ToString().c_str());
  FUZZ_CHECK(!status.message().empty(), "an error without a message");
}

void CheckOpened(const Replay& replay, int64_t after_revision) {
  const WalRecoveryReport& report = replay.report;
  const int64_t replayed = static_cast<int64_t>(replay.payloads.size());
  FUZZ_CHECK(report.records_replayed == replay.payloads.size(), "report says %llu records, visitor saw %lld",
             static_cast<unsigned long long>(report.records_replayed), static_cast<long long>(replayed));
  FUZZ_CHECK(report.next_revision == after_revision + 1 + replayed,
             "next revision %lld after %lld records from %lld", static_cast<long long>(report.next_revision),
             static_cast<long long>(replayed), static_cast<long long>(after_revision));
  FUZZ_CHECK(replayed == 0 || report.last_revision == report.next_revision - 1,
             "last revision %lld, next %lld", static_cast<long long>(report.last_revision),
             static_cast<long long>(report.next_revision));
}

void Run(const uint8_t* data, size_t size) {
  if (size < 1) return;
  const uint8_t control = data[0];
  const int64_t after_revision = (control >> 1) & 0x0f;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string_view first = rest;
  std::string_view second;
  const bool two = (control & 1) != 0;
  if (two) {
    if (rest.size() < 2) return;
    const size_t split =
        (static_cast<uint8_t>(rest[0]) | (size_t{static_cast<uint8_t>(rest[1])} << 8)) % (rest.size() - 1);
    first = rest.substr(2, split);
    second = rest.substr(2 + split);
  }

  MemoryFileSystem fs;
  if (!fs.CreateDirectories(kDir).ok()) std::abort();
  const int64_t first_name = NameRevision(first, 1);
  fs.SetFile(JoinPath(kDir, NumberedFileName("wal-", first_name, ".log")), std::string(first));
  if (two) {
    const int64_t second_name = NameRevision(second, first_name == INT64_MAX ? 1 : first_name + 1);
    fs.SetFile(JoinPath(kDir, NumberedFileName("wal-", second_name, ".log")), std::string(second));
  }
  const std::map<std::string, std::string> before = fs.Files();

  Replay replay = Open(fs, after_revision);
  if (!replay.status.ok()) {
    CheckRefusal(replay.status);
    FUZZ_CHECK(fs.Files() == before, "a refused Open changed the files: %s",
               replay.status.ToString().c_str());
    absl::StatusOr<WalRepairReport> repaired = RepairWal(&fs, kDir, after_revision);
    if (!repaired.ok()) {
      CheckRefusal(repaired.status());
      return;
    }
    Replay again = Open(fs, after_revision);
    FUZZ_CHECK(again.status.ok(), "Open after RepairWal (%s) failed: %s", repaired->ToString().c_str(),
               again.status.ToString().c_str());
    CheckOpened(again, after_revision);
    // The log ends where the repair says (or, cut below the checkpoint, at the checkpoint): Open continues
    // right after it. Where the log ends is next_revision - 1, not the last intact record read: a damaged
    // record the checkpoint covers, passed over, still ends the log at its revision.
    const int64_t log_end = std::max(repaired->last_good_revision, after_revision);
    FUZZ_CHECK(again.report.next_revision == log_end + 1, "repair kept up to %lld, Open continues at %lld",
               static_cast<long long>(repaired->last_good_revision),
               static_cast<long long>(again.report.next_revision));
    return;
  }
  CheckOpened(replay, after_revision);

  // The log continues at the next revision, and reads back whole.
  const std::string payload = "fuzz";
  absl::StatusOr<WalReservation> reservation = replay.wal->Reserve(payload);
  FUZZ_CHECK(reservation.ok(), "Reserve: %s", reservation.status().ToString().c_str());
  const WalLsn lsn = replay.wal->Append(*reservation, replay.report.next_revision, payload);
  replay.wal->Notify();
  const absl::Status durable = replay.wal->WaitDurable(lsn);
  FUZZ_CHECK(durable.ok(), "WaitDurable: %s", durable.ToString().c_str());
  const absl::Status closed = replay.wal->Close();
  FUZZ_CHECK(closed.ok(), "Close: %s", closed.ToString().c_str());
  replay.wal.reset();

  Replay reopened = Open(fs, after_revision);
  FUZZ_CHECK(reopened.status.ok(), "the recovered log (%s) does not open again: %s",
             replay.report.ToString().c_str(), reopened.status.ToString().c_str());
  CheckOpened(reopened, after_revision);
  FUZZ_CHECK(!reopened.report.corruption.has_value(), "the recovered log was cut again: %s",
             reopened.report.ToString().c_str());
  std::vector<std::string> expected = replay.payloads;
  expected.push_back(payload);
  FUZZ_CHECK(reopened.payloads == expected, "replayed %zu records, expected %zu", reopened.payloads.size(),
             expected.size());
}

}  // namespace
}  // namespace revkv::server::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  revkv::server::fuzz::Run(data, size);
  return 0;
}
