// Tests of what recovery must bring back besides the newest state: checkpoints of any shape (many keys
// at one revision), falling back past a checkpoint the store cannot use, compactions, and the history
// window (a read at a past revision answers after a restart exactly as before it).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "server/checkpoint/checkpoint.h"
#include "server/engine/engine.h"
#include "server/store/errors.h"
#include "tests/server/engine/engine_test_util.h"

namespace revkv::server {
namespace {

namespace fs = std::filesystem;
using namespace engine_testing;  // NOLINT: the test helpers read best unqualified

// The answer to "everything at `revision`" as one comparable string: the state, or the error.
std::string AnswerAt(Store& store, int64_t revision) {
  absl::StatusOr<std::map<std::string, std::string>> all = Everything(store, revision);
  if (!all.ok()) return "error: " + all.status().ToString();
  std::string s;
  for (const auto& [k, v] : *all) s += k + "=" + v + ";";
  return s;
}

etcdserverpb::CompactionRequest CompactRequest(int64_t revision) {
  etcdserverpb::CompactionRequest r;
  r.set_revision(revision);
  return r;
}

// A legal Txn may write far more keys at one revision than the loader's batch holds (a nested Txn
// multiplies --max-txn-ops; the flag itself may exceed 4096). Loading used one runtime time step per
// batch of 4,096 and refused a checkpoint whose batches did not fit below its revision's time: the
// server could not start from its own checkpoint.
TEST(EngineHistory, ACheckpointWithMoreThan4096KeysAtOneRevisionLoads) {
  const std::string dir = TempDir("many-keys");
  constexpr int kKeys = 9000;  // three batches at revision 2
  EngineOptions o = Options(dir);
  o.store.max_txn_ops = kKeys;
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    etcdserverpb::TxnRequest t;
    for (int i = 0; i < kKeys; ++i) {
      *t.add_success()->mutable_request_put() =
          PutRequest("k" + std::to_string(100000 + i), std::to_string(i));
    }
    auto w = (*engine)->store().Txn(t);
    CHILD_CHECK(w.ok() && w->revision == 2, "%s", w.status().ToString().c_str());
    CHILD_CHECK((*engine)->store().WaitDurable(w->lsn).ok(), "durable");
    auto c = (*engine)->Checkpoint();
    CHILD_CHECK(c.ok() && c->revision == 2 && c->entries == kKeys, "%s", c.status().ToString().c_str());
    return 0;
  });
  ASSERT_CHILD_PASSES([&] {
    RecoveryReport report;
    auto engine = Engine::Open(o, &report);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    CHILD_CHECK(report.checkpoint.loaded && report.checkpoint.loaded->revision == 2, "%s",
                report.checkpoint.ToString().c_str());
    Store& store = (*engine)->store();
    CHILD_CHECK(store.Revision() == 2, "revision %lld", static_cast<long long>(store.Revision()));
    CHILD_READ(all, Everything(store));
    CHILD_CHECK(all.size() == kKeys, "%zu keys", all.size());
    CHILD_CHECK(all["k100000"] == "0@2" && all["k108999"] == "8999@2", "%s %s", all["k100000"].c_str(),
                all["k108999"].c_str());
    auto next = store.Put(PutRequest("after", "x"));
    CHILD_CHECK(next.ok() && next->revision == 3, "the next write continues at revision 3");
    CHILD_CHECK(AnswerAt(store, 2).rfind("error", 0) != 0, "revision 2 reads");
    CHILD_CHECK(AnswerAt(store, 1) == "error: " + errors::Compacted().ToString(), "%s",
                AnswerAt(store, 1).c_str());
    return 0;
  });
  fs::remove_all(dir);
}

// Writes steps 1..200 with a checkpoint after step 100 (at revision 101), then adds a newer checkpoint
// whose CRC holds but whose content no store can be (keys out of order), as a writer's bug would
// leave it, at `bad_revision`.
void PrepareUnusableNewestCheckpoint(const std::string& dir, int64_t bad_revision) {
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(Options(dir), nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    absl::Status s = WriteSteps((*engine)->store(), 1, 100);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    auto c = (*engine)->Checkpoint();
    CHILD_CHECK(c.ok() && c->revision == 101, "checkpoint");
    s = WriteSteps((*engine)->store(), 101, 200);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    return 0;
  });
  auto writer = CheckpointWriter::Open(DefaultFileSystem(), dir + "/checkpoints", bad_revision, 0);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Add(CheckpointEntry{"b", "1", 2, 2, 1, 0}).ok());
  ASSERT_TRUE((*writer)->Add(CheckpointEntry{"a", "1", 2, 2, 1, 0}).ok());
  ASSERT_TRUE((*writer)->Finish().ok());
}

TEST(EngineHistory, AnUnusableNewestCheckpointFallsBackToThePreviousOneAndTheLog) {
  const std::string dir = TempDir("unusable");
  PrepareUnusableNewestCheckpoint(dir, 150);
  ASSERT_CHILD_PASSES([&] {
    RecoveryReport report;
    auto engine = Engine::Open(Options(dir), &report);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    CHILD_CHECK(report.checkpoint.loaded && report.checkpoint.loaded->revision == 101, "%s",
                report.checkpoint.ToString().c_str());
    CHILD_CHECK(report.checkpoint.skipped.size() == 1 &&
                    report.checkpoint.skipped[0].path == CheckpointPath(dir, 150) &&
                    report.checkpoint.skipped[0].reason.find("not after") != std::string::npos &&
                    fs::exists(report.checkpoint.skipped[0].renamed_to),
                "%s", report.checkpoint.ToString().c_str());
    int64_t steps = 0;
    const std::string problem = CheckSteps((*engine)->store(), 200, &steps);
    CHILD_CHECK(problem.empty(), "%s", problem.c_str());
    CHILD_CHECK(steps == 200, "steps %lld", static_cast<long long>(steps));
    return 0;
  });
  fs::remove_all(dir);
}

// The unusable checkpoint shows revision 1000 was reached, but the older checkpoint and the log end at
// 201: starting would silently drop acknowledged writes, so Open fails and says why, every time (the
// failed attempt leaves the evidence in place).
TEST(EngineHistory, RecoveryRefusesToStartWithLessThanAnUnusableCheckpointHeld) {
  const std::string dir = TempDir("unusable-ahead");
  PrepareUnusableNewestCheckpoint(dir, 1000);
  for (int attempt = 0; attempt < 2; ++attempt)
    ASSERT_CHILD_PASSES([&] {
      auto engine = Engine::Open(Options(dir), nullptr);
      CHILD_CHECK(!engine.ok(), "recovery started at revision %lld",
                  static_cast<long long>((*engine)->store().Revision()));
      CHILD_CHECK(absl::IsDataLoss(engine.status()) &&
                      engine.status().message().find(CheckpointPath(dir, 1000)) != std::string::npos &&
                      engine.status().message().find("revision 201") != std::string::npos,
                  "%s", engine.status().ToString().c_str());
      return 0;
    });
  fs::remove_all(dir);
}

// A recovery that fails leaves the disk as it found it: an unusable newest checkpoint is set aside
// (renamed .corrupt) only once everything else has succeeded, so a damaged compaction record stops
// Open with both checkpoints still under their names, and the next attempt meets the same evidence.
TEST(EngineHistory, AFailedRecoveryRenamesNoCheckpoint) {
  const std::string dir = TempDir("unusable-compaction-damaged");
  PrepareUnusableNewestCheckpoint(dir, 150);
  std::ofstream(dir + "/COMPACTION", std::ios::binary) << "revkvCMP damaged";
  for (int attempt = 0; attempt < 2; ++attempt)
    ASSERT_CHILD_PASSES([&] {
      auto engine = Engine::Open(Options(dir), nullptr);
      CHILD_CHECK(!engine.ok(), "recovery started at revision %lld",
                  static_cast<long long>((*engine)->store().Revision()));
      CHILD_CHECK(absl::IsDataLoss(engine.status()) &&
                      engine.status().message().find("COMPACTION") != std::string::npos,
                  "%s", engine.status().ToString().c_str());
      CHILD_CHECK(fs::exists(CheckpointPath(dir, 101)) && fs::exists(CheckpointPath(dir, 150)),
                  "a checkpoint was renamed by a recovery that failed");
      for (const auto& e : fs::directory_iterator(dir + "/checkpoints")) {
        CHILD_CHECK(e.path().extension() != ".corrupt", "%s was set aside", e.path().c_str());
      }
      return 0;
    });
  fs::remove_all(dir);
}

// etcd keeps a compaction across a restart; Compact was acknowledged but not logged, so compacted
// revisions came back.
TEST(EngineHistory, ACompactionSurvivesARestart) {
  for (const bool checkpoint : {false, true}) {
    SCOPED_TRACE(checkpoint ? "with a checkpoint after the compaction" : "log only");
    const std::string dir = TempDir("compact");
    EngineOptions o = Options(dir);
    o.store.history_revisions = 0;  // only compactions limit history
    ASSERT_CHILD_PASSES([&] {
      auto engine = Engine::Open(o, nullptr);
      CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
      Store& store = (*engine)->store();
      absl::Status s = WriteSteps(store, 1, 50);
      CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
      auto c = store.Compact(CompactRequest(30));
      CHILD_CHECK(c.ok() && c->header().revision() == 51, "%s", c.status().ToString().c_str());
      if (checkpoint) {
        auto k = (*engine)->Checkpoint();
        CHILD_CHECK(k.ok() && k->revision == 51 && k->base_revision == 30,
                    "the checkpoint at 51 holds the compacted-to revision");
      }
      s = WriteSteps(store, 51, 60);
      CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
      std::fflush(stdout);
      _exit(0);  // a crash: nothing but what was made durable
    });
    ASSERT_CHILD_PASSES([&] {
      auto engine = Engine::Open(o, nullptr);
      CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
      Store& store = (*engine)->store();
      CHILD_CHECK(store.Revision() == 61, "revision %lld", static_cast<long long>(store.Revision()));
      CHILD_CHECK(store.CompactRevision() == 30, "compact revision %lld",
                  static_cast<long long>(store.CompactRevision()));
      const std::string compacted = "error: " + errors::Compacted().ToString();
      CHILD_CHECK(AnswerAt(store, 29) == compacted, "revision 29: %s", AnswerAt(store, 29).c_str());
      CHILD_CHECK(AnswerAt(store, 1) == compacted, "revision 1: %s", AnswerAt(store, 1).c_str());
      CHILD_READ(at30, Everything(store, 30));
      CHILD_CHECK(at30.size() == 31 && at30["a"] == "29@30", "revision 30: %zu keys, a=%s", at30.size(),
                  at30["a"].c_str());
      auto again = store.Compact(CompactRequest(30));
      CHILD_CHECK(!again.ok() && again.status() == errors::Compacted(), "%s",
                  again.status().ToString().c_str());
      auto later = store.Compact(CompactRequest(40));
      CHILD_CHECK(later.ok(), "%s", later.status().ToString().c_str());
      return 0;
    });
    // The second compaction, too.
    ASSERT_CHILD_PASSES([&] {
      auto engine = Engine::Open(o, nullptr);
      CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
      CHILD_CHECK((*engine)->store().CompactRevision() == 40, "compact revision %lld",
                  static_cast<long long>((*engine)->store().CompactRevision()));
      return 0;
    });
    fs::remove_all(dir);
  }
}

// A damaged compaction record stops recovery with an error naming it: starting without it would make
// compacted revisions readable again, silently.
TEST(EngineHistory, ADamagedCompactionRecordStopsRecovery) {
  const std::string dir = TempDir("compact-damaged");
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(Options(dir), nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    absl::Status s = WriteSteps((*engine)->store(), 1, 5);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    CHILD_CHECK((*engine)->store().Compact(CompactRequest(4)).ok(), "compact");
    return 0;
  });
  FlipByteInTheMiddle(dir + "/COMPACTION");
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(Options(dir), nullptr);
    CHILD_CHECK(!engine.ok() && absl::IsDataLoss(engine.status()) &&
                    engine.status().message().find("COMPACTION") != std::string::npos,
                "%s", engine.ok() ? "opened" : engine.status().ToString().c_str());
    return 0;
  });
  fs::remove_all(dir);
}

// Revisions 1..N with puts and deletes; before a restart, every revision's answer (a state, or
// "compacted") is recorded; after it, every revision must answer the same. With no checkpoint, with
// one inside the window, with one taken after a Compact, and with a checkpoint followed by more writes.
TEST(EngineHistory, PastRevisionsAnswerTheSameAfterARestart) {
  struct Case {
    const char* name;
    int64_t checkpoint_after_step;  // 0: none
    int64_t compact_to;             // 0: none
  };
  for (const Case& c : {Case{"log only", 0, 0}, Case{"checkpoint mid-way", 70, 0},
                        Case{"checkpoint at the end", 120, 0}, Case{"compaction and checkpoint", 90, 85}}) {
    SCOPED_TRACE(c.name);
    const std::string dir = TempDir("history");
    EngineOptions o = Options(dir);
    o.store.history_revisions = 40;
    constexpr int64_t kSteps = 120;
    ASSERT_CHILD_PASSES([&] {
      auto engine = Engine::Open(o, nullptr);
      CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
      Store& store = (*engine)->store();
      for (int64_t i = 1; i <= kSteps; ++i) {
        absl::Status s = WriteSteps(store, i, i);
        CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
        if (i % 9 == 0) {  // a delete now and then: the history holds removals too
          etcdserverpb::DeleteRangeRequest d;
          d.set_key(StepLogKey("", i - 4));
          auto w = store.DeleteRange(d);
          CHILD_CHECK(w.ok() && store.WaitDurable(w->lsn).ok(), "delete");
        }
        if (c.compact_to != 0 && i == c.compact_to) {
          CHILD_CHECK(store.Compact(CompactRequest(store.Revision() - 2)).ok(), "compact");
        }
        if (i == c.checkpoint_after_step) {
          auto k = (*engine)->Checkpoint();
          CHILD_CHECK(k.ok(), "%s", k.status().ToString().c_str());
        }
      }
      std::ofstream out(dir + "/answers.txt");
      out << store.Revision() << "\n";
      for (int64_t r = 1; r <= store.Revision(); ++r) out << AnswerAt(store, r) << "\n";
      return 0;
    });
    ASSERT_CHILD_PASSES([&] {
      RecoveryReport report;
      auto engine = Engine::Open(o, &report);
      CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
      Store& store = (*engine)->store();
      std::ifstream in(dir + "/answers.txt");
      int64_t last = 0;
      in >> last;
      std::string line;
      std::getline(in, line);
      CHILD_CHECK(store.Revision() == last, "revision %lld, expected %lld",
                  static_cast<long long>(store.Revision()), static_cast<long long>(last));
      int64_t readable = 0;
      for (int64_t r = 1; r <= last; ++r) {
        std::getline(in, line);
        const std::string now = AnswerAt(store, r);
        CHILD_CHECK(now == line, "revision %lld answered\n  before: %s\n  after:  %s (%s)",
                    static_cast<long long>(r), line.c_str(), now.c_str(),
                    report.checkpoint.ToString().c_str());
        if (line.rfind("error", 0) != 0) ++readable;
      }
      CHILD_CHECK(readable >= 30, "only %lld revisions readable: the window is not exercised",
                  static_cast<long long>(readable));
      return 0;
    });
    fs::remove_all(dir);
  }
}

}  // namespace
}  // namespace revkv::server
