// FaultInjectingFileSystem: decisions and the durability model are kept under one mutex; the forwarded
// operation runs outside it, counted in flight so that a power cut can wait for it to end.
#include "server/wal/fault_injecting_file_system.h"

#include <algorithm>
#include <cerrno>
#include <random>
#include <thread>

namespace revkv::server {

namespace {

// The directory part of a path ("" for a bare name), without a trailing separator.
std::string_view ParentOf(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
}

std::string_view WithoutTrailingSlash(std::string_view dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  return dir;
}

// The first `limit` bytes of `path` on `fs` (all of them by default).
absl::StatusOr<std::string> ReadPrefix(FileSystem* fs, const std::string& path, uint64_t limit = UINT64_MAX) {
  absl::StatusOr<std::unique_ptr<ReadableFile>> file = fs->OpenReadable(path);
  if (!file.ok()) return file.status();
  absl::StatusOr<uint64_t> size = (*file)->Size();
  if (!size.ok()) return size.status();
  std::string bytes(static_cast<size_t>(std::min(*size, limit)), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    absl::StatusOr<size_t> n = (*file)->ReadAt(done, bytes.data() + done, bytes.size() - done);
    if (!n.ok()) return n.status();
    if (*n == 0) break;
    done += *n;
  }
  bytes.resize(done);
  return bytes;
}

absl::Status WriteWhole(FileSystem* fs, const std::string& path, std::string_view bytes) {
  absl::StatusOr<std::unique_ptr<WritableFile>> file = fs->OpenWritable(path, OpenMode::kTruncate);
  if (!file.ok()) return file.status();
  if (absl::Status s = (*file)->Append(bytes); !s.ok()) return s;
  return (*file)->Close();
}

// The unit a disk writes atomically.
constexpr uint64_t kSectorBytes = 512;

}  // namespace

// A writable file that asks its file system before every write and sync, and reports what they did.
class FaultInjectingFileSystem::File final : public WritableFile {
 public:
  File(FaultInjectingFileSystem* fs, std::unique_ptr<WritableFile> base) : fs_(fs), base_(std::move(base)) {}

  absl::Status Append(std::string_view data) override {
    if (absl::Status s = fs_->Admit("write", path(), /*is_write=*/true); !s.ok()) return s;
    absl::Status result = [&] {
      const WriteVerdict verdict = fs_->DecideWrite(data.size());
      if (verdict.allowed > 0) {
        if (absl::Status s = base_->Append(data.substr(0, verdict.allowed)); !s.ok()) return s;
        fs_->CountWrite(verdict.allowed);
        fs_->NoteWritten(path(), 0, /*append=*/true, verdict.allowed);
      }
      if (verdict.error != 0) return IoError("write", path(), verdict.error);
      return absl::OkStatus();
    }();
    fs_->Finish();
    return result;
  }

  absl::Status WriteAt(uint64_t offset, std::string_view data) override {
    if (absl::Status s = fs_->Admit("pwrite", path(), /*is_write=*/true); !s.ok()) return s;
    absl::Status result = [&] {
      const WriteVerdict verdict = fs_->DecideWrite(data.size());
      if (verdict.allowed > 0) {
        if (absl::Status s = base_->WriteAt(offset, data.substr(0, verdict.allowed)); !s.ok()) return s;
        fs_->CountWrite(verdict.allowed);
        fs_->NoteWritten(path(), offset + verdict.allowed, /*append=*/false, verdict.allowed);
      }
      if (verdict.error != 0) return IoError("pwrite", path(), verdict.error);
      return absl::OkStatus();
    }();
    fs_->Finish();
    return result;
  }

  absl::Status Sync() override {
    const std::chrono::microseconds delay = fs_->sync_delay();
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    if (absl::Status s = fs_->Admit("fdatasync", path(), /*is_write=*/false); !s.ok()) return s;
    absl::Status result = [&] {
      if (const int error = fs_->DecideSync(); error != 0) return IoError("fdatasync", path(), error);
      absl::Status s = base_->Sync();
      if (s.ok()) {
        fs_->CountSync();
        fs_->NoteSynced(path());
      }
      return s;
    }();
    fs_->Finish();
    return result;
  }

  // Reserves blocks only: the size, and so what a power loss keeps, is unchanged.
  absl::Status Preallocate(uint64_t bytes) override { return base_->Preallocate(bytes); }
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

void FaultInjectingFileSystem::PauseWrites(std::string path_prefix) {
  std::lock_guard<std::mutex> lock(mu_);
  paused_ = true;
  pause_prefix_ = std::move(path_prefix);
}

void FaultInjectingFileSystem::ResumeWrites() {
  std::lock_guard<std::mutex> lock(mu_);
  paused_ = false;
  changed_.notify_all();
}

uint64_t FaultInjectingFileSystem::UnsyncedBytes(std::string_view path_prefix) const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t bytes = 0;
  for (const auto& [path, state] : files_) {
    if (std::string_view(path).substr(0, path_prefix.size()) != path_prefix) continue;
    bytes += state.entry_durable ? state.size - std::min(state.synced, state.size) : state.size;
  }
  return bytes;
}

absl::Status FaultInjectingFileSystem::SimulatePowerLoss() { return PowerLoss(std::nullopt); }

absl::Status FaultInjectingFileSystem::SimulatePowerLoss(uint64_t seed) { return PowerLoss(seed); }

absl::Status FaultInjectingFileSystem::PowerLoss(std::optional<uint64_t> seed) {
  std::map<std::string, FileState> files;
  std::map<std::string, Removed> removed;
  {
    std::unique_lock<std::mutex> lock(mu_);
    power_cut_ = true;
    changed_.notify_all();  // paused writers wake up and fail
    changed_.wait(lock, [this] { return in_flight_ == 0; });
    files = files_;
    removed = removed_;
  }
  std::mt19937_64 rng(seed.value_or(0));
  // Whether something not durable is lost: always without a seed, else by a coin flip.
  auto lost = [&] { return !seed.has_value() || rng() % 2 == 0; };
  absl::Status first;
  auto note = [&](absl::Status s) {
    if (!s.ok() && !absl::IsNotFound(s) && first.ok()) first = std::move(s);
  };
  for (const auto& [path, state] : files) {
    std::string at = path;
    if (!state.renamed_from.empty() && lost()) {
      note(base_->Rename(path, state.renamed_from));
      at = state.renamed_from;
      if (!state.from_entry_durable && lost()) {
        note(base_->Remove(at));
        continue;
      }
    } else if (state.renamed_from.empty() && !state.entry_durable && lost()) {
      note(base_->Remove(path));
      continue;
    }
    if (!seed.has_value() || state.size <= state.synced) {
      note(base_->Truncate(at, std::min(state.synced, state.size)));
      continue;
    }
    // A prefix of the unsynced bytes reached the disk, cut at any byte; inside it, each sector did or
    // reads as zeros, in no particular order.
    const uint64_t kept = state.synced + rng() % (state.size - state.synced + 1);
    absl::StatusOr<std::string> bytes = ReadPrefix(base_, at, kept);
    if (!bytes.ok()) {
      note(bytes.status());
      continue;
    }
    for (uint64_t sector = state.synced / kSectorBytes * kSectorBytes; sector < bytes->size();
         sector += kSectorBytes) {
      if (rng() % 3 != 0) continue;
      const uint64_t from = std::max(sector, state.synced);  // synced bytes in the sector stay
      const uint64_t to = std::min<uint64_t>(sector + kSectorBytes, bytes->size());
      std::fill(bytes->begin() + static_cast<std::ptrdiff_t>(from),
                bytes->begin() + static_cast<std::ptrdiff_t>(to), '\0');
    }
    note(WriteWhole(base_, at, *bytes));
  }
  for (const auto& [path, r] : removed) {
    if (lost()) note(WriteWhole(base_, path, r.bytes));  // the removal never reached the disk
  }
  return first;
}

absl::Status FaultInjectingFileSystem::Admit(const char* operation, const std::string& path, bool is_write) {
  std::unique_lock<std::mutex> lock(mu_);
  if (is_write) {
    changed_.wait(lock, [&] {
      return power_cut_ || !paused_ ||
             std::string_view(path).substr(0, pause_prefix_.size()) != pause_prefix_;
    });
  }
  if (power_cut_) return IoError(operation, path, EIO);
  ++in_flight_;
  return absl::OkStatus();
}

void FaultInjectingFileSystem::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (--in_flight_ == 0) changed_.notify_all();
}

void FaultInjectingFileSystem::NoteOpened(const std::string& path, OpenMode mode, bool existed,
                                          uint64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = files_.try_emplace(path);
  FileState& state = it->second;
  if (inserted) {
    // First seen now: what was there before counts as durable.
    state.entry_durable = existed;
    state.size = state.synced = size;
  }
  if (mode == OpenMode::kTruncate) state.size = state.synced = 0;  // the old bytes are gone either way
}

void FaultInjectingFileSystem::NoteWritten(const std::string& path, uint64_t end, bool append,
                                           uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  FileState& state = files_[path];
  state.size = append ? state.size + bytes : std::max(state.size, end);
}

void FaultInjectingFileSystem::NoteSynced(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  FileState& state = files_[path];
  state.synced = state.size;
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
  if (absl::Status s = Admit("open", path, /*is_write=*/false); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<WritableFile>> result =
      [&]() -> absl::StatusOr<std::unique_ptr<WritableFile>> {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (fail_open_countdown_ > 0 && --fail_open_countdown_ == 0) {
        return IoError("open", path, fail_open_errno_);
      }
    }
    bool existed = false;
    uint64_t size = 0;
    if (absl::StatusOr<std::unique_ptr<ReadableFile>> before = base_->OpenReadable(path); before.ok()) {
      existed = true;
      if (absl::StatusOr<uint64_t> n = (*before)->Size(); n.ok()) size = *n;
    }
    absl::StatusOr<std::unique_ptr<WritableFile>> file = base_->OpenWritable(path, mode);
    if (!file.ok()) return file.status();
    NoteOpened(path, mode, existed, size);
    return std::make_unique<File>(this, std::move(*file));
  }();
  Finish();
  return result;
}

absl::StatusOr<std::unique_ptr<ReadableFile>> FaultInjectingFileSystem::OpenReadable(
    const std::string& path) {
  return base_->OpenReadable(path);
}

absl::StatusOr<std::vector<std::string>> FaultInjectingFileSystem::ListDirectory(const std::string& dir) {
  return base_->ListDirectory(dir);
}

absl::Status FaultInjectingFileSystem::CreateDirectories(const std::string& dir) {
  if (absl::Status s = Admit("mkdir", dir, /*is_write=*/false); !s.ok()) return s;
  absl::Status s = base_->CreateDirectories(dir);
  Finish();
  return s;
}

absl::Status FaultInjectingFileSystem::Remove(const std::string& path) {
  if (absl::Status s = Admit("unlink", path, /*is_write=*/false); !s.ok()) return s;
  // What a crash before the directory is synced brings back: the durable bytes of a durable entry.
  std::optional<Removed> undo;
  {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = files_.find(path);
    const bool durable = it == files_.end() || it->second.entry_durable;
    const uint64_t synced = it == files_.end() ? UINT64_MAX : it->second.synced;
    lock.unlock();
    if (durable) {
      if (absl::StatusOr<std::string> bytes = ReadPrefix(base_, path, synced); bytes.ok()) {
        undo = Removed{*std::move(bytes)};
      }
    }
  }
  absl::Status s = base_->Remove(path);
  if (s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    files_.erase(path);
    if (undo) removed_[path] = *std::move(undo);
  }
  Finish();
  return s;
}

absl::Status FaultInjectingFileSystem::Rename(const std::string& from, const std::string& to) {
  if (absl::Status s = Admit("rename", from, /*is_write=*/false); !s.ok()) return s;
  uint64_t size = 0;
  if (absl::StatusOr<std::unique_ptr<ReadableFile>> f = base_->OpenReadable(from); f.ok()) {
    if (absl::StatusOr<uint64_t> n = (*f)->Size(); n.ok()) size = *n;
  }
  absl::Status s = base_->Rename(from, to);
  if (s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    FileState state{size, size, /*entry_durable=*/true};  // a file never opened here: durable as found
    if (auto it = files_.find(from); it != files_.end()) {
      state = it->second;
      files_.erase(it);
    }
    if (state.renamed_from.empty()) {  // undoing a chain of renames restores the first name
      state.renamed_from = from;
      state.from_entry_durable = state.entry_durable;
    }
    state.entry_durable = false;  // until its directory is synced
    files_[to] = state;
  }
  Finish();
  return s;
}

absl::Status FaultInjectingFileSystem::Truncate(const std::string& path, uint64_t size) {
  if (absl::Status s = Admit("truncate", path, /*is_write=*/false); !s.ok()) return s;
  absl::Status s = base_->Truncate(path, size);
  if (s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = files_.find(path); it != files_.end()) {
      it->second.size = size;
      it->second.synced = std::min(it->second.synced, size);
    }
  }
  Finish();
  return s;
}

absl::Status FaultInjectingFileSystem::SyncDirectory(const std::string& dir) {
  if (absl::Status s = Admit("fsync", dir, /*is_write=*/false); !s.ok()) return s;
  absl::Status s = base_->SyncDirectory(dir);
  if (s.ok()) {
    directory_syncs_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(mu_);
    const std::string_view d = WithoutTrailingSlash(dir);
    for (auto& [path, state] : files_) {
      if (ParentOf(path) == d) {
        state.entry_durable = true;
        state.renamed_from.clear();
      }
    }
    for (auto it = removed_.begin(); it != removed_.end();) {
      it = ParentOf(it->first) == d ? removed_.erase(it) : std::next(it);
    }
  }
  Finish();
  return s;
}

}  // namespace revkv::server
