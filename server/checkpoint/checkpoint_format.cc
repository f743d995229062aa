// Checkpoint format: fixed-width little-endian fields, copied with memcpy.
#include "server/checkpoint/checkpoint_format.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "server/wal/file_system.h"

namespace revkv::server::checkpoint_format {
namespace {

template <typename T>
void Put(char* out, T value) {
  std::memcpy(out, &value, sizeof(T));
}

template <typename T>
T Get(const char* in) {
  T value;
  std::memcpy(&value, in, sizeof(T));
  return value;
}

}  // namespace

std::string EncodeHeader(const Header& header) {
  std::string bytes(kHeaderBytes, '\0');
  std::memcpy(bytes.data(), kMagic.data(), kMagic.size());
  Put<uint32_t>(bytes.data() + 8, kFormatVersion);
  Put<int64_t>(bytes.data() + 16, header.revision);
  Put<int64_t>(bytes.data() + 24, header.compact_revision);
  Put<uint64_t>(bytes.data() + 32, header.entry_count);
  Put<int64_t>(bytes.data() + 40, header.base_revision);
  Put<uint64_t>(bytes.data() + 48, header.lease_count);
  Put<uint64_t>(bytes.data() + 56, header.state_count);
  return bytes;
}

absl::StatusOr<size_t> HeaderSize(std::string_view first_bytes) {
  if (first_bytes.size() < kHeaderBytesV1 || first_bytes.substr(0, kMagic.size()) != kMagic) {
    return absl::DataLossError("not a checkpoint header (bad magic)");
  }
  const uint32_t version = Get<uint32_t>(first_bytes.data() + 8);
  if (version == 1) return kHeaderBytesV1;
  if (version == 2) return kHeaderBytesV2;
  if (version == 3) return kHeaderBytesV3;
  if (version == 4) return kHeaderBytes;
  return absl::FailedPreconditionError(absl::StrCat("checkpoint format version ", version,
                                                    "; this build reads versions 1 to ", kFormatVersion));
}

absl::StatusOr<Header> DecodeHeader(std::string_view bytes) {
  absl::StatusOr<size_t> size = HeaderSize(bytes);
  if (!size.ok()) return size.status();
  if (bytes.size() != *size) return absl::DataLossError("truncated checkpoint header");
  if (Get<uint32_t>(bytes.data() + 12) != 0) return absl::DataLossError("damaged checkpoint header");
  Header header;
  header.revision = Get<int64_t>(bytes.data() + 16);
  header.compact_revision = Get<int64_t>(bytes.data() + 24);
  header.entry_count = Get<uint64_t>(bytes.data() + 32);
  header.base_revision = *size >= kHeaderBytesV2 ? Get<int64_t>(bytes.data() + 40) : header.revision;
  header.lease_count = *size >= kHeaderBytesV3 ? Get<uint64_t>(bytes.data() + 48) : 0;
  header.state_count = *size >= kHeaderBytes ? Get<uint64_t>(bytes.data() + 56) : 0;
  return header;
}

void AppendEntry(const CheckpointEntry& entry, std::string* out) {
  const size_t at = out->size();
  out->resize(at + kEntryFixedBytes);
  char* p = out->data() + at;
  Put<uint32_t>(p, static_cast<uint32_t>(entry.key.size()));
  Put<uint32_t>(p + 4, static_cast<uint32_t>(entry.value.size()));
  Put<int64_t>(p + 8, entry.create_revision);
  Put<int64_t>(p + 16, entry.mod_revision);
  Put<int64_t>(p + 24, entry.version);
  Put<int64_t>(p + 32, entry.lease);
  out->append(entry.key);
  out->append(entry.value);
}

EntryFixed DecodeEntryFixed(const char* bytes) {
  EntryFixed e;
  e.key_bytes = Get<uint32_t>(bytes);
  e.value_bytes = Get<uint32_t>(bytes + 4);
  e.create_revision = Get<int64_t>(bytes + 8);
  e.mod_revision = Get<int64_t>(bytes + 16);
  e.version = Get<int64_t>(bytes + 24);
  e.lease = Get<int64_t>(bytes + 32);
  return e;
}

void AppendLease(const CheckpointLease& lease, std::string* out) {
  const size_t at = out->size();
  out->resize(at + kLeaseBytes);
  Put<int64_t>(out->data() + at, lease.id);
  Put<int64_t>(out->data() + at + 8, lease.ttl);
}

CheckpointLease DecodeLease(const char* bytes) {
  return CheckpointLease{Get<int64_t>(bytes), Get<int64_t>(bytes + 8)};
}

void AppendStateRecord(const CheckpointStateRecord& record, std::string* out) {
  const size_t at = out->size();
  out->resize(at + kStateFixedBytes);
  Put<uint32_t>(out->data() + at, record.kind);
  Put<uint32_t>(out->data() + at + 4, static_cast<uint32_t>(record.bytes.size()));
  out->append(record.bytes);
}

std::pair<uint32_t, uint32_t> DecodeStateFixed(const char* bytes) {
  return {Get<uint32_t>(bytes), Get<uint32_t>(bytes + 4)};
}

std::string EncodeFooter(uint32_t crc) {
  std::string bytes(kFooterBytes, '\0');
  Put<uint32_t>(bytes.data(), crc);
  std::memcpy(bytes.data() + 8, kFooterMagic.data(), kFooterMagic.size());
  return bytes;
}

absl::StatusOr<uint32_t> DecodeFooter(std::string_view bytes) {
  if (bytes.size() != kFooterBytes || bytes.substr(8) != kFooterMagic ||
      Get<uint32_t>(bytes.data() + 4) != 0) {
    return absl::DataLossError("damaged checkpoint footer");
  }
  return Get<uint32_t>(bytes.data());
}

std::string FileName(int64_t revision, std::string_view suffix) {
  return NumberedFileName("checkpoint-", revision, suffix);
}

std::optional<int64_t> ParseFileName(std::string_view name, std::string_view suffix) {
  return ParseNumberedFileName(name, "checkpoint-", suffix);
}

}  // namespace revkv::server::checkpoint_format
