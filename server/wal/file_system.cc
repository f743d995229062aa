// Helpers shared by every FileSystem implementation: path joining and errno-to-status conversion.
#include "server/wal/file_system.h"

#include "absl/strings/str_cat.h"

namespace revkv::server {

std::string JoinPath(std::string_view dir, std::string_view name) {
  if (dir.empty()) return std::string(name);
  if (dir.back() == '/') return absl::StrCat(dir, name);
  return absl::StrCat(dir, "/", name);
}

absl::Status IoError(std::string_view operation, std::string_view path, int error_number) {
  // ErrnoToStatus appends ": <strerror text>" and maps the code (ENOSPC -> kResourceExhausted, ...).
  return absl::ErrnoToStatus(error_number, absl::StrCat(operation, " of ", path, " failed"));
}

}  // namespace revkv::server
