// etcd's errors for the KV API, with the gRPC-compatible codes and the exact messages etcd 3.4 uses
// (its client libraries match on them). The RPC layer maps absl::StatusCode to grpc::StatusCode one to
// one.
#pragma once

#include <cerrno>
#include <optional>

#include "absl/status/status.h"
#include "server/wal/file_system.h"

namespace revkv::server::errors {

inline absl::Status EmptyKey() { return absl::InvalidArgumentError("etcdserver: key is not provided"); }
inline absl::Status KeyNotFound() { return absl::InvalidArgumentError("etcdserver: key not found"); }
inline absl::Status ValueProvided() { return absl::InvalidArgumentError("etcdserver: value is provided"); }
inline absl::Status LeaseProvided() { return absl::InvalidArgumentError("etcdserver: lease is provided"); }
inline absl::Status TooManyOps() {
  return absl::InvalidArgumentError("etcdserver: too many operations in txn request");
}
inline absl::Status DuplicateKey() {
  return absl::InvalidArgumentError("etcdserver: duplicate key given in txn request");
}
inline absl::Status Compacted() {
  return absl::OutOfRangeError("etcdserver: mvcc: required revision has been compacted");
}
inline absl::Status FutureRevision() {
  return absl::OutOfRangeError("etcdserver: mvcc: required revision is a future revision");
}
inline absl::Status RequestTooLarge() {
  return absl::InvalidArgumentError("etcdserver: request is too large");
}
inline absl::Status LeaseNotFound() { return absl::NotFoundError("etcdserver: requested lease not found"); }
inline absl::Status LeaseExists() {
  return absl::FailedPreconditionError("etcdserver: lease already exists");
}
inline absl::Status LeaseTtlTooLarge() { return absl::OutOfRangeError("etcdserver: too large lease TTL"); }
inline absl::Status NoSpace() {
  return absl::ResourceExhaustedError("etcdserver: mvcc: database space exceeded");
}
inline absl::Status Corrupt() { return absl::DataLossError("etcdserver: corrupt cluster"); }

// Auth (etcd's rpctypes.ErrGRPC* for auth/store.go's errors).
inline absl::Status RootUserNotExist() {
  return absl::FailedPreconditionError("etcdserver: root user does not exist");
}
inline absl::Status RootRoleNotExist() {
  return absl::FailedPreconditionError("etcdserver: root user does not have root role");
}
inline absl::Status UserAlreadyExists() {
  return absl::FailedPreconditionError("etcdserver: user name already exists");
}
inline absl::Status UserEmpty() { return absl::InvalidArgumentError("etcdserver: user name is empty"); }
inline absl::Status UserNotFound() {
  return absl::FailedPreconditionError("etcdserver: user name not found");
}
inline absl::Status RoleAlreadyExists() {
  return absl::FailedPreconditionError("etcdserver: role name already exists");
}
inline absl::Status RoleNotFound() {
  return absl::FailedPreconditionError("etcdserver: role name not found");
}
inline absl::Status RoleEmpty() { return absl::InvalidArgumentError("etcdserver: role name is empty"); }
inline absl::Status AuthFailed() {
  return absl::InvalidArgumentError("etcdserver: authentication failed, invalid user ID or password");
}
inline absl::Status PermissionDenied() {
  return absl::PermissionDeniedError("etcdserver: permission denied");
}
inline absl::Status RoleNotGranted() {
  return absl::FailedPreconditionError("etcdserver: role is not granted to the user");
}
inline absl::Status PermissionNotGranted() {
  return absl::FailedPreconditionError("etcdserver: permission is not granted to the role");
}
inline absl::Status AuthNotEnabled() {
  return absl::FailedPreconditionError("etcdserver: authentication is not enabled");
}
inline absl::Status InvalidAuthToken() {
  return absl::UnauthenticatedError("etcdserver: invalid auth token");
}
inline absl::Status InvalidAuthManagement() {
  return absl::InvalidArgumentError("etcdserver: invalid auth management");
}
// etcd maps this one to no gRPC error of its own: a client sees codes.Unknown with the auth store's text.
inline absl::Status NoPasswordUser() {
  return absl::UnknownError("auth: authentication failed, password was given for no password user");
}

// True if a log or disk status says the disk is full (ENOSPC), or the quota is (EDQUOT).
inline bool IsNoSpace(const absl::Status& s) {
  const std::optional<int> error_number = ErrnoOf(s);
  return error_number.has_value() && (*error_number == ENOSPC || *error_number == EDQUOT);
}

// What a client gets for a write the log could not take or make durable (`log` is the log's status,
// e.g. Wal::failed_status()). A full disk is etcd's answer under its NOSPACE alarm, "etcdserver: mvcc:
// database space exceeded" (ResourceExhausted; etcd's clients match on the message, so it carries no
// detail: the detail stays in the log's status, which Engine::write_status, the Status RPC and the
// server log show). Any other failure (an I/O error, a log closed by shutdown) is Unavailable with the
// log's message, which names the operation, the file and the error. OK stays OK.
inline absl::Status LogFailure(const absl::Status& log) {
  if (log.ok()) return log;
  if (IsNoSpace(log)) return NoSpace();
  return absl::UnavailableError(log.message());
}

}  // namespace revkv::server::errors
