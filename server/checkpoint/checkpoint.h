// Checkpoints: a consistent dump of the store at one revision, written while writers keep going (the
// store feeds the writer from a snapshot read), so the log before it can be removed; recovery loads the
// newest valid checkpoint and replays the log after it. Entries are opaque bytes plus the etcd metadata.
//
// A checkpoint of revision R holds the store at its base revision B <= R: the oldest revision readable
// when it was taken, so that replaying the log from B + 1 rebuilds the history window (the engine
// keeps the log back to B). R is the newest revision when it was taken: the log reaches R before the
// checkpoint becomes valid, and recovery must reach R at least.
//
// File: checkpoint-<revision as 16 lowercase hex digits>.ckpt in the checkpoint directory, holding
//   header (64 bytes): magic "revkvCKP" | u32 format version (4) | u32 zero | i64 revision
//                      | i64 compact revision | u64 entry count | i64 base revision | u64 lease count
//                      | u64 state record count
//                      (still read: version 3, 56 bytes, without the state record count, which is then
//                      0; version 2, 48 bytes, without the lease count either; version 1, 40 bytes,
//                      without the base revision either, which is then the revision)
//   entries:           u32 key length | u32 value length | i64 create_revision | i64 mod_revision
//                      | i64 version | i64 lease | key | value
//   leases (version 3): i64 lease ID | i64 granted TTL in seconds, lease count times, after the entries
//   state records (version 4): u32 kind | u32 length | bytes, state record count times, after the leases
//                      (the store's other state, e.g. alarms and auth: opaque here, the store's kinds)
//   footer (16 bytes): u32 CRC-32C of every byte before the footer | u32 zero | magic "revkvEND"
// little-endian. A checkpoint is written as checkpoint-<revision>.tmp, fsync'd, renamed to .ckpt, and the
// directory fsync'd, so a .ckpt file is complete unless the disk damaged it later.
#ifndef REVKV_SERVER_CHECKPOINT_CHECKPOINT_H_
#define REVKV_SERVER_CHECKPOINT_CHECKPOINT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/wal/file_system.h"

namespace revkv::server {

// One key of the store. The views are borrowed: from the caller in Add, from the reader's buffer (valid
// during the visitor call only) when loading.
struct CheckpointEntry {
  std::string_view key;
  std::string_view value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;
};

// One lease of the store (the lease table at the base revision; remaining TTLs are not persisted).
struct CheckpointLease {
  int64_t id = 0;
  int64_t ttl = 0;  // granted, in seconds
};

// One state record of the store (alarms, auth, ...): a kind the store defines and opaque bytes. The view
// is borrowed as for CheckpointEntry.
struct CheckpointStateRecord {
  uint32_t kind = 0;
  std::string_view bytes;
};

// A complete checkpoint file.
struct CheckpointInfo {
  std::string path;
  int64_t revision = 0;
  int64_t compact_revision = 0;
  int64_t base_revision = 0;  // the revision of the state it holds (compact <= base <= revision)
  uint64_t entry_count = 0;
  uint64_t lease_count = 0;  // 0 for format versions 1 and 2
  uint64_t state_count = 0;  // 0 for format versions 1 to 3
  uint64_t bytes = 0;        // file size
};

// ---------------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------------

// Streams one checkpoint to disk through a 1 MiB buffer; memory use does not grow with the store.
// Owner thread only. Every method may block on disk I/O. The first error is sticky: later calls return it.
class CheckpointWriter {
 public:
  static constexpr size_t kBufferBytes = size_t{1} << 20;

  // Creates (truncating a leftover) `dir`/checkpoint-<revision>.tmp, for the state at `base_revision`
  // (default: `revision`). `fs` is borrowed and must outlive the writer. InvalidArgument unless
  // 0 <= compact_revision <= base_revision <= revision.
  static absl::StatusOr<std::unique_ptr<CheckpointWriter>> Open(FileSystem* fs, const std::string& dir,
                                                                int64_t revision, int64_t compact_revision,
                                                                std::optional<int64_t> base_revision = {});

  // Abort()s unless Finish() succeeded.
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Appends one entry (the bytes are copied before returning). Entries are stored in the order added.
  absl::Status Add(const CheckpointEntry& entry);
  // Appends one lease; every entry must have been added before (FailedPrecondition for an Add after it).
  absl::Status AddLease(const CheckpointLease& lease);
  // Appends one state record; every entry and lease must have been added before (FailedPrecondition
  // for an Add or AddLease after it). InvalidArgument for bytes longer than 4 GiB.
  absl::Status AddState(const CheckpointStateRecord& record);

  // Writes the footer and the final header, fsyncs, renames the file to .ckpt (replacing a checkpoint of
  // the same revision) and fsyncs the directory. On error the temporary file is removed.
  absl::StatusOr<CheckpointInfo> Finish();

  // Removes the temporary file; the checkpoint is abandoned. Idempotent; no-op after a successful Finish.
  void Abort();

  uint64_t entry_count() const { return entry_count_; }

 private:
  CheckpointWriter(FileSystem* fs, std::string dir, int64_t revision, int64_t compact_revision,
                   int64_t base_revision);
  absl::Status Flush();                                  // writes the buffer, extending body_crc_
  absl::Status Complete(const std::string& final_path);  // footer, header, fsync, rename, directory fsync
  absl::Status Fail(absl::Status status);                // records the first error and returns it

  FileSystem* const fs_;
  const std::string dir_;
  const int64_t revision_;
  const int64_t compact_revision_;
  const int64_t base_revision_;
  const std::string tmp_path_;
  std::unique_ptr<WritableFile> file_;
  std::string buffer_;     // entry bytes not yet written
  uint32_t body_crc_ = 0;  // CRC-32C of the entry bytes written so far
  uint64_t body_bytes_ = 0;
  uint64_t entry_count_ = 0;
  uint64_t lease_count_ = 0;
  uint64_t state_count_ = 0;
  absl::Status status_;
  bool finished_ = false;
  bool tmp_exists_ = false;
};

// ---------------------------------------------------------------------------------------------------
// Loading and housekeeping
// ---------------------------------------------------------------------------------------------------

// A checkpoint file by name only (not verified).
struct CheckpointFile {
  std::string path;
  int64_t revision = 0;
};

// Receives each entry of the checkpoint being loaded; an error stops the load with that error.
using CheckpointEntryVisitor = absl::FunctionRef<absl::Status(const CheckpointEntry& entry)>;
// Receives each lease, after every entry; an error stops the load with that error.
using CheckpointLeaseVisitor = absl::FunctionRef<absl::Status(const CheckpointLease& lease)>;
// Receives each state record, after every lease; an error stops the load with that error.
using CheckpointStateVisitor = absl::FunctionRef<absl::Status(const CheckpointStateRecord& record)>;

// A checkpoint that failed verification.
struct SkippedCheckpoint {
  std::string path;
  int64_t revision = 0;    // the revision in its name
  std::string reason;      // what verification found, e.g. "CRC mismatch: stored 0x..., computed 0x..."
  std::string renamed_to;  // it is kept, renamed, for inspection: checkpoint-<revision>.corrupt
};

struct CheckpointLoadResult {
  std::optional<CheckpointInfo> loaded;              // none: no valid checkpoint, start from revision 0
  std::vector<SkippedCheckpoint> skipped;            // newer checkpoints that failed, newest first
  std::vector<std::string> removed_temporary_files;  // .tmp files a crash left behind

  // One line for the log.
  std::string ToString() const;
};

// Verifies the checkpoints in `dir` newest first and streams the entries of the first valid one to
// `visitor`. A checkpoint is verified completely (structure and CRC) before the visitor sees any of its
// entries, so the visitor never sees a corrupt checkpoint's entries; the file is read twice for that.
// A corrupt checkpoint is renamed to .corrupt and skipped; .tmp files are removed. A missing `dir` is an
// empty one. Fails with the visitor's error or an I/O error other than EIO (EIO counts as corruption).
// The leases go to `lease_visitor` and the state records to `state_visitor` if they are set (after
// the entries), under the same guarantee.
absl::StatusOr<CheckpointLoadResult> LoadNewestValidCheckpoint(
    FileSystem* fs, const std::string& dir, CheckpointEntryVisitor visitor,
    const CheckpointLeaseVisitor* lease_visitor = nullptr,
    const CheckpointStateVisitor* state_visitor = nullptr);

// Reads and verifies one checkpoint file without visiting its entries. DataLoss describes the damage.
absl::StatusOr<CheckpointInfo> VerifyCheckpoint(FileSystem* fs, const std::string& path);

// Reads only the header of the checkpoint at `path` (nothing is verified beyond it; entry_count and
// bytes as the header and the file say). DataLoss for a damaged header.
absl::StatusOr<CheckpointInfo> ReadCheckpointHeader(FileSystem* fs, const std::string& path);

// The steps of LoadNewestValidCheckpoint, for a caller that must decide itself whether a checkpoint
// can be used (the engine falls back when the store refuses a checkpoint's content):
//
// Verifies the checkpoint at `path` (named for `revision`) completely, then streams its entries to
// `visitor`; `verified`, if set, is called once with the verified header before the first entry. So
// neither sees anything of a damaged file. DataLoss (damage, or EIO) before any call to them; else the
// visitor's error, or another I/O error. The leases go to `lease_visitor` (if set) after the entries,
// then the state records to `state_visitor` (if set).
absl::StatusOr<CheckpointInfo> LoadCheckpoint(
    FileSystem* fs, const std::string& path, int64_t revision, CheckpointEntryVisitor visitor,
    absl::FunctionRef<absl::Status(const CheckpointInfo&)> verified =
        [](const CheckpointInfo&) { return absl::OkStatus(); },
    const CheckpointLeaseVisitor* lease_visitor = nullptr,
    const CheckpointStateVisitor* state_visitor = nullptr);
// Renames a checkpoint that cannot be used to checkpoint-<revision>.corrupt (kept for inspection) and
// fsyncs the directory; returns the new path.
absl::StatusOr<std::string> SetCheckpointAside(FileSystem* fs, const std::string& dir,
                                               const CheckpointFile& file);
// Removes the .tmp files a crash left (only at startup: a writer may be running otherwise) and fsyncs
// the directory if it removed any; returns their paths. A missing `dir` is an empty one.
absl::StatusOr<std::vector<std::string>> RemoveTemporaryCheckpoints(FileSystem* fs, const std::string& dir);

// The .ckpt files in `dir`, oldest first.
absl::StatusOr<std::vector<CheckpointFile>> ListCheckpoints(FileSystem* fs, const std::string& dir);

// Deletes all but the newest `keep` (>= 1) .ckpt files, and .corrupt files older than the oldest kept one;
// fsyncs the directory. Returns the deleted paths. Never touches .tmp files (a writer may be running).
// To keep recovery able to fall back, remove WAL segments only up to the oldest kept checkpoint's revision.
absl::StatusOr<std::vector<std::string>> RemoveOldCheckpoints(FileSystem* fs, const std::string& dir,
                                                              int keep = 2);

// "checkpoint-<16 hex digits>.ckpt".
std::string CheckpointFileName(int64_t revision);

}  // namespace revkv::server

#endif  // REVKV_SERVER_CHECKPOINT_CHECKPOINT_H_
