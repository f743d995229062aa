// revkv-healthcheck: asks a gRPC server's grpc.health.v1.Health/Check whether it is serving, and says
// so in its exit status. It is the container image's HEALTHCHECK and a probe for scripts; Kubernetes
// probes the same service natively (`grpc:` probes).
//
//   revkv-healthcheck                                  # 127.0.0.1:2379, the whole server ("")
//   revkv-healthcheck --endpoint 10.0.0.5:2379 --timeout 1s
//   revkv-healthcheck --cacert ca.crt --cert client.crt --key client.key   # TLS, mutual TLS
//
// Exit status: 0 SERVING; 1 NOT_SERVING, UNKNOWN, or no answer within --timeout; 2 bad options.
//
// Debian ships the health service's server side in libgrpc++ but no client stubs: the stubs come from
// protoc and gRPC's plugin over proto/grpc/health/v1/health.proto (revkv_health_proto).
#include <grpcpp/create_channel.h>
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "grpc/health/v1/health.grpc.pb.h"

namespace {

constexpr int kExitServing = 0;
constexpr int kExitNotServing = 1;
constexpr int kExitUsage = 2;
// The file's contents, or nullopt when it cannot be read.
std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int Main(int argc, char** argv) {
  std::string endpoint = "127.0.0.1:2379";
  std::string service;
  double timeout_seconds = 2.0;
  std::string cacert, cert, key;
  bool quiet = false;

  CLI::App app("revkv-healthcheck: exits 0 when a gRPC server's grpc.health.v1 service answers SERVING");
  app.add_option("--endpoint", endpoint, "host:port of the gRPC server")->capture_default_str();
  app.add_option("--service", service, "service name to ask about; empty: the whole server")
      ->capture_default_str();
  app.add_option("--timeout", timeout_seconds, "seconds to wait for the answer, connecting included")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--cacert", cacert, "TLS: PEM file of the CAs that verify the server (turns TLS on)");
  app.add_option("--cert", cert, "TLS: PEM client certificate (with --key: mutual TLS)");
  app.add_option("--key", key, "TLS: PEM private key of --cert");
  app.add_flag("--quiet,-q", quiet, "print nothing; the exit status tells");
  app.footer("Exit status: 0 SERVING; 1 not serving or no answer within --timeout; 2 bad options.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitServing : kExitUsage;
  }
  if (cert.empty() != key.empty()) {
    std::fprintf(stderr, "revkv-healthcheck: --cert and --key go together\n");
    return kExitUsage;
  }

  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!cacert.empty() || !cert.empty()) {
    grpc::SslCredentialsOptions ssl;
    for (auto [path, field] : {std::pair{&cacert, &ssl.pem_root_certs}, std::pair{&cert, &ssl.pem_cert_chain},
                               std::pair{&key, &ssl.pem_private_key}}) {
      if (path->empty()) continue;
      std::optional<std::string> pem = ReadFile(*path);
      if (!pem) {
        std::fprintf(stderr, "revkv-healthcheck: cannot read %s\n", path->c_str());
        return kExitUsage;
      }
      *field = *std::move(pem);
    }
    credentials = grpc::SslCredentials(ssl);
  }

  auto health = grpc::health::v1::Health::NewStub(grpc::CreateChannel(endpoint, credentials));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::microseconds(static_cast<int64_t>(timeout_seconds * 1e6)));
  context.set_wait_for_ready(true);  // a server still starting is waited for, up to the deadline
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = health->Check(&context, request, &response);
  if (!status.ok()) {
    if (!quiet) {
      std::fprintf(stderr, "revkv-healthcheck: %s: %s\n", endpoint.c_str(), status.error_message().c_str());
    }
    return kExitNotServing;
  }
  if (!quiet) {
    std::printf("%s: %s\n", endpoint.c_str(),
                grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status()).c_str());
  }
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING ? kExitServing : kExitNotServing;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
