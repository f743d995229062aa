// Encoding and decoding of WAL record headers, segment headers and segment file names.
#include "server/wal/wal_format.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "server/wal/crc32c.h"
#include "server/wal/file_system.h"

namespace revkv::server::wal_format {

void EncodeRecordHeader(const RecordHeader& header, char* out) {
  std::memcpy(out, &header.payload_bytes, 4);
  std::memcpy(out + 4, &header.crc, 4);
  std::memcpy(out + 8, &header.revision, 8);
}

RecordHeader DecodeRecordHeader(const char* in) {
  RecordHeader header;
  std::memcpy(&header.payload_bytes, in, 4);
  std::memcpy(&header.crc, in + 4, 4);
  std::memcpy(&header.revision, in + 8, 8);
  return header;
}

uint32_t RevisionCrc(int64_t revision) {
  char bytes[8];
  std::memcpy(bytes, &revision, 8);
  return Crc32cExtend(0, bytes, sizeof(bytes));
}

uint32_t RecordCrc(int64_t revision, std::string_view payload) {
  char bytes[8];
  std::memcpy(bytes, &revision, 8);
  return Crc32cExtend(Crc32cExtend(0, bytes, sizeof(bytes)), payload.data(), payload.size());
}

std::string EncodeSegmentHeader() {
  std::string header(kSegmentHeaderBytes, '\0');
  std::memcpy(header.data(), kSegmentMagic.data(), kSegmentMagic.size());
  std::memcpy(header.data() + 8, &kFormatVersion, 4);
  return header;
}

absl::Status CheckSegmentHeader(std::string_view header, const std::string& path) {
  if (header.size() < kSegmentHeaderBytes || header.substr(0, kSegmentMagic.size()) != kSegmentMagic) {
    return absl::DataLossError(absl::StrCat(path, " does not start with a WAL segment header"));
  }
  uint32_t version;
  uint32_t reserved;
  std::memcpy(&version, header.data() + 8, 4);
  std::memcpy(&reserved, header.data() + 12, 4);
  if (version != kFormatVersion) {
    return absl::FailedPreconditionError(absl::StrCat(path, " has WAL format version ", version,
                                                      "; this build reads version ", kFormatVersion));
  }
  if (reserved != 0) return absl::DataLossError(absl::StrCat(path, " has a damaged WAL segment header"));
  return absl::OkStatus();
}

std::string SegmentFileName(int64_t first_revision) {
  return NumberedFileName("wal-", first_revision, ".log");
}

std::optional<int64_t> ParseSegmentFileName(std::string_view name) {
  return ParseNumberedFileName(name, "wal-", ".log");
}

}  // namespace revkv::server::wal_format
