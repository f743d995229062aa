// What every RPC handler shares: the engine (store + log), the server's identity, limits and the
// request metrics. Built by main before the RPC server starts; immutable afterwards (the objects it
// points to are thread-safe), except for the in-flight request count.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "etcdserverpb/rpc.pb.h"
#include "server/config/config.h"
#include "server/config/version.h"  // kServerVersion, reported by Status and ServerInfo
#include "server/engine/engine.h"
#include "server/ops/metrics.h"

namespace revkv::server::watch {
class WatchHub;
}  // namespace revkv::server::watch

namespace revkv::server::auth {
class SimpleTokens;
}  // namespace revkv::server::auth

namespace revkv::server {

// Per-method request figures. Errors are counted by gRPC status code: the counter of a code is looked
// up in the family on the first error with it and kept (release/acquire: a reader sees it built).
struct MethodMetrics {
  std::string method;
  Counter* requests = nullptr;
  Histogram* latency = nullptr;
  CounterFamily* errors = nullptr;  // revkv_request_errors_total{method, code}
  mutable std::array<std::atomic<Counter*>, 17> errors_by_code{};
  // One request that ended with `code` (a grpc::StatusCode; 0 is OK) after starting at `start`.
  void Record(std::chrono::steady_clock::time_point start, int code) const;
};

// The name gRPC's Go implementation (and so etcd's metrics) gives a status code: "InvalidArgument".
std::string_view StatusCodeName(int code);

class Lessor;

// Figures of the server's held answers (held_answers.h), shared by its workers. Relaxed counters:
// nothing is published through them.
struct HeldAnswerStats {
  std::atomic<uint64_t> answers{0};  // durable writes' answers sent by the workers
  std::atomic<uint64_t> wakeups{0};  // alarms the log's flusher posted to a worker's queue
};

// Responses the Watch streams wrote, and how many of them went with gRPC's buffer hint (more were queued
// behind them). Relaxed counters: nothing is published through them.
struct WatchWriteStats {
  std::atomic<uint64_t> responses{0};
  std::atomic<uint64_t> buffered{0};
};

struct ServerState {
  Engine* engine = nullptr;
  Lessor* lessor = nullptr;              // lease deadlines and expiry (server/lease)
  auth::SimpleTokens* tokens = nullptr;  // the Auth service's simple tokens (server/auth); thread-safe
  const ServerConfig* config = nullptr;
  MetricsRegistry* metrics = nullptr;
  uint64_t start_unix_nanos = 0;

  // Fills the identity part of a response header (cluster, member, term); the store fills revision.
  void FillHeader(etcdserverpb::ResponseHeader* header) const {
    header->set_cluster_id(config->cluster_id);
    header->set_member_id(config->member_id);
    header->set_raft_term(1);
  }
  // The figures for `method` (registered once, at start-up).
  const MethodMetrics& ForMethod(const std::string& method);

  std::map<std::string, MethodMetrics> method_metrics;  // filled before serving; read-only afterwards

  // Requests received and not yet answered (unary calls between arrival and the end of Finish;
  // Pipeline requests between being read and their answer being written). Shutdown waits for it to
  // reach zero. Incremented relaxed; decremented with release, read with acquire, so a shutdown that
  // sees zero also sees every answer handed to gRPC.
  std::atomic<int64_t> requests_in_flight{0};

  // Durable writes' answers sent by the workers (written by the workers and the flusher, read by metrics).
  HeldAnswerStats held_answers;

  // What the Watch streams wrote (written by their reactors, read by metrics).
  WatchWriteStats watch_writes;

  // The Watch service's hub, for metrics: set by RpcServer::Start once the service exists and cleared
  // by its Shutdown before the hub goes away (release), read by the metrics collector (acquire: it sees
  // the hub constructed). Null while there is none.
  std::atomic<watch::WatchHub*> watch_hub{nullptr};
};

}  // namespace revkv::server
