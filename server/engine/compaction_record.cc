// The compaction record file (compaction_record.h).
#include "server/engine/compaction_record.h"

#include <bit>
#include <cstring>
#include <memory>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/wal/crc32c.h"

namespace revkv::server {
namespace {

static_assert(std::endian::native == std::endian::little, "revkv's file formats assume a little-endian host");

constexpr std::string_view kMagic = "revkvCMP";
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kRecordBytes = 24;

std::string Encode(int64_t revision) {
  std::string bytes(kRecordBytes, '\0');
  std::memcpy(bytes.data(), kMagic.data(), kMagic.size());
  std::memcpy(bytes.data() + 8, &kFormatVersion, 4);
  std::memcpy(bytes.data() + 16, &revision, 8);
  const uint32_t crc = Crc32c(std::string_view(bytes.data() + 16, 8));
  std::memcpy(bytes.data() + 12, &crc, 4);
  return bytes;
}

}  // namespace

namespace {

// The revision in the record file `path`; 0 if it does not exist. DataLoss naming it if damaged,
// FailedPrecondition for another format version.
absl::StatusOr<int64_t> ReadRecordFile(FileSystem* fs, const std::string& path) {
  absl::StatusOr<std::unique_ptr<ReadableFile>> file = fs->OpenReadable(path);
  if (absl::IsNotFound(file.status())) return 0;
  if (!file.ok()) return file.status();
  absl::StatusOr<uint64_t> size = (*file)->Size();
  if (!size.ok()) return size.status();
  auto damaged = [&](const std::string& what) {
    return absl::DataLossError(absl::StrCat("compaction record ", path, ": ", what));
  };
  if (*size != kRecordBytes) return damaged(absl::StrCat(*size, " bytes where ", kRecordBytes, " belong"));
  char bytes[kRecordBytes];
  absl::StatusOr<size_t> read = (*file)->ReadAt(0, bytes, kRecordBytes);
  if (!read.ok()) return read.status();
  if (*read != kRecordBytes) return damaged("short read");
  if (std::string_view(bytes, kMagic.size()) != kMagic) return damaged("bad magic");
  uint32_t version = 0;
  uint32_t stored_crc = 0;
  int64_t revision = 0;
  std::memcpy(&version, bytes + 8, 4);
  std::memcpy(&stored_crc, bytes + 12, 4);
  std::memcpy(&revision, bytes + 16, 8);
  if (version != kFormatVersion) {
    return absl::FailedPreconditionError(absl::StrCat("compaction record ", path, ": format version ",
                                                      version, "; this build reads version ",
                                                      kFormatVersion));
  }
  const uint32_t crc = Crc32c(std::string_view(bytes + 16, 8));
  if (crc != stored_crc) {
    return damaged(absl::StrFormat("CRC mismatch: stored 0x%08x, computed 0x%08x", stored_crc, crc));
  }
  if (revision < 0) return damaged(absl::StrCat("negative revision ", revision));
  return revision;
}

}  // namespace

absl::StatusOr<int64_t> ReadCompactionRecord(FileSystem* fs, const std::string& dir) {
  const std::string path = JoinPath(dir, kCompactionRecordName);
  const std::string tmp = path + ".tmp";
  const std::string next = path + ".next";
  // A crash between writing and renaming the temporary file: the Compact was never acknowledged.
  if (absl::StatusOr<std::unique_ptr<ReadableFile>> t = fs->OpenReadable(tmp); t.ok()) {
    t->reset();
    if (absl::Status s = fs->Remove(tmp); !s.ok()) return s;
  }
  // A crash between the two renames of WriteCompactionRecord, or one that undid the second: the newer
  // record, whole and synced, is COMPACTION.next. Finish its move into place before it is used.
  absl::StatusOr<int64_t> newer = ReadRecordFile(fs, next);
  if (!newer.ok()) return newer.status();
  if (absl::StatusOr<std::unique_ptr<ReadableFile>> n = fs->OpenReadable(next); n.ok()) {
    n->reset();
    if (absl::Status s = fs->Rename(next, path); !s.ok()) return s;
    if (absl::Status s = fs->SyncDirectory(dir); !s.ok()) return s;
  }
  return ReadRecordFile(fs, path);
}

absl::Status WriteCompactionRecord(FileSystem* fs, const std::string& dir, int64_t revision) {
  const std::string path = JoinPath(dir, kCompactionRecordName);
  const std::string tmp = path + ".tmp";
  absl::StatusOr<std::unique_ptr<WritableFile>> file = fs->OpenWritable(tmp, OpenMode::kTruncate);
  if (!file.ok()) return file.status();
  absl::Status s = (*file)->Append(Encode(revision));
  if (s.ok()) s = (*file)->Sync();
  if (absl::Status closed = (*file)->Close(); s.ok()) s = closed;
  // Two renames, so that no crash can leave neither the old record nor the new one: a rename that
  // replaces a file may, until its directory is synced, be undone by a crash without the replaced file
  // coming back (the fault-injecting file system models that). The first rename replaces nothing; once
  // it is durable, the record is kept whatever happens to the second (ReadCompactionRecord finishes it).
  const std::string next = path + ".next";
  if (s.ok()) s = fs->Rename(tmp, next);
  if (!s.ok()) {
    fs->Remove(tmp).IgnoreError();  // best effort: the next startup removes a leftover
    return s;
  }
  if (absl::Status synced = fs->SyncDirectory(dir); !synced.ok()) return synced;
  if (absl::Status renamed = fs->Rename(next, path); !renamed.ok()) return renamed;
  // Until the directory is synced the second rename may be lost in a crash (COMPACTION.next then holds
  // the record).
  return fs->SyncDirectory(dir);
}

}  // namespace revkv::server
