// The pages of the ops HTTP endpoint and what each answers before and after recovery:
//   /metrics    Prometheus text; from the start (the process and runtime figures, the recovery gauges;
//               the store's and the requests' once recovered)
//   /healthz    200 "ok"; 503 "recovering: <progress>" while recovering; 503 "read-only after a disk
//               error: ..." once a disk error has stopped writes
//   /version    etcd's {"etcdserver":"3.4.0+revkv.0.1.0","etcdcluster":"3.4.0"}
//   /health     etcd's {"health":"true"}; 503 {"health":"false","reason":...} while recovering or while an
//               alarm is active (the disk's included), unless ?exclude=<ALARM> names it, as etcd
//   /livez      200 "ok" while the process answers at all (etcd 3.5's liveness)
//   /readyz     200 "ok" once recovered; 503 while recovering or while CORRUPT is active (stored, or a
//               disk error other than a full disk): etcd 3.5's readiness
//   /debug/gc   the collector's, heap's, STM's and store's figures as JSON (503 while recovering)
//   /ui         a self-contained page of live charts fed by /debug/gc and /metrics (ui_page.h)
//
// Thread-safety: thread-safe. The handlers run on the HTTP server's threads; Serve publishes the
// recovered server once (release), the handlers read it with acquire.
#pragma once

#include <atomic>

#include "server/engine/recovery_progress.h"
#include "server/ops/http_server.h"
#include "server/ops/metrics.h"
#include "server/rpc/server_state.h"

namespace revkv::server {

class OpsRoutes {
 public:
  // `metrics` and `progress` are borrowed and must outlive the HTTP server's handlers.
  OpsRoutes(MetricsRegistry* metrics, const RecoveryProgress* progress);
  // Removes its collector from the registry.
  ~OpsRoutes();
  OpsRoutes(const OpsRoutes&) = delete;
  OpsRoutes& operator=(const OpsRoutes&) = delete;

  // Registers every page on `server` (before it starts).
  void AddTo(HttpServer& server);

  // The store is recovered and `state` (borrowed, complete, outliving the handlers) serves: the pages
  // that need it answer from now on.
  void Serve(ServerState* state) { state_.store(state, std::memory_order_release); }

  // The recovered server, or nullptr while recovering (acquire: what Serve's caller built is visible).
  ServerState* state() const { return state_.load(std::memory_order_acquire); }

 private:
  HttpResponse Healthz() const;
  HttpResponse Version() const;
  HttpResponse Health(const HttpRequest& request) const;
  HttpResponse Readyz() const;
  HttpResponse DebugGc(const HttpRequest& request) const;

  MetricsRegistry* const metrics_;
  const RecoveryProgress* const progress_;
  int collector_ = 0;
  std::atomic<ServerState*> state_{nullptr};
};

}  // namespace revkv::server
