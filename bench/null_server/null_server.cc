// The null server: services, worker threads and their completion queues, shutdown.
#include "bench/null_server/null_server.h"

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "bench/null_server/callback_services.h"
#include "bench/null_server/handlers.h"
#include "bench/null_server/map_store.h"

namespace revkv::bench {
namespace {

// Unary handlers armed per served method and worker: enough that a burst of calls on one worker finds a
// posted request for each of them (calls beyond that wait in gRPC's queue until one is re-armed).
constexpr int kHandlersPerServedMethod = 32;
constexpr int kHandlersPerUnservedMethod = 1;

}  // namespace

std::string_view NullServerApiName(NullServerApi api) {
  return api == NullServerApi::kCallback ? "callback" : "cq";
}
std::string_view NullServerStoreName(NullServerStore store) {
  return store == NullServerStore::kMap ? "map" : "none";
}

struct NullServer::CallbackServices {
  explicit CallbackServices(NullServerStore store)
      : backend(store == NullServerStore::kMap ? std::unique_ptr<KvBackend>(std::make_unique<MapStore>())
                                               : std::make_unique<NullBackend>()) {}
  std::unique_ptr<KvBackend> backend;  // before env, which points at it
  SharedMethodCounters counters;
  PeerLog status_peers;
  CallbackEnv env{backend.get(), &counters, &status_peers};
  CallbackKv kv{env};
  CallbackMaintenance maintenance{env};
  CallbackCluster cluster{env};
  CallbackPipeline pipeline{env};
};

struct NullServer::Services {
  PeerLog status_peers;
  etcdserverpb::KV::AsyncService kv;
  etcdserverpb::Maintenance::AsyncService maintenance;
  etcdserverpb::Cluster::AsyncService cluster;
  revkv::v1::KV::AsyncService pipeline;
};

// One worker thread and what it owns: its queue, its handlers, its counters. The handlers and the
// context are touched only by the worker thread once it runs.
struct NullServer::Worker {
  std::unique_ptr<grpc::ServerCompletionQueue> cq;
  MethodCounters counters;
  WorkerContext context;
  NullResponses responses;
  std::vector<std::unique_ptr<Handler>> handlers;
  grpc::Alarm stop_alarm;  // set by Shutdown: tells the worker to shut its queue down
  MemberCompletion<Worker> stop{this, &Worker::OnStop};
  std::thread thread;

  void OnStop(bool /*ok*/) {
    context.accepting = false;
    cq->Shutdown();
  }

  void Run() {
    void* tag = nullptr;
    bool ok = false;
    while (cq->Next(&tag, &ok)) static_cast<Completion*>(tag)->Complete(ok);
  }
};

NullServer::NullServer() : services_(std::make_unique<Services>()) {}

absl::StatusOr<std::unique_ptr<NullServer>> NullServer::Start(const NullServerOptions& options) {
  if (options.workers < 0) return absl::InvalidArgumentError("--workers must be at least 0");
  if (options.api == NullServerApi::kCallback) return StartCallback(options);
  if (options.store != NullServerStore::kNone) {
    return absl::InvalidArgumentError("the map store is served on the callback API only");
  }
  int worker_count = options.workers;
  if (worker_count == 0) worker_count = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));

  std::unique_ptr<NullServer> server(new NullServer());
  Services& services = *server->services_;
  // grpc.health.v1.Health, as revkv-server has it (gRPC's own service, answered on gRPC's threads):
  // probes and clients that check health before their load work against the null server too.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default, which would let two servers share a port silently.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(options.listen, grpc::InsecureServerCredentials(), &server->port_);
  builder.RegisterService(&services.kv);
  builder.RegisterService(&services.maintenance);
  builder.RegisterService(&services.cluster);
  builder.RegisterService(&services.pipeline);
  for (int i = 0; i < worker_count; ++i) {
    auto worker = std::make_unique<Worker>();
    worker->cq = builder.AddCompletionQueue();
    worker->context.cq = worker->cq.get();
    worker->context.counters = &worker->counters;
    worker->context.status_peers = &services.status_peers;
    server->workers_.push_back(std::move(worker));
  }
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    // The queues were never polled; shut them down and drain them before they are destroyed.
    for (auto& worker : server->workers_) {
      worker->cq->Shutdown();
      worker->Run();
    }
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.listen));
  }

  const grpc::Status unimplemented(grpc::StatusCode::UNIMPLEMENTED, "revkv-null-server does not serve this");
  for (auto& worker_ptr : server->workers_) {
    Worker& w = *worker_ptr;
    WorkerContext* ctx = &w.context;
    NullResponses& r = w.responses;
    auto& kv = services.kv;
    auto& mt = services.maintenance;
    auto& cl = services.cluster;
    for (int i = 0; i < kHandlersPerServedMethod; ++i) {
      w.handlers.push_back(MakeUnaryHandler<etcdserverpb::RangeRequest>(
          ctx, NullMethod::kRange, &r.range, grpc::Status::OK,
          [&kv](auto* c, auto* q, auto* wr, auto* cq, void* tag) {
            kv.RequestRange(c, q, wr, cq, cq, tag);
          }));
      w.handlers.push_back(MakeUnaryHandler<etcdserverpb::PutRequest>(
          ctx, NullMethod::kPut, &r.put, grpc::Status::OK,
          [&kv](auto* c, auto* q, auto* wr, auto* cq, void* tag) { kv.RequestPut(c, q, wr, cq, cq, tag); }));
      w.handlers.push_back(MakeUnaryHandler<etcdserverpb::TxnRequest>(
          ctx, NullMethod::kTxn, &r.txn, grpc::Status::OK,
          [&kv](auto* c, auto* q, auto* wr, auto* cq, void* tag) { kv.RequestTxn(c, q, wr, cq, cq, tag); }));
    }
    for (int i = 0; i < kHandlersPerUnservedMethod; ++i) {
      w.handlers.push_back(MakeUnaryHandler<etcdserverpb::DeleteRangeRequest>(
          ctx, NullMethod::kDeleteRange, &r.delete_range, grpc::Status::OK,
          [&kv](auto* c, auto* q, auto* wr, auto* cq, void* tag) {
            kv.RequestDeleteRange(c, q, wr, cq, cq, tag);
          }));
      w.handlers.push_back(MakeUnaryHandler<etcdserverpb::CompactionRequest>(
          ctx, NullMethod::kCompact, &r.compact, grpc::Status::OK,
          [&kv](auto* c, auto* q, auto* wr, auto* cq, void* tag) {
            kv.RequestCompact(c, q, wr, cq, cq, tag);
          }));
      w.handlers.push_back(MakeUnaryHandler<etcdserverpb::StatusRequest>(
          ctx, NullMethod::kStatus, &r.status, grpc::Status::OK,
          [&mt](auto* c, auto* q, auto* wr, auto* cq, void* tag) {
            mt.RequestStatus(c, q, wr, cq, cq, tag);
          }));
      // The Maintenance methods revkv's data path does not use: registered, so that they answer
      // UNIMPLEMENTED rather than wait for a handler that never comes.
      w.handlers.push_back(MakeUnaryHandler<etcdserverpb::AlarmRequest>(
          ctx, NullMethod::kUnimplemented, &etcdserverpb::AlarmResponse::default_instance(), unimplemented,
          [&mt](auto* c, auto* q, auto* wr, auto* cq, void* tag) {
            mt.RequestAlarm(c, q, wr, cq, cq, tag);
          }));
      w.handlers.push_back(MakeUnaryHandler<etcdserverpb::DefragmentRequest>(
          ctx, NullMethod::kUnimplemented, &etcdserverpb::DefragmentResponse::default_instance(),
          unimplemented, [&mt](auto* c, auto* q, auto* wr, auto* cq, void* tag) {
            mt.RequestDefragment(c, q, wr, cq, cq, tag);
          }));
      w.handlers.push_back(MakeUnaryHandler<etcdserverpb::HashRequest>(
          ctx, NullMethod::kUnimplemented, &etcdserverpb::HashResponse::default_instance(), unimplemented,
          [&mt](auto* c, auto* q, auto* wr, auto* cq, void* tag) { mt.RequestHash(c, q, wr, cq, cq, tag); }));
      w.handlers.push_back(MakeUnaryHandler<etcdserverpb::HashKVRequest>(
          ctx, NullMethod::kUnimplemented, &etcdserverpb::HashKVResponse::default_instance(), unimplemented,
          [&mt](auto* c, auto* q, auto* wr, auto* cq, void* tag) {
            mt.RequestHashKV(c, q, wr, cq, cq, tag);
          }));
      w.handlers.push_back(MakeUnaryHandler<etcdserverpb::MoveLeaderRequest>(
          ctx, NullMethod::kUnimplemented, &etcdserverpb::MoveLeaderResponse::default_instance(),
          unimplemented, [&mt](auto* c, auto* q, auto* wr, auto* cq, void* tag) {
            mt.RequestMoveLeader(c, q, wr, cq, cq, tag);
          }));
      w.handlers.push_back(MakeSnapshotHandler(ctx, &mt));
      w.handlers.push_back(MakeUnaryHandler<etcdserverpb::MemberListRequest>(
          ctx, NullMethod::kMemberList, &r.member_list, grpc::Status::OK,
          [&cl](auto* c, auto* q, auto* wr, auto* cq, void* tag) {
            cl.RequestMemberList(c, q, wr, cq, cq, tag);
          }));
      // The Cluster methods that change membership: UNIMPLEMENTED, as on revkv-server.
      w.handlers.push_back(MakeUnaryHandler<etcdserverpb::MemberAddRequest>(
          ctx, NullMethod::kUnimplemented, &etcdserverpb::MemberAddResponse::default_instance(),
          unimplemented, [&cl](auto* c, auto* q, auto* wr, auto* cq, void* tag) {
            cl.RequestMemberAdd(c, q, wr, cq, cq, tag);
          }));
      w.handlers.push_back(MakeUnaryHandler<etcdserverpb::MemberRemoveRequest>(
          ctx, NullMethod::kUnimplemented, &etcdserverpb::MemberRemoveResponse::default_instance(),
          unimplemented, [&cl](auto* c, auto* q, auto* wr, auto* cq, void* tag) {
            cl.RequestMemberRemove(c, q, wr, cq, cq, tag);
          }));
      w.handlers.push_back(MakeUnaryHandler<etcdserverpb::MemberUpdateRequest>(
          ctx, NullMethod::kUnimplemented, &etcdserverpb::MemberUpdateResponse::default_instance(),
          unimplemented, [&cl](auto* c, auto* q, auto* wr, auto* cq, void* tag) {
            cl.RequestMemberUpdate(c, q, wr, cq, cq, tag);
          }));
      w.handlers.push_back(MakeUnaryHandler<etcdserverpb::MemberPromoteRequest>(
          ctx, NullMethod::kUnimplemented, &etcdserverpb::MemberPromoteResponse::default_instance(),
          unimplemented, [&cl](auto* c, auto* q, auto* wr, auto* cq, void* tag) {
            cl.RequestMemberPromote(c, q, wr, cq, cq, tag);
          }));
    }
    for (auto& handler : w.handlers) handler->Arm();
    AcceptPipelineStream(ctx, &services.pipeline, &r.txn);
  }
  for (auto& worker : server->workers_) {
    worker->thread = std::thread([w = worker.get()] { w->Run(); });
  }
  return server;
}

absl::StatusOr<std::unique_ptr<NullServer>> NullServer::StartCallback(const NullServerOptions& options) {
  std::unique_ptr<NullServer> server(new NullServer());
  server->callback_ = std::make_unique<CallbackServices>(options.store);
  CallbackServices& services = *server->callback_;
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(options.listen, grpc::InsecureServerCredentials(), &server->port_);
  builder.RegisterService(&services.kv);
  builder.RegisterService(&services.maintenance);
  builder.RegisterService(&services.cluster);
  builder.RegisterService(&services.pipeline);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.listen));
  }
  return server;
}

NullServer::~NullServer() {
  Shutdown();
  server_.reset();  // the server goes before the queues and services it refers to
  workers_.clear();
  services_.reset();
  callback_.reset();
}

NullServerCounts NullServer::Counts() const {
  NullServerCounts counts;
  for (const auto& worker : workers_) worker->counters.AddTo(&counts);
  if (callback_ != nullptr) callback_->counters.AddTo(&counts);
  return counts;
}

std::set<std::string> NullServer::StatusPeers() const {
  return callback_ != nullptr ? callback_->status_peers.peers() : services_->status_peers.peers();
}

void NullServer::Shutdown() {
  absl::MutexLock lock(&shutdown_mu_);
  if (shut_down_) return;
  shut_down_ = true;
  if (server_ == nullptr) return;  // Start failed before any worker ran
  if (callback_ != nullptr) {
    // Calls still open after the grace (Pipeline streams a client keeps open) are cancelled.
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    return;
  }
  // After this returns no call is open and every posted request has failed or will fail; only then may
  // the queues shut down. Each worker shuts down its own queue (on its stop alarm), so no handler can
  // post to a queue after it was shut down.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  for (auto& worker : workers_) {
    worker->stop_alarm.Set(worker->cq.get(), gpr_now(GPR_CLOCK_MONOTONIC), worker->stop.tag());
  }
  for (auto& worker : workers_) worker->thread.join();
}

}  // namespace revkv::bench
