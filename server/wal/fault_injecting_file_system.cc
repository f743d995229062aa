// FaultInjectingFileSystem: decisions are taken under one mutex, the forwarded operation runs outside it.
#include "server/wal/fault_injecting_file_system.h"

#include <thread>

namespace revkv::server {

// A writable file that asks its file system before every write and sync.
class FaultInjectingFileSystem::File final : public WritableFile {
 public:
  File(FaultInjectingFileSystem* fs, std::unique_ptr<WritableFile> base) : fs_(fs), base_(std::move(base)) {}

  absl::Status Append(std::string_view data) override {
    const WriteVerdict verdict = fs_->DecideWrite(data.size());
    if (verdict.allowed > 0) {
      if (absl::Status s = base_->Append(data.substr(0, verdict.allowed)); !s.ok()) return s;
      fs_->CountWrite(verdict.allowed);
    }
    if (verdict.error != 0) return IoError("write", path(), verdict.error);
    return absl::OkStatus();
  }

  absl::Status WriteAt(uint64_t offset, std::string_view data) override {
    const WriteVerdict verdict = fs_->DecideWrite(data.size());
    if (verdict.allowed > 0) {
      if (absl::Status s = base_->WriteAt(offset, data.substr(0, verdict.allowed)); !s.ok()) return s;
      fs_->CountWrite(verdict.allowed);
    }
    if (verdict.error != 0) return IoError("pwrite", path(), verdict.error);
    return absl::OkStatus();
  }

  absl::Status Sync() override {
    const std::chrono::microseconds delay = fs_->sync_delay();
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    if (const int error = fs_->DecideSync(); error != 0) return IoError("fdatasync", path(), error);
    absl::Status s = base_->Sync();
    if (s.ok()) fs_->CountSync();
    return s;
  }

  absl::Status Close() override { return base_->Close(); }
  const std::string& path() const override { return base_->path(); }

 private:
  FaultInjectingFileSystem* const fs_;
  const std::unique_ptr<WritableFile> base_;
};

FaultInjectingFileSystem::FaultInjectingFileSystem(FileSystem* base) : base_(base) {}

void FaultInjectingFileSystem::FailNthWrite(int64_t n, int error_number) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_write_countdown_ = n;
  fail_write_errno_ = error_number;
}

void FaultInjectingFileSystem::FailWritesAfterBytes(uint64_t bytes, int error_number) {
  std::lock_guard<std::mutex> lock(mu_);
  byte_budget_armed_ = true;
  byte_budget_ = bytes;
  byte_budget_errno_ = error_number;
}

void FaultInjectingFileSystem::FailNthSync(int64_t n, int error_number) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_sync_countdown_ = n;
  fail_sync_errno_ = error_number;
}

void FaultInjectingFileSystem::FailNthOpenWritable(int64_t n, int error_number) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_open_countdown_ = n;
  fail_open_errno_ = error_number;
}

void FaultInjectingFileSystem::SetSyncDelay(std::chrono::microseconds delay) {
  std::lock_guard<std::mutex> lock(mu_);
  sync_delay_ = delay;
}

void FaultInjectingFileSystem::ClearFaults() {
  std::lock_guard<std::mutex> lock(mu_);
  fail_write_countdown_ = 0;
  byte_budget_armed_ = false;
  fail_sync_countdown_ = 0;
  fail_open_countdown_ = 0;
}

FaultInjectingFileSystem::WriteVerdict FaultInjectingFileSystem::DecideWrite(uint64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fail_write_countdown_ > 0 && --fail_write_countdown_ == 0) return {0, fail_write_errno_};
  if (byte_budget_armed_) {
    if (size > byte_budget_) {
      const uint64_t allowed = byte_budget_;
      byte_budget_ = 0;
      return {allowed, byte_budget_errno_};
    }
    byte_budget_ -= size;
  }
  return {size, 0};
}

int FaultInjectingFileSystem::DecideSync() {
  std::lock_guard<std::mutex> lock(mu_);
  if (fail_sync_countdown_ > 0 && --fail_sync_countdown_ == 0) return fail_sync_errno_;
  return 0;
}

std::chrono::microseconds FaultInjectingFileSystem::sync_delay() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sync_delay_;
}

void FaultInjectingFileSystem::CountWrite(uint64_t bytes) {
  writes_.fetch_add(1, std::memory_order_relaxed);
  bytes_written_.fetch_add(bytes, std::memory_order_relaxed);
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultInjectingFileSystem::OpenWritable(const std::string& path,
                                                                                     OpenMode mode) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (fail_open_countdown_ > 0 && --fail_open_countdown_ == 0) {
      return IoError("open", path, fail_open_errno_);
    }
  }
  absl::StatusOr<std::unique_ptr<WritableFile>> file = base_->OpenWritable(path, mode);
  if (!file.ok()) return file.status();
  return std::make_unique<File>(this, std::move(*file));
}

absl::StatusOr<std::unique_ptr<ReadableFile>> FaultInjectingFileSystem::OpenReadable(
    const std::string& path) {
  return base_->OpenReadable(path);
}

absl::StatusOr<std::vector<std::string>> FaultInjectingFileSystem::ListDirectory(const std::string& dir) {
  return base_->ListDirectory(dir);
}

absl::Status FaultInjectingFileSystem::CreateDirectories(const std::string& dir) {
  return base_->CreateDirectories(dir);
}

absl::Status FaultInjectingFileSystem::Remove(const std::string& path) { return base_->Remove(path); }

absl::Status FaultInjectingFileSystem::Rename(const std::string& from, const std::string& to) {
  return base_->Rename(from, to);
}

absl::Status FaultInjectingFileSystem::Truncate(const std::string& path, uint64_t size) {
  return base_->Truncate(path, size);
}

absl::Status FaultInjectingFileSystem::SyncDirectory(const std::string& dir) {
  absl::Status s = base_->SyncDirectory(dir);
  if (s.ok()) directory_syncs_.fetch_add(1, std::memory_order_relaxed);
  return s;
}

}  // namespace revkv::server
