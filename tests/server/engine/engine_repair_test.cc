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

}  // namespace
}  // namespace revkv::server
