// etcd's v3lockpb.Lock and v3electionpb.Election services: the wire side of server/coord's Coordinator.
//
// Both use gRPC's callback API: Lock and Campaign answer only once the lock or leadership is held, which
// may be never, so a call must not hold a worker; a client that goes away cancels its wait (etcd's
// cleanup: Lock gives its key back, Campaign resigns). Observe streams leaders; a slow reader gets the
// newest leader rather than every proclamation in between (what etcd's Election.Observe promises).
//
// Thread-safety: thread-safe; gRPC calls the methods on its own threads (not registered with the
// runtime: everything that touches the store runs on the coordinator's executor).
#pragma once

#include <grpcpp/grpcpp.h>

#include "server/coord/coordinator.h"
#include "server/rpc/server_state.h"
#include "v3electionpb/v3election.grpc.pb.h"
#include "v3lockpb/v3lock.grpc.pb.h"

namespace revkv::server {

class LockService final : public v3lockpb::Lock::CallbackService {
 public:
  LockService(ServerState* state, Coordinator* coordinator) : state_(state), coordinator_(coordinator) {}

  grpc::ServerUnaryReactor* Lock(grpc::CallbackServerContext* context, const v3lockpb::LockRequest* request,
                                 v3lockpb::LockResponse* response) override;
  grpc::ServerUnaryReactor* Unlock(grpc::CallbackServerContext* context,
                                   const v3lockpb::UnlockRequest* request,
                                   v3lockpb::UnlockResponse* response) override;

 private:
  ServerState* const state_;
  Coordinator* const coordinator_;
};

class ElectionService final : public v3electionpb::Election::CallbackService {
 public:
  ElectionService(ServerState* state, Coordinator* coordinator) : state_(state), coordinator_(coordinator) {}

  grpc::ServerUnaryReactor* Campaign(grpc::CallbackServerContext* context,
                                     const v3electionpb::CampaignRequest* request,
                                     v3electionpb::CampaignResponse* response) override;
  grpc::ServerUnaryReactor* Proclaim(grpc::CallbackServerContext* context,
                                     const v3electionpb::ProclaimRequest* request,
                                     v3electionpb::ProclaimResponse* response) override;
  grpc::ServerUnaryReactor* Leader(grpc::CallbackServerContext* context,
                                   const v3electionpb::LeaderRequest* request,
                                   v3electionpb::LeaderResponse* response) override;
  grpc::ServerWriteReactor<v3electionpb::LeaderResponse>* Observe(
      grpc::CallbackServerContext* context, const v3electionpb::LeaderRequest* request) override;
  grpc::ServerUnaryReactor* Resign(grpc::CallbackServerContext* context,
                                   const v3electionpb::ResignRequest* request,
                                   v3electionpb::ResignResponse* response) override;

 private:
  ServerState* const state_;
  Coordinator* const coordinator_;
};

}  // namespace revkv::server
