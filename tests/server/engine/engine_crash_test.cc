// Crashes of the durable store: a writer SIGKILLed at random moments (at least 30 times), and power
// losses simulated on the fault-injecting file system's model of what a machine crash keeps. After every
// restart: every acknowledged step is there, each step's multi-key Txn wholly or not at all, and one
// revision per step (no gap). Helpers and the "step" workload: engine_test_util.h.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

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

// The same with four concurrent writers, each with its own keys (prefix "w<n>/") and its own steps, a
// DeleteRange of its older log keys every so often, and checkpoints taken beside them: after each power
// loss every writer's acknowledged steps are all there, each step whole or absent, in increasing
// revisions, and the store's revisions are gap-free (the highest mod revision is the store's revision).
TEST(EngineTest, APowerLossWithConcurrentWritersLosesNothingAcknowledged) {
  const std::string dir = TempDir("power-writers");
  const uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  constexpr int kWriters = 4;
  std::array<int64_t, kWriters> acknowledged{};
  const int rounds = std::max(4, static_cast<int>(16 * Scale()));
  auto prefix = [](int w) { return "w" + std::to_string(w) + "/"; };
  // Every writer's steps and deletions as the state shows them; "" if they are consistent with `acked`.
  auto check = [&](Store& store, const std::array<int64_t, kWriters>& acked,
                   std::array<int64_t, kWriters>* steps) -> std::string {
    absl::StatusOr<std::map<std::string, std::string>> all = Everything(store);
    if (!all.ok()) return "read failed: " + all.status().ToString();
    int64_t newest = 0;
    for (const auto& [k, v] : *all) newest = std::max<int64_t>(newest, std::stoll(v.substr(v.find('@') + 1)));
    for (int w = 0; w < kWriters; ++w) {
      // A writer's deleted log keys are those up to its "floor", put in the same Txn as the deletion.
      std::map<std::string, std::string> present;
      int64_t floor = 0;
      for (const auto& [k, v] : *all) {
        if (k == prefix(w) + "floor") {
          floor = std::stoll(v.substr(0, v.find('@')));
        } else if (k.rfind(prefix(w), 0) == 0) {
          present.emplace(k, v);
        }
      }
      for (int64_t i = 1; i <= floor; ++i) {
        if (present.count(StepLogKey(prefix(w), i)) != 0) {
          return absl::StrCat("writer ", w, ": step ", i, " survived its deletion");
        }
      }
      int64_t last_revision = 0;
      const std::string a = present.count(prefix(w) + "a") ? present[prefix(w) + "a"] : "";
      const int64_t n = a.empty() ? 0 : std::stoll(a.substr(0, a.find('@')));
      for (int64_t i = floor + 1; i <= n; ++i) {
        auto it = present.find(StepLogKey(prefix(w), i));
        if (it == present.end()) return absl::StrCat("writer ", w, ": step ", i, " of ", n, " is missing");
        const int64_t revision = std::stoll(it->second.substr(it->second.find('@') + 1));
        if (revision <= last_revision) return absl::StrCat("writer ", w, ": step ", i, " out of order");
        last_revision = revision;
      }
      for (auto it = present.lower_bound(prefix(w) + "log/"); it != present.end(); ++it) {
        if (it->first.rfind(prefix(w) + "log/", 0) != 0) break;
        const int64_t i = std::stoll(it->first.substr(prefix(w).size() + 4)) - 1000000;
        if (i > n) return absl::StrCat("writer ", w, ": step ", i, " is present but its last whole step is ", n);
      }
      if (n < acked[w]) return absl::StrCat("writer ", w, ": acknowledged step ", acked[w], " lost (", n, ")");
      if (floor > n) return absl::StrCat("writer ", w, ": floor ", floor, " past step ", n);
      const std::string b = present.count(prefix(w) + "b") ? present[prefix(w) + "b"] : "";
      if (a != b) return absl::StrCat("writer ", w, ": a transaction is partly present: a=", a, " b=", b);
      (*steps)[w] = n;
    }
    if (!all->empty() && newest != store.Revision()) {
      return absl::StrCat("the newest key has revision ", newest, ", the store ", store.Revision());
    }
    return "";
  };
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
      std::array<int64_t, kWriters> steps{};
      const std::string problem = check(store, acknowledged, &steps);
      CHILD_CHECK(problem.empty(), "round %d: %s", round, problem.c_str());
      std::array<std::atomic<int64_t>, kWriters> acked;
      for (int w = 0; w < kWriters; ++w) acked[w].store(steps[w]);
      std::vector<std::thread> writers;
      for (int w = 0; w < kWriters; ++w) {
        writers.emplace_back([&, w, first = steps[w] + 1] {
          runtime::ThreadRegistration r("writer");
          for (int64_t i = first;; ++i) {
            etcdserverpb::TxnRequest t = StepTxn(i, prefix(w));
            if (i % 7 == 0) {  // delete the log keys up to i - 3 and move the floor with them
              auto* d = t.add_success()->mutable_request_delete_range();
              d->set_key(StepLogKey(prefix(w), 0));
              d->set_range_end(StepLogKey(prefix(w), i - 2));
              *t.add_success()->mutable_request_put() = PutRequest(prefix(w) + "floor", std::to_string(i - 3));
            }
            auto written = store.Txn(t);
            if (!written.ok() || !store.WaitDurable(written->lsn).ok()) return;  // the power is gone
            acked[w].store(i);
          }
        });
      }
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
        for (std::thread& t : writers) t.join();
      }
      std::ofstream out(dir + "/acked.txt");
      for (int w = 0; w < kWriters; ++w) out << acked[w].load() << "\n";
      out.flush();
      std::fflush(stdout);
      _exit(0);  // the machine is off: no clean shutdown
    });
    std::ifstream in(dir + "/acked.txt");
    for (int w = 0; w < kWriters; ++w) in >> acknowledged[w];
  }
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(Options(dir), nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    std::array<int64_t, kWriters> steps{};
    const std::string problem = check((*engine)->store(), acknowledged, &steps);
    CHILD_CHECK(problem.empty(), "%s", problem.c_str());
    std::printf("%d power losses with %d writers; steps acknowledged", rounds, kWriters);
    for (int w = 0; w < kWriters; ++w) std::printf(" %lld", static_cast<long long>(acknowledged[w]));
    std::printf("\n");
    return 0;
  });
  fs::remove_all(dir);
}

}  // namespace
}  // namespace revkv::server
