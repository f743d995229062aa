// etcd's Watch service (etcdserverpb.Watch/Watch): a bidirectional stream per client, on gRPC's callback
// API. Each stream is a WatchStream of the watch hub (server/watch/watch_hub.h); the handlers only move
// requests to the hub and the hub's responses to the wire. With authentication enabled, a create request
// is checked for the stream's caller (read permission on its range) against the visible auth state, and
// after every auth change the open watchers are checked again: a revoked permission (or a deleted user,
// an invalidated token) cancels them (revkv; etcd checks only at creation). Nothing here runs STM
// transactions or touches the GC heap (gRPC's callback threads are not registered with the runtime): the
// watch path needs only the event history, atomics and the hub. docs/server.md lists where it departs from
// etcd 3.4.
//
// Thread-safety: thread-safe (gRPC calls the reactors from its own threads).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "server/rpc/server_state.h"
#include "server/watch/watch_hub.h"

namespace revkv::server {

// The method is registered raw (grpc::ByteBuffer both ways): requests are parsed here, and responses are
// written as the hub queued them, a small per-watcher part followed by encoded event blocks shared
// between watchers (watch::Outgoing), never re-encoded per watcher (small blocks are copied into the
// write's buffer, large ones referenced).
class WatchService final
    : public etcdserverpb::Watch::WithRawCallbackMethod_Watch<etcdserverpb::Watch::Service> {
 public:
  // Starts the hub's dispatcher over the engine's store. `state` must outlive the service.
  explicit WatchService(ServerState* state);
  ~WatchService() override;

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Watch(
      grpc::CallbackServerContext* context) override;

  // Stops the dispatcher and the revalidation thread (call after the gRPC server has shut down: streams
  // get no more events).
  void Stop();
  watch::WatchHub& hub() { return *hub_; }

  // The auth state changed: the open watchers are checked again, soon, on the service's own thread.
  // Never blocks (the store's auth listener calls it on the log's flusher).
  void AuthChanged();

  // A stream that can be checked again (the service's reactors). Internal.
  class Checked {
   public:
    virtual ~Checked() = default;
    virtual void Revalidate() = 0;
  };
  void Register(Checked* stream);
  void Unregister(Checked* stream);

 private:
  void RevalidationLoop();

  ServerState* state_;
  std::unique_ptr<watch::WatchHub> hub_;
  std::mutex streams_mu_;       // taken before the hub's mu_ (Revalidate calls into the hub)
  std::set<Checked*> streams_;  // under streams_mu_
  std::mutex revalidate_mu_;    // leaf
  std::condition_variable revalidate_cv_;
  bool revalidate_ = false;  // under revalidate_mu_
  bool stopping_ = false;    // under revalidate_mu_
  std::thread revalidator_;
};

}  // namespace revkv::server
