// The WAL's flusher thread: group commit, segment rotation, fsync policy, failure, callbacks.
//
// One pass: take the published tail; write everything between the flush position and it with one
// write(2) per segment touched (two when the range wraps around the ring); rotate to a new segment at a
// record boundary once the current one has reached segment_bytes; give the buffer space back; fdatasync
// if the mode says so; publish the durable LSN; run the callbacks that became due, in LSN order. While
// it writes and syncs, appenders keep filling the buffer, so the next pass takes all of that at once:
// the longer an fdatasync takes, the more records the next one covers.
//
// Failure: the first write, fdatasync, open or close error makes the log fail for good (after a failed
// fdatasync the kernel may have dropped the dirty pages, so a retry could report success for data that
// is gone). The durable LSN never moves again; every pending and later callback and waiter gets the
// failure status; appended bytes are dropped unwritten.
#include <pthread.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/wal/wal.h"
#include "server/wal/wal_format.h"

namespace revkv::server {

using wal_format::kRecordHeaderBytes;

void Wal::StartFlusher() {
  flusher_thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "revkv-wal");
    FlusherMain();
  });
}

bool Wal::IntervalSyncDue() const {
  return options_.fsync_mode == FsyncMode::kInterval && flusher_.unsynced && !failed() &&
         std::chrono::steady_clock::now() >= flusher_.last_sync + options_.fsync_interval;
}

bool Wal::SyncRequested() const {
  // seq_cst load: the flusher_idle_ handshake (wal.h). synced_revision_ is the flusher's own.
  return sync_request_.load(std::memory_order_seq_cst) > synced_revision_.load(std::memory_order_relaxed) &&
         !failed();
}

bool Wal::HasWork() {
  // seq_cst loads: the flusher_idle_ handshake (wal.h).
  return buffer_.tail() != flusher_.flush_pos || closing_.load(std::memory_order_seq_cst) ||
         !callbacks_.QueueEmpty() || IntervalSyncDue() || SyncRequested();
}

void Wal::WaitForWork() {
  std::unique_lock<std::mutex> lock(flusher_mu_);
  flusher_idle_.store(true, std::memory_order_seq_cst);
  while (!HasWork()) {
    // The timeout is only a backstop for a writer that forgot Notify, except for the interval fsync.
    std::chrono::nanoseconds timeout = std::chrono::seconds(1);
    if (options_.fsync_mode == FsyncMode::kInterval && flusher_.unsynced && !failed()) {
      timeout = std::min<std::chrono::nanoseconds>(
          timeout, flusher_.last_sync + options_.fsync_interval - std::chrono::steady_clock::now());
    }
    if (timeout.count() > 0) flusher_wake_.wait_for(lock, timeout);
  }
  flusher_idle_.store(false, std::memory_order_relaxed);
}

void Wal::FlusherMain() {
  for (;;) {
    WaitForWork();
    const uint64_t tail = buffer_.tail();
    if (tail != flusher_.flush_pos && !failed()) {
      if (absl::Status s = WriteAppended(tail); !s.ok()) EnterFailedState(s);
    }
    if (failed() && tail != flusher_.flush_pos) {  // drop what will never be written
      buffer_.Release(tail - flusher_.flush_pos);
      flusher_.flush_pos = tail;
    }
    if (IntervalSyncDue()) {
      if (absl::Status s = SyncSegment(); !s.ok()) EnterFailedState(s);
      WakeDurableWaiters();
    }
    if (SyncRequested() && flusher_.written_revision >= sync_request_.load(std::memory_order_seq_cst)) {
      if (absl::Status s = SyncForRequest(); !s.ok()) EnterFailedState(s);
      WakeDurableWaiters();
    }
    RunCallbacks();
    if (closing_.load(std::memory_order_seq_cst) && buffer_.tail() == flusher_.flush_pos) break;
  }
  ExitFlusher();
}

absl::Status Wal::WriteAppended(uint64_t tail) {
  Flusher& f = flusher_;
  char header_bytes[kRecordHeaderBytes];
  while (f.flush_pos < tail) {
    if (f.segment_has_records && f.segment_bytes >= options_.segment_bytes) {
      if (options_.fsync_mode != FsyncMode::kNone) {
        if (absl::Status s = SyncSegment(); !s.ok()) return s;  // a closed segment is durable
      } else {
        f.unsynced_segments.push_back(f.segment_first_revision);
      }
      if (absl::Status s = StartSegment(f.written_revision + 1, options_.fsync_mode != FsyncMode::kNone);
          !s.ok()) {
        return s;
      }
    }
    // The records from flush_pos that go into the current segment: at least one, then while it is
    // below segment_bytes.
    uint64_t end = f.flush_pos;
    uint64_t segment_bytes = f.segment_bytes;
    WalLsn lsn = f.written_lsn;
    int64_t revision = f.written_revision;
    while (end < tail && (end == f.flush_pos || segment_bytes < options_.segment_bytes)) {
      buffer_.Read(end, kRecordHeaderBytes, header_bytes);
      const wal_format::RecordHeader h = wal_format::DecodeRecordHeader(header_bytes);
      const uint64_t size = kRecordHeaderBytes + h.payload_bytes;
      end += size;
      segment_bytes += size;
      ++lsn;
      revision = h.revision;
    }
    for (std::string_view piece : buffer_.Pieces(f.flush_pos, end)) {
      if (piece.empty()) continue;
      if (absl::Status s = f.file->Append(piece); !s.ok()) return s;
      write_calls_.fetch_add(1, std::memory_order_relaxed);
    }
    bytes_written_.fetch_add(end - f.flush_pos, std::memory_order_relaxed);
    records_written_.fetch_add(lsn - f.written_lsn, std::memory_order_relaxed);
    buffer_.Release(end - f.flush_pos);  // the kernel has the bytes; appenders may reuse the space
    f.flush_pos = end;
    f.segment_bytes = segment_bytes;
    f.segment_has_records = true;
    f.written_lsn = lsn;
    f.written_revision = revision;
    f.unsynced = true;
  }
  if (options_.fsync_mode == FsyncMode::kAlways) {
    if (absl::Status s = SyncSegment(); !s.ok()) return s;
  }
  AdvanceDurable(f.written_lsn, f.written_revision);
  return absl::OkStatus();
}

absl::Status Wal::StartSegment(int64_t first_revision, bool sync_directory) {
  Flusher& f = flusher_;
  if (f.file != nullptr) {
    if (absl::Status s = f.file->Close(); !s.ok()) return s;
    f.file.reset();
  }
  const std::string path = JoinPath(options_.dir, wal_format::SegmentFileName(first_revision));
  absl::StatusOr<std::unique_ptr<WritableFile>> file = fs_->OpenWritable(path, OpenMode::kTruncate);
  if (!file.ok()) return file.status();
  const std::string header = wal_format::EncodeSegmentHeader();
  if (absl::Status s = (*file)->Append(header); !s.ok()) return s;
  if (options_.preallocate_segments) {
    // Best effort: the size stays the header's, so recovery is not affected either way; a full disk
    // shows in the writes that follow.
    (*file)->Preallocate(options_.segment_bytes).IgnoreError();
  }
  // The header reaches the disk with the first records' fdatasync; recovery treats a segment whose
  // header is missing as torn. The directory entry must be durable before records in it are acknowledged.
  if (sync_directory) {
    if (absl::Status s = fs_->SyncDirectory(options_.dir); !s.ok()) return s;
  }
  bytes_written_.fetch_add(header.size(), std::memory_order_relaxed);
  f.file = *std::move(file);
  f.segment_first_revision = first_revision;
  f.segment_bytes = header.size();
  f.segment_has_records = false;
  f.unsynced = true;
  {
    std::lock_guard<std::mutex> lock(segments_mu_);
    segments_.push_back(first_revision);
  }
  current_segment_.store(first_revision, std::memory_order_relaxed);
  return absl::OkStatus();
}

absl::Status Wal::SyncSegment() {
  Flusher& f = flusher_;
  const auto start = std::chrono::steady_clock::now();
  if (absl::Status s = f.file->Sync(); !s.ok()) return s;
  const auto end = std::chrono::steady_clock::now();
  fsync_latency_.Record(end - start);
  fsyncs_.fetch_add(1, std::memory_order_relaxed);
  f.unsynced = false;
  f.last_sync = end;
  synced_revision_.store(f.written_revision, std::memory_order_release);
  return absl::OkStatus();
}

// SyncThrough's sync, in any mode: what kNone left unsynced (closed segments, the directory entries of
// new segments), then the current segment. SyncSegment publishes the synced revision.
absl::Status Wal::SyncForRequest() {
  if (absl::Status s = SyncClosedSegments(); !s.ok()) return s;
  return SyncSegment();
}

void Wal::AdvanceDurable(WalLsn lsn, int64_t revision) {
  durable_revision_.store(revision, std::memory_order_release);
  durable_lsn_.store(lsn, std::memory_order_release);
  WakeDurableWaiters();
}

void Wal::WakeDurableWaiters() {
  // Waiters check durable_lsn_ / synced_revision_ under durable_mu_; the stores above happen before
  // this lock, so a waiter either saw them or is waiting when the signal comes.
  std::lock_guard<std::mutex> lock(durable_mu_);
  if (durable_waiters_ > 0) durable_changed_.notify_all();
}

void Wal::EnterFailedState(const absl::Status& cause) {
  {
    std::lock_guard<std::mutex> lock(failure_mu_);
    if (!failure_.ok()) return;
    failure_ = absl::Status(cause.code(),
                            absl::StrCat("wal: ", cause.message(), "; writes are disabled until restart"));
    // Keep the payloads (the errno, see ErrnoOf), so callers can tell a full disk from a broken one.
    cause.ForEachPayload(
        [this](absl::string_view url, const absl::Cord& payload) { failure_.SetPayload(url, payload); });
  }
  failed_.store(true, std::memory_order_seq_cst);
  buffer_.Shutdown();  // blocked Reserve calls return the failure
  std::lock_guard<std::mutex> lock(durable_mu_);
  durable_changed_.notify_all();
}

void Wal::RunCallbacks() {
  callbacks_.Collect();
  // Callbacks for records not yet written stay pending, unless the log has failed.
  const uint64_t ran = callbacks_.Run(durable_lsn_.load(std::memory_order_relaxed),
                                      failed() ? failed_status() : absl::OkStatus());
  callbacks_run_.fetch_add(ran, std::memory_order_relaxed);
}

absl::Status Wal::SyncClosedSegments() {
  Flusher& f = flusher_;
  if (f.unsynced_segments.empty()) return absl::OkStatus();
  for (int64_t first_revision : f.unsynced_segments) {
    {
      // A segment RemoveSegmentsUpTo has deleted needs no sync (and opening it would create it again).
      std::lock_guard<std::mutex> lock(segments_mu_);
      if (std::find(segments_.begin(), segments_.end(), first_revision) == segments_.end()) continue;
    }
    const std::string path = JoinPath(options_.dir, wal_format::SegmentFileName(first_revision));
    absl::StatusOr<std::unique_ptr<WritableFile>> file = fs_->OpenWritable(path, OpenMode::kAppend);
    if (!file.ok()) return file.status();
    if (absl::Status s = (*file)->Sync(); !s.ok()) return s;
    if (absl::Status s = (*file)->Close(); !s.ok()) return s;
  }
  f.unsynced_segments.clear();
  return fs_->SyncDirectory(options_.dir);
}

void Wal::ExitFlusher() {
  // A clean shutdown leaves everything synced, in every mode (kNone included: it skipped the fsyncs
  // while running, including those of closed segments and of the directory).
  if (!failed()) {
    absl::Status s = SyncClosedSegments();
    if (s.ok() && flusher_.unsynced) s = SyncSegment();
    if (!s.ok()) EnterFailedState(s);
  }
  for (;;) {
    RunCallbacks();
    std::lock_guard<std::mutex> lock(late_mu_);
    if (callbacks_.QueueEmpty()) {
      flusher_exited_.store(true, std::memory_order_release);
      break;
    }
  }
  // Everything appended before Close has been written, so only a callback for a record appended after
  // Close began (which Append forbids) could be left: fail it rather than strand it.
  callbacks_.Run(durable_lsn_.load(std::memory_order_relaxed),
                 failed() ? failed_status() : absl::FailedPreconditionError("wal: closed"));
  std::lock_guard<std::mutex> lock(durable_mu_);
  durable_changed_.notify_all();
}

}  // namespace revkv::server
