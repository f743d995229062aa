// The snapshot file: what etcd's Maintenance/Snapshot streams and `etcdctl snapshot save` writes unchanged,
// and what `revkv-server --restore-snapshot` reads.
//
// Layout (all of it is the stream, byte for byte):
//   image:    a complete checkpoint file (server/checkpoint/checkpoint.h) of revision R holding the
//             state at R (base revision R): key-values, leases and state records (alarms, auth)
//   padding:  zero bytes, so that image + padding + trailer is a multiple of 512 bytes
//   trailer:  u64 image length (little-endian) | magic "revkvSNP"                       (16 bytes)
//   checksum: SHA-256 of everything before it                                           (32 bytes)
//
// Why the padding: etcd's snapshot is a bolt database, a whole number of pages, followed by its SHA-256;
// `etcdctl snapshot save` refuses a stream whose size is not a multiple of 512 plus 32 ("sha256
// checksum not found"). The trailer says where the image ends inside the padded part. The checksum is
// etcd's (a SHA-256 appended by the server); the image's own CRC-32C (its footer) is checked too.
//
// Thread-safety: the functions are thread-safe; SnapshotHasher is owner thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace revkv::server {

inline constexpr size_t kSnapshotAlignment = 512;
inline constexpr size_t kSnapshotTrailerBytes = 16;
inline constexpr size_t kSnapshotChecksumBytes = 32;
inline constexpr std::string_view kSnapshotMagic = "revkvSNP";

// The padding and trailer that follow an image of `image_bytes` bytes.
std::string SnapshotPaddingAndTrailer(uint64_t image_bytes);

// The total size of the stream for an image of `image_bytes` bytes (checksum included).
uint64_t SnapshotStreamBytes(uint64_t image_bytes);

// An incremental SHA-256 (OpenSSL's).
class SnapshotHasher {
 public:
  SnapshotHasher();
  ~SnapshotHasher();
  SnapshotHasher(const SnapshotHasher&) = delete;
  SnapshotHasher& operator=(const SnapshotHasher&) = delete;
  void Update(std::string_view bytes);
  // The 32-byte digest of everything given to Update. Call once.
  std::string Finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// A verified snapshot file.
struct SnapshotFileInfo {
  uint64_t file_bytes = 0;
  uint64_t image_bytes = 0;  // the checkpoint image at the start of the file
};

// Checks a snapshot file: its size (a multiple of 512 plus 32), its SHA-256, its trailer and the zero
// padding. DataLoss with a message saying what is wrong ("damaged: its SHA-256 checksum does not
// match", "truncated", "not a revkv snapshot"); NotFound or another I/O error if it cannot be read. The
// image's own structure and CRC are the checkpoint reader's to check. Reads the file once.
absl::StatusOr<SnapshotFileInfo> VerifySnapshotFile(const std::string& path);

}  // namespace revkv::server
