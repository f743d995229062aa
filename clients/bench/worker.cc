// The client threads' event loop.
#include "clients/bench/worker.h"

namespace revkv::client {

Worker::~Worker() {
  Join();
  connections_.clear();
  cq_.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (cq_.Next(&tag, &ok)) {
    // Nothing is in flight between phases; a stray event would belong to a destroyed object.
  }
}

void Worker::StartPhase(const PhasePlan& plan, std::function<void()> on_done) {
  thread_ = std::thread([this, plan, on_done = std::move(on_done)] {
    RunPhase(plan);
    on_done();
  });
}

void Worker::Join() {
  if (thread_.joinable()) thread_.join();
}

void Worker::RunPhase(const PhasePlan& plan) {
  open_connections_ = static_cast<int>(connections_.size());
  for (auto& connection : connections_) connection->StartPhase(plan);
  void* tag = nullptr;
  bool ok = false;
  while (open_connections_ > 0 && cq_.Next(&tag, &ok)) static_cast<Completion*>(tag)->Complete(ok);
}

}  // namespace revkv::client
