// Exit statuses carried as a payload on absl::Status.
#include "clients/cli/exit_status.h"

#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"

namespace revkv::client {
namespace {

// The payload key under which a status carries its exit status (as decimal text).
constexpr absl::string_view kExitStatusPayload = "type.revkv.dev/revkv.cli.ExitStatus";

absl::Status WithExitStatus(absl::Status status, int exit_status) {
  status.SetPayload(kExitStatusPayload, absl::Cord(std::to_string(exit_status)));
  return status;
}

}  // namespace

absl::Status UsageError(absl::string_view message) {
  return WithExitStatus(absl::InvalidArgumentError(message), kExitUsage);
}

absl::Status NotFoundExit(absl::string_view message) {
  return WithExitStatus(absl::NotFoundError(message), kExitNotFound);
}

int ExitStatusOf(const absl::Status& status) {
  if (status.ok()) return kExitOk;
  const auto payload = status.GetPayload(kExitStatusPayload);
  int exit_status = kExitError;
  if (payload.has_value() && absl::SimpleAtoi(std::string(*payload), &exit_status)) return exit_status;
  return kExitError;
}

}  // namespace revkv::client
