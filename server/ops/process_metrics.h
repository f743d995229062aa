// The process_* metrics every Prometheus client library exports (the Go client's names, which etcd's
// dashboards and alerts use): CPU time, resident and virtual memory, open and maximum file
// descriptors, start time. Read from /proc/self at scrape time (Linux).
//
// Thread-safety: thread-safe (reads only).
#pragma once

#include <cstdint>
#include <optional>

#include "server/ops/metrics.h"

namespace revkv::server {

struct ProcessStats {
  double cpu_seconds = 0;  // user + system
  uint64_t resident_bytes = 0;
  uint64_t virtual_bytes = 0;
  uint64_t open_fds = 0;
  uint64_t max_fds = 0;           // the soft RLIMIT_NOFILE
  double start_time_seconds = 0;  // since the Unix epoch
};

// The figures now; nullopt if /proc/self/stat cannot be read or parsed.
std::optional<ProcessStats> ReadProcessStats();

// Registers a collector writing process_cpu_seconds_total, process_resident_memory_bytes,
// process_virtual_memory_bytes, process_open_fds, process_max_fds and process_start_time_seconds.
void AddProcessCollector(MetricsRegistry& registry);

}  // namespace revkv::server
