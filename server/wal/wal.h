// The write-ahead log: records of committed write transactions, appended in revision order from inside
// the store's inevitable section and made durable by a flusher thread that groups them into few write(2)
// and fdatasync(2) calls. Records are opaque bytes here. docs/durability.md describes the format, the
// fsync modes and what each risks.
//
// How a writer uses it:
//   1. Serialize the record. WalReservation r = wal.Reserve(payload, callback)   // may block; may fail
//   2. In the inevitable section:  WalLsn lsn = wal.Append(r, revision, payload) // no syscall/alloc/wait
//   3. After the section:           wal.Notify();  then WaitDurable(lsn) or let the callback fire.
//
// Recovery is part of Open: it replays the records after the checkpoint's revision, cuts a torn or
// corrupt tail (reporting where), and leaves the log ready to continue at the next revision.
#ifndef REVKV_SERVER_WAL_WAL_H_
#define REVKV_SERVER_WAL_WAL_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/wal/durable_callbacks.h"
#include "server/wal/file_system.h"
#include "server/wal/latency_histogram.h"
#include "server/wal/log_buffer.h"

namespace revkv::server {

// ---------------------------------------------------------------------------------------------------
// Options, reports and statistics
// ---------------------------------------------------------------------------------------------------

// When a record counts as durable (what WaitDurable and callbacks wait for).
enum class FsyncMode {
  kAlways,    // after the fdatasync that covers it: survives a machine crash
  kInterval,  // after write(2); fdatasync every fsync_interval: a machine crash may lose that much
  kNone,      // after write(2); never fdatasync while running: a machine crash may lose anything unsynced
};

// "always", "interval", "none".
std::string_view FsyncModeName(FsyncMode mode);
// Parses FsyncModeName's output; InvalidArgument otherwise.
absl::StatusOr<FsyncMode> ParseFsyncMode(std::string_view name);

struct WalOptions {
  std::string dir;                    // holds the segment files; created if missing
  FileSystem* file_system = nullptr;  // borrowed, must outlive the Wal; nullptr: DefaultFileSystem()
  FsyncMode fsync_mode = FsyncMode::kAlways;
  std::chrono::milliseconds fsync_interval{100};  // kInterval only
  uint64_t segment_bytes = uint64_t{64} << 20;    // a segment past this size is closed at a record boundary
  size_t buffer_bytes = size_t{16} << 20;  // log buffer (rounded up to a power of two); bounds a record
  // Reserve each new segment's blocks (segment_bytes) when it is created, keeping its size (fallocate
  // FALLOC_FL_KEEP_SIZE): recovery still sees only what was written.
  bool preallocate_segments = true;
};

// Where and why the log ends early: a torn tail recovery cut, or the damage RepairWal moved aside.
struct WalCorruption {
  std::string segment;  // path of the segment holding the first bad byte
  uint64_t offset = 0;  // byte offset in that segment where the log was cut
  std::string reason;   // e.g. "torn record: 120 payload bytes announced, 37 present"
};

// What Open found on disk and what it changed. The server logs it.
struct WalRecoveryReport {
  int64_t after_revision = 0;     // the checkpoint revision Open was given
  int64_t first_revision = 0;     // first record read (0: none)
  int64_t last_revision = 0;      // last good record read (0: none)
  uint64_t records_replayed = 0;  // records after after_revision passed to the visitor
  uint64_t segments_read = 0;
  uint64_t covered_records_skipped = 0;         // damaged records at or below after_revision, passed over
  std::optional<WalCorruption> covered_damage;  // the first of them (the server warns about it)
  std::optional<WalCorruption> corruption;      // set if a torn tail was cut (never for other damage)
  uint64_t bytes_truncated = 0;                 // bytes cut from the segment named in `corruption`
  std::vector<std::string> removed_segments;    // the newest segment, if its header was torn
  std::string broken_copy;                      // where what was cut is kept (<segment>.broken), if cut
  int64_t next_revision = 0;                    // the revision the next Append must carry
  std::string segment;                          // the segment appends continue in

  // One line for the log.
  std::string ToString() const;
};

// What RepairWal found and moved aside.
struct WalRepairReport {
  std::optional<WalCorruption> damage;  // the first bad byte; unset: the log was intact, nothing changed
  int64_t last_good_revision = 0;       // the log now ends here (before the checkpoint's: nothing to keep)
  int64_t first_lost_revision = 0;      // the revision the bad record should have held
  int64_t last_lost_revision = 0;       // highest intact record moved aside (0: none found)
  uint64_t bytes_moved = 0;             // bytes from the bad one on that are no longer in the log
  std::vector<std::pair<std::string, std::string>> moved;  // (segment, where its original bytes now are)
  // Set by RepairLog (server/engine): which checkpoint recovery will use with the log as it is now, or
  // that none can be used and why (empty from RepairWal alone, and when nothing was changed).
  std::string recovery_outlook;

  // A few lines for an operator.
  std::string ToString() const;
};

// Counters readable at any time; each field is read on its own (relaxed), so fields may be a few
// records apart from one another.
struct WalStats {
  uint64_t bytes_written = 0;     // record and segment-header bytes handed to write(2)
  uint64_t records_written = 0;   // records handed to write(2)
  uint64_t write_calls = 0;       // write(2) calls of records
  uint64_t fsyncs = 0;            // fdatasync calls of segments
  uint64_t notifies = 0;          // Notify calls: writers' wake-ups after their appends
  uint64_t callbacks_run = 0;     // durability callbacks (OnDurable, Reserve's) the flusher has run
  LatencySnapshot fsync_latency;  // of those fdatasync calls, in seconds
  WalLsn appended_lsn = 0;        // last record appended
  WalLsn durable_lsn = 0;         // last record acknowledged (durable per the fsync mode)
  int64_t durable_revision = 0;   // revision of durable_lsn's record (recovered tail before any)
  int64_t synced_revision = 0;    // last revision covered by an fdatasync (or recovered from disk)
  std::string current_segment;    // path of the segment being appended to
  uint64_t segments = 0;          // segment files in the log
  bool failed = false;
};

// Receives each recovered record; returning an error stops Open with that error.
using WalRecordVisitor = absl::FunctionRef<absl::Status(int64_t revision, std::string_view payload)>;

class Wal;

// ---------------------------------------------------------------------------------------------------
// WalReservation: space in the log buffer for one record, claimed ahead of the inevitable section.
// ---------------------------------------------------------------------------------------------------

// Owner thread only; move-only. Destroying an unused reservation returns its space and destroys its
// callback without running it. Must not outlive its Wal. Do not hold one while calling Reserve again:
// reservations that wait for each other's space can deadlock.
class WalReservation {
 public:
  WalReservation() = default;
  WalReservation(WalReservation&& other) noexcept;
  WalReservation& operator=(WalReservation&& other) noexcept;
  ~WalReservation();

  bool valid() const { return wal_ != nullptr; }
  size_t payload_bytes() const { return payload_bytes_; }

 private:
  friend class Wal;
  void Reset();

  Wal* wal_ = nullptr;
  size_t payload_bytes_ = 0;
  uint32_t payload_crc_ = 0;  // CRC-32C of the payload, computed in Reserve
  uint32_t crc_shift_ = 0;    // Crc32cShift(payload_bytes_), so Append only combines
  std::unique_ptr<DurableCallbackNode> callback_;
};

// ---------------------------------------------------------------------------------------------------
// Wal
// ---------------------------------------------------------------------------------------------------

// Thread-safe, with one rule: Append calls must not overlap (the store's inevitable section serializes
// them). Owns a flusher thread from Open to Close.
class Wal {
 public:
  // Recovers the log in options.dir (creating the directory if needed) and opens it for appending.
  // Records with revision > after_revision are passed to `visitor` in order. A torn tail of the newest
  // segment (what a crash during an append leaves) is cut, as `report` says; any other damage fails with
  // DataLoss naming the file, byte offset and revision, and changes nothing on disk (RepairWal moves it
  // aside). Damaged records at or below after_revision are passed over. Also DataLoss if the log starts
  // after after_revision + 1 (records are missing), FailedPrecondition for an unknown format version,
  // the visitor's error, or the first I/O error. Blocks on disk I/O.
  // `durable_through`: the log is known to have been synced through this revision (the engine passes
  // the newest usable checkpoint's revision and the compaction's): a tear at or below it is damage, and
  // a log ending before it is DataLoss; nothing is changed on disk then, and no segment is created.
  static absl::StatusOr<std::unique_ptr<Wal>> Open(const WalOptions& options, int64_t after_revision,
                                                   WalRecordVisitor visitor, WalRecoveryReport* report,
                                                   int64_t durable_through = 0);

  // Close()s, ignoring its status.
  ~Wal();
  Wal(const Wal&) = delete;
  Wal& operator=(const Wal&) = delete;

  // --- Before the inevitable section ---

  // Claims buffer space for a record with this payload and checksums the payload, so Append need not.
  // `on_durable`, if set, is registered at Append and runs on the flusher thread, in LSN order, exactly
  // once. Blocks while the buffer is full. Fails with failed_status() once the log has failed,
  // FailedPrecondition after Close, InvalidArgument if the payload is larger than max_payload_bytes()
  // (then nothing is claimed and the log is unchanged).
  absl::StatusOr<WalReservation> Reserve(std::string_view payload, DurableCallback on_durable = nullptr);

  // The largest payload Reserve accepts: the log buffer less a record header (and at most the format's
  // limit). Constant for the Wal's life; a caller checks it first to give its own "too large" error.
  size_t max_payload_bytes() const;

  // --- Inside the inevitable section ---

  // Frames `payload` as the record of `revision`, copies it into the log buffer, registers the
  // reservation's callback and publishes the new tail (a seq_cst store). Returns the record's LSN. Never
  // blocks, allocates or makes a system call. `payload` must be the bytes given to Reserve and `revision` the
  // last appended one + 1: anything else is a caller bug and aborts the process with a message. After a
  // failure the record is accepted but never made durable; its waiters get failed_status().
  WalLsn Append(WalReservation& reservation, int64_t revision, std::string_view payload);

  // --- After the section ---

  // Wakes the flusher if it sleeps (a futex wake at most). Call once after Append, outside the section,
  // or once after a batch of Appends (the flusher then takes them in one pass). Counted
  // (WalStats::notifies). Until it is called, a record may wait for the flusher's one-second backstop.
  void Notify();

  // Blocks until record `lsn` is durable (OK) or the log has failed before it (failed_status()).
  // Requires lsn <= appended LSN (a larger one would never come: the process aborts).
  absl::Status WaitDurable(WalLsn lsn);

  // Runs `callback` on the flusher thread once record `lsn` is durable or the log has failed. Callbacks
  // registered before their record becomes durable run in LSN order; one registered later runs at the
  // flusher's next pass. After Close it runs at once on the calling thread. Requires lsn <= appended LSN.
  void OnDurable(WalLsn lsn, DurableCallback callback);

  // Blocks until every record up to `revision` has been written and fdatasync'ed (with the closed
  // segments and the directory), whatever the fsync mode: kInterval and kNone sync at once rather than
  // waiting for their own schedule. OK at once if they already are. Fails with failed_status() if the log
  // fails first, FailedPrecondition if it is closed first. Requires revision <= the last appended one
  // (a larger one would never come: the process aborts). Used before a checkpoint at `revision` is
  // made valid, so that the log on disk always reaches at least the newest checkpoint.
  absl::Status SyncThrough(int64_t revision);

  // --- Maintenance ---

  // Deletes the segments whose every record has revision <= `revision` (never the current one) and
  // syncs the directory. Returns the deleted paths. An error leaves the log usable (and does not fail it).
  absl::StatusOr<std::vector<std::string>> RemoveSegmentsUpTo(int64_t revision);

  // Stops the flusher after it has written (and synced, in every mode) everything appended, runs the
  // remaining callbacks and closes the segment. Returns the log's failure, if any, or the final sync's
  // error. Idempotent. Appending after Close aborts. Blocks.
  absl::Status Close();

  // OK while the log works; afterwards the permanent error, e.g. "wal: fdatasync of <path> failed:
  // Input/output error; writes are disabled until restart".
  absl::Status failed_status() const;
  bool failed() const { return failed_.load(std::memory_order_acquire); }

  WalLsn durable_lsn() const { return durable_lsn_.load(std::memory_order_acquire); }
  // The revision of the last record acknowledged (durable per the fsync mode); it never moves again
  // after a failure, so it is then the newest revision a restart will recover for sure.
  int64_t durable_revision() const { return durable_revision_.load(std::memory_order_acquire); }
  WalLsn appended_lsn() const { return appended_lsn_.load(std::memory_order_relaxed); }
  WalStats stats() const;
  const WalOptions& options() const { return options_; }

 private:
  friend class WalReservation;

  Wal(const WalOptions& options, FileSystem* fs);

  // State owned by the flusher thread (wal_flusher.cc); nothing else reads it while the thread runs.
  struct Flusher {
    std::unique_ptr<WritableFile> file;  // current segment, opened for appending
    int64_t segment_first_revision = 0;  // name of the current segment
    uint64_t segment_bytes = 0;          // its size
    bool segment_has_records = false;
    uint64_t flush_pos = 0;  // log buffer position of the first byte not yet written
    WalLsn written_lsn = 0;  // last record written to the file
    int64_t written_revision = 0;
    bool unsynced = false;                   // bytes written since the last fdatasync
    std::vector<int64_t> unsynced_segments;  // kNone: closed segments never synced (synced at Close)
    std::chrono::steady_clock::time_point last_sync;
  };

  // Wakes the flusher if it sleeps (Notify without counting it: OnDurable's and SyncThrough's wake-ups).
  void WakeFlusher();
  void StartFlusher();
  void FlusherMain();
  void WaitForWork();
  bool HasWork();
  absl::Status WriteAppended(uint64_t tail);
  absl::Status StartSegment(int64_t first_revision, bool sync_directory);
  bool IntervalSyncDue() const;
  void RunCallbacks();
  void ExitFlusher();
  bool SyncRequested() const;
  absl::Status SyncForRequest();
  void WakeDurableWaiters();
  absl::Status SyncSegment();
  absl::Status SyncClosedSegments();
  void AdvanceDurable(WalLsn lsn, int64_t revision);
  void EnterFailedState(const absl::Status& cause);
  void ReleaseSpace(uint64_t bytes) { buffer_.Release(bytes); }
  [[noreturn]] void Die(const char* what, int64_t a, int64_t b);

  const WalOptions options_;
  FileSystem* const fs_;
  LogBuffer buffer_;

  // Appender state: touched only by Append, which the caller serializes (no atomics needed).
  int64_t last_revision_ = 0;  // revision of the last appended (or recovered) record
  WalLsn last_lsn_ = 0;
  std::atomic<WalLsn> appended_lsn_{0};        // copy of last_lsn_ for other threads; relaxed (advisory only)
  std::atomic<int64_t> appended_revision_{0};  // copy of last_revision_ for SyncThrough's check; relaxed

  DurableCallbacks callbacks_;

  // Waking the flusher. The flusher stores flusher_idle_ (seq_cst, under flusher_mu_) and then looks for
  // work with seq_cst loads (the tail, the callback queue's head); a writer publishes with a seq_cst
  // store or exchange and then Notify loads flusher_idle_ (seq_cst). Either the flusher sees the work or
  // Notify sees it idle and signals under flusher_mu_, which the flusher holds until it waits.
  std::atomic<bool> flusher_idle_{false};
  std::mutex flusher_mu_;
  std::condition_variable flusher_wake_;
  std::atomic<bool> closing_{false};  // set once by Close (seq_cst: part of the flusher's work check)

  // Closing the callback queue: OnDurable pushes under late_mu_ unless the flusher has exited; the
  // flusher sets flusher_exited_ under late_mu_ only when the queue is empty, so no callback is stranded.
  std::mutex late_mu_;
  std::atomic<bool> flusher_exited_{false};  // written under late_mu_; read without it by WaitDurable

  // Progress published by the flusher. Readers of durable_lsn_ use acquire; nothing but the number itself
  // is published through these.
  std::atomic<WalLsn> durable_lsn_{0};
  std::atomic<int64_t> durable_revision_{0};
  std::atomic<int64_t> synced_revision_{0};  // written by the flusher only
  std::mutex durable_mu_;  // WaitDurable and SyncThrough block on it; the flusher signals under it
  std::condition_variable durable_changed_;
  int durable_waiters_ = 0;  // guarded by durable_mu_

  // SyncThrough's request: the highest revision someone waits to see synced. Raised with a CAS loop
  // (seq_cst: part of the flusher's work check, the flusher_idle_ handshake), read by the flusher.
  std::atomic<int64_t> sync_request_{0};

  // Failure: failed_ is the fast check (seq_cst store, after failure_ is set under failure_mu_).
  std::atomic<bool> failed_{false};
  mutable std::mutex failure_mu_;
  absl::Status failure_;  // guarded by failure_mu_

  // Segment list: first revisions, ascending; the last is the current segment. The flusher adds under
  // the mutex, RemoveSegmentsUpTo removes under it.
  mutable std::mutex segments_mu_;
  std::vector<int64_t> segments_;  // guarded by segments_mu_

  // Statistics (relaxed: nothing is published through them).
  std::atomic<uint64_t> bytes_written_{0};
  std::atomic<uint64_t> records_written_{0};
  std::atomic<uint64_t> write_calls_{0};
  std::atomic<uint64_t> fsyncs_{0};
  std::atomic<uint64_t> notifies_{0};
  std::atomic<uint64_t> callbacks_run_{0};
  std::atomic<int64_t> current_segment_{0};
  LatencyHistogram fsync_latency_;

  Flusher flusher_;
  std::thread flusher_thread_;
  std::mutex close_mu_;        // serializes Close
  bool closed_ = false;        // guarded by close_mu_
  absl::Status close_status_;  // guarded by close_mu_
};

// ---------------------------------------------------------------------------------------------------
// Repair
// ---------------------------------------------------------------------------------------------------

// The operator's repair of a damaged log in `dir` (no Wal may have it open): reads it as Wal::Open does
// (from the segment holding after_revision + 1; damaged records at or below after_revision are passed
// over) and at the first damage of any kind cuts the log there. Nothing is deleted: the damaged segment
// is copied whole to "<segment>.damaged" (".damaged.1", ... if taken) and truncated at the last good
// record (renamed whole if its header is the damage), each later segment is renamed to
// "<segment>.damaged", and every change is fsync'd. Returns what was moved and the revisions lost; an
// intact log is left as it is. Fails like Open for missing revisions, an unknown format version or an I/O
// error. `fs` nullptr: DefaultFileSystem(). Blocks on disk I/O.
absl::StatusOr<WalRepairReport> RepairWal(FileSystem* fs, const std::string& dir, int64_t after_revision);

}  // namespace revkv::server

#endif  // REVKV_SERVER_WAL_WAL_H_
