// The two heaps under test. Each Run* function starts its collector, runs the whole workload of
// workload.h and returns the figures as JSON. Each may run once per process: neither collector can
// be shut down, so the driver (main.cc) runs every configuration in a child process of its own.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>

#include "bench/gc/workload.h"

namespace revkv::bench::gc {

// revkv's heap with default HeapOptions: minor and major collections, time-to-safepoint.
nlohmann::json RunRevkv(const WorkloadConfig& config);
// Bytes of one revkv benchmark node, header included (the live-set label is counted in these).
size_t RevkvNodeBytes();

// Boehm GC (GC_MALLOC after GC_INIT). `markers` is passed to GC_set_markers_count before GC_INIT;
// 0 leaves the number of marker threads to the collector (one per core).
nlohmann::json RunBoehm(const WorkloadConfig& config, unsigned markers);
// Bytes the program asks GC_MALLOC for per Boehm node (the collector may round it up).
size_t BoehmNodeBytes();

}  // namespace revkv::bench::gc
