// Recovery of the write-ahead log (internal to server/wal): reads the segments in revision order,
// replays the records after a checkpoint's revision, cuts a torn tail of the newest segment, and refuses
// any other damage. Wal::Open runs it before it starts appending; RepairWal (wal.h) runs the same scan.
#ifndef REVKV_SERVER_WAL_WAL_RECOVERY_H_
#define REVKV_SERVER_WAL_WAL_RECOVERY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/wal/file_system.h"
#include "server/wal/wal.h"

namespace revkv::server {

// The log as recovery left it.
struct RecoveredLog {
  std::vector<int64_t> segments;  // first revisions of the segment files left, ascending
  int64_t next_revision = 1;      // revision the next record must carry
  // The segment to keep appending to, if the log's last segment was read, survived and ends right
  // before next_revision; otherwise a new segment named next_revision must be started.
  std::optional<int64_t> continue_segment;
  uint64_t continue_segment_bytes = 0;
  bool continue_segment_has_records = false;
};

// Reads the segments in `dir` that can hold records after `after_revision` and calls `visitor` for each
// record after it. A torn tail of the newest segment above `durable_through` is cut (the segment copied
// to "<segment>.broken" first, then truncated and fsync'd; or renamed to .broken if its header is torn;
// the directory synced) and reported in `report` (all but `segment`). A tear at or below
// `durable_through` (the log is known to have been synced through it: 0 if nothing is known), a log
// ending before it, and any other damage fail with DataLoss naming the file, the byte offset and the revision, and
// changes nothing on disk. Also DataLoss if revisions after `after_revision` are missing from the start of
// the log; FailedPrecondition for an unknown format version; the visitor's error; the first I/O error.
// Blocks on disk I/O.
absl::StatusOr<RecoveredLog> RecoverLog(FileSystem* fs, const std::string& dir, int64_t after_revision,
                                        int64_t durable_through, WalRecordVisitor visitor,
                                        WalRecoveryReport* report);

}  // namespace revkv::server

#endif  // REVKV_SERVER_WAL_WAL_RECOVERY_H_
