// The gRPC server credentials for a TlsConfig: plaintext, TLS, or TLS requiring client certificates.
// Shared by the recovering server and the serving one, so a client meets the same TLS on the port
// before and after recovery.
#pragma once

#include <grpcpp/security/server_credentials.h>

#include <memory>

#include "absl/status/statusor.h"
#include "server/config/config.h"

namespace revkv::server {

// Reads the PEM files `tls` names. InvalidArgument "cannot read <path>" if one cannot be read. Blocks
// on disk I/O.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(const TlsConfig& tls);

}  // namespace revkv::server
