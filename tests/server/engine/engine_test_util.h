// Helpers for the durable store's tests: a store per forked child, the "step" workload whose every
// transaction can be checked after a crash, and reading the whole state.
//
// Each test runs the store in forked children, because a process holds one store and the runtime's
// global time: the test process itself never starts the runtime, so forking it is safe.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "server/engine/engine.h"

namespace revkv::server::engine_testing {

inline uint64_t Seed() {
  const char* s = std::getenv("REVKV_TEST_SEED");
  const uint64_t seed = s != nullptr ? std::strtoull(s, nullptr, 10) : std::random_device{}();
  std::printf("test seed: %llu (rerun with REVKV_TEST_SEED=%llu)\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  return seed;
}

// REVKV_TEST_SCALE (default 1; the sanitizer stages use 0.25).
inline double Scale() {
  const char* s = std::getenv("REVKV_TEST_SCALE");
  return s != nullptr ? std::max(0.05, std::atof(s)) : 1.0;
}

inline std::string TempDir(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("revkv-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// Runs `body` in a forked child with the runtime started and the thread registered; returns the
// child's exit status (0: every check passed). Expectations inside abort the child with a message.
inline int RunInChild(const std::function<int()>& body, size_t max_heap_bytes = size_t{1} << 30) {
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    runtime::HeapOptions o;
    o.max_heap_bytes = max_heap_bytes;
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

// Runs `body` in a child (RunInChild) and fails the test unless every check in it passed; the child
// printed what failed.
#define ASSERT_CHILD_PASSES(...)                                                          \
  do {                                                                                    \
    const int child_status = ::revkv::server::engine_testing::RunInChild(__VA_ARGS__);    \
    ASSERT_EQ(child_status, 0) << "a check in the child failed: see the line it printed"; \
  } while (0)

#define CHILD_CHECK(cond, ...)                                       \
  do {                                                               \
    if (!(cond)) {                                                   \
      std::printf("check failed at line %d: %s: ", __LINE__, #cond); \
      std::printf(__VA_ARGS__);                                      \
      std::printf("\n");                                             \
      std::fflush(stdout);                                           \
      return 1;                                                      \
    }                                                                \
  } while (0)

// `var` = the value of a StatusOr expression; a failed read fails the child.
#define CHILD_READ(var, expr)                                                          \
  auto var##_or = (expr);                                                              \
  CHILD_CHECK(var##_or.ok(), "read failed: %s", var##_or.status().ToString().c_str()); \
  auto& var = *var##_or

inline EngineOptions Options(const std::string& dir) {
  EngineOptions o;
  o.data_dir = dir;
  o.fsync_mode = FsyncMode::kAlways;
  o.checkpoint_interval = 0;
  o.wal_segment_bytes = 256 << 10;  // several segments in a test
  // A checkpoint holds the oldest readable revision: with only the newest one retained, that is the
  // revision it is taken at, which the tests of checkpoints and fallbacks count on.
  o.store.history_revisions = 1;
  return o;
}

inline etcdserverpb::PutRequest PutRequest(const std::string& k, const std::string& v) {
  etcdserverpb::PutRequest r;
  r.set_key(k);
  r.set_value(v);
  return r;
}

inline std::string StepLogKey(const std::string& prefix, int64_t i) {
  return prefix + "log/" + std::to_string(1000000 + i);
}

// The write of step i: one Txn putting "a" = i, "b" = i and "log/<i>" = i (under `prefix`), so a crash
// shows whether a transaction is wholly present and whether revisions are consecutive.
inline etcdserverpb::TxnRequest StepTxn(int64_t i, const std::string& prefix = "") {
  etcdserverpb::TxnRequest t;
  for (const std::string& k : {prefix + "a", prefix + "b", StepLogKey(prefix, i)}) {
    *t.add_success()->mutable_request_put() = PutRequest(k, std::to_string(i));
  }
  return t;
}

// Every key-value at `revision` (0: the newest), as key -> "value@mod_revision". Fails like Range.
inline absl::StatusOr<std::map<std::string, std::string>> Everything(Store& store, int64_t revision = 0) {
  etcdserverpb::RangeRequest r;
  r.set_key(std::string(1, '\0'));
  r.set_range_end(std::string(1, '\0'));
  r.set_revision(revision);
  absl::StatusOr<etcdserverpb::RangeResponse> res = store.Range(r);
  if (!res.ok()) return res.status();
  std::map<std::string, std::string> out;
  for (const auto& kv : res->kvs()) out[kv.key()] = kv.value() + "@" + std::to_string(kv.mod_revision());
  return out;
}

// What the steps of one writer left, given the whole state: sets *steps to the last step present and
// returns "" if steps 1..*steps are all there, each wholly, and nothing else of that writer is; else
// what is wrong. With one writer (prefix "", nothing else in the store), step i has revision i + 1.
inline std::string CheckStepsIn(const std::map<std::string, std::string>& all, const std::string& prefix,
                                bool one_writer, int64_t* steps) {
  auto find = [&](const std::string& k) {
    auto it = all.find(k);
    return it == all.end() ? std::string() : it->second;
  };
  const std::string a = find(prefix + "a");
  const std::string b = find(prefix + "b");
  *steps = 0;
  if (a.empty() || b.empty()) {
    if (!a.empty() || !b.empty()) return "a transaction is partly present: a=" + a + " b=" + b;
  } else {
    if (a != b) return "a transaction is partly present: a=" + a + " b=" + b;
    *steps = std::stoll(a.substr(0, a.find('@')));
  }
  const int64_t n = *steps;
  int64_t seen = 0;
  int64_t last_revision = 0;
  for (auto it = all.lower_bound(prefix + "log/");
       it != all.end() && it->first.rfind(prefix + "log/", 0) == 0; ++it) {
    ++seen;
    const int64_t i = std::stoll(it->first.substr(prefix.size() + 4)) - 1000000;
    const std::string& v = it->second;
    const int64_t value = std::stoll(v.substr(0, v.find('@')));
    const int64_t revision = std::stoll(v.substr(v.find('@') + 1));
    if (i < 1 || i > n) return absl::StrCat("step ", i, " is present but the last whole step is ", n);
    if (value != i) return absl::StrCat("step ", i, " holds ", v);
    if (one_writer && revision != i + 1) return absl::StrCat("step ", i, " has revision ", revision);
    if (revision <= last_revision) return absl::StrCat("step ", i, " is not after the step before it");
    last_revision = revision;
  }
  if (seen != n) return absl::StrCat(n, " steps but ", seen, " log keys: a step is missing");
  if (n > 0 && a != absl::StrCat(n, "@", last_revision)) {
    return absl::StrCat("a=", a, " but the last step's revision is ", last_revision);
  }
  return "";
}

// The single-writer check after a restart: steps 1..n whole, n >= `acknowledged`, nothing else in the
// store, and the store's revision n + 1 (one revision per step: no gap, none skipped).
inline std::string CheckSteps(Store& store, int64_t acknowledged, int64_t* steps) {
  absl::StatusOr<std::map<std::string, std::string>> all = Everything(store);
  if (!all.ok()) return "read failed: " + all.status().ToString();
  if (std::string problem = CheckStepsIn(*all, "", true, steps); !problem.empty()) return problem;
  const int64_t n = *steps;
  if (n < acknowledged) return absl::StrCat("acknowledged step ", acknowledged, " lost (recovered ", n, ")");
  const size_t expected_keys = n == 0 ? 0 : static_cast<size_t>(n) + 2;
  if (all->size() != expected_keys) return absl::StrCat(all->size(), " keys for ", n, " steps");
  if (store.Revision() != n + 1) {
    return absl::StrCat("revisions have gaps: revision ", store.Revision(), " after ", n, " steps");
  }
  return "";
}

// Writes steps [first, last] and waits for each to be durable; returns the first failure.
inline absl::Status WriteSteps(Store& store, int64_t first, int64_t last) {
  for (int64_t i = first; i <= last; ++i) {
    absl::StatusOr<WriteResult<etcdserverpb::TxnResponse>> w = store.Txn(StepTxn(i));
    if (!w.ok()) return w.status();
    if (absl::Status s = store.WaitDurable(w->lsn); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// The first revision of every log segment in `wal_dir`, ascending.
inline std::vector<int64_t> SegmentFirstRevisions(const std::string& wal_dir) {
  std::vector<int64_t> firsts;
  for (const auto& e : std::filesystem::directory_iterator(wal_dir)) {
    if (auto r = ParseNumberedFileName(e.path().filename().string(), "wal-", ".log")) firsts.push_back(*r);
  }
  std::sort(firsts.begin(), firsts.end());
  return firsts;
}

// Damages a file (a checkpoint) in its middle, where its CRC will see it.
inline void FlipByteInTheMiddle(const std::string& path) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(0, std::ios::end);
  const std::streamoff middle = f.tellg() / 2;
  f.seekg(middle);
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5a);
  f.seekp(middle);
  f.write(&c, 1);
}

// The path of the checkpoint of `revision` in data directory `dir`.
inline std::string CheckpointPath(const std::string& dir, int64_t revision) {
  return dir + "/checkpoints/" + CheckpointFileName(revision);
}

// Where the log record of `revision` lies in `wal_dir`: its segment and byte offset (path empty: none).
struct RecordPlace {
  std::string path;
  uint64_t offset = 0;
  uint32_t payload_bytes = 0;
};
inline RecordPlace FindLogRecord(const std::string& wal_dir, int64_t revision) {
  for (int64_t first : SegmentFirstRevisions(wal_dir)) {
    if (first > revision) break;
    char name[64];
    std::snprintf(name, sizeof(name), "wal-%016llx.log", static_cast<unsigned long long>(first));
    const std::string path = wal_dir + "/" + name;
    std::ifstream f(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (uint64_t pos = 16; pos + 16 <= bytes.size();) {  // segment header, then u32 len | u32 crc | i64 rev
      uint32_t length = 0;
      int64_t rev = 0;
      std::memcpy(&length, bytes.data() + pos, 4);
      std::memcpy(&rev, bytes.data() + pos + 8, 8);
      if (rev == revision) return RecordPlace{path, pos, length};
      pos += 16 + length;
    }
  }
  return RecordPlace{};
}

// Flips one byte of the payload of the log record of `revision` (its CRC then fails).
inline bool DamageLogRecord(const std::string& wal_dir, int64_t revision) {
  const RecordPlace place = FindLogRecord(wal_dir, revision);
  if (place.path.empty() || place.payload_bytes == 0) return false;
  std::fstream f(place.path, std::ios::in | std::ios::out | std::ios::binary);
  const std::streamoff at = static_cast<std::streamoff>(place.offset + 16 + place.payload_bytes / 2);
  f.seekg(at);
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5a);
  f.seekp(at);
  f.write(&c, 1);
  return static_cast<bool>(f);
}

}  // namespace revkv::server::engine_testing
