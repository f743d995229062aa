// The gRPC server: etcd's KV, Watch, Maintenance and Cluster services and revkv's KV (Pipeline,
// PipelineBatch) on worker threads with one completion queue each, revkv's Admin service, gRPC health
// checking and server reflection. Worker threads are registered with the runtime; waiting on their queue is a
// safe region. Each worker also sends the answers of the durable writes it executed (HeldAnswers), once
// the log's flusher has made them durable.
//
// Thread-safety: Start and Shutdown from one thread (main); the handlers are thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "revkv/v1/kv.grpc.pb.h"
#include "server/coord/coordinator.h"
#include "server/coord/hub_event_source.h"
#include "server/coord/runtime_executor.h"
#include "server/rpc/admin_service.h"
#include "server/rpc/auth_service.h"
#include "server/rpc/call.h"
#include "server/rpc/coordination_service.h"
#include "server/rpc/grpc_listener.h"
#include "server/rpc/held_answers.h"
#include "server/rpc/kv_service.h"
#include "server/rpc/lease_service.h"
#include "server/rpc/server_state.h"
#include "server/rpc/watch_service.h"

namespace revkv::server {

class RpcServer {
 public:
  explicit RpcServer(ServerState* state);
  ~RpcServer();

  // Starts the services (with TLS if configured) and `config.workers` workers, then takes over the
  // connections `listener` accepts (borrowed; it must outlive this). Fails with a clear message if a
  // TLS file cannot be read.
  absl::Status Start(GrpcListener* listener);
  // The port actually bound (for listen addresses with port 0): the listener's.
  int port() const { return port_; }
  // Stops accepting, lets in-flight requests finish (up to `grace`), closes the connections (idle
  // ones too: clients that pool connections keep them open) and stops the workers. Blocks (in a safe
  // region). Idempotent.
  void Shutdown(std::chrono::milliseconds grace);

 private:
  // The worker of `cq`; sends the durable answers it holds in `held`.
  void WorkerLoop(int index, grpc::ServerCompletionQueue* cq, HeldAnswers* held);

  // The tag gRPC posts when its shutdown has completed; there is nothing to do then.
  class ShutdownNotice final : public CallTag {
   public:
    void Proceed(bool /*ok*/) override {}
  };

  ServerState* state_;
  EtcdServices etcd_;
  std::unique_ptr<::revkv::v1::KV::AsyncService> pipeline_;
  std::unique_ptr<AdminService> admin_;
  std::unique_ptr<AuthService> auth_;
  std::unique_ptr<WatchService> watch_;  // on gRPC's callback API, beside the completion-queue services
  // Lock and Election (callback API): the recipes' store calls run on the coordination thread.
  std::unique_ptr<RuntimeExecutor> coordination_executor_;
  std::vector<std::unique_ptr<RuntimeExecutor>> scan_executors_;  // Ranges over an interval (KvService)
  std::unique_ptr<HubEventSource> coordination_events_;
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<LockService> lock_;
  std::unique_ptr<ElectionService> election_;
  std::unique_ptr<LeaseService> lease_;
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues_;
  // One per worker: its durable writes' answers, sent by it once durable (shared with the log's
  // callbacks, which may outlive this server).
  std::vector<std::shared_ptr<HeldAnswers>> held_;
  GrpcListener* listener_ = nullptr;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor_;  // the listener's way in
  std::unique_ptr<grpc::Server> server_;
  std::vector<std::thread> workers_;
  int port_ = 0;
  bool shut_down_ = false;
  ShutdownNotice shutdown_notice_;
};

}  // namespace revkv::server
