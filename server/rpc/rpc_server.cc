// The gRPC server (rpc_server.h).
#include "server/rpc/rpc_server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include <algorithm>
#include <limits>
#include <thread>

#include "absl/strings/str_cat.h"
#include "revkv/v1/kv.pb.h"
#include "runtime/safepoint/safepoint.h"
#include "server/auth/simple_token.h"
#include "server/lease/lessor.h"
#include "server/rpc/call.h"
#include "server/rpc/credentials.h"
#include "server/rpc/grpc_handoff.h"
#include "server/rpc/pipeline.h"
#include "server/rpc/unimplemented_methods.h"
#include "spdlog/spdlog.h"

namespace revkv::server {

namespace {

// The lease etcd's session grants for a Lock or Campaign that names none (on the coordination thread).
// Durable before the recipe's next write is, which comes after it in the log.
absl::StatusOr<int64_t> GrantSessionLease(Lessor* lessor, int64_t ttl) {
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(ttl);
  absl::StatusOr<WriteResult<etcdserverpb::LeaseGrantResponse>> granted = lessor->Grant(request);
  if (!granted.ok()) return granted.status();
  return granted->response.id();
}

// Server reflection answers from the generated descriptor pool, which holds a .proto file only if its
// .pb.o was linked. revkv/v1/kv.proto's messages are used by the PipelineBatch handler; this reference
// keeps the file in the pool even if that ever changes (its service alone refers to nothing).
[[maybe_unused]] const void* volatile kKeepKvProtoDescriptor = &descriptor_table_revkv_2fv1_2fkv_2eproto;

}  // namespace

RpcServer::RpcServer(ServerState* state)
    : state_(state),
      etcd_(state),
      pipeline_(std::make_unique<::revkv::v1::KV::AsyncService>()),
      admin_(std::make_unique<AdminService>(state)),
      auth_(std::make_unique<AuthService>(state)),
      lease_(std::make_unique<LeaseService>(state)) {}

RpcServer::~RpcServer() { Shutdown(std::chrono::milliseconds(0)); }

absl::Status RpcServer::Start(GrpcListener* listener) {
  const ServerConfig& config = *state_->config;
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = ServerCredentialsFor(config.tls);
  if (!credentials.ok()) return credentials.status();
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // The port is the listener's (bound before recovery); it hands the connections over.
  listener_ = listener;
  acceptor_ = builder.experimental().AddExternalConnectionAcceptor(
      grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD, *credentials);
  port_ = listener->port();
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<UnimplementedMethods>(state_->metrics));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  // gRPC refuses larger messages itself; the store answers etcd's "request is too large" for requests
  // between max_request_bytes and this limit, as etcd does (it adds the same 512 KiB of slack).
  // (max_request_bytes may be up to 2 GiB - 1: the sum is capped at gRPC's int limit.)
  builder.SetMaxReceiveMessageSize(static_cast<int>(
      std::min<uint64_t>(config.max_request_bytes + 512 * 1024, std::numeric_limits<int>::max())));
  builder.SetMaxSendMessageSize(std::numeric_limits<int>::max());
  std::vector<RuntimeExecutor*> scans;
  for (int i = 0; i < config.workers; ++i) {
    scans.push_back(
        scan_executors_.emplace_back(std::make_unique<RuntimeExecutor>(absl::StrCat("scan-", i))).get());
  }
  etcd_.kv.StartServing(std::move(scans));
  builder.RegisterService(&etcd_.kv);
  builder.RegisterService(&etcd_.maintenance);
  builder.RegisterService(&etcd_.cluster);
  watch_ = std::make_unique<WatchService>(state_);
  builder.RegisterService(watch_.get());
  state_->watch_hub.store(&watch_->hub(), std::memory_order_release);
  // Each new auth state, once visible: tokens it invalidates go, open watchers are checked again.
  state_->engine->store().SetAuthListener(
      [tokens = state_->tokens, watch = watch_.get()](const std::shared_ptr<const store::AuthView>&,
                                                      const std::vector<std::string>& invalidated) {
        if (tokens != nullptr) {
          for (const std::string& user : invalidated) tokens->InvalidateUser(user);
        }
        watch->AuthChanged();
      });
  coordination_executor_ = std::make_unique<RuntimeExecutor>("coordination");
  coordination_events_ = std::make_unique<HubEventSource>(&watch_->hub(), coordination_executor_.get());
  // Its users reach it from gRPC's threads and the executor's, which started before it (grpc_handoff.h).
  HandOverToGrpc(coordination_events_.get());
  Lessor* lessor = state_->lessor;
  coordinator_ = std::make_unique<Coordinator>(Coordinator::Env{
      &state_->engine->store(), coordination_events_.get(), coordination_executor_.get(),
      [lessor](int64_t ttl) -> absl::StatusOr<int64_t> { return GrantSessionLease(lessor, ttl); }});
  lock_ = std::make_unique<LockService>(state_, coordinator_.get());
  election_ = std::make_unique<ElectionService>(state_, coordinator_.get());
  builder.RegisterService(lock_.get());
  builder.RegisterService(election_.get());
  builder.RegisterService(pipeline_.get());
  builder.RegisterService(admin_.get());
  builder.RegisterService(auth_.get());   // synchronous: bcrypt must not hold a worker
  builder.RegisterService(lease_.get());  // async unary methods and a callback keep-alive stream
  for (int i = 0; i < config.workers; ++i) queues_.push_back(builder.AddCompletionQueue());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr)
    return absl::InternalError(absl::StrCat("cannot start the gRPC server on ", config.listen));
  server_->GetHealthCheckService()->SetServingStatus(true);
  for (int i = 0; i < config.workers; ++i) {
    grpc::ServerCompletionQueue* cq = queues_[static_cast<size_t>(i)].get();
    // The worker gets its own pointer: held_ may still grow (and move) while it starts.
    HeldAnswers* held =
        held_.emplace_back(std::make_shared<HeldAnswers>(&state_->engine->wal(), cq, &state_->held_answers))
            .get();
    PostEtcdCalls(&etcd_, cq, state_);
    PostPipelineCall(pipeline_.get(), cq, state_);
    PostLeaseCalls(lease_.get(), cq, state_);
    workers_.emplace_back([this, i, cq, held] { WorkerLoop(i, cq, held); });
  }
  listener->SetAcceptor(acceptor_.get());  // from here on, new connections reach this server
  return absl::OkStatus();
}

void RpcServer::WorkerLoop(int index, grpc::ServerCompletionQueue* cq, HeldAnswers* held) {
  runtime::ThreadRegistration registration(absl::StrCat("grpc-worker-", index));
  HeldAnswers::SetCurrent(held);
  void* tag = nullptr;
  bool ok = false;
  for (;;) {
    bool got;
    {
      runtime::SafeRegion waiting;  // blocked on the queue: collections need not wait for us
      got = cq->Next(&tag, &ok);
    }
    if (!got) break;  // the queue is shut down and drained
    TakeBackFromGrpc(tag);
    static_cast<CallTag*>(tag)->Proceed(ok);
  }
  HeldAnswers::SetCurrent(nullptr);
}

void RpcServer::Shutdown(std::chrono::milliseconds grace) {
  if (shut_down_ || server_ == nullptr) return;
  shut_down_ = true;
  runtime::SafeRegion waiting;
  server_->GetHealthCheckService()->SetServingStatus(false);
  listener_->Close();  // new connections are refused
  const auto deadline = std::chrono::steady_clock::now() + grace;
  // No new connection or call from here on; the connections are told to go away.
  grpc_server_shutdown_and_notify(server_->c_server(), queues_.front()->cq(), &shutdown_notice_);
  // In-flight requests finish: writes are answered by the workers, which still run, once the log's
  // flusher (which still runs too) has made them durable.
  while (state_->requests_in_flight.load(std::memory_order_acquire) > 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // gRPC would otherwise wait until the deadline for clients to close connections that carry no
  // request: streams left open (Watch streams, or a Pipeline with nothing pending) and idle
  // connections. A canceled Watch stream finishes at once (its reactor's OnCancel).
  grpc_server_cancel_all_calls(server_->c_server());
  server_->Shutdown(std::chrono::system_clock::now());
  // The flusher must not post to a queue that is shut down; answers still held are never sent.
  for (auto& h : held_) h->Close();
  for (auto& q : queues_) q->Shutdown();
  for (auto& w : workers_) w.join();
  workers_.clear();
  // Every Lock and Election call has ended (their cancellations ran on the coordination thread), and
  // every Range (Shutdown waited for the calls).
  if (coordination_executor_ != nullptr) coordination_executor_->Stop();
  for (auto& scan : scan_executors_) scan->Stop();
  state_->watch_hub.store(nullptr, std::memory_order_release);
  state_->engine->store().SetAuthListener(nullptr);  // before the watch service it calls goes
  if (watch_ != nullptr) watch_->Stop();             // every stream has ended (Shutdown waits for them)
}

}  // namespace revkv::server
