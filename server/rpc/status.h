// Conversions between absl::Status (the domain) and grpc::Status (the wire). absl's codes are gRPC's
// codes, so the conversion keeps the code and the message; etcd's clients match on both.
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "server/store/errors.h"

namespace revkv::server {

inline grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

// The status of a write whose log record could not be made durable (errors::LogFailure): a full disk
// is etcd's "etcdserver: mvcc: database space exceeded" (ResourceExhausted), any other failure
// Unavailable with a message that says what failed.
inline grpc::Status WriteFailure(const absl::Status& s) { return ToGrpc(errors::LogFailure(s)); }

}  // namespace revkv::server
