// The durable store: a Store over a data directory, recovered at start from its newest valid
// checkpoint and its write-ahead log, logging every write, and checkpointing in the background.
//
// Data directory layout: LOCK (an flock held while open; it holds the holder's pid and description),
// wal/ (log segments), checkpoints/, and COMPACTION (the last compaction, compaction_record.h).
// Recovery: load the newest checkpoint that can be used (falling back past damaged ones, and past ones
// the store refuses, loudly), then replay the log records after it (a torn tail is cut and reported),
// then restore the compaction, then attach the log for new writes. Recovery fails rather than start
// with less than a checkpoint it passed over or the compaction record shows was reached.
// A checkpoint at revision R holds the store at the oldest revision still readable then (the start of
// the history window, or the compaction), its base: the log after the base, replayed commit by commit,
// rebuilds every readable past revision, so reads at a past revision answer after a restart as they did
// before it. The log is kept back to the oldest kept checkpoint's base.
// Checkpoints are taken from a snapshot read while writers continue; afterwards old checkpoints are
// removed (keeping `checkpoint_keep`) and log segments older than the oldest kept checkpoint too.
//
// Thread-safety: thread-safe; callers must be threads registered with the runtime.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/checkpoint/checkpoint.h"
#include "server/engine/recovery_progress.h"
#include "server/store/store.h"
#include "server/wal/file_system.h"
#include "server/wal/wal.h"

namespace revkv::server {

struct EngineOptions {
  std::string data_dir = "./revkv-data";
  FsyncMode fsync_mode = FsyncMode::kAlways;
  std::chrono::milliseconds fsync_interval{10};
  uint64_t wal_segment_bytes = uint64_t{64} << 20;
  StoreOptions store;
  int64_t checkpoint_interval = 100000;  // revisions between automatic checkpoints; 0: never
  int checkpoint_keep = 2;
  // Background checkpoints: how often the thread looks whether one is due, and the wait after a
  // failed one, doubled after each further failure up to the maximum (reset by a success).
  std::chrono::milliseconds checkpoint_poll{1000};
  std::chrono::milliseconds checkpoint_retry_initial{1000};
  std::chrono::milliseconds checkpoint_retry_max{std::chrono::minutes(5)};
  FileSystem* file_system = nullptr;  // nullptr: the real one
  // Open reports how far recovery has come here (borrowed, must outlive Open); nullptr: nowhere.
  RecoveryProgress* progress = nullptr;
  // Who holds the directory, written to <data_dir>/LOCK after the holder's pid while it is held, so that
  // a second process refused the directory can name the holder: e.g. "revkv-server, member 'default'".
  std::string lock_owner = "revkv";
};

// What recovery found; one line each for the log.
struct RecoveryReport {
  CheckpointLoadResult checkpoint;
  WalRecoveryReport wal;
  int64_t revision = 0;  // the store's revision after recovery
  uint64_t keys = 0;
  std::chrono::milliseconds duration{0};
};

struct CheckpointStats {
  int64_t revision = 0;       // the newest revision when it was taken (its name)
  int64_t base_revision = 0;  // the revision of the state it holds: the oldest readable one then
  uint64_t entries = 0;
  uint64_t bytes = 0;
  std::chrono::milliseconds duration{0};
  std::string path;
};

class Engine {
 public:
  // Opens (creating if needed) the data directory and recovers the store. Fails with
  // FailedPrecondition if another process holds the directory (naming its pid and lock_owner, as read
  // from LOCK), or with the recovery error. Reports progress to options.progress.
  static absl::StatusOr<std::unique_ptr<Engine>> Open(const EngineOptions& options, RecoveryReport* report);
  ~Engine();

  Store& store() { return *store_; }
  Wal& wal() { return *wal_; }
  const EngineOptions& options() const { return options_; }

  // Writes a checkpoint at the newest revision R holding the state at the oldest readable revision
  // (writers keep going), and removes what it makes obsolete. It becomes valid only after the log is
  // synced through R (in every fsync mode), so the log on disk always reaches the newest valid
  // checkpoint. Fails, writing nothing valid, if the log has failed. Blocks on disk I/O (in safe
  // regions). One checkpoint at a time.
  absl::StatusOr<CheckpointStats> Checkpoint();
  CheckpointStats last_checkpoint() const;

  // A consistent point-in-time image of the store, for Maintenance/Snapshot: a checkpoint of the
  // visible revision R holding the state at R (key-values, leases, alarms, auth), written from one
  // snapshot read while writers continue, to a file of its own in <data_dir>/snapshots/ (files left
  // there by a crash are removed at the next start). Nothing un-durable is in it: R is the visible
  // revision. The caller streams the file (snapshot_file.h) and removes it. Blocks on disk I/O (in safe
  // regions); image writes run one at a time, their streams concurrently.
  absl::StatusOr<CheckpointInfo> WriteSnapshotImage();

  // Starts the thread that checkpoints every `checkpoint_interval` revisions (Close stops it). A failed
  // checkpoint is retried after checkpoint_retry_initial, doubling up to checkpoint_retry_max.
  void StartBackgroundCheckpoints();
  // Background checkpoints attempted so far, failed ones included.
  uint64_t background_checkpoint_attempts() const {
    return background_attempts_.load(std::memory_order_relaxed);  // a count only: no ordering needed
  }
  // Stops background work and closes the log (flushing and syncing it). Idempotent.
  absl::Status Close();

  // OK while writes work; the log's permanent error after a disk failure.
  absl::Status write_status() const { return wal_->failed_status(); }

 private:
  Engine(const EngineOptions& options, FileSystem* fs, int lock_fd);
  absl::Status Recover(RecoveryReport* report);
  // Loads the newest checkpoint the store accepts into a new store_; fills report->checkpoint. Renames
  // nothing; removes leftover .tmp files only with `remove_temporary` (recovery, not a repair).
  absl::Status LoadCheckpoint(CheckpointLoadResult* report, bool remove_temporary = true);
  absl::Status LogCompaction(int64_t revision);
  void BackgroundLoop();

  const EngineOptions options_;
  FileSystem* const fs_;
  const int lock_fd_;
  const std::string wal_dir_;
  const std::string checkpoint_dir_;
  const std::string snapshot_dir_;  // Maintenance/Snapshot's images while they are streamed
  std::unique_ptr<Store> store_;
  std::unique_ptr<Wal> wal_;

  std::mutex checkpoint_mu_;  // one checkpoint at a time
  mutable std::mutex stats_mu_;
  CheckpointStats last_checkpoint_;  // guarded by stats_mu_

  std::mutex background_mu_;
  std::condition_variable background_cv_;
  bool stopping_ = false;  // guarded by background_mu_
  std::thread background_;
  std::atomic<uint64_t> background_attempts_{0};
  std::mutex compaction_mu_;      // one compaction record write at a time (Store::Compact serializes too)
  std::mutex snapshot_mu_;        // one snapshot image written at a time (they share a directory)
  uint64_t snapshot_images_ = 0;  // guarded by snapshot_mu_: numbers the image files
  bool closed_ = false;

  // Chooses its checkpoint with LoadCheckpoint, exactly as recovery does.
  friend absl::StatusOr<WalRepairReport> RepairLog(const EngineOptions& options);

  // The operator's restore of a snapshot (revkv-server --restore-snapshot FILE --data-dir DIR), with no
  // server running: verifies the file (snapshot_file.h: its size, SHA-256, trailer and padding; then the
  // image's own CRC and structure as a checkpoint), refuses a data directory that holds anything
  // (FailedPrecondition: restore into a new one), writes the image as the directory's checkpoint and
  // recovers from it once (the store checks every entry, lease and state record), so the directory is
  // one a server starts from. DataLoss naming what is wrong for a damaged or foreign file. On any failure
  // the directory is left empty (created if it was missing). Returns what the recovery found.
  absl::StatusOr<RecoveryReport> RestoreSnapshot(const std::string& snapshot_path,
                                                 const EngineOptions& options);
};

// The operator's repair of the log in options.data_dir (revkv-server --repair-wal), with no server
// running: locks the directory, chooses the checkpoint exactly as Open does (loading it into a store,
// falling back past one it cannot use, setting nothing aside), and runs RepairWal on the log after that
// checkpoint's base revision, the revision recovery replays from. Changes nothing but the log. Fails with
// FailedPrecondition if another process holds the directory, or with the checkpoint's or the log's error.
// Blocks on disk I/O.
absl::StatusOr<WalRepairReport> RepairLog(const EngineOptions& options);

// The operator's restore of a snapshot (revkv-server --restore-snapshot FILE --data-dir DIR), with no
// server running: verifies the file (snapshot_file.h: its size, SHA-256, trailer and padding; then the
// image's own CRC and structure as a checkpoint), refuses a data directory that holds anything
// (FailedPrecondition: restore into a new one), writes the image as the directory's checkpoint and
// recovers from it once (the store checks every entry, lease and state record), so the directory is
// one a server starts from. DataLoss naming what is wrong for a damaged or foreign file. On any failure
// the directory is left empty (created if it was missing). Returns what the recovery found.
absl::StatusOr<RecoveryReport> RestoreSnapshot(const std::string& snapshot_path,
                                               const EngineOptions& options);

}  // namespace revkv::server
