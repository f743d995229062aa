// MemoryFileSystem: a FileSystem whose files are strings in memory, for the fuzz targets (no disk I/O
// per input, nothing left behind) and for regression tests that feed them the same bytes. It keeps
// what the real one promises to callers (append mode, writes at offsets, truncation that extends with
// zeros, atomic rename, NotFound for missing files and directories) and nothing of durability: every
// operation is durable at once, and SyncDirectory checks only that the directory exists.
#ifndef REVKV_TESTS_FUZZ_MEMORY_FILE_SYSTEM_H_
#define REVKV_TESTS_FUZZ_MEMORY_FILE_SYSTEM_H_

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "server/wal/file_system.h"

namespace revkv::server::fuzz {

// Thread-safe. Files it opens must not outlive it.
class MemoryFileSystem final : public FileSystem {
 public:
  // Puts `bytes` at `path` (replacing a file there), creating its directory.
  void SetFile(const std::string& path, std::string bytes);
  // The bytes at `path`, or nullopt if there is no such file.
  std::optional<std::string> GetFile(const std::string& path) const;
  // Every file, by path.
  std::map<std::string, std::string> Files() const;

  absl::StatusOr<std::unique_ptr<WritableFile>> OpenWritable(const std::string& path, OpenMode mode) override;
  absl::StatusOr<std::unique_ptr<ReadableFile>> OpenReadable(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& dir) override;
  absl::Status CreateDirectories(const std::string& dir) override;
  absl::Status Remove(const std::string& path) override;
  absl::Status Rename(const std::string& from, const std::string& to) override;
  absl::Status Truncate(const std::string& path, uint64_t size) override;
  absl::Status SyncDirectory(const std::string& dir) override;

 private:
  class Writable;
  class Readable;

  // A file's bytes are shared by the open handles, so a rename or removal does not disturb them (as
  // with descriptors of a real file).
  using Bytes = std::shared_ptr<std::string>;

  static std::string Parent(const std::string& path);
  bool HasDirectory(const std::string& dir) const;  // requires mu_

  mutable std::mutex mu_;
  std::map<std::string, Bytes> files_;  // guarded by mu_
  std::set<std::string> directories_;   // guarded by mu_
};

}  // namespace revkv::server::fuzz

#endif  // REVKV_TESTS_FUZZ_MEMORY_FILE_SYSTEM_H_
