// The four sub-benchmarks of revkv-bench-store. Each Run* runs its cases (revkv's side in child
// processes, child_process.h), reports progress on stderr and returns its figures as JSON, or the first
// failure; each Print* writes the tables of a Run*'s result. Called from the parent process only.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "bench/store/workload.h"

namespace revkv::bench::store {

// ops: Range of one key, a TxnBatch of 64 single-key Ranges (PipelineBatch's path), Put, a 90/10 mix,
// and a Txn (compare one key's mod_revision, put two keys) on a Store without a log, at 1 and 2 threads;
// operations per second, medians over runs.
absl::StatusOr<nlohmann::json> RunOps(const Config& config);
void PrintOps(const nlohmann::json& result, std::FILE* out);

// wal: Puts through the Engine acknowledged the server's way (Wal::OnDurable), for fsync always,
// interval (10 ms) and none, with 1 and 8 writers; writes per second and acknowledgement latency.
absl::StatusOr<nlohmann::json> RunWal(const Config& config);
void PrintWal(const nlohmann::json& result, std::FILE* out);

// memory: live heap and RSS per key after loading config.load_keys keys and a major collection; the same
// keys in a redis-server child when one is on PATH.
absl::StatusOr<nlohmann::json> RunMemory(const Config& config);
void PrintMemory(const nlohmann::json& result, std::FILE* out);

// recovery: time to open the Engine from its log alone, and from a checkpoint with an empty log tail.
absl::StatusOr<nlohmann::json> RunRecovery(const Config& config);
void PrintRecovery(const nlohmann::json& result, std::FILE* out);

}  // namespace revkv::bench::store
