// The connection a revkv command talks over: one gRPC channel to the first endpoint of --endpoints,
// the stubs of the services revkv speaks (etcd's KV and Maintenance, revkv's Admin), and the one place
// where gRPC's failures become the messages a user reads.
#ifndef REVKV_CLIENTS_CLI_CONNECTION_H_
#define REVKV_CLIENTS_CLI_CONNECTION_H_

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "clients/cli/global_options.h"
#include "etcdserverpb/rpc.grpc.pb.h"
#include "revkv/v1/admin.grpc.pb.h"

namespace revkv::client {

// A connected channel and its stubs. Owner thread only (a command runs on one thread).
class Connection {
 public:
  // Parses --endpoints and reads the TLS files (a usage error, exit 2, when either is wrong), then waits
  // up to --dial-timeout for a connection to the first endpoint. UNAVAILABLE "cannot reach <endpoint>:
  // <why>" when there is none. Blocks.
  static absl::StatusOr<std::unique_ptr<Connection>> Open(const GlobalOptions& options);

  // A fresh context for one call, with a deadline --command-timeout from now. The caller owns it.
  std::unique_ptr<grpc::ClientContext> NewContext() const;

  // Calls `method` of `stub` (one of this connection's stubs) with a context from NewContext and returns
  // the outcome as Check does. Blocks.
  template <typename Stub, typename Request, typename Response>
  absl::Status Call(Stub& stub, grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&, Response*),
                    const Request& request, Response* response) const {
    std::unique_ptr<grpc::ClientContext> context = NewContext();
    return Check((stub.*method)(context.get(), request, response));
  }

  // The outcome of a call as a user should read it: OK stays OK; an etcd error keeps the server's
  // message ("etcdserver: mvcc: required revision is a future revision"); a lost connection reads
  // "cannot reach <endpoint>: ...", a timeout "<endpoint>: no answer within 5s (--command-timeout)",
  // anything else "<endpoint>: <CODE>: <message>". The code is kept.
  absl::Status Check(const grpc::Status& status) const;

  etcdserverpb::KV::Stub& kv() const { return *kv_; }
  etcdserverpb::Maintenance::Stub& maintenance() const { return *maintenance_; }
  revkv::v1::Admin::Stub& admin() const { return *admin_; }
  // The endpoint as gRPC dials it ("127.0.0.1:2379"), for messages and output.
  const std::string& endpoint() const { return endpoint_; }

 private:
  Connection(std::string endpoint, std::shared_ptr<grpc::Channel> channel, absl::Duration command_timeout);

  // Waits up to `dial_timeout` for the channel to connect; UNAVAILABLE with the reason if it does not.
  absl::Status Dial(absl::Duration dial_timeout) const;

  std::string endpoint_;
  std::shared_ptr<grpc::Channel> channel_;
  absl::Duration command_timeout_;
  std::unique_ptr<etcdserverpb::KV::Stub> kv_;
  std::unique_ptr<etcdserverpb::Maintenance::Stub> maintenance_;
  std::unique_ptr<revkv::v1::Admin::Stub> admin_;
};

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_CLI_CONNECTION_H_
