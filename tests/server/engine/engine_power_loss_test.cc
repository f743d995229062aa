// Power loss and Compact: the COMPACTION record (docs/durability.md, section 6a) is written after
// SyncThrough, fdatasync'ed, renamed into place and its directory fsync'ed before Compact replies. So a
// compaction that was acknowledged survives a machine crash, and one that was not (the power went while
// it ran) either applies wholly or not at all: after recovery the compact revision is the last
// acknowledged one or the one in flight, revisions below it answer "compacted", and it still reads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "runtime/safepoint/safepoint.h"
#include "server/engine/compaction_record.h"
#include "server/engine/engine.h"
#include "server/store/errors.h"
#include "server/wal/fault_injecting_file_system.h"
#include "tests/server/engine/engine_test_util.h"

namespace revkv::server {
namespace {

namespace fs = std::filesystem;
using namespace engine_testing;  // NOLINT: the test helpers read best unqualified

etcdserverpb::CompactionRequest CompactTo(int64_t revision) {
  etcdserverpb::CompactionRequest r;
  r.set_revision(revision);
  return r;
}

// "" if the store's compaction is `acked` or `in_flight` (0: none) and holds wholly; else what is wrong.
std::string CheckCompaction(Store& store, int64_t acked, int64_t in_flight) {
  const int64_t c = store.CompactRevision();
  if (c != acked && !(in_flight != 0 && c == in_flight)) {
    return absl::StrCat("compact revision ", c, " after a power loss; acknowledged ", acked, ", in flight ",
                        in_flight);
  }
  if (c > 1) {
    absl::StatusOr<std::map<std::string, std::string>> below = Everything(store, c - 1);
    if (below.ok() || below.status() != errors::Compacted()) {
      return absl::StrCat("revision ", c - 1, " below the compaction reads: ", below.status().ToString());
    }
  }
  if (c > 0) {
    absl::StatusOr<std::map<std::string, std::string>> at = Everything(store, c);
    if (!at.ok())
      return absl::StrCat("the compacted-to revision ", c, " does not read: ", at.status().ToString());
  }
  return "";
}

TEST(EnginePowerLoss, ACompactionSurvivesAPowerLossOrAppliesWhollyOrNotAtAll) {
  const std::string dir = TempDir("power-compact");
  const uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  int64_t acknowledged = 0, acked_compact = 0, in_flight = 0, applied_in_flight = 0, compactions = 0;
  const int rounds = std::max(6, static_cast<int>(16 * Scale()));
  for (int round = 0; round < rounds; ++round) {
    const uint64_t round_seed = rng();
    ASSERT_CHILD_PASSES([&] {
      FaultInjectingFileSystem faulty(DefaultFileSystem());
      EngineOptions o = Options(dir);
      o.file_system = &faulty;
      o.wal_segment_bytes = 8 << 10;
      o.store.history_revisions = 0;  // only compactions limit history
      auto engine = Engine::Open(o, nullptr);
      CHILD_CHECK(engine.ok(), "round %d (REVKV_TEST_SEED=%llu): %s", round,
                  static_cast<unsigned long long>(seed), engine.status().ToString().c_str());
      Store& store = (*engine)->store();
      int64_t step = 0;
      std::string problem = CheckSteps(store, acknowledged, &step);
      CHILD_CHECK(problem.empty(), "round %d: %s", round, problem.c_str());
      problem = CheckCompaction(store, acked_compact, in_flight);
      CHILD_CHECK(problem.empty(), "round %d (REVKV_TEST_SEED=%llu): %s", round,
                  static_cast<unsigned long long>(seed), problem.c_str());
      const bool applied = in_flight != 0 && store.CompactRevision() == in_flight;
      std::atomic<int64_t> acked{step};
      std::thread writer([&, first = step + 1] {
        runtime::ThreadRegistration r("writer");
        for (int64_t i = first;; ++i) {
          auto w = store.Txn(StepTxn(i));
          if (!w.ok() || !store.WaitDurable(w->lsn).ok()) return;  // the power is gone
          acked.store(i);
        }
      });
      std::mt19937_64 local(round_seed);
      std::atomic<bool> power_gone{false};
      std::thread power([&, delay = std::chrono::milliseconds(20 + local() % 150), loss_seed = local()] {
        std::this_thread::sleep_for(delay);
        absl::Status lost = faulty.SimulatePowerLoss(loss_seed);
        if (!lost.ok()) std::fprintf(stderr, "power loss: %s\n", lost.ToString().c_str());
        power_gone.store(true);
      });
      int64_t compact = store.CompactRevision();
      int64_t pending = 0;
      int64_t done = 0;
      while (!power_gone.load()) {
        {
          runtime::SafeRegion waiting;
          std::this_thread::sleep_for(std::chrono::milliseconds(local() % 8));
        }
        const int64_t visible = store.VisibleRevision();
        if (visible <= compact) continue;
        const int64_t target =
            compact + 1 + static_cast<int64_t>(local() % static_cast<uint64_t>(visible - compact));
        pending = target;
        absl::StatusOr<etcdserverpb::CompactionResponse> c = store.Compact(CompactTo(target));
        if (!c.ok()) break;  // the power is gone (or going): this one is unacknowledged
        compact = target;
        pending = 0;
        ++done;
        if (local() % 4 == 0) (void)(*engine)->Checkpoint();
      }
      {
        runtime::SafeRegion waiting;
        power.join();
        writer.join();
      }
      std::ofstream(dir + "/state.txt")
          << acked.load() << " " << compact << " " << pending << " " << (applied ? 1 : 0) << " " << done;
      std::fflush(stdout);
      _exit(0);  // the machine is off: no clean shutdown
    });
    int64_t applied = 0, done = 0;
    std::ifstream(dir + "/state.txt") >> acknowledged >> acked_compact >> in_flight >> applied >> done;
    applied_in_flight += applied;
    compactions += done;
  }
  ASSERT_CHILD_PASSES([&] {
    EngineOptions o = Options(dir);
    o.store.history_revisions = 0;
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    int64_t steps = 0;
    std::string problem = CheckSteps((*engine)->store(), acknowledged, &steps);
    CHILD_CHECK(problem.empty(), "%s", problem.c_str());
    problem = CheckCompaction((*engine)->store(), acked_compact, in_flight);
    CHILD_CHECK(problem.empty(), "%s", problem.c_str());
    return 0;
  });
  std::printf("%d power losses, %lld compactions acknowledged, %lld unacknowledged ones found applied\n",
              rounds, static_cast<long long>(compactions), static_cast<long long>(applied_in_flight));
  EXPECT_GT(compactions, 0);
  fs::remove_all(dir);
}

// A crash that undid the second rename of a compaction record leaves the record only as
// COMPACTION.next (and, in the model, no COMPACTION): recovery uses it and moves it into place.
TEST(EnginePowerLoss, ACompactionRecordLeftAsNextIsUsedAndMovedIntoPlace) {
  const std::string dir = TempDir("compact-next");
  EngineOptions o = Options(dir);
  o.store.history_revisions = 0;
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    absl::Status s = WriteSteps((*engine)->store(), 1, 20);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    auto c = (*engine)->store().Compact(CompactTo(10));
    CHILD_CHECK(c.ok(), "%s", c.status().ToString().c_str());
    return 0;
  });
  ASSERT_TRUE(WriteCompactionRecord(DefaultFileSystem(), dir, 15).ok());
  fs::rename(dir + "/COMPACTION", dir + "/COMPACTION.next");
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    CHILD_CHECK((*engine)->store().CompactRevision() == 15, "compact revision %lld",
                static_cast<long long>((*engine)->store().CompactRevision()));
    CHILD_CHECK(fs::exists(dir + "/COMPACTION") && !fs::exists(dir + "/COMPACTION.next"),
                "COMPACTION.next was not moved into place");
    return 0;
  });
  fs::remove_all(dir);
}

}  // namespace
}  // namespace revkv::server
