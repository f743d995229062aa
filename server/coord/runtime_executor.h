// RuntimeExecutor: one thread registered with the runtime that runs posted tasks, in order.
//
// Work that starts on a thread the runtime does not know (a gRPC callback, a watch delivery, the log's
// flusher) and must run a store transaction is posted here. Waiting for the next task is a safe region,
// so an idle executor never holds up a collection.
//
// Thread-safety: thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"

namespace revkv::server {

class RuntimeExecutor {
 public:
  // Starts the thread, registered with the runtime as `name`.
  explicit RuntimeExecutor(std::string name);
  // Stop()s.
  ~RuntimeExecutor();
  RuntimeExecutor(const RuntimeExecutor&) = delete;
  RuntimeExecutor& operator=(const RuntimeExecutor&) = delete;

  // Queues `task`; returns false (and drops it) once Stop has begun. Never blocks on the task.
  bool Post(std::function<void()> task);
  // Runs the tasks already queued (they may post more; those are dropped), then joins the thread.
  // Idempotent. Must not be called from a task.
  void Stop();

 private:
  void Loop(const std::string& name);

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace revkv::server
