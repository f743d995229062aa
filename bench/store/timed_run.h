// Running an operation back to back on several registered threads for a fixed time: the measuring
// loop of the ops and wal sub-benchmarks.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace revkv::bench::store {

struct TimedRunResult {
  uint64_t operations = 0;              // completed by all threads together
  double seconds = 0;                   // from the common start until the last thread's last operation ended
  std::vector<uint64_t> latency_nanos;  // one per operation (all threads), if asked for
};

// One operation; runs on the thread that made it, which is registered with the runtime. It may block
// only inside a runtime::SafeRegion.
using Operation = std::function<void()>;

// Starts `threads` threads; each registers with the runtime and builds its operation with
// make_operation(thread index) on itself. Then they start together and run their operation back to back
// until `seconds` have passed (the operation in progress finishes). The calling thread must be
// registered; it waits in safe regions. With `record_latency` every operation is timed.
TimedRunResult RunTimed(int threads, double seconds, bool record_latency,
                        const std::function<Operation(int thread)>& make_operation);

}  // namespace revkv::bench::store
