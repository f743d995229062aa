// The gc watch frame (clients/cli/gc_view.h): rates from two GetStats samples and the three renderings.
#include "clients/cli/gc_view.h"

#include <gtest/gtest.h>

#include "clients/cli/text_format.h"

namespace revkv::client {
namespace {

revkv::v1::GetStatsResponse Sample(uint64_t unix_nanos, uint64_t minors, uint64_t majors, uint64_t commits,
                                   uint64_t lock_aborts) {
  revkv::v1::GetStatsResponse s;
  s.set_unix_nanos(unix_nanos);
  for (auto [kind, n] : {std::pair{revkv::v1::MINOR, minors}, std::pair{revkv::v1::LOCAL, uint64_t{0}},
                         std::pair{revkv::v1::MAJOR, majors}}) {
    revkv::v1::PauseSummary* p = s.mutable_gc()->add_pauses();
    p->set_kind(kind);
    p->set_collections(n);
    p->set_pause_p50_nanos(100'000);
    p->set_pause_p99_nanos(900'000);
    p->set_pause_max_nanos(2'000'000);
  }
  s.mutable_stm()->set_commits(commits);
  s.mutable_stm()->set_aborts_lock(lock_aborts);
  s.mutable_heap()->set_max_bytes(uint64_t{1} << 30);
  s.mutable_heap()->set_committed_bytes(uint64_t{256} << 20);
  s.mutable_heap()->set_nursery_bytes(uint64_t{64} << 20);
  s.mutable_heap()->set_pinned_bytes(4096);
  for (uint64_t pause : {1000, 8000, 4000}) s.add_recent()->set_pause_nanos(pause);
  return s;
}

TEST(MakeGcFrame, RatesAreCounterDifferencesOverTheServersInterval) {
  const GcFrame frame =
      MakeGcFrame(Sample(1'000'000'000, 10, 1, 100, 0), Sample(3'000'000'000, 30, 2, 700, 4),
                  /*fallback_seconds=*/99);
  EXPECT_DOUBLE_EQ(frame.seconds, 2);
  EXPECT_DOUBLE_EQ(frame.collections_per_second[revkv::v1::MINOR], 10);
  EXPECT_DOUBLE_EQ(frame.collections_per_second[revkv::v1::MAJOR], 0.5);
  EXPECT_DOUBLE_EQ(frame.collections_per_second[revkv::v1::LOCAL], 0);
  EXPECT_DOUBLE_EQ(frame.commits_per_second, 300);
  EXPECT_DOUBLE_EQ(frame.aborts_per_second[static_cast<int>(AbortCause::kLock)], 2);
}

TEST(MakeGcFrame, UsesTheFallbackIntervalAndTreatsARestartAsNoChange) {
  const GcFrame frame =
      MakeGcFrame(Sample(5, 50, 0, 100, 0), Sample(5, 10, 0, 110, 0), /*fallback_seconds=*/0.5);
  EXPECT_DOUBLE_EQ(frame.seconds, 0.5);
  EXPECT_DOUBLE_EQ(frame.collections_per_second[revkv::v1::MINOR], 0);  // counter went down
  EXPECT_DOUBLE_EQ(frame.commits_per_second, 20);
}

TEST(RenderGcView, ShowsEverySectionWithinEightyColumns) {
  const GcFrame frame =
      MakeGcFrame(Sample(1'000'000'000, 10, 1, 100, 0), Sample(2'000'000'000, 30, 2, 700, 4), 1);
  const std::vector<std::string> lines = RenderGcView(frame, "127.0.0.1:2379  every 1s", absl::UnixEpoch());
  std::string all;
  for (const std::string& line : lines) {
    EXPECT_LE(DisplayWidth(line), 80u) << line;
    all += line + "\n";
  }
  for (const char* expected :
       {"COLLECTIONS", "minor",         "local",        "major",         "to safepoint",  "HEAP committed",
        "nursery",     "old",           "large",        "free",          "pinned",        "STM commits",
        "aborts/s",    "read-conflict", "doomed-by-gc", "RECENT PAUSES", "▂█▅",           "20.0",
        "100us",       "900us",         "2.00ms",       "256MiB",        "of max 1.00GiB"}) {
    EXPECT_NE(all.find(expected), std::string::npos) << "missing \"" << expected << "\" in\n" << all;
  }
}

TEST(RenderGcLine, IsOneAsciiLineWithTheSameFigures) {
  const GcFrame frame =
      MakeGcFrame(Sample(1'000'000'000, 10, 1, 100, 0), Sample(2'000'000'000, 30, 2, 700, 4), 1);
  const std::string line = RenderGcLine(frame, absl::UnixEpoch());
  EXPECT_EQ(line.find('\n'), std::string::npos);
  for (char c : line) EXPECT_LT(static_cast<unsigned char>(c), 0x80) << line;
  for (const char* expected :
       {"minor=20.0", "major=1.00", "minor=100us/900us/2.00ms", "committed=256MiB/1.00GiB", "nursery=64.0MiB",
        "pinned=4.00KiB", "commits/s=600", "lock=4.00"}) {
    EXPECT_NE(line.find(expected), std::string::npos) << "missing \"" << expected << "\" in " << line;
  }
}

TEST(GcFrameToJson, HoldsRatesPausesHeapAndRecentPausesAsNumbers) {
  const GcFrame frame =
      MakeGcFrame(Sample(1'000'000'000, 10, 1, 100, 0), Sample(2'000'000'000, 30, 2, 700, 4), 1);
  const nlohmann::ordered_json json = GcFrameToJson(frame);
  EXPECT_DOUBLE_EQ(json["collections_per_second"]["minor"].get<double>(), 20);
  EXPECT_EQ(json["pauses"]["major"]["collections"].get<uint64_t>(), 2u);
  EXPECT_EQ(json["pauses"]["minor"]["p99_nanos"].get<uint64_t>(), 900'000u);
  EXPECT_EQ(json["heap"]["committed_bytes"].get<uint64_t>(), uint64_t{256} << 20);
  EXPECT_DOUBLE_EQ(json["stm"]["aborts_per_second"]["lock"].get<double>(), 4);
  EXPECT_EQ(json["recent_pause_nanos"], nlohmann::ordered_json({1000, 8000, 4000}));
}

}  // namespace
}  // namespace revkv::client
