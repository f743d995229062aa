// Tests of the engine's housekeeping around the data: the directories it creates are made durable
// before anything is written in them, and a failing background checkpoint is retried with back-off.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/engine/engine.h"
#include "tests/server/engine/engine_test_util.h"

namespace revkv::server {
namespace {

namespace fs = std::filesystem;
using namespace engine_testing;  // NOLINT: the test helpers read best unqualified

// Forwards to the real file system, records the calls that make names durable, and can refuse to
// create files under one directory (a full checkpoint disk).
class RecordingFileSystem final : public FileSystem {
 public:
  // What happened, in order: "mkdir <dir>", "syncdir <dir>", "create <path>".
  std::vector<std::string> Calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  void RefuseFilesUnder(std::string prefix) {
    std::lock_guard<std::mutex> lock(mu_);
    refused_prefix_ = std::move(prefix);
  }
  int64_t refused() const { return refused_.load(std::memory_order_relaxed); }  // a count only

  absl::StatusOr<std::unique_ptr<WritableFile>> OpenWritable(const std::string& path,
                                                             OpenMode mode) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!refused_prefix_.empty() && path.rfind(refused_prefix_, 0) == 0) {
        refused_.fetch_add(1, std::memory_order_relaxed);
        return IoError("open", path, ENOSPC);
      }
      calls_.push_back("create " + path);
    }
    return base_->OpenWritable(path, mode);
  }
  absl::StatusOr<std::unique_ptr<ReadableFile>> OpenReadable(const std::string& path) override {
    return base_->OpenReadable(path);
  }
  absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& dir) override {
    return base_->ListDirectory(dir);
  }
  absl::Status CreateDirectories(const std::string& dir) override {
    Record("mkdir " + dir);
    return base_->CreateDirectories(dir);
  }
  absl::Status Remove(const std::string& path) override { return base_->Remove(path); }
  absl::Status Rename(const std::string& from, const std::string& to) override {
    return base_->Rename(from, to);
  }
  absl::Status Truncate(const std::string& path, uint64_t size) override {
    return base_->Truncate(path, size);
  }
  absl::Status SyncDirectory(const std::string& dir) override {
    Record("syncdir " + std::string(fs::path(dir).lexically_normal()));
    return base_->SyncDirectory(dir);
  }

 private:
  void Record(std::string call) {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(std::move(call));
  }

  FileSystem* const base_ = DefaultFileSystem();
  mutable std::mutex mu_;
  std::vector<std::string> calls_;  // guarded by mu_
  std::string refused_prefix_;      // guarded by mu_
  std::atomic<int64_t> refused_{0};
};

// A machine crash can lose a directory entry that was never fsync'd in its parent, and with it every
// log segment and checkpoint inside, though each of those was synced. So the data directory's parent,
// and the data directory after creating wal/ and checkpoints/, are synced before any file is created.
// After a checkpoint, log segments are removed up to the base revision of the oldest kept checkpoint.
// A bit flipped in that checkpoint's base field (its CRC no longer holds, and the base is past its own
// revision) must not remove segments the newest checkpoint needs: recovery from it would then miss
// records, acknowledged ones included.
TEST(EngineHousekeeping, ADamagedBaseInAnOlderCheckpointRemovesNoSegmentANewerOneNeeds) {
  const std::string dir = TempDir("damaged-base");
  EngineOptions o = Options(dir);
  o.wal_segment_bytes = 4096;  // many segments
  o.checkpoint_keep = 2;
  o.store.history_revisions = 100;  // each checkpoint holds a base well before its revision
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    Store& store = (*engine)->store();
    absl::Status s = WriteSteps(store, 1, 100);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    CHILD_CHECK((*engine)->Checkpoint().ok(), "checkpoint at 101");
    s = WriteSteps(store, 101, 200);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    auto older = (*engine)->Checkpoint();
    CHILD_CHECK(older.ok() && older->revision == 201, "checkpoint at 201");
    s = WriteSteps(store, 201, 300);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    // The base field (bytes 40..47 of the header) of the checkpoint that becomes the oldest kept one:
    // a high bit flipped.
    {
      std::fstream f(older->path, std::ios::in | std::ios::out | std::ios::binary);
      f.seekg(40 + 5);
      char c = 0;
      f.read(&c, 1);
      c = static_cast<char>(c ^ 0x01);
      f.seekp(40 + 5);
      f.write(&c, 1);
      CHILD_CHECK(f.good(), "damaging %s", older->path.c_str());
    }
    auto newest = (*engine)->Checkpoint();
    CHILD_CHECK(newest.ok() && newest->revision == 301, "checkpoint at 301");
    const std::vector<int64_t> firsts = SegmentFirstRevisions(dir + "/wal");
    CHILD_CHECK(!firsts.empty() && firsts.front() <= newest->base_revision + 1,
                "the log starts at revision %lld, but the newest checkpoint needs it from %lld",
                static_cast<long long>(firsts.empty() ? 0 : firsts.front()),
                static_cast<long long>(newest->base_revision + 1));
    CHILD_CHECK(firsts.front() <= older->revision + 1,
                "the log starts at revision %lld, after the older kept checkpoint's revision %lld",
                static_cast<long long>(firsts.front()), static_cast<long long>(older->revision));
    s = WriteSteps(store, 301, 400);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    std::fflush(stdout);
    _exit(0);  // a crash: nothing but what was made durable
  });
  ASSERT_CHILD_PASSES([&] {
    RecoveryReport report;
    auto engine = Engine::Open(o, &report);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    CHILD_CHECK(report.checkpoint.loaded && report.checkpoint.loaded->revision == 301, "%s",
                report.checkpoint.ToString().c_str());
    int64_t steps = 0;
    const std::string problem = CheckSteps((*engine)->store(), 400, &steps);
    CHILD_CHECK(problem.empty(), "%s", problem.c_str());
    CHILD_CHECK(steps == 400, "steps %lld", static_cast<long long>(steps));
    return 0;
  });
  fs::remove_all(dir);
}

TEST(EngineHousekeeping, NewDirectoriesAreDurableBeforeAnyFileIsCreatedInThem) {
  const std::string root = TempDir("dirs");
  const std::string dir = root + "/data";
  RecordingFileSystem recording;
  ASSERT_CHILD_PASSES([&] {
    EngineOptions o = Options(dir);
    o.file_system = &recording;
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    absl::Status s = WriteSteps((*engine)->store(), 1, 3);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    CHILD_CHECK((*engine)->Checkpoint().ok(), "checkpoint");
    const std::vector<std::string> calls = recording.Calls();
    auto position = [&](const std::string& call) {
      for (size_t i = 0; i < calls.size(); ++i) {
        if (calls[i] == call) return static_cast<int64_t>(i);
      }
      return int64_t{-1};
    };
    auto first_created_under = [&](const std::string& prefix) {
      for (size_t i = 0; i < calls.size(); ++i) {
        if (calls[i].rfind("create " + prefix, 0) == 0) return static_cast<int64_t>(i);
      }
      return int64_t{-1};
    };
    std::string all;
    for (const std::string& c : calls) all += c + "\n";
    const int64_t parent_synced = position("syncdir " + root);
    const int64_t data_synced = position("syncdir " + dir);
    const int64_t first_segment = first_created_under(dir + "/wal/");
    const int64_t first_checkpoint = first_created_under(dir + "/checkpoints/");
    CHILD_CHECK(parent_synced >= 0, "the data directory's parent was never synced:\n%s", all.c_str());
    CHILD_CHECK(data_synced >= 0, "the data directory was never synced:\n%s", all.c_str());
    CHILD_CHECK(
        first_segment > data_synced && first_checkpoint > data_synced && first_segment > parent_synced,
        "a file was created before its directory was durable:\n%s", all.c_str());
    return 0;
  });
  fs::remove_all(root);
}

// A checkpoint that fails (here: its disk is full) is retried after a delay that doubles each time,
// not at every look of the checkpointer; once the disk has room again, the next attempt succeeds.
TEST(EngineHousekeeping, AFailingBackgroundCheckpointIsRetriedWithBackOff) {
  const std::string dir = TempDir("backoff");
  RecordingFileSystem recording;
  ASSERT_CHILD_PASSES([&] {
    EngineOptions o = Options(dir);
    o.file_system = &recording;
    o.checkpoint_interval = 1;
    o.checkpoint_poll = std::chrono::milliseconds(2);
    o.checkpoint_retry_initial = std::chrono::milliseconds(20);
    o.checkpoint_retry_max = std::chrono::milliseconds(160);
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    absl::Status s = WriteSteps((*engine)->store(), 1, 3);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    recording.RefuseFilesUnder(dir + "/checkpoints/");
    (*engine)->StartBackgroundCheckpoints();
    {
      runtime::SafeRegion waiting;
      std::this_thread::sleep_for(std::chrono::milliseconds(800));
    }
    // Attempts at about 0, 20, 60, 140, 300, 460, 620, 780 ms: 8; at every look (2 ms) it would be
    // hundreds. Generous bounds for a loaded machine.
    const uint64_t attempts = (*engine)->background_checkpoint_attempts();
    CHILD_CHECK(attempts >= 3 && attempts <= 12, "%llu attempts in 800 ms (refused %lld)",
                static_cast<unsigned long long>(attempts), static_cast<long long>(recording.refused()));
    CHILD_CHECK((*engine)->last_checkpoint().revision == 0, "a checkpoint succeeded on a full disk");
    recording.RefuseFilesUnder("");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while ((*engine)->last_checkpoint().revision == 0 && std::chrono::steady_clock::now() < deadline) {
      runtime::SafeRegion waiting;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    CHILD_CHECK((*engine)->last_checkpoint().revision == 4, "no checkpoint after the disk recovered (%lld)",
                static_cast<long long>((*engine)->last_checkpoint().revision));
    return 0;
  });
  fs::remove_all(dir);
}

}  // namespace
}  // namespace revkv::server
