// etcdserverpb.KV, etcdserverpb.Maintenance and etcdserverpb.Cluster over the store: each request is
// one store call (one transaction); a write is answered by the log's flusher once its record is
// durable, never by a blocked worker.
#pragma once

#include <grpcpp/grpcpp.h>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "server/rpc/server_state.h"

namespace revkv::server {

struct EtcdServices {
  etcdserverpb::KV::AsyncService kv;
  etcdserverpb::Maintenance::AsyncService maintenance;
  etcdserverpb::Cluster::AsyncService cluster;
};

// Posts one waiting call of every method on `cq` (each call posts its successor when it starts).
void PostEtcdCalls(EtcdServices* services, grpc::ServerCompletionQueue* cq, ServerState* state);

}  // namespace revkv::server
