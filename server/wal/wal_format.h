// The on-disk format of the write-ahead log (internal to server/wal; docs/durability.md describes it).
//
// A segment file is named wal-<first revision as 16 lowercase hex digits>.log and holds
//   segment header (16 bytes): magic "revkvWAL" | u32 format version (1) | u32 zero
//   records, back to back:     u32 payload length | u32 CRC-32C | i64 revision | payload
// All integers are little-endian. The CRC covers the 8 revision bytes followed by the payload; it does
// not cover the length (a damaged length is caught by the CRC of the bytes it then selects, or by running
// past the end of the file). Revisions are consecutive across the whole log.
#ifndef REVKV_SERVER_WAL_WAL_FORMAT_H_
#define REVKV_SERVER_WAL_WAL_FORMAT_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace revkv::server::wal_format {

static_assert(std::endian::native == std::endian::little, "revkv's file formats assume a little-endian host");

inline constexpr size_t kRecordHeaderBytes = 16;
inline constexpr size_t kSegmentHeaderBytes = 16;
inline constexpr std::string_view kSegmentMagic = "revkvWAL";
inline constexpr uint32_t kFormatVersion = 1;
// Upper bound on a payload the reader accepts; a larger length field is damage, not a record.
inline constexpr uint32_t kMaxPayloadBytes = uint32_t{1} << 30;

struct RecordHeader {
  uint32_t payload_bytes = 0;
  uint32_t crc = 0;
  int64_t revision = 0;
};

// Writes the 16 header bytes to `out`.
void EncodeRecordHeader(const RecordHeader& header, char* out);
// Reads 16 header bytes from `in`.
RecordHeader DecodeRecordHeader(const char* in);

// CRC-32C of the 8 little-endian bytes of `revision`.
uint32_t RevisionCrc(int64_t revision);
// CRC-32C of the revision bytes followed by `payload`: the record checksum.
uint32_t RecordCrc(int64_t revision, std::string_view payload);

// The 16 bytes every segment starts with.
std::string EncodeSegmentHeader();
// OK for a valid header of this format version. DataLoss if the magic is wrong or the header short (a
// torn or foreign file); FailedPrecondition for another format version (never treated as damage).
absl::Status CheckSegmentHeader(std::string_view header, const std::string& path);

// "wal-<16 hex digits>.log" for a segment whose first record has `first_revision`.
std::string SegmentFileName(int64_t first_revision);
// The first revision encoded in a segment file name, or nullopt if `name` is not a segment name.
std::optional<int64_t> ParseSegmentFileName(std::string_view name);

}  // namespace revkv::server::wal_format

#endif  // REVKV_SERVER_WAL_WAL_FORMAT_H_
