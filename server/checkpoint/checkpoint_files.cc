// Housekeeping of the checkpoint directory: naming, listing, and removing old checkpoints.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/checkpoint/checkpoint.h"
#include "server/checkpoint/checkpoint_format.h"

namespace revkv::server {

namespace format = checkpoint_format;

std::string CheckpointFileName(int64_t revision) {
  return format::FileName(revision, format::kCompleteSuffix);
}

absl::StatusOr<std::vector<CheckpointFile>> ListCheckpoints(FileSystem* fs, const std::string& dir) {
  absl::StatusOr<std::vector<std::string>> names = fs->ListDirectory(dir);
  if (!names.ok()) return names.status();
  std::vector<CheckpointFile> files;
  for (const std::string& name : *names) {
    if (std::optional<int64_t> revision = format::ParseFileName(name, format::kCompleteSuffix)) {
      files.push_back({JoinPath(dir, name), *revision});
    }
  }
  std::sort(files.begin(), files.end(),
            [](const CheckpointFile& a, const CheckpointFile& b) { return a.revision < b.revision; });
  return files;
}

absl::StatusOr<std::vector<std::string>> RemoveOldCheckpoints(FileSystem* fs, const std::string& dir,
                                                              int keep) {
  if (keep < 1) return absl::InvalidArgumentError("checkpoint: must keep at least one checkpoint");
  absl::StatusOr<std::vector<CheckpointFile>> files = ListCheckpoints(fs, dir);
  if (!files.ok()) return files.status();
  std::vector<std::string> removed;
  if (files->size() <= static_cast<size_t>(keep)) return removed;
  const size_t doomed = files->size() - static_cast<size_t>(keep);
  const int64_t oldest_kept = (*files)[doomed].revision;
  for (size_t i = 0; i < doomed; ++i) {
    if (absl::Status s = fs->Remove((*files)[i].path); !s.ok()) return s;
    removed.push_back((*files)[i].path);
  }
  absl::StatusOr<std::vector<std::string>> names = fs->ListDirectory(dir);
  if (!names.ok()) return names.status();
  for (const std::string& name : *names) {
    std::optional<int64_t> revision = format::ParseFileName(name, format::kCorruptSuffix);
    if (revision && *revision < oldest_kept) {
      const std::string path = JoinPath(dir, name);
      if (absl::Status s = fs->Remove(path); !s.ok()) return s;
      removed.push_back(path);
    }
  }
  if (absl::Status s = fs->SyncDirectory(dir); !s.ok()) return s;
  return removed;
}

}  // namespace revkv::server
