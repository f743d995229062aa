// One benchmark connection: a gRPC channel and `inflight` slots that each run operations back to back.
//
// The connection decides what each slot does next — start an operation, wait for a rate-limit token or a
// retry backoff, or go idle because the phase is over — and records the outcome. How a request travels
// is left to the transport subclass: UnaryConnection (one RPC per request) or PipelineConnection (one
// revkv.v1.KV/Pipeline stream). A phase ends when every slot is idle and the transport has closed.
//
// Threading: a connection belongs to one worker thread, which drains the completion queue that all of the
// connection's calls and alarms report to (owner thread only).
#ifndef REVKV_CLIENTS_BENCH_CONNECTION_H_
#define REVKV_CLIENTS_BENCH_CONNECTION_H_

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <optional>
#include <vector>

#include "clients/bench/completion.h"
#include "clients/bench/operation.h"
#include "clients/bench/random.h"
#include "clients/bench/run_stats.h"
#include "clients/bench/token_bucket.h"

namespace revkv::client {

// What a phase asks of every connection.
struct PhasePlan {
  Phase kind = Phase::kMeasured;                     // kPreload, or kMeasured (which begins with the warm-up)
  Clock::time_point start{};                         // when the phase starts
  Clock::time_point warmup_end{};                    // operations meant to start before this are warm-up
  Clock::time_point end = Clock::time_point::max();  // none starts at or after this
  uint64_t total = 0;         // measured operations to start over all connections; 0: until `end`
  uint64_t preload_keys = 0;  // preload: keys [0, preload_keys), spread over the connections
  int connections = 1;
  double rate = 0;                          // operations per second over all connections; 0: unlimited
  double rate_backlog = 0;                  // seconds of missed starts a paced phase may catch up (see
                                            // BenchOptions::rate_backlog); 0: one per slot
  const std::atomic<bool>* stop = nullptr;  // when set (SIGINT), start nothing more
};

// A connection's fixed settings.
struct ConnectionConfig {
  int index = 0;  // 0 .. connections-1
  int inflight = 1;
  int batch = 0;  // pipeline transport: requests per PipelineBatch message (0: Pipeline, one per message)
  std::chrono::nanoseconds timeout{0};  // per request; 0: none
  uint64_t seed = 1;
  const WorkloadSpec* spec = nullptr;  // must outlive the connection
};

// One connection and its slots (see the file comment). Owner thread only.
class Connection {
 public:
  // `cq`, `stats` and `open_connections` must outlive the connection. `*open_connections` is decremented
  // each time the connection finishes a phase.
  Connection(const ConnectionConfig& config, grpc::CompletionQueue* cq, WorkerStats* stats,
             int* open_connections);
  virtual ~Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Starts `plan` on every slot and returns; the connection then works as its worker drains the queue,
  // until it decrements *open_connections. The previous phase must have finished.
  void StartPhase(const PhasePlan& plan);

 protected:
  struct Slot;

  // Transport: a phase begins (before any slot sends).
  virtual void OnPhaseStart() {}
  // Transport: sends `slot.op`'s current request.
  virtual void Send(Slot& slot) = 0;
  // Transport: every slot is idle and none will send again in this phase.
  virtual void OnAllIdle() = 0;
  // Transport: whether nothing is open any more (a unary transport always is).
  virtual bool TransportClosed() const = 0;

  // For transports: the response to `slot`'s request moved the operation to `step`.
  void OnStep(Slot& slot, Operation::Step step);
  // For transports: `slot`'s request failed with `status`; the operation ends as an error.
  void OnFailure(Slot& slot, const grpc::Status& status);
  // For transports, once TransportClosed has become true: reports the phase's end if it has ended.
  void CheckDone();

  Rng& rng() { return rng_; }
  WorkerStats& stats() { return *stats_; }
  grpc::CompletionQueue* cq() { return cq_; }
  const ConnectionConfig& config() const { return config_; }
  const PhasePlan& plan() const { return plan_; }
  size_t slot_count() const { return slots_.size(); }
  bool all_idle() const { return idle_slots_ == slots_.size(); }
  Slot& slot(size_t i) { return *slots_[i]; }

 private:
  void StartNext(Slot& slot);
  void Begin(Slot& slot);
  void GoIdle(Slot& slot);
  void OnAlarm(Slot& slot);
  void SetAlarm(Slot& slot, Clock::time_point when);

  ConnectionConfig config_;
  grpc::CompletionQueue* cq_;
  WorkerStats* stats_;
  int* open_connections_;
  std::vector<std::unique_ptr<Slot>> slots_;
  Rng rng_;
  PhasePlan plan_;
  std::optional<TokenBucket> limiter_;  // when the phase is rate-limited
  uint64_t measured_quota_ = 0;         // when counting: measured operations this connection starts
  uint64_t measured_started_ = 0;
  uint64_t next_preload_key_ = 0;
  size_t idle_slots_ = 0;
  bool phase_open_ = false;  // between StartPhase and reporting the phase's end
};

// One request stream of a connection: an operation, what phase it counts in, and its timer.
struct Connection::Slot {
  enum class State : uint8_t { kIdle, kWaiting, kSending };

  Slot(Connection* owner, int slot_index, const WorkloadSpec* spec)
      : connection(owner), index(slot_index), op(spec) {}

  Connection* connection;
  int index;
  Operation op;
  State state = State::kIdle;
  Phase phase = Phase::kMeasured;  // of the current operation
  Clock::time_point start{};       // when the current operation was meant to start
  bool resume_after_wait = false;  // the wait is a retry backoff (else a rate-limit token)
  grpc::Alarm alarm;
  MemberCompletion<Slot> alarm_fired{this, &Slot::OnAlarmFired};

  void OnAlarmFired(bool /*ok*/) { connection->OnAlarm(*this); }
};

// A deadline for gRPC's monotonic clock at steady-clock time `when`.
gpr_timespec ToGprDeadline(Clock::time_point when);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_BENCH_CONNECTION_H_
