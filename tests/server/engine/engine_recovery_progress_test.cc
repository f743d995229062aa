// What recovery reports while it runs (RecoveryProgress): the checkpoint it loads with its entry count,
// the log segments it replays (which one, how many bytes of how many), the revision reached, and the
// phases in order.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "server/engine/engine.h"
#include "tests/server/engine/engine_test_util.h"

namespace revkv::server {
namespace {

using engine_testing::Options;
using engine_testing::PutRequest;
using engine_testing::TempDir;

TEST(EngineRecoveryProgress, ReportsTheCheckpointTheSegmentsAndTheRevisionReached) {
  const std::string dir = TempDir("progress");
  // A checkpoint at revision 201 (200 puts), then 600 puts of ~1 KiB after it: several 64 KiB segments.
  ASSERT_CHILD_PASSES([&] {
    EngineOptions o = Options(dir);
    o.wal_segment_bytes = 64 << 10;
    o.fsync_mode = FsyncMode::kNone;
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    for (int i = 0; i < 200; ++i) {
      CHILD_CHECK((*engine)->store().Put(PutRequest("k" + std::to_string(i), std::string(1000, 'x'))).ok(),
                  "put");
    }
    CHILD_CHECK((*engine)->Checkpoint().ok(), "checkpoint");
    for (int i = 0; i < 600; ++i) {
      CHILD_CHECK((*engine)->store().Put(PutRequest("k" + std::to_string(i), std::string(1000, 'y'))).ok(),
                  "put");
    }
    CHILD_CHECK((*engine)->Close().ok(), "close");
    return 0;
  });
  ASSERT_CHILD_PASSES([&] {
    RecoveryProgress progress;
    CHILD_CHECK(progress.Read().phase == RecoveryProgress::Phase::kStarting, "a new progress is starting");
    EngineOptions o = Options(dir);
    o.wal_segment_bytes = 64 << 10;
    o.progress = &progress;
    RecoveryReport report;
    auto engine = Engine::Open(o, &report);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    const RecoveryProgress::Snapshot s = progress.Read();
    CHILD_CHECK(s.phase == RecoveryProgress::Phase::kFinishing, "phase %d", static_cast<int>(s.phase));
    CHILD_CHECK(s.checkpoint == "checkpoint-00000000000000c9.ckpt", "checkpoint '%s'", s.checkpoint.c_str());
    CHILD_CHECK(s.checkpoint_entries == 200, "entries %llu",
                static_cast<unsigned long long>(s.checkpoint_entries));
    CHILD_CHECK(s.revision == 801, "revision %lld", static_cast<long long>(s.revision));
    // The segments replayed: those after the checkpoint's base, each about 64 KiB.
    CHILD_CHECK(s.log_segments >= 8 && s.log_segment == s.log_segments, "segment %llu of %llu",
                static_cast<unsigned long long>(s.log_segment),
                static_cast<unsigned long long>(s.log_segments));
    CHILD_CHECK(s.log_bytes >= 600 * 1000 && s.log_bytes_replayed >= 600 * 1000 &&
                    s.log_bytes_replayed <= s.log_bytes,
                "%llu of %llu bytes", static_cast<unsigned long long>(s.log_bytes_replayed),
                static_cast<unsigned long long>(s.log_bytes));
    CHILD_CHECK(s.Describe() == "restoring the compaction and the leases (revision 801)", "%s",
                s.Describe().c_str());
    progress.Done();
    CHILD_CHECK(progress.done() && progress.Read().PhaseFraction() == 1.0, "done");
    return 0;
  });
  std::filesystem::remove_all(dir);
}

TEST(EngineRecoveryProgress, DescribesEachPhaseForPeople) {
  RecoveryProgress::Snapshot s;
  EXPECT_EQ(s.Describe(), "opening the data directory");
  s.phase = RecoveryProgress::Phase::kCheckpoint;
  s.checkpoint = "checkpoint-0000000000000010.ckpt";
  s.checkpoint_entries = 500000;
  s.checkpoint_loaded = 120000;
  EXPECT_EQ(s.Describe(),
            "loading checkpoint checkpoint-0000000000000010.ckpt: 120000 of 500000 entries (24%)");
  s.phase = RecoveryProgress::Phase::kLog;
  s.log_segments = 8;
  s.log_bytes = uint64_t{512} << 20;
  EXPECT_EQ(s.Describe(), "replaying the log: 8 segment(s), 512.0 MiB");
  s.log_segment = 3;
  s.log_bytes_replayed = (uint64_t{512} << 20) * 41 / 100 + 1;
  s.revision = 41211;
  EXPECT_EQ(s.Describe(), "replaying log segment 3/8 (revision 41211), 41% of 512.0 MiB");
  EXPECT_NEAR(s.PhaseFraction(), 0.41, 0.001);
}

}  // namespace
}  // namespace revkv::server
