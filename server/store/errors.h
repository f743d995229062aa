// etcd's errors for the KV API, with the gRPC-compatible codes and the exact messages etcd 3.4 uses
// (its client libraries match on them). The RPC layer maps absl::StatusCode to grpc::StatusCode one to
// one.
#pragma once

#include "absl/status/status.h"

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
inline absl::Status NoSpace() {
  return absl::ResourceExhaustedError("etcdserver: mvcc: database space exceeded");
}

}  // namespace revkv::server::errors
