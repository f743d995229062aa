// revkv.v1.KV/Pipeline: a bidirectional stream of Txn requests answered in order. Many requests may be
// in flight: each is executed as soon as it is read (one store transaction each); its response is sent
// when every earlier response has been sent and, for a write, once its log record is durable.
#pragma once

#include <grpcpp/grpcpp.h>

#include "revkv/v1/kv.grpc.pb.h"
#include "server/rpc/server_state.h"

namespace revkv::server {

// Posts a call waiting for the next Pipeline stream on `cq`.
void PostPipelineCall(::revkv::v1::KV::AsyncService* service, grpc::ServerCompletionQueue* cq,
                      ServerState* state);

}  // namespace revkv::server
