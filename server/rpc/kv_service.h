// etcdserverpb.KV, etcdserverpb.Maintenance and etcdserverpb.Cluster over the store: each request is
// one store call (one transaction); a write is answered by the log's flusher once its record is
// durable, never by a blocked worker.
#pragma once

#include <grpcpp/grpcpp.h>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "server/rpc/maintenance_service.h"
#include "server/rpc/server_state.h"

namespace revkv::server {

// Methods revkv serves asynchronously run on the workers; Cluster's others keep gRPC's synchronous
// default, which answers UNIMPLEMENTED. Maintenance's long-running methods are synchronous
// (maintenance_service.h).
using ClusterService = etcdserverpb::Cluster::WithAsyncMethod_MemberList<etcdserverpb::Cluster::Service>;

struct EtcdServices {
  explicit EtcdServices(ServerState* state) : maintenance(state) {}
  etcdserverpb::KV::AsyncService kv;
  MaintenanceService maintenance;
  ClusterService cluster;
};

// Posts one waiting call of every method on `cq` (each call posts its successor when it starts).
void PostEtcdCalls(EtcdServices* services, grpc::ServerCompletionQueue* cq, ServerState* state);

}  // namespace revkv::server
