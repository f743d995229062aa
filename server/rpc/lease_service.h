// etcdserverpb.Lease over the store and the lessor (server/lease).
//
// LeaseGrant, LeaseRevoke, LeaseTimeToLive and LeaseLeases are asynchronous unary calls on the workers
// (registered threads, one store transaction each); a grant or revoke is answered by the log's flusher
// once its record is durable, like a KV write. LeaseKeepAlive is a bidirectional stream served with
// gRPC's callback API on gRPC's own threads, which are not registered with the runtime: a keep-alive
// only touches the lessor (plain C++ under its mutex) and atomics (the visible revision), never the heap.
// Answers follow etcd 3.4's etcdserver/api/v3rpc/lease.go: an unknown lease's keep-alive answers TTL 0
// and its TimeToLive TTL -1 (no error); the other errors are etcd's (store/errors.h).
#pragma once

#include <grpcpp/grpcpp.h>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "server/rpc/server_state.h"

namespace revkv::server {

using LeaseServiceBase =
    etcdserverpb::Lease::WithAsyncMethod_LeaseGrant<etcdserverpb::Lease::WithAsyncMethod_LeaseRevoke<
        etcdserverpb::Lease::WithAsyncMethod_LeaseTimeToLive<etcdserverpb::Lease::WithAsyncMethod_LeaseLeases<
            etcdserverpb::Lease::WithCallbackMethod_LeaseKeepAlive<etcdserverpb::Lease::Service>>>>>;

// The Lease service. Thread-safe; `state` (with its lessor) must outlive it.
class LeaseService final : public LeaseServiceBase {
 public:
  explicit LeaseService(ServerState* state) : state_(state) {}

  // A keep-alive stream: each request renews its lease and is answered in order. Runs on gRPC's threads.
  grpc::ServerBidiReactor<etcdserverpb::LeaseKeepAliveRequest, etcdserverpb::LeaseKeepAliveResponse>*
  LeaseKeepAlive(grpc::CallbackServerContext* context) override;

 private:
  ServerState* state_;
};

// Posts one waiting call of every unary Lease method on `cq` (each call posts its successor).
void PostLeaseCalls(LeaseService* service, grpc::ServerCompletionQueue* cq, ServerState* state);

}  // namespace revkv::server
