// FileSystem: the file operations the write-ahead log and the checkpoints use, behind an interface so
// tests can inject faults (see fault_injecting_file_system.h) into the very code paths production runs.
//
// Every error is an absl::Status whose code follows errno as absl::ErrnoToStatus maps it (ENOSPC ->
// kResourceExhausted, ENOENT -> kNotFound, ...), except EIO -> kDataLoss, and
// whose message names the operation, the file and the errno text, e.g.
// "fdatasync of /data/wal/wal-0000000000000001.log failed: Input/output error".
#ifndef REVKV_SERVER_WAL_FILE_SYSTEM_H_
#define REVKV_SERVER_WAL_FILE_SYSTEM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace revkv::server {

// A file opened for writing. Owner thread only.
class WritableFile {
 public:
  virtual ~WritableFile() = default;  // closes the descriptor if Close() was not called; never syncs

  // Appends all of `data` at the end of the file, retrying short writes. On failure a prefix of `data`
  // may have been written. Blocks in write(2).
  virtual absl::Status Append(std::string_view data) = 0;

  // Writes all of `data` at byte `offset` (pwrite(2)); the end of the file moves only if the range
  // extends it. Not valid on a file opened in append mode.
  virtual absl::Status WriteAt(uint64_t offset, std::string_view data) = 0;

  // Makes the written data durable (fdatasync(2): contents and the size, not the timestamps).
  virtual absl::Status Sync() = 0;

  // Reserves disk blocks for the first `bytes` bytes of the file without changing its size
  // (fallocate(2) with FALLOC_FL_KEEP_SIZE), so later appends need no block allocation; what reads
  // return and the file's size are unchanged. OK without doing anything where the file system cannot
  // (EOPNOTSUPP) and in implementations that do not override it. Blocks in fallocate(2).
  virtual absl::Status Preallocate(uint64_t bytes) {
    (void)bytes;
    return absl::OkStatus();
  }

  // Closes the descriptor; later calls fail. Reports close(2) errors.
  virtual absl::Status Close() = 0;

  virtual const std::string& path() const = 0;
};

// A file opened for reading at explicit offsets. Thread-safe (pread(2) keeps no position).
class ReadableFile {
 public:
  virtual ~ReadableFile() = default;

  // Reads up to `size` bytes at `offset` into `buffer`; returns the count, which is below `size` only at
  // the end of the file. Blocks in pread(2).
  virtual absl::StatusOr<size_t> ReadAt(uint64_t offset, char* buffer, size_t size) const = 0;

  // Returns the current size of the file.
  virtual absl::StatusOr<uint64_t> Size() const = 0;

  virtual const std::string& path() const = 0;
};

// How OpenWritable treats the file.
enum class OpenMode {
  kTruncate,  // create if missing, cut to zero length, writes at explicit offsets or appended
  kAppend,    // create if missing, keep contents, every write goes to the end (O_APPEND)
};

// The operations on paths. Implementations are thread-safe; every method may block on the disk.
class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // Opens `path` for writing. Ownership of the file passes to the caller.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> OpenWritable(const std::string& path,
                                                                     OpenMode mode) = 0;

  // Opens an existing `path` for reading; NotFound if it does not exist.
  virtual absl::StatusOr<std::unique_ptr<ReadableFile>> OpenReadable(const std::string& path) = 0;

  // Returns the names (not paths) of the entries of `dir`, excluding "." and "..", in no order.
  virtual absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& dir) = 0;

  // Creates `dir` and missing parents; OK if it exists.
  virtual absl::Status CreateDirectories(const std::string& dir) = 0;

  // Removes the file `path`; NotFound if it does not exist.
  virtual absl::Status Remove(const std::string& path) = 0;

  // Atomically renames `from` to `to`, replacing `to` if it exists.
  virtual absl::Status Rename(const std::string& from, const std::string& to) = 0;

  // Cuts (or extends with zeros) `path` to `size` bytes. Does not sync.
  virtual absl::Status Truncate(const std::string& path, uint64_t size) = 0;

  // Makes the creations, removals and renames in `dir` durable (fsync(2) of the directory).
  virtual absl::Status SyncDirectory(const std::string& dir) = 0;
};

// The POSIX implementation. The object lives for the whole process; never delete it.
FileSystem* DefaultFileSystem();

// Returns dir + "/" + name (no separator doubled).
std::string JoinPath(std::string_view dir, std::string_view name);

// "<prefix><number as 16 lowercase hex digits><suffix>": how WAL segments and checkpoints are named, so
// names sort like the numbers. `number` must be >= 0.
std::string NumberedFileName(std::string_view prefix, int64_t number, std::string_view suffix);
// The number in `name` if it has exactly that shape, else nullopt.
std::optional<int64_t> ParseNumberedFileName(std::string_view name, std::string_view prefix,
                                             std::string_view suffix);

// Returns the status for a failed system call: code from `error_number` (see the top of this file), message
// "<operation> of <path> failed: <strerror text>", and the errno itself as a payload (ErrnoOf).
absl::Status IoError(const char* operation, const std::string& path, int error_number);

// The errno an IoError status (or one that kept its payloads) was made from; nullopt for any other status.
std::optional<int> ErrnoOf(const absl::Status& status);

}  // namespace revkv::server

#endif  // REVKV_SERVER_WAL_FILE_SYSTEM_H_
