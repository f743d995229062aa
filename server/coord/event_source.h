// EventSource: the committed, durable key events that Lock and Election wait on (the watch history).
//
// Thread-safety: implementations are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mvccpb/kv.pb.h"

namespace revkv::server {

// A subscription; destroying it stops the deliveries: once the destructor has returned, no callback of
// it runs. The destructor must not be called from the subscription's own callbacks.
class EventSubscription {
 public:
  virtual ~EventSubscription() = default;
};

class EventSource {
 public:
  using OnEvents = std::function<void(const std::vector<mvccpb::Event>& events)>;
  using OnEnd = std::function<void(absl::Status status)>;

  virtual ~EventSource() = default;

  // Delivers the events of the keys in [key, range_end) (etcd's key/range_end forms) from
  // `start_revision` on, each durable revision's events once, in revision order, to `on_events`; calls
  // `on_end` once if the subscription ends by itself (its start was compacted away, or the server is
  // stopping). Callbacks run on a thread the runtime does not know and must not block. Fails (and calls
  // nothing) if the subscription cannot be made.
  virtual absl::StatusOr<std::unique_ptr<EventSubscription>> Subscribe(const std::string& key,
                                                                       const std::string& range_end,
                                                                       int64_t start_revision,
                                                                       OnEvents on_events, OnEnd on_end) = 0;
};

}  // namespace revkv::server
