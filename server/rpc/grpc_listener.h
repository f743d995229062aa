// The gRPC port, bound and accepted by revkv rather than by grpc::Server, so that it is bound before
// recovery begins and stays bound while a second server takes over from the first.
//
// At start the port must answer at once (a busy port is reported in the first second, not after minutes
// of recovery, and clients get a clear "recovering" answer rather than "connection refused"); once the
// store is recovered, the serving server takes the port over without a moment in which it is closed.
// One listening socket does both: it is bound here (with SO_REUSEADDR, never SO_REUSEPORT, so a second
// server cannot share the port), and every accepted connection is handed to whichever gRPC server is
// current through gRPC's external connection acceptor (ServerBuilder::experimental()
// .AddExternalConnectionAcceptor), which runs the usual HTTP/2 (and TLS) server side on it.
//
// Thread-safety: thread-safe. One thread of its own accepts.
#pragma once

#include <grpcpp/server_builder.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"

namespace revkv::server {

class GrpcListener {
 public:
  using Acceptor = grpc::experimental::ExternalConnectionAcceptor;

  // Binds `address` ("host:port"; a name may resolve to several addresses, all bound; port 0 picks a
  // free port, the same for all of them), listens and starts accepting. Until SetAcceptor names a
  // server, accepted connections are closed. Unavailable with "cannot listen for gRPC on <address>:
  // <reason>" if it cannot bind (e.g. the port is in use). Blocks for name resolution.
  static absl::StatusOr<std::unique_ptr<GrpcListener>> Bind(const std::string& address);
  // Close()s.
  ~GrpcListener();
  GrpcListener(const GrpcListener&) = delete;
  GrpcListener& operator=(const GrpcListener&) = delete;

  // The bound port.
  int port() const { return port_; }

  // Hands every connection accepted from now on to `acceptor` (borrowed: it must stay valid until the
  // next SetAcceptor or Close returns); nullptr closes them. When it returns, no connection is being
  // handed to the previous acceptor. Never call it from inside an acceptor.
  void SetAcceptor(Acceptor* acceptor);
  // SetAcceptor(nullptr) if `acceptor` is the current one: for an acceptor's owner about to destroy it.
  void Release(Acceptor* acceptor);

  // Stops accepting and closes the listening sockets, so new connections are refused; connections
  // already handed over are not touched. Joins the accepting thread. Idempotent.
  void Close();

 private:
  GrpcListener(std::vector<int> fds, int port, int wake_fd);
  void AcceptLoop();

  const std::vector<int> fds_;  // listening sockets; closed by Close
  const int port_;
  const int wake_fd_;  // eventfd: written by Close to end AcceptLoop
  std::thread thread_;
  std::mutex mu_;  // held while a connection is handed over, and by SetAcceptor
  Acceptor* acceptor_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::once_flag closed_;
};

}  // namespace revkv::server
