// Wal: opening (recovery), the writer-facing calls (Reserve, Append, Notify, WaitDurable, OnDurable),
// segment removal, statistics and Close. The flusher thread lives in wal_flusher.cc.
#include "server/wal/wal.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/port/diagnostics.h"
#include "server/wal/crc32c.h"
#include "server/wal/wal_format.h"
#include "server/wal/wal_recovery.h"

namespace revkv::server {

using wal_format::kRecordHeaderBytes;

std::string_view FsyncModeName(FsyncMode mode) {
  switch (mode) {
    case FsyncMode::kAlways:
      return "always";
    case FsyncMode::kInterval:
      return "interval";
    case FsyncMode::kNone:
      return "none";
  }
  return "unknown";
}

absl::StatusOr<FsyncMode> ParseFsyncMode(std::string_view name) {
  for (FsyncMode mode : {FsyncMode::kAlways, FsyncMode::kInterval, FsyncMode::kNone}) {
    if (name == FsyncModeName(mode)) return mode;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown fsync mode \"", std::string(name), "\"; expected always, interval or none"));
}

std::string WalRecoveryReport::ToString() const {
  std::string s =
      absl::StrCat("wal recovery: read ", segments_read, " segment(s), revisions ", first_revision, "..",
                   last_revision, ", replayed ", records_replayed, " record(s) after revision ",
                   after_revision, "; next revision ", next_revision, " in ", segment);
  if (corruption) {
    absl::StrAppend(&s, "; torn tail cut at ", corruption->segment, " offset ", corruption->offset, " (",
                    corruption->reason, "), ", bytes_truncated, " byte(s) discarded");
  }
  if (covered_records_skipped > 0) {
    absl::StrAppend(&s, "; passed over ", covered_records_skipped,
                    " damaged record(s) at or below the checkpoint's revision");
    if (covered_damage) {
      absl::StrAppend(&s, ", the first at ", covered_damage->segment, " offset ", covered_damage->offset,
                      " (", covered_damage->reason, ")");
    }
  }
  if (!removed_segments.empty()) {
    absl::StrAppend(&s, "; removed ", absl::StrJoin(removed_segments, ", "));
  }
  if (!broken_copy.empty()) absl::StrAppend(&s, "; what was cut is kept in ", broken_copy);
  return s;
}

std::string WalRepairReport::ToString() const {
  if (!damage)
    return absl::StrCat("wal repair: the log is intact through revision ", last_good_revision,
                        "; nothing was changed");
  std::string s = absl::StrCat("wal repair: damage in ", damage->segment, " at byte offset ", damage->offset,
                               " (", damage->reason, "); the log now ends at revision ", last_good_revision,
                               "; lost: revisions ", first_lost_revision);
  if (last_lost_revision > first_lost_revision) absl::StrAppend(&s, "..", last_lost_revision);
  if (last_lost_revision == 0) absl::StrAppend(&s, " (no intact record after the damage)");
  absl::StrAppend(&s, ", ", bytes_moved, " byte(s)");
  for (const auto& [from, to] : moved) absl::StrAppend(&s, "\n  moved aside: ", from, " -> ", to);
  if (!recovery_outlook.empty()) absl::StrAppend(&s, "\n  next start: ", recovery_outlook);
  return s;
}

// --- WalReservation ---

WalReservation::WalReservation(WalReservation&& other) noexcept
    : wal_(std::exchange(other.wal_, nullptr)),
      payload_bytes_(std::exchange(other.payload_bytes_, 0)),
      payload_crc_(other.payload_crc_),
      crc_shift_(other.crc_shift_),
      callback_(std::move(other.callback_)) {}

WalReservation& WalReservation::operator=(WalReservation&& other) noexcept {
  if (this != &other) {
    Reset();
    wal_ = std::exchange(other.wal_, nullptr);
    payload_bytes_ = std::exchange(other.payload_bytes_, 0);
    payload_crc_ = other.payload_crc_;
    crc_shift_ = other.crc_shift_;
    callback_ = std::move(other.callback_);
  }
  return *this;
}

WalReservation::~WalReservation() { Reset(); }

void WalReservation::Reset() {
  if (wal_ != nullptr) wal_->ReleaseSpace(kRecordHeaderBytes + payload_bytes_);
  wal_ = nullptr;
  payload_bytes_ = 0;
  callback_.reset();
}

// --- Opening ---

Wal::Wal(const WalOptions& options, FileSystem* fs)
    : options_(options), fs_(fs), buffer_(options.buffer_bytes) {}

absl::StatusOr<std::unique_ptr<Wal>> Wal::Open(const WalOptions& options, int64_t after_revision,
                                               WalRecordVisitor visitor, WalRecoveryReport* report,
                                               int64_t durable_through) {
  if (options.dir.empty()) return absl::InvalidArgumentError("wal: no directory given");
  if (options.segment_bytes == 0) return absl::InvalidArgumentError("wal: segment_bytes must be positive");
  if (options.buffer_bytes == 0) return absl::InvalidArgumentError("wal: buffer_bytes must be positive");
  if (options.fsync_mode == FsyncMode::kInterval && options.fsync_interval.count() <= 0) {
    return absl::InvalidArgumentError("wal: fsync_interval must be positive");
  }
  if (after_revision < 0) return absl::InvalidArgumentError("wal: negative checkpoint revision");
  FileSystem* fs = options.file_system != nullptr ? options.file_system : DefaultFileSystem();
  WalRecoveryReport local_report;
  if (report == nullptr) report = &local_report;

  if (absl::Status s = fs->CreateDirectories(options.dir); !s.ok()) return s;
  absl::StatusOr<RecoveredLog> log =
      RecoverLog(fs, options.dir, after_revision, durable_through, visitor, report);
  if (!log.ok()) return log.status();

  std::unique_ptr<Wal> wal(new Wal(options, fs));
  const int64_t last = log->next_revision - 1;
  wal->last_revision_ = last;
  wal->appended_revision_.store(last, std::memory_order_relaxed);
  wal->durable_revision_.store(last, std::memory_order_relaxed);
  wal->synced_revision_.store(last, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(wal->segments_mu_);
    wal->segments_ = log->segments;
  }
  Flusher& f = wal->flusher_;
  f.written_revision = last;
  f.last_sync = std::chrono::steady_clock::now();
  if (log->continue_segment) {
    const std::string path = JoinPath(options.dir, wal_format::SegmentFileName(*log->continue_segment));
    absl::StatusOr<std::unique_ptr<WritableFile>> file = fs->OpenWritable(path, OpenMode::kAppend);
    if (!file.ok()) return file.status();
    // What a crashed process wrote may still be only in the page cache: make it durable before building
    // on it (segments before the last one were synced when they were closed).
    if (log->continue_segment_has_records) {
      if (absl::Status s = (*file)->Sync(); !s.ok()) return s;
    }
    f.file = *std::move(file);
    f.segment_first_revision = *log->continue_segment;
    f.segment_bytes = log->continue_segment_bytes;
    f.segment_has_records = log->continue_segment_has_records;
    wal->current_segment_.store(*log->continue_segment, std::memory_order_relaxed);
  } else if (absl::Status s = wal->StartSegment(log->next_revision, /*sync_directory=*/true); !s.ok()) {
    return s;
  }
  report->next_revision = log->next_revision;
  report->segment = f.file->path();
  wal->StartFlusher();
  return wal;
}

Wal::~Wal() { Close().IgnoreError(); }

// --- Writers ---

size_t Wal::max_payload_bytes() const {
  return std::min<size_t>(buffer_.capacity() - kRecordHeaderBytes, wal_format::kMaxPayloadBytes);
}

absl::StatusOr<WalReservation> Wal::Reserve(std::string_view payload, DurableCallback on_durable) {
  if (failed()) return failed_status();
  if (closing_.load(std::memory_order_acquire)) return absl::FailedPreconditionError("wal: closed");
  const uint64_t bytes = kRecordHeaderBytes + payload.size();
  if (payload.size() > max_payload_bytes()) {
    return absl::InvalidArgumentError(absl::StrCat("wal: a record of ", payload.size(),
                                                   " bytes does not fit the log buffer of ",
                                                   buffer_.capacity(), " bytes"));
  }
  WalReservation reservation;
  reservation.payload_bytes_ = payload.size();
  reservation.payload_crc_ = Crc32c(payload);
  reservation.crc_shift_ = Crc32cShift(payload.size());
  if (on_durable) {
    reservation.callback_ = std::make_unique<DurableCallbackNode>();
    reservation.callback_->callback = std::move(on_durable);
  }
  if (!buffer_.Claim(bytes)) {
    if (failed()) return failed_status();
    return absl::FailedPreconditionError("wal: closed");
  }
  reservation.wal_ = this;
  return reservation;
}

void Wal::Die(const char* what, int64_t a, int64_t b) {
  runtime::port::Fatal("revkv: wal: %s (%lld, %lld)", what, static_cast<long long>(a),
                       static_cast<long long>(b));
}

WalLsn Wal::Append(WalReservation& reservation, int64_t revision, std::string_view payload) {
  if (reservation.wal_ != this) Die("the reservation is empty, used or from another Wal", 0, 0);
  if (payload.size() != reservation.payload_bytes_) {
    Die("payload size differs from the reserved one (given, reserved)", static_cast<int64_t>(payload.size()),
        static_cast<int64_t>(reservation.payload_bytes_));
  }
  if (revision != last_revision_ + 1) {
    Die("revisions must be consecutive (given, last appended)", revision, last_revision_);
  }
  if (closing_.load(std::memory_order_relaxed)) Die("append after Close", revision, 0);
#if defined(REVKV_DEBUG_CHECKS)
  if (Crc32c(payload) != reservation.payload_crc_) {
    Die("payload bytes differ from the reserved ones (revision, 0)", revision, 0);
  }
#endif
  wal_format::RecordHeader header;
  header.payload_bytes = static_cast<uint32_t>(payload.size());
  header.crc = Crc32cCombineWithShift(wal_format::RevisionCrc(revision), reservation.payload_crc_,
                                      reservation.crc_shift_);
  header.revision = revision;
  char header_bytes[kRecordHeaderBytes];
  wal_format::EncodeRecordHeader(header, header_bytes);
  buffer_.Write(std::string_view(header_bytes, kRecordHeaderBytes));
  buffer_.Write(payload);

  const WalLsn lsn = ++last_lsn_;
  last_revision_ = revision;
  appended_revision_.store(revision, std::memory_order_relaxed);
  if (reservation.callback_ != nullptr) {
    DurableCallbackNode* node = reservation.callback_.release();
    node->lsn = lsn;
    callbacks_.Push(node);  // before Publish: a flusher that sees this record sees its callback
  }
  reservation.wal_ = nullptr;  // the claim now covers buffered bytes; the flusher releases them
  reservation.payload_bytes_ = 0;
  buffer_.Publish();
  appended_lsn_.store(lsn, std::memory_order_relaxed);
  return lsn;
}

void Wal::Notify() {
  notifies_.fetch_add(1, std::memory_order_relaxed);  // statistics only
  WakeFlusher();
}

void Wal::WakeFlusher() {
  // seq_cst: the Dekker handshake described at flusher_idle_.
  if (flusher_idle_.load(std::memory_order_seq_cst)) {
    std::lock_guard<std::mutex> lock(flusher_mu_);
    flusher_wake_.notify_one();
  }
}

absl::Status Wal::WaitDurable(WalLsn lsn) {
  if (lsn > appended_lsn_.load(std::memory_order_relaxed)) {
    Die("WaitDurable for a record that was not appended (lsn, appended)", static_cast<int64_t>(lsn),
        static_cast<int64_t>(appended_lsn_.load(std::memory_order_relaxed)));
  }
  std::unique_lock<std::mutex> lock(durable_mu_);
  ++durable_waiters_;
  while (durable_lsn_.load(std::memory_order_acquire) < lsn && !failed() &&
         !flusher_exited_.load(std::memory_order_acquire)) {
    durable_changed_.wait(lock);
  }
  --durable_waiters_;
  if (durable_lsn_.load(std::memory_order_acquire) >= lsn) return absl::OkStatus();
  if (failed()) return failed_status();
  return absl::FailedPreconditionError("wal: closed before the record was written");
}

absl::Status Wal::SyncThrough(int64_t revision) {
  // Relaxed is enough: the caller learnt of `revision` from a commit that happened after its Append.
  if (revision > appended_revision_.load(std::memory_order_relaxed)) {
    Die("SyncThrough a revision that was not appended (revision, appended)", revision,
        appended_revision_.load(std::memory_order_relaxed));
  }
  if (synced_revision_.load(std::memory_order_acquire) >= revision) return absl::OkStatus();
  // Raise the request, then wake the flusher: the seq_cst store and Notify's seq_cst load of
  // flusher_idle_ are the handshake described at flusher_idle_ (the flusher checks SyncRequested()).
  int64_t seen = sync_request_.load(std::memory_order_seq_cst);
  while (seen < revision && !sync_request_.compare_exchange_weak(seen, revision, std::memory_order_seq_cst)) {
  }
  WakeFlusher();
  std::unique_lock<std::mutex> lock(durable_mu_);
  ++durable_waiters_;
  while (synced_revision_.load(std::memory_order_acquire) < revision && !failed() &&
         !flusher_exited_.load(std::memory_order_acquire)) {
    durable_changed_.wait(lock);
  }
  --durable_waiters_;
  if (synced_revision_.load(std::memory_order_acquire) >= revision) return absl::OkStatus();
  if (failed()) return failed_status();
  return absl::FailedPreconditionError("wal: closed before the record was synced");
}

void Wal::OnDurable(WalLsn lsn, DurableCallback callback) {
  if (lsn == 0 || lsn > appended_lsn_.load(std::memory_order_relaxed)) {
    Die("OnDurable for a record that was not appended (lsn, appended)", static_cast<int64_t>(lsn),
        static_cast<int64_t>(appended_lsn_.load(std::memory_order_relaxed)));
  }
  auto node = std::make_unique<DurableCallbackNode>();
  node->lsn = lsn;
  node->callback = std::move(callback);
  {
    std::lock_guard<std::mutex> lock(late_mu_);
    if (!flusher_exited_.load(std::memory_order_relaxed)) {
      callbacks_.Push(node.release());
    }
  }
  if (node == nullptr) {
    WakeFlusher();  // the record may be durable already: make sure the flusher looks at the queue
    return;
  }
  // The flusher has exited: everything appended was written, unless the log failed.
  absl::Status status = absl::OkStatus();
  if (durable_lsn_.load(std::memory_order_acquire) < lsn) {
    status = failed() ? failed_status()
                      : absl::FailedPreconditionError("wal: closed before the record was written");
  }
  std::move(node->callback)(std::move(status));
}

// --- Maintenance ---

absl::StatusOr<std::vector<std::string>> Wal::RemoveSegmentsUpTo(int64_t revision) {
  std::vector<int64_t> doomed;
  {
    std::lock_guard<std::mutex> lock(segments_mu_);
    // Segment i holds revisions [segments_[i], segments_[i + 1] - 1]; the last one is current.
    size_t n = 0;
    while (n + 1 < segments_.size() && segments_[n + 1] - 1 <= revision) ++n;
    doomed.assign(segments_.begin(), segments_.begin() + static_cast<std::ptrdiff_t>(n));
    segments_.erase(segments_.begin(), segments_.begin() + static_cast<std::ptrdiff_t>(n));
  }
  std::vector<std::string> removed;
  for (size_t i = 0; i < doomed.size(); ++i) {
    const std::string path = JoinPath(options_.dir, wal_format::SegmentFileName(doomed[i]));
    if (absl::Status s = fs_->Remove(path); !s.ok()) {
      std::lock_guard<std::mutex> lock(segments_mu_);  // keep the rest listed, so a later call retries them
      segments_.insert(segments_.begin(), doomed.begin() + static_cast<std::ptrdiff_t>(i), doomed.end());
      return s;
    }
    removed.push_back(path);
  }
  if (!removed.empty()) {
    if (absl::Status s = fs_->SyncDirectory(options_.dir); !s.ok()) return s;
  }
  return removed;
}

absl::Status Wal::Close() {
  std::lock_guard<std::mutex> lock(close_mu_);
  if (closed_) return close_status_;
  closing_.store(true, std::memory_order_seq_cst);
  buffer_.Shutdown();  // blocked and later Reserve calls fail rather than wait for space
  {
    std::lock_guard<std::mutex> wake(flusher_mu_);
    flusher_wake_.notify_one();
  }
  if (flusher_thread_.joinable()) flusher_thread_.join();
  absl::Status status = failed_status();
  if (flusher_.file != nullptr) {
    absl::Status closed = flusher_.file->Close();
    if (status.ok() && !closed.ok()) status = closed;
    flusher_.file.reset();
  }
  closed_ = true;
  close_status_ = status;
  return status;
}

// --- State ---

absl::Status Wal::failed_status() const {
  if (!failed()) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(failure_mu_);
  return failure_;
}

WalStats Wal::stats() const {
  WalStats s;
  s.bytes_written = bytes_written_.load(std::memory_order_relaxed);
  s.records_written = records_written_.load(std::memory_order_relaxed);
  s.write_calls = write_calls_.load(std::memory_order_relaxed);
  s.fsyncs = fsyncs_.load(std::memory_order_relaxed);
  s.notifies = notifies_.load(std::memory_order_relaxed);
  s.callbacks_run = callbacks_run_.load(std::memory_order_relaxed);
  s.fsync_latency = fsync_latency_.Snapshot();
  s.appended_lsn = appended_lsn_.load(std::memory_order_relaxed);
  s.durable_lsn = durable_lsn_.load(std::memory_order_relaxed);
  s.durable_revision = durable_revision_.load(std::memory_order_relaxed);
  s.synced_revision = synced_revision_.load(std::memory_order_relaxed);
  s.current_segment =
      JoinPath(options_.dir, wal_format::SegmentFileName(current_segment_.load(std::memory_order_relaxed)));
  {
    std::lock_guard<std::mutex> lock(segments_mu_);
    s.segments = segments_.size();
  }
  s.failed = failed();
  return s;
}

}  // namespace revkv::server
