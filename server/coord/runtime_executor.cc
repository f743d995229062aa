// RuntimeExecutor (runtime_executor.h).
#include "server/coord/runtime_executor.h"

#include <utility>

#include "runtime/safepoint/safepoint.h"

namespace revkv::server {

RuntimeExecutor::RuntimeExecutor(std::string name) {
  thread_ = std::thread([this, name = std::move(name)] { Loop(name); });
}

RuntimeExecutor::~RuntimeExecutor() { Stop(); }

bool RuntimeExecutor::Post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
  return true;
}

void RuntimeExecutor::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void RuntimeExecutor::Loop(const std::string& name) {
  runtime::ThreadRegistration registration(name);
  for (;;) {
    std::function<void()> task;
    {
      runtime::SafeRegion waiting;  // blocked on the queue: collections need not wait for us
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, and everything queued before has run
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace revkv::server
