// Tests of the durable store: recovery from log and checkpoints, a crash loop with SIGKILL at random
// moments, a failing disk, and concurrent writers whose every revision matches the recovered log.
//
// Each test runs the store in forked children, because a process holds one store and the runtime's
// global time: the test process itself never starts the runtime, so forking it is safe.
#include "server/engine/engine.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "server/wal/fault_injecting_file_system.h"

namespace revkv::server {
namespace {

namespace fs = std::filesystem;

uint64_t Seed() {
  const char* s = std::getenv("REVKV_TEST_SEED");
  const uint64_t seed = s != nullptr ? std::strtoull(s, nullptr, 10) : std::random_device{}();
  std::printf("test seed: %llu (rerun with REVKV_TEST_SEED=%llu)\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  return seed;
}

double Scale() {
  const char* s = std::getenv("REVKV_TEST_SCALE");
  return s != nullptr ? std::max(0.05, std::atof(s)) : 1.0;
}

std::string TempDir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("revkv-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// Runs `body` in a forked child with the runtime started and the thread registered; returns the
// child's exit status (0: every check passed). Expectations inside abort the child with a message.
int RunInChild(const std::function<int()>& body) {
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    runtime::HeapOptions o;
    o.max_heap_bytes = size_t{1} << 30;
    runtime::InitializeRuntime(o);
    int rc;
    {
      runtime::ThreadRegistration registration("child");
      rc = body();
    }
    std::fflush(stdout);
    _exit(rc);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

#define CHILD_CHECK(cond, ...)                                       \
  do {                                                               \
    if (!(cond)) {                                                   \
      std::printf("check failed at line %d: %s: ", __LINE__, #cond); \
      std::printf(__VA_ARGS__);                                      \
      std::printf("\n");                                             \
      return 1;                                                      \
    }                                                                \
  } while (0)

EngineOptions Options(const std::string& dir) {
  EngineOptions o;
  o.data_dir = dir;
  o.fsync_mode = FsyncMode::kAlways;
  o.checkpoint_interval = 0;
  o.wal_segment_bytes = 256 << 10;  // several segments in a test
  return o;
}

etcdserverpb::PutRequest PutRequest(const std::string& k, const std::string& v) {
  etcdserverpb::PutRequest r;
  r.set_key(k);
  r.set_value(v);
  return r;
}

// The write of step i: one Txn putting "a" = i, "b" = i and "log/<i>" = i (so a crash shows whether a
// transaction is wholly present and revisions are consecutive).
etcdserverpb::TxnRequest StepTxn(int64_t i) {
  etcdserverpb::TxnRequest t;
  for (const std::string& k : {std::string("a"), std::string("b"), "log/" + std::to_string(1000000 + i)}) {
    *t.add_success()->mutable_request_put() = PutRequest(k, std::to_string(i));
  }
  return t;
}

std::map<std::string, std::string> Everything(Store& store, int64_t revision = 0) {
  etcdserverpb::RangeRequest r;
  r.set_key(std::string(1, '\0'));
  r.set_range_end(std::string(1, '\0'));
  r.set_revision(revision);
  absl::StatusOr<etcdserverpb::RangeResponse> res = store.Range(r);
  std::map<std::string, std::string> out;
  if (!res.ok()) return out;
  for (const auto& kv : res->kvs()) out[kv.key()] = kv.value() + "@" + std::to_string(kv.mod_revision());
  return out;
}

TEST(EngineTest, WritesSurviveCloseAndReopenWithCheckpointsAndLog) {
  const std::string dir = TempDir("reopen");
  ASSERT_EQ(RunInChild([&] {
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
            }),
            0);
  ASSERT_EQ(RunInChild([&] {
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
              auto all = Everything(store);
              CHILD_CHECK(all.size() == 302, "keys %zu", all.size());
              CHILD_CHECK(all["a"] == "300@301" && all["b"] == "300@301", "a=%s b=%s", all["a"].c_str(),
                          all["b"].c_str());
              // New writes continue the revisions.
              auto w = store.Txn(StepTxn(301));
              CHILD_CHECK(w.ok() && w->revision == expected + 1, "next revision");
              return 0;
            }),
            0);
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
      auto all = Everything((*engine)->store());
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
  ASSERT_EQ(RunInChild([&] {
              auto engine = Engine::Open(Options(dir), nullptr);
              CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
              Store& store = (*engine)->store();
              auto all = Everything(store);
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
                const std::string v = all["log/" + std::to_string(1000000 + i)];
                CHILD_CHECK(v == std::to_string(i) + "@" + std::to_string(i + 1), "step %lld is %s",
                            static_cast<long long>(i), v.c_str());
              }
              return 0;
            }),
            0);
  std::printf("%d kills, %lld steps acknowledged\n", rounds, static_cast<long long>(acknowledged));
  fs::remove_all(dir);
}

TEST(EngineTest, AFailingDiskStopsWritesWithAClearErrorWhileReadsGoOn) {
  const std::string dir = TempDir("disk");
  ASSERT_EQ(RunInChild([&] {
              FaultInjectingFileSystem faulty(DefaultFileSystem());
              EngineOptions o = Options(dir);
              o.file_system = &faulty;
              auto engine = Engine::Open(o, nullptr);
              CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
              Store& store = (*engine)->store();
              int64_t acked = 0;
              for (int i = 1; i <= 50; ++i) {
                auto w = store.Txn(StepTxn(i));
                CHILD_CHECK(w.ok() && (*engine)->wal().WaitDurable(w->lsn).ok(), "write %d", i);
                acked = i;
              }
              faulty.FailWritesAfterBytes(8, ENOSPC);  // the disk fills up in the middle of the next record
              auto w = store.Txn(StepTxn(51));
              absl::Status durable = w.ok() ? (*engine)->wal().WaitDurable(w->lsn) : w.status();
              CHILD_CHECK(!durable.ok(), "the write that hit the full disk was acknowledged");
              CHILD_CHECK(durable.message().find("No space left on device") != std::string::npos, "%s",
                          durable.ToString().c_str());
              auto next = store.Put(PutRequest("c", "x"));
              CHILD_CHECK(!next.ok(), "writes go on after a disk error");
              CHILD_CHECK(next.status().message().find("writes are disabled") != std::string::npos, "%s",
                          next.status().ToString().c_str());
              auto all = Everything(store);  // reads go on
              CHILD_CHECK(all.count("a") == 1, "reads fail after a disk error");
              std::ofstream(dir + "/acked.txt") << acked;
              (void)(*engine)->Close();
              return 0;
            }),
            0);
  ASSERT_EQ(RunInChild([&] {
              auto engine = Engine::Open(Options(dir), nullptr);
              CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
              int64_t acked = 0;
              std::ifstream(dir + "/acked.txt") >> acked;
              auto all = Everything((*engine)->store());
              const int64_t a = std::stoll(all["a"].substr(0, all["a"].find('@')));
              CHILD_CHECK(a == acked, "recovered step %lld, acknowledged %lld", static_cast<long long>(a),
                          static_cast<long long>(acked));
              CHILD_CHECK(all["b"] == all["a"], "a torn transaction is visible");
              CHILD_CHECK((*engine)->store().Txn(StepTxn(a + 1)).ok(), "writes work again after a restart");
              return 0;
            }),
            0);
  fs::remove_all(dir);
}

TEST(EngineTest, ConcurrentWritersAgreeWithTheRecoveredLogAtEveryRevision) {
  const std::string dir = TempDir("concurrent");
  const uint64_t seed = Seed();
  const int per_thread = static_cast<int>(1500 * Scale()) + 50;
  ASSERT_EQ(RunInChild([&] {
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
                for (const auto& [k, v] : Everything(store, rev)) out << rev << " " << k << " " << v << "\n";
              }
              return 0;
            }),
            0);
  ASSERT_EQ(RunInChild([&] {
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
                CHILD_CHECK(Everything(store, r) == expected[r],
                            "state at revision %lld differs after replay", static_cast<long long>(r));
              }
              return 0;
            }),
            0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace revkv::server
