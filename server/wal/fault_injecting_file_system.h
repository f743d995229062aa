// FaultInjectingFileSystem: a FileSystem that forwards to another one (normally the POSIX one, so files
// are real) and makes chosen operations fail with a chosen errno, to test the failure paths for real:
// a full disk in the middle of a write, an fsync that reports EIO, a segment that cannot be created.
#ifndef REVKV_SERVER_WAL_FAULT_INJECTING_FILE_SYSTEM_H_
#define REVKV_SERVER_WAL_FAULT_INJECTING_FILE_SYSTEM_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

#include "server/wal/file_system.h"

namespace revkv::server {

// Thread-safe. Files it opens must not outlive it. Counts start at 1 from the call that arms a fault
// ("the 3rd write from now"); a count fault fires once, a byte budget stays exhausted (a full disk stays
// full) until ClearFaults().
class FaultInjectingFileSystem final : public FileSystem {
 public:
  explicit FaultInjectingFileSystem(FileSystem* base);  // `base` is borrowed and must outlive this

  // The n-th write (WritableFile::Append or WriteAt) from now fails with `error_number`, writing nothing.
  void FailNthWrite(int64_t n, int error_number);
  // Writes succeed until `bytes` more bytes have been written; the write that crosses the limit writes
  // the bytes up to it and then fails (a torn write), and every later write fails, with `error_number`.
  void FailWritesAfterBytes(uint64_t bytes, int error_number);
  // The n-th WritableFile::Sync from now fails with `error_number` without syncing.
  void FailNthSync(int64_t n, int error_number);
  // The n-th OpenWritable from now fails with `error_number`.
  void FailNthOpenWritable(int64_t n, int error_number);
  // Every WritableFile::Sync sleeps `delay` first, like a disk with that flush latency.
  void SetSyncDelay(std::chrono::microseconds delay);
  // Disarms every fault (not the counters, not the delay).
  void ClearFaults();

  // Operations that reached the base file system since construction (injected failures not included).
  int64_t writes() const { return writes_.load(std::memory_order_relaxed); }
  int64_t syncs() const { return syncs_.load(std::memory_order_relaxed); }
  int64_t directory_syncs() const { return directory_syncs_.load(std::memory_order_relaxed); }
  uint64_t bytes_written() const { return bytes_written_.load(std::memory_order_relaxed); }

  absl::StatusOr<std::unique_ptr<WritableFile>> OpenWritable(const std::string& path, OpenMode mode) override;
  absl::StatusOr<std::unique_ptr<ReadableFile>> OpenReadable(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& dir) override;
  absl::Status CreateDirectories(const std::string& dir) override;
  absl::Status Remove(const std::string& path) override;
  absl::Status Rename(const std::string& from, const std::string& to) override;
  absl::Status Truncate(const std::string& path, uint64_t size) override;
  absl::Status SyncDirectory(const std::string& dir) override;

 private:
  class File;

  // What a write of `size` bytes may do: write `allowed` bytes, then fail with `error` if it is non-zero.
  struct WriteVerdict {
    uint64_t allowed = 0;
    int error = 0;
  };
  WriteVerdict DecideWrite(uint64_t size);
  int DecideSync();  // 0 or the errno to fail with
  std::chrono::microseconds sync_delay() const;
  void CountWrite(uint64_t bytes);
  void CountSync() { syncs_.fetch_add(1, std::memory_order_relaxed); }

  FileSystem* const base_;
  mutable std::mutex mu_;             // guards the fault settings below
  int64_t fail_write_countdown_ = 0;  // 0: disarmed
  int fail_write_errno_ = 0;
  bool byte_budget_armed_ = false;
  uint64_t byte_budget_ = 0;
  int byte_budget_errno_ = 0;
  int64_t fail_sync_countdown_ = 0;
  int fail_sync_errno_ = 0;
  int64_t fail_open_countdown_ = 0;
  int fail_open_errno_ = 0;
  std::chrono::microseconds sync_delay_{0};

  // Statistics only: relaxed, nothing is ordered by them.
  std::atomic<int64_t> writes_{0};
  std::atomic<int64_t> syncs_{0};
  std::atomic<int64_t> directory_syncs_{0};
  std::atomic<uint64_t> bytes_written_{0};
};

}  // namespace revkv::server

#endif  // REVKV_SERVER_WAL_FAULT_INJECTING_FILE_SYSTEM_H_
