// A data directory written by the previous on-disk version: a checkpoint in format 1 (a 40-byte header,
// no base revision) with the log after it. The format-1 file is written here byte by byte from the
// format as documented (docs/durability.md, section 6), not by today's writer.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "server/engine/engine.h"
#include "server/wal/crc32c.h"
#include "tests/server/engine/engine_test_util.h"

namespace revkv::server {
namespace {

namespace fs = std::filesystem;
using namespace engine_testing;  // NOLINT: the test helpers read best unqualified

struct V1Entry {
  std::string key;
  std::string value;
  int64_t create_revision;
  int64_t mod_revision;
  int64_t version;
};

template <typename T>
void Put(std::string* out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out->append(bytes, sizeof(T));
}

// Format 1: "revkvCKP" | u32 1 | u32 0 | i64 revision | i64 compact revision | u64 entry count; entries
// (u32 key length | u32 value length | i64 create | i64 mod | i64 version | i64 lease | key | value);
// footer: u32 CRC-32C of every byte before it | u32 0 | "revkvEND".
std::string FormatOneCheckpoint(int64_t revision, int64_t compact_revision,
                                const std::vector<V1Entry>& entries) {
  std::string out = "revkvCKP";
  Put<uint32_t>(&out, 1);
  Put<uint32_t>(&out, 0);
  Put<int64_t>(&out, revision);
  Put<int64_t>(&out, compact_revision);
  Put<uint64_t>(&out, entries.size());
  EXPECT_EQ(out.size(), 40u);
  for (const V1Entry& e : entries) {
    Put<uint32_t>(&out, static_cast<uint32_t>(e.key.size()));
    Put<uint32_t>(&out, static_cast<uint32_t>(e.value.size()));
    Put<int64_t>(&out, e.create_revision);
    Put<int64_t>(&out, e.mod_revision);
    Put<int64_t>(&out, e.version);
    Put<int64_t>(&out, 0);
    out += e.key;
    out += e.value;
  }
  const uint32_t crc = Crc32c(out);
  Put<uint32_t>(&out, crc);
  Put<uint32_t>(&out, 0);
  out += "revkvEND";
  return out;
}

// The store after steps 1..n (StepTxn: "a" = "b" = i and "log/<i>" = i at revision i + 1), as format-1
// entries in key order.
std::vector<V1Entry> StateAfterSteps(int64_t n) {
  std::vector<V1Entry> entries;
  const std::string last = std::to_string(n);
  entries.push_back({"a", last, 2, n + 1, n});
  entries.push_back({"b", last, 2, n + 1, n});
  for (int64_t i = 1; i <= n; ++i) entries.push_back({StepLogKey("", i), std::to_string(i), i + 1, i + 1, 1});
  return entries;
}

// Steps 1..40 in the log; a format-1 checkpoint at revision 31 (step 30) as the previous version wrote
// it; the segments wholly at or below 31 removed, as after that checkpoint. The engine loads the
// format-1 checkpoint (as holding its own revision), replays 32..41, and finds every key with its
// value, create and mod revision and version; it then writes on, checkpoints in today's format, and
// starts again from that.
TEST(EngineUpgrade, ADataDirectoryWithAFormatOneCheckpointAndALogAfterItOpens) {
  const std::string dir = TempDir("upgrade-v1");
  EngineOptions o = Options(dir);
  o.wal_segment_bytes = 400;  // a few records per segment, so the ones the checkpoint holds can go
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    absl::Status s = WriteSteps((*engine)->store(), 1, 40);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    return 0;
  });
  {
    std::ofstream out(CheckpointPath(dir, 31), std::ios::binary);
    out << FormatOneCheckpoint(31, 0, StateAfterSteps(30));
    ASSERT_TRUE(static_cast<bool>(out));
  }
  const std::vector<int64_t> firsts = SegmentFirstRevisions(dir + "/wal");
  int removed = 0;
  for (size_t i = 0; i + 1 < firsts.size() && firsts[i + 1] - 1 <= 31; ++i) {
    ASSERT_TRUE(fs::remove(dir + "/wal/" + absl::StrFormat("wal-%016x.log", firsts[i])));
    ++removed;
  }
  ASSERT_GE(removed, 3) << "the log must no longer hold the early steps";
  ASSERT_CHILD_PASSES([&] {
    RecoveryReport report;
    auto engine = Engine::Open(o, &report);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    CHILD_CHECK(report.checkpoint.loaded.has_value() && report.checkpoint.loaded->revision == 31 &&
                    report.checkpoint.loaded->base_revision == 31,
                "%s", report.checkpoint.ToString().c_str());
    CHILD_CHECK(report.wal.records_replayed == 10, "%s", report.wal.ToString().c_str());
    Store& store = (*engine)->store();
    int64_t steps = 0;
    std::string problem = CheckSteps(store, 40, &steps);
    CHILD_CHECK(problem.empty() && steps == 40, "%s", problem.c_str());
    for (const char* key : {"a", "b"}) {
      etcdserverpb::RangeRequest r;
      r.set_key(key);
      absl::StatusOr<etcdserverpb::RangeResponse> res = store.Range(r);
      CHILD_CHECK(res.ok() && res->kvs_size() == 1, "%s", key);
      CHILD_CHECK(
          res->kvs(0).create_revision() == 2 && res->kvs(0).mod_revision() == 41 &&
              res->kvs(0).version() == 40 && res->kvs(0).value() == "40",
          "%s: create %lld mod %lld version %lld", key, static_cast<long long>(res->kvs(0).create_revision()),
          static_cast<long long>(res->kvs(0).mod_revision()), static_cast<long long>(res->kvs(0).version()));
    }
    for (int64_t i = 1; i <= 40; ++i) {
      etcdserverpb::RangeRequest r;
      r.set_key(StepLogKey("", i));
      absl::StatusOr<etcdserverpb::RangeResponse> res = store.Range(r);
      CHILD_CHECK(res.ok() && res->kvs_size() == 1 && res->kvs(0).create_revision() == i + 1 &&
                      res->kvs(0).version() == 1,
                  "step %lld", static_cast<long long>(i));
    }
    absl::Status s = WriteSteps(store, 41, 45);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    CHILD_CHECK((*engine)->Checkpoint().ok(), "checkpoint in today's format");
    return 0;
  });
  ASSERT_CHILD_PASSES([&] {
    RecoveryReport report;
    auto engine = Engine::Open(o, &report);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    CHILD_CHECK(report.checkpoint.loaded.has_value() && report.checkpoint.loaded->revision == 46, "%s",
                report.checkpoint.ToString().c_str());
    int64_t steps = 0;
    std::string problem = CheckSteps((*engine)->store(), 45, &steps);
    CHILD_CHECK(problem.empty() && steps == 45, "%s", problem.c_str());
    return 0;
  });
  fs::remove_all(dir);
}

}  // namespace
}  // namespace revkv::server
