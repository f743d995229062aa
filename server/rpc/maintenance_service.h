// etcd's Maintenance service: Status and Alarm are asynchronous methods on the workers (kv_service.cc);
// Hash, HashKV, Defragment, Snapshot and MoveLeader are synchronous methods on gRPC's own threads, because
// each may run for long (a scan of the whole store, a major collection, a stream of the whole store), and
// a worker must not be held that long. A handler that touches the heap registers its thread with the
// runtime for the duration of the call, as the Admin service does.
//
// Thread-safety: thread-safe (gRPC calls the handlers from its threads).
#pragma once

#include <grpcpp/grpcpp.h>

#include <mutex>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "server/rpc/server_state.h"

namespace revkv::server {

// Alarm and Status asynchronous (posted on the workers' queues); the rest synchronous, overridden below.
using AsyncMaintenanceBase = etcdserverpb::Maintenance::WithAsyncMethod_Alarm<
    etcdserverpb::Maintenance::WithAsyncMethod_Status<etcdserverpb::Maintenance::Service>>;

class MaintenanceService final : public AsyncMaintenanceBase {
 public:
  explicit MaintenanceService(ServerState* state) : state_(state) {}

  // etcd's HashKV: the hash of the key-values at a revision (Store::HashKV), with the current revision in
  // the header and the compaction (-1: none) as etcd reports them.
  grpc::Status HashKV(grpc::ServerContext* context, const etcdserverpb::HashKVRequest* request,
                      etcdserverpb::HashKVResponse* response) override;
  // etcd's Hash: the hash of the whole store (Store::Hash).
  grpc::Status Hash(grpc::ServerContext* context, const etcdserverpb::HashRequest* request,
                    etcdserverpb::HashResponse* response) override;
  // etcd's Defragment: a major collection that returns the free pages to the operating system (the
  // evacuation reserve too, for this one collection) and trims malloc's free memory; logs what it
  // freed. One at a time.
  grpc::Status Defragment(grpc::ServerContext* context, const etcdserverpb::DefragmentRequest* request,
                          etcdserverpb::DefragmentResponse* response) override;
  // etcd's Snapshot: a consistent image of the store at the visible revision (Engine::WriteSnapshotImage,
  // taken while writes continue), streamed in 32 KiB messages as etcd streams its database, then padded
  // and followed by its SHA-256 in a last message (server/engine/snapshot_file.h), which `etcdctl
  // snapshot save` checks for and writes unchanged.
  grpc::Status Snapshot(grpc::ServerContext* context, const etcdserverpb::SnapshotRequest* request,
                        grpc::ServerWriter<etcdserverpb::SnapshotResponse>* writer) override;
  // etcd's MoveLeader on a single member: to itself, an empty answer (it leads already); to any other ID,
  // "etcdserver: bad leader transferee" (FailedPrecondition), as etcd answers for a non-member.
  grpc::Status MoveLeader(grpc::ServerContext* context, const etcdserverpb::MoveLeaderRequest* request,
                          etcdserverpb::MoveLeaderResponse* response) override;

 private:
  ServerState* state_;
  std::mutex defragment_mu_;  // one Defragment at a time (it changes the runtime's page retention)
};

}  // namespace revkv::server
