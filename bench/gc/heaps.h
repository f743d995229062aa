// The two heaps under test. Each Run* function starts its collector, runs the whole workload of
// workload.h and returns the figures as JSON. Each may run once per process: neither collector can
// be shut down, so the driver (main.cc) runs every configuration in a child process of its own.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/gc/workload.h"

namespace revkv::bench::gc {

// revkv's heap with default HeapOptions: minor and major collections, time-to-safepoint.
nlohmann::json RunRevkv(const WorkloadConfig& config);
// Bytes of one revkv benchmark node, header included (the live-set label is counted in these).
size_t RevkvNodeBytes();
// HeapOptions' default major_growth_factor: the next major collection starts when the bytes in use
// reach the live bytes after the previous one times this factor (runtime/gc/major_collection.cc,
// SetNextTrigger; never below min_major_trigger_bytes).
double RevkvMajorGrowthFactor();

// How a Boehm run is configured, all before GC_INIT.
struct BoehmOptions {
  std::string variant;  // the heap's name in the results ("boehm-default", "boehm-incremental", ...)
  // GC_set_markers_count; 0 leaves the number of marker threads to the collector (one per core).
  unsigned markers = 0;
  // GC_enable_incremental: incremental, generational collections (virtual dirty bits). The run fails
  // if the collector does not take it (GC_is_incremental_mode()).
  bool incremental = false;
  // GC_set_free_space_divisor; 0 keeps the collector's default (3).
  unsigned free_space_divisor = 0;
};

// Boehm GC (GC_MALLOC after GC_INIT), configured by `options`.
nlohmann::json RunBoehm(const WorkloadConfig& config, const BoehmOptions& options);

}  // namespace revkv::bench::gc
