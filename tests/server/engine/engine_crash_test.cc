// Crashes of the durable store: a writer SIGKILLed at random moments (at least 30 times), and power
// losses simulated on the fault-injecting file system's model of what a machine crash keeps. After every
// restart: every acknowledged step is there, each step's multi-key Txn wholly or not at all, and one
// revision per step (no gap). Helpers and the "step" workload: engine_test_util.h.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "runtime/safepoint/safepoint.h"
#include "server/engine/engine.h"
#include "server/store/errors.h"
#include "server/wal/fault_injecting_file_system.h"
#include "tests/server/engine/engine_test_util.h"

namespace revkv::server {
namespace {

namespace fs = std::filesystem;
using namespace engine_testing;  // NOLINT: the test helpers read best unqualified

// A writer child reports each acknowledged step; it is SIGKILLed at a random moment, at least 30 times.
// Every restart first checks the recovered state (in the child, before it writes again): every step
// acknowledged so far is there, each step's Txn wholly (a == b, its log key with its revision) or not
// at all, and the store's revision is exactly one per step (no gap). Then it continues the steps.
TEST(EngineTest, AcknowledgedWritesSurviveSigkillAtRandomMoments) {
  const std::string dir = TempDir("crash");
  const uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  const int rounds = std::max(30, static_cast<int>(40 * Scale()));
  int64_t acknowledged = 0;  // highest step acknowledged so far, over all rounds
  int64_t checked = 0;       // restarts whose recovered state the child verified
  for (int round = 0; round < rounds; ++round) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      runtime::InitializeRuntime();
      runtime::ThreadRegistration registration("writer");
      auto engine = Engine::Open(Options(dir), nullptr);
      if (!engine.ok()) {
        dprintf(fds[1], "bad open: %s\n", engine.status().ToString().c_str());
        _exit(3);
      }
      Store& store = (*engine)->store();
      // `acknowledged` is the parent's count at the fork: everything up to it must be back.
      int64_t step = 0;
      if (std::string problem = CheckSteps(store, acknowledged, &step); !problem.empty()) {
        dprintf(fds[1], "bad state after restart: %s\n", problem.c_str());
        _exit(6);
      }
      dprintf(fds[1], "ready %lld\n", static_cast<long long>(step + 1));
      std::mt19937_64 child_rng(seed + static_cast<uint64_t>(round));
      for (++step;; ++step) {
        auto w = store.Txn(StepTxn(step));
        if (!w.ok()) _exit(4);
        if (!store.WaitDurable(w->lsn).ok()) _exit(5);
        dprintf(fds[1], "ack %lld\n", static_cast<long long>(step));
        if (child_rng() % 50 == 0) (void)(*engine)->Checkpoint();
      }
    }
    close(fds[1]);
    FILE* in = fdopen(fds[0], "r");
    char line[512];
    ASSERT_NE(std::fgets(line, sizeof(line), in), nullptr)
        << "the writer did not start (round " << round << ")";
    long long resumed = 0;
    ASSERT_EQ(std::sscanf(line, "ready %lld", &resumed), 1)
        << "round " << round << ", REVKV_TEST_SEED=" << seed << ": " << line;
    ASSERT_GE(resumed, acknowledged + 1)
        << "the writer resumed at step " << resumed << " but step " << acknowledged << " was acknowledged";
    ++checked;
    std::thread killer([&, delay = std::chrono::microseconds(rng() % 150'000)] {
      std::this_thread::sleep_for(delay);
      kill(pid, SIGKILL);
    });
    long long step = 0;
    while (std::fgets(line, sizeof(line), in) != nullptr) {
      if (std::sscanf(line, "ack %lld", &step) == 1) acknowledged = step;
    }
    killer.join();
    fclose(in);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer ended on its own with status " << status;
  }
  // Final verification: every acknowledged step, whole transactions, consecutive revisions.
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(Options(dir), nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    Store& store = (*engine)->store();
    CHILD_READ(all, Everything(store));
    const int64_t a = std::stoll(all["a"].substr(0, all["a"].find('@')));
    const int64_t b = std::stoll(all["b"].substr(0, all["b"].find('@')));
    CHILD_CHECK(a == b, "a transaction is partly present: a=%lld b=%lld", static_cast<long long>(a),
                static_cast<long long>(b));
    CHILD_CHECK(a >= acknowledged, "acknowledged step %lld lost (recovered %lld)",
                static_cast<long long>(acknowledged), static_cast<long long>(a));
    CHILD_CHECK(static_cast<int64_t>(all.size()) == a + 2, "keys %zu for %lld steps", all.size(),
                static_cast<long long>(a));
    CHILD_CHECK(store.Revision() == a + 1, "revisions have gaps: revision %lld after %lld steps",
                static_cast<long long>(store.Revision()), static_cast<long long>(a));
    for (int64_t i = 1; i <= a; ++i) {
      const std::string v = all[StepLogKey("", i)];
      CHILD_CHECK(v == std::to_string(i) + "@" + std::to_string(i + 1), "step %lld is %s",
                  static_cast<long long>(i), v.c_str());
    }
    int64_t steps = 0;
    const std::string problem = CheckSteps(store, acknowledged, &steps);
    CHILD_CHECK(problem.empty(), "%s", problem.c_str());
    return 0;
  });
  std::printf("%d kills, %lld restarts verified, %lld steps acknowledged\n", rounds,
              static_cast<long long>(checked), static_cast<long long>(acknowledged));
  fs::remove_all(dir);
}

// A machine crash keeps only what was fsync'ed. The fault-injecting file system tracks that (synced
// bytes per file, durable directory entries); SimulatePowerLoss cuts every file back to it at a random
// moment while a writer commits steps and checkpoints are taken. After each loss the restarted store
// must hold every acknowledged step, whole, with consecutive revisions.
TEST(EngineTest, APowerLossLosesNothingAcknowledged) {
  const std::string dir = TempDir("power");
  const uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  int64_t acknowledged = 0;
  const int rounds = 6;
  for (int round = 0; round < rounds; ++round) {
    const uint64_t round_seed = rng();
    ASSERT_CHILD_PASSES([&] {
      FaultInjectingFileSystem faulty(DefaultFileSystem());
      EngineOptions o = Options(dir);
      o.file_system = &faulty;
      o.wal_segment_bytes = 8 << 10;
      auto engine = Engine::Open(o, nullptr);
      CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
      Store& store = (*engine)->store();
      int64_t step = 0;
      const std::string problem = CheckSteps(store, acknowledged, &step);
      CHILD_CHECK(problem.empty(), "round %d: %s", round, problem.c_str());
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
      const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(20 + local() % 150);
      while (std::chrono::steady_clock::now() < end) {
        if (local() % 3 == 0) (void)(*engine)->Checkpoint();
        runtime::SafeRegion waiting;
        std::this_thread::sleep_for(std::chrono::milliseconds(local() % 20));
      }
      absl::Status lost = faulty.SimulatePowerLoss();
      CHILD_CHECK(lost.ok(), "%s", lost.ToString().c_str());
      {
        runtime::SafeRegion waiting;
        writer.join();
      }
      // Everything acknowledged was acknowledged before the power went.
      std::ofstream(dir + "/acked.txt") << acked.load();
      std::fflush(stdout);
      _exit(0);  // the machine is off: no clean shutdown
    });
    std::ifstream(dir + "/acked.txt") >> acknowledged;
  }
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(Options(dir), nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    int64_t steps = 0;
    const std::string problem = CheckSteps((*engine)->store(), acknowledged, &steps);
    CHILD_CHECK(problem.empty(), "%s", problem.c_str());
    std::printf("%d power losses, %lld steps acknowledged, %lld recovered\n", rounds,
                static_cast<long long>(acknowledged), static_cast<long long>(steps));
    return 0;
  });
  fs::remove_all(dir);
}

}  // namespace
}  // namespace revkv::server
