// The server's Prometheus metrics: request figures by method (owned), and collectors that read the
// runtime's collector, heap and STM figures and the store's and log's at scrape time. Every name starts
// with revkv_; counters end in _total; durations are in seconds and sizes in bytes.
#pragma once

#include "server/ops/metrics.h"
#include "server/rpc/server_state.h"

namespace revkv::server {

// Registers the request metrics of every RPC method in `state` and the collectors. Call once, before
// serving; `state` and `registry` must outlive the registry's use.
void RegisterServerMetrics(ServerState* state, MetricsRegistry* registry);

}  // namespace revkv::server
