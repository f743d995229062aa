// What the gRPC port answers while the store is being recovered: every call UNAVAILABLE with what
// recovery is doing ("revkv-server is recovering its data (replaying log segment 3/8 ...); it serves once
// recovery ends: retry shortly"), and grpc.health.v1 NOT_SERVING. UNAVAILABLE is the code etcd's clients
// retry on, so a client that starts with the server waits for it instead of failing.
//
// It is a grpc::Server of its own with one generic callback service (every method name lands there),
// fed by the GrpcListener until the serving RpcServer takes the port over. Its connections live at most
// kMaxConnectionAge: gRPC then sends the client a graceful GOAWAY (calls already sent are still
// answered) and the client reconnects, which after the handover reaches the serving server. So Retire,
// after the handover, waits for its clients to leave that way and only then shuts the server down:
// no client call is cut off by the switch.
//
// Thread-safety: Start, Retire and the destructor from one thread; the handlers run on gRPC's threads.
#pragma once

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "server/config/config.h"
#include "server/rpc/grpc_listener.h"

namespace revkv::server {

class RecoveringServer {
 public:
  // How long one of its connections lives before the client is asked to reconnect: short, because it is
  // also how long a client connected during recovery keeps hearing "recovering" after it ended (a
  // local reconnection costs little).
  static constexpr std::chrono::milliseconds kMaxConnectionAge{200};
  // How long the calls of a connection past its age may still run (a health Watch stream is cut then).
  static constexpr std::chrono::milliseconds kMaxConnectionAgeGrace{1000};

  // Starts the server and hands `listener`'s connections to it. `progress` describes what recovery is
  // doing (called on gRPC's threads, for each refused call; must be thread-safe and outlive the
  // server). Fails if a TLS file cannot be read or gRPC cannot start.
  static absl::StatusOr<std::unique_ptr<RecoveringServer>> Start(const TlsConfig& tls, GrpcListener* listener,
                                                                 std::function<std::string()> progress);
  // Shuts the server down now if Retire's wait is not over (a call in flight may then be cancelled);
  // joins Retire's thread.
  ~RecoveringServer();

  // The listener hands connections to another server now: in the background, waits until every
  // connection of this one has reached its maximum age (its client has moved on), then shuts it down.
  // If the listener still hands connections here, it is told to close them from now on. Returns at
  // once; call at most once.
  void Retire();

 private:
  class Refuser;
  RecoveringServer() = default;
  void Shutdown(std::chrono::milliseconds grace);

  GrpcListener* listener_ = nullptr;
  std::unique_ptr<Refuser> refuser_;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor_;
  std::unique_ptr<grpc::Server> server_;
  std::thread retiring_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool destroying_ ABSL_GUARDED_BY(mu_) = false;
  bool shut_down_ = false;  // owner thread, or retiring_ (joined before the owner reads it)
};

}  // namespace revkv::server
