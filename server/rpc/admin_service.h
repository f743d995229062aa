// revkv.v1.Admin: collector, heap, STM and store figures, a stream of collection events, and operator
// actions (collect now, checkpoint now). A synchronous service: its handlers run on gRPC's own threads,
// which are not registered with the runtime; a handler that must touch the heap (a collection, a
// checkpoint) registers its thread for the duration of the call.
#pragma once

#include <grpcpp/grpcpp.h>

#include "revkv/v1/admin.grpc.pb.h"
#include "server/rpc/server_state.h"

namespace revkv::server {

class AdminService final : public ::revkv::v1::Admin::Service {
 public:
  explicit AdminService(ServerState* state) : state_(state) {}

  grpc::Status GetStats(grpc::ServerContext* context, const ::revkv::v1::GetStatsRequest* request,
                        ::revkv::v1::GetStatsResponse* response) override;
  grpc::Status WatchGcEvents(grpc::ServerContext* context, const ::revkv::v1::WatchGcEventsRequest* request,
                             grpc::ServerWriter<::revkv::v1::GcEvent>* writer) override;
  grpc::Status Collect(grpc::ServerContext* context, const ::revkv::v1::CollectRequest* request,
                       ::revkv::v1::CollectResponse* response) override;
  grpc::Status Checkpoint(grpc::ServerContext* context, const ::revkv::v1::CheckpointRequest* request,
                          ::revkv::v1::CheckpointResponse* response) override;
  grpc::Status ServerInfo(grpc::ServerContext* context, const ::revkv::v1::ServerInfoRequest* request,
                          ::revkv::v1::ServerInfoResponse* response) override;

 private:
  // OK, or the refusal of a caller without the root role while auth is enabled.
  grpc::Status CheckAdmin(const grpc::ServerContext& context);

  ServerState* state_;
};

// Fills the figures of GetStats (shared with the ops endpoint's /debug/gc).
void FillStats(ServerState* state, uint32_t recent_events, ::revkv::v1::GetStatsResponse* out);
void ToProto(const runtime::CollectionRecord& record, ::revkv::v1::GcEvent* out);

}  // namespace revkv::server
