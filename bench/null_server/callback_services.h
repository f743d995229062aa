// The baseline servers' services on gRPC's callback API: etcdserverpb.KV over a KvBackend (null or the
// naive map store), Maintenance/Status, Cluster/MemberList and revkv.v1.KV/Pipeline. Every handler runs
// on gRPC's own threads and answers before it returns (context->DefaultReactor()->Finish), so a call
// costs gRPC's work and the backend's, nothing else: no queue of ours, no thread hop, no allocation
// beyond gRPC's call arena and what the backend's response holds. The Maintenance and Cluster methods
// not on the data path answer UNIMPLEMENTED (and are counted as kUnimplemented).
//
// Thread-safety: thread-safe; the backend, counters and peer log must outlive the services.
#ifndef REVKV_BENCH_NULL_SERVER_CALLBACK_SERVICES_H_
#define REVKV_BENCH_NULL_SERVER_CALLBACK_SERVICES_H_

#include <grpcpp/grpcpp.h>

#include "bench/null_server/handlers.h"
#include "bench/null_server/kv_backend.h"
#include "bench/null_server/method_counters.h"
#include "etcdserverpb/rpc.grpc.pb.h"
#include "revkv/v1/kv.grpc.pb.h"

namespace revkv::bench {

// What the callback services share.
struct CallbackEnv {
  KvBackend* backend = nullptr;
  SharedMethodCounters* counters = nullptr;
  PeerLog* status_peers = nullptr;
};

class CallbackKv final : public etcdserverpb::KV::CallbackService {
 public:
  explicit CallbackKv(CallbackEnv env) : env_(env) {}
  grpc::ServerUnaryReactor* Range(grpc::CallbackServerContext* context,
                                  const etcdserverpb::RangeRequest* request,
                                  etcdserverpb::RangeResponse* response) override;
  grpc::ServerUnaryReactor* Put(grpc::CallbackServerContext* context, const etcdserverpb::PutRequest* request,
                                etcdserverpb::PutResponse* response) override;
  grpc::ServerUnaryReactor* DeleteRange(grpc::CallbackServerContext* context,
                                        const etcdserverpb::DeleteRangeRequest* request,
                                        etcdserverpb::DeleteRangeResponse* response) override;
  grpc::ServerUnaryReactor* Txn(grpc::CallbackServerContext* context, const etcdserverpb::TxnRequest* request,
                                etcdserverpb::TxnResponse* response) override;
  grpc::ServerUnaryReactor* Compact(grpc::CallbackServerContext* context,
                                    const etcdserverpb::CompactionRequest* request,
                                    etcdserverpb::CompactionResponse* response) override;

 private:
  CallbackEnv env_;
};

class CallbackMaintenance final : public etcdserverpb::Maintenance::CallbackService {
 public:
  explicit CallbackMaintenance(CallbackEnv env) : env_(env) {}
  grpc::ServerUnaryReactor* Status(grpc::CallbackServerContext* context,
                                   const etcdserverpb::StatusRequest* request,
                                   etcdserverpb::StatusResponse* response) override;
  grpc::ServerUnaryReactor* Alarm(grpc::CallbackServerContext* context, const etcdserverpb::AlarmRequest*,
                                  etcdserverpb::AlarmResponse*) override;
  grpc::ServerUnaryReactor* Defragment(grpc::CallbackServerContext* context,
                                       const etcdserverpb::DefragmentRequest*,
                                       etcdserverpb::DefragmentResponse*) override;
  grpc::ServerUnaryReactor* Hash(grpc::CallbackServerContext* context, const etcdserverpb::HashRequest*,
                                 etcdserverpb::HashResponse*) override;
  grpc::ServerUnaryReactor* HashKV(grpc::CallbackServerContext* context, const etcdserverpb::HashKVRequest*,
                                   etcdserverpb::HashKVResponse*) override;
  grpc::ServerUnaryReactor* MoveLeader(grpc::CallbackServerContext* context,
                                       const etcdserverpb::MoveLeaderRequest*,
                                       etcdserverpb::MoveLeaderResponse*) override;
  grpc::ServerWriteReactor<etcdserverpb::SnapshotResponse>* Snapshot(
      grpc::CallbackServerContext* context, const etcdserverpb::SnapshotRequest*) override;

 private:
  grpc::ServerUnaryReactor* Unimplemented(grpc::CallbackServerContext* context);
  CallbackEnv env_;
};

class CallbackCluster final : public etcdserverpb::Cluster::CallbackService {
 public:
  explicit CallbackCluster(CallbackEnv env) : env_(env) {}
  grpc::ServerUnaryReactor* MemberList(grpc::CallbackServerContext* context,
                                       const etcdserverpb::MemberListRequest* request,
                                       etcdserverpb::MemberListResponse* response) override;
  grpc::ServerUnaryReactor* MemberAdd(grpc::CallbackServerContext* context,
                                      const etcdserverpb::MemberAddRequest*,
                                      etcdserverpb::MemberAddResponse*) override;
  grpc::ServerUnaryReactor* MemberRemove(grpc::CallbackServerContext* context,
                                         const etcdserverpb::MemberRemoveRequest*,
                                         etcdserverpb::MemberRemoveResponse*) override;
  grpc::ServerUnaryReactor* MemberUpdate(grpc::CallbackServerContext* context,
                                         const etcdserverpb::MemberUpdateRequest*,
                                         etcdserverpb::MemberUpdateResponse*) override;
  grpc::ServerUnaryReactor* MemberPromote(grpc::CallbackServerContext* context,
                                          const etcdserverpb::MemberPromoteRequest*,
                                          etcdserverpb::MemberPromoteResponse*) override;

 private:
  grpc::ServerUnaryReactor* Unimplemented(grpc::CallbackServerContext* context);
  CallbackEnv env_;
};

// revkv.v1.KV/Pipeline and PipelineBatch: each message is executed (as the backend's Txn, or each of
// its requests so) when it is read and answered in order; reads go on while answers are being written
// (up to a bound), and answers queued behind the one being written go out together.
class CallbackPipeline final : public revkv::v1::KV::CallbackService {
 public:
  explicit CallbackPipeline(CallbackEnv env) : env_(env) {}
  grpc::ServerBidiReactor<etcdserverpb::TxnRequest, etcdserverpb::TxnResponse>* Pipeline(
      grpc::CallbackServerContext* context) override;
  grpc::ServerBidiReactor<revkv::v1::TxnBatch, revkv::v1::TxnBatchResponse>* PipelineBatch(
      grpc::CallbackServerContext* context) override;

 private:
  CallbackEnv env_;
};

}  // namespace revkv::bench

#endif  // REVKV_BENCH_NULL_SERVER_CALLBACK_SERVICES_H_
