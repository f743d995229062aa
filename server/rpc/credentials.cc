// gRPC server credentials from the TLS settings (credentials.h).
#include "server/rpc/credentials.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace revkv::server {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read ", path));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(const TlsConfig& tls) {
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options;
  absl::StatusOr<std::string> cert = ReadFile(tls.cert_file);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadFile(tls.key_file);
  if (!key.ok()) return key.status();
  options.pem_key_cert_pairs.push_back({*key, *cert});
  if (!tls.trusted_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadFile(tls.trusted_ca_file);
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
  }
  options.client_certificate_request = tls.client_cert_auth
                                           ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                           : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE;
  return grpc::SslServerCredentials(options);
}

}  // namespace revkv::server
