// FaultInjectingFileSystem: a FileSystem that forwards to another one (normally the POSIX one, so files
// are real) and makes chosen operations fail with a chosen errno, to test the failure paths for real:
// a full disk in the middle of a write, an fsync that reports EIO, a segment that cannot be created.
//
// It also models what a machine crash keeps. Per file it opened for writing it knows the bytes written,
// the bytes a successful Sync covered, and whether the file's directory entry is durable (an entry
// created or renamed into place becomes durable at the next SyncDirectory of its directory; a file that
// existed before it was first opened here counts as durable as it was); it remembers renames and removals
// not yet made durable by a SyncDirectory, with the removed file's bytes. SimulatePowerLoss() throws away
// everything that was not durable; SimulatePowerLoss(seed) lets chance decide, as a real crash does, so
// a test can restart from what a power loss may leave.
#ifndef REVKV_SERVER_WAL_FAULT_INJECTING_FILE_SYSTEM_H_
#define REVKV_SERVER_WAL_FAULT_INJECTING_FILE_SYSTEM_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

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
  // Disarms every fault (not the counters, not the delay, not a pause, not a power cut).
  void ClearFaults();

  // Writes (WritableFile::Append and WriteAt) to files whose path starts with `path_prefix` block until
  // ResumeWrites, like a disk that stalls; writes to other files go on. One prefix at a time.
  void PauseWrites(std::string path_prefix);
  void ResumeWrites();

  // Bytes of the files under `path_prefix` that a machine crash would lose now: written but not covered by
  // a Sync, plus the whole size of files whose directory entry is not durable yet.
  uint64_t UnsyncedBytes(std::string_view path_prefix) const;

  // Cuts the power: waits for the operations under way, then every later operation that changes a file or
  // a directory fails with EIO and changes nothing (reads still work, Close closes), and the real files
  // are put in the state the crash leaves, losing everything not durable: each file cut back to its
  // synced size, each file whose entry was not durable removed, each rename and removal not made durable
  // undone (a removed file comes back with the bytes it had when removed; a file a rename replaced does
  // not come back). Returns the first error of those changes. Irreversible; restart on a new FileSystem.
  absl::Status SimulatePowerLoss();
  // The same cut, with what is not durable kept or lost by chance (a generator seeded with `seed`), as
  // the disk's write-back left it: of each file's unsynced bytes, a prefix of random length (any byte
  // offset) survives, and within it each 512-byte sector (the disk's atomic unit) independently reached
  // the disk or reads as zeros (the size was written back, the data not): later sectors may survive
  // earlier ones. Each non-durable entry, rename and removal independently survives or is undone.
  absl::Status SimulatePowerLoss(uint64_t seed);

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

  // What the durability model knows of one file.
  struct FileState {
    uint64_t size = 0;           // bytes written (the end of the file)
    uint64_t synced = 0;         // bytes a Sync covered
    bool entry_durable = false;  // the directory entry survives a crash
    std::string renamed_from;    // set while a rename into this path is not durable: the old path
    bool from_entry_durable = false;  // whether the old path's entry was durable before the rename
  };
  // A removal not yet made durable: what comes back if it is undone.
  struct Removed {
    std::string bytes;  // the file's durable bytes when it was removed
  };
  absl::Status PowerLoss(std::optional<uint64_t> seed);
  // Admits a changing operation on `path` (a write waits while a pause covers it): OK and counted in
  // flight until Finish, or EIO once the power is cut.
  absl::Status Admit(const char* operation, const std::string& path, bool is_write);
  void Finish();
  // Updates the model after a successful operation on the base file system.
  void NoteOpened(const std::string& path, OpenMode mode, bool existed, uint64_t size);
  void NoteWritten(const std::string& path, uint64_t end, bool append, uint64_t bytes);
  void NoteSynced(const std::string& path);

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

  // Durability model, pause and power (guarded by mu_; changed_ signals the end of a pause and of the
  // last operation in flight).
  std::condition_variable changed_;
  std::map<std::string, FileState> files_;
  std::map<std::string, Removed> removed_;  // by path
  bool paused_ = false;
  std::string pause_prefix_;
  bool power_cut_ = false;
  int in_flight_ = 0;

  // Statistics only: relaxed, nothing is ordered by them.
  std::atomic<int64_t> writes_{0};
  std::atomic<int64_t> syncs_{0};
  std::atomic<int64_t> directory_syncs_{0};
  std::atomic<uint64_t> bytes_written_{0};
};

}  // namespace revkv::server

#endif  // REVKV_SERVER_WAL_FAULT_INJECTING_FILE_SYSTEM_H_
