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

#include "absl/cleanup/cleanup.h"
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

// The scenario a checkpoint ahead of the durable log loses acknowledged writes in: the checkpoint at R
// is written while records up to R are still in the log buffer (here: the log's disk stalls), the process
// crashes, the restart continues the log at R + 1, and later checkpoint R is found corrupt. The fallback
// to the previous checkpoint must then find the log whole. A checkpoint therefore becomes valid only once
// the log is synced through its revision.
TEST(EngineTest, ACheckpointNeverRunsAheadOfTheDurableLog) {
  const std::string dir = TempDir("ahead");
  ASSERT_CHILD_PASSES([&] {
    FaultInjectingFileSystem faulty(DefaultFileSystem());
    EngineOptions o = Options(dir);
    o.file_system = &faulty;
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    Store& store = (*engine)->store();
    absl::Status s = WriteSteps(store, 1, 20);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    auto first = (*engine)->Checkpoint();
    CHILD_CHECK(first.ok() && first->revision == 21, "first checkpoint");
    // The log's disk stalls: steps 21..30 commit, their records stay in the log buffer.
    faulty.PauseWrites(dir + "/wal/");
    for (int64_t i = 21; i <= 30; ++i) CHILD_CHECK(store.Txn(StepTxn(i)).ok(), "step %d", int(i));
    // A checkpoint of revision 31, then a crash as soon as it is complete.
    std::thread checkpointer([&] {
      runtime::ThreadRegistration r("checkpointer");
      auto c = (*engine)->Checkpoint();
      std::fflush(stdout);
      _exit(c.ok() && c->revision == 31 ? 0 : 7);
    });
    runtime::SafeRegion waiting;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    faulty.ResumeWrites();  // the disk recovers; the crash comes with the checkpoint
    checkpointer.join();
    return 8;  // not reached
  });
  ASSERT_CHILD_PASSES([&] {
    RecoveryReport report;
    auto engine = Engine::Open(Options(dir), &report);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    CHILD_CHECK(report.checkpoint.loaded && report.checkpoint.loaded->revision == 31, "%s",
                report.checkpoint.ToString().c_str());
    // Steps 31..40 are acknowledged.
    absl::Status s = WriteSteps((*engine)->store(), 31, 40);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    return 0;
  });
  FlipByteInTheMiddle(CheckpointPath(dir, 31));
  ASSERT_CHILD_PASSES([&] {
    RecoveryReport report;
    auto engine = Engine::Open(Options(dir), &report);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    CHILD_CHECK(report.checkpoint.loaded && report.checkpoint.loaded->revision == 21 &&
                    report.checkpoint.skipped.size() == 1,
                "%s", report.checkpoint.ToString().c_str());
    int64_t steps = 0;
    const std::string problem = CheckSteps((*engine)->store(), 40, &steps);
    CHILD_CHECK(problem.empty(), "%s; %s", problem.c_str(), report.wal.ToString().c_str());
    CHILD_CHECK(steps == 40, "steps %lld", static_cast<long long>(steps));
    return 0;
  });
  fs::remove_all(dir);
}

TEST(EngineTest, ACorruptNewestCheckpointFallsBackToThePreviousOneAndTheLog) {
  const std::string dir = TempDir("fallback");
  EngineOptions o = Options(dir);
  o.wal_segment_bytes = 4 << 10;  // a few dozen steps per segment: old segments are removed
  int64_t segments_after_crash = 0;
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    Store& store = (*engine)->store();
    absl::Status s = WriteSteps(store, 1, 100);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    CHILD_CHECK((*engine)->Checkpoint().ok(), "checkpoint at 101");
    s = WriteSteps(store, 101, 200);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    CHILD_CHECK((*engine)->Checkpoint().ok(), "checkpoint at 201");
    s = WriteSteps(store, 201, 300);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    std::fflush(stdout);
    _exit(0);  // a crash right after step 300 was acknowledged
  });
  const std::vector<int64_t> segments = SegmentFirstRevisions(dir + "/wal");
  segments_after_crash = static_cast<int64_t>(segments.size());
  ASSERT_LE(segments.front(), 102) << "the log must reach back to the older checkpoint";
  ASSERT_GT(segments.front(), 2) << "segments before the older checkpoint should have been removed";
  FlipByteInTheMiddle(CheckpointPath(dir, 201));
  ASSERT_CHILD_PASSES([&] {
    RecoveryReport report;
    auto engine = Engine::Open(o, &report);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    CHILD_CHECK(report.checkpoint.loaded && report.checkpoint.loaded->revision == 101, "%s",
                report.checkpoint.ToString().c_str());
    CHILD_CHECK(report.checkpoint.skipped.size() == 1 &&
                    report.checkpoint.skipped[0].path == CheckpointPath(dir, 201) &&
                    fs::exists(report.checkpoint.skipped[0].renamed_to),
                "%s", report.checkpoint.ToString().c_str());
    CHILD_CHECK(report.wal.records_replayed == 200, "%s", report.wal.ToString().c_str());
    CHILD_CHECK(!report.wal.corruption.has_value(), "%s", report.wal.ToString().c_str());
    int64_t steps = 0;
    const std::string problem = CheckSteps((*engine)->store(), 300, &steps);
    CHILD_CHECK(problem.empty(), "%s", problem.c_str());
    CHILD_CHECK(steps == 300, "steps %lld", static_cast<long long>(steps));
    return 0;
  });
  std::printf("%lld segments; fell back to the checkpoint at 101 and replayed 200 records\n",
              static_cast<long long>(segments_after_crash));
  fs::remove_all(dir);
}

TEST(EngineTest, ACorruptOnlyCheckpointFallsBackToTheWholeLog) {
  // With checkpoint_keep = 2, the first checkpoint has no previous one to fall back to but the log
  // from its start, so it must not remove any segment.
  const std::string dir = TempDir("only");
  EngineOptions o = Options(dir);
  o.wal_segment_bytes = 4 << 10;
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    absl::Status s = WriteSteps((*engine)->store(), 1, 150);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    CHILD_CHECK((*engine)->Checkpoint().ok(), "checkpoint at 151");
    s = WriteSteps((*engine)->store(), 151, 160);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    return 0;
  });
  ASSERT_EQ(SegmentFirstRevisions(dir + "/wal").front(), 2);
  FlipByteInTheMiddle(CheckpointPath(dir, 151));
  ASSERT_CHILD_PASSES([&] {
    RecoveryReport report;
    auto engine = Engine::Open(o, &report);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    CHILD_CHECK(!report.checkpoint.loaded && report.checkpoint.skipped.size() == 1, "%s",
                report.checkpoint.ToString().c_str());
    int64_t steps = 0;
    const std::string problem = CheckSteps((*engine)->store(), 160, &steps);
    CHILD_CHECK(problem.empty(), "%s", problem.c_str());
    return 0;
  });
  fs::remove_all(dir);
}

// Two writers commit while checkpoints are taken. Each checkpoint holds exactly the state of one
// revision (compared key by key, with revisions and versions, against the store's history), each
// writer's Txns in it are whole, and the second checkpoint removes the log segments the first one
// covers (checkpoint_keep = 2), while the log still reaches back to the first.
TEST(EngineTest, ACheckpointWhileTwoWritersCommitHoldsOneRevisionAndRemovesOldSegments) {
  const std::string dir = TempDir("ckpt-writers");
  ASSERT_CHILD_PASSES([&] {
    EngineOptions o = Options(dir);
    o.fsync_mode = FsyncMode::kNone;  // the checkpoint syncs the log itself
    o.wal_segment_bytes = 16 << 10;
    o.store.history_revisions = 0;  // every revision after the compaction stays readable, to compare with
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    Store& store = (*engine)->store();
    // 30,000 keys first, so a checkpoint takes a while; about 40 segments.
    for (int base = 0; base < 30000; base += 100) {
      etcdserverpb::TxnRequest t;
      for (int i = base; i < base + 100; ++i) {
        *t.add_success()->mutable_request_put() = PutRequest("pre/" + std::to_string(i), "v");
      }
      CHILD_CHECK(store.Txn(t).ok(), "preload");
    }
    std::atomic<bool> stop{false};
    std::atomic<int> failures{0};
    std::vector<std::thread> writers;
    for (int t = 0; t < 2; ++t) {
      writers.emplace_back([&, t] {
        runtime::ThreadRegistration r("writer");
        const std::string prefix = "w" + std::to_string(t) + "/";
        for (int64_t i = 1; !stop.load(); ++i) {
          if (!store.Txn(StepTxn(i, prefix)).ok()) failures.fetch_add(1);
        }
      });
    }
    // A failed check returns early: the writers still stop and are joined, so that the child exits with
    // the check's status rather than std::terminate on a joinable thread.
    absl::Cleanup join_writers = [&] {
      stop.store(true);
      runtime::SafeRegion waiting;
      for (auto& w : writers) {
        if (w.joinable()) w.join();
      }
    };
    // True once the writers have committed past `revision`, false if they have not within 30 s. Under
    // load they can go without CPU for a while; the checkpoints must be taken while they commit.
    auto committed_after = [&](int64_t revision) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (store.Revision() <= revision && std::chrono::steady_clock::now() < deadline) {
        runtime::SafeRegion waiting;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      return store.Revision() > revision;
    };
    auto check_checkpoint = [&](const CheckpointStats& c) -> int {
      std::map<std::string, std::string> in_file;
      auto loaded =
          LoadNewestValidCheckpoint(DefaultFileSystem(), dir + "/checkpoints", [&](const CheckpointEntry& e) {
            in_file[std::string(e.key)] = std::string(e.value) + "@" + std::to_string(e.mod_revision);
            return absl::OkStatus();
          });
      CHILD_CHECK(loaded.ok() && loaded->loaded && loaded->loaded->revision == c.revision, "%s",
                  loaded.ok() ? loaded->ToString().c_str() : loaded.status().ToString().c_str());
      CHILD_CHECK(loaded->loaded->base_revision == c.base_revision, "base revision");
      CHILD_READ(at, Everything(store, c.base_revision));
      CHILD_CHECK(in_file == at, "checkpoint %lld: %zu keys, the store had %zu at that revision",
                  static_cast<long long>(c.base_revision), in_file.size(), at.size());
      for (const std::string prefix : {"w0/", "w1/"}) {
        int64_t steps = 0;
        const std::string problem = CheckStepsIn(in_file, prefix, false, &steps);
        CHILD_CHECK(problem.empty(), "%s%s", prefix.c_str(), problem.c_str());
      }
      CHILD_CHECK(committed_after(c.revision) && c.revision > c.base_revision,
                  "the writers stopped during the checkpoint");
      return 0;
    };
    // A checkpoint holds the oldest readable revision; with no window that is the compaction's. So
    // compact to the newest revision, with the writers going, before each checkpoint.
    // Then wait for a writer's commit after it, so that the checkpoint holds an older revision than the
    // newest one.
    auto compact_now = [&] {
      etcdserverpb::CompactionRequest r;
      // The newest revision a client can have seen: with fsync none the newest commit may not be
      // durable yet, and Compact answers "future revision" past the durable one.
      r.set_revision(store.VisibleRevision());
      return store.Compact(r).ok() && committed_after(r.revision());
    };
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    CHILD_CHECK(compact_now(), "compact");
    auto first = (*engine)->Checkpoint();
    CHILD_CHECK(first.ok(), "%s", first.status().ToString().c_str());
    if (int rc = check_checkpoint(*first); rc != 0) return rc;
    const std::vector<int64_t> before = SegmentFirstRevisions(dir + "/wal");
    CHILD_CHECK(before.front() == 2, "the only checkpoint removed segments");
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    CHILD_CHECK(compact_now(), "compact");
    auto second = (*engine)->Checkpoint();
    CHILD_CHECK(second.ok(), "%s", second.status().ToString().c_str());
    if (int rc = check_checkpoint(*second); rc != 0) return rc;
    std::move(join_writers).Invoke();
    CHILD_CHECK(failures.load() == 0, "%d writes failed", failures.load());
    // The segments wholly before the state the first checkpoint holds are gone; the one holding the
    // revision after it is still there.
    std::vector<std::string> doomed;
    for (size_t i = 0; i + 1 < before.size(); ++i) {
      if (before[i + 1] - 1 <= first->base_revision) {
        doomed.push_back(dir + "/wal/" + NumberedFileName("wal-", before[i], ".log"));
      }
    }
    CHILD_CHECK(doomed.size() >= 10, "only %zu segments before the first checkpoint", doomed.size());
    for (const std::string& path : doomed) CHILD_CHECK(!fs::exists(path), "%s is still there", path.c_str());
    const std::vector<int64_t> after = SegmentFirstRevisions(dir + "/wal");
    CHILD_CHECK(after.front() <= first->base_revision + 1 && after.size() >= 2,
                "the log no longer reaches back to the first checkpoint");
    std::printf("checkpoints at %lld (%llu entries) and %lld (%llu entries); %zu segments removed\n",
                static_cast<long long>(first->revision), static_cast<unsigned long long>(first->entries),
                static_cast<long long>(second->revision), static_cast<unsigned long long>(second->entries),
                doomed.size());
    return 0;
  });
  fs::remove_all(dir);
}

// One write of the concurrency test and what it must have done at its revision.
struct LoggedWrite {
  char kind;                      // 'T': a Txn that put `keys`; 'D': a delete of [begin, end)
  int64_t revision;               // the revision its WriteResult reported
  std::string value;              // 'T': the value of every key
  std::vector<std::string> keys;  // 'T'
  std::string begin, end;         // 'D'
  int64_t deleted = 0;            // 'D'
};

std::string Key(uint64_t n) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "k%02u", static_cast<unsigned>(n % 20));
  return buf;
}

// Four threads of random multi-key Txns (compare, then puts of 1-3 keys, or a range delete) and range
// deletes. After a restart, the recovered store must agree with the live one at every revision, every
// revision must belong to exactly one write, and each write's effect must be visible at the revision it
// was told: its puts at that revision with that mod_revision, its deleted keys present just before and
// gone at it.
TEST(EngineTest, ConcurrentWritersAgreeWithTheRecoveredLogAtEveryRevision) {
  const std::string dir = TempDir("concurrent");
  const uint64_t seed = Seed();
  const int per_thread = static_cast<int>(1500 * Scale()) + 50;
  EngineOptions o = Options(dir);
  o.store.history_revisions = 0;  // every revision stays readable: a compacted one would read as empty
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    Store& store = (*engine)->store();
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    std::mutex log_mu;
    std::vector<LoggedWrite> log;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        runtime::ThreadRegistration r("writer");
        std::mt19937_64 rng(seed + static_cast<uint64_t>(t));
        for (int i = 0; i < per_thread; ++i) {
          const std::string value = std::to_string(t) + ":" + std::to_string(i);
          std::string lo = Key(rng());
          std::string hi = Key(rng());
          if (hi < lo) std::swap(lo, hi);
          hi += "~";  // [lo, hi~): lo..hi inclusive
          LoggedWrite lw;
          if (rng() % 4 == 0) {
            etcdserverpb::DeleteRangeRequest d;
            d.set_key(lo);
            d.set_range_end(hi);
            auto w = store.DeleteRange(d);
            if (!w.ok() || !store.WaitDurable(w->lsn).ok()) {
              failures.fetch_add(1);
              continue;
            }
            if (w->lsn == 0) continue;  // deleted nothing: no revision
            lw = LoggedWrite{'D', w->revision, "", {}, lo, hi, w->response.deleted()};
          } else {
            etcdserverpb::TxnRequest txn;
            auto* c = txn.add_compare();
            c->set_key(Key(rng()));
            c->set_target(etcdserverpb::Compare::VERSION);
            c->set_result(etcdserverpb::Compare::LESS);
            c->set_version(static_cast<int64_t>(rng() % 40));
            std::set<std::string> keys;
            for (uint64_t n = 1 + rng() % 3; keys.size() < n;) keys.insert(Key(rng()));
            for (const std::string& k : keys)
              *txn.add_success()->mutable_request_put() = PutRequest(k, value);
            auto* del = txn.add_failure()->mutable_request_delete_range();
            del->set_key(lo);
            del->set_range_end(hi);
            auto w = store.Txn(txn);
            if (!w.ok() || !store.WaitDurable(w->lsn).ok()) {
              failures.fetch_add(1);
              continue;
            }
            if (w->lsn == 0) continue;  // the failure branch deleted nothing
            if (w->response.succeeded()) {
              lw = LoggedWrite{'T', w->revision, value, {keys.begin(), keys.end()}, "", "", 0};
            } else {
              const int64_t n = w->response.responses(0).response_delete_range().deleted();
              lw = LoggedWrite{'D', w->revision, "", {}, lo, hi, n};
            }
          }
          std::lock_guard<std::mutex> lock(log_mu);
          log.push_back(std::move(lw));
        }
      });
    }
    {
      runtime::SafeRegion waiting;
      for (auto& th : threads) th.join();
    }
    CHILD_CHECK(failures.load() == 0, "%d writes failed", failures.load());
    // Every revision's state, from the live store's history; then every write.
    std::ofstream out(dir + "/states.txt");
    out << store.Revision() << "\n";
    for (int64_t rev = 1; rev <= store.Revision(); ++rev) {
      CHILD_READ(state, Everything(store, rev));
      for (const auto& [k, v] : state) out << rev << " " << k << " " << v << "\n";
    }
    std::ofstream writes(dir + "/writes.txt");
    for (const LoggedWrite& lw : log) {
      writes << lw.kind << " " << lw.revision << " ";
      if (lw.kind == 'T') {
        writes << lw.value << " " << lw.keys.size();
        for (const std::string& k : lw.keys) writes << " " << k;
      } else {
        writes << lw.begin << " " << lw.end << " " << lw.deleted;
      }
      writes << "\n";
    }
    return 0;
  });
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(o, nullptr);
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
    std::vector<std::map<std::string, std::string>> replayed(static_cast<size_t>(last) + 1);
    for (int64_t r = 1; r <= last; ++r) {
      CHILD_READ(state, Everything(store, r));
      CHILD_CHECK(state == expected[r], "state at revision %lld differs after replay",
                  static_cast<long long>(r));
      replayed[static_cast<size_t>(r)] = state;
    }
    // Each write against the replayed state at the revision it was given.
    std::ifstream writes(dir + "/writes.txt");
    std::set<int64_t> owned;
    std::string line;
    size_t count = 0;
    while (std::getline(writes, line)) {
      ++count;
      std::istringstream w(line);
      char kind;
      int64_t r;
      w >> kind >> r;
      CHILD_CHECK(r >= 2 && r <= last, "write at revision %lld", static_cast<long long>(r));
      CHILD_CHECK(owned.insert(r).second, "two writes were given revision %lld", static_cast<long long>(r));
      const auto& at = replayed[static_cast<size_t>(r)];
      const auto& before = replayed[static_cast<size_t>(r - 1)];
      if (kind == 'T') {
        std::string value;
        size_t n;
        w >> value >> n;
        for (size_t i = 0; i < n; ++i) {
          std::string key;
          w >> key;
          auto it = at.find(key);
          CHILD_CHECK(it != at.end() && it->second == value + "@" + std::to_string(r),
                      "Txn at %lld put %s=%s but the log replays %s", static_cast<long long>(r), key.c_str(),
                      value.c_str(), it == at.end() ? "nothing" : it->second.c_str());
        }
      } else {
        std::string begin, end;
        int64_t deleted;
        w >> begin >> end >> deleted;
        int64_t present_before = 0;
        for (auto it = before.lower_bound(begin); it != before.end() && it->first < end; ++it)
          ++present_before;
        auto first_after = at.lower_bound(begin);
        CHILD_CHECK(present_before == deleted && deleted > 0 &&
                        (first_after == at.end() || first_after->first >= end),
                    "delete [%s, %s) at %lld reported %lld deleted; %lld were there before", begin.c_str(),
                    end.c_str(), static_cast<long long>(r), static_cast<long long>(deleted),
                    static_cast<long long>(present_before));
      }
    }
    CHILD_CHECK(static_cast<int64_t>(owned.size()) == last - 1,
                "%zu writes own %zu of the %lld revisions after the first", count, owned.size(),
                static_cast<long long>(last - 1));
    std::printf("%zu writes checked against %lld replayed revisions\n", count, static_cast<long long>(last));
    return 0;
  });
  fs::remove_all(dir);
}

}  // namespace
}  // namespace revkv::server
