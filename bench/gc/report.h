// Turning the per-configuration JSON results of revkv-bench-gc into medians and readable tables.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

namespace revkv::bench::gc {

// The element-wise median of results that share a shape: numbers become their median, booleans the
// AND of all, anything else the first run's value. `runs` must not be empty.
nlohmann::json MedianOf(const std::vector<nlohmann::json>& runs);

// Prints the tables (stream, forced full collections, two threads, ratios) for `results`, one per
// configuration, in the order given.
void PrintTables(const std::vector<nlohmann::json>& results, std::FILE* out);

}  // namespace revkv::bench::gc
