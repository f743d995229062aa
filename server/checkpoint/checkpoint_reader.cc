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
                                              const CheckpointEntryVisitor* visitor) {
  absl::StatusOr<std::unique_ptr<ReadableFile>> file = fs->OpenReadable(path);
  if (!file.ok()) return file.status();
  absl::StatusOr<uint64_t> size = (*file)->Size();
  if (!size.ok()) return size.status();
  if (*size < format::kHeaderBytes + format::kFooterBytes) {
    return Damaged(path, absl::StrCat("only ", *size, " bytes, less than an empty checkpoint"));
  }
  BufferedReader reader(file->get(), *size);
  absl::StatusOr<std::string_view> header_bytes = reader.Read(format::kHeaderBytes);
  if (!header_bytes.ok()) return header_bytes.status();
  absl::StatusOr<format::Header> header = format::DecodeHeader(*header_bytes);
  if (!header.ok()) {
    return absl::Status(header.status().code(),
                        absl::StrCat("checkpoint ", path, ": ", header.status().message()));
  }
  if (named_revision && header->revision != *named_revision) {
    return Damaged(path,
                   absl::StrCat("header says revision ", header->revision, ", the name ", *named_revision));
  }
  if (header->compact_revision < 0 || header->compact_revision > header->revision) {
    return Damaged(path, absl::StrCat("compact revision ", header->compact_revision, " is not in 0..",
                                      header->revision));
  }
  uint32_t crc = Crc32cExtend(0, header_bytes->data(), header_bytes->size());

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
  if (reader.remaining() != format::kFooterBytes) {
    return Damaged(path, absl::StrCat(reader.remaining(), " bytes follow the last entry where the ",
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
  info.entry_count = header->entry_count;
  info.bytes = *size;
  return info;
}

}  // namespace

std::string CheckpointLoadResult::ToString() const {
  std::string s = loaded ? absl::StrCat("checkpoint: loaded ", loaded->path, " (revision ", loaded->revision,
                                        ", ", loaded->entry_count, " entries)")
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

absl::StatusOr<CheckpointInfo> VerifyCheckpoint(FileSystem* fs, const std::string& path) {
  return ScanCheckpoint(fs, path, std::nullopt, nullptr);
}

absl::StatusOr<CheckpointLoadResult> LoadNewestValidCheckpoint(FileSystem* fs, const std::string& dir,
                                                               CheckpointEntryVisitor visitor) {
  CheckpointLoadResult result;
  absl::StatusOr<std::vector<std::string>> names = fs->ListDirectory(dir);
  if (absl::IsNotFound(names.status())) return result;
  if (!names.ok()) return names.status();

  bool directory_changed = false;
  std::vector<std::pair<int64_t, std::string>> candidates;  // (revision, path)
  for (const std::string& name : *names) {
    if (format::ParseFileName(name, format::kTemporarySuffix)) {
      // Only a load (at startup, before any writer runs) may remove these: a crash left them unfinished.
      const std::string path = JoinPath(dir, name);
      if (absl::Status s = fs->Remove(path); !s.ok()) return s;
      result.removed_temporary_files.push_back(path);
      directory_changed = true;
    } else if (std::optional<int64_t> revision = format::ParseFileName(name, format::kCompleteSuffix)) {
      candidates.emplace_back(*revision, JoinPath(dir, name));
    }
  }
  std::sort(candidates.begin(), candidates.end(), std::greater<>());

  for (const auto& [revision, path] : candidates) {
    absl::StatusOr<CheckpointInfo> verified = ScanCheckpoint(fs, path, revision, nullptr);
    if (verified.ok()) {
      absl::StatusOr<CheckpointInfo> loaded = ScanCheckpoint(fs, path, revision, &visitor);
      if (!loaded.ok()) return loaded.status();  // the visitor has seen entries: no fallback now
      result.loaded = *std::move(loaded);
      break;
    }
    if (verified.status().code() != absl::StatusCode::kDataLoss) return verified.status();
    // Corrupt: keep it for inspection under a name the next load and RemoveOldCheckpoints recognize.
    SkippedCheckpoint skip{path, std::string(verified.status().message()), ""};
    const std::string corrupt = JoinPath(dir, format::FileName(revision, format::kCorruptSuffix));
    if (fs->Rename(path, corrupt).ok()) {
      skip.renamed_to = corrupt;
      directory_changed = true;
    }
    result.skipped.push_back(std::move(skip));
  }
  if (directory_changed) {
    if (absl::Status s = fs->SyncDirectory(dir); !s.ok()) return s;
  }
  return result;
}

}  // namespace revkv::server
