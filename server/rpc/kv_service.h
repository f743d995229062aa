// etcdserverpb.KV, etcdserverpb.Maintenance and etcdserverpb.Cluster over the store: each request is
// one store call (one transaction); a write is answered by the log's flusher once its record is
// durable, never by a blocked worker.
#pragma once

#include <grpcpp/grpcpp.h>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "server/rpc/server_state.h"

namespace revkv::server {

// Methods revkv serves are asynchronous (on the workers); the others keep gRPC's synchronous default,
// which answers UNIMPLEMENTED.
using MaintenanceService = etcdserverpb::Maintenance::WithAsyncMethod_Alarm<
    etcdserverpb::Maintenance::WithAsyncMethod_Status<etcdserverpb::Maintenance::Service>>;
using ClusterService = etcdserverpb::Cluster::WithAsyncMethod_MemberList<etcdserverpb::Cluster::Service>;

struct EtcdServices {
  etcdserverpb::KV::AsyncService kv;
  MaintenanceService maintenance;
  ClusterService cluster;
};

// Posts one waiting call of every method on `cq` (each call posts its successor when it starts).
void PostEtcdCalls(EtcdServices* services, grpc::ServerCompletionQueue* cq, ServerState* state);

}  // namespace revkv::server
