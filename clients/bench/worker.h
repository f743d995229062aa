// A client thread: one completion queue and the connections whose calls report to it.
#ifndef REVKV_CLIENTS_BENCH_WORKER_H_
#define REVKV_CLIENTS_BENCH_WORKER_H_

#include <grpcpp/completion_queue.h>

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "clients/bench/connection.h"
#include "clients/bench/run_stats.h"

namespace revkv::client {

// A client thread and what it drives. Owner thread only: while a phase runs, the phase's thread owns the
// connections, the queue and the stats; after Join, the thread that made the Worker owns them again.
// The stats' LiveCounters alone may be read at any time.
class Worker {
 public:
  Worker() = default;
  ~Worker();  // shuts the queue down and drains it; no phase may be running
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  grpc::CompletionQueue* cq() { return &cq_; }
  WorkerStats* stats() { return &stats_; }
  int* open_connections() { return &open_connections_; }
  void AddConnection(std::unique_ptr<Connection> connection) {
    connections_.push_back(std::move(connection));
  }

  // Starts a thread that runs `plan` on every connection until each has finished it, then calls
  // `on_done` on that thread.
  void StartPhase(const PhasePlan& plan, std::function<void()> on_done);
  // Waits for the phase's thread to end.
  void Join();

 private:
  void RunPhase(const PhasePlan& plan);

  grpc::CompletionQueue cq_;
  WorkerStats stats_;
  int open_connections_ = 0;  // connections that have not finished the phase; owner thread only
  std::vector<std::unique_ptr<Connection>> connections_;
  std::thread thread_;
};

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_BENCH_WORKER_H_
