// etcdserverpb.KV, etcdserverpb.Maintenance and etcdserverpb.Cluster over the store: each request is
// one store call (one transaction); a write is answered by the log's flusher once its record is
// durable, never by a blocked worker.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "server/rpc/maintenance_service.h"
#include "server/rpc/server_state.h"

namespace revkv::server {

class RangeReactor;
class RuntimeExecutor;

// Methods revkv serves asynchronously run on the workers; Cluster's others keep gRPC's synchronous
// default, which answers UNIMPLEMENTED. Maintenance's long-running methods are synchronous
// (maintenance_service.h).
using ClusterService = etcdserverpb::Cluster::WithAsyncMethod_MemberList<etcdserverpb::Cluster::Service>;

// KV: Range on gRPC's callback threads (KvService::Range), the writes on the workers.
using KvWriteMethods = etcdserverpb::KV::WithAsyncMethod_Put<
    etcdserverpb::KV::WithAsyncMethod_DeleteRange<etcdserverpb::KV::WithAsyncMethod_Txn<
        etcdserverpb::KV::WithAsyncMethod_Compact<etcdserverpb::KV::Service>>>>;

// A Range is a snapshot read: it never waits for a lock, a writer or the disk. A Range of one key is
// answered on the gRPC thread it arrives on (a visit to the heap, runtime::HeapVisit), without the
// hand-over to a worker's completion queue and the thread switch that costs. A Range over an interval
// may read any number of keys, and gRPC's callback threads also carry every Watch stream and
// keep-alive: it goes to one of the scan executors (registered threads of their own). Writes stay on
// the workers: they may wait for a commit lock and their answers for the log (docs/server.md,
// "Threads").
class KvService final : public etcdserverpb::KV::WithCallbackMethod_Range<KvWriteMethods> {
 public:
  explicit KvService(ServerState* state);
  // Called once before serving (the request metrics are registered by then): `scans` are the
  // executors that answer Ranges over an interval, in turn; without any, every Range is answered where
  // it arrives.
  void StartServing(std::vector<RuntimeExecutor*> scans);

  grpc::ServerUnaryReactor* Range(grpc::CallbackServerContext* context,
                                  const etcdserverpb::RangeRequest* request,
                                  etcdserverpb::RangeResponse* response) override;

 private:
  void Answer(grpc::CallbackServerContext* context, const etcdserverpb::RangeRequest& request,
              etcdserverpb::RangeResponse* response, RangeReactor* reactor,
              std::chrono::steady_clock::time_point start);

  ServerState* state_;
  const MethodMetrics* metrics_ = nullptr;
  std::vector<RuntimeExecutor*> scans_;
  std::atomic<uint64_t> next_scan_{0};
};

struct EtcdServices {
  explicit EtcdServices(ServerState* state) : kv(state), maintenance(state) {}
  KvService kv;
  MaintenanceService maintenance;
  ClusterService cluster;
};

// Posts one waiting call of every method on `cq` (each call posts its successor when it starts).
void PostEtcdCalls(EtcdServices* services, grpc::ServerCompletionQueue* cq, ServerState* state);

}  // namespace revkv::server
