// The slot scheduling of a benchmark connection: phases, pacing, backoff and outcomes.
#include "clients/bench/connection.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace revkv::client {

gpr_timespec ToGprDeadline(Clock::time_point when) {
  const auto delta = std::chrono::duration_cast<std::chrono::nanoseconds>(when - Clock::now());
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                      gpr_time_from_nanos(std::max<int64_t>(delta.count(), 0), GPR_TIMESPAN));
}

Connection::Connection(const ConnectionConfig& config, grpc::CompletionQueue* cq, WorkerStats* stats,
                       int* open_connections)
    : config_(config), cq_(cq), stats_(stats), open_connections_(open_connections), rng_(config.seed) {
  slots_.reserve(config.inflight);
  for (int i = 0; i < config.inflight; ++i) slots_.push_back(std::make_unique<Slot>(this, i, config.spec));
}

void Connection::StartPhase(const PhasePlan& plan) {
  plan_ = plan;
  phase_open_ = true;
  idle_slots_ = 0;
  measured_started_ = 0;
  const auto connections = static_cast<uint64_t>(plan.connections);
  const auto index = static_cast<uint64_t>(config_.index);
  measured_quota_ = plan.total / connections + (index < plan.total % connections ? 1 : 0);
  next_preload_key_ = index;
  limiter_.reset();
  if (plan.kind == Phase::kMeasured && plan.rate > 0) {
    // Each connection paces its share; it banks one token per slot, or the starts of `rate_backlog`
    // seconds when that is more.
    const double rate = plan.rate / plan.connections;
    limiter_.emplace(rate, std::max(static_cast<double>(config_.inflight), rate * plan.rate_backlog),
                     plan.start);
  }
  OnPhaseStart();
  for (auto& slot : slots_) StartNext(*slot);
}

void Connection::StartNext(Slot& slot) {
  const Clock::time_point now = Clock::now();
  if (plan_.kind == Phase::kPreload) {
    if (next_preload_key_ >= plan_.preload_keys) return GoIdle(slot);
    slot.op.BeginPreload(next_preload_key_);
    next_preload_key_ += static_cast<uint64_t>(plan_.connections);
    slot.phase = Phase::kPreload;
    slot.start = now;
    slot.state = Slot::State::kSending;
    Send(slot);
    return;
  }
  // Acquire is enough: the flag carries no data, but a stop must be seen promptly, not reordered late.
  if (plan_.stop != nullptr && plan_.stop->load(std::memory_order_acquire)) return GoIdle(slot);
  const Clock::time_point intended = limiter_ ? limiter_->Reserve(now) : now;
  if (intended >= plan_.end) return GoIdle(slot);
  const Phase phase = intended < plan_.warmup_end ? Phase::kWarmup : Phase::kMeasured;
  if (phase == Phase::kMeasured && plan_.total > 0) {
    if (measured_started_ >= measured_quota_) return GoIdle(slot);
    ++measured_started_;
  }
  slot.phase = phase;
  slot.start = intended;
  if (intended > now) {  // wait for the token
    slot.state = Slot::State::kWaiting;
    slot.resume_after_wait = false;
    SetAlarm(slot, intended);
    return;
  }
  Begin(slot);
}

void Connection::Begin(Slot& slot) {
  slot.op.Begin(rng_);
  slot.state = Slot::State::kSending;
  Send(slot);
}

void Connection::GoIdle(Slot& slot) {
  slot.state = Slot::State::kIdle;
  if (++idle_slots_ == slots_.size()) {
    OnAllIdle();
    CheckDone();
  }
}

void Connection::CheckDone() {
  if (phase_open_ && idle_slots_ == slots_.size() && TransportClosed()) {
    phase_open_ = false;
    --*open_connections_;
  }
}

void Connection::SetAlarm(Slot& slot, Clock::time_point when) {
  slot.alarm.Set(cq_, ToGprDeadline(when), slot.alarm_fired.tag());
}

void Connection::OnAlarm(Slot& slot) {
  if (slot.resume_after_wait) {
    slot.op.Resume();
    slot.state = Slot::State::kSending;
    Send(slot);
  } else {
    Begin(slot);
  }
}

void Connection::OnStep(Slot& slot, Operation::Step step) {
  switch (step.kind) {
    case Operation::Step::kSend:
      Send(slot);
      return;
    case Operation::Step::kBackoff:
      stats_->CountRetry(slot.phase);
      slot.state = Slot::State::kWaiting;
      slot.resume_after_wait = true;
      SetAlarm(slot, Clock::now() + step.backoff);
      return;
    case Operation::Step::kGiveUp:
      stats_->CountError(slot.phase,
                         grpc::Status(grpc::StatusCode::ABORTED,
                                      "transfer gave up: its compare failed more than --max-retries times"));
      StartNext(slot);
      return;
    case Operation::Step::kDone:
      break;
  }
  stats_->CountDone(slot.phase);
  if (slot.phase == Phase::kMeasured) {
    const Clock::time_point now = Clock::now();
    const auto micros = std::chrono::duration_cast<std::chrono::nanoseconds>(now - slot.start).count() / 1000;
    stats_->latency.Record(static_cast<uint64_t>(std::max<int64_t>(micros, 0)));
    stats_->last_measured_completion = now;
  }
  StartNext(slot);
}

void Connection::OnFailure(Slot& slot, const grpc::Status& status) {
  stats_->CountError(slot.phase, status);
  StartNext(slot);
}

}  // namespace revkv::client
