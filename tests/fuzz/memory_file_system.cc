// MemoryFileSystem (memory_file_system.h): files as shared strings under one mutex.
#include "tests/fuzz/memory_file_system.h"

#include <cerrno>
#include <cstring>
#include <utility>

namespace revkv::server::fuzz {

// Every handle holds the file system's mutex while it touches the bytes: a reader and the WAL's flusher
// may use the same file at once.
class MemoryFileSystem::Writable final : public WritableFile {
 public:
  Writable(std::mutex* mu, Bytes bytes, std::string path, bool append)
      : mu_(mu), bytes_(std::move(bytes)), path_(std::move(path)), append_(append) {}

  absl::Status Append(std::string_view data) override {
    if (closed_) return IoError("write", path_, EBADF);
    std::lock_guard<std::mutex> lock(*mu_);
    bytes_->append(data);
    return absl::OkStatus();
  }
  absl::Status WriteAt(uint64_t offset, std::string_view data) override {
    if (closed_ || append_) return IoError("pwrite", path_, EBADF);
    std::lock_guard<std::mutex> lock(*mu_);
    if (bytes_->size() < offset + data.size()) bytes_->resize(offset + data.size(), '\0');
    bytes_->replace(offset, data.size(), data);
    return absl::OkStatus();
  }
  absl::Status Sync() override { return closed_ ? IoError("fdatasync", path_, EBADF) : absl::OkStatus(); }
  absl::Status Close() override {
    if (closed_) return IoError("close", path_, EBADF);
    closed_ = true;
    return absl::OkStatus();
  }
  const std::string& path() const override { return path_; }

 private:
  std::mutex* const mu_;
  const Bytes bytes_;
  const std::string path_;
  const bool append_;
  bool closed_ = false;
};

class MemoryFileSystem::Readable final : public ReadableFile {
 public:
  Readable(std::mutex* mu, Bytes bytes, std::string path)
      : mu_(mu), bytes_(std::move(bytes)), path_(std::move(path)) {}

  absl::StatusOr<size_t> ReadAt(uint64_t offset, char* buffer, size_t size) const override {
    std::lock_guard<std::mutex> lock(*mu_);
    if (offset >= bytes_->size()) return 0;
    const size_t n = std::min<uint64_t>(size, bytes_->size() - offset);
    std::memcpy(buffer, bytes_->data() + offset, n);
    return n;
  }
  absl::StatusOr<uint64_t> Size() const override {
    std::lock_guard<std::mutex> lock(*mu_);
    return bytes_->size();
  }
  const std::string& path() const override { return path_; }

 private:
  std::mutex* const mu_;
  const Bytes bytes_;
  const std::string path_;
};

std::string MemoryFileSystem::Parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".")
                                    : (slash == 0 ? std::string("/") : path.substr(0, slash));
}

bool MemoryFileSystem::HasDirectory(const std::string& dir) const {
  return dir == "." || dir == "/" || directories_.count(dir) != 0;
}

void MemoryFileSystem::SetFile(const std::string& path, std::string bytes) {
  (void)CreateDirectories(Parent(path));
  std::lock_guard<std::mutex> lock(mu_);
  files_[path] = std::make_shared<std::string>(std::move(bytes));
}

std::optional<std::string> MemoryFileSystem::GetFile(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return std::nullopt;
  return *it->second;
}

std::map<std::string, std::string> MemoryFileSystem::Files() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::string> out;
  for (const auto& [path, bytes] : files_) out.emplace(path, *bytes);
  return out;
}

absl::StatusOr<std::unique_ptr<WritableFile>> MemoryFileSystem::OpenWritable(const std::string& path,
                                                                             OpenMode mode) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!HasDirectory(Parent(path))) return IoError("open", path, ENOENT);
  Bytes& bytes = files_[path];
  if (bytes == nullptr) bytes = std::make_shared<std::string>();
  if (mode == OpenMode::kTruncate) bytes->clear();
  return std::unique_ptr<WritableFile>(new Writable(&mu_, bytes, path, mode == OpenMode::kAppend));
}

absl::StatusOr<std::unique_ptr<ReadableFile>> MemoryFileSystem::OpenReadable(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return IoError("open", path, ENOENT);
  return std::unique_ptr<ReadableFile>(new Readable(&mu_, it->second, path));
}

absl::StatusOr<std::vector<std::string>> MemoryFileSystem::ListDirectory(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!HasDirectory(dir)) return IoError("opendir", dir, ENOENT);
  std::vector<std::string> names;
  for (const auto& [path, bytes] : files_) {
    if (Parent(path) == dir) names.push_back(path.substr(path.rfind('/') + 1));
  }
  for (const std::string& d : directories_) {
    if (d != dir && Parent(d) == dir) names.push_back(d.substr(d.rfind('/') + 1));
  }
  return names;
}

absl::Status MemoryFileSystem::CreateDirectories(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  for (std::string d = dir; !HasDirectory(d); d = Parent(d)) {
    if (files_.count(d) != 0) return IoError("mkdir", d, ENOTDIR);
    directories_.insert(d);
  }
  return absl::OkStatus();
}

absl::Status MemoryFileSystem::Remove(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  if (files_.erase(path) == 0) return IoError("unlink", path, ENOENT);
  return absl::OkStatus();
}

absl::Status MemoryFileSystem::Rename(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(from);
  if (it == files_.end()) return IoError("rename", from, ENOENT);
  if (!HasDirectory(Parent(to))) return IoError("rename", to, ENOENT);
  Bytes bytes = it->second;
  files_.erase(it);
  files_[to] = std::move(bytes);
  return absl::OkStatus();
}

absl::Status MemoryFileSystem::Truncate(const std::string& path, uint64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return IoError("truncate", path, ENOENT);
  it->second->resize(size, '\0');
  return absl::OkStatus();
}

absl::Status MemoryFileSystem::SyncDirectory(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!HasDirectory(dir)) return IoError("open", dir, ENOENT);
  return absl::OkStatus();
}

}  // namespace revkv::server::fuzz
