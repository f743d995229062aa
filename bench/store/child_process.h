// Every measurement that touches revkv's heap runs in a child process of its own (fork), because a
// process holds at most one Store and the runtime cannot be shut down or restarted; a fresh process
// also gives each measurement a clean heap and RSS, and makes a recovery a real restart. The parent
// never starts the runtime or any thread, so forking it is safe.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"

namespace revkv::bench::store {

using ChildBody = std::function<absl::StatusOr<nlohmann::json>()>;

// Forks; the child starts the runtime (heap limit `max_heap_bytes`, 0: the default), registers its
// main thread, runs `body` and sends its result back through a pipe. Returns that result, the
// child's error, or Internal if the child died (its messages are on stderr). Blocks until the child
// has exited. `what` names the child in error messages.
absl::StatusOr<nlohmann::json> RunInChild(const std::string& what, size_t max_heap_bytes,
                                          const ChildBody& body);

}  // namespace revkv::bench::store
