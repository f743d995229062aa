// The gRPC server of the recovery phase (recovering_server.h).
#include "server/rpc/recovering_server.h"

#include <grpcpp/health_check_service_interface.h>

#include "server/rpc/credentials.h"
#include "server/rpc/grpc_handoff.h"

namespace revkv::server {

// Answers every call with UNAVAILABLE at once.
class RecoveringServer::Refuser final : public grpc::CallbackGenericService {
 public:
  // gRPC calls CreateReactor on its own threads, which may have been started before this object.
  explicit Refuser(std::function<std::string()> progress) : progress_(std::move(progress)) {
    HandOverToGrpc(this);
  }

  // After the server's shutdown (gRPC's order, invisible to ThreadSanitizer) no CreateReactor runs.
  ~Refuser() override { TakeBackFromGrpc(this); }

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* /*context*/) override {
    TakeBackFromGrpc(this);
    grpc::Status refusal(grpc::StatusCode::UNAVAILABLE, "revkv-server is recovering its data (" +
                                                            progress_() +
                                                            "); it serves once recovery ends: retry shortly");
    HandOverToGrpc(this);  // for the next CreateReactor, on any thread, and for the destructor
    return new Refusal(refusal);
  }

 private:
  class Refusal final : public grpc::ServerGenericBidiReactor {
   public:
    // Finish may be called before gRPC has bound the reactor: it is held until then. The reactor is
    // made on one of gRPC's threads and may be done on another (grpc_handoff.h).
    explicit Refusal(const grpc::Status& status) {
      StartGrpcOperation(this, [&] { Finish(status); });
    }
    void OnDone() override { DeleteReactorFromGrpc(this); }
  };

  const std::function<std::string()> progress_;
};

absl::StatusOr<std::unique_ptr<RecoveringServer>> RecoveringServer::Start(
    const TlsConfig& tls, GrpcListener* listener, std::function<std::string()> progress) {
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = ServerCredentialsFor(tls);
  if (!credentials.ok()) return credentials.status();
  std::unique_ptr<RecoveringServer> server(new RecoveringServer());
  server->refuser_ = std::make_unique<Refuser>(std::move(progress));
  grpc::EnableDefaultHealthCheckService(true);  // grpc.health.v1 answers NOT_SERVING (set below)
  grpc::ServerBuilder builder;
  builder.RegisterCallbackGenericService(server->refuser_.get());
  // The graceful GOAWAY at the maximum age lets the calls already sent finish, then the client
  // reconnects; a health Watch stream is cut after the grace.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, static_cast<int>(kMaxConnectionAge.count()));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                             static_cast<int>(kMaxConnectionAgeGrace.count()));
  server->acceptor_ = builder.experimental().AddExternalConnectionAcceptor(
      grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD, *credentials);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr) return absl::InternalError("cannot start the recovery phase's gRPC server");
  server->server_->GetHealthCheckService()->SetServingStatus(false);
  server->listener_ = listener;
  listener->SetAcceptor(server->acceptor_.get());
  return server;
}

RecoveringServer::~RecoveringServer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    destroying_ = true;
  }
  cv_.notify_all();
  if (retiring_.joinable()) retiring_.join();
  Shutdown(std::chrono::milliseconds(0));
}

void RecoveringServer::Retire() {
  listener_->Release(acceptor_.get());
  retiring_ = std::thread([this] {
    // A connection accepted just before the handover lives kMaxConnectionAge (gRPC adds up to 10%
    // jitter), then its calls get the grace to finish.
    const auto wait = kMaxConnectionAge * 12 / 10 + std::chrono::milliseconds(200);
    std::unique_lock<std::mutex> lock(mu_);
    const bool cut_short = cv_.wait_for(lock, wait, [this] { return destroying_; });
    lock.unlock();
    Shutdown(cut_short ? std::chrono::milliseconds(0) : std::chrono::milliseconds(500));
  });
}

void RecoveringServer::Shutdown(std::chrono::milliseconds grace) {
  if (shut_down_ || server_ == nullptr) return;
  shut_down_ = true;
  listener_->Release(acceptor_.get());
  server_->Shutdown(std::chrono::system_clock::now() + grace);
  server_->Wait();
}

}  // namespace revkv::server
