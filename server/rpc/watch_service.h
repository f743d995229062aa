// etcd's Watch service (etcdserverpb.Watch/Watch): a bidirectional stream per client, on gRPC's callback
// API. Each stream is a WatchStream of the watch hub (server/watch/watch_hub.h); the handlers only move
// requests to the hub and the hub's responses to the wire. Nothing here runs STM transactions or touches
// the GC heap (gRPC's callback threads are not registered with the runtime): the watch path needs only
// the event history, atomics and the hub. docs/server.md lists where it departs from etcd 3.4.
//
// Thread-safety: thread-safe (gRPC calls the reactors from its own threads).
#pragma once

#include <memory>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "server/rpc/server_state.h"
#include "server/watch/watch_hub.h"

namespace revkv::server {

class WatchService final : public etcdserverpb::Watch::CallbackService {
 public:
  // Starts the hub's dispatcher over the engine's store. `state` must outlive the service.
  explicit WatchService(ServerState* state);
  ~WatchService() override;

  grpc::ServerBidiReactor<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>* Watch(
      grpc::CallbackServerContext* context) override;

  // Stops the dispatcher (call after the gRPC server has shut down: streams get no more events).
  void Stop();
  watch::WatchHub& hub() { return *hub_; }

 private:
  ServerState* state_;
  std::unique_ptr<watch::WatchHub> hub_;
};

}  // namespace revkv::server
