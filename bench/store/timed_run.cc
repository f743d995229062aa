// The timed loop (timed_run.h). Threads that are registered but waiting — for the start, for the
// others to register — do so in safe regions, so a collection started by one of them never waits for
// them.
#include "bench/store/timed_run.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <latch>
#include <thread>

#include "bench/store/workload.h"
#include "runtime/safepoint/safepoint.h"

namespace revkv::bench::store {

namespace {

struct PerThread {
  uint64_t operations = 0;
  uint64_t end_nanos = 0;
  std::vector<uint64_t> latency_nanos;
};

}  // namespace

TimedRunResult RunTimed(int threads, double seconds, bool record_latency,
                        const std::function<Operation(int thread)>& make_operation) {
  std::latch ready(threads);
  std::atomic<bool> start{false};
  std::atomic<bool> stop{false};
  std::vector<PerThread> results(static_cast<size_t>(threads));
  std::vector<std::thread> workers;
  uint64_t start_nanos = 0;
  {
    runtime::SafeRegion waiting;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        runtime::ThreadRegistration registration("bench-worker");
        Operation operation = make_operation(t);
        PerThread& mine = results[static_cast<size_t>(t)];
        {
          runtime::SafeRegion waiting_for_start;
          ready.count_down();
          start.wait(false, std::memory_order_acquire);
        }
        // `stop` is only a signal to end the loop: relaxed is enough, nothing is published through it.
        while (!stop.load(std::memory_order_relaxed)) {
          if (record_latency) {
            const uint64_t begin = NowNanos();
            operation();
            mine.latency_nanos.push_back(NowNanos() - begin);
          } else {
            operation();
          }
          ++mine.operations;
        }
        mine.end_nanos = NowNanos();
      });
    }
    ready.wait();
    start_nanos = NowNanos();
    start.store(true, std::memory_order_release);
    start.notify_all();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    stop.store(true, std::memory_order_relaxed);
    for (std::thread& w : workers) w.join();
  }
  TimedRunResult out;
  uint64_t end_nanos = start_nanos;
  for (PerThread& r : results) {
    out.operations += r.operations;
    end_nanos = std::max(end_nanos, r.end_nanos);
    out.latency_nanos.insert(out.latency_nanos.end(), r.latency_nanos.begin(), r.latency_nanos.end());
  }
  out.seconds = static_cast<double>(end_nanos - start_nanos) / 1e9;
  return out;
}

}  // namespace revkv::bench::store
