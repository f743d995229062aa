// revkv-null-server: the gRPC ceiling that revkv's throughput is compared to.
//
// The null server serves the same services as revkv's data path — etcdserverpb.KV (Range, Put,
// DeleteRange, Txn, Compact), etcdserverpb.Maintenance/Status, etcdserverpb.Cluster/MemberList,
// revkv.v1.KV/Pipeline and grpc.health.v1.Health — with handlers that do nothing: every call is answered
// at once with a fixed response holding little more than a header at revision 1. What a client measures
// against it is the cost of gRPC itself (HTTP/2, protobuf, the completion queues) on this machine. The
// other Maintenance and Cluster methods answer UNIMPLEMENTED.
//
// Two ways to serve, chosen by NullServerOptions::api (docs/benchmarks.md measures both):
//   - callback (the default, and the faster one here): gRPC's callback API; handlers run on gRPC's own
//     threads and answer before they return (callback_services.h).
//   - cq: gRPC's async API with one server completion queue per worker thread (one per core) and many
//     pending calls per method per queue (handlers.h); each worker drains its own queue.
//
// With NullServerOptions::store = kMap (callback API only) the KV methods are served by the naive store
// (map_store.h: an ordered map behind one reader-writer lock, no durability) instead of answered empty:
// the second baseline, what a server that does the obvious thing serves on this machine.
#ifndef REVKV_BENCH_NULL_SERVER_NULL_SERVER_H_
#define REVKV_BENCH_NULL_SERVER_NULL_SERVER_H_

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "bench/null_server/method_counters.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace revkv::bench {

enum class NullServerApi { kCallback, kCompletionQueue };
enum class NullServerStore { kNone, kMap };

// "callback", "cq"; "none", "map".
std::string_view NullServerApiName(NullServerApi api);
std::string_view NullServerStoreName(NullServerStore store);

struct NullServerOptions {
  std::string listen = "127.0.0.1:2390";  // host:port; port 0 picks a free one (see NullServer::port)
  NullServerApi api = NullServerApi::kCallback;
  NullServerStore store = NullServerStore::kNone;  // kMap needs the callback API
  int workers = 0;  // cq: worker threads (0: one per core); callback: unused (gRPC's threads)
};

// A running null server. Thread-safe.
class NullServer {
 public:
  // Binds, starts the workers and returns the running server; fails with UNAVAILABLE when the address
  // cannot be bound (in use, bad host) and INVALID_ARGUMENT for a negative worker count or the map
  // store on the cq API.
  static absl::StatusOr<std::unique_ptr<NullServer>> Start(const NullServerOptions& options);

  NullServer(const NullServer&) = delete;
  NullServer& operator=(const NullServer&) = delete;
  ~NullServer();  // shuts down first when Shutdown was not called

  int port() const { return port_; }  // the bound port (the chosen one when asked for port 0)
  int workers() const { return static_cast<int>(workers_.size()); }  // 0 on the callback API

  // Requests counted so far, summed over workers. Exact once every client has received its replies.
  NullServerCounts Counts() const;

  // The distinct client addresses (one per TCP connection) that have called Maintenance/Status.
  std::set<std::string> StatusPeers() const;

  // Stops accepting calls, cancels calls still open after a one-second grace and joins the workers.
  // Idempotent; blocks until the workers have exited.
  void Shutdown();

 private:
  struct Worker;
  NullServer();
  static absl::StatusOr<std::unique_ptr<NullServer>> StartCallback(const NullServerOptions& options);

  std::unique_ptr<grpc::Server> server_;
  std::vector<std::unique_ptr<Worker>> workers_;
  int port_ = 0;
  absl::Mutex shutdown_mu_;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
  // The services live behind an opaque pointer so that this header needs no generated code.
  struct Services;
  std::unique_ptr<Services> services_;
  struct CallbackServices;
  std::unique_ptr<CallbackServices> callback_;
};

}  // namespace revkv::bench

#endif  // REVKV_BENCH_NULL_SERVER_NULL_SERVER_H_
