// The POSIX FileSystem: thin wrappers over open/write/pwrite/fdatasync/rename/unlink/truncate that retry
// EINTR and short transfers and turn errno into a status naming the operation and the file.
#include <dirent.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "server/wal/file_system.h"

namespace revkv::server {
namespace {

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  absl::Status Append(std::string_view data) override {
    while (!data.empty()) {
      const ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return IoError("write", path_, errno);
      }
      if (n == 0) return IoError("write", path_, EIO);  // no progress: treat as an I/O error
      data.remove_prefix(static_cast<size_t>(n));
    }
    return absl::OkStatus();
  }

  absl::Status WriteAt(uint64_t offset, std::string_view data) override {
    while (!data.empty()) {
      const ssize_t n = ::pwrite(fd_, data.data(), data.size(), static_cast<off_t>(offset));
      if (n < 0) {
        if (errno == EINTR) continue;
        return IoError("pwrite", path_, errno);
      }
      if (n == 0) return IoError("pwrite", path_, EIO);
      data.remove_prefix(static_cast<size_t>(n));
      offset += static_cast<uint64_t>(n);
    }
    return absl::OkStatus();
  }

  absl::Status Sync() override {
    if (::fdatasync(fd_) != 0) return IoError("fdatasync", path_, errno);
    return absl::OkStatus();
  }

  absl::Status Preallocate(uint64_t bytes) override {
    if (::fallocate(fd_, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(bytes)) != 0) {
      if (errno == EOPNOTSUPP || errno == ENOSYS) return absl::OkStatus();
      return IoError("fallocate", path_, errno);
    }
    return absl::OkStatus();
  }

  absl::Status Close() override {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return IoError("close", path_, errno);
    return absl::OkStatus();
  }

  const std::string& path() const override { return path_; }

 private:
  const std::string path_;
  int fd_;
};

class PosixReadableFile final : public ReadableFile {
 public:
  PosixReadableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixReadableFile() override { ::close(fd_); }

  absl::StatusOr<size_t> ReadAt(uint64_t offset, char* buffer, size_t size) const override {
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::pread(fd_, buffer + done, size - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return IoError("read", path_, errno);
      }
      if (n == 0) break;  // end of file
      done += static_cast<size_t>(n);
    }
    return done;
  }

  absl::StatusOr<uint64_t> Size() const override {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) return IoError("fstat", path_, errno);
    return static_cast<uint64_t>(st.st_size);
  }

  const std::string& path() const override { return path_; }

 private:
  const std::string path_;
  const int fd_;
};

class PosixFileSystem final : public FileSystem {
 public:
  absl::StatusOr<std::unique_ptr<WritableFile>> OpenWritable(const std::string& path,
                                                             OpenMode mode) override {
    const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (mode == OpenMode::kTruncate ? O_TRUNC : O_APPEND);
    int fd;
    do {
      fd = ::open(path.c_str(), flags, 0644);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return IoError("open", path, errno);
    return std::make_unique<PosixWritableFile>(path, fd);
  }

  absl::StatusOr<std::unique_ptr<ReadableFile>> OpenReadable(const std::string& path) override {
    int fd;
    do {
      fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return IoError("open", path, errno);
    return std::make_unique<PosixReadableFile>(path, fd);
  }

  absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return IoError("opendir", dir, errno);
    std::vector<std::string> names;
    errno = 0;
    // readdir is safe here: the stream is private to this call. NOLINTNEXTLINE(concurrency-mt-unsafe)
    while (const dirent* entry = ::readdir(d)) {
      const std::string_view name = entry->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
    }
    const int error = errno;
    ::closedir(d);
    if (error != 0) return IoError("readdir", dir, error);
    return names;
  }

  absl::Status CreateDirectories(const std::string& dir) override {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return IoError("mkdir", dir, ec.value());
    return absl::OkStatus();
  }

  absl::Status Remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return IoError("unlink", path, errno);
    return absl::OkStatus();
  }

  absl::Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return IoError("rename", from + " to " + to, errno);
    return absl::OkStatus();
  }

  absl::Status Truncate(const std::string& path, uint64_t size) override {
    if (::truncate(path.c_str(), static_cast<off_t>(size)) != 0) return IoError("truncate", path, errno);
    return absl::OkStatus();
  }

  absl::Status SyncDirectory(const std::string& dir) override {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return IoError("open", dir, errno);
    absl::Status status;
    if (::fsync(fd) != 0) status = IoError("fsync", dir, errno);
    ::close(fd);
    return status;
  }
};

}  // namespace

FileSystem* DefaultFileSystem() {
  static FileSystem* const file_system = new PosixFileSystem();  // never destroyed: used until exit
  return file_system;
}

}  // namespace revkv::server
