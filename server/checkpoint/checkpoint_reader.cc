// Reading checkpoints: one scan routine checks the structure and the CRC of a whole file and optionally
// hands the entries to a visitor; loading runs it twice per chosen file (verify, then visit), so a
// visitor never sees entries of a file that turns out to be corrupt.
#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "server/checkpoint/checkpoint.h"
#include "server/checkpoint/checkpoint_format.h"
#include "server/wal/buffered_reader.h"
#include "server/wal/crc32c.h"

namespace revkv::server {
namespace {

namespace format = checkpoint_format;

absl::Status Damaged(const std::string& path, std::string_view what) {
  return absl::DataLossError(absl::StrCat("checkpoint ", path, ": ", std::string(what)));
}

// Reads the whole checkpoint at `path`, verifying it; visits the entries if `visitor` is set. Damage is
// DataLoss; I/O errors come back as the file system reports them.
absl::StatusOr<CheckpointInfo> ScanCheckpoint(FileSystem* fs, const std::string& path,
                                              std::optional<int64_t> named_revision,
                                              const CheckpointEntryVisitor* visitor,
                                              const CheckpointLeaseVisitor* lease_visitor = nullptr,
                                              const CheckpointStateVisitor* state_visitor = nullptr) {
  absl::StatusOr<std::unique_ptr<ReadableFile>> file = fs->OpenReadable(path);
  if (!file.ok()) return file.status();
  absl::StatusOr<uint64_t> size = (*file)->Size();
  if (!size.ok()) return size.status();
  if (*size < format::kHeaderBytesV1 + format::kFooterBytes) {
    return Damaged(path, absl::StrCat("only ", *size, " bytes, less than an empty checkpoint"));
  }
  BufferedReader reader(file->get(), *size);
  absl::StatusOr<std::string_view> first_bytes = reader.Read(format::kHeaderBytesV1);
  if (!first_bytes.ok()) return first_bytes.status();
  std::string header_bytes(*first_bytes);  // the first bytes of a header of any version
  absl::StatusOr<size_t> header_size = format::HeaderSize(header_bytes);
  if (header_size.ok() && *header_size > header_bytes.size()) {
    if (reader.remaining() < *header_size - header_bytes.size() + format::kFooterBytes) {
      return Damaged(path, absl::StrCat("only ", *size, " bytes, less than an empty checkpoint"));
    }
    absl::StatusOr<std::string_view> rest = reader.Read(*header_size - header_bytes.size());
    if (!rest.ok()) return rest.status();
    header_bytes.append(*rest);
  }
  absl::StatusOr<format::Header> header = format::DecodeHeader(header_bytes);
  if (!header.ok()) {
    return absl::Status(header.status().code(),
                        absl::StrCat("checkpoint ", path, ": ", header.status().message()));
  }
  if (named_revision && header->revision != *named_revision) {
    return Damaged(path,
                   absl::StrCat("header says revision ", header->revision, ", the name ", *named_revision));
  }
  if (header->base_revision < 0 || header->base_revision > header->revision) {
    return Damaged(path,
                   absl::StrCat("base revision ", header->base_revision, " is not in 0..", header->revision));
  }
  if (header->compact_revision < 0 || header->compact_revision > header->base_revision) {
    return Damaged(path, absl::StrCat("compact revision ", header->compact_revision, " is not in 0..",
                                      header->base_revision));
  }
  uint32_t crc = Crc32cExtend(0, header_bytes.data(), header_bytes.size());

  for (uint64_t i = 0; i < header->entry_count; ++i) {
    if (reader.remaining() < format::kEntryFixedBytes + format::kFooterBytes) {
      return Damaged(path, absl::StrCat("truncated at entry ", i, " of ", header->entry_count));
    }
    absl::StatusOr<std::string_view> fixed_bytes = reader.Read(format::kEntryFixedBytes);
    if (!fixed_bytes.ok()) return fixed_bytes.status();
    crc = Crc32cExtend(crc, fixed_bytes->data(), fixed_bytes->size());
    const format::EntryFixed fixed = format::DecodeEntryFixed(fixed_bytes->data());
    const uint64_t data_bytes = uint64_t{fixed.key_bytes} + fixed.value_bytes;
    if (data_bytes > reader.remaining() - format::kFooterBytes) {
      return Damaged(path, absl::StrCat("entry ", i, " claims ", data_bytes, " bytes of key and value; ",
                                        reader.remaining() - format::kFooterBytes, " remain"));
    }
    absl::StatusOr<std::string_view> data = reader.Read(data_bytes);
    if (!data.ok()) return data.status();
    crc = Crc32cExtend(crc, data->data(), data->size());
    if (visitor != nullptr) {
      CheckpointEntry entry;
      entry.key = std::string_view(data->data(), fixed.key_bytes);
      entry.value = std::string_view(data->data() + fixed.key_bytes, fixed.value_bytes);
      entry.create_revision = fixed.create_revision;
      entry.mod_revision = fixed.mod_revision;
      entry.version = fixed.version;
      entry.lease = fixed.lease;
      if (absl::Status s = (*visitor)(entry); !s.ok()) return s;
    }
  }
  for (uint64_t i = 0; i < header->lease_count; ++i) {
    if (reader.remaining() < format::kLeaseBytes + format::kFooterBytes) {
      return Damaged(path, absl::StrCat("truncated at lease ", i, " of ", header->lease_count));
    }
    absl::StatusOr<std::string_view> lease_bytes = reader.Read(format::kLeaseBytes);
    if (!lease_bytes.ok()) return lease_bytes.status();
    crc = Crc32cExtend(crc, lease_bytes->data(), lease_bytes->size());
    if (lease_visitor != nullptr) {
      if (absl::Status s = (*lease_visitor)(format::DecodeLease(lease_bytes->data())); !s.ok()) return s;
    }
  }
  for (uint64_t i = 0; i < header->state_count; ++i) {
    if (reader.remaining() < format::kStateFixedBytes + format::kFooterBytes) {
      return Damaged(path, absl::StrCat("truncated at state record ", i, " of ", header->state_count));
    }
    absl::StatusOr<std::string_view> fixed_bytes = reader.Read(format::kStateFixedBytes);
    if (!fixed_bytes.ok()) return fixed_bytes.status();
    crc = Crc32cExtend(crc, fixed_bytes->data(), fixed_bytes->size());
    const auto [kind, length] = format::DecodeStateFixed(fixed_bytes->data());
    if (length > reader.remaining() - format::kFooterBytes) {
      return Damaged(path, absl::StrCat("state record ", i, " claims ", length, " bytes; ",
                                        reader.remaining() - format::kFooterBytes, " remain"));
    }
    absl::StatusOr<std::string_view> data = reader.Read(length);
    if (!data.ok()) return data.status();
    crc = Crc32cExtend(crc, data->data(), data->size());
    if (state_visitor != nullptr) {
      if (absl::Status s = (*state_visitor)(CheckpointStateRecord{kind, *data}); !s.ok()) return s;
    }
  }
  if (reader.remaining() != format::kFooterBytes) {
    return Damaged(path, absl::StrCat(reader.remaining(),
                                      " bytes follow the last entry, lease or state record where the ",
                                      format::kFooterBytes, "-byte footer belongs"));
  }
  absl::StatusOr<std::string_view> footer_bytes = reader.Read(format::kFooterBytes);
  if (!footer_bytes.ok()) return footer_bytes.status();
  absl::StatusOr<uint32_t> stored = format::DecodeFooter(*footer_bytes);
  if (!stored.ok()) return Damaged(path, std::string(stored.status().message()));
  if (*stored != crc) {
    return Damaged(path, absl::StrFormat("CRC mismatch: stored 0x%08x, computed 0x%08x", *stored, crc));
  }
  CheckpointInfo info;
  info.path = path;
  info.revision = header->revision;
  info.compact_revision = header->compact_revision;
  info.base_revision = header->base_revision;
  info.entry_count = header->entry_count;
  info.lease_count = header->lease_count;
  info.state_count = header->state_count;
  info.bytes = *size;
  return info;
}

}  // namespace

std::string CheckpointLoadResult::ToString() const {
  std::string s = loaded ? absl::StrCat("checkpoint: loaded ", loaded->path, " (revision ", loaded->revision,
                                        ", holding revision ", loaded->base_revision, ", ",
                                        loaded->entry_count, " entries)")
                         : std::string("checkpoint: none loaded (starting from revision 0)");
  for (const SkippedCheckpoint& skip : skipped) {
    absl::StrAppend(&s, "; skipped ", skip.path, ": ", skip.reason,
                    skip.renamed_to.empty() ? "" : absl::StrCat(" (kept as ", skip.renamed_to, ")"));
  }
  if (!removed_temporary_files.empty()) {
    absl::StrAppend(&s, "; removed unfinished ", absl::StrJoin(removed_temporary_files, ", "));
  }
  return s;
}

absl::StatusOr<CheckpointInfo> ReadCheckpointHeader(FileSystem* fs, const std::string& path) {
  absl::StatusOr<std::unique_ptr<ReadableFile>> file = fs->OpenReadable(path);
  if (!file.ok()) return file.status();
  absl::StatusOr<uint64_t> size = (*file)->Size();
  if (!size.ok()) return size.status();
  char bytes[format::kHeaderBytes];
  absl::StatusOr<size_t> read = (*file)->ReadAt(0, bytes, std::min<uint64_t>(*size, sizeof(bytes)));
  if (!read.ok()) return read.status();
  const std::string_view view(bytes, *read);
  absl::StatusOr<size_t> header_size = format::HeaderSize(view);
  if (!header_size.ok()) return Damaged(path, std::string(header_size.status().message()));
  if (*read < *header_size) return Damaged(path, "truncated header");
  absl::StatusOr<format::Header> header = format::DecodeHeader(view.substr(0, *header_size));
  if (!header.ok()) return Damaged(path, std::string(header.status().message()));
  CheckpointInfo info;
  info.path = path;
  info.revision = header->revision;
  info.compact_revision = header->compact_revision;
  info.base_revision = header->base_revision;
  info.entry_count = header->entry_count;
  info.lease_count = header->lease_count;
  info.state_count = header->state_count;
  info.bytes = *size;
  return info;
}

absl::StatusOr<CheckpointInfo> VerifyCheckpoint(FileSystem* fs, const std::string& path) {
  return ScanCheckpoint(fs, path, std::nullopt, nullptr);
}

absl::StatusOr<CheckpointInfo> LoadCheckpoint(FileSystem* fs, const std::string& path, int64_t revision,
                                              CheckpointEntryVisitor visitor,
                                              absl::FunctionRef<absl::Status(const CheckpointInfo&)> verified,
                                              const CheckpointLeaseVisitor* lease_visitor,
                                              const CheckpointStateVisitor* state_visitor) {
  absl::StatusOr<CheckpointInfo> info = ScanCheckpoint(fs, path, revision, nullptr);
  if (!info.ok()) return info.status();
  if (absl::Status s = verified(*info); !s.ok()) return s;
  return ScanCheckpoint(fs, path, revision, &visitor, lease_visitor, state_visitor);
}

absl::StatusOr<std::string> SetCheckpointAside(FileSystem* fs, const std::string& dir,
                                               const CheckpointFile& file) {
  // A name the next load skips and RemoveOldCheckpoints recognizes.
  const std::string corrupt = JoinPath(dir, format::FileName(file.revision, format::kCorruptSuffix));
  if (absl::Status s = fs->Rename(file.path, corrupt); !s.ok()) return s;
  if (absl::Status s = fs->SyncDirectory(dir); !s.ok()) return s;
  return corrupt;
}

absl::StatusOr<std::vector<std::string>> RemoveTemporaryCheckpoints(FileSystem* fs, const std::string& dir) {
  std::vector<std::string> removed;
  absl::StatusOr<std::vector<std::string>> names = fs->ListDirectory(dir);
  if (absl::IsNotFound(names.status())) return removed;
  if (!names.ok()) return names.status();
  for (const std::string& name : *names) {
    if (!format::ParseFileName(name, format::kTemporarySuffix)) continue;
    const std::string path = JoinPath(dir, name);
    if (absl::Status s = fs->Remove(path); !s.ok()) return s;
    removed.push_back(path);
  }
  if (!removed.empty()) {
    if (absl::Status s = fs->SyncDirectory(dir); !s.ok()) return s;
  }
  return removed;
}

absl::StatusOr<CheckpointLoadResult> LoadNewestValidCheckpoint(FileSystem* fs, const std::string& dir,
                                                               CheckpointEntryVisitor visitor,
                                                               const CheckpointLeaseVisitor* lease_visitor,
                                                               const CheckpointStateVisitor* state_visitor) {
  CheckpointLoadResult result;
  // Only a load (at startup, before any writer runs) may remove .tmp files: a crash left them unfinished.
  absl::StatusOr<std::vector<std::string>> removed = RemoveTemporaryCheckpoints(fs, dir);
  if (!removed.ok()) return removed.status();
  result.removed_temporary_files = *std::move(removed);
  absl::StatusOr<std::vector<CheckpointFile>> files = ListCheckpoints(fs, dir);
  if (absl::IsNotFound(files.status())) return result;
  if (!files.ok()) return files.status();
  for (auto it = files->rbegin(); it != files->rend(); ++it) {
    absl::StatusOr<CheckpointInfo> verified = ScanCheckpoint(fs, it->path, it->revision, nullptr);
    if (verified.ok()) {
      absl::StatusOr<CheckpointInfo> loaded =
          ScanCheckpoint(fs, it->path, it->revision, &visitor, lease_visitor, state_visitor);
      if (!loaded.ok()) return loaded.status();  // the visitor has seen entries: no fallback now
      result.loaded = *std::move(loaded);
      break;
    }
    if (verified.status().code() != absl::StatusCode::kDataLoss) return verified.status();
    // Corrupt: keep it for inspection.
    SkippedCheckpoint skip{it->path, it->revision, std::string(verified.status().message()), ""};
    if (absl::StatusOr<std::string> aside = SetCheckpointAside(fs, dir, *it); aside.ok()) {
      skip.renamed_to = *std::move(aside);
    }
    result.skipped.push_back(std::move(skip));
  }
  return result;
}

}  // namespace revkv::server
