// The compaction record: the revision the store was last compacted to, kept durable in one small file
// beside the log, so a restart keeps a Compact that was acknowledged.
//
// etcd 3.4 does not advance the revision on a compaction, while the write-ahead log holds exactly one
// record per revision; so compactions are not log records. A compaction only ever moves forward and
// the newest one includes every older one, so one value is all there is to keep. Compact writes it
// after the log is synced through the compacted revision (the record never names a revision the log
// may lose) and replies once it is durable; recovery applies it after the log is replayed.
//
// File: <data_dir>/COMPACTION, 24 bytes, little-endian:
//   magic "revkvCMP" | u32 format version (1) | u32 CRC-32C of the 8 revision bytes | i64 revision
// Written as COMPACTION.tmp, fsync'd, renamed to COMPACTION.next (replacing nothing), the directory
// fsync'd, renamed over COMPACTION, the directory fsync'd: each file is whole or absent, so any other
// content is damage, and no crash leaves neither the old record nor the new one.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/wal/file_system.h"

namespace revkv::server {

inline constexpr char kCompactionRecordName[] = "COMPACTION";

// The revision in `dir`/COMPACTION; 0 if there is none (nothing was compacted). DataLoss naming the
// file if it is damaged, FailedPrecondition for another format version. Removes a leftover
// COMPACTION.tmp and moves a COMPACTION.next over COMPACTION (only at startup). Blocks on disk I/O.
absl::StatusOr<int64_t> ReadCompactionRecord(FileSystem* fs, const std::string& dir);

// Replaces `dir`/COMPACTION with `revision`, durably (file and directory fsync'd) before it returns OK.
// On error the record is the previous one, or the new one if the error came after a rename (as for a
// write, an error is indeterminate). Blocks on disk I/O. Callers serialize calls.
absl::Status WriteCompactionRecord(FileSystem* fs, const std::string& dir, int64_t revision);

}  // namespace revkv::server
