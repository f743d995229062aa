// Encoding and decoding of WAL record headers, segment headers and segment file names.
#include "server/wal/wal_format.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/wal/crc32c.h"

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

absl::Status CheckSegmentHeader(std::string_view header, std::string_view path) {
  if (header.size() < kSegmentHeaderBytes || header.substr(0, kSegmentMagic.size()) != kSegmentMagic) {
    return absl::DataLossError(absl::StrCat(path, " does not start with a WAL segment header"));
  }
  uint32_t version;
  std::memcpy(&version, header.data() + 8, 4);
  if (version != kFormatVersion) {
    return absl::FailedPreconditionError(absl::StrCat(path, " has WAL format version ", version,
                                                      "; this build reads version ", kFormatVersion));
  }
  return absl::OkStatus();
}

std::string SegmentFileName(int64_t first_revision) {
  return absl::StrFormat("wal-%016x.log", static_cast<uint64_t>(first_revision));
}

std::optional<int64_t> ParseSegmentFileName(std::string_view name) {
  constexpr std::string_view kPrefix = "wal-";
  constexpr std::string_view kSuffix = ".log";
  if (name.size() != kPrefix.size() + 16 + kSuffix.size() || name.substr(0, kPrefix.size()) != kPrefix ||
      name.substr(kPrefix.size() + 16) != kSuffix) {
    return std::nullopt;
  }
  uint64_t value = 0;
  for (char c : name.substr(kPrefix.size(), 16)) {
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    value = value << 4 | static_cast<uint64_t>(digit);
  }
  if (value > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(value);
}

}  // namespace revkv::server::wal_format
