// The checkpoint file format (internal to server/checkpoint; checkpoint.h shows the layout): encoding
// and decoding of the header, entries and footer, and the file names.
#ifndef REVKV_SERVER_CHECKPOINT_CHECKPOINT_FORMAT_H_
#define REVKV_SERVER_CHECKPOINT_CHECKPOINT_FORMAT_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "server/checkpoint/checkpoint.h"

namespace revkv::server::checkpoint_format {

static_assert(std::endian::native == std::endian::little, "revkv's file formats assume a little-endian host");

inline constexpr size_t kHeaderBytesV1 = 40;    // version 1: no base revision (it is the revision)
inline constexpr size_t kHeaderBytesV2 = 48;    // version 2: no lease count (no leases)
inline constexpr size_t kHeaderBytesV3 = 56;    // version 3: no state record count (no state records)
inline constexpr size_t kHeaderBytes = 64;      // the version written
inline constexpr size_t kLeaseBytes = 16;       // i64 ID, i64 granted TTL
inline constexpr size_t kEntryFixedBytes = 40;  // two lengths and four i64 before the key and value
inline constexpr size_t kStateFixedBytes = 8;   // u32 kind, u32 length before the record's bytes
inline constexpr size_t kFooterBytes = 16;
inline constexpr std::string_view kMagic = "revkvCKP";
inline constexpr std::string_view kFooterMagic = "revkvEND";
inline constexpr uint32_t kFormatVersion = 4;  // reads 1 to 4

struct Header {
  int64_t revision = 0;
  int64_t compact_revision = 0;
  uint64_t entry_count = 0;
  int64_t base_revision = 0;  // version 1: the revision
  uint64_t lease_count = 0;   // versions 1 and 2: 0
  uint64_t state_count = 0;   // versions 1 to 3: 0
};

// A version-4 header (kHeaderBytes).
std::string EncodeHeader(const Header& header);
// The header's size, from its first kHeaderBytesV1 bytes: DataLoss for a damaged header,
// FailedPrecondition for a format version this build does not read.
absl::StatusOr<size_t> HeaderSize(std::string_view first_bytes);
// Decodes a whole header (HeaderSize bytes). DataLoss for a damaged header, FailedPrecondition for
// another format version.
absl::StatusOr<Header> DecodeHeader(std::string_view bytes);

// The fixed part of an entry, as stored before its key and value.
struct EntryFixed {
  uint32_t key_bytes = 0;
  uint32_t value_bytes = 0;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;
};

// Appends the encoded entry (fixed part, key, value) to `out`. The lengths must fit in 32 bits.
void AppendEntry(const CheckpointEntry& entry, std::string* out);
EntryFixed DecodeEntryFixed(const char* bytes);
// Appends the encoded lease (kLeaseBytes) to `out`; decodes one.
void AppendLease(const CheckpointLease& lease, std::string* out);
CheckpointLease DecodeLease(const char* bytes);
// Appends an encoded state record (kStateFixedBytes, then its bytes) to `out`; decodes the fixed part
// (kind, length).
void AppendStateRecord(const CheckpointStateRecord& record, std::string* out);
std::pair<uint32_t, uint32_t> DecodeStateFixed(const char* bytes);

std::string EncodeFooter(uint32_t crc);
// The CRC stored in a footer; DataLoss if the footer is damaged.
absl::StatusOr<uint32_t> DecodeFooter(std::string_view bytes);

// File names: checkpoint-<16 hex>.ckpt (complete), .tmp (being written), .corrupt (failed verification).
inline constexpr std::string_view kCompleteSuffix = ".ckpt";
inline constexpr std::string_view kTemporarySuffix = ".tmp";
inline constexpr std::string_view kCorruptSuffix = ".corrupt";
std::string FileName(int64_t revision, std::string_view suffix);
// The revision in `name` if it is checkpoint-<16 hex><suffix>.
std::optional<int64_t> ParseFileName(std::string_view name, std::string_view suffix);

}  // namespace revkv::server::checkpoint_format

#endif  // REVKV_SERVER_CHECKPOINT_CHECKPOINT_FORMAT_H_
