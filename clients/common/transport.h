// Channels to revkv (or etcd) endpoints, with etcdctl's transport flags.
//
// Flags (AddTransportFlags): --cacert, --cert, --key as etcdctl spells them, and --dial-timeout. A
// connection uses TLS when its endpoint is written https:// or when any of the three PEM files is given;
// otherwise it is plaintext (etcdctl's default, --insecure-transport=true).
#ifndef REVKV_CLIENTS_COMMON_TRANSPORT_H_
#define REVKV_CLIENTS_COMMON_TRANSPORT_H_

#include <grpcpp/channel.h>
#include <grpcpp/security/credentials.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "clients/common/endpoint.h"

namespace CLI {
class App;
}  // namespace CLI

namespace revkv::client {

struct TransportOptions {
  std::string cacert;  // PEM file of the CAs that verify the server; empty: the system's roots
  std::string cert;    // PEM file of the client certificate (with key: mutual TLS)
  std::string key;     // PEM file of the client certificate's private key
  absl::Duration dial_timeout = absl::Seconds(2);  // how long a client waits for a first connection
};

// Adds --cacert, --cert, --key and --dial-timeout to `app`, stored into `*options` (which must outlive
// the parse).
void AddTransportFlags(CLI::App& app, TransportOptions* options);

// Makes gRPC channels for endpoints. Const-safe only: Connect may be called from any thread.
class ChannelFactory {
 public:
  // Reads the PEM files named in `options`. INVALID_ARGUMENT when only one of --cert/--key is given,
  // NOT_FOUND naming the file when one cannot be read.
  static absl::StatusOr<ChannelFactory> Create(const TransportOptions& options);

  // A new channel to `endpoint`. Channels made with different `connection_index` values never share a
  // TCP connection (each has its own subchannel pool and distinct arguments); the same index may reuse
  // one. The channel connects lazily, on its first call or WaitForConnected. Never fails: a bad address
  // shows up as UNAVAILABLE on the first call.
  std::shared_ptr<grpc::Channel> Connect(const Endpoint& endpoint, int connection_index) const;

  // Whether connections to `endpoint` use TLS.
  bool UsesTls(const Endpoint& endpoint) const { return endpoint.https || tls_files_; }

  const TransportOptions& options() const { return options_; }

 private:
  ChannelFactory() = default;

  TransportOptions options_;
  bool tls_files_ = false;  // any of --cacert, --cert, --key was given
  grpc::SslCredentialsOptions ssl_;
};

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_COMMON_TRANSPORT_H_
