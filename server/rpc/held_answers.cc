// HeldAnswers (held_answers.h): a worker's durable writes' answers, sent from the worker.
#include "server/rpc/held_answers.h"

#include <utility>

#include "server/rpc/grpc_handoff.h"

namespace revkv::server {

namespace {

// The calling worker's held answers (set by RpcServer::WorkerLoop); nullptr on every other thread.
thread_local HeldAnswers* current_held = nullptr;

}  // namespace

HeldAnswers::HeldAnswers(Wal* wal, grpc::ServerCompletionQueue* cq, HeldAnswerStats* stats)
    : wal_(wal), cq_(cq), stats_(stats) {}

HeldAnswers::~HeldAnswers() = default;

HeldAnswers* HeldAnswers::Current() { return current_held; }

void HeldAnswers::SetCurrent(HeldAnswers* held) { current_held = held; }

void HeldAnswers::Hold(WalLsn lsn, DurableCallback answer) {
  if (held_.empty() || lsn >= held_.back().lsn) {
    held_.push_back(Held{lsn, std::move(answer)});
  } else {
    // A worker's LSNs grow (its writes commit one after another, and a write that changed nothing waits
    // for the appended LSN it read), so this does not happen; kept ordered anyway for invariant 1.
    auto at = held_.begin();
    while (at->lsn <= lsn) ++at;
    held_.insert(at, Held{lsn, std::move(answer)});
  }
  // Acquire: pairs with the flusher's release store of the durable LSN (nothing else is read through it).
  const bool due = lsn <= wal_->durable_lsn() || wal_->failed();
  if (!due && armed_) return;  // the alarm will come for it: nothing to run or register now
  // After Close the answer stays held and never runs, and nothing is registered (invariant 3); only a
  // worker still draining its queue after the server stopped can get here then, in a request's handler.
  // The flag is read under wake_mu_, but the answers below run outside it: an answer run at once is no
  // different from the handler's own immediate Finish, which takes no lock either, and holding it would
  // make a racing Wake (the flusher, for an older answer) wait for these sends.
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    if (closed_) return;
  }
  if (due) RunDue();  // durable already (or never will be): no need to wait for the flusher
  if (!held_.empty() && !armed_) Arm();
}

void HeldAnswers::Proceed(bool /*ok*/) {
  // The alarm fired (ok) or was canceled (!ok, only when this object goes: nothing is armed then).
  armed_ = false;
  {
    // Held across the sends, so Close either comes first (and nothing runs: the alarm was posted before
    // Close and taken after it, when the queue may be shut down, invariant 3) or waits for them, and
    // RpcServer::Shutdown shuts the queue down after Close: no Finish starts on a shut-down queue. It
    // costs no wait on the flusher: with the alarm out of the queue nothing is registered with the log
    // (invariant 2), so no Wake contends; only Close, once.
    std::lock_guard<std::mutex> lock(wake_mu_);
    if (closed_) return;  // not re-armed: the answers still held are destroyed without running
    RunDue();
  }
  // Outside the lock: after the log's Close, OnDurable runs the callback (Wake) at once on this thread.
  // A Close between the two finds the registration harmless: Wake then posts nothing.
  if (!held_.empty()) Arm();
}

void HeldAnswers::RunDue() {
  // The failure first: once failed() reads true the durable LSN never moves again, so the load after it
  // is final and an answer above it will never be durable. (Read the other way round, records made
  // durable between the two loads would be answered with the failure.) Both acquire.
  const bool failed = wal_->failed();
  const WalLsn durable = wal_->durable_lsn();
  const absl::Status failure = failed ? wal_->failed_status() : absl::OkStatus();
  // Counted before they go out, so that a client that has its answer sees it counted.
  size_t due = 0;
  while (due < held_.size() && (held_[due].lsn <= durable || failed)) ++due;
  if (due == 0) return;
  stats_->answers.fetch_add(due, std::memory_order_relaxed);
  for (; due > 0; --due) {
    Held h = std::move(held_.front());
    held_.pop_front();
    std::move(h.answer)(h.lsn <= durable ? absl::OkStatus() : failure);
  }
}

void HeldAnswers::Arm() {
  armed_ = true;
  // One callback for the oldest held answer; the answers after it are sent with it if the same group
  // covers them, or by the next registration. The callback keeps this object alive: the log may run it
  // after the RPC server has dropped its reference (at the log's Close, after Close() here).
  wal_->OnDurable(held_.front().lsn, [self = shared_from_this()](absl::Status) { self->Wake(); });
}

void HeldAnswers::Wake() {
  std::lock_guard<std::mutex> lock(wake_mu_);
  if (closed_) return;  // the queue may be shut down (invariant 3)
  stats_->wakeups.fetch_add(1, std::memory_order_relaxed);
  // A deadline in the past: gRPC posts the tag to the queue from this call (and kicks the worker if it
  // polls). The worker takes this object back with the tag (RpcServer::WorkerLoop).
  StartGrpcOperation(this, [this] { alarm_.Set(cq_, gpr_time_0(GPR_CLOCK_MONOTONIC), this); });
}

void HeldAnswers::Close() {
  std::lock_guard<std::mutex> lock(wake_mu_);
  closed_ = true;
}

void RunWhenDurable(ServerState* state, WalLsn lsn, DurableCallback answer) {
#ifndef REVKV_MUTATION_ANSWERS_ON_FLUSHER  // mutation switch: every answer is sent by the log's flusher
  if (HeldAnswers* held = HeldAnswers::Current(); held != nullptr) {
    held->Hold(lsn, std::move(answer));
    return;
  }
#endif
  state->engine->wal().OnDurable(lsn, std::move(answer));
}

}  // namespace revkv::server
