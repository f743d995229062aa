// Helpers shared by every FileSystem implementation: path joining and errno-to-status conversion.
#include "server/wal/file_system.h"

#include <cerrno>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace revkv::server {

std::string JoinPath(std::string_view dir, std::string_view name) {
  std::string path(dir);
  if (!path.empty() && path.back() != '/') path += '/';
  path += name;
  return path;
}

std::string NumberedFileName(std::string_view prefix, int64_t number, std::string_view suffix) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string name(prefix);
  for (int shift = 60; shift >= 0; shift -= 4) {
    name += kDigits[(static_cast<uint64_t>(number) >> shift) & 0xF];
  }
  name += suffix;
  return name;
}

std::optional<int64_t> ParseNumberedFileName(std::string_view name, std::string_view prefix,
                                             std::string_view suffix) {
  if (name.size() != prefix.size() + 16 + suffix.size() || name.substr(0, prefix.size()) != prefix ||
      name.substr(prefix.size() + 16) != suffix) {
    return std::nullopt;
  }
  uint64_t value = 0;
  for (char c : name.substr(prefix.size(), 16)) {
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

namespace {
// The payload naming the errno: callers tell a full disk from other errors without parsing messages
// (RESOURCE_EXHAUSTED also stands for EMFILE, ENOMEM, ...).
constexpr absl::string_view kErrnoPayload = "type.revkv.dev/errno";
}  // namespace

absl::Status IoError(const char* operation, const std::string& path, int error_number) {
  // ErrnoToStatus appends ": <strerror text>" and maps the code (ENOSPC -> kResourceExhausted, ...). It
  // maps EIO to kUnknown; an I/O error on a log or checkpoint means data may be lost, so kDataLoss.
  absl::Status status = absl::ErrnoToStatus(error_number, absl::StrCat(operation, " of ", path, " failed"));
  if (error_number == EIO) status = absl::DataLossError(status.message());
  status.SetPayload(kErrnoPayload, absl::Cord(std::to_string(error_number)));
  return status;
}

std::optional<int> ErrnoOf(const absl::Status& status) {
  const absl::optional<absl::Cord> payload = status.GetPayload(kErrnoPayload);
  int error_number = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &error_number)) return std::nullopt;
  return error_number;
}

}  // namespace revkv::server
