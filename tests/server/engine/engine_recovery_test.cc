// Recovery of one million keys, timed (issue 4): 16-byte keys and 100-byte values, 900,000 of them in a
// checkpoint and 100,000 more as single-Put log records after it, the shape recovery meets after a
// checkpoint interval of writes. The restart is timed from the call to Engine::Open to its return, then
// the count and a sample of values are checked. The time is printed; it must be under 2 s only at
// REVKV_TEST_SCALE >= 1 outside sanitizer builds (a sanitizer or a smaller scale only prints it).
//
// Setup, for speed: the checkpoint is written directly with CheckpointWriter (the production writer),
// holding what 9,000 Txns of 100 Puts would have left (revision 9,001, key i at revision i / 100 + 2);
// the engine then loads it and logs 100,000 Puts with fsync none (the close syncs everything).
#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>

#include "server/engine/engine.h"
#include "tests/server/engine/engine_test_util.h"

namespace revkv::server {
namespace {

using engine_testing::RunInChild;
using engine_testing::Scale;
using engine_testing::Seed;
using engine_testing::TempDir;

#if defined(REVKV_SANITIZER)
// A quarter of the keys in the sanitizer stages: the same checkpoint, log and recovery code, and no
// figure to hold (under TSan the million took two minutes).
constexpr int64_t kKeys = 250'000;
constexpr int64_t kInCheckpoint = 225'000;
#else
constexpr int64_t kKeys = 1'000'000;
constexpr int64_t kInCheckpoint = 900'000;
#endif
constexpr int64_t kCheckpointRevision = kInCheckpoint / 100 + 1;

// The revision key i was written at: by the 100-Put Txns the checkpoint stands for, then one Put each.
int64_t RevisionOf(int64_t i) {
  return i < kInCheckpoint ? i / 100 + 2 : kCheckpointRevision + 1 + (i - kInCheckpoint);
}

std::string KeyOf(int64_t i) {
  std::string digits = std::to_string(i);
  return "key-" + std::string(12 - digits.size(), '0') + digits;  // 16 bytes
}

std::string ValueOf(int64_t i) {
  std::string v = "value-" + std::to_string(i) + "-";
  while (v.size() < 100) v += static_cast<char>('a' + (v.size() * 7 + static_cast<size_t>(i)) % 26);
  return v;
}

EngineOptions RecoveryOptions(const std::string& dir) {
  EngineOptions o = engine_testing::Options(dir);
  o.fsync_mode = FsyncMode::kNone;
  o.wal_segment_bytes = uint64_t{64} << 20;  // the default
  return o;
}

TEST(EngineRecovery, MillionKeys) {
  const std::string dir = TempDir("million");
  struct RemoveAtEnd {  // even when a check fails: the directory holds about 200 MB
    std::string dir;
    ~RemoveAtEnd() { std::filesystem::remove_all(dir); }
  } remove_at_end{dir};
  const uint64_t seed = Seed();
  const size_t heap = size_t{1} << 30;
  {
    const auto start = std::chrono::steady_clock::now();
    auto writer = CheckpointWriter::Open(DefaultFileSystem(), dir + "/checkpoints", kCheckpointRevision, 0);
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (int64_t i = 0; i < kInCheckpoint; ++i) {
      const std::string key = KeyOf(i);
      const std::string value = ValueOf(i);
      ASSERT_TRUE((*writer)->Add(CheckpointEntry{key, value, RevisionOf(i), RevisionOf(i), 1, 0}).ok());
    }
    auto info = (*writer)->Finish();
    ASSERT_TRUE(info.ok()) << info.status();
    std::printf("setup: checkpoint of %lld entries written in %.1f s\n",
                static_cast<long long>(kInCheckpoint),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  ASSERT_CHILD_PASSES(
      [&] {
        const auto start = std::chrono::steady_clock::now();
        RecoveryReport report;
        auto engine = Engine::Open(RecoveryOptions(dir), &report);
        CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
        CHILD_CHECK(report.revision == kCheckpointRevision && report.keys == kInCheckpoint, "%s",
                    report.checkpoint.ToString().c_str());
        Store& store = (*engine)->store();
        etcdserverpb::PutRequest put;
        for (int64_t i = kInCheckpoint; i < kKeys; ++i) {
          put.set_key(KeyOf(i));
          put.set_value(ValueOf(i));
          auto w = store.Put(put);
          CHILD_CHECK(w.ok() && w->revision == RevisionOf(i), "put %lld", static_cast<long long>(i));
        }
        CHILD_CHECK((*engine)->Close().ok(), "close");
        std::printf("setup: checkpoint loaded and %lld keys logged in %.1f s\n",
                    static_cast<long long>(kKeys - kInCheckpoint),
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        return 0;
      },
      heap);
  ASSERT_CHILD_PASSES(
      [&] {
        RecoveryReport report;
        timespec cpu_start, cpu_end;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_start);
        const auto start = std::chrono::steady_clock::now();
        auto engine = Engine::Open(RecoveryOptions(dir), &report);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_end);
        const double cpu_seconds = static_cast<double>(cpu_end.tv_sec - cpu_start.tv_sec) +
                                   (cpu_end.tv_nsec - cpu_start.tv_nsec) / 1e9;
        CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
        Store& store = (*engine)->store();
        std::printf(
            "recovery of %lld keys: %.3f s (Engine::Open; %.3f s of CPU), %lld ms by its report; "
            "checkpoint of %llu entries, %llu log records replayed\n",
            static_cast<long long>(kKeys), seconds, cpu_seconds,
            static_cast<long long>(report.duration.count()),
            static_cast<unsigned long long>(report.checkpoint.loaded ? report.checkpoint.loaded->entry_count
                                                                     : 0),
            static_cast<unsigned long long>(report.wal.records_replayed));
        CHILD_CHECK(report.checkpoint.loaded && report.checkpoint.loaded->entry_count == kInCheckpoint, "%s",
                    report.checkpoint.ToString().c_str());
        CHILD_CHECK(report.wal.records_replayed == kKeys - kInCheckpoint, "%s",
                    report.wal.ToString().c_str());
        CHILD_CHECK(report.keys == kKeys && store.KeyCount() == kKeys, "keys %llu",
                    static_cast<unsigned long long>(report.keys));
        etcdserverpb::RangeRequest all;
        all.set_key(std::string(1, '\0'));
        all.set_range_end(std::string(1, '\0'));
        all.set_count_only(true);
        auto counted = store.Range(all);
        CHILD_CHECK(counted.ok() && counted->count() == kKeys, "a Range counts %lld keys",
                    counted.ok() ? static_cast<long long>(counted->count()) : -1LL);
        // A sample of values, from both parts.
        std::mt19937_64 rng(seed);
        for (int n = 0; n < 2000; ++n) {
          const int64_t i = n < 10 ? kKeys - 1 - n : static_cast<int64_t>(rng() % kKeys);
          etcdserverpb::RangeRequest get;
          get.set_key(KeyOf(i));
          auto r = store.Range(get);
          CHILD_CHECK(r.ok() && r->kvs_size() == 1 && r->kvs(0).value() == ValueOf(i), "key %s",
                      KeyOf(i).c_str());
          CHILD_CHECK(r->kvs(0).mod_revision() == RevisionOf(i) && r->kvs(0).version() == 1,
                      "key %s has revision %lld", KeyOf(i).c_str(),
                      static_cast<long long>(r->kvs(0).mod_revision()));
        }
#if defined(REVKV_SANITIZER)
        const bool timed = false;
#else
        const bool timed = Scale() >= 1.0;
#endif
        if (timed) {
          CHILD_CHECK(seconds < 2.0, "recovery of 1M keys took %.3f s; the target is under 2 s", seconds);
        } else {
          std::printf("(not held to the 2 s target: sanitizer build or REVKV_TEST_SCALE < 1)\n");
        }
        return 0;
      },
      heap);
}

}  // namespace
}  // namespace revkv::server
