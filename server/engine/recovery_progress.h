// How far recovery has come, while it runs: what /healthz answers, what the log prints every few
// seconds and what systemd's STATUS= shows during a long start.
//
// Recovery has two long phases: loading the newest checkpoint (progress: entries loaded of the count in
// its header) and replaying the log after it (progress: bytes of the segments to replay, estimated from
// the records' sizes as they are replayed). Engine::Open reports into a RecoveryProgress given in
// EngineOptions; the figures are for people and are approximate.
//
// Thread-safety: thread-safe. One thread (the one running Engine::Open) writes; any thread reads. Each
// figure is its own relaxed atomic: a reader may see one figure a record newer than another, which a
// progress line cannot show anyway; nothing is published through them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"

namespace revkv::server {

class RecoveryProgress {
 public:
  enum class Phase : int {
    kStarting = 0,    // opening and locking the data directory
    kCheckpoint = 1,  // loading a checkpoint
    kLog = 2,         // replaying the log
    kFinishing = 3,   // restoring the compaction and the leases, starting the services
    kDone = 4,        // recovered: the server serves
  };

  // A consistent-enough copy of the figures.
  struct Snapshot {
    Phase phase = Phase::kStarting;
    std::string checkpoint;                // file name of the checkpoint being loaded ("" if none)
    uint64_t checkpoint_entries = 0;       // entries in it (from its header)
    uint64_t checkpoint_loaded = 0;        // entries loaded so far
    uint64_t log_segments = 0;             // segments to replay
    uint64_t log_segment = 0;              // the one being replayed, 1-based (0 before the first record)
    uint64_t log_bytes = 0;                // bytes of those segments
    uint64_t log_bytes_replayed = 0;       // estimated bytes replayed so far
    int64_t revision = 0;                  // the last revision replayed
    std::chrono::milliseconds elapsed{0};  // since construction

    // Progress of the current phase in [0, 1]; 0 when unknown, 1 when done.
    double PhaseFraction() const;
    // One line for people: "replaying log segment 3/8 (revision 41211), 41% of 512 MiB",
    // "loading checkpoint checkpoint-0000000000012345.ckpt: 120000 of 500000 entries (24%)".
    std::string Describe() const;
  };

  RecoveryProgress();

  // ----- the recovering thread -----
  void StartCheckpoint(std::string_view file_name, uint64_t entries);
  void CheckpointLoaded(uint64_t entries_loaded) { Store(checkpoint_loaded_, entries_loaded); }
  void StartLog(uint64_t segments, uint64_t bytes);
  void LogReplayed(uint64_t segment, uint64_t bytes_replayed, int64_t revision);
  void Finishing(int64_t revision) {
    revision_.store(revision, std::memory_order_relaxed);  // figures for display (see above)
    phase_.store(static_cast<int>(Phase::kFinishing), std::memory_order_relaxed);
  }
  void Done() { phase_.store(static_cast<int>(Phase::kDone), std::memory_order_relaxed); }

  // ----- any thread -----
  Snapshot Read() const;
  bool done() const { return phase_.load(std::memory_order_relaxed) == static_cast<int>(Phase::kDone); }

 private:
  static void Store(std::atomic<uint64_t>& figure, uint64_t value) {
    figure.store(value, std::memory_order_relaxed);  // an independent figure for display (see above)
  }

  const std::chrono::steady_clock::time_point start_;
  std::atomic<int> phase_{static_cast<int>(Phase::kStarting)};
  std::atomic<uint64_t> checkpoint_entries_{0};
  std::atomic<uint64_t> checkpoint_loaded_{0};
  std::atomic<uint64_t> log_segments_{0};
  std::atomic<uint64_t> log_segment_{0};
  std::atomic<uint64_t> log_bytes_{0};
  std::atomic<uint64_t> log_bytes_replayed_{0};
  std::atomic<int64_t> revision_{0};
  mutable std::mutex name_mu_;
  std::string checkpoint_ ABSL_GUARDED_BY(name_mu_);
};

std::string_view RecoveryPhaseName(RecoveryProgress::Phase phase);  // "starting", "checkpoint", ...

}  // namespace revkv::server
