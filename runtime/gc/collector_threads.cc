// The collector thread pool (collector_threads.h).
#include "runtime/gc/collector_threads.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/gc/collector.h"
#include "runtime/gc/gc.h"

namespace revkv::runtime {

namespace {

// 0: not set. Relaxed: a plain configuration value, read by the collecting thread when it starts a
// collection; a change made while one runs applies to the next.
std::atomic<size_t> g_collector_threads{0};

// Helpers wait on `cv` for a new `generation`; each runs the job once per generation and counts itself
// done. Everything is guarded by `mu`, whose lock and unlock give the happens-before edges the header
// promises (caller's writes -> jobs, jobs' writes -> caller).
class Pool {
 public:
  void Run(size_t workers, const std::function<void(size_t)>& job) {
    const size_t helpers = workers - 1;
    {
      std::lock_guard<std::mutex> lock(mu_);
      while (threads_ < helpers) {
        std::thread(&Pool::HelperMain, this, threads_++).detach();
      }
      job_ = &job;
      active_ = helpers;
      pending_ = helpers;
      ++generation_;
    }
    cv_.notify_all();
    job(0);
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  void HelperMain(size_t index) {
    pthread_setname_np(pthread_self(), "revkv-gc");
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (index >= active_) continue;  // this collection uses fewer helpers
      const std::function<void(size_t)>* job = job_;
      lock.unlock();
      (*job)(index + 1);
      lock.lock();
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable done_cv_;
  size_t threads_ = 0;                                // helpers started (guarded by mu_)
  size_t active_ = 0;                                 // helpers this generation uses (mu_)
  size_t pending_ = 0;                                // helpers of this generation still running (mu_)
  uint64_t generation_ = 0;                           // mu_
  const std::function<void(size_t)>* job_ = nullptr;  // mu_
};

// The pool of this process. A forked child (a death test) has none of its parent's helpers (only the
// forking thread is copied), so a pool serves only the process that made it; the child's first
// collection makes a new one, which keeps a pointer to the old one (leaked on purpose, but reachable:
// a few hundred bytes per fork, and its mutex, which may have been copied locked, is never touched).
struct PoolOfProcess {
  pid_t pid;
  Pool* pool;
  PoolOfProcess* parents;
};
PoolOfProcess* g_pool = nullptr;  // only the collecting thread (collector mutex held) uses it

Pool& GetPool() {
  if (g_pool == nullptr || g_pool->pid != getpid()) {
    g_pool = new PoolOfProcess{getpid(), new Pool(), g_pool};
  }
  return *g_pool->pool;
}

}  // namespace

void RunOnCollectorThreads(size_t workers, const std::function<void(size_t worker)>& job) {
  if (workers <= 1) {
    job(0);
    return;
  }
  GetPool().Run(workers, job);
}

size_t CollectorThreads() {
  size_t n = g_collector_threads.load(std::memory_order_relaxed);
  if (n == 0) n = RuntimeOptions().collector_threads;
  if (n == 0) {
    if (const char* env = std::getenv("REVKV_GC_THREADS"); env != nullptr) n = std::strtoul(env, nullptr, 10);
  }
  if (n == 0) n = std::thread::hardware_concurrency();
  return std::clamp<size_t>(n, 1, kMaxCollectorThreads);
}

void SetCollectorThreads(size_t n) { g_collector_threads.store(n, std::memory_order_relaxed); }

}  // namespace revkv::runtime
