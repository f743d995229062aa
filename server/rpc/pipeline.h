// revkv.v1.KV/Pipeline and revkv.v1.KV/PipelineBatch: bidirectional streams of Txn requests (one per
// message, or a batch per message) answered in order. Many messages may be in flight: each is executed as
// soon as it is read (one store transaction per Txn); its answer is sent when every earlier answer has
// been sent and, if it wrote or read state not yet durable, once that state's log record is durable.
#pragma once

#include <grpcpp/grpcpp.h>

#include "revkv/v1/kv.grpc.pb.h"
#include "server/rpc/server_state.h"

namespace revkv::server {

// The most requests one PipelineBatch message may hold; a larger batch ends the stream with
// INVALID_ARGUMENT and none of its requests is executed.
inline constexpr int kMaxBatchRequests = 1024;

// Posts a call waiting for the next Pipeline stream and one waiting for the next PipelineBatch stream
// on `cq`.
void PostPipelineCall(::revkv::v1::KV::AsyncService* service, grpc::ServerCompletionQueue* cq,
                      ServerState* state);

}  // namespace revkv::server
