// The durable store (engine.h).
#include "server/engine/engine.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/safepoint/safepoint.h"
#include "server/engine/compaction_record.h"
#include "server/engine/snapshot_file.h"
#include "server/engine/state_copy.h"
#include "server/store/errors.h"
#include "server/wal/wal_format.h"
#include "spdlog/spdlog.h"

namespace revkv::server {

namespace {

absl::Status MakeDirectory(const std::string& path) {
  if (mkdir(path.c_str(), 0750) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat("cannot create directory ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

// The directory `path` is in ("." for a relative name without one).
std::string ParentDirectory(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}

// Creates `dir` and its subdirectories `subdirs` if missing, and fsyncs each parent, so that a machine
// crash cannot lose a directory that files (log segments, checkpoints) were then made durable in.
absl::Status MakeDurableDirectories(FileSystem* fs, const std::string& dir,
                                    std::initializer_list<std::string> subdirs) {
  if (absl::Status s = fs->CreateDirectories(dir); !s.ok()) return s;
  if (absl::Status s = fs->SyncDirectory(ParentDirectory(dir)); !s.ok()) return s;
  for (const std::string& sub : subdirs) {
    if (absl::Status s = fs->CreateDirectories(JoinPath(dir, sub)); !s.ok()) return s;
  }
  return fs->SyncDirectory(dir);
}

// What <dir>/LOCK says about its holder: "pid 1234 (revkv-server, member 'default')", or "" when it says
// nothing (written by an older revkv, or the holder is still writing it).
std::string DescribeLockHolder(int fd) {
  char buffer[512];
  const ssize_t n = pread(fd, buffer, sizeof(buffer) - 1, 0);
  if (n <= 0) return "";
  std::string text(buffer, static_cast<size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  const size_t space = text.find(' ');
  const std::string pid = text.substr(0, space);
  if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) return "";
  return space == std::string::npos ? absl::StrCat("pid ", pid)
                                    : absl::StrCat("pid ", pid, " (", text.substr(space + 1), ")");
}

// Takes an exclusive lock on <dir>/LOCK, held until the descriptor is closed, and writes "<pid> <owner>"
// into it. FailedPrecondition naming the holder if another process has it.
absl::StatusOr<int> LockDirectory(const std::string& dir, const std::string& owner) {
  const std::string path = JoinPath(dir, "LOCK");
  // Never O_TRUNC: the file is the holder's until the lock is ours.
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return absl::InternalError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const std::string holder = DescribeLockHolder(fd);
    close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("data directory ", dir, " is in use by another process: ", path, " is held by ",
                     holder.empty() ? std::string("another revkv process") : holder,
                     "; stop that process or choose another data directory"));
  }
  const std::string content = absl::StrCat(getpid(), " ", owner, "\n");
  // Best effort: the flock is what excludes; the text only names the holder in the message above.
  if (ftruncate(fd, 0) != 0 || pwrite(fd, content.data(), content.size(), 0) < 0) {
    spdlog::warn("cannot write the holder into {}: {}", path, std::strerror(errno));
  }
  return fd;
}

// The file name of `path` ("checkpoint-...ckpt" of ".../checkpoints/checkpoint-...ckpt").
std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Turns the records replayed into RecoveryProgress figures: which segment, and about how many bytes of
// the segments to replay are behind. Segments are named by their first revision, so the segment of a
// record is found from its revision; the bytes within a segment are estimated from the records' sizes
// (header and payload), which is exact up to the segment's own header.
class LogReplayMeter {
 public:
  // Lists the segments of `wal_dir` that can hold records after `after` (a listing error only leaves
  // the figures at zero: recovery itself reports it).
  LogReplayMeter(FileSystem* fs, const std::string& wal_dir, int64_t after, RecoveryProgress* progress)
      : progress_(progress) {
    if (progress_ == nullptr) return;
    absl::StatusOr<std::vector<std::string>> names = fs->ListDirectory(wal_dir);
    std::vector<std::pair<int64_t, std::string>> all;
    if (names.ok()) {
      for (const std::string& name : *names) {
        if (std::optional<int64_t> first = wal_format::ParseSegmentFileName(name))
          all.emplace_back(*first, name);
      }
    }
    std::sort(all.begin(), all.end());
    // The segment holding after + 1 is the last one whose first revision is at most after + 1.
    size_t from = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i].first <= after + 1) from = i;
    }
    uint64_t total = 0;
    for (size_t i = from; i < all.size(); ++i) {
      uint64_t size = 0;
      if (absl::StatusOr<std::unique_ptr<ReadableFile>> file =
              fs->OpenReadable(JoinPath(wal_dir, all[i].second));
          file.ok()) {
        size = (*file)->Size().value_or(0);
      }
      segments_.push_back(Segment{all[i].first, total, size});
      total += size;
    }
    progress_->StartLog(segments_.size(), total);
  }

  // A record of `revision` with `payload_bytes` was read.
  void Replayed(int64_t revision, size_t payload_bytes) {
    if (progress_ == nullptr || segments_.empty()) return;
    while (current_ + 1 < segments_.size() && segments_[current_ + 1].first_revision <= revision) {
      ++current_;
      in_segment_ = wal_format::kSegmentHeaderBytes;
    }
    const Segment& segment = segments_[current_];
    in_segment_ = std::min(segment.bytes, in_segment_ + wal_format::kRecordHeaderBytes + payload_bytes);
    if (++records_ % 256 == 0 || in_segment_ == segment.bytes) {  // every figure costs a few stores
      progress_->LogReplayed(current_ + 1, segment.bytes_before + in_segment_, revision);
    }
  }

 private:
  struct Segment {
    int64_t first_revision;
    uint64_t bytes_before;  // of the segments before it (to replay)
    uint64_t bytes;
  };
  RecoveryProgress* const progress_;
  std::vector<Segment> segments_;
  size_t current_ = 0;
  uint64_t in_segment_ = wal_format::kSegmentHeaderBytes;
  uint64_t records_ = 0;
};

}  // namespace

Engine::Engine(const EngineOptions& options, FileSystem* fs, int lock_fd)
    : options_(options),
      fs_(fs),
      lock_fd_(lock_fd),
      wal_dir_(JoinPath(options.data_dir, "wal")),
      checkpoint_dir_(JoinPath(options.data_dir, "checkpoints")),
      snapshot_dir_(JoinPath(options.data_dir, "snapshots")) {}

absl::StatusOr<std::unique_ptr<Engine>> Engine::Open(const EngineOptions& options, RecoveryReport* report) {
  FileSystem* fs = options.file_system != nullptr ? options.file_system : DefaultFileSystem();
  if (absl::Status s = MakeDirectory(options.data_dir); !s.ok()) return s;
  absl::StatusOr<int> lock = LockDirectory(options.data_dir, options.lock_owner);
  if (!lock.ok()) return lock.status();
  std::unique_ptr<Engine> engine(new Engine(options, fs, *lock));
  if (absl::Status s = MakeDurableDirectories(fs, options.data_dir, {"wal", "checkpoints"}); !s.ok()) {
    return s;
  }
  // Snapshot images a crash left behind (Maintenance/Snapshot's temporary files) are of no use.
  if (absl::StatusOr<std::vector<std::string>> left = fs->ListDirectory(engine->snapshot_dir_); left.ok()) {
    for (const std::string& name : *left) (void)fs->Remove(JoinPath(engine->snapshot_dir_, name));
  }
  RecoveryReport local;
  if (absl::Status s = engine->Recover(report != nullptr ? report : &local); !s.ok()) return s;
  return engine;
}

absl::Status Engine::LoadCheckpoint(CheckpointLoadResult* result, bool remove_temporary) {
  if (remove_temporary) {
    absl::StatusOr<std::vector<std::string>> removed = RemoveTemporaryCheckpoints(fs_, checkpoint_dir_);
    if (!removed.ok()) return removed.status();
    result->removed_temporary_files = *std::move(removed);
  }
  absl::StatusOr<std::vector<CheckpointFile>> files = ListCheckpoints(fs_, checkpoint_dir_);
  if (!files.ok() && !absl::IsNotFound(files.status())) return files.status();
  std::vector<CheckpointFile> newest_first;
  if (files.ok()) newest_first.assign(files->rbegin(), files->rend());

  for (size_t i = 0; i <= newest_first.size(); ++i) {
    // A fresh store for every attempt: a refused checkpoint may have loaded part of its entries.
    store_.reset();
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Create(options_.store, nullptr);
    if (!store.ok()) return store.status();
    store_ = std::move(*store);
    if (i == newest_first.size()) return absl::OkStatus();  // none usable: the log from its start
    const CheckpointFile& file = newest_first[i];

    // Batches of entries, each inserted by one transaction (the loader's I/O runs outside any). The
    // entries are the state at the base revision, known once the header is verified.
    int64_t base = 0;
    std::vector<StoredKeyValue> batch;
    auto flush = [&]() -> absl::Status {
      if (batch.empty()) return absl::OkStatus();
      absl::Status s = store_->LoadEntries(batch, base);
      batch.clear();
      return s;
    };
    // The leases follow the entries (format 3), in batches too.
    std::vector<std::pair<int64_t, int64_t>> leases;
    auto flush_leases = [&]() -> absl::Status {
      if (absl::Status s = flush(); !s.ok()) return s;  // the last entries come first
      if (leases.empty()) return absl::OkStatus();
      absl::Status s = store_->LoadLeases(leases);
      leases.clear();
      return s;
    };
    auto on_lease = [&](const CheckpointLease& l) -> absl::Status {
      leases.emplace_back(l.id, l.ttl);
      return leases.size() >= 4096 ? flush_leases() : absl::OkStatus();
    };
    const CheckpointLeaseVisitor lease_visitor = on_lease;
    // The state records (alarms, auth) follow the leases (format 4).
    auto on_state = [&](const CheckpointStateRecord& r) -> absl::Status {
      if (absl::Status s = flush_leases(); !s.ok()) return s;
      return store_->LoadState(r.kind, r.bytes);
    };
    const CheckpointStateVisitor state_visitor = on_state;
    uint64_t entries_loaded = 0;
    absl::StatusOr<CheckpointInfo> loaded = revkv::server::LoadCheckpoint(
        fs_, file.path, file.revision,
        [&](const CheckpointEntry& e) -> absl::Status {
          batch.push_back(StoredKeyValue{std::string(e.key), std::string(e.value), e.create_revision,
                                         e.mod_revision, e.version, e.lease});
          if (batch.size() < 4096) return absl::OkStatus();
          entries_loaded += batch.size();
          if (options_.progress != nullptr) options_.progress->CheckpointLoaded(entries_loaded);
          return flush();
        },
        [&](const CheckpointInfo& info) {
          base = info.base_revision;
          if (options_.progress != nullptr) {
            options_.progress->StartCheckpoint(BaseName(file.path), info.entry_count);
          }
          return absl::OkStatus();
        },
        &lease_visitor, &state_visitor);
    absl::Status s = loaded.status();
    if (s.ok()) s = flush_leases();
    if (s.ok()) s = store_->FinishLoad(loaded->base_revision, loaded->compact_revision);
    if (s.ok()) {
      result->loaded = *std::move(loaded);
      return absl::OkStatus();
    }
    // Damage (DataLoss, EIO included) or content the store refuses (DataLoss from LoadEntries or
    // FinishLoad) makes the checkpoint unusable: fall back. Anything else (another format version,
    // another I/O error, the heap) stops recovery with that error.
    if (!absl::IsDataLoss(s)) return s;
    // It is set aside (renamed) only once recovery has succeeded without it (Recover): if recovery
    // fails, the disk is left as it was, and the next attempt meets the same evidence.
    spdlog::error("checkpoint {} (revision {}) cannot be used: {}; falling back to {}", file.path,
                  file.revision, std::string(s.message()),
                  i + 1 < newest_first.size() ? "the checkpoint " + newest_first[i + 1].path + " and the log"
                                              : std::string("the whole log"));
    result->skipped.push_back(SkippedCheckpoint{file.path, file.revision, std::string(s.message()), ""});
  }
  return absl::OkStatus();  // not reached
}

absl::Status Engine::Recover(RecoveryReport* report) {
  const auto start = std::chrono::steady_clock::now();
  // Recovery only adds live data (and some garbage: superseded tree nodes): a major collection each
  // time the heap doubles would copy the growing store again and again. The first collection after
  // recovery reclaims the garbage; near the heap maximum growth still collects.
  runtime::MajorCollectionDeferral bulk_load;

  // 1. The newest checkpoint that can be used.
  if (absl::Status s = LoadCheckpoint(&report->checkpoint); !s.ok()) return s;
  int64_t after = 1;  // revision 1 is the empty store: the log starts at revision 2
  if (report->checkpoint.loaded.has_value()) {
    const CheckpointInfo& loaded = *report->checkpoint.loaded;
    after = loaded.base_revision;
    std::lock_guard<std::mutex> lock(stats_mu_);
    last_checkpoint_.revision = loaded.revision;
    last_checkpoint_.base_revision = loaded.base_revision;
    last_checkpoint_.entries = loaded.entry_count;
    last_checkpoint_.bytes = loaded.bytes;
    last_checkpoint_.path = loaded.path;
  }

  // The log was synced through the revision of every checkpoint (loaded or passed over) and of the
  // compaction record before they were written: the log must reach it, and a tear at or below it is
  // damage, not a crash's torn tail. The WAL refuses both before it changes anything.
  absl::StatusOr<int64_t> compacted = ReadCompactionRecord(fs_, options_.data_dir);
  if (!compacted.ok()) return compacted.status();
  int64_t durable_through = *compacted;
  if (report->checkpoint.loaded.has_value()) {
    durable_through = std::max(durable_through, report->checkpoint.loaded->revision);
  }
  for (const SkippedCheckpoint& skip : report->checkpoint.skipped) {
    durable_through = std::max(durable_through, skip.revision);
  }

  // 2. The log after it, replayed record by record; 3. the log attached for new writes.
  LogReplayMeter meter(fs_, wal_dir_, after, options_.progress);
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
        meter.Replayed(revision, payload.size());
        return store_->Replay(revision, payload);
      },
      &report->wal, durable_through);
  if (!wal.ok()) {
    if (report->checkpoint.skipped.empty()) return wal.status();
    return absl::Status(
        wal.status().code(),
        absl::StrCat(wal.status().message(), " (after falling back: ", report->checkpoint.ToString(), ")"));
  }
  wal_ = std::move(*wal);
  if (const std::optional<WalCorruption>& covered = report->wal.covered_damage; covered.has_value()) {
    // Nothing is lost (the checkpoint holds what the damaged records held), but the disk damaged data.
    spdlog::error(
        "the log is damaged at {} byte offset {} ({}); the checkpoint holds everything the damaged "
        "record(s) held, so recovery passed over {} of them and lost nothing. Check the disk",
        covered->segment, covered->offset, covered->reason, report->wal.covered_records_skipped);
  }

  // Never start with less than a checkpoint passed over shows was reached: its state was acknowledged
  // (a checkpoint is valid only once the log is synced through it), so the log should reach it.
  const int64_t recovered = store_->Revision();
  if (report->checkpoint.loaded.has_value() && report->checkpoint.loaded->revision > recovered) {
    return absl::DataLossError(absl::StrCat("recovery reached only revision ", recovered,
                                            ", but the checkpoint ", report->checkpoint.loaded->path,
                                            " was taken at revision ", report->checkpoint.loaded->revision,
                                            " (it holds revision ", report->checkpoint.loaded->base_revision,
                                            " and needs the log after it); the log is missing records"));
  }
  for (const SkippedCheckpoint& skip : report->checkpoint.skipped) {
    if (skip.revision > recovered) {
      return absl::DataLossError(absl::StrCat("recovery reached only revision ", recovered,
                                              ", but the checkpoint ", skip.path, " of revision ",
                                              skip.revision, " could not be used (", skip.reason,
                                              ") and no other checkpoint and the log reach it; ",
                                              "refusing to start with less than was acknowledged"));
    }
  }
  if (options_.progress != nullptr) options_.progress->Finishing(store_->Revision());
  // 4. The last compaction (etcd keeps it across a restart).
  if (absl::Status s = store_->RestoreCompaction(*compacted); !s.ok()) {
    return absl::DataLossError(
        absl::StrCat(JoinPath(options_.data_dir, kCompactionRecordName), ": ", s.message()));
  }

  // 5. Last, once everything else has succeeded: the checkpoints passed over are kept for inspection
  // under names the next load skips. A recovery that fails before this leaves the disk as it found it.
  for (SkippedCheckpoint& skip : report->checkpoint.skipped) {
    absl::StatusOr<std::string> aside =
        SetCheckpointAside(fs_, checkpoint_dir_, CheckpointFile{skip.path, skip.revision});
    if (!aside.ok()) return aside.status();
    skip.renamed_to = *aside;
    spdlog::error("checkpoint {} kept as {}; recovered without it", skip.path, skip.renamed_to);
  }
  store_->AttachWal(wal_.get());
  store_->SetCompactionLog([this](int64_t revision) { return LogCompaction(revision); });
  report->revision = store_->Revision();
  report->keys = static_cast<uint64_t>(store_->KeyCount());
  report->duration =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  return absl::OkStatus();
}

absl::Status Engine::LogCompaction(int64_t revision) {
  // Runs in a safe region (Store::Compact). The record must never name a revision the log could lose:
  // sync the log through it first (in every fsync mode), then the record.
  std::lock_guard<std::mutex> lock(compaction_mu_);
  if (absl::Status s = wal_->SyncThrough(revision); !s.ok()) return s;
  absl::Status s = WriteCompactionRecord(fs_, options_.data_dir, revision);
  if (!s.ok()) {
    spdlog::error("compaction to revision {} not recorded: {}", revision, s.ToString());
  }
  return s;
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
  int64_t taken_at = 0;
  // The checkpoint holds the oldest revision still readable, so that the log after it rebuilds the
  // whole history window at recovery. The window may move on (writers commit, a Compact) between
  // choosing the revision and starting the snapshot read, which then answers "compacted": choose again.
  // Once the snapshot has started, it keeps its state alive until it ends.
  std::unique_ptr<CheckpointWriter> writer;
  absl::Status read;
  absl::Status write_status;
  int64_t base = 0;
  for (int attempt = 0;; ++attempt) {
    // The newest revision, then the compaction (not after it), then the base (not before the compaction).
    taken_at = store_->Revision();
    const int64_t compact_revision = store_->CompactRevision();
    base = std::clamp<int64_t>(store_->OldestReadableRevision(), 1, taken_at);
    {
      runtime::SafeRegion io;
      absl::StatusOr<std::unique_ptr<CheckpointWriter>> w =
          CheckpointWriter::Open(fs_, checkpoint_dir_, taken_at, std::min(compact_revision, base), base);
      if (!w.ok()) return w.status();
      writer = std::move(*w);
    }
    const StateCopy copy = CopyStoreState(*store_, base, writer.get());
    read = copy.read;
    write_status = copy.write;
    if (read != errors::Compacted() || attempt >= 100) break;
    runtime::SafeRegion io;
    writer->Abort();
  }
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
    // Through `taken_at`, not only the base: recovery refuses to end before a checkpoint's revision.
    if (absl::Status s = wal_->SyncThrough(taken_at); !s.ok()) {
      writer->Abort();
      return s;
    }
    info = writer->Finish();
    if (!info.ok()) return info.status();
    // Keep `checkpoint_keep`, and the log back to the oldest kept one, so recovery can fall back. Until
    // there are that many, the fallback for a corrupt checkpoint is the log from its start: keep it all.
    (void)RemoveOldCheckpoints(fs_, checkpoint_dir_, options_.checkpoint_keep);
    absl::StatusOr<std::vector<CheckpointFile>> kept = ListCheckpoints(fs_, checkpoint_dir_);
    // Each kept one needs the log from its base revision on. A base is trusted only from a checkpoint
    // that verifies whole (CRC, base <= revision, revision = name): a damaged base could name a revision
    // past what another kept checkpoint needs. The bound is the smallest verified base, and never above
    // any kept checkpoint's revision (as its name says); if none verifies, nothing is removed.
    if (kept.ok() && !kept->empty() && kept->size() >= static_cast<size_t>(options_.checkpoint_keep)) {
      std::optional<int64_t> bound;
      int64_t lowest_revision = std::numeric_limits<int64_t>::max();
      for (const CheckpointFile& file : *kept) {
        lowest_revision = std::min(lowest_revision, file.revision);
        absl::StatusOr<CheckpointInfo> verified =
            file.path == info->path ? info : VerifyCheckpoint(fs_, file.path);
        if (!verified.ok() || verified->revision != file.revision) {
          spdlog::error("checkpoint {} does not verify ({}); log segments are kept for it", file.path,
                        verified.ok() ? "its header names another revision" : verified.status().ToString());
          continue;
        }
        bound = std::min(bound.value_or(verified->base_revision), verified->base_revision);
      }
      if (bound.has_value()) (void)wal_->RemoveSegmentsUpTo(std::min(*bound, lowest_revision));
    }
  }
  CheckpointStats stats;
  stats.revision = info->revision;
  stats.base_revision = info->base_revision;
  stats.entries = info->entry_count;
  stats.bytes = info->bytes;
  stats.path = info->path;
  stats.duration =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  std::lock_guard<std::mutex> stats_lock(stats_mu_);
  last_checkpoint_ = stats;
  return stats;
}

absl::StatusOr<CheckpointInfo> Engine::WriteSnapshotImage() {
  std::unique_lock<std::mutex> lock(snapshot_mu_, std::try_to_lock);
  if (!lock.owns_lock()) {
    runtime::SafeRegion waiting;
    lock.lock();
  }
  // The visible revision: nothing a crash could take back goes into a backup. The history window may move
  // past it before the snapshot read starts ("compacted"): choose again, as Checkpoint does.
  for (int attempt = 0;; ++attempt) {
    const int64_t revision = store_->VisibleRevision();
    const int64_t compact_revision = std::min(store_->CompactRevision(), revision);
    std::unique_ptr<CheckpointWriter> writer;
    {
      runtime::SafeRegion io;
      absl::StatusOr<std::unique_ptr<CheckpointWriter>> w =
          CheckpointWriter::Open(fs_, snapshot_dir_, revision, compact_revision, revision);
      if (!w.ok()) return w.status();
      writer = std::move(*w);
    }
    const StateCopy copy = CopyStoreState(*store_, revision, writer.get());
    runtime::SafeRegion io;
    if (copy.read == errors::Compacted() && attempt < 100) {
      writer->Abort();
      continue;
    }
    if (!copy.ok()) {
      writer->Abort();
      return !copy.read.ok() ? copy.read : copy.write;
    }
    absl::StatusOr<CheckpointInfo> info = writer->Finish();
    if (!info.ok()) return info.status();
    // A name of its own, so the next image (maybe of the same revision) does not replace it mid-stream.
    const std::string image =
        JoinPath(snapshot_dir_, absl::StrCat("snapshot-", ++snapshot_images_, ".image"));
    if (absl::Status s = fs_->Rename(info->path, image); !s.ok()) {
      (void)fs_->Remove(info->path);
      return s;
    }
    info->path = image;
    return info;
  }
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
  // After a failure, wait before trying again, doubling the wait after each further failure: a full
  // or failing checkpoint disk is not hammered with a checkpoint a second, nor the log with errors.
  std::chrono::milliseconds retry_delay{0};
  auto next_attempt = std::chrono::steady_clock::now();
  for (;;) {
    {
      runtime::SafeRegion waiting;
      std::unique_lock<std::mutex> lock(background_mu_);
      background_cv_.wait_for(lock, options_.checkpoint_poll, [this] { return stopping_; });
      if (stopping_) return;
    }
    if (wal_->failed() || std::chrono::steady_clock::now() < next_attempt ||
        store_->Revision() - last_checkpoint().revision < options_.checkpoint_interval) {
      continue;
    }
    background_attempts_.fetch_add(1, std::memory_order_relaxed);  // a count only
    absl::StatusOr<CheckpointStats> s = Checkpoint();
    if (s.ok()) {
      if (retry_delay.count() > 0) spdlog::info("checkpoint succeeded again after failures");
      retry_delay = std::chrono::milliseconds(0);
      spdlog::info("checkpoint at revision {} (holding revision {}): {} entries, {} bytes in {} ms ({})",
                   s->revision, s->base_revision, s->entries, s->bytes, s->duration.count(), s->path);
      continue;
    }
    retry_delay = retry_delay.count() == 0 ? options_.checkpoint_retry_initial
                                           : std::min(retry_delay * 2, options_.checkpoint_retry_max);
    next_attempt = std::chrono::steady_clock::now() + retry_delay;
    spdlog::error("checkpoint failed: {}; next attempt in {} ms", s.status().ToString(), retry_delay.count());
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
  absl::StatusOr<int> lock = LockDirectory(options.data_dir, options.lock_owner);
  if (!lock.ok()) return lock.status();
  FileSystem* fs = options.file_system != nullptr ? options.file_system : DefaultFileSystem();
  // The engine (which owns the lock from here on) only chooses the checkpoint: the one recovery would
  // load, checked by the store as recovery checks it. Recovery replays the log from its base revision,
  // so the repair reads the log from there too; reading it from the checkpoint's revision would take
  // damage recovery refuses for covered, and report the log intact.
  std::unique_ptr<Engine> engine(new Engine(options, fs, *lock));
  CheckpointLoadResult chosen;
  if (absl::Status s = engine->LoadCheckpoint(&chosen, /*remove_temporary=*/false); !s.ok()) return s;
  const int64_t after = chosen.loaded.has_value() ? chosen.loaded->base_revision : int64_t{1};
  absl::StatusOr<WalRepairReport> repair = RepairWal(fs, engine->wal_dir_, after);
  if (!repair.ok() || !repair->damage.has_value()) return repair;
  // What the next start does with the log as it is now: recovery loads the same checkpoint and needs
  // the log through the revision of that checkpoint, of every checkpoint it passes over and of the
  // compaction record (Engine::Recover's durable_through); it never falls back to an older checkpoint
  // because the log is short.
  const int64_t end = repair->last_good_revision;
  int64_t needed = 0;
  std::string needer;
  if (chosen.loaded.has_value()) {
    needed = chosen.loaded->revision;
    needer = absl::StrCat("the checkpoint ", chosen.loaded->path);
  }
  for (const SkippedCheckpoint& skip : chosen.skipped) {
    if (skip.revision > needed) {
      needed = skip.revision;
      needer = absl::StrCat("the unusable checkpoint ", skip.path, " (", skip.reason, ")");
    }
  }
  absl::StatusOr<int64_t> compacted = ReadCompactionRecord(fs, options.data_dir);
  if (!compacted.ok()) {
    repair->recovery_outlook =
        absl::StrCat("recovery will still refuse to start: ", compacted.status().message());
    return repair;
  }
  if (*compacted > needed) {
    needed = *compacted;
    needer = absl::StrCat("the compaction record ", JoinPath(options.data_dir, kCompactionRecordName));
  }
  if (end < needed) {
    repair->recovery_outlook = absl::StrCat(
        "no checkpoint can be used: the log now ends at revision ", end, ", before revision ", needed,
        " that ", needer, " needs, so recovery will refuse to start. Restore the damaged segment from ",
        "a copy (what was moved aside is kept)");
  } else if (chosen.loaded.has_value()) {
    repair->recovery_outlook = absl::StrCat(
        "recovery will use the checkpoint ", chosen.loaded->path, " (revision ", chosen.loaded->revision,
        ", holding revision ", chosen.loaded->base_revision, ") and the log after it through revision ", end);
  } else {
    repair->recovery_outlook = absl::StrCat(
        "recovery will use no checkpoint (none is usable) and replay the log from its start through "
        "revision ",
        end);
  }
  return repair;
}

namespace {

// Copies the first `bytes` bytes of `from` into a new file `to` (fsync'd). Blocks on disk I/O.
absl::Status CopyPrefix(FileSystem* fs, const std::string& from, const std::string& to, uint64_t bytes) {
  absl::StatusOr<std::unique_ptr<ReadableFile>> in = fs->OpenReadable(from);
  if (!in.ok()) return in.status();
  absl::StatusOr<std::unique_ptr<WritableFile>> out = fs->OpenWritable(to, OpenMode::kTruncate);
  if (!out.ok()) return out.status();
  std::string buffer(1 << 20, '\0');
  for (uint64_t at = 0; at < bytes;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), bytes - at));
    absl::StatusOr<size_t> got = (*in)->ReadAt(at, buffer.data(), want);
    if (!got.ok()) return got.status();
    if (*got == 0) return absl::DataLossError(absl::StrCat(from, " ends at byte ", at));
    if (absl::Status s = (*out)->Append(std::string_view(buffer.data(), *got)); !s.ok()) return s;
    at += *got;
  }
  if (absl::Status s = (*out)->Sync(); !s.ok()) return s;
  return (*out)->Close();
}

}  // namespace

absl::StatusOr<RecoveryReport> RestoreSnapshot(const std::string& snapshot_path,
                                               const EngineOptions& options) {
  namespace stdfs = std::filesystem;
  FileSystem* fs = options.file_system != nullptr ? options.file_system : DefaultFileSystem();
  // 1. The file: its checksum, trailer and padding, before anything is created.
  absl::StatusOr<SnapshotFileInfo> file = VerifySnapshotFile(snapshot_path);
  if (!file.ok()) return file.status();
  absl::StatusOr<CheckpointInfo> header = ReadCheckpointHeader(fs, snapshot_path);
  if (!header.ok()) {
    return absl::DataLossError(
        absl::StrCat("snapshot ", snapshot_path, " holds no revkv image: ", header.status().message()));
  }
  // 2. A new (or empty) data directory: a restore never mixes with existing data.
  std::error_code ec;
  const bool existed = stdfs::exists(options.data_dir, ec);
  if (existed && !stdfs::is_empty(options.data_dir, ec)) {
    return absl::FailedPreconditionError(absl::StrCat("data directory ", options.data_dir,
                                                      " is not empty: restore into a new directory (nothing "
                                                      "was changed)"));
  }
  auto undo = [&] {
    if (existed) {
      for (const auto& entry : stdfs::directory_iterator(options.data_dir, ec))
        stdfs::remove_all(entry.path(), ec);
    } else {
      stdfs::remove_all(options.data_dir, ec);
    }
  };
  if (absl::Status s = MakeDirectory(options.data_dir); !s.ok()) return s;
  if (absl::Status s = MakeDurableDirectories(fs, options.data_dir, {"wal", "checkpoints"}); !s.ok()) {
    undo();
    return s;
  }
  // 3. The image as the directory's checkpoint: copied, checked whole (CRC, structure, revision), then
  // renamed into place.
  const std::string checkpoints = JoinPath(options.data_dir, "checkpoints");
  const std::string temporary = JoinPath(checkpoints, "restore.partial");
  const std::string final_path = JoinPath(checkpoints, CheckpointFileName(header->revision));
  absl::Status s = CopyPrefix(fs, snapshot_path, temporary, file->image_bytes);
  if (s.ok()) {
    absl::StatusOr<CheckpointInfo> verified = VerifyCheckpoint(fs, temporary);
    if (!verified.ok()) {
      s = absl::DataLossError(
          absl::StrCat("snapshot ", snapshot_path, ": its image is damaged: ", verified.status().message()));
    } else if (verified->base_revision != verified->revision) {
      s = absl::DataLossError(absl::StrCat("snapshot ", snapshot_path, ": its image holds revision ",
                                           verified->base_revision, " but is named ", verified->revision));
    }
  }
  if (s.ok()) s = fs->Rename(temporary, final_path);
  if (s.ok()) s = fs->SyncDirectory(checkpoints);
  // 4. A recovery from it, as the server's: the store checks what it loads.
  absl::StatusOr<RecoveryReport> report;
  if (s.ok()) {
    RecoveryReport recovered;
    absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Open(options, &recovered);
    if (!engine.ok()) {
      s = engine.status();
    } else {
      s = (*engine)->Close();
      engine->reset();
    }
    if (s.ok() && !recovered.checkpoint.loaded.has_value()) {
      s = absl::DataLossError(
          absl::StrCat("snapshot ", snapshot_path,
                       ": the restored store refused its image: ", recovered.checkpoint.ToString()));
    }
    if (s.ok()) report = recovered;
  }
  if (!s.ok()) {
    undo();
    return s;
  }
  return report;
}

}  // namespace revkv::server
