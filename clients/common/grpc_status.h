// gRPC status helpers shared by the clients.
#ifndef REVKV_CLIENTS_COMMON_GRPC_STATUS_H_
#define REVKV_CLIENTS_COMMON_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace revkv::client {

// The canonical upper-case name of a gRPC code ("UNAVAILABLE"); "CODE_UNKNOWN" outside gRPC's range.
const char* StatusCodeName(grpc::StatusCode code);

// The same status as an absl::Status (gRPC and absl share code numbers); the message, which for etcd
// errors is etcd's text ("etcdserver: mvcc: required revision has been compacted"), is kept.
absl::Status ToAbslStatus(const grpc::Status& status);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_COMMON_GRPC_STATUS_H_
