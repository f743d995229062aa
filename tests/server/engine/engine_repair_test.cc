// Tests of damage in a whole data directory: recovery that refuses it changes nothing on disk, and
// RepairLog (revkv-server --repair-wal) reads the log from the checkpoint the engine would load, as the
// engine does, and changes nothing but the log.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "server/engine/engine.h"
#include "tests/server/engine/engine_test_util.h"

namespace revkv::server {
namespace {

namespace fs = std::filesystem;
using namespace engine_testing;  // NOLINT: the test helpers read best unqualified

// A checkpoint at R holding the state at B < R, and a damaged log record X with B < X <= R: recovery
// replays from B + 1 and refuses the log at X, so the repair it advises must find X too. (Before, the
// repair read the log from R, took X for covered, reported the log intact, and the server never
// started.)
TEST(EngineRepair, RepairReadsTheLogFromTheBaseOfTheCheckpointRecoveryLoads) {
  const std::string dir = TempDir("repair-base");
  EngineOptions o = Options(dir);
  o.store.history_revisions = 40;  // the checkpoint at 101 holds revision 62
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    absl::Status s = WriteSteps((*engine)->store(), 1, 100);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    absl::StatusOr<CheckpointStats> c = (*engine)->Checkpoint();
    CHILD_CHECK(c.ok() && c->revision == 101 && c->base_revision < 80, "checkpoint base %lld",
                c.ok() ? static_cast<long long>(c->base_revision) : -1LL);
    s = WriteSteps((*engine)->store(), 101, 120);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    return 0;
  });
  ASSERT_TRUE(DamageLogRecord(dir + "/wal", 80));
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(absl::IsDataLoss(engine.status()), "%s", engine.status().ToString().c_str());
    absl::StatusOr<WalRepairReport> repair = RepairLog(o);
    CHILD_CHECK(repair.ok(), "%s", repair.status().ToString().c_str());
    CHILD_CHECK(
        repair->damage.has_value() && repair->first_lost_revision == 80 && repair->last_good_revision == 79,
        "%s", repair->ToString().c_str());
    CHILD_CHECK(fs::exists(CheckpointPath(dir, 101)), "the repair must not touch checkpoints");
    return 0;
  });
  fs::remove_all(dir);
}

// The newest checkpoint passes its CRC but holds content the store refuses (keys out of order): the
// engine falls back to the previous checkpoint, so the repair must read the log from that one's base.
// It sets nothing aside: a repair changes only the log. (Before, the repair chose the newest checkpoint
// whose CRC holds, took the damage for covered and reported the log intact.)
TEST(EngineRepair, RepairChoosesTheCheckpointTheEngineWouldLoad) {
  const std::string dir = TempDir("repair-choice");
  EngineOptions o = Options(dir);
  o.store.history_revisions = 40;
  int64_t newest_base = 0;
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    absl::Status s = WriteSteps((*engine)->store(), 1, 100);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    CHILD_CHECK((*engine)->Checkpoint().ok(), "checkpoint at 101");
    s = WriteSteps((*engine)->store(), 101, 150);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    CHILD_CHECK((*engine)->Checkpoint().ok(), "checkpoint at 151");
    return 0;
  });
  {
    // Checkpoint 151 rewritten with a valid CRC around keys in descending order.
    auto w = CheckpointWriter::Open(DefaultFileSystem(), dir + "/checkpoints", 151, 0, 112);
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE((*w)->Add(CheckpointEntry{"b", "1", 2, 2, 1, 0}).ok());
    ASSERT_TRUE((*w)->Add(CheckpointEntry{"a", "1", 2, 2, 1, 0}).ok());
    ASSERT_TRUE((*w)->Finish().ok());
    newest_base = 112;
  }
  ASSERT_TRUE(DamageLogRecord(dir + "/wal", 90));
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(absl::IsDataLoss(engine.status()), "%s", engine.status().ToString().c_str());
    absl::StatusOr<WalRepairReport> repair = RepairLog(o);
    CHILD_CHECK(repair.ok(), "%s", repair.status().ToString().c_str());
    CHILD_CHECK(repair->damage.has_value() && repair->first_lost_revision == 90, "base %lld: %s",
                static_cast<long long>(newest_base), repair->ToString().c_str());
    CHILD_CHECK(fs::exists(CheckpointPath(dir, 151)) && fs::exists(CheckpointPath(dir, 101)),
                "the repair must not set checkpoints aside");
    return 0;
  });
  fs::remove_all(dir);
}

inline std::string ReadWhole(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// An unwritten (all-zero) sector in the newest segment at a revision the checkpoint's revision covers
// cannot be a crash's torn tail: the log was synced through that revision before the checkpoint became
// valid. Recovery refuses it as damage and changes nothing. (Before, it cut the log there as a torn
// tail and then failed because the log no longer reached the checkpoint: the evidence was gone.)
TEST(EngineRepair, AZeroSectorBelowTheCheckpointsRevisionIsDamageAndNothingIsCut) {
  const std::string dir = TempDir("floor");
  EngineOptions o = Options(dir);
  o.store.history_revisions = 40;  // checkpoint 101 holds revision 62: the log is replayed from 63
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    absl::Status s = WriteSteps((*engine)->store(), 1, 100);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    absl::StatusOr<CheckpointStats> c = (*engine)->Checkpoint();
    CHILD_CHECK(c.ok() && c->base_revision < 70, "checkpoint");
    return 0;
  });
  const RecordPlace place = FindLogRecord(dir + "/wal", 80);
  ASSERT_FALSE(place.path.empty());
  ASSERT_EQ(SegmentFirstRevisions(dir + "/wal").size(), 1u) << "record 80 must be in the newest segment";
  {
    std::fstream f(place.path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(place.offset / 512 * 512));
    const std::string zeros(512, '\0');
    f.write(zeros.data(), zeros.size());
  }
  const std::string before = ReadWhole(place.path);
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(absl::IsDataLoss(engine.status()), "%s", engine.status().ToString().c_str());
    CHILD_CHECK(engine.status().message().find(place.path) != std::string_view::npos, "%s",
                engine.status().ToString().c_str());
    return 0;
  });
  EXPECT_EQ(ReadWhole(place.path), before) << "a refused recovery must leave the segment as it was";
  EXPECT_EQ(SegmentFirstRevisions(dir + "/wal").size(), 1u) << "and create no segment";
  for (const auto& e : fs::directory_iterator(dir + "/wal")) {
    EXPECT_EQ(e.path().string().find(".broken"), std::string::npos) << e.path();
  }
  fs::remove_all(dir);
}

// An idle log whose last record is R, a checkpoint at R holding R, and R's bytes damaged: the checkpoint
// holds everything R held and nothing follows it, so the engine starts with every step, reports the
// damage, and writes on. (Before, recovery refused the log.) The same damage with the checkpoint at
// R - 1 loses R: still refused, nothing changed.
TEST(EngineRepair, ADamagedLastRecordTheCheckpointHoldsLosesNothing) {
  const std::string dir = TempDir("covered-last");
  EngineOptions o = Options(dir);  // history_revisions 1: the checkpoint holds its own revision
  int64_t r = 0;
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    absl::Status s = WriteSteps((*engine)->store(), 1, 30);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    absl::StatusOr<CheckpointStats> c = (*engine)->Checkpoint();
    CHILD_CHECK(c.ok() && c->revision == 31 && c->base_revision == 31, "checkpoint");
    return 0;
  });
  r = 31;
  const RecordPlace place = FindLogRecord(dir + "/wal", r);
  ASSERT_FALSE(place.path.empty());
  ASSERT_TRUE(DamageLogRecord(dir + "/wal", r));
  ASSERT_CHILD_PASSES([&] {
    RecoveryReport report;
    auto engine = Engine::Open(o, &report);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    CHILD_CHECK(report.wal.covered_damage.has_value() && report.wal.covered_damage->segment == place.path &&
                    report.wal.covered_damage->offset == place.offset,
                "the damage is not reported: %s", report.wal.ToString().c_str());
    int64_t steps = 0;
    std::string problem = CheckSteps((*engine)->store(), 30, &steps);
    CHILD_CHECK(problem.empty(), "%s", problem.c_str());
    absl::Status s = WriteSteps((*engine)->store(), 31, 35);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    return 0;
  });
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    int64_t steps = 0;
    std::string problem = CheckSteps((*engine)->store(), 35, &steps);
    CHILD_CHECK(problem.empty(), "%s", problem.c_str());
    return 0;
  });
  fs::remove_all(dir);

  // The checkpoint at R - 1: record R is the store's only copy of step 31.
  const std::string dir2 = TempDir("uncovered-last");
  o = Options(dir2);
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    absl::Status s = WriteSteps((*engine)->store(), 1, 30);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    CHILD_CHECK((*engine)->Checkpoint().ok(), "checkpoint at 31");
    s = WriteSteps((*engine)->store(), 31, 31);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    return 0;
  });
  ASSERT_TRUE(DamageLogRecord(dir2 + "/wal", 32));
  const std::string segment = FindLogRecord(dir2 + "/wal", 32).path;
  const std::string before = ReadWhole(segment);
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(absl::IsDataLoss(engine.status()), "%s", engine.status().ToString().c_str());
    CHILD_CHECK(engine.status().ToString().find("revision 32") != std::string::npos, "%s",
                engine.status().ToString().c_str());
    return 0;
  });
  EXPECT_EQ(ReadWhole(segment), before);
  fs::remove_all(dir2);
}

// The repair report says what the next start will do with the log as the repair leaves it: which
// checkpoint recovery will use, or, when the repair cut the log below what a checkpoint needs, that none
// can be used (recovery loads that checkpoint and refuses). Each claim is checked by starting.
TEST(EngineRepair, TheRepairReportSaysWhichCheckpointTheNextStartUses) {
  for (const int64_t damaged : {int64_t{80}, int64_t{110}}) {
    SCOPED_TRACE(damaged);
    const std::string dir = TempDir("repair-outlook");
    EngineOptions o = Options(dir);
    o.store.history_revisions = 40;  // the checkpoint at 101 holds revision 62: 63..101 are replayed
    ASSERT_CHILD_PASSES([&] {
      auto engine = Engine::Open(o, nullptr);
      CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
      absl::Status s = WriteSteps((*engine)->store(), 1, 100);
      CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
      absl::StatusOr<CheckpointStats> c = (*engine)->Checkpoint();
      CHILD_CHECK(c.ok() && c->revision == 101 && c->base_revision < 80, "checkpoint");
      s = WriteSteps((*engine)->store(), 101, 120);
      CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
      return 0;
    });
    ASSERT_TRUE(DamageLogRecord(dir + "/wal", damaged));
    const std::string checkpoint = CheckpointPath(dir, 101);
    ASSERT_CHILD_PASSES([&] {
      absl::StatusOr<WalRepairReport> repair = RepairLog(o);
      CHILD_CHECK(repair.ok(), "%s", repair.status().ToString().c_str());
      const std::string text = repair->ToString();
      std::printf("%s\n", text.c_str());
      if (damaged <= 101) {
        CHILD_CHECK(repair->recovery_outlook.find("no checkpoint can be used") != std::string::npos &&
                        repair->recovery_outlook.find(checkpoint) != std::string::npos &&
                        repair->recovery_outlook.find("before revision 101") != std::string::npos,
                    "%s", text.c_str());
        auto engine = Engine::Open(o, nullptr);
        CHILD_CHECK(absl::IsDataLoss(engine.status()), "the report said recovery refuses: %s",
                    engine.status().ToString().c_str());
      } else {
        CHILD_CHECK(repair->recovery_outlook.find("recovery will use the checkpoint " + checkpoint) !=
                            std::string::npos &&
                        repair->recovery_outlook.find("through revision 109") != std::string::npos,
                    "%s", text.c_str());
        CHILD_CHECK(text.find("next start: recovery will use the checkpoint") != std::string::npos, "%s",
                    text.c_str());
        auto engine = Engine::Open(o, nullptr);
        CHILD_CHECK(engine.ok(), "the report said recovery starts: %s", engine.status().ToString().c_str());
        CHILD_CHECK((*engine)->store().Revision() == 109, "revision %lld",
                    static_cast<long long>((*engine)->store().Revision()));
      }
      return 0;
    });
    fs::remove_all(dir);
  }
}

}  // namespace
}  // namespace revkv::server
