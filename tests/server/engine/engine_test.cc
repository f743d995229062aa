// Tests of the durable store: recovery from the log and checkpoints, falling back from a corrupt
// checkpoint, checkpoints while writers commit (and one that must not run ahead of the log), and
// concurrent writers whose every revision matches the recovered log. Crashes: engine_crash_test.cc;
// failing disks: engine_disk_failure_test.cc. Helpers and the "step" workload: engine_test_util.h.
#include "server/engine/engine.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "server/store/errors.h"
#include "server/wal/fault_injecting_file_system.h"
#include "tests/server/engine/engine_test_util.h"

namespace revkv::server {
namespace {

namespace fs = std::filesystem;
using namespace engine_testing;  // NOLINT: the test helpers read best unqualified

TEST(EngineTest, WritesSurviveCloseAndReopenWithCheckpointsAndLog) {
  const std::string dir = TempDir("reopen");
  ASSERT_CHILD_PASSES([&] {
    RecoveryReport report;
    auto engine = Engine::Open(Options(dir), &report);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    for (int i = 1; i <= 300; ++i) {
      auto w = (*engine)->store().Txn(StepTxn(i));
      CHILD_CHECK(w.ok(), "%s", w.status().ToString().c_str());
      CHILD_CHECK((*engine)->wal().WaitDurable(w->lsn).ok(), "durable");
      if (i == 100 || i == 200) CHILD_CHECK((*engine)->Checkpoint().ok(), "checkpoint");
    }
    std::ofstream(dir + "/expected.txt") << (*engine)->store().Revision();
    return 0;
  });
  ASSERT_CHILD_PASSES([&] {
    RecoveryReport report;
    auto engine = Engine::Open(Options(dir), &report);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    Store& store = (*engine)->store();
    int64_t expected = 0;
    std::ifstream(dir + "/expected.txt") >> expected;
    CHILD_CHECK(store.Revision() == expected, "revision %lld, expected %lld",
                static_cast<long long>(store.Revision()), static_cast<long long>(expected));
    CHILD_CHECK(report.checkpoint.loaded.has_value() && report.checkpoint.loaded->revision == 201,
                "recovery should start from the checkpoint at revision 201: %s",
                report.checkpoint.ToString().c_str());
    CHILD_CHECK(report.wal.records_replayed == 100, "replayed %llu",
                static_cast<unsigned long long>(report.wal.records_replayed));
    CHILD_READ(all, Everything(store));
    CHILD_CHECK(all.size() == 302, "keys %zu", all.size());
    CHILD_CHECK(all["a"] == "300@301" && all["b"] == "300@301", "a=%s b=%s", all["a"].c_str(),
                all["b"].c_str());
    // New writes continue the revisions.
    auto w = store.Txn(StepTxn(301));
    CHILD_CHECK(w.ok() && w->revision == expected + 1, "next revision");
    return 0;
  });
  fs::remove_all(dir);
}

TEST(EngineTest, AcknowledgedWritesSurviveSigkillAtRandomMoments) {
  const std::string dir = TempDir("crash");
  const uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  const int rounds = std::max(30, static_cast<int>(40 * Scale()));
  int64_t acknowledged = 0;  // highest step acknowledged so far, over all rounds
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
      if (!engine.ok()) _exit(3);
      // Resume after the last recovered step, reporting each acknowledged one.
      auto read = Everything((*engine)->store());
      if (!read.ok()) _exit(3);
      auto& all = *read;
      int64_t step = all.count("a") ? std::stoll(all["a"].substr(0, all["a"].find('@'))) + 1 : 1;
      dprintf(fds[1], "ready %lld\n", static_cast<long long>(step));
      std::mt19937_64 child_rng(seed + static_cast<uint64_t>(round));
      for (;; ++step) {
        auto w = (*engine)->store().Txn(StepTxn(step));
        if (!w.ok()) _exit(4);
        if (!(*engine)->wal().WaitDurable(w->lsn).ok()) _exit(5);
        dprintf(fds[1], "ack %lld\n", static_cast<long long>(step));
        if (child_rng() % 50 == 0) (void)(*engine)->Checkpoint();
      }
    }
    close(fds[1]);
    FILE* in = fdopen(fds[0], "r");
    char line[64];
    ASSERT_NE(std::fgets(line, sizeof(line), in), nullptr)
        << "the writer did not start (round " << round << ")";
    long long resumed = 0;
    ASSERT_EQ(std::sscanf(line, "ready %lld", &resumed), 1);
    ASSERT_GE(resumed, acknowledged + 1)
        << "the writer resumed at step " << resumed << " but step " << acknowledged << " was acknowledged";
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
    return 0;
  });
  std::printf("%d kills, %lld steps acknowledged\n", rounds, static_cast<long long>(acknowledged));
  fs::remove_all(dir);
}

TEST(EngineTest, ConcurrentWritersAgreeWithTheRecoveredLogAtEveryRevision) {
  const std::string dir = TempDir("concurrent");
  const uint64_t seed = Seed();
  const int per_thread = static_cast<int>(1500 * Scale()) + 50;
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(Options(dir), nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    Store& store = (*engine)->store();
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        runtime::ThreadRegistration r("writer");
        std::mt19937_64 rng(seed + static_cast<uint64_t>(t));
        for (int i = 0; i < per_thread; ++i) {
          const std::string k = "k" + std::to_string(rng() % 20);
          etcdserverpb::TxnRequest txn;
          auto* c = txn.add_compare();
          c->set_key(k);
          c->set_target(etcdserverpb::Compare::VERSION);
          c->set_result(etcdserverpb::Compare::LESS);
          c->set_version(static_cast<int64_t>(rng() % 40));
          *txn.add_success()->mutable_request_put() =
              PutRequest(k, std::to_string(t) + ":" + std::to_string(i));
          auto* del = txn.add_failure()->mutable_request_delete_range();
          del->set_key(k);
          auto w = store.Txn(txn);
          if (!w.ok() || !(*engine)->wal().WaitDurable(w->lsn).ok()) failures.fetch_add(1);
        }
      });
    }
    {
      runtime::SafeRegion waiting;
      for (auto& th : threads) th.join();
    }
    CHILD_CHECK(failures.load() == 0, "%d writes failed", failures.load());
    // Every revision's state, from the live store's history.
    std::ofstream out(dir + "/states.txt");
    out << store.Revision() << "\n";
    for (int64_t rev = 1; rev <= store.Revision(); ++rev) {
      CHILD_READ(state, Everything(store, rev));
      for (const auto& [k, v] : state) out << rev << " " << k << " " << v << "\n";
    }
    return 0;
  });
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(Options(dir), nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    Store& store = (*engine)->store();
    std::ifstream in(dir + "/states.txt");
    int64_t last = 0;
    in >> last;
    CHILD_CHECK(store.Revision() == last, "recovered revision %lld, expected %lld",
                static_cast<long long>(store.Revision()), static_cast<long long>(last));
    std::map<int64_t, std::map<std::string, std::string>> expected;
    int64_t rev;
    std::string k, v;
    while (in >> rev >> k >> v) expected[rev][k] = v;
    for (int64_t r = 1; r <= last; ++r) {
      CHILD_READ(state, Everything(store, r));
      CHILD_CHECK(state == expected[r], "state at revision %lld differs after replay",
                  static_cast<long long>(r));
    }
    return 0;
  });
  fs::remove_all(dir);
}

}  // namespace
}  // namespace revkv::server
