// Conversions between absl::Status (the domain) and grpc::Status (the wire). absl's codes are gRPC's
// codes, so the conversion keeps the code and the message; etcd's clients match on both.
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace revkv::server {

inline grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

// The status of a write whose log record could not be made durable: a full disk is etcd's
// "database space exceeded" code (ResourceExhausted), any other failure Unavailable; the message
// says what failed.
inline grpc::Status WriteFailure(const absl::Status& s) {
  const bool no_space = s.message().find("No space left on device") != std::string_view::npos;
  return grpc::Status(no_space ? grpc::StatusCode::RESOURCE_EXHAUSTED : grpc::StatusCode::UNAVAILABLE,
                      std::string(s.message()));
}

}  // namespace revkv::server
