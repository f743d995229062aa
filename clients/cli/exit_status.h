// How a revkv command ends: the exit status a failed command maps to, carried on its absl::Status.
//
// Every command returns an absl::Status. OK exits 0; a status made by UsageError exits 2; a status made
// by NotFoundExit exits 3; every other error (an unreachable server, an etcd error, a local I/O error)
// exits 1. main prints the message of a failed status as "revkv: <message>" on stderr.
#ifndef REVKV_CLIENTS_CLI_EXIT_STATUS_H_
#define REVKV_CLIENTS_CLI_EXIT_STATUS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace revkv::client {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;     // unreachable server, etcd error, I/O error
inline constexpr int kExitUsage = 2;     // bad flags, arguments or txn text
inline constexpr int kExitNotFound = 3;  // `get` of a key that does not exist

// An INVALID_ARGUMENT status that exits with kExitUsage.
absl::Status UsageError(absl::string_view message);

// A NOT_FOUND status that exits with kExitNotFound.
absl::Status NotFoundExit(absl::string_view message);

// The exit status for `status`: kExitOk when it is OK, else the one it was made with, else kExitError.
int ExitStatusOf(const absl::Status& status);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_CLI_EXIT_STATUS_H_
