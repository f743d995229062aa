// BufferedReader: keeps one window of the file; a request that runs past it slides the unread tail to
// the front and refills.
#include "server/wal/buffered_reader.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace revkv::server {

BufferedReader::BufferedReader(const ReadableFile* file, uint64_t file_size, size_t chunk_bytes)
    : file_(file), file_size_(file_size), chunk_bytes_(chunk_bytes) {}

void BufferedReader::Seek(uint64_t position) {
  const uint64_t buffered_from = position_ - buffer_begin_;  // file offset of buffer_[0]
  if (position >= buffered_from && position <= buffered_from + buffer_end_) {
    buffer_begin_ = static_cast<size_t>(position - buffered_from);
  } else {
    buffer_begin_ = buffer_end_ = 0;
  }
  position_ = std::min(position, file_size_);
}

absl::StatusOr<std::string_view> BufferedReader::Read(size_t size) {
  if (size > remaining()) {
    return absl::OutOfRangeError(absl::StrCat("read of ", size, " bytes at offset ", position_, " of ",
                                              file_->path(), " runs past its end (", file_size_, " bytes)"));
  }
  if (buffer_end_ - buffer_begin_ < size) {
    const size_t unread = buffer_end_ - buffer_begin_;
    const size_t want = static_cast<size_t>(std::min<uint64_t>(std::max(size, chunk_bytes_), remaining()));
    if (buffer_.size() < want) buffer_.resize(want);
    std::memmove(buffer_.data(), buffer_.data() + buffer_begin_, unread);
    buffer_begin_ = 0;
    buffer_end_ = unread;
    absl::StatusOr<size_t> n = file_->ReadAt(position_ + unread, buffer_.data() + unread, want - unread);
    if (!n.ok()) return n.status();
    buffer_end_ += *n;
    if (buffer_end_ < size) {
      return absl::DataLossError(absl::StrCat(file_->path(), " shrank while being read (expected ",
                                              file_size_, " bytes, got ", position_ + buffer_end_, ")"));
    }
  }
  std::string_view view(buffer_.data() + buffer_begin_, size);
  buffer_begin_ += size;
  position_ += size;
  return view;
}

}  // namespace revkv::server
