// Power loss in the fsync modes that acknowledge before fdatasync, against what docs/durability.md
// (section 2) promises for each:
//  - interval: a machine crash "may lose the acknowledged records written since the last completed
//    fdatasync: up to one interval plus one fsync's duration"; closed segments were synced at rotation,
//    so recovery only ever cuts a torn tail of the newest segment and never refuses;
//  - none: it "may lose anything the kernel had not written back yet since the last checkpoint"
//    (SyncThrough): any suffix after the last SyncThrough; recovery may refuse a log whose older segment
//    ends torn under a newer one (closed segments are not synced in that mode), and `--repair-wal`
//    (RepairWal) is then needed;
//  - in both: what comes back is a prefix of what was appended, revisions consecutive from 1, each with
//    the bytes appended last for it: never a hole, never a reordering, never bytes of another revision.
// Each round appends from one writer (some records waited for, some pipelined), cuts the power at a random
// moment with SimulatePowerLoss(seed), and checks the next Open against those promises.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/wal/fault_injecting_file_system.h"
#include "server/wal/wal.h"
#include "tests/server/wal/test_util.h"
#include "tests/server/wal/wal_test_helpers.h"

namespace revkv::server {
namespace {

using Clock = std::chrono::steady_clock;
using testing::ScratchDir;

// The payload appended for `revision` in `round`: tells a re-appended revision from its earlier bytes.
std::string PayloadOf(int round, int64_t revision, size_t size) {
  return absl::StrCat("round=", round, ";", testing::PayloadFor(revision, size));
}

void RunRounds(FsyncMode mode) {
  const uint64_t seed = testing::TestSeed();
  std::mt19937_64 rng(seed);
  ScratchDir dir;
  const std::chrono::milliseconds interval(10);
  std::map<int64_t, std::string> appended;  // the bytes last appended for each revision
  int64_t must_survive = 0;                 // every revision up to here must come back
  int64_t refusals = 0, torn_tails = 0, acknowledged_total = 0;
  const int rounds = std::max(6, static_cast<int>(30 * testing::Scale()));
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE(::testing::Message() << "round " << round << " (REVKV_TEST_SEED=" << seed << ")");
    // 1. Recover what the last power loss left, and hold it to the promises.
    std::vector<std::pair<int64_t, std::string>> records;
    WalRecoveryReport report;
    auto visit = [&](int64_t revision, std::string_view payload) {
      records.emplace_back(revision, std::string(payload));
      return absl::OkStatus();
    };
    absl::StatusOr<std::unique_ptr<Wal>> reopened =
        Wal::Open({.dir = dir.path(), .fsync_mode = mode}, 0, visit, &report);
    if (!reopened.ok()) {
      ASSERT_EQ(mode, FsyncMode::kNone)
          << "interval mode must never leave a log recovery refuses: " << reopened.status();
      ASSERT_EQ(reopened.status().code(), absl::StatusCode::kDataLoss) << reopened.status();
      ++refusals;
      absl::StatusOr<WalRepairReport> repair = RepairWal(nullptr, dir.path(), 0);
      ASSERT_TRUE(repair.ok()) << repair.status();
      records.clear();
      reopened = Wal::Open({.dir = dir.path(), .fsync_mode = mode}, 0, visit, &report);
      ASSERT_TRUE(reopened.ok()) << reopened.status();
    }
    if (report.corruption) ++torn_tails;
    for (size_t i = 0; i < records.size(); ++i) {
      ASSERT_EQ(records[i].first, static_cast<int64_t>(i) + 1) << "a hole or a reordering";
      ASSERT_EQ(records[i].second, appended[records[i].first])
          << "revision " << records[i].first << " came back with bytes not appended last for it";
    }
    const int64_t recovered = static_cast<int64_t>(records.size());
    ASSERT_GE(recovered, must_survive) << "a revision the promise keeps was lost; " << report.ToString();
    ASSERT_TRUE((*reopened)->Close().ok());
    reopened->reset();
    for (auto it = appended.upper_bound(recovered); it != appended.end();) it = appended.erase(it);
    must_survive = recovered;

    // 2. Append until the power goes.
    FaultInjectingFileSystem faulty(DefaultFileSystem());
    testing::OpenedWal opened = testing::OpenWal({.dir = dir.path(),
                                                  .file_system = &faulty,
                                                  .fsync_mode = mode,
                                                  .fsync_interval = interval,
                                                  .segment_bytes = 8 * 1024,
                                                  .buffer_bytes = 1 << 20});
    ASSERT_NE(opened.wal, nullptr);
    Wal& wal = *opened.wal;
    std::mutex mu;  // guards acked_at and appended
    std::map<int64_t, Clock::time_point> acked_at;
    std::atomic<bool> stop{false};
    std::thread writer([&, next = recovered + 1, writer_seed = rng()]() mutable {
      std::mt19937_64 local(writer_seed);
      while (!stop.load()) {
        const int64_t revision = next;
        const std::string payload = PayloadOf(round, revision, 1 + local() % 600);
        absl::StatusOr<WalReservation> r = wal.Reserve(payload, [&, revision](absl::Status s) {
          if (!s.ok()) return;
          std::lock_guard<std::mutex> lock(mu);
          acked_at[revision] = Clock::now();
        });
        if (!r.ok()) return;  // the power is gone
        {
          std::lock_guard<std::mutex> lock(mu);
          appended[revision] = payload;
        }
        const WalLsn lsn = wal.Append(*r, revision, payload);
        ++next;
        wal.Notify();
        if (local() % 4 == 0) (void)wal.WaitDurable(lsn);
        if (local() % 8 == 0) std::this_thread::sleep_for(std::chrono::microseconds(local() % 2000));
      }
    });
    int64_t synced_through = recovered;  // SyncThrough returned OK through here (a checkpoint's promise)
    const auto end = Clock::now() + std::chrono::milliseconds(20 + rng() % 80);
    while (Clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1 + rng() % 15));
      if (mode == FsyncMode::kNone && rng() % 3 == 0) {
        const int64_t target = wal.stats().durable_revision;
        if (target > synced_through && wal.SyncThrough(target).ok()) synced_through = target;
      }
    }
    // What the log says it synced, read before the cut: it only grows, so everything up to it is synced.
    const WalStats before = wal.stats();
    const Clock::time_point cut = Clock::now();
    ASSERT_TRUE(faulty.SimulatePowerLoss(rng()).ok());
    stop.store(true);
    writer.join();
    (void)wal.Close();
    opened.wal.reset();

    // 3. What the next recovery must bring back.
    must_survive = std::max(must_survive, synced_through);
    if (mode == FsyncMode::kInterval) {
      must_survive = std::max(must_survive, before.synced_revision);
      // Up to one interval plus one fsync's duration (the longest seen), and some scheduling slack.
      const auto window = interval +
                          std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(before.fsync_latency.max_seconds)) +
                          std::chrono::milliseconds(50);
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& [revision, at] : acked_at) {
        if (at < cut - window) must_survive = std::max(must_survive, revision);
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      acknowledged_total += static_cast<int64_t>(acked_at.size());
    }
  }
  std::printf("%s: %d power losses, %lld acknowledged, %lld torn tails cut, %lld refusals repaired\n",
              mode == FsyncMode::kInterval ? "interval" : "none", rounds,
              static_cast<long long>(acknowledged_total), static_cast<long long>(torn_tails),
              static_cast<long long>(refusals));
  EXPECT_GT(acknowledged_total, 0);
}

TEST(WalPowerLossModes, IntervalLosesAtMostTheLastIntervalsAcknowledgedRecordsAndOnlyASuffix) {
  RunRounds(FsyncMode::kInterval);
}

TEST(WalPowerLossModes, NoneLosesAtMostASuffixAfterTheLastSyncThrough) { RunRounds(FsyncMode::kNone); }

}  // namespace
}  // namespace revkv::server
