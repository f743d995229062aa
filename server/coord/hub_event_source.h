// HubEventSource: the EventSource of the coordinator, as in-process watchers of the watch hub.
//
// Each subscription is one hub stream with one watcher. The hub signals a queued response from its own
// thread; the signal posts a drain to the coordinator's executor, which takes the responses and calls
// the subscription's callbacks there. Subscriptions are made and destroyed on the executor too, so a
// drain never races with the destruction of its subscription.
//
// Thread-safety: thread-safe; Subscribe and the subscriptions' destructors on the executor's thread.
#pragma once

#include "server/coord/event_source.h"
#include "server/coord/runtime_executor.h"
#include "server/watch/watch_hub.h"

namespace revkv::server {

class HubEventSource final : public EventSource {
 public:
  // Borrows both; they must outlive every subscription.
  HubEventSource(watch::WatchHub* hub, RuntimeExecutor* executor) : hub_(hub), executor_(executor) {}

  absl::StatusOr<std::unique_ptr<EventSubscription>> Subscribe(const std::string& key,
                                                               const std::string& range_end,
                                                               int64_t start_revision, OnEvents on_events,
                                                               OnEnd on_end) override;

 private:
  watch::WatchHub* const hub_;
  RuntimeExecutor* const executor_;
};

}  // namespace revkv::server
