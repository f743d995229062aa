// Channel creation and the transport flags.
#include "clients/common/transport.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/support/channel_arguments.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "clients/common/duration_flag.h"

namespace revkv::client {
namespace {

// The channel argument that makes channels of different connection indexes differ, so that gRPC never
// shares a subchannel (and thus a TCP connection) between them.
constexpr char kConnectionIndexArg[] = "revkv.connection_index";

absl::StatusOr<std::string> ReadPem(const std::string& path, absl::string_view flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(flag, ": cannot read ", path));
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().empty()) return absl::InvalidArgumentError(absl::StrCat(flag, ": ", path, " is empty"));
  return text.str();
}

}  // namespace

void AddTransportFlags(CLI::App& app, TransportOptions* options) {
  app.add_option("--cacert", options->cacert, "verify the server's certificate with this CA bundle (PEM)");
  app.add_option("--cert", options->cert, "client certificate (PEM), for mutual TLS");
  app.add_option("--key", options->key, "client certificate's private key (PEM)");
  AddDurationOption(app, "--dial-timeout", &options->dial_timeout, "how long to wait for a connection");
}

absl::StatusOr<ChannelFactory> ChannelFactory::Create(const TransportOptions& options) {
  ChannelFactory factory;
  factory.options_ = options;
  if (options.cert.empty() != options.key.empty()) {
    return absl::InvalidArgumentError("--cert and --key go together");
  }
  if (!options.cacert.empty()) {
    absl::StatusOr<std::string> pem = ReadPem(options.cacert, "--cacert");
    if (!pem.ok()) return pem.status();
    factory.ssl_.pem_root_certs = *std::move(pem);
  }
  if (!options.cert.empty()) {
    absl::StatusOr<std::string> cert = ReadPem(options.cert, "--cert");
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadPem(options.key, "--key");
    if (!key.ok()) return key.status();
    factory.ssl_.pem_cert_chain = *std::move(cert);
    factory.ssl_.pem_private_key = *std::move(key);
  }
  factory.tls_files_ = !options.cacert.empty() || !options.cert.empty();
  return factory;
}

std::shared_ptr<grpc::Channel> ChannelFactory::Connect(const Endpoint& endpoint, int connection_index) const {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(kConnectionIndexArg, connection_index);
  args.SetMaxReceiveMessageSize(-1);  // a range may return more than gRPC's 4 MiB default
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      UsesTls(endpoint) ? grpc::SslCredentials(ssl_) : grpc::InsecureChannelCredentials();
  return grpc::CreateCustomChannel(endpoint.target, credentials, args);
}

}  // namespace revkv::client
