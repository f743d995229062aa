// The durable store (engine.h).
#include "server/engine/engine.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/safepoint/safepoint.h"
#include "spdlog/spdlog.h"

namespace revkv::server {

namespace {

absl::Status MakeDirectory(const std::string& path) {
  if (mkdir(path.c_str(), 0750) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat("cannot create directory ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

// Takes an exclusive lock on <dir>/LOCK, held until the descriptor is closed.
absl::StatusOr<int> LockDirectory(const std::string& dir) {
  const std::string path = JoinPath(dir, "LOCK");
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return absl::InternalError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("data directory ", dir, " is in use by another revkv process (", path, " is locked)"));
  }
  return fd;
}

}  // namespace

Engine::Engine(const EngineOptions& options, FileSystem* fs, int lock_fd)
    : options_(options),
      fs_(fs),
      lock_fd_(lock_fd),
      wal_dir_(JoinPath(options.data_dir, "wal")),
      checkpoint_dir_(JoinPath(options.data_dir, "checkpoints")) {}

absl::StatusOr<std::unique_ptr<Engine>> Engine::Open(const EngineOptions& options, RecoveryReport* report) {
  if (absl::Status s = MakeDirectory(options.data_dir); !s.ok()) return s;
  absl::StatusOr<int> lock = LockDirectory(options.data_dir);
  if (!lock.ok()) return lock.status();
  FileSystem* fs = options.file_system != nullptr ? options.file_system : DefaultFileSystem();
  std::unique_ptr<Engine> engine(new Engine(options, fs, *lock));
  RecoveryReport local;
  if (absl::Status s = engine->Recover(report != nullptr ? report : &local); !s.ok()) return s;
  return engine;
}

absl::Status Engine::Recover(RecoveryReport* report) {
  const auto start = std::chrono::steady_clock::now();
  // Recovery only adds live data (and some garbage: superseded tree nodes): a major collection each
  // time the heap doubles would copy the growing store again and again. The first collection after
  // recovery reclaims the garbage; near the heap maximum growth still collects.
  runtime::MajorCollectionDeferral bulk_load;
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Create(options_.store, nullptr);
  if (!store.ok()) return store.status();
  store_ = std::move(*store);

  // 1. The newest valid checkpoint, in batches (the loader's I/O runs outside any transaction).
  std::vector<StoredKeyValue> batch;
  absl::Status load_status;
  auto flush = [&]() -> absl::Status {
    if (batch.empty()) return absl::OkStatus();
    absl::Status s = store_->LoadEntries(batch);
    batch.clear();
    return s;
  };
  absl::StatusOr<CheckpointLoadResult> loaded =
      LoadNewestValidCheckpoint(fs_, checkpoint_dir_, [&](const CheckpointEntry& e) -> absl::Status {
        batch.push_back(StoredKeyValue{std::string(e.key), std::string(e.value), e.create_revision,
                                       e.mod_revision, e.version, e.lease});
        return batch.size() >= 4096 ? flush() : absl::OkStatus();
      });
  if (!loaded.ok()) return loaded.status();
  if (absl::Status s = flush(); !s.ok()) return s;
  report->checkpoint = *loaded;
  int64_t after = 1;  // revision 1 is the empty store: the log starts at revision 2
  if (loaded->loaded.has_value()) {
    after = loaded->loaded->revision;
    if (absl::Status s = store_->FinishLoad(after, loaded->loaded->compact_revision); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(stats_mu_);
    last_checkpoint_.revision = after;
    last_checkpoint_.entries = loaded->loaded->entry_count;
    last_checkpoint_.path = loaded->loaded->path;
  }

  // 2. The log after it, replayed record by record; 3. the log attached for new writes.
  WalOptions wal_options;
  wal_options.dir = wal_dir_;
  wal_options.file_system = fs_;
  wal_options.fsync_mode = options_.fsync_mode;
  wal_options.fsync_interval = options_.fsync_interval;
  wal_options.segment_bytes = options_.wal_segment_bytes;
  absl::StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(
      wal_options, after,
      [&](int64_t revision, std::string_view payload) -> absl::Status {
        if (revision != store_->Revision() + 1) {
          return absl::DataLossError(
              absl::StrCat("log record of revision ", revision, " follows revision ", store_->Revision()));
        }
        return store_->Replay(revision, payload);
      },
      &report->wal);
  if (!wal.ok()) return wal.status();
  wal_ = std::move(*wal);
  store_->AttachWal(wal_.get());
  report->revision = store_->Revision();
  report->keys = static_cast<uint64_t>(store_->KeyCount());
  report->duration =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  return absl::OkStatus();
}

absl::StatusOr<CheckpointStats> Engine::Checkpoint() {
  std::unique_lock<std::mutex> lock(checkpoint_mu_, std::try_to_lock);
  if (!lock.owns_lock()) {
    runtime::SafeRegion waiting;
    lock.lock();
  }
  // After a disk error the store is read-only: nothing more is written to that disk.
  if (wal_->failed()) return wal_->failed_status();
  const auto start = std::chrono::steady_clock::now();
  const int64_t revision = store_->Revision();
  std::unique_ptr<CheckpointWriter> writer;
  {
    runtime::SafeRegion io;
    absl::StatusOr<std::unique_ptr<CheckpointWriter>> w =
        CheckpointWriter::Open(fs_, checkpoint_dir_, revision, store_->CompactRevision());
    if (!w.ok()) return w.status();
    writer = std::move(*w);
  }
  // Entries are copied out of the snapshot in batches and written in safe regions, so a collection
  // never waits for the disk.
  std::vector<StoredKeyValue> batch;
  absl::Status write_status;
  auto write_batch = [&] {
    runtime::SafeRegion io;
    for (const StoredKeyValue& kv : batch) {
      if (!write_status.ok()) break;
      write_status = writer->Add(
          CheckpointEntry{kv.key, kv.value, kv.create_revision, kv.mod_revision, kv.version, kv.lease});
    }
    batch.clear();
  };
  int64_t snapshot_revision = 0;
  absl::Status read = store_->ForEachAt(
      revision,
      [&](const StoredKeyValue& kv) {
        batch.push_back(kv);
        if (batch.size() >= 4096) write_batch();
      },
      &snapshot_revision);
  if (read.ok()) write_batch();
  absl::StatusOr<CheckpointInfo> info;
  {
    runtime::SafeRegion io;
    if (!read.ok() || !write_status.ok()) {
      writer->Abort();
      return !read.ok() ? read : write_status;
    }
    // The log on disk must reach the checkpoint before the checkpoint counts. Otherwise a crash could
    // leave a checkpoint at R over a log that ends before R; the restarted log would continue at R + 1
    // in a new segment, and if checkpoint R were then found corrupt, the fallback to the previous
    // checkpoint would meet a gap in the log and cut away every write after it, acknowledged ones too.
    if (absl::Status s = wal_->SyncThrough(revision); !s.ok()) {
      writer->Abort();
      return s;
    }
    info = writer->Finish();
    if (!info.ok()) return info.status();
    // Keep `checkpoint_keep`, and the log back to the oldest kept one, so recovery can fall back. Until
    // there are that many, the fallback for a corrupt checkpoint is the log from its start: keep it all.
    (void)RemoveOldCheckpoints(fs_, checkpoint_dir_, options_.checkpoint_keep);
    absl::StatusOr<std::vector<CheckpointFile>> kept = ListCheckpoints(fs_, checkpoint_dir_);
    if (kept.ok() && !kept->empty() && kept->size() >= static_cast<size_t>(options_.checkpoint_keep)) {
      (void)wal_->RemoveSegmentsUpTo(kept->front().revision);
    }
  }
  CheckpointStats stats;
  stats.revision = info->revision;
  stats.entries = info->entry_count;
  stats.path = info->path;
  stats.duration =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  {
    runtime::SafeRegion io;
    struct stat st;
    if (stat(info->path.c_str(), &st) == 0) stats.bytes = static_cast<uint64_t>(st.st_size);
  }
  std::lock_guard<std::mutex> stats_lock(stats_mu_);
  last_checkpoint_ = stats;
  return stats;
}

CheckpointStats Engine::last_checkpoint() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return last_checkpoint_;
}

void Engine::StartBackgroundCheckpoints() {
  if (options_.checkpoint_interval <= 0 || background_.joinable()) return;
  background_ = std::thread([this] { BackgroundLoop(); });
}

void Engine::BackgroundLoop() {
  runtime::ThreadRegistration registration("checkpointer");
  for (;;) {
    {
      runtime::SafeRegion waiting;
      std::unique_lock<std::mutex> lock(background_mu_);
      background_cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; });
      if (stopping_) return;
    }
    if (!wal_->failed() && store_->Revision() - last_checkpoint().revision >= options_.checkpoint_interval) {
      absl::StatusOr<CheckpointStats> s = Checkpoint();
      if (s.ok()) {
        spdlog::info("checkpoint at revision {}: {} entries, {} bytes in {} ms ({})", s->revision, s->entries,
                     s->bytes, s->duration.count(), s->path);
      } else {
        spdlog::error("checkpoint failed: {}", s.status().ToString());
      }
    }
  }
}

absl::Status Engine::Close() {
  if (closed_) return absl::OkStatus();
  closed_ = true;
  {
    std::lock_guard<std::mutex> lock(background_mu_);
    stopping_ = true;
  }
  background_cv_.notify_all();
  if (background_.joinable()) {
    runtime::SafeRegion waiting;
    background_.join();
  }
  absl::Status s;
  if (wal_ != nullptr) {
    runtime::SafeRegion io;
    s = wal_->Close();
  }
  return s;
}

Engine::~Engine() {
  (void)Close();
  store_.reset();
  wal_.reset();
  if (lock_fd_ >= 0) close(lock_fd_);
}

absl::StatusOr<WalRepairReport> RepairLog(const EngineOptions& options) {
  if (absl::Status s = MakeDirectory(options.data_dir); !s.ok()) return s;
  absl::StatusOr<int> lock = LockDirectory(options.data_dir);
  if (!lock.ok()) return lock.status();
  FileSystem* fs = options.file_system != nullptr ? options.file_system : DefaultFileSystem();
  absl::StatusOr<CheckpointLoadResult> loaded = LoadNewestValidCheckpoint(
      fs, JoinPath(options.data_dir, "checkpoints"), [](const CheckpointEntry&) { return absl::OkStatus(); });
  absl::StatusOr<WalRepairReport> repair =
      loaded.ok() ? RepairWal(fs, JoinPath(options.data_dir, "wal"),
                              loaded->loaded.has_value() ? loaded->loaded->revision : int64_t{1})
                  : absl::StatusOr<WalRepairReport>(loaded.status());
  close(*lock);
  return repair;
}

}  // namespace revkv::server
