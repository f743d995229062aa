// BufferedReader: reads a file front to back in large chunks and hands out contiguous views, so the
// record parsers of the WAL and of checkpoints see whole records without one read(2) per field.
#ifndef REVKV_SERVER_WAL_BUFFERED_READER_H_
#define REVKV_SERVER_WAL_BUFFERED_READER_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "server/wal/file_system.h"

namespace revkv::server {

// Owner thread only. Reads the first `file_size` bytes of `file`, which is borrowed and must outlive it.
class BufferedReader {
 public:
  static constexpr size_t kDefaultChunkBytes = size_t{1} << 20;

  BufferedReader(const ReadableFile* file, uint64_t file_size, size_t chunk_bytes = kDefaultChunkBytes);

  // Returns a view of the next `size` bytes and advances past them; the view stays valid until the next
  // call. If fewer than `size` bytes remain, returns OutOfRange and does not advance. Read errors come
  // back as the file system reported them. May allocate when `size` exceeds the chunk size.
  absl::StatusOr<std::string_view> Read(size_t size);

  // Moves to byte `position` (<= the file size given), forward or back; the next Read reads from there.
  void Seek(uint64_t position);

  uint64_t position() const { return position_; }                // file offset of the next byte
  uint64_t remaining() const { return file_size_ - position_; }  // bytes left before file_size

 private:
  const ReadableFile* const file_;
  const uint64_t file_size_;
  const size_t chunk_bytes_;
  std::vector<char> buffer_;
  size_t buffer_begin_ = 0;  // index in buffer_ of the byte at position_
  size_t buffer_end_ = 0;    // index in buffer_ one past the last byte read from the file
  uint64_t position_ = 0;
};

}  // namespace revkv::server

#endif  // REVKV_SERVER_WAL_BUFFERED_READER_H_
