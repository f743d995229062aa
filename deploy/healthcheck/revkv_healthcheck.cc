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
// Debian ships the health service's server side in libgrpc++ but no client stubs, so the call goes
// through grpc::GenericStub with the two messages encoded by hand. Both are tiny protobuf messages:
//   HealthCheckRequest  { string service = 1; }
//   HealthCheckResponse { ServingStatus status = 1; }   // UNKNOWN 0, SERVING 1, NOT_SERVING 2
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
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

namespace {

constexpr int kExitServing = 0;
constexpr int kExitNotServing = 1;
constexpr int kExitUsage = 2;
constexpr char kCheckMethod[] = "/grpc.health.v1.Health/Check";

// HealthCheckRequest with field 1 (`service`, length-delimited) set when non-empty; proto3 leaves an
// empty string out, so the request for the whole server is zero bytes.
std::string EncodeRequest(const std::string& service) {
  std::string out;
  if (service.empty()) return out;
  out.push_back(static_cast<char>((1 << 3) | 2));  // field 1, wire type 2 (length-delimited)
  uint64_t length = service.size();                // the length as a varint, 7 bits a byte
  while (length >= 0x80) {
    out.push_back(static_cast<char>((length & 0x7f) | 0x80));
    length >>= 7;
  }
  out.push_back(static_cast<char>(length));
  return out + service;
}

// The `status` field of a HealthCheckResponse, or nullopt when the bytes are not one. Fields other than
// 1 are skipped, as a protobuf parser would; a missing field 1 is UNKNOWN (0).
std::optional<uint64_t> DecodeStatus(const std::string& bytes) {
  size_t i = 0;
  auto varint = [&]() -> std::optional<uint64_t> {
    uint64_t value = 0;
    for (int shift = 0; shift < 64 && i < bytes.size(); shift += 7) {
      const auto b = static_cast<uint8_t>(bytes[i++]);
      value |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return value;
    }
    return std::nullopt;
  };
  uint64_t status = 0;
  while (i < bytes.size()) {
    const std::optional<uint64_t> tag = varint();
    if (!tag) return std::nullopt;
    const uint64_t field = *tag >> 3, type = *tag & 7;
    if (type == 0) {
      const std::optional<uint64_t> v = varint();
      if (!v) return std::nullopt;
      if (field == 1) status = *v;
    } else if (type == 2) {
      const std::optional<uint64_t> len = varint();
      if (!len || *len > bytes.size() - i) return std::nullopt;
      i += *len;
    } else if (type == 1 || type == 5) {
      const size_t width = type == 1 ? 8 : 4;
      if (width > bytes.size() - i) return std::nullopt;
      i += width;
    } else {
      return std::nullopt;
    }
  }
  return status;
}

// The file's contents, or nullopt when it cannot be read.
std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const char* StatusName(uint64_t status) {
  switch (status) {
    case 0:
      return "UNKNOWN";
    case 1:
      return "SERVING";
    case 2:
      return "NOT_SERVING";
    case 3:
      return "SERVICE_UNKNOWN";
    default:
      return "an unknown status";
  }
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

  grpc::GenericStub stub(grpc::CreateChannel(endpoint, credentials));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::microseconds(static_cast<int64_t>(timeout_seconds * 1e6)));
  context.set_wait_for_ready(true);  // a server still starting is waited for, up to the deadline

  const std::string request_bytes = EncodeRequest(service);
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::CompletionQueue queue;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
      stub.PrepareUnaryCall(&context, kCheckMethod, request, &queue);
  call->StartCall();
  grpc::ByteBuffer response;
  grpc::Status status;
  call->Finish(&response, &status, nullptr);
  void* tag = nullptr;
  bool ok = false;
  queue.Next(&tag, &ok);
  queue.Shutdown();
  while (queue.Next(&tag, &ok)) {
  }

  if (!status.ok()) {
    if (!quiet) {
      std::fprintf(stderr, "revkv-healthcheck: %s: %s\n", endpoint.c_str(), status.error_message().c_str());
    }
    return kExitNotServing;
  }
  std::vector<grpc::Slice> slices;
  std::string response_bytes;
  if (response.Dump(&slices).ok()) {
    for (const grpc::Slice& s : slices)
      response_bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  const std::optional<uint64_t> serving = DecodeStatus(response_bytes);
  if (!serving) {
    if (!quiet) std::fprintf(stderr, "revkv-healthcheck: %s: malformed health response\n", endpoint.c_str());
    return kExitNotServing;
  }
  if (!quiet) std::printf("%s: %s\n", endpoint.c_str(), StatusName(*serving));
  return *serving == 1 ? kExitServing : kExitNotServing;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
